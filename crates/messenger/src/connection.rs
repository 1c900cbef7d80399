//! The user's handle on a connection. A connection's session state lives
//! in its driver, on the shard that owns it; a handle reaches it by
//! message (a FIFO per connection: a sender's messages keep their order,
//! from any thread) and reads what the driver publishes (its view), so no
//! lock is taken per message on either side.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use msgr_encoding::{EntityAddrvec, EntityName, EntityType, UTime};
use msgr_protocol::{ConnState, ConnStats, Message};
use tokio::sync::Notify;

mod calls;
mod command;
mod inbox;
mod outbox;
mod view;

pub use calls::CallError;
pub(crate) use calls::Calls;
pub(crate) use command::{Asking, Command, Promise, Verdict};

/// A connection closed before its session was READY (Connection::ready).
#[derive(Debug, Clone)]
pub struct NotReady {
    /// The fault that ended it (a refusal, an unreachable peer, ...), if
    /// one did; none when it was marked down.
    pub last_fault: Option<msgr_protocol::ProtocolError>,
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.last_fault {
            Some(e) => write!(f, "the connection closed before its session was ready: {e}"),
            None => f.write_str("the connection was closed before its session was ready"),
        }
    }
}

impl std::error::Error for NotReady {}

/// A fault after which the same attempt again would fail the same way:
/// what `Connection::ready` reports without waiting for more.
fn refused(e: &msgr_protocol::ProtocolError) -> bool {
    e.is_refusal()
        || matches!(
            e,
            msgr_protocol::ProtocolError::Transport {
                kind: std::io::ErrorKind::ConnectionRefused,
                ..
            }
        )
}

pub(crate) use inbox::Inbox;
pub(crate) use outbox::{recycle, Outbox};
pub(crate) use view::{IdleClock, Published, SocketBytes, View};

#[cfg(test)]
mod tests {
    #[test]
    fn a_command_is_small() {
        assert!(std::mem::size_of::<super::Command>() <= 24);
    }

    /// What a turn of the driver reads and writes of the shared part, in
    /// two whole cache lines: the inbox's flags and waker, the senders
    /// waiting and the calls' count in the first; the view's per-message
    /// counters, and nothing else, in the second.
    #[test]
    fn a_turn_touches_two_lines_of_the_shared_part() {
        use super::view::View;
        use super::Shared;
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Shared>(), 64);
        assert_eq!(offset_of!(Shared, view), 64);
        assert!(offset_of!(Shared, calls) + size_of::<super::Calls>() <= 64);
        assert_eq!(offset_of!(View, rare), 64);
    }
}

/// In declared order (`repr(C)`), aligned to a cache line: what the
/// driver looks at every turn (the inbox's flags and waker, the senders
/// waiting, the calls' count) in the first line, the view's per-message
/// counters in the second, what changes with the session or serves
/// handles' waits after (BENCHMARKS.md, "What grows with connections").
#[repr(C, align(64))]
pub(crate) struct Shared {
    /// Commands for the driver.
    pub inbox: Inbox,
    /// Senders waiting on `drained` (so the driver only notifies when
    /// needed).
    pub senders_waiting: AtomicUsize,
    /// Requests waiting for their replies (Connection::call).
    pub calls: Calls,
    pub view: View,
    /// The cost (Session::cost) of the messages `send` gave the driver and
    /// it has not taken yet.
    pub in_flight: AtomicUsize,
    pub id: u64,
    /// QueueLimits::soft: `send` waits while the driver is over it, or
    /// while this much is on its way to the driver.
    soft_limit: usize,
    /// Wakes senders waiting for the queue to drain.
    pub drained: Notify,
    /// Wakes `keepalive_roundtrip` callers.
    pub keepalive_acked: Notify,
    /// Wakes `ready` callers when the published state changes.
    pub state_changed: Notify,
    /// The key this connection was last registered under (read and
    /// written under the registry's lock).
    pub registered: Mutex<Option<msgr_protocol::registry::PeerKey>>,
    /// What the user keeps with the connection (Connection::set_user_data).
    user_data: Mutex<Option<Arc<dyn std::any::Any + Send + Sync>>>,
    /// Which requests have replies (Options::message_types).
    message_types: crate::MessageTypes,
}

impl Shared {
    /// The state for the connection's users: closed once marked down,
    /// whether or not the driver has seen it yet.
    pub fn state(&self) -> ConnState {
        match self.inbox.marked_down() {
            true => ConnState::Closed,
            false => self.view.state(),
        }
    }

