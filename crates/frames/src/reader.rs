//! The one "read a head, then the rest of the frame" loop, over a buffer
//! the caller owns (a runtime's read buffer, a capture's reassembled
//! stream, a test's bytes): bytes go in as they arrive, complete frames
//! come out, and [`FrameReader::bytes_needed`] says how many more the step
//! at hand needs, so a runtime reads exactly what a frame needs.
//!
//! A frame's head is decoded once: in msgr2.1-secure decoding it uses up a
//! nonce, so the reader keeps it until the rest of its frame is in.

use bytes::BytesMut;

use crate::banner::{Banner, BANNER_PREFIX_LEN};
use crate::decoder::{FrameDecoder, FrameHead, Received};
use crate::FrameError;

/// The raw bytes of one whole frame, its head decoded (for callers that
/// keep the bytes too: the pre-auth record, a capture's dump).
pub struct RawFrame {
    head: FrameHead,
    bytes: BytesMut,
}

impl RawFrame {
    /// The frame's decoded head: its preamble and where its segments are.
    pub fn head(&self) -> &FrameHead {
        &self.head
    }

    /// The frame as it was on the wire, head included.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Reads frames out of a buffer the caller owns and fills (a runtime's read
/// buffer, a capture's reassembled stream): bytes go in as they arrive,
/// complete frames come out, and [`FrameReader::bytes_needed`] says how many
/// more the step at hand needs. A frame's head is decoded once (in
/// msgr2.1-secure decoding it uses up a nonce) and kept until the rest of
/// its frame is in.
pub struct FrameReader {
    decoder: FrameDecoder,
    head: Option<FrameHead>,
    /// The first error; the stream stays failed. Boxed: rare, and the
    /// reader's other fields are read per frame (a connection's hot state
    /// in fewer cache lines).
    failed: Option<Box<FrameError>>,
}

impl FrameReader {
    /// A reader decoding with `decoder`, before any frame.
    pub fn new(decoder: FrameDecoder) -> Self {
        FrameReader {
            decoder,
            head: None,
            failed: None,
        }
    }

    /// The decoder, e.g. to switch it to secure mode between two frames.
    pub fn decoder_mut(&mut self) -> &mut FrameDecoder {
        &mut self.decoder
    }

    /// The decoder: its format and limits.
    pub fn decoder(&self) -> &FrameDecoder {
        &self.decoder
    }

    /// How many more bytes the next step needs, with `buffered` bytes in
    /// the caller's buffer: the rest of the head, or the rest of the frame
    /// once the head is known.
    pub fn bytes_needed(&self, buffered: usize) -> usize {
        let target = match &self.head {
            Some(h) => h.frame_len,
            None => self.decoder.head_len(),
        };
        target.saturating_sub(buffered)
    }

    /// The head of the frame being read, once its preamble has arrived.
    pub fn pending_head(&self) -> Option<&FrameHead> {
        self.head.as_ref()
    }

    /// Takes the next whole frame from the front of `buf`, `Ok(None)` when
    /// more bytes are needed. [`FrameReader::decode`] decodes it.
    pub fn next_raw(&mut self, buf: &mut BytesMut) -> Result<Option<RawFrame>, FrameError> {
        self.check()?;
        if self.head.is_none() {
            if buf.len() < self.decoder.head_len() {
                return Ok(None);
            }
            let head = self.decoder.decode_head(buf);
            self.head = Some(self.remember(head)?);
        }
        let frame_len = self.head.as_ref().map_or(0, |h| h.frame_len);
        if buf.len() < frame_len {
            return Ok(None);
        }
        let Some(head) = self.head.take() else {
            return Ok(None);
        };
        let bytes = buf.split_to(frame_len);
        Ok(Some(RawFrame { head, bytes }))
    }

    /// Decodes a frame [`FrameReader::next_raw`] took: `Ok(None)` for a
    /// frame its sender aborted.
    pub fn decode(&mut self, raw: RawFrame) -> Result<Option<Received>, FrameError> {
        self.check()?;
        let frame = self.decoder.decode_frame(&raw.head, raw.bytes);
        self.remember(frame)
    }

    /// The next complete frame in `buf`, `Ok(None)` when more bytes are
    /// needed. Frames the sender aborted are skipped. After an error the
    /// stream is unusable and every later call fails the same way.
    pub fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<Received>, FrameError> {
        while let Some(raw) = self.next_raw(buf)? {
            if let Some(frame) = self.decode(raw)? {
                return Ok(Some(frame));
            }
        }
        Ok(None)
    }

    fn check(&self) -> Result<(), FrameError> {
        match &self.failed {
            Some(e) => Err(FrameError::clone(e)),
            None => Ok(()),
        }
    }

    fn remember<R>(&mut self, r: Result<R, FrameError>) -> Result<R, FrameError> {
        if let Err(e) = &r {
            self.failed = Some(Box::new(e.clone()));
        }
        r
    }
}

/// Takes the peer's banner from the front of `buf` once it is all in:
/// the banner and its raw bytes. A bad prefix (not msgr2, a length out of
/// bounds) fails as soon as its 10 bytes are in.
pub fn read_banner(buf: &mut BytesMut) -> Result<Option<(Banner, BytesMut)>, FrameError> {
    let Some(prefix) = buf.first_chunk::<BANNER_PREFIX_LEN>() else {
        return Ok(None);
    };
    let total = BANNER_PREFIX_LEN.saturating_add(Banner::decode_prefix(prefix)?);
    if buf.len() < total {
        return Ok(None);
    }
    let raw = buf.split_to(total);
    let banner = Banner::decode_payload(raw.get(BANNER_PREFIX_LEN..).unwrap_or_default())?;
    Ok(Some((banner, raw)))
}

/// How many bytes the banner needs in all, once its prefix is in.
pub fn banner_len(buf: &[u8]) -> Option<usize> {
    let prefix = buf.first_chunk::<BANNER_PREFIX_LEN>()?;
    let len = Banner::decode_prefix(prefix).ok()?;
    Some(BANNER_PREFIX_LEN.saturating_add(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_is_taken_whole_and_a_bad_prefix_fails_early() {
        let wire = Banner::DEFAULT.encode();
        let mut buf = BytesMut::from(&wire[..9]);
        assert!(read_banner(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&wire[9..20]);
        assert_eq!(banner_len(&buf), Some(wire.len()));
        assert!(read_banner(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&wire[20..]);
        buf.extend_from_slice(b"next");
        let (banner, raw) = read_banner(&mut buf).unwrap().unwrap();
        assert_eq!(banner, Banner::DEFAULT);
        assert_eq!(&raw[..], &wire[..]);
        assert_eq!(&buf[..], b"next");

        let mut bad = BytesMut::from(&b"ceph v027xxxx"[..]);
        assert!(matches!(
            read_banner(&mut bad),
            Err(FrameError::NotMsgr2 { .. })
        ));
    }
}
