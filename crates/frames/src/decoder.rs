//! Frame disassembly, in two steps so that a runtime reads no more than a
//! frame needs and can choose where the payload lands:
//!
//! 1. [`FrameDecoder::decode_head`] takes the first
//!    [`FrameDecoder::head_len`] bytes (32, or 96 in msgr2.1-secure),
//!    validates the preamble and returns a [`FrameHead`] that says how long
//!    the whole frame is and where each segment sits in it.
//! 2. [`FrameDecoder::decode_frame`] takes the whole frame (head included)
//!    as one buffer, checks crcs or authenticates and decrypts in place, and
//!    returns the segments as zero-copy slices of that buffer.
//!
//! Rules from frames_v2.cc (FrameAssembler::disassemble_*): segment crcs
//! are checked before the abort flag; an aborted frame is dropped
//! (`Ok(None)`); msgr2.1 late_status must be exactly complete or aborted in
//! its low nibble; decompression happens last.

use bytes::{Buf, Bytes, BytesMut};

use crate::compression::{self, Algorithm};
use crate::crc::{ceph_crc32c, SEGMENT_CRC_SEED};
use crate::crypto::RxCipher;
use crate::encoder::{LATE_FLAG_ABORTED, LATE_STATUS_ABORTED, LATE_STATUS_COMPLETE};
use crate::layout::{pad16, WireFormat, CRC_LEN, EPILOGUE_SECURE_LEN, GCM_TAG_LEN, INLINE_LEN};
use crate::preamble::{Preamble, MAX_SEGMENTS, PREAMBLE_LEN};
use crate::{FrameError, Tag};

/// Caps applied before anything is allocated for a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest segment, as announced in the preamble.
    pub max_segment_len: u32,
    /// Largest frame on the wire.
    pub max_frame_len: u64,
    /// Largest total of a compressed frame's segments once decompressed.
    pub max_decompressed_len: usize,
}

impl Default for FrameLimits {
    /// 256 MiB, well above Ceph's largest messages (osd_max_write_size is
    /// 90 MiB; osd_max_object_size 128 MiB).
    fn default() -> Self {
        FrameLimits {
            max_segment_len: 256 << 20,
            max_frame_len: 256 << 20,
            max_decompressed_len: 256 << 20,
        }
    }
}

/// What the preamble said, and where the frame's parts are.
#[derive(Debug, Clone)]
pub struct FrameHead {
    pub preamble: Preamble,
    /// The whole frame on the wire, head included.
    pub frame_len: usize,
    format: WireFormat,
    /// msgr2.1-secure: the decrypted inline buffer.
    inline: [u8; INLINE_LEN],
}

impl FrameHead {
    pub fn tag(&self) -> Tag {
        self.preamble.tag
    }

    /// Where segment `index`'s bytes start within the frame buffer (for a
    /// runtime that wants a segment, e.g. message data, to land at an
    /// aligned address). In msgr2.1-secure the first 48 bytes of segment 0
    /// arrive with the head, so this is where its remainder starts.
    pub fn segment_offset(&self, index: usize) -> usize {
        let mut at = self.format.preamble_len();
        for (i, s) in self.preamble.used().iter().enumerate().take(index) {
            at += self.format.segment_len(i, s.len) as usize;
        }
        at
    }
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The preamble as it was on the wire (compressed lengths, flags).
    pub preamble: Preamble,
    pub tag: Tag,
    /// The used segments' contents, decompressed; unused ones are empty.
    pub segments: [Bytes; MAX_SEGMENTS],
}

impl Received {
    pub fn num_segments(&self) -> usize {
        self.preamble.num_segments as usize
    }
}

/// The receive side of a connection's framing.
pub struct FrameDecoder {
    rev1: bool,
    cipher: Option<RxCipher>,
    decompression: Option<Algorithm>,
    limits: FrameLimits,
}

impl FrameDecoder {
    /// Starts in crc mode; `rev1` from the banner exchange.
    pub fn new(rev1: bool, limits: FrameLimits) -> Self {
        FrameDecoder {
            rev1,
            cipher: None,
            decompression: None,
            limits,
        }
    }

    pub fn format(&self) -> WireFormat {
        WireFormat {
            rev1: self.rev1,
            secure: self.cipher.is_some(),
        }
    }

