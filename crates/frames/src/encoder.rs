//! Frame assembly: segments in, on-wire bytes out (FrameAssembler::
//! assemble_frame and asm_{crc,secure}_rev{0,1} in frames_v2.cc).
//!
//! In crc mode nothing is copied but the small parts: large segments are
//! queued by reference. In secure mode the frame is gathered into the
//! queue's arena and encrypted there in place.

use bytes::Bytes;

use crate::compression::{self, TxCompression};
use crate::crc::{ceph_crc32c, SEGMENT_CRC_SEED};
use crate::crypto::TxCipher;
use crate::layout::{pad16, WireFormat, EPILOGUE_SECURE_LEN, GCM_TAG_LEN, INLINE_LEN};
use crate::preamble::{Preamble, FLAG_COMPRESSED, MAX_SEGMENTS, PREAMBLE_LEN};
use crate::{FrameError, Tag, WireQueue};

/// msgr2.1 late_status of a complete frame (FRAME_LATE_STATUS_COMPLETE);
/// Ceph leaves the reserved high nibble 0.
pub const LATE_STATUS_COMPLETE: u8 = 0x0e;
/// msgr2.1 late_status of an aborted frame.
pub const LATE_STATUS_ABORTED: u8 = 0x01;
/// msgr2.0 late_flags bit of an aborted frame.
pub const LATE_FLAG_ABORTED: u8 = 0x01;

/// The transmit side of a connection's framing.
pub struct FrameEncoder {
    rev1: bool,
    cipher: Option<TxCipher>,
    compression: Option<TxCompression>,
}

impl FrameEncoder {
    /// Starts in crc mode; `rev1` from the banner exchange.
    pub fn new(rev1: bool) -> Self {
        FrameEncoder {
            rev1,
            cipher: None,
            compression: None,
        }
    }

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
        assert!(
            !segments.is_empty() && segments.len() <= MAX_SEGMENTS,
            "a frame has 1 to 4 segments"
        );
        assert_ne!(tag.0, 0, "tag 0 is not a frame");
        let mut segs: [Bytes; MAX_SEGMENTS] = Default::default();
        for (slot, s) in segs.iter_mut().zip(segments) {
            *slot = s.clone();
        }
        let mut lens = segs.each_ref().map(|s| s.len() as u32);
        let aligns = tag.segment_alignments();
        let used = Preamble::new(tag, lens, aligns, 0).num_segments as usize;

        let mut flags = 0;
        if let Some(c) = self.compression {
            let logical: usize = segs[..used].iter().map(|s| s.len()).sum();
            if logical >= c.min_frame_len {
                let mut compressed: [Bytes; MAX_SEGMENTS] = Default::default();
                for i in 0..used {
                    if !segs[i].is_empty() {
                        let mut v = Vec::with_capacity(segs[i].len() / 2 + 64);
                        compression::compress(c.algorithm, &segs[i], &mut v)?;
                        compressed[i] = Bytes::from(v);
                    }
                }
                segs = compressed;
                lens = segs.each_ref().map(|s| s.len() as u32);
                flags |= FLAG_COMPRESSED;
            }
        }

