//! The msgr1 side of the capture analyzer: follows one connection's
//! handshake in both directions (the connector's banner, address and
//! CONNECTs; the acceptor's banner with addresses and its replies) and
//! then each direction's stream of messages, acks and keepalives.
//!
//! The connector's bytes after a CONNECT depend on the reply to it (another
//! CONNECT after a retry, its in_seq after SEQ, its stream after READY), so
//! its direction waits for the acceptor's reply before going on.

use bytes::{Bytes, BytesMut};
use msgr_capture::Direction;
use msgr_encoding::EntityAddr;
use msgr_frames::v1::{
    check_banner, decode_addr, handshake, Connect, ConnectReply, Item, ServerHello, StreamReader,
    Tag, WireError, ADDR_LEN, BANNER,
};
use msgr_frames::FrameLimits;

/// What one direction of an msgr1 connection said.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The connector's banner.
    Banner,
    /// The acceptor's banner and addresses.
    ServerHello(ServerHello),
    /// The connector's own address.
    ClientAddr(EntityAddr),
    /// The connector's CONNECT.
    Connect {
        /// The connect message.
        connect: Connect,
        /// Its authorizer bytes.
        authorizer: Bytes,
    },
    /// The acceptor's CONNECT_REPLY.
    ConnectReply {
        /// The reply.
        reply: ConnectReply,
        /// Its authorizer bytes.
        authorizer: Bytes,
        /// After SEQ: the acceptor's in_seq.
        in_seq: Option<u64>,
    },
    /// The connector's in_seq, its answer to SEQ.
    Seq(u64),
    /// What came after the handshake.
    Item(Item),
}

impl Event {
    /// The tag as `msgr decode` names it (msgr.h's, without its prefix).
    pub fn tag_name(&self) -> &'static str {
        match self {
            Event::Banner | Event::ServerHello(_) => "BANNER",
            Event::ClientAddr(_) => "ADDR",
            Event::Connect { .. } => "CONNECT",
            Event::ConnectReply { .. } => "CONNECT_REPLY",
            Event::Seq(_) => "SEQ",
            Event::Item(i) => i.tag().name(),
        }
    }
}

#[derive(Default)]
enum ClientStage {
    #[default]
    Banner,
    Addr,
    Connect,
    /// Waiting for the reply to CONNECT number `.0`.
    AwaitReply(usize),
    SeqAck,
    Stream(StreamReader),
}

#[derive(Default)]
enum ServerStage {
    #[default]
    Hello,
    Reply,
    Stream(StreamReader),
}

/// Both directions of one msgr1 connection.
#[derive(Default)]
pub struct Session {
    client: ClientStage,
    server: ServerStage,
    connects: Vec<Connect>,
    replies: Vec<ConnectReply>,
}

/// The longest authorizer we follow (Ceph's are a few hundred bytes).
const MAX_AUTHORIZER: u32 = 64 << 10;

impl Session {
    /// Decodes what `dir` has in `buf`, handing out each event with its
    /// raw bytes; an error stops that direction.
    pub fn step(
        &mut self,
        dir: Direction,
        buf: &mut BytesMut,
        emit: &mut impl FnMut(Event, Bytes),
    ) -> Result<(), WireError> {
        match dir {
            Direction::ClientToServer => self.step_client(buf, emit),
            Direction::ServerToClient => self.step_server(buf, emit),
        }
    }

    /// The session's features once the handshake settled: the last
    /// CONNECT's and its reply's in common.
    fn msg_auth(&self) -> bool {
        let reply = self.replies.last().map_or(0, |r| r.features);
        let connect = self.connects.last().map_or(u64::MAX, |c| c.features);
        reply & connect & msgr_protocol::features::MSG_AUTH != 0
    }

    fn stream(&self) -> StreamReader {
        StreamReader::new(FrameLimits::default(), self.msg_auth()).without_crc_check()
    }

    fn step_client(
        &mut self,
        buf: &mut BytesMut,
        emit: &mut impl FnMut(Event, Bytes),
    ) -> Result<(), WireError> {
        loop {
            match &mut self.client {
                ClientStage::Banner => {
                    let Some(b) = buf.first_chunk::<9>() else {
                        return Ok(());
                    };
                    check_banner(b)?;
                    emit(Event::Banner, buf.split_to(BANNER.len()).freeze());
                    self.client = ClientStage::Addr;
                }
                ClientStage::Addr => {
                    let Some(b) = buf.first_chunk::<ADDR_LEN>() else {
                        return Ok(());
                    };
                    let addr = decode_addr(b)?;
                    emit(Event::ClientAddr(addr), buf.split_to(ADDR_LEN).freeze());
                    self.client = ClientStage::Connect;
                }
                ClientStage::Connect => {
                    let Some((connect, authorizer, raw)) =
                        handshake::take_connect(buf, MAX_AUTHORIZER)?
                    else {
                        return Ok(());
                    };
                    self.connects.push(connect);
                    emit(
                        Event::Connect {
                            connect,
                            authorizer,
                        },
                        raw,
                    );
                    self.client = ClientStage::AwaitReply(self.connects.len().saturating_sub(1));
                }
                ClientStage::AwaitReply(n) => {
                    let Some(reply) = self.replies.get(*n) else {
                        return Ok(());
                    };
                    self.client = match reply.tag {
                        Tag::Ready => ClientStage::Stream(self.stream()),
                        Tag::Seq => ClientStage::SeqAck,
                        _ => ClientStage::Connect,
                    };
                }
                ClientStage::SeqAck => {
                    let Some(b) = buf.first_chunk::<8>() else {
                        return Ok(());
                    };
                    let seq = u64::from_le_bytes(*b);
                    emit(Event::Seq(seq), buf.split_to(8).freeze());
                    self.client = ClientStage::Stream(self.stream());
                }
                ClientStage::Stream(r) => return stream(r, buf, emit),
            }
        }
    }

    fn step_server(
        &mut self,
        buf: &mut BytesMut,
        emit: &mut impl FnMut(Event, Bytes),
    ) -> Result<(), WireError> {
        loop {
            match &mut self.server {
                ServerStage::Hello => {
                    let Some((hello, raw)) = handshake::take_server_hello(buf)? else {
                        return Ok(());
                    };
                    emit(Event::ServerHello(hello), raw);
                    self.server = ServerStage::Reply;
                }
                ServerStage::Reply => {
                    let Some(r) = handshake::take_reply(buf, MAX_AUTHORIZER)? else {
                        return Ok(());
                    };
                    self.replies.push(r.reply);
                    let open = matches!(r.reply.tag, Tag::Ready | Tag::Seq);
                    let event = Event::ConnectReply {
                        reply: r.reply,
                        authorizer: r.authorizer,
                        in_seq: r.in_seq,
                    };
                    emit(event, r.raw);
                    if open {
                        self.server = ServerStage::Stream(self.stream());
                    }
                }
                ServerStage::Stream(r) => return stream(r, buf, emit),
            }
        }
    }
}

fn stream(
    r: &mut StreamReader,
    buf: &mut BytesMut,
    emit: &mut impl FnMut(Event, Bytes),
) -> Result<(), WireError> {
    while let Some((item, raw)) = r.next_raw(buf)? {
        emit(Event::Item(item), raw);
    }
    Ok(())
}
