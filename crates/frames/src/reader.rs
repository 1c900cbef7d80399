//! A buffering front end to [`FrameDecoder`] for byte streams that arrive in
//! arbitrary pieces (a capture, a test, a simple runtime): push bytes in,
//! pull frames out, and ask how many more bytes the next step needs.

use bytes::{Bytes, BytesMut};

use crate::decoder::{FrameDecoder, FrameHead, Received};
use crate::FrameError;

pub struct FrameReader {
    decoder: FrameDecoder,
    buf: BytesMut,
    head: Option<FrameHead>,
    /// The first error; the stream stays failed.
    failed: Option<FrameError>,
}

impl FrameReader {
    pub fn new(decoder: FrameDecoder) -> Self {
        FrameReader {
            decoder,
            buf: BytesMut::new(),
            head: None,
            failed: None,
        }
    }

    /// The decoder, e.g. to switch it to secure mode between two frames.
    pub fn decoder_mut(&mut self) -> &mut FrameDecoder {
        &mut self.decoder
    }

    pub fn decoder(&self) -> &FrameDecoder {
        &self.decoder
    }

    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Bytes buffered but not yet consumed.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Takes exactly `n` raw bytes from the front (the banner, which is not
    /// a frame), if they have arrived.
    pub fn take_raw(&mut self, n: usize) -> Option<Bytes> {
        assert!(self.head.is_none(), "take_raw in the middle of a frame");
        (self.buf.len() >= n).then(|| self.buf.split_to(n).freeze())
    }

    /// How many more bytes the next step needs: the rest of the head, or
    /// the rest of the frame once the head is known.
    pub fn bytes_needed(&self) -> usize {
        let target = match &self.head {
            Some(h) => h.frame_len,
            None => self.decoder.head_len(),
        };
        target.saturating_sub(self.buf.len())
    }

    /// The head of the frame being read, once its preamble has arrived.
    pub fn pending_head(&self) -> Option<&FrameHead> {
        self.head.as_ref()
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed.
    /// Frames the sender aborted are skipped. After an error the stream is
    /// unusable and every later call fails the same way.
    pub fn next_frame(&mut self) -> Result<Option<Received>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        loop {
            if self.head.is_none() {
                if self.buf.len() < self.decoder.head_len() {
                    return Ok(None);
                }
                match self.decoder.decode_head(&self.buf) {
                    Ok(h) => self.head = Some(h),
                    Err(e) => {
                        self.failed = Some(e.clone());
                        return Err(e);
                    }
                }
            }
            let frame_len = self.head.as_ref().map_or(0, |h| h.frame_len);
            if self.buf.len() < frame_len {
                return Ok(None);
            }
            let head = self.head.take().expect("head checked above");
            let frame = self.buf.split_to(frame_len);
            match self.decoder.decode_frame(&head, frame) {
                Ok(Some(f)) => return Ok(Some(f)),
                Ok(None) => continue,
                Err(e) => {
                    self.failed = Some(e.clone());
                    return Err(e);
                }
            }
        }
    }
}