    /// The key this connection was last registered under.
    pub fn registered_key(&self) -> Option<msgr_protocol::registry::PeerKey> {
        *self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The waker of the connection's timer (the driver polls the timer with
/// it): waking it tells the driver that the timer fired, and wakes the
/// driver's task through the inbox.
impl std::task::Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.inbox.timer_fired()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.inbox.timer_fired()
    }
}

/// A cheap, cloneable handle on one connection, usable from any thread.
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
        write!(
            f,
            "Connection#{}({:?} on shard {})",
            self.shared.id,
            self.state(),
            self.shard()
        )
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
    /// A handle on a new connection on `shard`.
    pub(crate) fn new(
        id: u64,
        shard: usize,
        soft_limit: usize,
        message_types: crate::MessageTypes,
    ) -> Connection {
        Connection {
            shared: Arc::new(Shared {
                id,
                inbox: Inbox::default(),
                view: View::new(shard),
                drained: Notify::new(),
                senders_waiting: AtomicUsize::new(0),
                in_flight: AtomicUsize::new(0),
                soft_limit,
                keepalive_acked: Notify::new(),
                registered: Mutex::new(None),
                calls: Calls::default(),
                state_changed: Notify::new(),
                user_data: Mutex::new(None),
                message_types,
            }),
        }
    }

    /// Tells the driver; a closed connection's driver is gone, and what
    /// it is told is dropped (as a closed Conn drops what it is sent).
    pub(crate) fn command(&self, c: Command) {
        let me = Arc::as_ptr(&self.shared) as usize;
        if let Some(c) = outbox::offer(me, c) {
            // A closed connection's: dropped.
            let _ = self.shared.inbox.push(c);
        }
    }

    /// The connection's identity for its outbox.
    pub(crate) fn outbox_key(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// This connection's number, unique in its messenger (as the logs and
    /// `messenger dump` show it).
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The shard whose thread runs this connection's I/O and dispatch.
    pub fn shard(&self) -> usize {
        self.shared.view.shard()
    }

    /// Queues `msg`, waiting while this connection already holds
    /// `Options::max_queued_bytes` for its peer (the limit at which it also
    /// stops reading from it: Conn::over_queue_limit). Messages sent from
    /// one thread go out in the order sent.
    pub async fn send(&self, msg: Message) {
        let s = &self.shared;
        let mut waiting = false;
        loop {
            let drained = s.drained.notified();
            let over = s.view.over_limit.load(Ordering::Acquire)
                || s.in_flight.load(Ordering::Acquire) >= self.soft_limit();
            if !over || s.state() == ConnState::Closed {
                break;
            }
            if !waiting {
                s.senders_waiting.fetch_add(1, Ordering::AcqRel);
                waiting = true;
            }
            drained.await;
        }
        if waiting {
            s.senders_waiting.fetch_sub(1, Ordering::AcqRel);
        }
        let cost = msgr_protocol::Session::cost(msg.payload_len());
        s.in_flight.fetch_add(cost, Ordering::AcqRel);
        self.command(Command::Send {
            msg: Box::new(msg),
            counted: true,
            queued: crate::counters::Stamp::sample(),
        });
    }

    /// Keeps `data` with the connection, for whoever handles it later (a
    /// dispatcher's per-session state: Ceph's Connection::set_priv).
    pub fn set_user_data(&self, data: Arc<dyn std::any::Any + Send + Sync>) {
        *self
            .shared
            .user_data
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(data);
    }

    /// What `set_user_data` kept, if it is a `T`.
    pub fn user_data<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let data = self
            .shared
            .user_data
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        data.downcast::<T>().ok()
    }

    /// Waits until the session is READY (its peer, features and mode are
    /// known then, so messages can be encoded for them), or says why it is
    /// not: the connection closed (with the fault that ended it), or its
    /// latest attempt was refused, by a peer that will not take this
    /// handshake (ProtocolError::is_refusal: our key, mode or features) or
    /// that refused the socket. The connection itself goes on as its
    /// policy says, retrying as Ceph's do: a caller that gives up marks it
    /// down. Other faults (a reset, a timeout) are waited through: bound
    /// the wait with a timeout.
    pub async fn ready(&self) -> Result<(), NotReady> {
        loop {
            let changed = self.shared.state_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.state() {
                ConnState::Ready => return Ok(()),
                ConnState::Closed => {
                    return Err(NotReady {
                        last_fault: self.last_fault(),
                    })
                }
                _ => match self.last_fault().filter(refused) {
                    Some(f) => {
                        return Err(NotReady {
                            last_fault: Some(f),
                        })
                    }
                    None => changed.await,
                },
            }
        }
    }

    /// Sends request `msg` and waits for its reply, matched by tid (a
    /// request without one gets the next of this connection's): MOSDOp's
    /// MOSDOpReply, MCommand's MCommandReply, MMonCommand's MMonCommandAck
    /// (the reply types of Options::message_types). The reply goes to the caller, not the
    /// dispatcher. A lossless session that faults and reconnects still
    /// answers; a reset or a close ends the call with its error, as does
    /// `timeout`.
    pub async fn call(
        &self,
        mut msg: Message,
        timeout: std::time::Duration,
    ) -> Result<Message, CallError> {
        let msg_type = msg.msg_type;
        let reply_type = (self.shared.message_types)
            .reply_type(msg_type)
            .ok_or(CallError::NoReplyType { msg_type })?;
        let calls = &self.shared.calls;
        if msg.tid == 0 {
            msg.tid = calls.next_tid();
        }
        let tid = msg.tid;
        let reply = calls.wait(tid, reply_type)?;
        if self.state() == ConnState::Closed {
            calls.forget(tid);
            return Err(CallError::Closed);
        }
        self.send(msg).await;
        match crate::timer::timeout(timeout, reply).await {
            Ok(Ok(r)) => r,
            // Its sender dropped: the connection is gone.
            Ok(Err(_)) => Err(CallError::Closed),
            Err(_) => {
                calls.forget(tid);
                Err(CallError::Timeout { after: timeout })
            }
        }
    }

    fn soft_limit(&self) -> usize {
        self.shared.soft_limit
    }

    /// Queues `msg` without waiting (nor counting it where `send` looks:
    /// a caller of this bounds what it sends itself).
    pub fn send_nowait(&self, msg: Message) {
        self.command(Command::Send {
            msg: Box::new(msg),
            counted: false,
            queued: crate::counters::Stamp::sample(),
        });
    }

    /// Sends a KEEPALIVE2 (the peer answers with KEEPALIVE2_ACK).
    pub fn send_keepalive(&self) {
        self.command(Command::Keepalive(wall_clock()));
    }

    /// Closes the connection for good, dropping anything queued.
    pub fn mark_down(&self) {
        self.shared.inbox.mark_down();
        self.shared.state_changed.notify_waiters();
        self.command(Command::MarkDown);
    }

    /// Makes the connection lossy (it will not reconnect after a fault).
    pub fn mark_disposable(&self) {
        self.command(Command::MarkDisposable);
    }

    /// Moves the connection's I/O and dispatch to `shard` (taken modulo
    /// the messenger's shards), with its session: what is queued, sent and
    /// unacknowledged, and its sequence numbers. The dispatcher hears
    /// ms_handle_shard_change on the old shard; everything after comes on
    /// the new one.
    pub fn move_to_shard(&self, shard: usize) {
        self.command(Command::MoveTo(shard));
    }

    /// The session's state, as the driver last published it (closed at
    /// once when marked down).
    pub fn state(&self) -> ConnState {
        self.shared.state()
    }

    /// Whether the session is READY.
    pub fn is_connected(&self) -> bool {
        self.state() == ConnState::Ready
    }

    /// The peer's name, once it said it.
    pub fn peer_name(&self) -> Option<EntityName> {
        self.shared.view.info().peer_name
    }

    /// The peer's entity type: the one dialed, or the one it said.
    pub fn peer_type(&self) -> EntityType {
        EntityType(self.shared.view.peer_type.load(Ordering::Acquire))
    }

    /// Who the peer authenticated as: its entity name, global id and caps
    /// (on a connection we accepted; where we connected, the peer is known
    /// by the type we connected to, which cephx proved). Sessions go only
    /// to the identity that holds them.
    pub fn peer_identity(&self) -> Option<msgr_auth::Identity> {
        self.shared.view.info().identity.clone()
    }

    /// The peer's addresses.
    pub fn peer_addrs(&self) -> EntityAddrvec {
        self.shared.view.info().peer_addrs.clone()
    }

    /// Features both sides support (known once the session was READY).
    pub fn features(&self) -> u64 {
        self.shared.view.features.load(Ordering::Acquire)
    }

    /// Whether the connection speaks msgr1 (its target, or the listener
    /// that accepted it, is a `v1:` address).
    pub fn is_msgr1(&self) -> bool {
        self.shared.view.info().msgr1
    }

    /// crc or secure, once the session's mode is known (after AUTH_DONE).
    /// The session's (in_seq, out_seq): the last message received, and the
    /// last numbered to send, as of the driver's last step.
    pub fn seqs(&self) -> (u64, u64) {
        let [i, o] = &self.shared.view.seqs;
        (i.load(Ordering::Relaxed), o.load(Ordering::Relaxed))
    }

    /// Bytes (read, written) on the connection's sockets, as of the
    /// driver's last step.
    pub fn bytes(&self) -> (u64, u64) {
        let [r, w] = &self.shared.view.bytes;
        (r.load(Ordering::Relaxed), w.load(Ordering::Relaxed))
    }

    /// The policy of the connection's peer type, once the peer is known.
    pub fn policy(&self) -> Option<msgr_protocol::Policy> {
        self.shared.view.info().policy
    }

    /// The connection mode (crc or secure) of a READY or STANDBY session.
    pub fn con_mode(&self) -> Option<msgr_auth::ConMode> {
        if !matches!(self.state(), ConnState::Ready | ConnState::Standby) {
            return None;
        }
        self.shared.view.info().wire_format.map(|f| match f.secure {
            true => msgr_auth::ConMode::SECURE,
            false => msgr_auth::ConMode::CRC,
        })
    }

    /// The on-wire compression negotiated for the current socket.
    pub fn compression(&self) -> Option<msgr_frames::compression::Algorithm> {
        self.shared.view.info().compression
    }

    /// msgr2.1 or msgr2.0 on the current socket.
    pub fn rev1(&self) -> Option<bool> {
        self.shared.view.info().wire_format.map(|f| f.rev1)
    }

    /// Why the connection last faulted (an auth refusal, a reset socket,
    /// ...), if it ever did.
    pub fn last_fault(&self) -> Option<msgr_protocol::ProtocolError> {
        self.shared.view.info().last_fault.clone()
    }

    /// What happened on the connection, as of its driver's last step.
    pub fn stats(&self) -> ConnStats {
        self.shared.view.stats()
    }

    /// Releases what an interceptor's BLOCK or STALL holds on this
    /// connection (msgr_protocol::intercept).
    #[cfg(feature = "interceptor")]
    pub fn unblock(&self) {
        self.command(Command::Unblock);
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
        let mut acked = std::pin::pin!(self.shared.keepalive_acked.notified());
        acked.as_mut().enable();
        self.command(Command::Keepalive(stamp));
        loop {
            if self.last_keepalive_ack().is_some_and(|a| a >= stamp) {
                return Some(crate::now().duration_since(start));
            }
            if self.state() == ConnState::Closed {
                return None;
            }
            if crate::timer::timeout_at(deadline, acked.as_mut())
                .await
                .is_err()
            {
                return None;
            }
            acked.set(self.shared.keepalive_acked.notified());
            acked.as_mut().enable();
        }
    }

    /// The timestamp of the last KEEPALIVE2_ACK (our own send time, echoed).
    pub fn last_keepalive_ack(&self) -> Option<UTime> {
        self.shared.view.info().last_keepalive_ack
    }

    /// Messages queued and not yet written: how many, and the bytes they
    /// count for against `Options::max_queued_bytes` (their payload and a
    /// fixed overhead each: msgr_protocol::Session::cost).
    pub fn queued(&self) -> (usize, usize) {
        let q = &self.shared.view.queued;
        let at = |a: &std::sync::atomic::AtomicU64| {
            usize::try_from(a.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
        };
        (at(&q[0]), at(&q[1]))
    }
}

/// A received message (read through `Deref`), holding throttle budget
/// until dropped.
#[derive(Debug)]
pub struct IncomingMessage {
    /// As the connection boxed it when it arrived.
    pub(crate) msg: Box<Message>,
    pub(crate) _permits: crate::budget::Permits,
}

impl IncomingMessage {
    /// The message, letting its throttle budget go.
    pub fn into_message(self) -> Message {
        *self.msg
    }
}

impl Deref for IncomingMessage {
    type Target = Message;
    fn deref(&self) -> &Message {
        &self.msg
    }
}
