//! Errors of the frame layer, each attributed to who was at fault.

use std::fmt;

use msgr_encoding::DecodeError;

use crate::compression::algorithm::Algorithm;
use crate::Tag;

/// Who caused an error. The connection's reaction follows from it: a peer
/// that misbehaved or is incompatible is disconnected (msgr2 tells it
/// nothing: Ceph's `_fault()` just closes the socket); local misuse is a bug
/// in the caller; I/O errors are the network's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The peer sent bytes that break the protocol (bad crc, bad length, ...).
    PeerMisbehaved,
    /// The peer is well-behaved but cannot talk to us (features, versions).
    PeerIncompatible,
    /// We were asked to do something invalid, or ran out of a local resource
    /// that forces a reconnect (nonces).
    LocalMisuse,
    /// The transport failed.
    Io,
}

/// An error of the frame layer. After the first one a connection must stop
/// reading: the byte stream's framing is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The peer's banner is not `ceph v2\n`; `msgr1` when it is msgr1's
    /// `ceph v027` (ProtocolV2::_handle_peer_banner).
    NotMsgr2 {
        /// The banner is msgr1's: the peer speaks the older protocol.
        msgr1: bool,
    },
    /// The banner payload is shorter than its two feature words.
    BannerTooShort {
        /// The payload length the banner announced.
        len: usize,
    },
    /// The banner payload length is beyond what we accept.
    BannerTooLarge {
        /// The payload length the banner announced.
        len: usize,
        /// The most we accept.
        max: usize,
    },
    /// The peer requires msgr2 features we do not support.
    PeerRequiresFeatures {
        /// The msgr2 feature bits the peer requires that we do not support.
        missing: u64,
    },
    /// The peer lacks msgr2 features we require.
    PeerLacksFeatures {
        /// The msgr2 feature bits we require that the peer did not announce.
        missing: u64,
    },
    /// The preamble crc does not match its first 28 bytes.
    BadPreambleCrc {
        /// The crc the preamble carries.
        expected: u32,
        /// The crc of the bytes that arrived.
        computed: u32,
    },
    /// Segment count outside 1..=4.
    BadSegmentCount(u8),
    /// The last used segment of a multi-segment frame is empty.
    LastSegmentEmpty,
    /// Tag 0, which no frame may carry.
    ZeroTag,
    /// A segment is longer than the configured cap.
    SegmentTooLarge {
        /// Which segment (0 to 3).
        index: usize,
        /// Its length, as the preamble announces it.
        len: u64,
        /// The cap ([`FrameLimits`](crate::FrameLimits)).
        max: u64,
    },
    /// The frame is longer than the configured cap.
    FrameTooLarge {
        /// The frame's length, as the preamble announces it.
        len: u64,
        /// The cap ([`FrameLimits`](crate::FrameLimits)).
        max: u64,
    },
    /// A segment crc does not match (crc mode).
    BadSegmentCrc {
        /// Which segment (0 to 3).
        index: usize,
        /// The crc the epilogue carries.
        expected: u32,
        /// The crc of the bytes that arrived.
        computed: u32,
    },
    /// The epilogue's late status is neither complete nor aborted (msgr2.1).
    BadLateStatus(u8),
    /// AES-GCM authentication failed: the frame was altered or keys differ.
    DecryptFailed,
    /// A frame is flagged compressed but no compression was negotiated.
    UnexpectedCompression,
    /// A compressed segment does not decompress.
    Decompress {
        /// The negotiated algorithm.
        algorithm: Algorithm,
        /// The decompressor's error.
        reason: String,
    },
    /// A compressed segment would decompress beyond the configured cap.
    DecompressedTooLarge {
        /// The length it would decompress to.
        len: u64,
        /// The cap ([`FrameLimits`](crate::FrameLimits)).
        max: u64,
    },
    /// A control frame's payload does not decode.
    BadPayload {
        /// The frame's tag.
        tag: Tag,
        /// Why its payload does not decode.
        error: DecodeError,
    },
    /// A frame carries a number of segments its tag does not allow.
    UnexpectedSegments {
        /// The frame's tag.
        tag: Tag,
        /// How many segments it carries.
        count: usize,
    },
    /// CVE-2020-1759: the transmit nonce would repeat; the connection must be
    /// re-established with new keys (crypto_onwire.cc "out of nonces").
    OutOfNonces,
    /// The connection secret is too short for secure mode.
    BadConnectionSecret {
        /// The secret's length in bytes.
        len: usize,
    },
    /// The buffer handed to the decoder is not the length the preamble set
    /// (or a head buffer is shorter than `FrameDecoder::head_len`, or the
    /// `FrameHead` was altered or decoded in another format).
    WrongFrameBufferLength {
        /// The length the decoder needs.
        expected: usize,
        /// The length it was given.
        got: usize,
    },
    /// AES-GCM failed for a reason of ours (a message beyond GCM's limit
    /// under one nonce, or no memory for the cipher context); a frame that
    /// fails authentication is `DecryptFailed`.
    CipherFailed(msgr_gcm::GcmError),
    /// Compressing an outgoing segment failed.
    Compress {
        /// The negotiated algorithm.
        algorithm: Algorithm,
        /// The compressor's error.
        reason: String,
    },
}

