//! msgr2's framing of one socket: the banner exchange, the frames in each
//! direction, and the pre-auth record AUTH_SIGNATURE signs. The socket
//! around it (its output queue, the interceptor's gate) is the shared
//! [`crate::link::Link`]'s.

use bytes::{Bytes, BytesMut};
use msgr_frames::banner::{Banner, BANNER_PAYLOAD_LEN, BANNER_PREFIX_LEN};
use msgr_frames::{
    banner_len, read_banner, FrameDecoder, FrameEncoder, FrameHead, FrameLimits, FrameReader,
    Negotiated, Received, Seg, Tag, WireQueue,
};

use crate::error::{ProtocolError, Wire};

/// What an msgr2 peer sent next.
#[derive(Debug)]
pub enum Input {
    /// The peer's banner, which the link negotiated with ours.
    Banner,
    Frame(Received),
}

impl Input {
    /// What arrived, for errors that say what was expected against it.
    pub fn wire(&self) -> Wire {
        match self {
            Input::Banner => Wire::Banner,
            Input::Frame(f) => Wire::Frame(f.tag),
        }
    }
}

/// What [`Framing::poll`] took.
pub(crate) enum Polled {
    /// The banner's prefix is in (the interceptor's BANNER_READ point);
    /// poll again for the rest.
    BannerPrefix,
    Input(Input),
}

/// Bytes of the handshake in each direction, from the first banner byte
/// to AUTH_DONE (ProtocolV2 pre_auth.rxbuf / txbuf).
#[derive(Debug, Default)]
pub struct PreAuthRecord {
    pub rx: Vec<u8>,
    pub tx: Vec<u8>,
}

/// The most a pre-auth record holds in each direction: a peer that is not
/// authenticated yet cannot make us keep more (Ceph's pre_auth buffers
/// are unbounded but for a debug assertion at 1 MB). Real handshakes
/// record under 2 KiB.
pub const MAX_PRE_AUTH: usize = 64 << 10;

impl PreAuthRecord {
    fn add(buf: &mut Vec<u8>, bytes: &[u8]) -> Result<(), ProtocolError> {
        if buf.len().saturating_add(bytes.len()) > MAX_PRE_AUTH {
            return Err(ProtocolError::HandshakeTooLong { max: MAX_PRE_AUTH });
        }
        buf.extend_from_slice(bytes);
        Ok(())
    }
}

enum ReadStage {
    BannerPrefix,
    /// The prefix is in, past the BANNER_READ breakpoint.
    Banner,
    Frames,
}

/// msgr2's framing of one socket.
///
/// `repr(C)`: what frames use, per message, first; the banner and the
/// handshake's record last.
#[repr(C)]
pub(crate) struct Framing {
    stage: ReadStage,
    negotiated: Option<Negotiated>,
    limits: FrameLimits,
    encoder: Option<FrameEncoder>,
    /// The peer's frames, once its banner is in.
    reader: Option<FrameReader>,
    our_banner: Banner,
    /// Recording for AUTH_SIGNATURE, until the owner stops it.
    record: Option<PreAuthRecord>,
}

impl Framing {
    pub fn new(our_banner: Banner, limits: FrameLimits) -> Framing {
        Framing {
            stage: ReadStage::BannerPrefix,
            negotiated: None,
            limits,
            encoder: None,
            reader: None,
            our_banner,
            record: Some(PreAuthRecord::default()),
        }
    }

