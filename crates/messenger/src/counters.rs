//! The messenger's perf counters: one logger per shard, as AsyncMessenger
//! keeps one per worker ("AsyncMessenger::Worker-N"), with Ceph's names,
//! descriptions, kinds and units (src/msg/async/Stack.h; the encrypted
//! byte counters are Ceph 17's), so that `perf dump` reads to Ceph's tools
//! and exporters as an OSD's does (docs/research/admin-socket.md §5).
//!
//! What each counts here:
//! - messages: received ones before dispatch; sent ones when queued (as
//!   Ceph counts them);
//! - bytes: what the socket read and wrote (Ceph counts message frames
//!   only, so handshakes, acks and keepalives are counted here and not
//!   there), and on secure sessions the same again as encrypted bytes;
//! - connections: created on this shard; active (open, not yet closed)
//!   on it;
//! - times: a shard thread's busy spells, from waking to parking
//!   (running total; shards with threads of their own only, not those in
//!   the caller's runtime); dispatching, per batch of messages (fast
//!   dispatch);
//! - the send queue's latency: sampled, one message in [`SAMPLE_EVERY`],
//!   from `send` until its connection's driver takes it to encode.
//!
//! Reading and sending times, and the ack handling latency, are in the
//! schema with no samples: measuring them costs clock reads per message
//! or per ack that Ceph pays and this messenger does not.
//!
//! Beside the workers' loggers: `msgr-sessions` (faults, resets,
//! replacements, reconnects, Ceph 20's ready and idle timeouts, handshake
//! time: per event, never per message) and the dispatch throttle's
//! `throttle-msgr_dispatch_throttler-NAME` (its level and limit, read
//! when dumped, and its waits), as Ceph's Throttle shows itself.

use std::sync::Arc;

mod by_type;
pub use by_type::Traffic;

use msgr_admin::perf::{Collection, Desc, Kind, Logger, Unit, PRIO_DEBUGONLY};

/// The index of `msgr_recv_messages` in a worker's logger.
pub const RECV_MESSAGES: usize = 0;
/// The index of `msgr_send_messages` in a worker's logger.
pub const SEND_MESSAGES: usize = 1;
/// The index of `msgr_recv_bytes` in a worker's logger.
pub const RECV_BYTES: usize = 2;
/// The index of `msgr_send_bytes` in a worker's logger.
pub const SEND_BYTES: usize = 3;
/// The index of `msgr_created_connections` in a worker's logger.
pub const CREATED_CONNECTIONS: usize = 4;
/// The index of `msgr_active_connections` in a worker's logger.
pub const ACTIVE_CONNECTIONS: usize = 5;
/// The index of `msgr_running_total_time` in a worker's logger.
pub const RUNNING_TOTAL_TIME: usize = 6;
/// The index of `msgr_running_send_time` in a worker's logger.
pub const RUNNING_SEND_TIME: usize = 7;
/// The index of `msgr_running_recv_time` in a worker's logger.
pub const RUNNING_RECV_TIME: usize = 8;
/// The index of `msgr_running_fast_dispatch_time` in a worker's logger.
pub const RUNNING_FAST_DISPATCH_TIME: usize = 9;
/// The index of `msgr_send_messages_queue_lat` in a worker's logger.
pub const SEND_MESSAGES_QUEUE_LAT: usize = 10;
/// The index of `msgr_handle_ack_lat` in a worker's logger.
pub const HANDLE_ACK_LAT: usize = 11;
/// The index of `msgr_recv_encrypted_bytes` in a worker's logger.
pub const RECV_ENCRYPTED_BYTES: usize = 12;
/// The index of `msgr_send_encrypted_bytes` in a worker's logger.
pub const SEND_ENCRYPTED_BYTES: usize = 13;

const fn desc(name: &'static str, kind: Kind, description: &'static str, unit: Unit) -> Desc {
    Desc {
        name,
        kind,
        description,
        nick: "",
        priority: PRIO_DEBUGONLY,
        unit,
    }
}