        // The count comes from the logical lengths; with compression on,
        // non-empty segments stay non-empty, so it is unchanged.
        let mut preamble = Preamble::new(tag, lens, aligns, flags);
        preamble.num_segments = used as u8;
        let before = out.len();
        match (&mut self.cipher, self.rev1) {
            (None, false) => Self::crc_rev0(&preamble, &segs, out),
            (None, true) => Self::crc_rev1(&preamble, &segs, out),
            (Some(c), false) => Self::secure_rev0(c, &preamble, &segs, out)?,
            (Some(c), true) => Self::secure_rev1(c, &preamble, &segs, out)?,
        }
        let written = out.len() - before;
        debug_assert_eq!(written as u64, self.format().frame_len(&preamble));
        Ok(written)
    }

    fn crc_rev0(p: &Preamble, segs: &[Bytes; MAX_SEGMENTS], out: &mut WireQueue) {
        out.put_slice(&p.encode());
        let mut epilogue = [0u8; 17];
        for (i, seg) in segs[..p.num_segments as usize].iter().enumerate() {
            out.put_bytes(seg.clone());
            let crc = ceph_crc32c(SEGMENT_CRC_SEED, seg);
            epilogue[1 + 4 * i..5 + 4 * i].copy_from_slice(&crc.to_le_bytes());
        }
        out.put_slice(&epilogue);
    }

    fn crc_rev1(p: &Preamble, segs: &[Bytes; MAX_SEGMENTS], out: &mut WireQueue) {
        out.put_slice(&p.encode());
        if !segs[0].is_empty() {
            out.put_bytes(segs[0].clone());
            out.put_slice(&ceph_crc32c(SEGMENT_CRC_SEED, &segs[0]).to_le_bytes());
        }
        let n = p.num_segments as usize;
        if n > 1 {
            let mut epilogue = [0u8; 13];
            epilogue[0] = LATE_STATUS_COMPLETE;
            for (i, seg) in segs[1..n].iter().enumerate() {
                out.put_bytes(seg.clone());
                let crc = ceph_crc32c(SEGMENT_CRC_SEED, seg);
                epilogue[1 + 4 * i..5 + 4 * i].copy_from_slice(&crc.to_le_bytes());
            }
            out.put_slice(&epilogue);
        }
    }

    /// Appends `seg` and its zero padding to 16 bytes.
    fn put_padded(out: &mut WireQueue, seg: &[u8]) {
        out.put_slice(seg);
        out.put_zeros(pad16(seg.len() as u64) as usize - seg.len());
    }

    /// Encrypts the last `plain_len` queued bytes in place and appends the tag.
    fn seal_tail(
        cipher: &mut TxCipher,
        plain_len: usize,
        out: &mut WireQueue,
    ) -> Result<(), FrameError> {
        let tag = cipher.seal(out.tail_mut(plain_len))?;
        out.reserve_tail(GCM_TAG_LEN).copy_from_slice(&tag);
        Ok(())
    }

    fn secure_epilogue(status: u8) -> [u8; EPILOGUE_SECURE_LEN] {
        let mut e = [0u8; EPILOGUE_SECURE_LEN];
        e[0] = status;
        e
    }

    fn secure_rev0(
        cipher: &mut TxCipher,
        p: &Preamble,
        segs: &[Bytes; MAX_SEGMENTS],
        out: &mut WireQueue,
    ) -> Result<(), FrameError> {
        let start = out.len();
        out.put_slice(&p.encode());
        for seg in &segs[..p.num_segments as usize] {
            Self::put_padded(out, seg);
        }
        out.put_slice(&Self::secure_epilogue(0));
        Self::seal_tail(cipher, out.len() - start, out)
    }

    fn secure_rev1(
        cipher: &mut TxCipher,
        p: &Preamble,
        segs: &[Bytes; MAX_SEGMENTS],
        out: &mut WireQueue,
    ) -> Result<(), FrameError> {
        // Preamble and the inline part of segment 0, zero-filled to 48.
        let first = &segs[0];
        let inline = first.len().min(INLINE_LEN);
        out.put_slice(&p.encode());
        out.put_slice(&first[..inline]);
        out.put_zeros(INLINE_LEN - inline);
        Self::seal_tail(cipher, PREAMBLE_LEN + INLINE_LEN, out)?;

        // The rest of segment 0, when its padded length exceeds the inline
        // buffer (the padding then sits on the remainder).
        if pad16(first.len() as u64) > INLINE_LEN as u64 {
            let start = out.len();
            Self::put_padded(out, &first[INLINE_LEN..]);
            Self::seal_tail(cipher, out.len() - start, out)?;
        }

        let n = p.num_segments as usize;
        if n > 1 {
            let start = out.len();
            for seg in &segs[1..n] {
                Self::put_padded(out, seg);
            }
            out.put_slice(&Self::secure_epilogue(LATE_STATUS_COMPLETE));
            Self::seal_tail(cipher, out.len() - start, out)?;
        }
        Ok(())
    }
}
