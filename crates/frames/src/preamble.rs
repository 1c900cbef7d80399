//! The 32-byte preamble (`preamble_block_t`, src/msg/async/frames_v2.h).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | tag |
//! | 1 | 1 | number of segments (1..=4) |
//! | 2 + 6i | 4 | le32 length of segment i |
//! | 6 + 6i | 2 | le16 alignment of segment i |
//! | 26 | 1 | flags (`FRAME_EARLY_DATA_COMPRESSED`) |
//! | 27 | 1 | reserved, zero |
//! | 28 | 4 | le32 `ceph_crc32c(0, bytes 0..28)` |
//!
//! Descriptors of unused trailing segments are all zero (FrameAssembler::
//! fill_preamble). A receiver checks the crc, the count, and that the last
//! used segment is not empty (FrameAssembler::disassemble_preamble);
//! alignment is only a hint for buffer allocation and is not validated.

#[cfg(test)]
use crate::crc::ceph_crc32c;
use crate::crc::preamble_crc32c;
use crate::{FrameError, Tag};

/// The preamble's length on the wire (`preamble_block_t`), crc included.
pub const PREAMBLE_LEN: usize = 32;
/// The most segments a frame has (`MAX_NUM_SEGMENTS`).
pub const MAX_SEGMENTS: usize = 4;
/// Preamble flag: the frame's segments are compressed (msgr2 compression).
pub const FLAG_COMPRESSED: u8 = 0x1;
/// The four segment descriptors (le32 length, le16 alignment) in a preamble.
const DESCS: std::ops::Range<usize> = 2..2 + MAX_SEGMENTS * DESC_LEN;
const DESC_LEN: usize = 6;

/// One segment's length and announced alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentDesc {
    /// The segment's length in bytes (compressed, when the frame is).
    pub len: u32,
    /// The alignment the sender asks the receiver to give its bytes.
    pub align: u16,
}

/// A decoded (or to-be-encoded) preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preamble {
    /// The frame's tag.
    pub tag: Tag,
    /// Used segments, 1..=4.
    pub num_segments: u8,
    /// Each segment's length and alignment; those past `num_segments` are zero.
    pub segments: [SegmentDesc; MAX_SEGMENTS],
    /// Preamble flags ([`FLAG_COMPRESSED`]).
    pub flags: u8,
    /// The reserved byte as received (Ceph sends 0 and does not check it).
    pub reserved: u8,
}

impl Preamble {
    /// A preamble for segments of the given lengths: trailing empty segments
    /// are dropped (at least one stays), as FrameAssembler::calc_num_segments.
    pub fn new(
        tag: Tag,
        lens: [u32; MAX_SEGMENTS],
        aligns: [u16; MAX_SEGMENTS],
        flags: u8,
    ) -> Self {
        // Up to the last non-empty segment.
        let num = lens
            .iter()
            .rposition(|&l| l != 0)
            .and_then(|last| last.checked_add(1))
            .unwrap_or(1);
        let mut segments = [SegmentDesc::default(); MAX_SEGMENTS];
        for ((s, &len), &align) in segments.iter_mut().take(num).zip(&lens).zip(&aligns) {
            *s = SegmentDesc { len, align };
        }
        Preamble {
            tag,
            num_segments: num as u8,
            segments,
            flags,
            reserved: 0,
        }
    }

    /// The used segments' descriptors (all four for a count above four,
    /// which neither `new` nor `decode` produces).
    pub fn used(&self) -> &[SegmentDesc] {
        self.segments
            .get(..usize::from(self.num_segments))
            .unwrap_or(&self.segments)
    }

    /// Sum of the used segments' lengths (what they take before padding).
    pub fn logical_len(&self) -> u64 {
        self.used().iter().map(|s| s.len as u64).sum()
    }

    /// Whether the frame's segments are compressed.
    pub fn is_compressed(&self) -> bool {
        self.flags & FLAG_COMPRESSED != 0
    }

