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
/// In declared order (`repr(C)`): what changes with every message first,
/// in one cache line of its own (Shared places it so); what changes with
/// handshakes and faults after, read and written only then; the session's
/// `Info` held apart (BENCHMARKS.md, "What grows with connections").
#[repr(C)]
pub(crate) struct View {
    /// The session's in_seq and out_seq.
    pub(super) seqs: [AtomicU64; 2],
    /// Bytes read from and written to the connection's sockets.
    pub(super) bytes: [AtomicU64; 2],
    /// ConnStats::messages_in and messages_out.
    pub(super) messages: [AtomicU64; 2],
    /// Messages queued and their bytes (usize values, held as u64).
    pub(super) queued: [AtomicU64; 2],
    /// The other ConnStats counters, in RARE's order.
    pub(super) rare: [AtomicU64; 7],
    state: AtomicU8,
    pub(super) peer_type: AtomicU8,
    /// Conn::over_queue_limit, as of the driver's last step.
    pub(super) over_limit: AtomicBool,
    shard: AtomicUsize,
    pub(super) features: AtomicU64,
    /// Since when a READY connection has been idle (Conn::idle_since), as
    /// nanoseconds past the messenger's epoch, plus one; 0: not idle.
    idle_since: AtomicU64,
    /// Apart: read and written when the session changes, not per message.
    info: Box<Mutex<Info>>,
}

/// The ConnStats counters that change with handshakes, faults and
/// duplicates, not with every message: as the view holds them.
const RARE: usize = 7;

fn rare(s: &msgr_protocol::ConnStats) -> [u64; RARE] {
    [
        s.connect_attempts,
        s.client_idents,
        s.reconnects_sent,
        s.reconnects,
        s.faults,
        s.duplicates_dropped,
        s.last_handshake_ns,
    ]
}

impl View {
    pub(super) fn new(shard: usize) -> View {
        View {
            seqs: Default::default(),
            bytes: Default::default(),
            messages: Default::default(),
            queued: Default::default(),
            rare: Default::default(),
            state: AtomicU8::new(0),
            peer_type: AtomicU8::new(0),
            over_limit: AtomicBool::new(false),
            shard: AtomicUsize::new(shard),
            features: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            info: Box::new(Mutex::new(Info::default())),
        }
    }

