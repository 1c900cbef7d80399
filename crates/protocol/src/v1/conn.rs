//! The msgr1 side of a connection (ProtocolV1): its socket's first bytes,
//! the acceptor's answers to the messenger's decision on a CONNECT
//! (`open()`: READY or SEQ; RETRY_SESSION, RETRY_GLOBAL, RESETSESSION,
//! WAIT), and an open session's items. Sessions, policies, faults and the
//! registry's decisions are the connection's, shared with msgr2.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use msgr_encoding::{EntityAddrType, EntityName, EntityType};
use msgr_frames::v1::{ConnectReply, Item, Msg, Tag, FLAG_LOSSY};

use super::handshake::{self, my_legacy_addr, proto_version, send_reply, ConnectRequest};
use super::link::{Framing, Input};
use crate::config::Config;
use crate::conn::{Conn, Side, State};
use crate::decide::{Decision, Protocol};
use crate::error::{ProtocolError, Wire};
use crate::event::Event;
use crate::features;
use crate::handshake::Accepting;
use crate::ident::IdentRequest;
use crate::intercept::Point1;
use crate::link::{Link, LinkId};
use crate::message::Message;
use crate::peer::MyAddrs;
use crate::session::Arrival;

impl Conn {
    /// A connection for a socket accepted on an msgr1 listener (see
    /// [`Conn::accept`]).
    pub fn accept_v1(
        config: Arc<Config>,
        me: impl Into<MyAddrs>,
        peer_socket: SocketAddr,
        now: Instant,
        id: u64,
    ) -> Conn {
        Conn::accept_on(config, me.into(), peer_socket, now, id, Protocol::V1)
    }

    /// Whether its current msgr1 socket signs and checks messages (cephx).
    pub fn msgr1_signs(&self) -> bool {
        self.link
            .as_ref()
            .and_then(|l| l.v1_ref())
            .is_some_and(|l| l.signs())
    }

    /// A new msgr1 link as link `id`, its first bytes queued (a
    /// connector's banner; an acceptor's banner and addresses).
    pub(crate) fn open_link_v1(&mut self, id: LinkId) -> Result<(), ProtocolError> {
        let connector = self.side == Side::Connector;
        let tap = self.tap();
        let link = self.link.insert(Link::v1(
            id,
            connector,
            self.config.my_name,
            self.config.handshake_limits,
            tap,
        ));
        let me = my_legacy_addr(&self.me.addrs);
        let mut peer = self.peer_socket;
        peer.kind = EntityAddrType::LEGACY;
        peer.nonce = 0;
        link.write1(Point1::Hello, |_, out| {
            Framing::hello(connector, &me, &peer, out)
        })
    }

    /// The messenger's decision on an msgr1 CONNECT.
    pub(crate) fn resolve_v1(
        &mut self,
        req: ConnectRequest,
        decision: Decision,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let c = req.connect;
        let reply = |conn: &mut Conn, tag: Tag, gs: u64, cs: u64| {
            let gs = u32::try_from(gs).unwrap_or(u32::MAX);
            let cs = u32::try_from(cs).unwrap_or(u32::MAX);
            conn.with_cx(|cx| send_reply(cx, tag, &c, gs, cs, &[]))
        };
        match decision {
            Decision::NewSession | Decision::ReplaceLossy => return self.open_v1(&req, false, now),
            Decision::Reuse { .. } => {
                // Carried out by take_for_reuse and adopt.
                self.state = State::Deciding(IdentRequest::V1(req));
                return Ok(());
            }
            Decision::Wait => {
                reply(self, Tag::Wait, 0, 0)?;
                self.state = State::ServerWait;
            }
            Decision::Reset { .. } => reply(self, Tag::ResetSession, 0, 0)?,
            Decision::Retry { connect_seq } => reply(self, Tag::RetrySession, 0, connect_seq)?,
            Decision::RetryGlobal { global_seq } => reply(self, Tag::RetryGlobal, global_seq, 0)?,
            Decision::CloseStale => self.close(false),
            Decision::Refuse { owner } => {
                let newcomer = Box::new(self.owner());
                self.state = State::Deciding(IdentRequest::V1(req));
                return Err(ProtocolError::NotSessionOwner {
                    owner: Box::new(owner),
                    newcomer,
                });
            }
        }
        if matches!(self.state, State::Closed) && self.link.is_some() {
            // A redirecting reply: the connector's next CONNECT follows.
            self.state =
                State::Accepting(Accepting::V1(handshake::Accepting::Connect { auth: None }));
        }
        Ok(())
    }