/// In the indexes' order (Ceph's enum order, which `perf dump` keeps).
pub static DESCS: [Desc; 14] = [
    desc(
        "msgr_recv_messages",
        Kind::Counter,
        "Network received messages",
        Unit::None,
    ),
    desc(
        "msgr_send_messages",
        Kind::Counter,
        "Network sent messages",
        Unit::None,
    ),
    desc(
        "msgr_recv_bytes",
        Kind::Counter,
        "Network received bytes",
        Unit::Bytes,
    ),
    desc(
        "msgr_send_bytes",
        Kind::Counter,
        "Network sent bytes",
        Unit::Bytes,
    ),
    desc(
        "msgr_created_connections",
        Kind::Counter,
        "Created connection number",
        Unit::None,
    ),
    desc(
        "msgr_active_connections",
        Kind::Counter,
        "Active connection number",
        Unit::None,
    ),
    desc(
        "msgr_running_total_time",
        Kind::Time,
        "The total time of thread running",
        Unit::None,
    ),
    desc(
        "msgr_running_send_time",
        Kind::Time,
        "The total time of message sending",
        Unit::None,
    ),
    desc(
        "msgr_running_recv_time",
        Kind::Time,
        "The total time of message receiving",
        Unit::None,
    ),
    desc(
        "msgr_running_fast_dispatch_time",
        Kind::Time,
        "The total time of fast dispatch",
        Unit::None,
    ),
    desc(
        "msgr_send_messages_queue_lat",
        Kind::TimeAvg,
        "Network sent messages lat",
        Unit::None,
    ),
    desc(
        "msgr_handle_ack_lat",
        Kind::TimeAvg,
        "Connection handle ack lat",
        Unit::None,
    ),
    desc(
        "msgr_recv_encrypted_bytes",
        Kind::Counter,
        "Network received encrypted bytes",
        Unit::Bytes,
    ),
    desc(
        "msgr_send_encrypted_bytes",
        Kind::Counter,
        "Network sent encrypted bytes",
        Unit::Bytes,
    ),
];

/// What happens to a messenger's sessions, beyond Ceph's worker counters
/// (logger `msgr-sessions`, one per messenger; the names of Ceph 20's
/// labeled timeout counters where it has them). Counted per event, never
/// per message.
///
/// The index of `msgr_connection_faults` in `msgr-sessions`.
pub const FAULTS: usize = 0;
/// The index of `msgr_connection_resets` in `msgr-sessions`.
pub const RESETS: usize = 1;
/// The index of `msgr_connection_replaced` in `msgr-sessions`.
pub const REPLACED: usize = 2;
/// The index of `msgr_connection_reconnects` in `msgr-sessions`.
pub const RECONNECTS: usize = 3;
/// The index of `msgr_connection_ready_timeouts` in `msgr-sessions`.
pub const READY_TIMEOUTS: usize = 4;
/// The index of `msgr_connection_idle_timeouts` in `msgr-sessions`.
pub const IDLE_TIMEOUTS: usize = 5;
/// The index of `msgr_handshake_lat` in `msgr-sessions`.
pub const HANDSHAKE_LAT: usize = 6;
/// The index of `msgr_connection_path_stalls` in `msgr-sessions`.
pub const PATH_STALLS: usize = 7;

/// The counters of `msgr-sessions`.
pub static SESSION_DESCS: [Desc; 8] = [
    desc(
        "msgr_connection_faults",
        Kind::Counter,
        "Connection faults (each one given to ms_handle_fault)",
        Unit::None,
    ),
    desc(
        "msgr_connection_resets",
        Kind::Counter,
        "Sessions reset, by a lossy fault or by the peer",
        Unit::None,
    ),
    desc(
        "msgr_connection_replaced",
        Kind::Counter,
        "Accepted sessions that replaced another",
        Unit::None,
    ),
    desc(
        "msgr_connection_reconnects",
        Kind::Counter,
        "Sessions resumed after a fault",
        Unit::None,
    ),
    desc(
        "msgr_connection_ready_timeouts",
        Kind::Counter,
        "Number of not yet ready connections declared as dead",
        Unit::None,
    ),
    desc(
        "msgr_connection_idle_timeouts",
        Kind::Counter,
        "Number of connections closed due to idleness",
        Unit::None,
    ),
    desc(
        "msgr_handshake_lat",
        Kind::TimeAvg,
        "Handshake time, from a socket's first step to READY",
        Unit::None,
    ),
    desc(
        "msgr_connection_path_stalls",
        Kind::Counter,
        "Connections whose peer's host acknowledged nothing for the stall timeout (a partition)",
        Unit::None,
    ),
];

/// The dispatch throttle, as Ceph's Throttle shows itself (logger
/// `throttle-msgr_dispatch_throttler-NAME`): its level and limit, read
/// when dumped, and the waits for it (the slow path only).
///
/// The index of `val` (bytes held) in the throttle's logger.
pub const THROTTLE_VAL: usize = 0;
/// The index of `max` (the limit) in the throttle's logger.
pub const THROTTLE_MAX: usize = 1;
/// The index of `wait` (time waited for budget) in the throttle's logger.
pub const THROTTLE_WAIT: usize = 2;

