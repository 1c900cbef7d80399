//! Ceph feature bits exchanged in CLIENT_IDENT / SERVER_IDENT
//! (src/include/ceph_features.h; see docs/research/payloads.md §6).

/// `CEPH_FEATURE_MSG_ADDR2`: required by msgr2 (`msgr2_required`).
pub const MSG_ADDR2: u64 = 1 << 59;
/// `CEPH_FEATUREMASK_SERVER_NAUTILUS` (bit 2, incarnation 3).
pub const SERVER_NAUTILUS: u64 = (1 << 2) | (1 << 57) | (1 << 28);
/// `CEPH_FEATURE_RESEND_ON_SPLIT` (bit 21, incarnation 2).
pub const RESEND_ON_SPLIT: u64 = (1 << 21) | (1 << 57);
/// `CEPH_FEATUREMASK_SERVER_SQUID` (bit 49, incarnation 2): the peer can
/// read MOSDOp v9.
pub const SERVER_SQUID: u64 = (1 << 49) | (1 << 57);
/// `CEPH_FEATURE_NOSRCADDR`: the 53-byte `ceph_msg_header` (the only one
/// msgr1 here speaks; Ceph's kernel client requires it too).
pub const NOSRCADDR: u64 = 1 << 1;
/// The features msgr1 here requires of every peer.
pub const MSGR1_REQUIRED: u64 = NOSRCADDR;
/// `CEPH_FEATURE_RECONNECT_SEQ`: an msgr1 acceptor answers SEQ (and the
/// last sequence number it received) rather than READY.
pub const RECONNECT_SEQ: u64 = 1 << 6;
/// `CEPH_FEATURE_MSG_AUTH`: msgr1 footers carry a signature (21 bytes,
/// not 13).
pub const MSG_AUTH: u64 = 1 << 23;
/// `CEPH_FEATURE_MSGR_KEEPALIVE2`.
pub const MSGR_KEEPALIVE2: u64 = 1 << 42;
/// `CEPH_FEATURE_CEPHX_V2`.
pub const CEPHX_V2: u64 = 1 << 61;

/// What a Reef-era daemon advertises (`CEPH_FEATURES_ALL` without
/// SERVER_SQUID): Ceph 16 to 20 peers all read what this implies.
/// Advertising exactly what we can decode keeps peers from choosing message
/// encodings we do not know.
pub const SUPPORTED_DEFAULT: u64 = 0x3f01_cfbf_fffd_ffff;

/// The features msgr2 itself requires of every peer.
pub const MSGR2_REQUIRED: u64 = MSG_ADDR2;

/// Ceph's HAVE_FEATURE: all bits of `mask` (a feature and its incarnation).
pub fn has(features: u64, mask: u64) -> bool {
    features & mask == mask
}
