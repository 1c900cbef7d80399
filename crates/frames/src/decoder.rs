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
use crate::layout::{
    pad16, WireFormat, CRC_LEN, EPILOGUE_CRC_REV0_LEN, EPILOGUE_CRC_REV1_LEN, EPILOGUE_SECURE_LEN,
    GCM_TAG_LEN, INLINE_LEN,
};
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
    /// 100 MiB: Ceph's largest write (osd_max_write_size, 90 MiB) with its
    /// front fits, and so does what a messenger may hold of one received
    /// message (ms_dispatch_throttle_bytes, 100 MiB, the default receive
    /// budget). Ceph has no limit of its own but the segment's u32; a larger
    /// message (a whole 128 MiB object read at once) needs both raised.
    fn default() -> Self {
        FrameLimits {
            max_segment_len: 100 << 20,
            max_frame_len: (100 << 20) + 4096,
            max_decompressed_len: 100 << 20,
        }
    }
}

/// What the preamble said, and where the frame's parts are.
#[derive(Debug, Clone)]
pub struct FrameHead {
    /// The frame's preamble, as it arrived (decrypted in secure mode).
    pub preamble: Preamble,
    /// The whole frame on the wire, head included.
    pub frame_len: usize,
    format: WireFormat,
    /// msgr2.1-secure: the decrypted inline buffer.
    inline: [u8; INLINE_LEN],
}

impl FrameHead {
    /// The frame's tag.
    pub fn tag(&self) -> Tag {
        self.preamble.tag
    }

    /// Where segment `index`'s bytes start within the frame buffer (for a
    /// runtime that wants a segment, e.g. message data, to land at an
    /// aligned address). In msgr2.1-secure the first 48 bytes of segment 0
    /// arrive with the head, so this is where its remainder starts.
    /// (The sum saturates; for a head from `decode_head` it is at most
    /// `frame_len`.)
    pub fn segment_offset(&self, index: usize) -> usize {
        let mut at = self.format.preamble_len();
        for (i, s) in self.preamble.used().iter().enumerate().take(index) {
            at = at.saturating_add(self.format.segment_len(i, s.len) as usize);
        }
        at
    }
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The preamble as it was on the wire (compressed lengths, flags).
    pub preamble: Preamble,
    /// The frame's tag.
    pub tag: Tag,
    /// The used segments' contents, decompressed; unused ones are empty.
    pub segments: [Bytes; MAX_SEGMENTS],
}

impl Received {
    /// How many segments the frame used (1 to 4).
    pub fn num_segments(&self) -> usize {
        self.preamble.num_segments as usize
    }
}

/// The receive side of a connection's framing.
pub struct FrameDecoder {
    rev1: bool,
    /// Boxed: crc-mode connections (most) do not carry its size.
    cipher: Option<Box<RxCipher>>,
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

    /// How frames are read now: msgr2.0 or 2.1, crc or secure.
    pub fn format(&self) -> WireFormat {
        WireFormat {
            rev1: self.rev1,
            secure: self.cipher.is_some(),
        }
    }

    /// The caps on frames read now.
    pub fn limits(&self) -> FrameLimits {
        self.limits
    }

