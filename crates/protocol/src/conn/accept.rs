//! The acceptor's side of a connection after CLIENT_IDENT or
//! SESSION_RECONNECT: the feature check, the messenger's decision
//! ([`Conn::resolve`]: a new session, a reconnect, RETRY, WAIT or RESET),
//! SERVER_IDENT, and a socket moving into the existing connection to the
//! same peer ([`Conn::take_for_reuse`], [`Conn::adopt`]).

use super::*;

impl Conn {
    /// The snapshot the messenger's decisions need.
    pub fn existing_info(&self) -> ExistingInfo {
        ExistingInfo {
            closed: matches!(self.state, State::Closed),
            replacing: self.replacing,
            lossy: self.peer.policy.lossy,
            server: self.peer.policy.server,
            // READY, or STANDBY with a session behind it. A connector that
            // faulted before SERVER_IDENT with nothing queued is in STANDBY
            // too (as in Ceph and crimson), but holds no session: counting
            // it as established would make both peers of a connect race
            // adopt the other's incoming connection, leaving two sessions
            // that reset each other and drop queued messages. It races
            // instead.
            established: match self.state {
                State::Ready => true,
                State::Standby => self.has_session(),
                _ => false,
            },
            peer_global_seq: self.session.peer_global_seq,
            client_cookie: self.session.client_cookie,
            server_cookie: self.session.server_cookie,
            connect_seq: self.session.connect_seq,
            unconfirmed: self.unconfirmed,
            owner: self.owner(),
        }
    }

    /// The acceptor's ident check (features), then the messenger's turn.
    pub(crate) fn on_ident(&mut self, req: IdentRequest) -> Result<(), ProtocolError> {
        if let IdentRequest::New(c) = &req {
            self.peer.addrs = c.addrs.clone();
            self.peer.target_addr = c
                .addrs
                .msgr2()
                .or(c.addrs.0.first())
                .copied()
                .unwrap_or_default();
            self.peer.name = Some(EntityName::new(self.peer.entity_type, c.gid));
            let required = self.peer.policy.features_required | features::MSGR2_REQUIRED;
            let missing = required & !c.supported_features;
            if missing != 0 {
                self.link_send(&IdentMissingFeatures { features: missing }.into())?;
                self.state = State::ServerWait;
                return Ok(());
            }
            self.peer.features = c.supported_features & self.peer.policy.features_supported;
        } else if let IdentRequest::Reconnect(r) = &req {
            self.peer.addrs = r.addrs.clone();
            self.peer.target_addr = r
                .addrs
                .msgr2()
                .or(r.addrs.0.first())
                .copied()
                .unwrap_or_default();
        }
        self.events.push_back(Event::IdentReceived(req.clone()));
        self.state = State::Deciding(req);
        Ok(())
    }

    /// The messenger's decision on the ident this connection is holding
    /// (anything but `Reuse`, which goes through [`Conn::take_for_reuse`]).
    pub(crate) fn resolve(&mut self, decision: Decision, now: Instant) {
        let State::Deciding(req) = std::mem::replace(&mut self.state, State::Closed) else {
            return;
        };
        let result = match (req, decision) {
            (IdentRequest::V1(c), decision) => self.resolve_v1(c, decision, now),
            (req, decision) => self.resolve_v2(req, decision, now),
        };
        if let Err(e) = result {
            if matches!(self.state, State::Closed) {
                // The decision failed before the state moved on. Once the
                // session exists (accept dispatched, SERVER_IDENT being
                // written: crimson's ESTABLISHING) the fault is a session's
                // (lossy: reset; lossless: standby); before, it is an
                // accepted socket that never became a session.
                self.state = match self.known {
                    true => State::Ready,
                    false => State::Accepting(Accepting::start(self.protocol)),
                };
            }
            self.fault(e, now);
        }
    }

    /// A socket is promised to this connection (registry::apply_existing
    /// of a Reuse): until it arrives ([`Conn::adopt`]) or the promise is
    /// withdrawn ([`Conn::end_replacing`]), other idents for this peer are
    /// answered as Ceph answers them during a replacement (WAIT, or
    /// RETRY_GLOBAL for a reconnect), and the old socket is not read.
    pub(crate) fn begin_replacing(&mut self) {
        self.replacing = true;
    }

