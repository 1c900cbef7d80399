//! The user's handle on a connection, and the state its task shares with
//! the messenger.

use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use msgr_encoding::{EntityAddrvec, EntityName, EntityType, UTime};
use msgr_frames::WireQueue;
use msgr_protocol::{Conn, ConnState, ConnStats, LinkId, Message};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

pub(crate) type BoxReader = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// A socket moving from an accepting connection's task into the task of
/// the existing connection that adopted it.
pub(crate) struct Handoff {
    pub link: LinkId,
    pub reader: BoxReader,
    pub writer: BoxWriter,
    /// Bytes taken for this socket and not yet written.
    pub pending: WireQueue,
    pub slot: SocketSlot,
}

/// A live socket, counted against `Options::max_connections` from when it
/// is accepted or connected until it is dropped (a STANDBY session, which
/// has none, does not count).
pub(crate) struct SocketSlot(Arc<std::sync::atomic::AtomicUsize>);

impl SocketSlot {
    pub fn new(live: &Arc<std::sync::atomic::AtomicUsize>) -> SocketSlot {
        live.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        SocketSlot(live.clone())
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

pub(crate) struct Shared {
    pub id: u64,
    pub conn: Mutex<Conn>,
    /// Wakes the connection's task: output to write, a socket handed over,
    /// or a close.
    pub wake: Notify,
    /// Wakes senders waiting for the queue to drain.
    pub drained: Notify,
    /// Senders waiting on `drained` (so the task only notifies when needed).
    pub senders_waiting: std::sync::atomic::AtomicUsize,
    /// The connection features, copied here when the session is READY.
    pub features: std::sync::atomic::AtomicU64,
    /// The peer's entity type once known (0 before).
    pub peer_type: std::sync::atomic::AtomicU8,
    pub handoff: Mutex<Option<Handoff>>,
    /// Wakes `keepalive_roundtrip` callers.
    pub keepalive_acked: Notify,
    /// Why the connection last faulted.
    pub last_fault: Mutex<Option<msgr_protocol::ProtocolError>>,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Conn> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A cheap, cloneable handle on one connection.
#[derive(Clone)]
pub struct Connection {
    pub(crate) shared: Arc<Shared>,
}

impl PartialEq for Connection {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for Connection {}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection#{}({:?})", self.shared.id, self.shared.lock())
    }
}

/// The connection whose task is running on this thread right now (id 0:
/// none), and the time of the task's current step.
#[derive(Clone, Copy)]
struct RunningTask {
    id: u64,
    now: Option<Instant>,
}

thread_local! {
    /// A send from inside a task's own dispatch needs no wake-up (the task
    /// looks for output after every dispatch) and no clock read (it takes
    /// the time of the step that dispatched).
    static RUNNING_TASK: std::cell::Cell<RunningTask> =
        const { std::cell::Cell::new(RunningTask { id: 0, now: None }) };
}

/// Marks this thread as running connection `id`'s task, in the step that
/// started at `now`, until the guard drops.
pub(crate) fn running_task(id: u64, now: Instant) -> impl Drop {
    struct Reset(RunningTask);
    impl Drop for Reset {
        fn drop(&mut self) {
            RUNNING_TASK.with(|r| r.set(self.0));
        }
    }
    Reset(RUNNING_TASK.with(|r| r.replace(RunningTask { id, now: Some(now) })))
}

impl Shared {
    fn in_own_task(&self) -> bool {
        RUNNING_TASK.with(|r| r.get()).id == self.id
    }

    /// Wakes the connection's task, unless this is that task.
    pub fn wake_task(&self) {
        if !self.in_own_task() {
            self.wake.notify_one();
        }
    }

    /// The time for a call on this connection: its task's step time when
    /// called from that task's dispatch, else the clock.
    fn now(&self) -> Instant {
        match RUNNING_TASK.with(|r| r.get()) {
            RunningTask { id, now: Some(t) } if id == self.id => t,
            _ => crate::now(),
        }
    }
}

pub(crate) fn wall_clock() -> UTime {
    UTime::from_duration(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

impl Connection {
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Queues `msg`, waiting while this connection already holds
    /// `Options::max_queued_bytes` for its peer (the limit at which it also
    /// stops reading from it: Conn::over_queue_limit).
    pub async fn send(&self, msg: Message) {
        use std::sync::atomic::Ordering;
        let mut waiting = false;
        loop {
            let drained = self.shared.drained.notified();
            {
                let mut c = self.shared.lock();
                if !c.over_queue_limit() || c.state() == ConnState::Closed {
                    c.send(msg, self.shared.now());
                    break;
                }
            }
            if !waiting {
                self.shared.senders_waiting.fetch_add(1, Ordering::AcqRel);
                waiting = true;
            }
            drained.await;
        }
        if waiting {
            self.shared.senders_waiting.fetch_sub(1, Ordering::AcqRel);
        }
        self.shared.wake.notify_one();
    }

    /// Queues `msg` without waiting.
    pub fn send_nowait(&self, msg: Message) {
        let now = self.shared.now();
        self.shared.lock().send(msg, now);
        self.shared.wake_task();
    }

    /// Sends a KEEPALIVE2 (the peer answers with KEEPALIVE2_ACK).
    pub fn send_keepalive(&self) {
        self.shared
            .lock()
            .send_keepalive(wall_clock(), crate::now());
        self.shared.wake.notify_one();
    }

    /// Closes the connection for good, dropping anything queued.
    pub fn mark_down(&self) {
        self.shared.lock().mark_down();
        self.shared.wake.notify_one();
    }

    /// Makes the connection lossy (it will not reconnect after a fault).
    pub fn mark_disposable(&self) {
        self.shared.lock().mark_disposable();
    }

    pub fn state(&self) -> ConnState {
        self.shared.lock().state()
    }

    pub fn is_connected(&self) -> bool {
        self.state() == ConnState::Ready
    }

    pub fn peer_name(&self) -> Option<EntityName> {
        self.shared.lock().peer_name()
    }

    pub fn peer_type(&self) -> EntityType {
        use std::sync::atomic::Ordering;
        // Cached once known: a connection's peer never changes type.
        match self.shared.peer_type.load(Ordering::Relaxed) {
            0 => {
                let t = self.shared.lock().peer().entity_type;
                self.shared.peer_type.store(t.0, Ordering::Relaxed);
                t
            }
            t => EntityType(t),
        }
    }

    /// Who the peer authenticated as: its entity name, global id and caps
    /// (on a connection we accepted; where we connected, the peer is known
    /// by the type we connected to, which cephx proved). Sessions go only
    /// to the identity that holds them.
    pub fn peer_identity(&self) -> Option<msgr_auth::Identity> {
        self.shared.lock().peer_identity().cloned()
    }

    pub fn peer_addrs(&self) -> EntityAddrvec {
        self.shared.lock().peer().addrs.clone()
    }

    /// Features both sides support (known once the session was READY).
    pub fn features(&self) -> u64 {
        self.shared
            .features
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// crc or secure, once the session's mode is known (after AUTH_DONE).
    pub fn con_mode(&self) -> Option<msgr_auth::ConMode> {
        let c = self.shared.lock();
        if !matches!(c.state(), ConnState::Ready | ConnState::Standby) {
            return None;
        }
        c.wire_format().map(|f| match f.secure {
            true => msgr_auth::ConMode::SECURE,
            false => msgr_auth::ConMode::CRC,
        })
    }

    /// The on-wire compression negotiated for the current socket.
    pub fn compression(&self) -> Option<msgr_frames::compression::Algorithm> {
        self.shared.lock().compression()
    }

    /// msgr2.1 or msgr2.0 on the current socket.
    pub fn rev1(&self) -> Option<bool> {
        self.shared.lock().wire_format().map(|f| f.rev1)
    }

    /// Why the connection last faulted (an auth refusal, a reset socket,
    /// ...), if it ever did.
    pub fn last_fault(&self) -> Option<msgr_protocol::ProtocolError> {
        self.shared
            .last_fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn stats(&self) -> ConnStats {
        self.shared.lock().stats
    }

    /// Releases what an interceptor's BLOCK or STALL holds on this
    /// connection (msgr_protocol::intercept).
    #[cfg(feature = "interceptor")]
    pub fn unblock(&self) {
        self.shared.lock().request_unblock();
        self.shared.wake.notify_one();
    }

    /// Sends a KEEPALIVE2 and waits for its KEEPALIVE2_ACK; returns the round
    /// trip time, or `None` if the connection closed or `timeout` passed.
    pub async fn keepalive_roundtrip(
        &self,
        timeout: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let stamp = wall_clock();
        let start = crate::now();
        let deadline = crate::after(timeout);
        {
            self.shared.lock().send_keepalive(stamp, start);
        }
        self.shared.wake.notify_one();
        loop {
            let acked = self.shared.keepalive_acked.notified();
            {
                let c = self.shared.lock();
                if c.last_keepalive_ack().is_some_and(|a| a >= stamp) {
                    return Some(crate::now().duration_since(start));
                }
                if c.state() == ConnState::Closed {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, acked).await.is_err() {
                return None;
            }
        }
    }

    /// The timestamp of the last KEEPALIVE2_ACK (our own send time, echoed).
    pub fn last_keepalive_ack(&self) -> Option<UTime> {
        self.shared.lock().last_keepalive_ack()
    }

    /// Messages queued and not yet written: (count, bytes).
    pub fn queued(&self) -> (usize, usize) {
        self.shared.lock().session().queued()
    }
}

/// A received message, holding throttle budget until dropped.
#[derive(Debug)]
pub struct IncomingMessage {
    pub msg: Message,
    pub(crate) _permits: crate::budget::Permits,
}

impl IncomingMessage {
    pub fn into_message(self) -> Message {
        self.msg
    }
}

impl Deref for IncomingMessage {
    type Target = Message;
    fn deref(&self) -> &Message {
        &self.msg
    }
}
