//! What a connection's driver publishes for its handles (the view), and
//! the driver's record of what it last published, so that a turn of its
//! loop stores only what changed.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use msgr_encoding::{EntityAddrvec, EntityName, UTime};
use msgr_protocol::{Conn, ConnState};

/// The states a view stores as a byte, in ConnState's order.
const STATES: [ConnState; 9] = [
    ConnState::NeedSocket,
    ConnState::Backoff,
    ConnState::Connecting,
    ConnState::Accepting,
    ConnState::Deciding,
    ConnState::ServerWait,
    ConnState::Ready,
    ConnState::Standby,
    ConnState::Closed,
];

fn state_byte(s: ConnState) -> u8 {
    STATES.iter().position(|x| *x == s).unwrap_or(8) as u8
}

/// What changes with the session (a handshake, a fault), not per message:
/// copied by the driver when it does.
#[derive(Debug, Clone, Default)]
pub(crate) struct Info {
    pub peer_name: Option<EntityName>,
    pub identity: Option<msgr_auth::Identity>,
    pub peer_addrs: EntityAddrvec,
    pub wire_format: Option<msgr_frames::WireFormat>,
    pub compression: Option<msgr_frames::compression::Algorithm>,
    pub last_keepalive_ack: Option<UTime>,
    pub last_fault: Option<msgr_protocol::ProtocolError>,
    /// The connection speaks msgr1.
    pub msgr1: bool,
    pub policy: Option<msgr_protocol::Policy>,
}

impl Info {
    fn of(c: &Conn) -> Info {
        Info {
            peer_name: c.peer_name(),
            identity: c.peer_identity().cloned(),
            peer_addrs: c.peer().addrs.clone(),
            wire_format: c.wire_format(),
            compression: c.compression(),
            last_keepalive_ack: c.last_keepalive_ack(),
            last_fault: c.last_fault().cloned(),
            msgr1: c.is_msgr1(),
            policy: Some(c.peer().policy),
        }
    }
}

/// What a connection's driver publishes for its handles: written only by
/// the driver, read by anyone.
///
/// In declared order (`repr(C)`): what the driver writes per message
/// first, in three cache lines; the session's `Info` (which changes with
/// handshakes and faults) is held apart, so that a busy server does not
/// touch lines it does not need (BENCHMARKS.md, "What grows with
/// connections").
#[repr(C)]
pub(crate) struct View {
    state: AtomicU8,
    /// mark_down was called: the connection is closed for its users at
    /// once, whatever its driver has done yet.
    pub(super) marked_down: AtomicBool,
    pub(super) peer_type: AtomicU8,
    /// Conn::over_queue_limit, as of the driver's last step.
    pub(super) over_limit: AtomicBool,
    shard: AtomicUsize,
    pub(super) features: AtomicU64,
    /// Since when a READY connection has been idle (Conn::idle_since), as
    /// nanoseconds past the messenger's epoch, plus one; 0: not idle.
    idle_since: AtomicU64,
    /// Messages queued and their bytes (usize values, held as u64).
    pub(super) queued: [AtomicU64; 2],
    /// The session's in_seq and out_seq.
    pub(super) seqs: [AtomicU64; 2],
    /// Bytes read from and written to the connection's sockets.
    pub(super) bytes: [AtomicU64; 2],
    pub(super) stats: [AtomicU64; 9],
    /// Apart: read and written when the session changes, not per message.
    info: Box<Mutex<Info>>,
}

impl View {
    pub(super) fn new(shard: usize) -> View {
        View {
            state: AtomicU8::new(0),
            marked_down: AtomicBool::new(false),
            shard: AtomicUsize::new(shard),
            features: AtomicU64::new(0),
            peer_type: AtomicU8::new(0),
            over_limit: AtomicBool::new(false),
            idle_since: AtomicU64::new(0),
            queued: Default::default(),
            stats: Default::default(),
            seqs: Default::default(),
            bytes: Default::default(),
            info: Box::new(Mutex::new(Info::default())),
        }
    }

    pub fn info(&self) -> MutexGuard<'_, Info> {
        self.info.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn state(&self) -> ConnState {
        if self.marked_down.load(Ordering::Acquire) {
            return ConnState::Closed;
        }
        let b = self.state.load(Ordering::Acquire);
        STATES.get(b as usize).copied().unwrap_or(ConnState::Closed)
    }

