//! One socket of a connection: its id, the bytes waiting to be written,
//! the test interceptor's gate, and its framing, msgr2's
//! ([`v2::link::Framing`]) or msgr1's ([`v1::link::Framing`]), chosen once
//! when the socket opens.
//!
//! A link does no I/O: the driver keeps what it read in its own buffer,
//! which [`Link::poll_input`] takes banners, frames and msgr1 items from,
//! and writes out [`Link::output`]. Every read and write passes the
//! interceptor's gate here, whichever the framing.

use bytes::{Bytes, BytesMut};
use msgr_encoding::{EntityName, UTime};
use msgr_frames::{
    ControlFrame, FrameDecoder, FrameEncoder, FrameLimits, Negotiated, Tag, WireQueue,
};

use crate::error::ProtocolError;
use crate::input::Input;
use crate::intercept::{Action, Breakpoint, CustomPoint, Direction, Point1, Tap};
use crate::message::Message;
use crate::v1::link as v1;
use crate::v2::link as v2;

/// Identifies a link (a socket) within its connection; a driver holding a
/// socket of an older link must drop it.
pub type LinkId = u64;

/// How a socket's bytes are framed.
///
/// msgr2's framing sits inline (every message passes through it, and a
/// connection holds one link); msgr1's, rarer, is boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Framing {
    /// Boxed: few connections speak msgr1.
    V1(Box<v1::Framing>),
    V2(v2::Framing),
}

/// The framing state of one socket.
///
/// `repr(C)`: what frames use, per message, first; the framing's banner
/// and handshake record last.
#[repr(C)]
pub struct Link {
    pub id: LinkId,
    /// Write what is queued before the socket closes (a refusal the peer
    /// should read, e.g. AUTH_BAD_METHOD).
    pub(crate) linger: bool,
    /// Auth frames the peer sent on this socket (cx::auth_round).
    pub(crate) auth_rounds: u32,
    /// The test interceptor's hook and gate (inert without one).
    pub(crate) tap: Tap,
    /// To be written to the socket.
    pub output: WireQueue,
    framing: Framing,
}

/// The error of a step of one protocol asked of the other's socket (a
/// bug here, not the peer's doing): the connection faults.
fn wrong_framing(what: &'static str) -> ProtocolError {
    ProtocolError::Transport {
        kind: std::io::ErrorKind::Unsupported,
        message: format!("{what} asked of a socket framed for the other protocol"),
    }
}

impl Link {
    /// A new msgr2 link; [`Link::send_banner`] starts it.
    pub(crate) fn v2(
        id: LinkId,
        our_banner: msgr_frames::banner::Banner,
        limits: FrameLimits,
        tap: Tap,
    ) -> Link {
        Link::with(id, tap, Framing::V2(v2::Framing::new(our_banner, limits)))
    }

    /// An msgr1 link: a connector's (`connector`) or an acceptor's, whose
    /// messages come from `src`.
    pub(crate) fn v1(
        id: LinkId,
        connector: bool,
        src: EntityName,
        limits: FrameLimits,
        tap: Tap,
    ) -> Link {
        let framing = v1::Framing::new(connector, src, limits);
        Link::with(id, tap, Framing::V1(Box::new(framing)))
    }

    fn with(id: LinkId, tap: Tap, framing: Framing) -> Link {
        Link {
            id,
            linger: false,
            auth_rounds: 0,
            tap,
            output: WireQueue::new(),
            framing,
        }
    }

    /// msgr1's framing, on an msgr1 socket.
    pub(crate) fn v1_mut(&mut self) -> Option<&mut v1::Framing> {
        match &mut self.framing {
            Framing::V1(f) => Some(f),
            Framing::V2(_) => None,
        }
    }

    pub(crate) fn v1_ref(&self) -> Option<&v1::Framing> {
        match &self.framing {
            Framing::V1(f) => Some(f),
            Framing::V2(_) => None,
        }
    }

    fn v2_ref(&self) -> Option<&v2::Framing> {
        match &self.framing {
            Framing::V2(f) => Some(f),
            Framing::V1(_) => None,
        }
    }

    fn v2_mut(&mut self, what: &'static str) -> Result<&mut v2::Framing, ProtocolError> {
        match &mut self.framing {
            Framing::V2(f) => Ok(f),
            Framing::V1(_) => Err(wrong_framing(what)),
        }
    }

    // ------------------------------------------------------------ the gate

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

    /// Opens a held gate: the input it kept, and whether the socket was
    /// stalled (shut down under the connection).
    #[cfg(feature = "interceptor")]
    pub(crate) fn open_gate(&mut self) -> (Option<Input>, bool) {
        self.tap.open(&mut self.output)
    }

    // ------------------------------------------------------------ reading