    pub fn limits(&self) -> FrameLimits {
        self.limits
    }

    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
    }

    /// Switches to secure mode: every later frame is decrypted.
    pub fn set_cipher(&mut self, cipher: RxCipher) {
        self.cipher = Some(cipher);
    }

    /// Accepts compressed frames in `algorithm` (after COMPRESSION_DONE).
    pub fn set_decompression(&mut self, algorithm: Option<Algorithm>) {
        self.decompression = algorithm.filter(|a| *a != Algorithm::None);
    }

    /// Bytes to hand to [`FrameDecoder::decode_head`].
    pub fn head_len(&self) -> usize {
        self.format().preamble_len()
    }

    /// Validates the start of a frame. `head` must be at least
    /// [`FrameDecoder::head_len`] bytes; only those are read.
    pub fn decode_head(&mut self, head: &[u8]) -> Result<FrameHead, FrameError> {
        let format = self.format();
        let need = format.preamble_len();
        assert!(head.len() >= need, "decode_head needs {need} bytes");
        let mut plain = [0u8; PREAMBLE_LEN];
        let mut inline = [0u8; INLINE_LEN];
        match (&mut self.cipher, self.rev1) {
            (None, _) => plain.copy_from_slice(&head[..PREAMBLE_LEN]),
            (Some(c), false) => c.peek(&head[..PREAMBLE_LEN], &mut plain),
            (Some(c), true) => {
                let mut block = [0u8; PREAMBLE_LEN + INLINE_LEN + GCM_TAG_LEN];
                block.copy_from_slice(&head[..need]);
                c.open(&mut block)?;
                plain.copy_from_slice(&block[..PREAMBLE_LEN]);
                inline.copy_from_slice(&block[PREAMBLE_LEN..PREAMBLE_LEN + INLINE_LEN]);
            }
        }
        let preamble = Preamble::decode(&plain)?;
        for (index, s) in preamble.used().iter().enumerate() {
            if s.len > self.limits.max_segment_len {
                return Err(FrameError::SegmentTooLarge {
                    index,
                    len: s.len as u64,
                    max: self.limits.max_segment_len as u64,
                });
            }
        }
        let frame_len = format.frame_len(&preamble);
        if frame_len > self.limits.max_frame_len {
            return Err(FrameError::FrameTooLarge {
                len: frame_len,
                max: self.limits.max_frame_len,
            });
        }
        if preamble.is_compressed() && self.decompression.is_none() {
            return Err(FrameError::UnexpectedCompression);
        }
        Ok(FrameHead {
            preamble,
            frame_len: frame_len as usize,
            format,
            inline,
        })
    }

    /// Decodes a whole frame whose head `decode_head` accepted. `frame` is
    /// the frame's bytes from its first byte, exactly `head.frame_len` long.
    /// Returns `None` for a frame the sender aborted.
    pub fn decode_frame(
        &mut self,
        head: &FrameHead,
        mut frame: BytesMut,
    ) -> Result<Option<Received>, FrameError> {
        if frame.len() != head.frame_len {
            return Err(FrameError::WrongFrameBufferLength {
                expected: head.frame_len,
                got: frame.len(),
            });
        }
        let p = &head.preamble;
        let n = p.num_segments as usize;
        let lens = p.segments.map(|s| s.len as usize);
        // Segment ranges within `frame` once it is plaintext.
        let mut ranges = [(0usize, 0usize); MAX_SEGMENTS];
        let complete = match (&mut self.cipher, self.rev1) {
            (None, false) => {
                let mut at = PREAMBLE_LEN;
                for i in 0..n {
                    ranges[i] = (at, at + lens[i]);
                    at += lens[i];
                }
                let epilogue = &frame[at..];
                for (i, &(s, e)) in ranges[..n].iter().enumerate() {
                    let o = 1 + CRC_LEN * i;
                    check_crc(i, &frame[s..e], &epilogue[o..o + CRC_LEN])?;
                }
                epilogue[0] & LATE_FLAG_ABORTED == 0
            }
            (None, true) => {
                let mut at = PREAMBLE_LEN;
                ranges[0] = (at, at + lens[0]);
                if lens[0] > 0 {
                    at += lens[0];
                    check_crc(0, &frame[PREAMBLE_LEN..at], &frame[at..at + CRC_LEN])?;
                    at += CRC_LEN;
                }
                for i in 1..n {
                    ranges[i] = (at, at + lens[i]);
                    at += lens[i];
                }
                if n > 1 {
                    let epilogue = &frame[at..];
                    for (i, &(s, e)) in ranges.iter().enumerate().take(n).skip(1) {
                        let o = 1 + CRC_LEN * (i - 1);
                        check_crc(i, &frame[s..e], &epilogue[o..o + CRC_LEN])?;
                    }
                    late_status_complete(epilogue[0])?
                } else {
                    true
                }
            }
            (Some(c), false) => {
                let plain_len = c.open(&mut frame[..])?;
                let mut at = PREAMBLE_LEN;
                for i in 0..n {
                    ranges[i] = (at, at + lens[i]);
                    at += pad16(lens[i] as u64) as usize;
                }
                debug_assert_eq!(at + EPILOGUE_SECURE_LEN, plain_len);
                frame[at] & LATE_FLAG_ABORTED == 0
            }
            (Some(c), true) => {
                // Put the inline part of segment 0 right before its
                // remainder (over the head's ciphertext and tag), so that
                // segment 0 is contiguous.
                let head_len = head.format.preamble_len();
                let inline_at = head_len - INLINE_LEN;
                frame[inline_at..head_len].copy_from_slice(&head.inline);
                ranges[0] = (inline_at, inline_at + lens[0]);
                let mut at = head_len;
                let padded0 = pad16(lens[0] as u64) as usize;
                if padded0 > INLINE_LEN {
                    let block = padded0 - INLINE_LEN + GCM_TAG_LEN;
                    c.open(&mut frame[at..at + block])?;
                    at += block;
                }
                if n > 1 {
                    let block_start = at;
                    c.open(&mut frame[block_start..])?;
                    for i in 1..n {
                        ranges[i] = (at, at + lens[i]);
                        at += pad16(lens[i] as u64) as usize;
                    }
                    late_status_complete(frame[at])?
                } else {
                    true
                }
            }
        };
        if !complete {
            return Ok(None);
        }

        // Segments share the frame's buffer; the last non-empty one takes
        // the frame itself (one reference count update fewer per frame).
        let mut segments: [Bytes; MAX_SEGMENTS] = Default::default();
        let last = (0..n).rev().find(|&i| ranges[i].0 < ranges[i].1);
        if let Some(last) = last {
            let frame = frame.freeze();
            for i in 0..last {
                if ranges[i].0 < ranges[i].1 {
                    segments[i] = frame.slice(ranges[i].0..ranges[i].1);
                }
            }
            let mut rest = frame;
            rest.truncate(ranges[last].1);
            rest.advance(ranges[last].0);
            segments[last] = rest;
        }
        if p.is_compressed() {
            let algorithm = self
                .decompression
                .ok_or(FrameError::UnexpectedCompression)?;
            let mut budget = self.limits.max_decompressed_len;
            for seg in segments[..n].iter_mut().filter(|s| !s.is_empty()) {
                let out = compression::decompress(algorithm, seg, budget)?;
                budget -= out.len();
                *seg = Bytes::from(out);
            }
        }
        Ok(Some(Received {
            preamble: *p,
            tag: p.tag,
            segments,
        }))
    }
}

fn check_crc(index: usize, segment: &[u8], wire: &[u8]) -> Result<(), FrameError> {
    let expected = u32::from_le_bytes([wire[0], wire[1], wire[2], wire[3]]);
    let computed = ceph_crc32c(SEGMENT_CRC_SEED, segment);
    if expected != computed {
        return Err(FrameError::BadSegmentCrc {
            index,
            expected,
            computed,
        });
    }
    Ok(())
}

/// frames_v2.cc check_epilogue_late_status: only the low nibble counts.
fn late_status_complete(status: u8) -> Result<bool, FrameError> {
    match status & 0x0f {
        LATE_STATUS_COMPLETE => Ok(true),
        LATE_STATUS_ABORTED => Ok(false),
        _ => Err(FrameError::BadLateStatus(status)),
    }
}