    /// Changes the caps on frames (larger once the peer authenticated).
    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
    }

    /// Switches to secure mode: every later frame is decrypted.
    pub fn set_cipher(&mut self, cipher: RxCipher) {
        self.cipher = Some(Box::new(cipher));
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
    /// [`FrameDecoder::head_len`] bytes (else `WrongFrameBufferLength`);
    /// only those are read.
    pub fn decode_head(&mut self, head: &[u8]) -> Result<FrameHead, FrameError> {
        let format = self.format();
        let short = || FrameError::WrongFrameBufferLength {
            expected: format.preamble_len(),
            got: head.len(),
        };
        let mut plain = [0u8; PREAMBLE_LEN];
        let mut inline = [0u8; INLINE_LEN];
        match (&mut self.cipher, self.rev1) {
            (None, _) => plain = *head.first_chunk().ok_or_else(short)?,
            (Some(c), false) => c.peek(
                head.first_chunk::<PREAMBLE_LEN>().ok_or_else(short)?,
                &mut plain,
            )?,
            (Some(c), true) => {
                let mut block: [u8; PREAMBLE_LEN + INLINE_LEN + GCM_TAG_LEN] =
                    *head.first_chunk().ok_or_else(short)?;
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
        let len = format.frame_len(&preamble);
        let frame_len = match usize::try_from(len) {
            Ok(frame_len) if len <= self.limits.max_frame_len => frame_len,
            _ => {
                return Err(FrameError::FrameTooLarge {
                    len,
                    max: self.limits.max_frame_len,
                })
            }
        };
        if preamble.is_compressed() && self.decompression.is_none() {
            return Err(FrameError::UnexpectedCompression);
        }
        Ok(FrameHead {
            preamble,
            frame_len,
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
        let got = frame.len();
        if got != head.frame_len {
            return Err(FrameError::WrongFrameBufferLength {
                expected: head.frame_len,
                got,
            });
        }
        // Every offset below is in bounds for a head from `decode_head` in
        // this decoder's format, whose `frame_len` came from the same
        // preamble; a head altered or decoded in another format is reported
        // rather than trusted.
        let mismatch = || mismatched_head(head, got);
        let p = &head.preamble;
        let n = p.used().len();
        let lens = p.segments.map(|s| s.len as usize);
        // Segment ranges within `frame` once it is plaintext, in order.
        let mut ranges = [(0usize, 0usize); MAX_SEGMENTS];
        let complete = match (&mut self.cipher, self.rev1) {
            (None, false) => {
                let mut at = PREAMBLE_LEN;
                for (r, &len) in ranges.iter_mut().take(n).zip(&lens) {
                    let end = at.checked_add(len).ok_or_else(mismatch)?;
                    *r = (at, end);
                    at = end;
                }
                let [late_flags, crcs @ ..] =
                    chunk_at::<EPILOGUE_CRC_REV0_LEN>(&frame, at).ok_or_else(mismatch)?;
                let crcs = le32s(crcs);
                for (i, (&(s, e), crc)) in ranges.iter().take(n).zip(crcs).enumerate() {
                    check_crc(i, frame.get(s..e).ok_or_else(mismatch)?, crc)?;
                }
                late_flags & LATE_FLAG_ABORTED == 0
            }
            (None, true) => {
                // Segment 0's crc follows it; the others' are in the
                // epilogue, which only a frame with others has.
                let [r0, rest @ ..] = &mut ranges;
                let [len0, rest_lens @ ..] = lens;
                let others = n.saturating_sub(1);
                let mut at = PREAMBLE_LEN;
                let end0 = at.checked_add(len0).ok_or_else(mismatch)?;
                *r0 = (at, end0);
                if len0 > 0 {
                    let seg0 = frame.get(at..end0).ok_or_else(mismatch)?;
                    let crc = chunk_at(&frame, end0).ok_or_else(mismatch)?;
                    check_crc(0, seg0, u32::from_le_bytes(*crc))?;
                    at = end0.checked_add(CRC_LEN).ok_or_else(mismatch)?;
                }
                for (r, &len) in rest.iter_mut().take(others).zip(&rest_lens) {
                    let end = at.checked_add(len).ok_or_else(mismatch)?;
                    *r = (at, end);
                    at = end;
                }
                if others > 0 {
                    let [late_status, crcs @ ..] =
                        chunk_at::<EPILOGUE_CRC_REV1_LEN>(&frame, at).ok_or_else(mismatch)?;
                    let checks = rest.iter().take(others).zip(le32s(crcs));
                    for (i, (&(s, e), crc)) in (1..).zip(checks) {
                        check_crc(i, frame.get(s..e).ok_or_else(mismatch)?, crc)?;
                    }
                    late_status_complete(*late_status)?
                } else {
                    true
                }
            }
            (Some(c), false) => {
                let plain_len = c.open(&mut frame)?;
                let mut at = PREAMBLE_LEN;
                for (r, s) in ranges.iter_mut().take(n).zip(&p.segments) {
                    let end = at.checked_add(s.len as usize).ok_or_else(mismatch)?;
                    *r = (at, end);
                    at = at.checked_add(pad16(s.len) as usize).ok_or_else(mismatch)?;
                }
                debug_assert_eq!(plain_len.checked_sub(at), Some(EPILOGUE_SECURE_LEN));
                frame.get(at).ok_or_else(mismatch)? & LATE_FLAG_ABORTED == 0
            }
            (Some(c), true) => {
                // Put the inline part of segment 0 right before its
                // remainder (over the head's ciphertext and tag), so that
                // segment 0 is contiguous.
                let head_len = head.format.preamble_len();
                let inline_at = head_len.checked_sub(INLINE_LEN).ok_or_else(mismatch)?;
                *chunk_at_mut(&mut frame, inline_at).ok_or_else(mismatch)? = head.inline;
                ranges[0] = (
                    inline_at,
                    inline_at.checked_add(lens[0]).ok_or_else(mismatch)?,
                );
                let mut at = head_len;
                // The remainder of segment 0 beyond the inline buffer, if
                // any, and its tag.
                let block = WireFormat::SECURE_REV1.segment_len(0, p.segments[0].len) as usize;
                if block > 0 {
                    let end = at.checked_add(block).ok_or_else(mismatch)?;
                    c.open(frame.get_mut(at..end).ok_or_else(mismatch)?)?;
                    at = end;
                }
                if n > 1 {
                    c.open(frame.get_mut(at..).ok_or_else(mismatch)?)?;
                    let [_, rest @ ..] = &mut ranges;
                    let [_, rest_segs @ ..] = &p.segments;
                    for (r, s) in rest.iter_mut().take(n.saturating_sub(1)).zip(rest_segs) {
                        let end = at.checked_add(s.len as usize).ok_or_else(mismatch)?;
                        *r = (at, end);
                        at = at.checked_add(pad16(s.len) as usize).ok_or_else(mismatch)?;
                    }
                    late_status_complete(*frame.get(at).ok_or_else(mismatch)?)?
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
        // (Unused segments have empty ranges.)
        let mut parts = segments.iter_mut().zip(&ranges).filter(|(_, (s, e))| s < e);
        if let Some((last, &(start, end))) = parts.next_back() {
            // The ranges are in order: the last one ending in the frame
            // puts them all in it.
            if end > frame.len() {
                return Err(mismatch());
            }
            let frame = frame.freeze();
            for (seg, &(s, e)) in parts {
                *seg = frame.slice(s..e);
            }
            let mut rest = frame;
            rest.truncate(end);
            rest.advance(start);
            *last = rest;
        }
        if p.is_compressed() {
            let algorithm = self
                .decompression
                .ok_or(FrameError::UnexpectedCompression)?;
            let mut budget = self.limits.max_decompressed_len;
            for seg in segments.iter_mut().take(n).filter(|s| !s.is_empty()) {
                let out = compression::decompress(algorithm, seg, budget)?;
                // `decompress` yields at most `budget` bytes.
                budget = budget
                    .checked_sub(out.len())
                    .ok_or(FrameError::DecompressedTooLarge {
                        len: out.len() as u64,
                        max: budget as u64,
                    })?;
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

/// A `head` that does not describe the frame buffer it came with: altered
/// after `decode_head`, or decoded in another format.
#[cold]
fn mismatched_head(head: &FrameHead, got: usize) -> FrameError {
    FrameError::WrongFrameBufferLength {
        expected: head.format.frame_len(&head.preamble) as usize,
        got,
    }
}

/// The `N` bytes of `frame` at `at`, if there are that many.
#[inline]
fn chunk_at<const N: usize>(frame: &[u8], at: usize) -> Option<&[u8; N]> {
    frame.get(at..)?.first_chunk()
}

#[inline]
fn chunk_at_mut<const N: usize>(frame: &mut [u8], at: usize) -> Option<&mut [u8; N]> {
    frame.get_mut(at..)?.first_chunk_mut()
}

/// An epilogue's le32 crcs (every chunk is `CRC_LEN` bytes, so none falls
/// back to 0).
#[inline]
fn le32s(crcs: &[u8]) -> impl Iterator<Item = u32> + '_ {
    crcs.chunks_exact(CRC_LEN)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
}

fn check_crc(index: usize, segment: &[u8], expected: u32) -> Result<(), FrameError> {
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
