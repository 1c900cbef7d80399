//! Frame assembly: segments in, on-wire bytes out (FrameAssembler::
//! assemble_frame and asm_{crc,secure}_rev{0,1} in frames_v2.cc).
//!
//! In crc mode nothing is copied but the small parts: large segments are
//! queued by reference. In secure mode each segment is encrypted from where
//! it lies into the queue's arena (or, for a large frame, a buffer of its
//! own), streamed through one GCM operation with its padding and epilogue.

use bytes::{Bytes, BytesMut};

use crate::compression::{self, TxCompression};
use crate::crc::{ceph_crc32c, SEGMENT_CRC_SEED};
use crate::crypto::TxCipher;
use crate::layout::{
    WireFormat, CRC_LEN, CRYPTO_BLOCK_LEN, EPILOGUE_CRC_REV0_LEN, EPILOGUE_CRC_REV1_LEN,
    EPILOGUE_SECURE_LEN, INLINE_LEN,
};
use crate::preamble::{Preamble, FLAG_COMPRESSED, MAX_SEGMENTS};
use crate::{FrameError, Tag, WireQueue};

/// msgr2.1 late_status of a complete frame (FRAME_LATE_STATUS_COMPLETE);
/// Ceph leaves the reserved high nibble 0.
pub const LATE_STATUS_COMPLETE: u8 = 0x0e;
/// msgr2.1 late_status of an aborted frame.
pub const LATE_STATUS_ABORTED: u8 = 0x01;
/// msgr2.0 late_flags bit of an aborted frame.
pub const LATE_FLAG_ABORTED: u8 = 0x01;

/// One segment for the encoder: borrowed bytes (copied into the queue, for
/// small parts such as a message header) or a shared buffer (queued by
/// reference when large, in crc mode).
#[derive(Debug, Clone, Copy)]
pub enum Seg<'a> {
    /// Bytes copied into the queue.
    Slice(&'a [u8]),
    /// A buffer queued by reference when large and in crc mode, copied
    /// otherwise.
    Shared(&'a Bytes),
}

impl Seg<'_> {
    /// The segment's contents.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Seg::Slice(s) => s,
            Seg::Shared(b) => b,
        }
    }

    #[inline]
    fn put(&self, out: &mut WireQueue) {
        match self {
            Seg::Slice(s) => out.put_slice(s),
            Seg::Shared(b) => out.put_shared(b),
        }
    }
}

/// Secure frames at least this long are encrypted in a buffer of their own
/// rather than in the queue's shared arena.
const OWN_BUFFER_FRAME_LEN: usize = 64 * 1024;

/// The transmit side of a connection's framing.
pub struct FrameEncoder {
    rev1: bool,
    cipher: Option<TxCipher>,
    compression: Option<TxCompression>,
    /// Where large secure frames are encrypted. Each frame is split off
    /// and frozen; once the socket took it and the `Bytes` is gone, the
    /// next frame reuses the allocation instead of faulting in fresh pages.
    big: BytesMut,
}

impl FrameEncoder {
    /// Starts in crc mode; `rev1` from the banner exchange.
    pub fn new(rev1: bool) -> Self {
        FrameEncoder {
            rev1,
            cipher: None,
            compression: None,
            big: BytesMut::new(),
        }
    }

    /// How frames are written now: msgr2.0 or 2.1, crc or secure.
    pub fn format(&self) -> WireFormat {
        WireFormat {
            rev1: self.rev1,
            secure: self.cipher.is_some(),
        }
    }

    /// Switches to secure mode: every later frame is encrypted.
    pub fn set_cipher(&mut self, cipher: TxCipher) {
        self.cipher = Some(cipher);
    }

    /// Starts compressing frames (after COMPRESSION_DONE).
    pub fn set_compression(&mut self, compression: Option<TxCompression>) {
        self.compression = compression;
    }

    /// The compression frames are written with, if COMPRESSION_DONE chose
    /// one.
    pub fn compression(&self) -> Option<TxCompression> {
        self.compression
    }

    /// Appends one frame with up to four segments to `out`; returns its
    /// on-wire length.
    pub fn encode(
        &mut self,
        tag: Tag,
        segments: &[Bytes],
        out: &mut WireQueue,
    ) -> Result<usize, FrameError> {
        let mut segs = [Seg::Slice(&[]); MAX_SEGMENTS];
        let n = segs
            .iter_mut()
            .zip(segments)
            .map(|(slot, s)| *slot = Seg::Shared(s))
            .count();
        // `n` is at most MAX_SEGMENTS: `get` always succeeds.
        self.encode_segs(tag, segs.get(..n).unwrap_or(&segs), out)
    }

