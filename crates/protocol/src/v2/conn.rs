//! The msgr2 side of a connection (ProtocolV2): its socket's first bytes,
//! the acceptor's answers to the messenger's decision on an ident (a new
//! session with SERVER_IDENT, SESSION_RECONNECT_OK, RETRY, RETRY_GLOBAL,
//! RESET, WAIT), and READY's frames. Sessions, policies, faults and the
//! registry's decisions are the connection's, shared with msgr1.

use std::time::Instant;

use msgr_frames::control::*;
use msgr_frames::{ControlFrame, MessageFrame, Received, Tag};

use super::accept;
use super::link::Input;
use crate::conn::{Conn, State};
use crate::decide::Decision;
use crate::error::{ProtocolError, Wire};
use crate::event::Event;
use crate::features;
use crate::handshake::Accepting;
use crate::ident::IdentRequest;
use crate::link::{Link, LinkId};
use crate::message::Message;
use crate::session::Arrival;

impl Conn {
    /// A new msgr2 link as link `id`, its banner queued.
    pub(crate) fn open_link_v2(&mut self, id: LinkId) -> Result<(), ProtocolError> {
        let tap = self.tap();
        let link = self.link.insert(Link::v2(
            id,
            self.config.banner,
            self.config.handshake_limits,
            tap,
        ));
        link.send_banner()
    }

    pub(crate) fn resolve_v2(
        &mut self,
        req: IdentRequest,
        decision: Decision,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        match decision {
            Decision::NewSession | Decision::ReplaceLossy => self.start_server_session(&req, now),
            Decision::Reuse { .. } => {
                self.state = State::Deciding(req);
                Ok(())
            }
            Decision::Wait => self.reply_and_wait(Wait {}.into()),
            Decision::Reset { full } => self.reply_and_continue(SessionReset { full }.into()),
            Decision::Retry { connect_seq } => {
                self.reply_and_continue(SessionRetry { connect_seq }.into())
            }
            Decision::RetryGlobal { global_seq } => {
                self.reply_and_continue(SessionRetryGlobal { global_seq }.into())
            }
            Decision::CloseStale => {
                self.close(false);
                Ok(())
            }
            Decision::Refuse { owner } => {
                let newcomer = Box::new(self.owner());
                self.state = State::Deciding(req);
                Err(ProtocolError::NotSessionOwner {
                    owner: Box::new(owner),
                    newcomer,
                })
            }
        }
    }

    pub(crate) fn reply_and_wait(&mut self, frame: ControlFrame) -> Result<(), ProtocolError> {
        self.link_send(&frame)?;
        self.state = State::ServerWait;
        Ok(())
    }

    pub(crate) fn reply_and_continue(&mut self, frame: ControlFrame) -> Result<(), ProtocolError> {
        self.link_send(&frame)?;
        self.state = State::Accepting(Accepting::V2(accept::Accepting::Session));
        Ok(())
    }

    pub(crate) fn start_server_session(
        &mut self,
        req: &IdentRequest,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let IdentRequest::New(c) = req else {
            // A reconnect with nothing to resume is answered by RESET.
            return self.reply_and_continue(SessionReset { full: true }.into());
        };
        self.session.client_cookie = c.cookie;
        self.session.peer_global_seq = c.global_seq;
        self.send_server_ident(now)
    }

    /// SERVER_IDENT and READY (send_server_ident): a new session, numbered
    /// from 1 in both directions.
    pub(crate) fn send_server_ident(&mut self, now: Instant) -> Result<(), ProtocolError> {
        let global_seq = self.config.global_seq.next()?;
        self.session.restart_numbering();
        let lossy = self.peer.policy.lossy;
        self.session.server_cookie = if lossy { 0 } else { self.config.new_cookie() };
        let ident = ServerIdent {
            addrs: self.me.addrs.clone(),
            gid: self.config.my_name.num,
            global_seq,
            supported_features: self.peer.policy.features_supported,
            required_features: self.peer.policy.features_required | features::MSGR2_REQUIRED,
            flags: if lossy { CONNECT_FLAG_LOSSY } else { 0 },
            cookie: self.session.server_cookie,
        };
        self.events.push_back(Event::Accepted);
        self.known = true;
        self.resumed = false;
        self.link_send(&ident.into())?;
        self.become_ready(now)
    }

