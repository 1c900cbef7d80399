//! One socket's worth of msgr2: the banner exchange, the framing in each
//! direction, the bytes waiting to be written, and the pre-auth record
//! AUTH_SIGNATURE signs; or, on an msgr1 socket, msgr1's ([`Link1`]).
//!
//! A link does no I/O: the driver keeps what it read in its own buffer,
//! which [`Link::poll_input`] takes banners and frames from, and writes
//! out [`Link::output`].

use bytes::{Bytes, BytesMut};
use msgr_frames::banner::{Banner, BANNER_PAYLOAD_LEN, BANNER_PREFIX_LEN};
use msgr_frames::{
    banner_len, read_banner, ControlFrame, FrameDecoder, FrameEncoder, FrameHead, FrameLimits,
    FrameReader, Negotiated, Received, Seg, Tag, WireQueue,
};

use crate::error::ProtocolError;
use crate::intercept::{Action, Breakpoint, CustomPoint, Direction, Point1, Tap};
pub(crate) use crate::link1::{Input1, Link1};

/// Identifies a link (a socket) within its connection; a driver holding a
/// socket of an older link must drop it.
pub type LinkId = u64;

/// What the peer sent next.
#[derive(Debug)]
pub enum Input {
    /// The peer's banner, which the link negotiated with ours.
    Banner,
    Frame(Received),
    /// What an msgr1 peer sent.
    V1(Input1),
}

impl Input {
    /// What arrived, for errors that say what was expected against it.
    pub fn wire(&self) -> crate::error::Wire {
        use crate::error::Wire;
        match self {
            Input::Banner => Wire::Banner,
            Input::Frame(f) => Wire::Frame(f.tag),
            Input::V1(i) => match i {
                Input1::ServerHello(_) | Input1::ClientHello(_) => Wire::Hello1,
                Input1::Connect { .. } => Wire::Connect1,
                Input1::Reply { reply, .. } => Wire::Reply1(reply.tag),
                Input1::Seq(_) => Wire::Seq1,
                Input1::Item(i) => Wire::Item1(i.tag()),
            },
        }
    }
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

/// The framing state of one socket.
///
/// `repr(C)`: what frames use, per message, first; the banner and the
/// handshake's record last (Conn).
#[repr(C)]
pub struct Link {
    pub id: LinkId,
    stage: ReadStage,
    /// Write what is queued before the socket closes (a refusal the peer
    /// should read, e.g. AUTH_BAD_METHOD).
    pub(crate) linger: bool,
    negotiated: Option<Negotiated>,
    /// Auth frames the peer sent on this socket (handshake::auth_round).
    pub(crate) auth_rounds: u32,
    /// Set on an msgr1 socket: its framing, in place of msgr2's. Boxed:
    /// few connections speak msgr1.
    pub(crate) v1: Option<Box<Link1>>,
    limits: FrameLimits,
    /// The test interceptor's hook and gate (inert without one).
    pub(crate) tap: Tap,
    /// To be written to the socket.
    pub output: WireQueue,
    encoder: Option<FrameEncoder>,
    /// The peer's frames, once its banner is in.
    reader: Option<FrameReader>,
    our_banner: Banner,
    /// Recording for AUTH_SIGNATURE, until the owner stops it.
    record: Option<PreAuthRecord>,
}

impl Link {
    /// A new link; [`Link::send_banner`] starts it.
    #[cfg(test)]
    pub fn new(id: LinkId, our_banner: Banner, limits: FrameLimits) -> Link {
        Link::with_tap(id, our_banner, limits, Tap::default())
    }

    pub(crate) fn with_tap(id: LinkId, our_banner: Banner, limits: FrameLimits, tap: Tap) -> Link {
        Link {
            id,
            our_banner,
            negotiated: None,
            encoder: None,
            reader: None,
            stage: ReadStage::BannerPrefix,
            limits,
            output: WireQueue::new(),
            record: Some(PreAuthRecord::default()),
            tap,
            linger: false,
            auth_rounds: 0,
            v1: None,
        }
    }

