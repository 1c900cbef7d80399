//! How long each part of a frame is on the wire, in each of the four modes
//! (FrameAssembler::get_*_onwire_len in src/msg/async/frames_v2.h).
//!
//! - msgr2.0-crc: preamble, segments, 17-byte epilogue (late_flags + 4 crcs).
//! - msgr2.1-crc: preamble, segment 0 followed by its le32 crc when it is not
//!   empty, the other segments, and a 13-byte epilogue (late_status + 3 crcs)
//!   only when the frame has more than one segment.
//! - msgr2.0-secure: preamble, each segment zero-padded to 16 bytes, a
//!   16-byte epilogue, all one AES-GCM ciphertext, then its 16-byte tag.
//! - msgr2.1-secure: preamble + 48-byte inline buffer + tag (96 bytes);
//!   the part of segment 0 that does not fit inline (padded) + tag; the other
//!   segments padded + 16-byte epilogue + tag, only when there is more than
//!   one segment.

use crate::preamble::{Preamble, PREAMBLE_LEN};

/// The AES block size (`CRYPTO_BLOCK_SIZE`): secure segments are padded to it.
pub const CRYPTO_BLOCK_LEN: usize = 16;
/// The GCM authentication tag's length, after each encrypted part.
pub const GCM_TAG_LEN: usize = 16;
/// `FRAME_PREAMBLE_INLINE_SIZE`: segment 0 bytes carried with the preamble
/// in msgr2.1-secure.
pub const INLINE_LEN: usize = 48;
/// A crc32c's length on the wire.
pub const CRC_LEN: usize = 4;
/// `epilogue_crc_rev0_block_t`: late_flags + 4 crcs.
pub const EPILOGUE_CRC_REV0_LEN: usize = 1 + 4 * CRC_LEN;
/// `epilogue_crc_rev1_block_t`: late_status + 3 crcs.
pub const EPILOGUE_CRC_REV1_LEN: usize = 1 + 3 * CRC_LEN;
/// `epilogue_secure_rev{0,1}_block_t`: one status byte + 15 zero bytes.
pub const EPILOGUE_SECURE_LEN: usize = 16;

/// Rounds up to the AES block size (`p2roundup(len, CRYPTO_BLOCK_SIZE)`).
/// The add cannot saturate: a `u32` (what a preamble carries) plus 15 fits
/// in a `u64`.
#[inline]
pub fn pad16(len: u32) -> u64 {
    u64::from(len).saturating_add(15) & !15
}

/// Which of the four framings a connection uses in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireFormat {
    /// msgr2.1 (else msgr2.0), from the banner exchange.
    pub rev1: bool,
    /// Secure mode (AES-128-GCM), after AUTH_DONE chose it.
    pub secure: bool,
}

impl WireFormat {
    /// msgr2.0, crc mode.
    pub const CRC_REV0: WireFormat = WireFormat {
        rev1: false,
        secure: false,
    };
    /// msgr2.1, crc mode.
    pub const CRC_REV1: WireFormat = WireFormat {
        rev1: true,
        secure: false,
    };
    /// msgr2.0, secure mode.
    pub const SECURE_REV0: WireFormat = WireFormat {
        rev1: false,
        secure: true,
    };
    /// msgr2.1, secure mode.
    pub const SECURE_REV1: WireFormat = WireFormat {
        rev1: true,
        secure: true,
    };

    /// Bytes to read before the preamble can be decoded.
    pub fn preamble_len(self) -> usize {
        if self.rev1 && self.secure {
            PREAMBLE_LEN + INLINE_LEN + GCM_TAG_LEN
        } else {
            PREAMBLE_LEN
        }
    }

    /// On-wire length of segment `index` of logical length `len`. A `u32`
    /// length keeps every result below 2^33, so the adds cannot saturate.
    pub fn segment_len(self, index: usize, len: u32) -> u64 {
        match (self.secure, self.rev1) {
            (true, true) if index == 0 => match pad16(len).checked_sub(INLINE_LEN as u64) {
                // The padded part beyond the inline buffer, and its tag.
                Some(rest) if rest > 0 => rest.saturating_add(GCM_TAG_LEN as u64),
                _ => 0,
            },
            (true, _) => pad16(len),
            (false, true) if index == 0 && len > 0 => u64::from(len).saturating_add(CRC_LEN as u64),
            (false, _) => u64::from(len),
        }
    }

    /// On-wire length of the epilogue of a frame with `num_segments` used.
    pub fn epilogue_len(self, num_segments: u8) -> usize {
        match (self.secure, self.rev1) {
            (_, true) if num_segments == 1 => 0,
            (true, _) => EPILOGUE_SECURE_LEN + GCM_TAG_LEN,
            (false, true) => EPILOGUE_CRC_REV1_LEN,
            (false, false) => EPILOGUE_CRC_REV0_LEN,
        }
    }

    /// The whole frame on the wire, preamble included. At most four
    /// segments below 2^33 each keep it below 2^36: the sum cannot
    /// overflow and the adds cannot saturate.
    pub fn frame_len(self, p: &Preamble) -> u64 {
        let segments: u64 = p
            .used()
            .iter()
            .enumerate()
            .map(|(i, s)| self.segment_len(i, s.len))
            .sum();
        (self.preamble_len() as u64)
            .saturating_add(segments)
            .saturating_add(self.epilogue_len(p.num_segments) as u64)
    }
}

impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rev = if self.rev1 { "msgr2.1" } else { "msgr2.0" };
        let mode = if self.secure { "secure" } else { "crc" };
        write!(f, "{rev}-{mode}")
    }
}
