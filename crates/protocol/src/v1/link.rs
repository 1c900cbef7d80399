//! One socket's worth of msgr1 (msgr_frames::v1): what the link reads next
//! (the acceptor's banner and addresses and its connect replies on a
//! connector; the connector's banner and address, its CONNECTs and its
//! in_seq on an acceptor; then each side's stream), and how messages,
//! acks and keepalives are written.
//!
//! The handshake phases (`v1/handshake.rs`) tell the framing when the
//! stream starts ([`Framing::open_stream`]) and when an acceptor awaits the
//! connector's in_seq ([`Framing::expect_seq`]); everything else follows
//! from the bytes. The socket around it (its output, the interceptor's
//! gate) is the shared [`crate::link::Link`]'s.

use bytes::{Bytes, BytesMut};
use msgr_auth::SessionKey;
use msgr_encoding::{EntityAddr, EntityName, UTime};
use msgr_frames::v1::header::{footer_flags, section_crc, signature_block};
use msgr_frames::v1::{
    handshake, write, Connect, ConnectReply, Footer, Item, Msg, MsgHeader, ServerHello,
    StreamReader, Tag, BANNER,
};
use msgr_frames::{FrameLimits, WireQueue};

use crate::error::{ProtocolError, Wire};
use crate::features;
use crate::message::Message;

/// The longest authorizer we read, in a CONNECT or its reply (Ceph's
/// connector asserts a reply's is shorter than this; cephx authorizers
/// take a few hundred bytes).
pub const MAX_AUTHORIZER: u32 = 4096;

/// What the peer sent next, on an msgr1 link.
#[derive(Debug)]
pub enum Input {
    /// To a connector: the acceptor's banner and addresses.
    ServerHello(ServerHello),
    /// To an acceptor: the connector's banner and the address it claims.
    ClientHello(EntityAddr),
    Connect {
        connect: Connect,
        authorizer: Bytes,
    },
    Reply {
        reply: ConnectReply,
        authorizer: Bytes,
        /// After SEQ: the acceptor's in_seq.
        in_seq: Option<u64>,
    },
    /// The connector's in_seq, after SEQ.
    Seq(u64),
    Item(Item),
}

impl Input {
    /// What arrived, for errors that say what was expected against it.
    pub fn wire(&self) -> Wire {
        match self {
            Input::ServerHello(_) | Input::ClientHello(_) => Wire::Hello1,
            Input::Connect { .. } => Wire::Connect1,
            Input::Reply { reply, .. } => Wire::Reply1(reply.tag),
            Input::Seq(_) => Wire::Seq1,
            Input::Item(i) => Wire::Item1(i.tag()),
        }
    }
}

enum Read {
    ServerHello,
    Reply,
    ClientHello,
    Connect,
    Seq,
    Stream(StreamReader),
}

/// msgr1's framing of one socket.
pub(crate) struct Framing {
    read: Read,
    limits: FrameLimits,
    /// Our name: every message header's source.
    src: EntityName,
    /// Footers carry a signature field (MSG_AUTH).
    msg_auth: bool,
    /// The peer reads KEEPALIVE2 (else plain KEEPALIVE).
    keepalive2: bool,
    /// The session key the handshake's authorizer set up (cephx).
    key: Option<SessionKey>,
    /// Signing and checking messages, once the stream is open with
    /// MSG_AUTH: the key, and whether the format is CEPHX_V2's.
    signer: Option<(msgr_auth::Msgr1Signer, bool)>,
}

impl Framing {
    /// A connector's link (`connector`) or an acceptor's.
    pub fn new(connector: bool, src: EntityName, limits: FrameLimits) -> Framing {
        Framing {
            read: if connector {
                Read::ServerHello
            } else {
                Read::ClientHello
            },
            limits,
            src,
            msg_auth: false,
            keepalive2: false,
            key: None,
            signer: None,
        }
    }

    /// The authorizer's session key: messages are signed with it once the
    /// stream is open (an empty key, auth none's, signs nothing).
    pub fn set_key(&mut self, key: SessionKey) {
        self.key = (!key.is_empty()).then_some(key);
    }

    /// Whether the peer reads KEEPALIVE2.
    pub fn keepalive2(&self) -> bool {
        self.keepalive2
    }

    /// Whether messages are signed and checked.
    pub fn signs(&self) -> bool {
        self.signer.is_some()
    }

    /// The first bytes the link writes: a connector's banner (its address
    /// follows once the acceptor's hello is in), or an acceptor's banner,
    /// address, and the connector's address as it sees it.
    pub fn hello(connector: bool, me: &EntityAddr, peer: &EntityAddr, out: &mut WireQueue) {
        if connector {
            out.put_slice(BANNER);
        } else {
            let hello = ServerHello {
                addr: *me,
                peer_addr: *peer,
            };
            out.put_slice(&hello.encode());
        }
    }