    /// open(): the session on this socket, answered READY or, to a peer
    /// with RECONNECT_SEQ whose side of the session was not reset
    /// (`reset_from_peer`), SEQ with our in_seq (msgr1-wire.md §2.6, §4.4).
    pub(crate) fn open_v1(
        &mut self,
        req: &ConnectRequest,
        reset_from_peer: bool,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let c = &req.connect;
        let policy = self.peer.policy;
        self.session.connect_seq = u64::from(c.connect_seq).saturating_add(1);
        self.session.peer_global_seq = u64::from(c.global_seq);
        let seq = c.features & features::RECONNECT_SEQ != 0 && !reset_from_peer;
        if !seq {
            self.session.in_seq = 0;
        }
        let global_seq = self.config.global_seq.next()?;
        let u32_of = |v: u64, counter| {
            u32::try_from(v).map_err(|_| ProtocolError::CounterOverflow { counter })
        };
        let reply = ConnectReply {
            tag: if seq { Tag::Seq } else { Tag::Ready },
            features: policy.features_supported,
            global_seq: u32_of(global_seq, "global_seq")?,
            connect_seq: u32_of(self.session.connect_seq, "connect_seq")?,
            protocol_version: proto_version(self.config.my_name.kind, self.peer.entity_type, false),
            authorizer_len: u32::try_from(req.authorizer_reply.len()).unwrap_or(u32::MAX),
            flags: if policy.lossy { FLAG_LOSSY } else { 0 },
        };
        self.peer.features = c.features & policy.features_supported;
        let in_seq = self.session.in_seq;
        let link = self.link.as_mut().ok_or(ProtocolError::Transport {
            kind: std::io::ErrorKind::NotConnected,
            message: "no socket".into(),
        })?;
        link.write1(Point1::Reply(reply.tag), |_, out| {
            out.put_slice(&reply.encode());
            out.put_slice(&req.authorizer_reply);
            if seq {
                out.put_slice(&in_seq.to_le_bytes());
            }
        })?;
        self.events.push_back(Event::Accepted);
        self.known = true;
        // SEQ: the connector's session goes on.
        self.resumed = seq;
        if seq {
            if let Some(l) = link.v1_mut() {
                l.expect_seq();
            }
            // A session that never carried a message can be resumed by
            // a connector that did not learn of it (decide::on_connect_v1,
            // E5); one that did cannot: its peer may have reset after
            // taking some of them, and would get them again.
            self.unconfirmed = !self.session.carried_messages();
            self.state = State::Accepting(Accepting::V1(handshake::Accepting::Seq));
            return Ok(());
        }
        self.ready_v1(now)
    }

    /// The acceptor's session is open: READY sent, or SEQ answered.
    pub(crate) fn ready_v1(&mut self, now: Instant) -> Result<(), ProtocolError> {
        self.unconfirmed = false;
        let features = self.peer.features;
        if let Some(l) = self.link.as_mut().and_then(|l| l.v1_mut()) {
            l.open_stream(features);
        }
        self.become_ready(now)
    }

    /// An msgr1 input while READY: an item of the open stream.
    pub(crate) fn on_ready_v1(&mut self, input: Input, now: Instant) -> Result<(), ProtocolError> {
        const READY: &[Wire] = &[
            Wire::Item1(Tag::Msg),
            Wire::Item1(Tag::Ack),
            Wire::Item1(Tag::Keepalive2),
            Wire::Item1(Tag::Keepalive2Ack),
        ];
        match input {
            Input::Item(item) => self.on_item_v1(item, now),
            other => Err(ProtocolError::UnexpectedFrame {
                state: "READY",
                expected: READY,
                got: other.wire(),
            }),
        }
    }