    /// Bytes the next step of reading needs, `input` holding what was
    /// read and not yet taken (a runtime may read more).
    pub fn want(&self, input: &[u8]) -> usize {
        match &self.framing {
            Framing::V1(f) => f.want(input),
            Framing::V2(f) => f.want(input),
        }
    }

    /// The payload size (front, middle and data; compressed, if the frame
    /// is) of the message being read, once its header or preamble is in.
    pub fn pending_payload_len(&self) -> Option<usize> {
        match &self.framing {
            Framing::V1(f) => f.pending_payload_len(),
            Framing::V2(f) => f.pending_payload_len(),
        }
    }

    /// Whether part of a frame (or banner, or item) has been read and not
    /// yet decoded, `input` holding what was read and not yet taken.
    pub fn has_partial(&self, input: &[u8]) -> bool {
        let pending = match &self.framing {
            Framing::V1(f) => f.pending_header().is_some(),
            Framing::V2(f) => f.pending_head().is_some(),
        };
        pending || !input.is_empty()
    }

    pub fn set_limits(&mut self, limits: FrameLimits) {
        match &mut self.framing {
            Framing::V1(f) => f.set_limits(limits),
            Framing::V2(f) => f.set_limits(limits),
        }
    }

    /// Takes the next banner, frame or item from the front of `input`, if
    /// it is all there (nothing while an interceptor holds the socket).
    pub fn poll_input(&mut self, input: &mut BytesMut) -> Result<Option<Input>, ProtocolError> {
        if self.tap.held() {
            return Ok(None);
        }
        loop {
            let polled = match &mut self.framing {
                Framing::V1(f) => {
                    let Some(i) = f.poll(input)? else {
                        return Ok(None);
                    };
                    let bp = Breakpoint::Msgr1(point1(&i), Direction::Read);
                    return self.gate_read(bp, Input::V1(i));
                }
                Framing::V2(f) => f.poll(input)?,
            };
            let (bp, input) = match polled {
                None => return Ok(None),
                Some(v2::Polled::BannerPrefix) => {
                    if self.hold_at(Breakpoint::Custom(CustomPoint::BannerRead))? {
                        return Ok(None);
                    }
                    continue;
                }
                Some(v2::Polled::Input(i @ v2::Input::Banner)) => {
                    (Breakpoint::Custom(CustomPoint::BannerPayloadRead), i)
                }
                Some(v2::Polled::Input(v2::Input::Frame(f))) => (
                    Breakpoint::Frame(f.tag, Direction::Read),
                    v2::Input::Frame(f),
                ),
            };
            return self.gate_read(bp, Input::V2(input));
        }
    }

    // ------------------------------------------------------------ msgr2