    /// Queues our banner on `out`.
    pub fn write_banner(&mut self, out: &mut WireQueue) -> Result<(), ProtocolError> {
        let banner = self.our_banner.encode();
        self.record_tx(&banner)?;
        out.put_slice(&banner);
        Ok(())
    }

    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated
    }

    /// Bytes the next step of reading needs, `input` holding what was
    /// read and not yet taken.
    pub fn want(&self, input: &[u8]) -> usize {
        let target = match (&self.stage, &self.reader) {
            (ReadStage::Frames, Some(r)) => return r.bytes_needed(input.len()).max(1),
            (ReadStage::Banner, _) => banner_len(input),
            _ => None,
        };
        let target = target.unwrap_or(BANNER_PREFIX_LEN + BANNER_PAYLOAD_LEN);
        target.saturating_sub(input.len()).max(1)
    }

    /// The head of the frame being read, once known (a runtime can size its
    /// reads and throttle by it).
    pub fn pending_head(&self) -> Option<&FrameHead> {
        self.reader.as_ref()?.pending_head()
    }

    /// The payload size of the MESSAGE being read, as its preamble gives
    /// it (compressed, if the frame is), once the preamble is in.
    pub fn pending_payload_len(&self) -> Option<usize> {
        let head = self.pending_head()?;
        if head.tag() != Tag::MESSAGE {
            return None;
        }
        // Segment 0 is the header, which the budget does not count.
        let payload: u64 = head
            .preamble
            .used()
            .iter()
            .skip(1)
            .map(|s| s.len as u64)
            .sum();
        Some(usize::try_from(payload).unwrap_or(usize::MAX))
    }

    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
        if let Some(d) = self.decoder_mut() {
            d.set_limits(limits);
        }
    }

    fn record_tx(&mut self, bytes: &[u8]) -> Result<(), ProtocolError> {
        match self.record.as_mut() {
            Some(r) => PreAuthRecord::add(&mut r.tx, bytes),
            None => Ok(()),
        }
    }

    fn record_rx(&mut self, bytes: &[u8]) -> Result<(), ProtocolError> {
        match self.record.as_mut() {
            Some(r) => PreAuthRecord::add(&mut r.rx, bytes),
            None => Ok(()),
        }
    }

    /// Stops recording and returns what was recorded.
    pub fn stop_recording(&mut self) -> PreAuthRecord {
        self.record.take().unwrap_or_default()
    }

    /// Takes the next banner or frame from the front of `input`, if it is
    /// all there.
    pub fn poll(&mut self, input: &mut BytesMut) -> Result<Option<Polled>, ProtocolError> {
        loop {
            match self.stage {
                ReadStage::BannerPrefix => {
                    if input.len() < BANNER_PREFIX_LEN {
                        return Ok(None);
                    }
                    self.stage = ReadStage::Banner;
                    return Ok(Some(Polled::BannerPrefix));
                }
                ReadStage::Banner => {
                    let Some((peer, raw)) = read_banner(input)? else {
                        return Ok(None);
                    };
                    self.record_rx(&raw)?;
                    let n = self.our_banner.negotiate(&peer)?;
                    self.negotiated = Some(n);
                    self.encoder = Some(FrameEncoder::new(n.rev1));
                    self.reader = Some(FrameReader::new(FrameDecoder::new(n.rev1, self.limits)));
                    self.stage = ReadStage::Frames;
                    return Ok(Some(Polled::Input(Input::Banner)));
                }
                ReadStage::Frames => {
                    let Some(reader) = self.reader.as_mut() else {
                        return Ok(None);
                    };
                    let Some(raw) = reader.next_raw(input)? else {
                        return Ok(None);
                    };
                    if let Some(r) = self.record.as_mut() {
                        PreAuthRecord::add(&mut r.rx, raw.bytes())?;
                    }
                    // None: aborted by the sender; read on.
                    if let Some(frame) = reader.decode(raw)? {
                        return Ok(Some(Polled::Input(Input::Frame(frame))));
                    }
                }
            }
        }
    }

    /// The encoder, once the peer's banner arrived (frames are sent only
    /// after it).
    fn encoder(&mut self) -> Result<&mut FrameEncoder, ProtocolError> {
        self.encoder.as_mut().ok_or(ProtocolError::Transport {
            kind: std::io::ErrorKind::NotConnected,
            message: "an msgr2 frame before the peer's banner".into(),
        })
    }

    /// Frames `segments` as a `tag` frame onto `out` (recorded while the
    /// handshake is).
    pub fn encode_segments(
        &mut self,
        tag: Tag,
        segments: &[Bytes],
        out: &mut WireQueue,
    ) -> Result<(), ProtocolError> {
        if self.record.is_some() {
            let mut q = WireQueue::new();
            self.encoder()?.encode(tag, segments, &mut q)?;
            let bytes = q.take_all();
            self.record_tx(&bytes)?;
            out.put_bytes(bytes);
        } else {
            self.encoder()?.encode(tag, segments, out)?;
        }
        Ok(())
    }

    /// Frames a MESSAGE from its packed header and payload parts onto
    /// `out`, without copying or cloning what need not be.
    pub fn encode_message(
        &mut self,
        header: &[u8; 41],
        front: &Bytes,
        middle: &Bytes,
        data: &Bytes,
        out: &mut WireQueue,
    ) -> Result<(), ProtocolError> {
        if self.record.is_some() {
            let segments = [
                Bytes::copy_from_slice(header),
                front.clone(),
                middle.clone(),
                data.clone(),
            ];
            return self.encode_segments(Tag::MESSAGE, &segments, out);
        }
        let segs = [
            Seg::Slice(header),
            Seg::Shared(front),
            Seg::Shared(middle),
            Seg::Shared(data),
        ];
        self.encoder()?.encode_segs(Tag::MESSAGE, &segs, out)?;
        Ok(())
    }

    /// The wire format frames are written in now.
    pub fn format(&self) -> msgr_frames::WireFormat {
        self.encoder
            .as_ref()
            .map(|e| e.format())
            .unwrap_or(msgr_frames::WireFormat::CRC_REV0)
    }

    /// The algorithm outgoing message frames are compressed with.
    pub fn compression(&self) -> Option<msgr_frames::compression::Algorithm> {
        self.encoder.as_ref()?.compression().map(|c| c.algorithm)
    }

    pub fn encoder_mut(&mut self) -> Option<&mut FrameEncoder> {
        self.encoder.as_mut()
    }

    pub fn decoder_mut(&mut self) -> Option<&mut FrameDecoder> {
        self.reader.as_mut().map(|r| r.decoder_mut())
    }
}