/// The counters of the dispatch throttle's logger.
pub static THROTTLE_DESCS: [Desc; 3] = [
    desc("val", Kind::Gauge, "Currently taken slots", Unit::None),
    desc("max", Kind::Gauge, "Max value for throttle", Unit::None),
    desc("wait", Kind::TimeAvg, "Waiting latency", Unit::None),
];

/// One message in this many is stamped when queued, and its wait until
/// its connection's driver takes it to encode is a sample of
/// `msgr_send_messages_queue_lat` (Ceph stamps every one: a clock read per
/// message, which is what sampling saves).
pub const SAMPLE_EVERY: u32 = 64;

/// When a sampled message was queued: microseconds since the process's
/// first stamp, wrapping (71 minutes: far beyond any queue's wait); 0 for
/// a message not sampled. Four bytes, so a queued command stays small.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp(u32);

impl Stamp {
    /// A stamp of now for one call in [`SAMPLE_EVERY`] on this thread,
    /// else none.
    pub fn sample() -> Stamp {
        thread_local!(static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
        let n = CALLS.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n
        });
        match n % SAMPLE_EVERY {
            0 => Stamp(micros_now().max(1)),
            _ => Stamp(0),
        }
    }

    /// How long ago a sampled message was stamped.
    pub fn elapsed(self) -> Option<std::time::Duration> {
        (self.0 != 0).then(|| {
            let us = micros_now().max(1).wrapping_sub(self.0);
            std::time::Duration::from_micros(u64::from(us))
        })
    }
}

/// Microseconds since the first call, on the runtime's clock, truncated
/// to 32 bits (stamps are compared wrapping).
fn micros_now() -> u32 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(crate::now);
    crate::now().saturating_duration_since(epoch).as_micros() as u32
}

/// A messenger's loggers: one per shard, its sessions' and its dispatch
/// throttle's, shown in `collection` (if any) while the messenger lives.
pub(crate) struct Counters {
    shards: Vec<Arc<Logger>>,
    /// Messages and bytes by type, per shard.
    by_type: Vec<by_type::ByType>,
    /// The named types' slots in `by_type`.
    slots: Arc<by_type::Slots>,
    pub sessions: Arc<Logger>,
    pub throttle: Arc<Logger>,
    collection: Option<Collection>,
}

impl Counters {
    /// The loggers of messenger `name`, whose dispatch throttle is
    /// `throttle`, counting traffic by the types `types` names.
    pub fn new(
        name: &str,
        shards: usize,
        throttle: Arc<crate::throttle::Throttle>,
        collection: Option<Collection>,
        types: crate::MessageTypes,
    ) -> Counters {
        let shards: Vec<Arc<Logger>> = (0..shards.max(1))
            .map(|i| Arc::new(Logger::new(format!("AsyncMessenger::Worker-{i}"), &DESCS)))
            .collect();
        let sessions = Arc::new(Logger::new("msgr-sessions", &SESSION_DESCS));
        let level = Box::new(move |l: &Logger| {
            l.set(THROTTLE_VAL, throttle.current().1);
            l.set(THROTTLE_MAX, throttle.max_bytes());
        });
        let throttle = Arc::new(
            Logger::new(
                format!("throttle-msgr_dispatch_throttler-{name}"),
                &THROTTLE_DESCS,
            )
            .refreshed_by(level),
        );
        if let Some(c) = &collection {
            for l in shards.iter().chain([&sessions, &throttle]) {
                c.add(l.clone());
            }
        }
        let slots = by_type::Slots::new(types);
        Counters {
            by_type: shards
                .iter()
                .map(|_| by_type::ByType::new(slots.clone()))
                .collect(),
            slots,
            shards,
            sessions,
            throttle,
            collection,
        }
    }

    /// Shard `shard`'s logger.
    pub fn shard(&self, shard: usize) -> &Arc<Logger> {
        self.shards
            .get(shard)
            .or(self.shards.first())
            .expect("a logger per shard, at least one")
    }

    /// Shard `shard`'s counts by message type.
    pub fn by_type(&self, shard: usize) -> &by_type::ByType {
        self.by_type
            .get(shard)
            .or(self.by_type.first())
            .expect("a table per shard, at least one")
    }

    /// Messages and bytes by type, summed over the shards, for the types
    /// seen.
    pub fn traffic(&self) -> Vec<(&'static str, Traffic)> {
        by_type::summed(&self.slots, self.by_type.iter())
    }

    /// Counter `i` summed over the shards.
    pub fn total(&self, i: usize) -> u64 {
        self.shards
            .iter()
            .map(|l| l.get(i))
            .fold(0, u64::wrapping_add)
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        if let Some(c) = &self.collection {
            for l in self.shards.iter().chain([&self.sessions, &self.throttle]) {
                c.remove(l);
            }
        }
    }
}