    /// What a handle's `stats` returns.
    pub fn stats(&self) -> msgr_protocol::ConnStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let [connect_attempts, client_idents, reconnects_sent, reconnects, faults, duplicates_dropped, last_handshake_ns] =
            self.rare.each_ref().map(get);
        let [messages_in, messages_out] = self.messages.each_ref().map(get);
        msgr_protocol::ConnStats {
            connect_attempts,
            client_idents,
            reconnects_sent,
            reconnects,
            faults,
            messages_in,
            messages_out,
            duplicates_dropped,
            last_handshake_ns,
        }
    }

    pub fn info(&self) -> MutexGuard<'_, Info> {
        self.info.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state the driver last published (Shared::state also heeds a
    /// mark_down the driver has not seen yet).
    pub fn state(&self) -> ConnState {
        let b = self.state.load(Ordering::Acquire);
        STATES.get(b as usize).copied().unwrap_or(ConnState::Closed)
    }

    pub fn shard(&self) -> usize {
        self.shard.load(Ordering::Acquire)
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

/// What the driver last published of what changes with the session, to
/// look at the view's lines for it only when it changed. The per-message
/// counters are compared with the view itself (the driver is their only
/// writer, and writes some of that one line every message anyway): no
/// copy of them in the driver, whose lines every message touches.
#[derive(Default)]
pub(crate) struct Published {
    state: Option<ConnState>,
    /// Conn::over_queue_limit as published.
    over_limit: bool,
    /// The peer's name was known (msgr1 learns it from the first message).
    named: bool,
    /// The idle time last published: the view's may have been claimed
    /// (set to 0) by an evictor since.
    idle_since: u64,
    keepalive_ack: Option<UTime>,
    /// The sum of the rare counters but the handshake's time (which changes
    /// only with READY, a change of state): any of them changing changes
    /// it, since they only grow. A fault is published with the state it
    /// led to (whoever sees the state sees why).
    rare: u64,
}

/// How idle times are published: as nanoseconds past `epoch`, rounded up
/// to `grain` (a 64th of the age at which an idle connection may be
/// evicted), plus one (0: not idle). A busy connection's idle time then
/// changes the view a few times per eviction age rather than with every
/// message, and no connection looks idle for longer than it has been.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdleClock {
    pub epoch: Instant,
    grain: u64,
}

impl IdleClock {
    pub fn new(epoch: Instant, evict_after: std::time::Duration) -> IdleClock {
        let grain = u64::try_from(evict_after.as_nanos() / 64).unwrap_or(u64::MAX);
        IdleClock {
            epoch,
            grain: grain.max(1),
        }
    }

    /// Nanoseconds from the epoch to `now`.
    pub fn nanos(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// What the view holds for a connection idle since `since`.
    fn stamp(&self, since: Option<Instant>) -> u64 {
        since.map_or(0, |t| {
            let up = self
                .nanos(t)
                .div_ceil(self.grain)
                .saturating_mul(self.grain);
            up.min(u64::MAX - 1).saturating_add(1)
        })
    }
}

impl Published {
    /// Publishes `c` into `view`; `idle` dates idle times. Returns the
    /// state published before, when the state changed.
    pub fn publish(&mut self, c: &Conn, view: &View, idle: IdleClock) -> Option<Option<ConnState>> {
        let mut changed = None;
        let state = c.state();
        let ack = c.last_keepalive_ack();
        let named = c.peer_name().is_some();
        let st = c.stats();
        let counters = rare(st);
        let sum = counters
            .iter()
            .take(RARE - 1)
            .fold(0u64, |a, v| a.wrapping_add(*v));
        if self.state != Some(state)
            || self.keepalive_ack != ack
            || self.named != named
            || self.rare != sum
        {
            // Before the state: a handle that sees the new state (Acquire)
            // sees the info and counters that go with it, its fault
            // included.
            *view.info() = Info::of(c);
            for (slot, v) in view.rare.iter().zip(counters) {
                set_u64(slot, v);
            }
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
            self.rare = sum;
        }
        let session = c.session();
        let (n, b) = session.queued();
        let per_message = [
            (&view.seqs, [session.in_seq(), session.out_seq()]),
            (&view.messages, [st.messages_in, st.messages_out]),
            (
                &view.queued,
                [n, b].map(|v| u64::try_from(v).unwrap_or(u64::MAX)),
            ),
        ];
        for (slots, values) in per_message {
            for (slot, v) in slots.iter().zip(values) {
                set_u64(slot, v);
            }
        }
        let over = c.over_queue_limit();
        if self.over_limit != over {
            view.over_limit.store(over, Ordering::Release);
            self.over_limit = over;
        }
        let idle = idle.stamp(c.idle_since());
        if self.idle_since != idle {
            view.idle_since.store(idle, Ordering::Release);
            self.idle_since = idle;
        }
        changed
    }

    /// Publishes the bytes the driver counted, when they changed.
    pub fn bytes(&self, view: &View, bytes: SocketBytes) {
        let [read, written] = &view.bytes;
        set_u64(read, bytes.read);
        set_u64(written, bytes.written);
    }
}

/// Bytes read from and written to a connection's sockets, as its driver
/// counts them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SocketBytes {
    pub read: u64,
    pub written: u64,
}

/// Stores `v` in `slot` if it holds something else.
fn set_u64(slot: &AtomicU64, v: u64) {
    if slot.load(Ordering::Relaxed) != v {
        slot.store(v, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{rare, IdleClock, View};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// The rare counters go into the view in `rare`'s order and come back
    /// out of `stats` each to its own field.
    #[test]
    fn stats_read_back_what_was_published() {
        let s = msgr_protocol::ConnStats {
            connect_attempts: 1,
            client_idents: 2,
            reconnects_sent: 3,
            reconnects: 4,
            faults: 5,
            messages_in: 6,
            messages_out: 7,
            duplicates_dropped: 8,
            last_handshake_ns: 9,
        };
        let view = View::new(0);
        for (slot, v) in view.rare.iter().zip(rare(&s)) {
            slot.store(v, Ordering::Relaxed);
        }
        for (slot, v) in view.messages.iter().zip([s.messages_in, s.messages_out]) {
            slot.store(v, Ordering::Relaxed);
        }
        assert_eq!(view.stats(), s);
    }

    /// An idle time is rounded up to a 64th of the eviction age: it moves
    /// once per grain, and a connection never looks idle for longer than
    /// it has been.
    #[test]
    fn an_idle_time_is_published_rounded_up_to_its_grain() {
        let epoch = Instant::now();
        let clock = IdleClock::new(epoch, Duration::from_secs(64));
        let at = |ms: u64| Some(epoch + Duration::from_millis(ms));
        let second = 1_000_000_000;
        assert_eq!(clock.stamp(None), 0);
        assert_eq!(clock.stamp(at(0)), 1);
        assert_eq!(clock.stamp(at(1)), second + 1);
        assert_eq!(clock.stamp(at(999)), second + 1);
        assert_eq!(clock.stamp(at(1000)), second + 1);
        assert_eq!(clock.stamp(at(1001)), 2 * second + 1);
        // No eviction age: the grain is a nanosecond, not zero.
        let exact = IdleClock::new(epoch, Duration::ZERO);
        assert_eq!(exact.stamp(at(7)), 7_000_000 + 1);
    }
}