    /// Queues our banner (the first thing an msgr2 link writes).
    pub fn send_banner(&mut self) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Custom(CustomPoint::BannerWrite))?;
        let Framing::V2(f) = &mut self.framing else {
            return Err(wrong_framing("an msgr2 banner"));
        };
        f.write_banner(&mut self.output)?;
        self.after_write(stall);
        Ok(())
    }

    /// Queues a control frame.
    pub fn send_control(&mut self, frame: &ControlFrame) -> Result<(), ProtocolError> {
        let payload = frame.payload();
        self.send_segments(frame.tag(), &[payload])
    }

    fn send_segments(&mut self, tag: Tag, segments: &[Bytes]) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Frame(tag, Direction::Write))?;
        let Framing::V2(f) = &mut self.framing else {
            return Err(wrong_framing("an msgr2 frame"));
        };
        f.encode_segments(tag, segments, &mut self.output)?;
        self.after_write(stall);
        Ok(())
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
        let stall = self.gate_write(Breakpoint::Frame(Tag::MESSAGE, Direction::Write))?;
        let Framing::V2(f) = &mut self.framing else {
            return Err(wrong_framing("an msgr2 MESSAGE"));
        };
        f.encode_message(header, front, middle, data, &mut self.output)?;
        self.after_write(stall);
        Ok(())
    }

    /// The banners' outcome, on an msgr2 socket once both are in.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.v2_ref()?.negotiated()
    }

    /// Stops recording the pre-auth bytes and returns what was recorded.
    pub fn stop_recording(&mut self) -> v2::PreAuthRecord {
        match &mut self.framing {
            Framing::V2(f) => f.stop_recording(),
            Framing::V1(_) => v2::PreAuthRecord::default(),
        }
    }

    /// The wire format frames are written in now.
    pub fn format(&self) -> msgr_frames::WireFormat {
        self.v2_ref()
            .map_or(msgr_frames::WireFormat::CRC_REV0, |f| f.format())
    }

    /// The algorithm outgoing message frames are compressed with.
    pub fn compression(&self) -> Option<msgr_frames::compression::Algorithm> {
        self.v2_ref()?.compression()
    }

    pub fn encoder_mut(&mut self) -> Option<&mut FrameEncoder> {
        self.v2_mut("an msgr2 encoder").ok()?.encoder_mut()
    }

    pub fn decoder_mut(&mut self) -> Option<&mut FrameDecoder> {
        self.v2_mut("an msgr2 decoder").ok()?.decoder_mut()
    }

    // ------------------------------------------------------------ msgr1

    /// Writes msgr1 bytes at point `p`, the interceptor's word first
    /// (`write` gets the msgr1 framing and the queue).
    pub(crate) fn write1(
        &mut self,
        p: Point1,
        write: impl FnOnce(&v1::Framing, &mut WireQueue),
    ) -> Result<(), ProtocolError> {
        let stall = self.gate_write(Breakpoint::Msgr1(p, Direction::Write))?;
        let Framing::V1(f) = &self.framing else {
            return Err(wrong_framing("msgr1 bytes"));
        };
        write(f, &mut self.output);
        self.after_write(stall);
        Ok(())
    }

    // ------------------------------------------------------------ a session's items

    /// Bytes framed and not yet taken by the driver.
    pub fn output_len(&self) -> usize {
        self.output.len()
    }

    /// What the driver may write now.
    pub fn writable(&mut self) -> &mut WireQueue {
        self.tap.writable(&mut self.output)
    }

    /// Whether each message carries the acknowledgement of what we
    /// received (msgr2's ack_seq), so that an ACK is written only when no
    /// message goes out; msgr1's do not, and an owed ACK always goes.
    pub(crate) fn messages_carry_acks(&self) -> bool {
        matches!(self.framing, Framing::V2(_))
    }

    /// A KEEPALIVE2 stamped `stamp` (msgr1: a plain KEEPALIVE to a peer
    /// without MSGR_KEEPALIVE2).
    pub(crate) fn write_keepalive(&mut self, stamp: UTime) -> Result<(), ProtocolError> {
        match &self.framing {
            Framing::V2(_) => {
                let k = msgr_frames::control::Keepalive2 { timestamp: stamp };
                self.send_control(&ControlFrame::Keepalive2(k))
            }
            Framing::V1(f) => {
                use msgr_frames::v1::Tag;
                let tag = if f.keepalive2() {
                    Tag::Keepalive2
                } else {
                    Tag::Keepalive
                };
                self.write1(Point1::Item(tag), |f, out| f.write_keepalive(stamp, out))
            }
        }
    }

    /// A KEEPALIVE2_ACK echoing `stamp`.
    pub(crate) fn write_keepalive_ack(&mut self, stamp: UTime) -> Result<(), ProtocolError> {
        match &self.framing {
            Framing::V2(_) => {
                let k = msgr_frames::control::Keepalive2Ack { timestamp: stamp };
                self.send_control(&ControlFrame::Keepalive2Ack(k))
            }
            Framing::V1(_) => {
                let tag = msgr_frames::v1::Tag::Keepalive2Ack;
                self.write1(Point1::Item(tag), |f, out| {
                    f.write_keepalive_ack(stamp, out)
                })
            }
        }
    }

    /// An ACK of everything up to `seq`.
    pub(crate) fn write_ack(&mut self, seq: u64) -> Result<(), ProtocolError> {
        match &self.framing {
            Framing::V2(_) => {
                self.send_control(&ControlFrame::Ack(msgr_frames::control::Ack { seq }))
            }
            Framing::V1(_) => {
                let tag = msgr_frames::v1::Tag::Ack;
                self.write1(Point1::Item(tag), |f, out| f.write_ack(seq, out))
            }
        }
    }

    /// Message `msg` as its sequence number says (msgr2: acknowledging
    /// `in_seq` in its header).
    pub(crate) fn write_message(
        &mut self,
        msg: &Message,
        in_seq: u64,
    ) -> Result<(), ProtocolError> {
        match &self.framing {
            Framing::V2(_) => {
                let header = msg.header2(msg.seq, in_seq);
                self.send_message_parts(&header, &msg.front, &msg.middle, &msg.data)
            }
            Framing::V1(_) => {
                let tag = msgr_frames::v1::Tag::Msg;
                self.write1(Point1::Item(tag), |f, out| {
                    f.write_message(msg, msg.seq, out)
                })
            }
        }
    }
}

/// The interceptor's point of an msgr1 input.
fn point1(i: &v1::Input) -> Point1 {
    match i {
        v1::Input::ServerHello(_) | v1::Input::ClientHello(_) => Point1::Hello,
        v1::Input::Connect { .. } => Point1::Connect,
        v1::Input::Reply { reply, .. } => Point1::Reply(reply.tag),
        v1::Input::Seq(_) => Point1::Seq,
        v1::Input::Item(i) => Point1::Item(i.tag()),
    }
}