    /// SESSION_RECONNECT_OK: the session goes on from the peer's msg_seq
    /// (ProtocolV2::reuse_connection of a reconnect).
    pub(crate) fn resume_server_session(
        &mut self,
        r: &SessionReconnect,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        self.session.connect_seq = r.connect_seq;
        self.session.peer_global_seq = r.global_seq;
        self.session.resume_from(r.msg_seq);
        let ok = SessionReconnectOk {
            msg_seq: self.session.in_seq,
        };
        self.events.push_back(Event::Accepted);
        self.known = true;
        self.resumed = true;
        self.stats.reconnects = self.stats.reconnects.saturating_add(1);
        self.link_send(&ok.into())
            .and_then(|_| self.become_ready(now))
    }

    /// An msgr2 input while READY: MESSAGE, ACK, KEEPALIVE2 or its ack.
    pub(crate) fn on_ready_v2(&mut self, input: Input, now: Instant) -> Result<(), ProtocolError> {
        const READY: &[Wire] = &[
            Wire::Frame(Tag::MESSAGE),
            Wire::Frame(Tag::ACK),
            Wire::Frame(Tag::KEEPALIVE2),
            Wire::Frame(Tag::KEEPALIVE2_ACK),
        ];
        let frame = match input {
            Input::Frame(f) => f,
            other => {
                return Err(ProtocolError::UnexpectedFrame {
                    state: "READY",
                    expected: READY,
                    got: other.wire(),
                })
            }
        };
        match frame.tag {
            Tag::MESSAGE => self.on_message(frame),
            Tag::ACK | Tag::KEEPALIVE2 | Tag::KEEPALIVE2_ACK => {
                match ControlFrame::from_received(&frame)? {
                    ControlFrame::Ack(a) => {
                        if !self.peer.policy.lossy {
                            self.session.acked(a.seq);
                        }
                    }
                    ControlFrame::Keepalive2(k) => {
                        self.session.keepalive_ack_pending = Some(k.timestamp);
                        self.flush()?;
                    }
                    ControlFrame::Keepalive2Ack(k) => {
                        self.last_keepalive_ack = Some(k.timestamp);
                        self.events.push_back(Event::KeepaliveAck(k.timestamp));
                    }
                    _ => unreachable!("tag checked"),
                }
                let _ = now;
                Ok(())
            }
            tag => Err(ProtocolError::UnexpectedFrame {
                state: "READY",
                expected: READY,
                got: Wire::Frame(tag),
            }),
        }
    }

    pub(crate) fn on_message(&mut self, frame: Received) -> Result<(), ProtocolError> {
        let m = MessageFrame::from_received_owned(frame)?;
        // Refused whole as it is refused by its preamble (after_input),
        // where it arrived in one read.
        let len = m
            .front
            .len()
            .saturating_add(m.middle.len())
            .saturating_add(m.data.len());
        self.check_budget(len as u64)?;
        let lossy = self.peer.policy.lossy;
        let ack_seq = m.header.ack_seq;
        match self.session.arrived(m.header.seq, lossy)? {
            Arrival::Duplicate => {
                self.stats.duplicates_dropped = self.stats.duplicates_dropped.saturating_add(1);
            }
            Arrival::Deliver => {
                self.stats.messages_in = self.stats.messages_in.saturating_add(1);
                let source = self.peer.name.unwrap_or_default();
                if !lossy {
                    self.session.acked(ack_seq);
                }
                self.events
                    .push_back(Event::Message(Box::new(Message::from_frame(m, source))));
            }
        }
        Ok(())
    }
}
