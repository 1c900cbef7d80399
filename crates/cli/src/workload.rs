//! What `msgr bench`'s clients and `msgr serve`'s servers (msgr2, msgr1
//! and the raw TCP baseline) agree on and count: the op flag that asks for
//! a data checksum and the checksum itself, the server's counters and the
//! clients' progress. A module of its own so that the bench, the server
//! and the raw baseline each depend on it rather than on one another.

use std::sync::atomic::{AtomicU64, Ordering};

use msgr_frames::crc::ceph_crc32c;

/// The checksum a reply carries for a request's data.
pub fn data_checksum(data: &[u8]) -> u64 {
    ceph_crc32c(0xffff_ffff, data) as u64
}

/// An op flag (outside the range Ceph uses) with which `msgr bench --verify`
/// asks for the data checksum in the reply.
pub const OP_FLAG_CHECKSUM: u32 = 1 << 31;

/// Counters of a server: what is counted per message is counted by each
/// shard in a slot of its own (its own cache lines, as the messenger's
/// per-shard counters), so that shards answering messages write no line
/// another shard writes; readers sum the slots.
#[derive(Debug)]
pub struct ServeStats {
    slots: Box<[Slot]>,
    /// Connections accepted (per connection, not per message).
    pub connections: AtomicU64,
}

/// One shard's counts, alone on its cache lines (128 bytes: adjacent-line
/// prefetchers pull lines in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    ops: AtomicU64,
    bytes: AtomicU64,
    pings: AtomicU64,
    other: AtomicU64,
}

impl Default for ServeStats {
    fn default() -> Self {
        ServeStats::new(1)
    }
}

impl ServeStats {
    /// Counters for a server of `shards` shards (at least one slot).
    pub fn new(shards: usize) -> ServeStats {
        ServeStats {
            slots: (0..shards.max(1)).map(|_| Slot::default()).collect(),
            connections: AtomicU64::new(0),
        }
    }

    fn slot(&self, shard: usize) -> &Slot {
        // At least one slot: the modulus is never 0.
        let i = shard.checked_rem(self.slots.len()).unwrap_or(0);
        self.slots
            .get(i)
            .unwrap_or_else(|| unreachable!("slot {i} of {}", self.slots.len()))
    }

    /// An op of `bytes` answered on `shard`.
    pub fn op(&self, shard: usize, bytes: u64) {
        let s = self.slot(shard);
        s.ops.fetch_add(1, Ordering::Relaxed);
        s.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A ping answered on `shard`.
    pub fn ping(&self, shard: usize) {
        self.slot(shard).pings.fetch_add(1, Ordering::Relaxed);
    }

    /// Another message received on `shard`.
    pub fn other(&self, shard: usize) {
        self.slot(shard).other.fetch_add(1, Ordering::Relaxed);
    }

    fn sum(&self, f: impl Fn(&Slot) -> &AtomicU64) -> u64 {
        self.slots
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(f(s).load(Ordering::Relaxed)))
    }

    /// Ops answered.
    pub fn ops(&self) -> u64 {
        self.sum(|s| &s.ops)
    }

    /// Their data bytes.
    pub fn bytes(&self) -> u64 {
        self.sum(|s| &s.bytes)
    }

    /// Pings answered.
    pub fn pings(&self) -> u64 {
        self.sum(|s| &s.pings)
    }
}

/// Shared progress counters.
#[derive(Default)]
pub struct Progress {
    pub completed: AtomicU64,
    /// Connections that had their first reply.
    pub up: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::ServeStats;

    #[test]
    fn serve_stats_sum_the_shards_and_keep_them_on_lines_of_their_own() {
        let s = ServeStats::new(2);
        s.op(0, 10);
        s.op(1, 20);
        s.op(3, 5); // past the last shard: wraps, still counted
        s.ping(1);
        s.other(0);
        assert_eq!((s.ops(), s.bytes(), s.pings()), (3, 35, 1));
        let [a, b] = [&s.slots[0], &s.slots[1]].map(|x| std::ptr::from_ref(x) as usize);
        assert_eq!(a % 128, 0);
        assert!(b.abs_diff(a) >= 128, "{a:#x} {b:#x}");
        assert_eq!(ServeStats::new(0).slots.len(), 1);
    }
}