    /// An item of an open session (ProtocolV1::handle_tag and the message
    /// reads after it).
    fn on_item_v1(&mut self, item: Item, now: Instant) -> Result<(), ProtocolError> {
        let lossy = self.peer.policy.lossy;
        match item {
            Item::Msg(m) => self.on_message_v1(*m),
            Item::Ack(seq) => {
                if !lossy {
                    self.session.acked(seq);
                }
                Ok(())
            }
            Item::Keepalive => Ok(()),
            Item::Keepalive2(stamp) => {
                self.session.keepalive_ack_pending = Some(stamp);
                self.flush()
            }
            Item::Keepalive2Ack(stamp) => {
                self.last_keepalive_ack = Some(stamp);
                self.events.push_back(Event::KeepaliveAck(stamp));
                Ok(())
            }
            Item::Close => {
                // The peer ends the session (ProtocolV1 stops on CLOSE).
                let _ = now;
                self.close(true);
                Ok(())
            }
        }
    }

    /// msgr1 names the sender in each message header, not in a handshake:
    /// the header must name the peer's type (its CONNECT's host type, or
    /// the type we dialled), and, for a peer that proved its identity, a
    /// number that identity owns (as msgr2 binds CLIENT_IDENT's gid). The
    /// first such name is the session's.
    fn check_source_v1(&mut self, src: EntityName) -> Result<(), ProtocolError> {
        if self.peer.name == Some(src) {
            return Ok(());
        }
        let proven = self.peer.identity.as_ref().filter(|w| w.proven);
        let type_ok = src.kind == self.peer.entity_type || self.peer.entity_type == EntityType::ANY;
        let num_ok = proven.is_none_or(|w| u64::try_from(src.num).is_ok_and(|n| w.owns_gid(n)));
        if !type_ok || !num_ok {
            let authenticated = Box::new(match proven {
                Some(w) => w.clone(),
                None => msgr_auth::Identity {
                    name: msgr_encoding::AuthName::new(self.peer.entity_type, ""),
                    global_id: 0,
                    caps: Default::default(),
                    proven: false,
                },
            });
            return Err(ProtocolError::Impersonation {
                authenticated,
                claim: crate::error::Claim::MessageSource(src),
            });
        }
        if self.peer.name.is_none() {
            self.peer.name = Some(src);
        }
        Ok(())
    }

    fn on_message_v1(&mut self, m: Msg) -> Result<(), ProtocolError> {
        if !m.complete() {
            // Aborted by its sender: dropped, as Ceph drops it.
            return Ok(());
        }
        let h = m.header;
        if let Some(l) = self.link.as_ref().and_then(|l| l.v1_ref()) {
            l.check_signature(&m)?;
        }
        self.check_budget(h.payload_len())?;
        let lossy = self.peer.policy.lossy;
        match self.session.arrived(h.seq, lossy)? {
            Arrival::Duplicate => {
                self.stats.duplicates_dropped = self.stats.duplicates_dropped.saturating_add(1);
            }
            Arrival::Deliver => {
                self.check_source_v1(h.src)?;
                self.stats.messages_in = self.stats.messages_in.saturating_add(1);
                let Msg {
                    front,
                    middle,
                    data,
                    ..
                } = m;
                let msg = Message {
                    msg_type: h.msg_type,
                    priority: h.priority,
                    version: h.version,
                    compat_version: h.compat_version,
                    tid: h.tid,
                    data_off: h.data_off,
                    front,
                    middle,
                    data,
                    seq: h.seq,
                    source: Some(h.src),
                };
                self.events.push_back(Event::Message(Box::new(msg)));
            }
        }
        Ok(())
    }
}
