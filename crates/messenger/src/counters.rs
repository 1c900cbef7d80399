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
//!   dispatch).
//!
//! Reading and sending times, and the two latency averages (send queue,
//! ack handling), are in the schema with no samples: measuring them per
//! message costs clock reads Ceph pays and this messenger does not.

use std::sync::Arc;

use msgr_admin::perf::{Collection, Desc, Kind, Logger, Unit, PRIO_DEBUGONLY};

pub const RECV_MESSAGES: usize = 0;
pub const SEND_MESSAGES: usize = 1;
pub const RECV_BYTES: usize = 2;
pub const SEND_BYTES: usize = 3;
pub const CREATED_CONNECTIONS: usize = 4;
pub const ACTIVE_CONNECTIONS: usize = 5;
pub const RUNNING_TOTAL_TIME: usize = 6;
pub const RUNNING_SEND_TIME: usize = 7;
pub const RUNNING_RECV_TIME: usize = 8;
pub const RUNNING_FAST_DISPATCH_TIME: usize = 9;
pub const SEND_MESSAGES_QUEUE_LAT: usize = 10;
pub const HANDLE_ACK_LAT: usize = 11;
pub const RECV_ENCRYPTED_BYTES: usize = 12;
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

/// A messenger's loggers, one per shard, shown in `collection` (if any)
/// while the messenger lives.
pub(crate) struct Counters {
    shards: Vec<Arc<Logger>>,
    collection: Option<Collection>,
}

impl Counters {
    pub fn new(shards: usize, collection: Option<Collection>) -> Counters {
        let shards: Vec<Arc<Logger>> = (0..shards.max(1))
            .map(|i| Arc::new(Logger::new(format!("AsyncMessenger::Worker-{i}"), &DESCS)))
            .collect();
        if let Some(c) = &collection {
            for l in &shards {
                c.add(l.clone());
            }
        }
        Counters { shards, collection }
    }

    /// Shard `shard`'s logger.
    pub fn shard(&self, shard: usize) -> &Arc<Logger> {
        self.shards
            .get(shard)
            .or(self.shards.first())
            .expect("a logger per shard, at least one")
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
            for l in &self.shards {
                c.remove(l);
            }
        }
    }
}