impl FrameError {
    /// Who is at fault.
    pub fn fault(&self) -> Fault {
        use FrameError::*;
        match self {
            PeerRequiresFeatures { .. } | PeerLacksFeatures { .. } => Fault::PeerIncompatible,
            OutOfNonces
            | BadConnectionSecret { .. }
            | WrongFrameBufferLength { .. }
            | CipherFailed(_)
            | Compress { .. } => Fault::LocalMisuse,
            NotMsgr2 { .. }
            | BannerTooShort { .. }
            | BannerTooLarge { .. }
            | BadPreambleCrc { .. }
            | BadSegmentCount(_)
            | LastSegmentEmpty
            | ZeroTag
            | SegmentTooLarge { .. }
            | FrameTooLarge { .. }
            | BadSegmentCrc { .. }
            | BadLateStatus(_)
            | DecryptFailed
            | UnexpectedCompression
            | Decompress { .. }
            | DecompressedTooLarge { .. }
            | BadPayload { .. }
            | UnexpectedSegments { .. } => Fault::PeerMisbehaved,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FrameError::*;
        match self {
            NotMsgr2 { msgr1: true } => {
                f.write_str("peer speaks msgr1 (banner \"ceph v027\"), not msgr2")
            }
            NotMsgr2 { msgr1: false } => f.write_str("peer did not send a msgr2 banner"),
            BannerTooShort { len } => write!(f, "banner payload of {len} bytes is too short"),
            BannerTooLarge { len, max } => write!(f, "banner payload of {len} bytes exceeds {max}"),
            PeerRequiresFeatures { missing } => {
                write!(
                    f,
                    "peer requires msgr2 features {missing:#x} that we do not support"
                )
            }
            PeerLacksFeatures { missing } => {
                write!(f, "peer lacks required msgr2 features {missing:#x}")
            }
            BadPreambleCrc { expected, computed } => write!(
                f,
                "bad preamble crc: frame says {expected:#010x}, computed {computed:#010x}"
            ),
            BadSegmentCount(n) => write!(f, "bad number of segments: {n}"),
            LastSegmentEmpty => f.write_str("last segment of the frame is empty"),
            ZeroTag => f.write_str("frame tag 0"),
            SegmentTooLarge { index, len, max } => {
                write!(f, "segment {index} of {len} bytes exceeds the cap of {max}")
            }
            FrameTooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the cap of {max}")
            }
            BadSegmentCrc {
                index,
                expected,
                computed,
            } => write!(
                f,
                "bad crc of segment {index}: frame says {expected:#010x}, computed {computed:#010x}"
            ),
            BadLateStatus(s) => write!(f, "bad late_status {s:#04x}"),
            DecryptFailed => f.write_str("frame failed AES-GCM authentication"),
            UnexpectedCompression => {
                f.write_str("frame is flagged compressed but compression was not negotiated")
            }
            Decompress { algorithm, reason } => {
                write!(f, "{algorithm} segment does not decompress: {reason}")
            }
            DecompressedTooLarge { len, max } => write!(
                f,
                "compressed segment claims {len} bytes, more than the cap of {max}"
            ),
            BadPayload { tag, error } => write!(f, "bad {tag} payload: {error}"),
            UnexpectedSegments { tag, count } => write!(f, "{tag} frame with {count} segments"),
            OutOfNonces => f.write_str("out of AES-GCM nonces: reconnect required (CVE-2020-1759)"),
            BadConnectionSecret { len } => {
                write!(
                    f,
                    "connection secret of {len} bytes is too short for secure mode"
                )
            }
            WrongFrameBufferLength { expected, got } => {
                write!(
                    f,
                    "frame buffer is {got} bytes, the preamble says {expected}"
                )
            }
            CipherFailed(e) => write!(f, "AES-GCM failed: {e}"),
            Compress { algorithm, reason } => write!(f, "{algorithm} compression failed: {reason}"),
        }
    }
}

impl std::error::Error for FrameError {}
