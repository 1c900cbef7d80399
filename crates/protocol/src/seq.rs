//! How far a peer may move our shared counters: the values of
//! [`crate::GlobalSeq::PEER_LIMIT`] and [`crate::GlobalSeq::PEER_STEP`],
//! apart from the counter so that errors can name them.

/// The highest global_seq a peer may show us: its successor must fit
/// msgr1's 32-bit field (Ceph's messengers count in `uint32_t`).
pub const PEER_GLOBAL_SEQ_LIMIT: u64 = u32::MAX as u64 - 1;

/// How far past ours one peer may push global_seq over a connection's
/// life (see [`crate::GlobalSeq::PEER_STEP`]).
pub const PEER_GLOBAL_SEQ_STEP: u64 = 1 << 16;