    /// The preamble's 32 bytes, its crc32c last.
    pub fn encode(&self) -> [u8; PREAMBLE_LEN] {
        let mut b = [0u8; PREAMBLE_LEN];
        b[0] = self.tag.0;
        b[1] = self.num_segments;
        for (d, s) in b[DESCS].chunks_exact_mut(DESC_LEN).zip(&self.segments) {
            let [l0, l1, l2, l3] = s.len.to_le_bytes();
            let [a0, a1] = s.align.to_le_bytes();
            d.copy_from_slice(&[l0, l1, l2, l3, a0, a1]);
        }
        b[26] = self.flags;
        b[27] = self.reserved;
        let crc = preamble_crc32c(&b);
        b[28..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and validates a plaintext preamble.
    pub fn decode(b: &[u8; PREAMBLE_LEN]) -> Result<Self, FrameError> {
        let expected = u32::from_le_bytes([b[28], b[29], b[30], b[31]]);
        let computed = preamble_crc32c(b);
        if expected != computed {
            return Err(FrameError::BadPreambleCrc { expected, computed });
        }
        if b[0] == 0 {
            return Err(FrameError::ZeroTag);
        }
        let num = b[1];
        if num == 0 || num as usize > MAX_SEGMENTS {
            return Err(FrameError::BadSegmentCount(num));
        }
        let mut segments = [SegmentDesc::default(); MAX_SEGMENTS];
        for (s, d) in segments.iter_mut().zip(b[DESCS].chunks_exact(DESC_LEN)) {
            // Always matches: every chunk is DESC_LEN bytes.
            if let [l0, l1, l2, l3, a0, a1] = *d {
                s.len = u32::from_le_bytes([l0, l1, l2, l3]);
                s.align = u16::from_le_bytes([a0, a1]);
            }
        }
        let used = segments.get(..usize::from(num)).unwrap_or(&segments);
        if let [_, .., last] = used {
            if last.len == 0 {
                return Err(FrameError::LastSegmentEmpty);
            }
        }
        Ok(Preamble {
            tag: Tag(b[0]),
            num_segments: num,
            segments,
            flags: b[26],
            reserved: b[27],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        msgr_encoding::hex::decode(s).unwrap()
    }

    #[test]
    fn examples() {
        // WAIT: one empty segment, alignment 8.
        let p = Preamble::new(Tag::WAIT, [0; 4], [8; 4], 0);
        assert_eq!(
            p.encode().to_vec(),
            hex("10 01 00000000 0800 000000000000 000000000000 000000000000 00 00 c8e3aab0")
        );
        // MESSAGE 41/250/0/512, alignments 8/8/8/4096.
        let p = Preamble::new(Tag::MESSAGE, [41, 250, 0, 512], [8, 8, 8, 4096], 0);
        let b = p.encode();
        assert_eq!(
            b.to_vec(),
            hex("11 04 29000000 0800 fa000000 0800 00000000 0800 00020000 0010 00 00 9db577d0")
        );
        assert_eq!(Preamble::decode(&b).unwrap(), p);
    }

    #[test]
    fn trailing_empty_segments_are_dropped_with_their_alignment() {
        let p = Preamble::new(Tag::MESSAGE, [41, 7, 0, 0], [8, 8, 8, 4096], 0);
        assert_eq!(p.num_segments, 2);
        assert_eq!(p.segments[2], SegmentDesc::default());
        assert_eq!(p.segments[3], SegmentDesc::default());
    }

    #[test]
    fn validation() {
        let good = Preamble::new(Tag::HELLO, [36, 0, 0, 0], [8; 4], 0).encode();
        let mut bad_crc = good;
        bad_crc[2] ^= 1;
        assert!(matches!(
            Preamble::decode(&bad_crc),
            Err(FrameError::BadPreambleCrc { .. })
        ));

        let with_crc = |mut b: [u8; 32]| {
            let crc = ceph_crc32c(0, &b[..28]);
            b[28..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut five = good;
        five[1] = 5;
        assert_eq!(
            Preamble::decode(&with_crc(five)),
            Err(FrameError::BadSegmentCount(5))
        );
        let mut zero = good;
        zero[1] = 0;
        assert_eq!(
            Preamble::decode(&with_crc(zero)),
            Err(FrameError::BadSegmentCount(0))
        );
        let mut empty_last = good;
        empty_last[1] = 2;
        assert_eq!(
            Preamble::decode(&with_crc(empty_last)),
            Err(FrameError::LastSegmentEmpty)
        );
        let mut tag0 = good;
        tag0[0] = 0;
        assert_eq!(Preamble::decode(&with_crc(tag0)), Err(FrameError::ZeroTag));
    }
}