    /// The promised socket will not come (its acceptor closed first).
    pub fn end_replacing(&mut self) {
        self.replacing = false;
    }

    /// Whether a promised socket is awaited.
    pub fn is_replacing(&self) -> bool {
        self.replacing
    }

    /// Takes this accepted socket (and what its handshake learned) to move
    /// it into an existing connection to the same peer.
    pub(crate) fn take_for_reuse(&mut self) -> Option<Reuse> {
        let State::Deciding(request) = std::mem::replace(&mut self.state, State::Closed) else {
            return None;
        };
        let link = self.link.take()?;
        self.events.push_back(Event::Closed);
        Some(Reuse {
            link,
            peer: self.peer.clone(),
            request,
        })
    }

    /// Continues the session on the socket an acceptor handed over
    /// (ProtocolV2::reuse_connection): the old socket, if any, is dropped;
    /// unacknowledged messages are queued again; the session answers with
    /// SERVER_IDENT (a new or reset session) or SESSION_RECONNECT_OK.
    pub(crate) fn adopt(&mut self, reuse: Reuse, reset_session: bool, now: Instant) {
        self.replacing = false;
        if matches!(self.state, State::Closed) {
            return;
        }
        // msgr1: the peer reset its side (CONNECT with connect_seq 0 to a
        // session that had one): READY, not SEQ. Not when it never
        // confirmed the session (its handshake is being retried): SEQ
        // again, and the session stays unconfirmed until its in_seq comes.
        let reset_from_peer = self.session.connect_seq > 0 && !self.unconfirmed;
        self.drop_link();
        self.session.requeue_sent();
        if reset_session {
            self.session.reset();
            self.events.push_back(Event::RemoteReset);
        }
        self.side = Side::Acceptor;
        let mut link = reuse.link;
        link.id = self.next_link;
        // The socket is ours now: its breakpoints count as ours.
        link.tap.conn = self.id;
        self.next_link = self.next_link.saturating_add(1);
        // A new session takes the features of its CLIENT_IDENT; a
        // SESSION_RECONNECT carries none, and the session keeps those it
        // had (ProtocolV2::reuse_connection sets them only when not
        // reconnecting).
        if matches!(reuse.request, IdentRequest::New(_)) {
            self.peer.features = reuse.peer.features;
        }
        self.peer.name = reuse.peer.name.or(self.peer.name);
        // The same owner (decide::Owner::admits), possibly known better
        // now: an authenticated name where we knew a connector's server.
        if reuse.peer.identity.is_some() {
            self.peer.identity = reuse.peer.identity;
        }
        // Admitted only as strong as the session was, or stronger.
        self.peer.proven = reuse.peer.proven;
        self.peer.protected = reuse.peer.protected;
        self.peer.addrs = reuse.peer.addrs;
        self.peer.target_addr = reuse.peer.target_addr;
        self.link = Some(link);
        self.handshake_deadline = Some(later(now, self.config.timeouts.connect));
        let result = match reuse.request {
            IdentRequest::New(c) => self.start_server_session(&IdentRequest::New(c), now),
            IdentRequest::V1(c) => {
                let from_peer = reset_from_peer && c.connect.connect_seq == 0;
                self.open_v1(&c, from_peer, now)
            }
            IdentRequest::Reconnect(r) => self.resume_server_session(&r, now),
        };
        if let Err(e) = result {
            if matches!(self.state, State::Closed) {
                // The decision failed before the state moved on. Once the
                // session exists (accept dispatched, SERVER_IDENT being
                // written: crimson's ESTABLISHING) the fault is a session's
                // (lossy: reset; lossless: standby); before, it is an
                // accepted socket that never became a session.
                self.state = match self.known {
                    true => State::Ready,
                    false => State::Accepting(Accepting::start(self.protocol)),
                };
            }
            self.fault(e, now);
        }
    }
}