    /// An msgr1 link: a connector's (`connector`) or an acceptor's, whose
    /// messages come from `src`.
    pub(crate) fn msgr1(
        id: LinkId,
        connector: bool,
        src: msgr_encoding::EntityName,
        limits: FrameLimits,
        tap: Tap,
    ) -> Link {
        let mut link = Link::with_tap(id, Banner::DEFAULT, limits, tap);
        link.record = None;
        link.v1 = Some(Box::new(Link1::new(connector, src, limits)));
        link
    }

    /// Queues our banner (the first thing a link writes).
    pub fn send_banner(&mut self) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Custom(CustomPoint::BannerWrite))?;
        let banner = self.our_banner.encode();
        self.record_tx(&banner)?;
        self.output.put_slice(&banner);
        self.after_write(stall);
        Ok(())
    }

    /// The interceptor's word on a write (nothing while the gate is held:
    /// the socket is frozen). Ok(true): stall after writing.
    fn gate_write(&mut self, bp: Breakpoint) -> Result<bool, ProtocolError> {
        if self.tap.held() {
            return Ok(false);
        }
        match self.tap.hit(bp) {
            Action::Continue => Ok(false),
            Action::Fault => {
                // Nothing of this frame is written; what came before is.
                self.tap.close(&mut self.output, false);
                self.tap.flush_on_close = true;
                Err(ProtocolError::Injected)
            }
            Action::Block => {
                self.tap.close(&mut self.output, false);
                Ok(false)
            }
            Action::Stall => Ok(true),
        }
    }

    fn after_write(&mut self, stall: bool) {
        if stall {
            self.tap.close(&mut self.output, true);
        }
    }

    /// The interceptor's word on a read: Ok(true) when it holds the socket
    /// from here on (BLOCK, or STALL with the socket shut down).
    fn hold_at(&mut self, bp: Breakpoint) -> Result<bool, ProtocolError> {
        match self.tap.hit(bp) {
            Action::Continue => Ok(false),
            Action::Fault => Err(ProtocolError::Injected),
            action => {
                self.tap.close(&mut self.output, action == Action::Stall);
                Ok(true)
            }
        }
    }

    /// What was just read, or `None` when the interceptor holds it.
    fn gate_read(&mut self, bp: Breakpoint, input: Input) -> Result<Option<Input>, ProtocolError> {
        if !self.hold_at(bp)? {
            return Ok(Some(input));
        }
        self.tap.hold_input(input);
        Ok(None)
    }

    /// Writes msgr1 bytes at point `p`, the interceptor's word first
    /// (`write` gets the msgr1 framing and the queue).
    pub(crate) fn write1(
        &mut self,
        p: Point1,
        write: impl FnOnce(&Link1, &mut WireQueue),
    ) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Msgr1(p, Direction::Write))?;
        if let Some(v1) = self.v1.as_deref() {
            write(v1, &mut self.output);
        }
        self.after_write(stall);
        Ok(())
    }

    /// Bytes framed and not yet taken by the driver.
    pub fn output_len(&self) -> usize {
        self.output.len()
    }

    /// What the driver may write now.
    pub fn writable(&mut self) -> &mut WireQueue {
        self.tap.writable(&mut self.output)
    }

    /// Opens a held gate: the input it kept, and whether the socket was
    /// stalled (shut down under the connection).
    #[cfg(feature = "interceptor")]
    pub(crate) fn open_gate(&mut self) -> (Option<Input>, bool) {
        self.tap.open(&mut self.output)
    }

    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated
    }

    /// Bytes the next step of reading needs, `input` holding what was
    /// read and not yet taken (a runtime may read more).
    pub fn want(&self, input: &[u8]) -> usize {
        if let Some(v1) = &self.v1 {
            return v1.want(input);
        }
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

    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
        if let Some(v1) = self.v1.as_mut() {
            v1.set_limits(limits);
        }
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

    /// Whether part of a frame (or banner) has been read and not yet
    /// decoded, `input` holding what was read and not yet taken.
    pub fn has_partial(&self, input: &[u8]) -> bool {
        let v1_header = self
            .v1
            .as_ref()
            .is_some_and(|v| v.pending_header().is_some());
        self.pending_head().is_some() || v1_header || !input.is_empty()
    }

    /// Stops recording and returns what was recorded.
    pub fn stop_recording(&mut self) -> PreAuthRecord {
        self.record.take().unwrap_or_default()
    }

    /// Takes the next banner or frame from the front of `input`, if it is
    /// all there (nothing while an interceptor holds the socket).
    pub fn poll_input(&mut self, input: &mut BytesMut) -> Result<Option<Input>, ProtocolError> {
        if self.tap.held() {
            return Ok(None);
        }
        if let Some(v1) = self.v1.as_mut() {
            let Some(i) = v1.poll(input)? else {
                return Ok(None);
            };
            let bp = Breakpoint::Msgr1(Link1::point_of(&i), Direction::Read);
            return self.gate_read(bp, Input::V1(i));
        }
        loop {
            match self.stage {
                ReadStage::BannerPrefix => {
                    if input.len() < BANNER_PREFIX_LEN {
                        return Ok(None);
                    }
                    self.stage = ReadStage::Banner;
                    if self.hold_at(Breakpoint::Custom(CustomPoint::BannerRead))? {
                        return Ok(None);
                    }
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
                    let bp = Breakpoint::Custom(CustomPoint::BannerPayloadRead);
                    return self.gate_read(bp, Input::Banner);
                }
                ReadStage::Frames => {
                    let reader = self.reader.as_mut().expect("set with the stage");
                    let Some(raw) = reader.next_raw(input)? else {
                        return Ok(None);
                    };
                    if let Some(r) = self.record.as_mut() {
                        PreAuthRecord::add(&mut r.rx, raw.bytes())?;
                    }
                    // None: aborted by the sender; read on.
                    if let Some(frame) = reader.decode(raw)? {
                        let bp = Breakpoint::Frame(frame.tag, Direction::Read);
                        return self.gate_read(bp, Input::Frame(frame));
                    }
                }
            }
        }
    }

    fn encoder(&mut self) -> &mut FrameEncoder {
        self.encoder
            .as_mut()
            .expect("frames are sent only after the peer's banner arrived")
    }

    /// Queues a control frame.
    pub fn send_control(&mut self, frame: &ControlFrame) -> Result<(), ProtocolError> {
        let payload = frame.payload();
        self.send_segments(frame.tag(), &[payload])
    }

    /// Queues a MESSAGE frame from its packed header and payload parts,
    /// without copying or cloning what need not be.
    pub fn send_message_parts(
        &mut self,
        header: &[u8; 41],
        front: &Bytes,
        middle: &Bytes,
        data: &Bytes,
    ) -> Result<(), ProtocolError> {
        let segs = [
            Seg::Slice(header),
            Seg::Shared(front),
            Seg::Shared(middle),
            Seg::Shared(data),
        ];
        match self.record.is_some() {
            true => self.send_segments(
                Tag::MESSAGE,
                &[
                    Bytes::copy_from_slice(header),
                    front.clone(),
                    middle.clone(),
                    data.clone(),
                ],
            ),
            false => {
                let stall = self.gate_write(Breakpoint::Frame(Tag::MESSAGE, Direction::Write))?;
                let encoder = self.encoder.as_mut().expect("banner exchanged");
                encoder.encode_segs(Tag::MESSAGE, &segs, &mut self.output)?;
                self.after_write(stall);
                Ok(())
            }
        }
    }

    fn send_segments(&mut self, tag: Tag, segments: &[Bytes]) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Frame(tag, Direction::Write))?;
        self.encode_segments(tag, segments)?;
        self.after_write(stall);
        Ok(())
    }

    fn encode_segments(&mut self, tag: Tag, segments: &[Bytes]) -> Result<(), ProtocolError> {
        if self.record.is_some() {
            let mut q = WireQueue::new();
            self.encoder().encode(tag, segments, &mut q)?;
            let bytes = q.take_all();
            self.record_tx(&bytes)?;
            self.output.put_bytes(bytes);
        } else {
            let encoder = self.encoder.as_mut().expect("banner exchanged");
            encoder.encode(tag, segments, &mut self.output)?;
        }
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