    /// Like [`FrameEncoder::encode`], with segments that may be borrowed.
    pub fn encode_segs(
        &mut self,
        tag: Tag,
        segments: &[Seg<'_>],
        out: &mut WireQueue,
    ) -> Result<usize, FrameError> {
        assert!(
            !segments.is_empty() && segments.len() <= MAX_SEGMENTS,
            "a frame has 1 to 4 segments"
        );
        assert_ne!(tag.0, 0, "tag 0 is not a frame");
        let mut segs = [Seg::Slice(&[]); MAX_SEGMENTS];
        for (slot, s) in segs.iter_mut().zip(segments) {
            *slot = *s;
        }
        let mut lens = segs.map(|s| s.bytes().len() as u32);
        let aligns = tag.segment_alignments();
        let used = Preamble::new(tag, lens, aligns, 0).num_segments as usize;

        let mut flags = 0;
        let mut compressed: [Bytes; MAX_SEGMENTS] = Default::default();
        if let Some(c) = self.compression {
            // Saturating: only compared with the threshold.
            let logical = segs
                .iter()
                .take(used)
                .fold(0usize, |sum, s| sum.saturating_add(s.bytes().len()));
            if logical >= c.min_frame_len {
                for (seg, slot) in segs.iter().zip(&mut compressed).take(used) {
                    let data = seg.bytes();
                    if !data.is_empty() {
                        let mut v = Vec::with_capacity((data.len() / 2).saturating_add(64));
                        compression::compress(c.algorithm, data, &mut v)?;
                        *slot = Bytes::from(v);
                    }
                }
                for (seg, c) in segs.iter_mut().zip(&compressed).take(used) {
                    *seg = Seg::Shared(c);
                }
                lens = segs.map(|s| s.bytes().len() as u32);
                flags |= FLAG_COMPRESSED;
            }
        }

        // The count comes from the logical lengths; with compression on,
        // non-empty segments stay non-empty, so it is unchanged.
        let mut preamble = Preamble::new(tag, lens, aligns, flags);
        preamble.num_segments = used as u8;
        let frame_len = self.format().frame_len(&preamble) as usize;
        // `used` is 1..=MAX_SEGMENTS: `get` always succeeds.
        let segs = segs.get(..used).unwrap_or(&segs);
        let before = out.len();
        let rev1 = self.rev1;
        match &mut self.cipher {
            None if rev1 => Self::crc_rev1(&preamble, segs, out),
            None => Self::crc_rev0(&preamble, segs, out),
            Some(c) => {
                let mut secure = |buf: &mut BytesMut| match rev1 {
                    true => Self::secure_rev1(c, &preamble, segs, buf),
                    false => Self::secure_rev0(c, &preamble, segs, buf),
                };
                if frame_len >= OWN_BUFFER_FRAME_LEN {
                    // A large frame gets a buffer of its own (the reused
                    // `big` allocation when no earlier frame still holds it).
                    self.big.clear();
                    self.big.reserve(frame_len);
                    secure(&mut self.big)?;
                    out.put_bytes(self.big.split().freeze());
                } else {
                    out.append_with(frame_len, secure)?;
                }
            }
        }
        // The queue only grew.
        let written = out.len().saturating_sub(before);
        debug_assert_eq!(written, frame_len);
        Ok(written)
    }

    // These take the frame's used segments (one to four).

    fn crc_rev0(p: &Preamble, segs: &[Seg<'_>], out: &mut WireQueue) {
        out.put_slice(&p.encode());
        let mut epilogue = [0u8; EPILOGUE_CRC_REV0_LEN];
        let [_, crcs @ ..] = &mut epilogue;
        for (seg, wire) in segs.iter().zip(crcs.chunks_exact_mut(CRC_LEN)) {
            seg.put(out);
            let crc = ceph_crc32c(SEGMENT_CRC_SEED, seg.bytes());
            wire.copy_from_slice(&crc.to_le_bytes());
        }
        out.put_slice(&epilogue);
    }

    fn crc_rev1(p: &Preamble, segs: &[Seg<'_>], out: &mut WireQueue) {
        out.put_slice(&p.encode());
        let (first, rest) = split_first(segs);
        if !first.bytes().is_empty() {
            first.put(out);
            out.put_slice(&ceph_crc32c(SEGMENT_CRC_SEED, first.bytes()).to_le_bytes());
        }
        if !rest.is_empty() {
            let mut epilogue = [0u8; EPILOGUE_CRC_REV1_LEN];
            let [late_status, crcs @ ..] = &mut epilogue;
            *late_status = LATE_STATUS_COMPLETE;
            for (seg, wire) in rest.iter().zip(crcs.chunks_exact_mut(CRC_LEN)) {
                seg.put(out);
                let crc = ceph_crc32c(SEGMENT_CRC_SEED, seg.bytes());
                wire.copy_from_slice(&crc.to_le_bytes());
            }
            out.put_slice(&epilogue);
        }
    }

    fn secure_epilogue(status: u8) -> [u8; EPILOGUE_SECURE_LEN] {
        let mut e = [0u8; EPILOGUE_SECURE_LEN];
        e[0] = status;
        e
    }

    fn secure_rev0(
        cipher: &mut TxCipher,
        p: &Preamble,
        segs: &[Seg<'_>],
        buf: &mut BytesMut,
    ) -> Result<(), FrameError> {
        let preamble = p.encode();
        let epilogue = Self::secure_epilogue(0);
        let mut pieces = Pieces::default();
        pieces.push(&preamble);
        for seg in segs {
            pieces.push_padded(seg.bytes());
        }
        pieces.push(&epilogue);
        cipher.seal_pieces(pieces.as_slice(), buf)
    }

    fn secure_rev1(
        cipher: &mut TxCipher,
        p: &Preamble,
        segs: &[Seg<'_>],
        buf: &mut BytesMut,
    ) -> Result<(), FrameError> {
        // Preamble and the inline part of segment 0, zero-filled to 48.
        let preamble = p.encode();
        let (first, others) = split_first(segs);
        let first = first.bytes();
        let (inline, rest) = first.split_at_checked(INLINE_LEN).unwrap_or((first, &[]));
        let mut pieces = Pieces::default();
        pieces.push(&preamble);
        pieces.push(inline);
        pieces.push(ZEROS.get(inline.len()..).unwrap_or_default());
        cipher.seal_pieces(pieces.as_slice(), buf)?;

        // The rest of segment 0, when it is longer than the inline buffer
        // (its padding then sits on the remainder).
        if !rest.is_empty() {
            let mut pieces = Pieces::default();
            pieces.push_padded(rest);
            cipher.seal_pieces(pieces.as_slice(), buf)?;
        }

        if !others.is_empty() {
            let epilogue = Self::secure_epilogue(LATE_STATUS_COMPLETE);
            let mut pieces = Pieces::default();
            for seg in others {
                pieces.push_padded(seg.bytes());
            }
            pieces.push(&epilogue);
            cipher.seal_pieces(pieces.as_slice(), buf)?;
        }
        Ok(())
    }
}

/// Segment 0 (empty if there is none) and the others.
fn split_first<'s, 'a>(segs: &'s [Seg<'a>]) -> (Seg<'a>, &'s [Seg<'a>]) {
    match segs {
        [first, rest @ ..] => (*first, rest),
        [] => (Seg::Slice(&[]), segs),
    }
}

/// Zero bytes for padding and the inline area's fill.
const ZEROS: [u8; INLINE_LEN] = [0; INLINE_LEN];

/// The plaintext of one GCM operation, as the slices it lies in: at most
/// the preamble, four segments with their padding, and the epilogue.
#[derive(Default)]
struct Pieces<'a> {
    slices: [&'a [u8]; 2 + 2 * MAX_SEGMENTS],
    len: usize,
}

impl<'a> Pieces<'a> {
    // `len` is the index of an existing slot, so `len + 1` is at most
    // `slices.len()`: the increment cannot overflow. (`slices` has room for
    // every piece a frame has; a surplus one is a bug, caught in debug.)
    #[allow(clippy::arithmetic_side_effects)]
    fn push(&mut self, piece: &'a [u8]) {
        if piece.is_empty() {
            return;
        }
        match self.slices.get_mut(self.len) {
            Some(slot) => {
                *slot = piece;
                self.len += 1;
            }
            None => debug_assert!(false, "more than {} pieces", self.slices.len()),
        }
    }

    /// `seg` and its zero padding to a multiple of 16 bytes.
    fn push_padded(&mut self, seg: &'a [u8]) {
        self.push(seg);
        // `rem` is below 16, so `ZEROS[rem..16]` is the `16 - rem` bytes
        // of padding.
        let rem = seg.len() % CRYPTO_BLOCK_LEN;
        if rem != 0 {
            self.push(ZEROS.get(rem..CRYPTO_BLOCK_LEN).unwrap_or_default());
        }
    }

    fn as_slice(&self) -> &[&'a [u8]] {
        // `len` never exceeds `slices.len()` (see `push`).
        self.slices.get(..self.len).unwrap_or_default()
    }
}