    pub fn shard(&self) -> usize {
        self.shard.load(Ordering::Acquire)
    }

    pub fn marked_down(&self) -> bool {
        self.marked_down.load(Ordering::Acquire)
    }

    pub fn set_shard(&self, shard: usize) {
        self.shard.store(shard, Ordering::Release);
    }

    pub fn idle_since(&self) -> u64 {
        self.idle_since.load(Ordering::Acquire)
    }

    /// Claims this idle connection for eviction (one evictor per idle
    /// spell: a second accept does not evict the same one again).
    pub fn claim_idle(&self, since: u64) -> bool {
        since != 0
            && self
                .idle_since
                .compare_exchange(since, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }
}

/// What the driver last published of what the view does not hold as
/// plain values, to publish only what changed. The counters are compared
/// with the view itself (the driver is their only writer): no copy of
/// them in the driver, whose lines every message touches.
#[derive(Default)]
pub(crate) struct Published {
    state: Option<ConnState>,
    /// The idle time last published: the view's may have been claimed
    /// (set to 0) by an evictor since.
    idle_since: u64,
    keepalive_ack: Option<UTime>,
    /// The peer's name was known (msgr1 learns it from the first message).
    named: bool,
    /// The connection's fault count: a fault is published with the state
    /// it led to (whoever sees the state sees why).
    faults: u64,
}

/// Stores `v` in `slot` if it holds something else.
fn set_u64(slot: &AtomicU64, v: u64) {
    if slot.load(Ordering::Relaxed) != v {
        slot.store(v, Ordering::Relaxed);
    }
}

impl Published {
    /// Publishes `c` into `view`; `epoch` dates idle times. Returns the
    /// state published before, when the state changed.
    pub fn publish(&mut self, c: &Conn, view: &View, epoch: Instant) -> Option<Option<ConnState>> {
        let mut changed = None;
        let state = c.state();
        let ack = c.last_keepalive_ack();
        let named = c.peer_name().is_some();
        let faults = c.stats().faults;
        if self.state != Some(state)
            || self.keepalive_ack != ack
            || self.named != named
            || self.faults != faults
        {
            // Before the state: a handle that sees the new state (Acquire)
            // sees the info that goes with it, its fault included.
            *view.info() = Info::of(c);
            let peer = c.peer();
            view.features.store(peer.features, Ordering::Release);
            view.peer_type.store(peer.entity_type.0, Ordering::Release);
            view.state.store(state_byte(state), Ordering::Release);
            if self.state != Some(state) {
                changed = Some(self.state);
            }
            self.state = Some(state);
            self.keepalive_ack = ack;
            self.named = named;
            self.faults = faults;
        }
        let st = c.stats();
        let all = [
            st.connect_attempts,
            st.client_idents,
            st.reconnects_sent,
            st.reconnects,
            st.faults,
            st.messages_in,
            st.messages_out,
            st.duplicates_dropped,
            st.last_handshake_ns,
        ];
        for (slot, v) in view.stats.iter().zip(all) {
            set_u64(slot, v);
        }
        let session = c.session();
        let [i, o] = &view.seqs;
        set_u64(i, session.in_seq());
        set_u64(o, session.out_seq());
        let (n, b) = session.queued();
        let [qn, qb] = &view.queued;
        set_u64(qn, u64::try_from(n).unwrap_or(u64::MAX));
        set_u64(qb, u64::try_from(b).unwrap_or(u64::MAX));
        let over = c.over_queue_limit();
        if view.over_limit.load(Ordering::Relaxed) != over {
            view.over_limit.store(over, Ordering::Release);
        }
        let idle = c.idle_since().map_or(0, |t| {
            let nanos = t.saturating_duration_since(epoch).as_nanos();
            u64::try_from(nanos)
                .unwrap_or(u64::MAX - 1)
                .saturating_add(1)
        });
        if self.idle_since != idle {
            view.idle_since.store(idle, Ordering::Release);
            self.idle_since = idle;
        }
        changed
    }

    /// Publishes the bytes the driver counted (read, written), when they
    /// changed.
    pub fn bytes(&self, view: &View, bytes: [u64; 2]) {
        for (slot, v) in view.bytes.iter().zip(bytes) {
            set_u64(slot, v);
        }
    }
}