    /// The handshake is done: both sides' items follow, framed as the
    /// session's features say.
    pub fn open_stream(&mut self, session_features: u64) {
        self.msg_auth = session_features & features::MSG_AUTH != 0;
        self.keepalive2 = session_features & features::MSGR_KEEPALIVE2 != 0;
        // cephx signs with the session key when both sides have MSG_AUTH
        // (CephxSessionHandler, cephx_sign_messages).
        let v2 = features::has(session_features, features::CEPHX_V2);
        self.signer = match (&self.key, self.msg_auth) {
            (Some(k), true) => k.msgr1_signer().map(|s| (s, v2)),
            _ => None,
        };
        self.read = Read::Stream(StreamReader::new(self.limits, self.msg_auth));
    }

    /// An acceptor answered SEQ: the connector's in_seq comes next.
    pub fn expect_seq(&mut self) {
        self.read = Read::Seq;
    }

    /// After a refused CONNECT (a retry, a reset), another comes.
    pub fn expect_connect(&mut self) {
        self.read = Read::Connect;
    }

    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
        if let Read::Stream(r) = &mut self.read {
            r.set_limits(limits);
        }
    }

    /// Bytes the next item needs in all, `input` holding what is read.
    pub fn want(&self, input: &[u8]) -> usize {
        let total = match &self.read {
            Read::ServerHello => ServerHello::LEN,
            Read::ClientHello => handshake::CLIENT_HELLO_LEN,
            Read::Seq => 8,
            Read::Connect => handshake::connect_len(input, MAX_AUTHORIZER),
            Read::Reply => handshake::reply_len(input, MAX_AUTHORIZER),
            Read::Stream(r) => return r.bytes_needed(input).max(1),
        };
        total.saturating_sub(input.len()).max(1)
    }

    /// The header of the message being read, once it is in.
    pub fn pending_header(&self) -> Option<&MsgHeader> {
        match &self.read {
            Read::Stream(r) => r.pending_header(),
            _ => None,
        }
    }

    /// The payload size of the message being read, once its header is in.
    pub fn pending_payload_len(&self) -> Option<usize> {
        let h = self.pending_header()?;
        Some(usize::try_from(h.payload_len()).unwrap_or(usize::MAX))
    }

    /// Takes the next item from the front of `input`, if it is all there.
    pub fn poll(&mut self, input: &mut BytesMut) -> Result<Option<Input>, ProtocolError> {
        let item = match &mut self.read {
            Read::ServerHello => handshake::take_server_hello(input)?.map(|(hello, _)| {
                self.read = Read::Reply;
                Input::ServerHello(hello)
            }),
            Read::ClientHello => handshake::take_client_hello(input)?.map(|(addr, _)| {
                self.read = Read::Connect;
                Input::ClientHello(addr)
            }),
            Read::Connect => {
                handshake::take_connect(input, MAX_AUTHORIZER)?.map(|(connect, authorizer, _)| {
                    Input::Connect {
                        connect,
                        authorizer,
                    }
                })
            }
            Read::Reply => handshake::take_reply(input, MAX_AUTHORIZER)?.map(|r| Input::Reply {
                reply: r.reply,
                authorizer: r.authorizer,
                in_seq: r.in_seq,
            }),
            Read::Seq => (input.len() >= 8).then(|| {
                let b = input.split_to(8);
                Input::Seq(u64::from_le_bytes(b[..].try_into().unwrap_or_default()))
            }),
            Read::Stream(r) => r.next(input)?.map(Input::Item),
        };
        Ok(item)
    }

    // ------------------------------------------------------------ writing

    /// A message as sequence number `seq` (ProtocolV1::write_message):
    /// tag, header, the sections as they are (no copy), the footer with
    /// their crcs.
    pub fn write_message(&self, m: &Message, seq: u64, out: &mut WireQueue) {
        let len = |b: &Bytes| u32::try_from(b.len()).unwrap_or(u32::MAX);
        let mut header = MsgHeader {
            seq,
            tid: m.tid,
            msg_type: m.msg_type,
            priority: m.priority,
            version: m.version,
            front_len: len(&m.front),
            middle_len: len(&m.middle),
            data_len: len(&m.data),
            data_off: m.data_off,
            src: self.src,
            compat_version: m.compat_version,
            reserved: 0,
            crc: 0,
        };
        let head = write::msg_head(&header);
        // The crc msg_head filled in: the header's last four bytes.
        let crc = head.last_chunk::<4>().copied().unwrap_or_default();
        header.crc = u32::from_le_bytes(crc);
        out.put_slice(&head);
        for section in [&m.front, &m.middle, &m.data] {
            if !section.is_empty() {
                out.put_shared(section);
            }
        }
        let mut footer = Footer {
            front_crc: section_crc(&m.front),
            middle_crc: section_crc(&m.middle),
            data_crc: section_crc(&m.data),
            sig: 0,
            flags: footer_flags::COMPLETE,
        };
        if let Some(sig) = self.signature(&header, &footer) {
            footer.sig = sig;
            footer.flags |= footer_flags::SIGNED;
        }
        match self.msg_auth {
            true => out.put_slice(&footer.encode()),
            false => out.put_slice(&footer.encode_old()),
        }
    }

    fn signature(&self, header: &MsgHeader, footer: &Footer) -> Option<u64> {
        let (signer, v2) = self.signer.as_ref()?;
        Some(signer.sign(&signature_block(header, footer, *v2), *v2))
    }

    /// Checks a received message's signature, on a signing session
    /// (CephxSessionHandler::check_message_signature: a message without
    /// one there is refused too).
    pub fn check_signature(&self, m: &Msg) -> Result<(), ProtocolError> {
        match self.signature(&m.header, &m.footer) {
            Some(sig) if !msgr_auth::ct_eq(&sig.to_le_bytes(), &m.footer.sig.to_le_bytes()) => {
                Err(ProtocolError::MessageSignature { seq: m.header.seq })
            }
            _ => Ok(()),
        }
    }

    pub fn write_ack(&self, seq: u64, out: &mut WireQueue) {
        out.put_slice(&write::tagged_u64(Tag::Ack, seq));
    }

    /// KEEPALIVE2 stamped `stamp`, or a plain KEEPALIVE to a peer without
    /// MSGR_KEEPALIVE2.
    pub fn write_keepalive(&self, stamp: UTime, out: &mut WireQueue) {
        if self.keepalive2 {
            out.put_slice(&write::tagged_u64(Tag::Keepalive2, write::stamp(stamp)));
        } else {
            out.put_slice(&[Tag::Keepalive as u8]);
        }
    }

    pub fn write_keepalive_ack(&self, stamp: UTime, out: &mut WireQueue) {
        out.put_slice(&write::tagged_u64(Tag::Keepalive2Ack, write::stamp(stamp)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message signed by one end checks at the other; one whose
    /// signature is not its own, or missing, is refused.
    #[test]
    fn signed_messages_check_and_forgeries_do_not() {
        let features = features::MSG_AUTH | features::CEPHX_V2;
        let key = SessionKey::new(b"0123456789abcdef".to_vec());
        let mut tx = Framing::new(true, "client.1".parse().unwrap(), FrameLimits::default());
        tx.set_key(key.clone());
        tx.open_stream(features);
        let mut rx = Framing::new(false, "osd.0".parse().unwrap(), FrameLimits::default());
        rx.set_key(key);
        rx.open_stream(features);
        assert!(tx.signs() && rx.signs());
        let mut m = Message::new(42, Bytes::from_static(b"front"));
        m.data = Bytes::from(vec![7u8; 100]);
        let mut out = WireQueue::new();
        tx.write_message(&m, 1, &mut out);
        let wire = out.take_all();
        let read = |bytes: &[u8]| {
            let mut rx2 = Framing::new(false, "osd.0".parse().unwrap(), FrameLimits::default());
            rx2.open_stream(features);
            let mut input = BytesMut::from(bytes);
            match rx2.poll(&mut input).unwrap() {
                Some(Input::Item(Item::Msg(m))) => *m,
                other => panic!("{other:?}"),
            }
        };
        let good = read(&wire);
        assert_ne!(good.footer.sig, 0);
        assert_eq!(rx.check_signature(&good), Ok(()));
        // The signature covers the sequence number: the same bytes as
        // message 2 do not check.
        let mut replayed = good.clone();
        replayed.header.seq = 2;
        assert_eq!(
            rx.check_signature(&replayed),
            Err(ProtocolError::MessageSignature { seq: 2 })
        );
        let mut unsigned = good;
        unsigned.footer.sig = 0;
        assert!(rx.check_signature(&unsigned).is_err());
        // Without a key (auth none) nothing is signed or checked.
        let mut plain = Framing::new(true, "client.1".parse().unwrap(), FrameLimits::default());
        plain.set_key(SessionKey::default());
        plain.open_stream(features);
        assert!(!plain.signs());
    }
}
