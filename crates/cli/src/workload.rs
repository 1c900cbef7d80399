//! What `msgr bench`'s clients and `msgr serve`'s servers (msgr2, msgr1
//! and the raw TCP baseline) agree on and count: the op flag that asks for
//! a data checksum and the checksum itself, the server's counters and the
//! clients' progress. A module of its own so that the bench, the server
//! and the raw baseline each depend on it rather than on one another.

use std::sync::atomic::AtomicU64;

use msgr_frames::crc::ceph_crc32c;

/// The checksum a reply carries for a request's data.
pub fn data_checksum(data: &[u8]) -> u64 {
    ceph_crc32c(0xffff_ffff, data) as u64
}

/// An op flag (outside the range Ceph uses) with which `msgr bench --verify`
/// asks for the data checksum in the reply.
pub const OP_FLAG_CHECKSUM: u32 = 1 << 31;

/// Counters of a server.
#[derive(Debug, Default)]
pub struct ServeStats {
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
    pub pings: AtomicU64,
    pub other: AtomicU64,
    pub connections: AtomicU64,
}

/// Shared progress counters.
#[derive(Default)]
pub struct Progress {
    pub completed: AtomicU64,
    /// Connections that had their first reply.
    pub up: AtomicU64,
}
