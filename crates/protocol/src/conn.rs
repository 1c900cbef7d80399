//! One connection to a peer, sans-IO: Ceph's AsyncConnection +
//! ProtocolV2, minus the sockets, threads and clocks.
//!
//! A `Conn` outlives its sockets. It asks its driver for a socket
//! ([`Event::Connect`]), runs the handshake over it, moves messages while
//! READY, and on a fault decides by its policy between reconnecting (after
//! a backoff), standing by, and closing (ProtocolV2::_fault; §7 of
//! docs/research/protocol-v2-sessions.md). An accepted socket runs the
//! acceptor handshake until the client's ident, which the messenger decides
//! on ([`Event::IdentReceived`], [`crate::registry`]); the socket then
//! either starts a session here or moves into the existing connection to
//! the same peer.
//!
//! The driver's loop: write what [`Conn::fill_output`] moves out (framing
//! queued messages just before the socket takes them), read into a buffer
//! of its own (about [`Conn::want`] more bytes), call
//! [`Conn::handle_input`] with it, drain [`Conn::poll_event`], and call
//! [`Conn::handle_timeout`] at
//! [`Conn::poll_timeout`]. Time is always passed in.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType, UTime};
use msgr_frames::control::*;
use msgr_frames::{ControlFrame, WireQueue};

use crate::config::{later, Config};
use crate::cx::Cx;
use crate::decide::{Decision, ExistingInfo, Protocol};
use crate::error::ProtocolError;
use crate::event::Event;
use crate::features;
use crate::handshake::{AcceptStep, Accepting, ConnectStep, Connecting};
use crate::ident::IdentRequest;
use crate::input::Input;
use crate::link::{Link, LinkId};
use crate::message::Message;
use crate::peer::{MyAddrs, PeerInfo};
use crate::session::Session;

mod accept;
mod bounds;
mod gate;
mod io;
mod path;

pub use path::{FailedPaths, HostsHeard, PathProgress};

/// Which side opened the current socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// We dialled the peer (Ceph's connecting side).
    Connector,
    /// The peer dialled us; we accepted the socket.
    Acceptor,
}

/// Where a connection stands (coarser than the handshake phases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Waiting for the driver to open a socket.
    NeedSocket,
    /// Waiting out a backoff before reconnecting.
    Backoff,
    /// Our handshake towards the peer is under way (banner to READY).
    Connecting,
    /// An accepted socket's handshake is under way, before the peer's ident.
    Accepting,
    /// An accepted ident awaits the messenger's decision.
    Deciding,
    /// Told the client to wait (or that it lacks features); it will close.
    ServerWait,
    /// The session is open: messages flow.
    Ready,
    /// No socket, session kept: a lossless connection that faulted with
    /// nothing to send (or a server's whose client went away) waits for
    /// traffic or the peer to come back.
    Standby,
    /// Closed for good: no reconnect follows.
    Closed,
}

pub(crate) enum State {
    /// Waits for the socket the driver opens; `since`: when the attempt
    /// started (Timeouts::probe).
    NeedSocket {
        since: Instant,
    },
    Backoff {
        until: Instant,
    },
    Connecting(Connecting),
    Accepting(Accepting),
    Deciding(IdentRequest),
    ServerWait,
    Ready,
    Standby,
    Closed,
}

/// Counters of what happened on a connection (for tests and statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnStats {
    /// Sockets opened towards the peer.
    pub connect_attempts: u64,
    /// CLIENT_IDENT / SESSION_RECONNECT frames written.
    pub client_idents: u64,
    /// SESSION_RECONNECT frames written (msgr2 only; msgr1's CONNECTs are
    /// not counted here).
    pub reconnects_sent: u64,
    /// Times the session became READY again after a fault.
    pub reconnects: u64,
    /// Faults: sockets lost or protocol errors, each followed by the policy's
    /// fault handling.
    pub faults: u64,
    /// Messages received and passed up (duplicates not counted).
    pub messages_in: u64,
    /// Messages framed for the socket, resends after a reconnect included.
    pub messages_out: u64,
    /// Received messages dropped because their sequence number was already
    /// seen (a peer's resend after a reconnect).
    pub duplicates_dropped: u64,
    /// How long the latest handshake took, from its socket's first step
    /// to READY, in nanoseconds.
    pub last_handshake_ns: u64,
}

/// What an accepted socket carries into the connection it joins.
pub struct Reuse {
    link: Link,
    peer: PeerInfo,
    request: IdentRequest,
}

/// A connection to one peer.
///
/// In declared order (`repr(C)`): what a READY connection touches per
/// message first (timestamps, events, counters, the session, the socket's
/// framing, the peer's name and policy, the state's tag), what changes
/// with handshakes and faults after, so that a server with thousands of
/// connections touches a few contiguous cache lines of each, not lines
/// spread over all of it (BENCHMARKS.md, "What grows with connections").
#[repr(C)]
pub struct Conn {
    pub(crate) config: Arc<Config>,
    /// Bytes the runtime holds unwritten (Config::output_window).
    pub(crate) writer_backlog: usize,
    pub(crate) last_active: Instant,
    /// Since when part of a frame waits to be completed (Timeouts::frame).
    pub(crate) partial_since: Option<Instant>,
    /// `last_active` when the queues were last trimmed (Timeouts::trim).
    pub(crate) trimmed: Option<Instant>,
    /// Since when the peer has taken nothing of what we hold for it while
    /// reading is paused on its account (Timeouts::unread).
    pub(crate) unread_since: Option<Instant>,
    pub(crate) events: VecDeque<Event>,
    pub(crate) stats: ConnStats,
    /// Looked at per message (a runtime publishes it when it changes).
    pub(crate) last_keepalive_ack: Option<UTime>,
    pub(crate) side: Side,
    /// The user has seen this connection (connect dispatched, or accepted).
    pub(crate) known: bool,
    /// Whether the last handshake was WAITed (back off the maximum).
    pub(crate) waited: bool,
    /// Whether the latest READY resumed the session (a reconnect) rather
    /// than starting one.
    pub(crate) resumed: bool,
    /// An interceptor holds the next connect attempt (BLOCK).
    pub(crate) connect_held: bool,
    /// An accepted socket was promised to this connection (a Reuse
    /// decision) and has not arrived yet: Ceph's `replacing`. Other idents
    /// are told to wait, and the old socket is not read meanwhile.
    pub(crate) replacing: bool,
    /// The protocol it speaks, chosen once: msgr1 when its target or
    /// listener is a `v1:` address.
    pub(crate) protocol: Protocol,
    /// msgr1: the session was opened here (SEQ sent), the connector has
    /// not confirmed it yet (its in_seq), and it never carried a message.
    pub(crate) unconfirmed: bool,
    /// The last fault was the path's (a stall, a connect that timed out,
    /// an unreachable host): connects are bounded by Timeouts::probe, so
    /// that a SYN goes out each probe interval until the path heals.
    pub(crate) probing: bool,
    /// A lossy connector wrote messages and has read nothing since: the
    /// peer owes it an answer (a lossy session keeps no sent messages to
    /// count as unacknowledged), so its silence gets the path check.
    pub(crate) awaiting_answer: bool,
    pub(crate) session: Session,
    pub(crate) link: Option<Link>,
    pub(crate) peer: PeerInfo,
    /// Last of the per-message fields: its tag is read per message, what
    /// a handshake phase holds is not.
    pub(crate) state: State,
    /// The runtime's name for this connection (for the interceptor).
    pub(crate) id: u64,
    pub(crate) next_link: LinkId,
    pub(crate) me: MyAddrs,
    pub(crate) backoff: Duration,
    pub(crate) handshake_deadline: Option<Instant>,
    /// When the path was last checked in this silence (Timeouts::stall).
    pub(crate) path_checked: Option<Instant>,
    pub(crate) peer_socket: EntityAddr,
    /// The latest fault, kept until the next: a runtime publishes it with
    /// the state it led to, so that whoever sees that state sees why.
    /// Boxed: rare, and the connection's size is a connection's memory.
    pub(crate) last_fault: Option<Box<ProtocolError>>,
}

impl Conn {
    pub(crate) fn new(
        config: Arc<Config>,
        side: Side,
        peer: PeerInfo,
        me: MyAddrs,
        now: Instant,
    ) -> Conn {
        Conn {
            config,
            side,
            peer,
            me,
            session: Session::default(),
            state: State::Closed,
            link: None,
            next_link: 1,
            events: VecDeque::new(),
            backoff: Duration::ZERO,
            handshake_deadline: None,
            path_checked: None,
            last_active: now,
            known: false,
            waited: false,
            resumed: false,
            peer_socket: EntityAddr::default(),
            stats: ConnStats::default(),
            last_keepalive_ack: None,
            id: 0,
            writer_backlog: 0,
            connect_held: false,
            partial_since: None,
            replacing: false,
            trimmed: None,
            unread_since: None,
            protocol: Protocol::V2,
            unconfirmed: false,
            probing: false,
            awaiting_answer: false,
            last_fault: None,
        }
    }

    /// A connection (named `id` for the runtime and the interceptor) that
    /// will dial `target` (a peer of type `peer_type`).
    pub fn connect(
        config: Arc<Config>,
        target: EntityAddrvec,
        peer_type: EntityType,
        my_addrs: EntityAddrvec,
        now: Instant,
        id: u64,
    ) -> Conn {
        let policy = config.policies.get(peer_type);
        let target_addr = crate::peer::target_addr(&target, config.msgr2).unwrap_or_default();
        let peer = PeerInfo {
            entity_type: peer_type,
            addrs: target,
            target_addr,
            name: None,
            features: 0,
            policy,
            identity: None,
            proven: false,
            protected: false,
            global_seq_pushed: 0,
        };
        let me = MyAddrs::new(my_addrs);
        let protocol = match peer.target_addr.kind == EntityAddrType::LEGACY {
            true => Protocol::V1,
            false => Protocol::V2,
        };
        let mut c = Conn::new(config, Side::Connector, peer, me, now);
        c.protocol = protocol;
        c.id = id;
        c.known = true;
        c.request_socket(now);
        c
    }

    /// A connection (named `id`) for a socket we accepted from
    /// `peer_socket`, on which we are `me` (what we advertise on this
    /// socket, and what we listen on: see [`MyAddrs::on_socket`]). It may
    /// be closed at once (an interceptor's fault).
    pub fn accept(
        config: Arc<Config>,
        me: impl Into<MyAddrs>,
        peer_socket: SocketAddr,
        now: Instant,
        id: u64,
    ) -> Conn {
        Conn::accept_on(config, me.into(), peer_socket, now, id, Protocol::V2)
    }

    pub(crate) fn accept_on(
        config: Arc<Config>,
        me: MyAddrs,
        peer_socket: SocketAddr,
        now: Instant,
        id: u64,
        protocol: Protocol,
    ) -> Conn {
        let policy = config.policies.default_policy();
        let peer = PeerInfo {
            entity_type: EntityType::ANY,
            addrs: EntityAddrvec::default(),
            target_addr: EntityAddr::default(),
            name: None,
            features: 0,
            policy,
            identity: None,
            proven: false,
            protected: false,
            global_seq_pushed: 0,
        };
        let mut c = Conn::new(config, Side::Acceptor, peer, me, now);
        c.peer_socket = EntityAddr::msgr2(peer_socket, 0);
        c.id = id;
        c.protocol = protocol;
        c.notify_accepted();
        c.state = State::Accepting(Accepting::start(protocol));
        c.new_link(now);
        c
    }

    // ------------------------------------------------------------ queries

    /// Where the connection stands, coarsely (see [`Conn::phase`] for the
    /// handshake phase by Ceph's name).
    pub fn state(&self) -> ConnState {
        match self.state {
            State::NeedSocket { .. } => ConnState::NeedSocket,
            State::Backoff { .. } => ConnState::Backoff,
            State::Connecting(_) => ConnState::Connecting,
            State::Accepting(_) => ConnState::Accepting,
            State::Deciding(_) => ConnState::Deciding,
            State::ServerWait => ConnState::ServerWait,
            State::Ready => ConnState::Ready,
            State::Standby => ConnState::Standby,
            State::Closed => ConnState::Closed,
        }
    }

    /// The handshake phase, as Ceph names it (for logs and tests).
    pub fn phase(&self) -> &'static str {
        match &self.state {
            State::NeedSocket { .. } => "START_CONNECT",
            State::Backoff { .. } => "WAIT",
            State::Connecting(c) => c.name(),
            State::Accepting(a) => a.name(),
            State::Deciding(_) => "SESSION_ACCEPTING",
            State::ServerWait => "SERVER_WAIT",
            State::Ready => "READY",
            State::Standby => "STANDBY",
            State::Closed => "CLOSED",
        }
    }

    /// What we know of the peer: its name, addresses, features, identity.
    pub fn peer(&self) -> &PeerInfo {
        &self.peer
    }

    /// Who holds this connection's session (see [`crate::decide::Owner`]).
    pub fn owner(&self) -> crate::decide::Owner {
        self.peer.owner(self.protocol)
    }

    /// The protocol this connection speaks.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Whether this connection speaks msgr1.
    pub fn is_msgr1(&self) -> bool {
        self.protocol == Protocol::V1
    }

    /// The peer's entity name, once known (at connect, or from its ident).
    pub fn peer_name(&self) -> Option<EntityName> {
        self.peer.name
    }

    /// Our addresses as this connection announces them (learned from the
    /// peer when ours were unknown).
    pub fn my_addrs(&self) -> &EntityAddrvec {
        &self.me.addrs
    }

    /// The address a connection race compares (msgr2_addr).
    pub fn my_msgr2_addr(&self) -> EntityAddr {
        self.me.msgr2()
    }

    /// Who the peer authenticated as (on an accepted connection; a
    /// connector knows its server by the type it connected to).
    pub fn peer_identity(&self) -> Option<&msgr_auth::Identity> {
        self.peer.identity.as_ref()
    }

    /// The session: message sequence numbers, queued and unacknowledged
    /// messages.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Counts of what this connection did, for logs and counters.
    pub fn stats(&self) -> &ConnStats {
        &self.stats
    }

    /// Whether the latest READY resumed the session after a fault (a
    /// reconnect, either side) rather than starting a new one.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Which side opened the current socket.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The timestamp the peer's latest KEEPALIVE2_ACK carries: that of
    /// our KEEPALIVE2 it answers, echoed (Ceph's last_keepalive_ack).
    pub fn last_keepalive_ack(&self) -> Option<UTime> {
        self.last_keepalive_ack
    }

    /// The latest fault (its Event::Fault is queued when it happens).
    pub fn last_fault(&self) -> Option<&ProtocolError> {
        self.last_fault.as_deref()
    }

    /// The current socket's link id, if the connection has a socket.
    pub fn link_id(&self) -> Option<LinkId> {
        self.link.as_ref().map(|l| l.id)
    }

    /// How the current socket's frames are written (msgr2.0/2.1, crc or
    /// secure), once the banners were exchanged.
    pub fn wire_format(&self) -> Option<msgr_frames::WireFormat> {
        let link = self.link.as_ref()?;
        link.negotiated()?;
        Some(link.format())
    }

    /// The on-wire compression the current socket's frames use, if any.
    pub fn compression(&self) -> Option<msgr_frames::compression::Algorithm> {
        let link = self.link.as_ref()?;
        link.compression()
    }

    /// The next event for the driver (a message, READY, a fault, a request
    /// for a socket, ...), in order; None when none is queued.
    pub fn poll_event(&mut self) -> Option<Event> {
        match self.events.pop_front() {
            Some(e) => {
                msgr_frames::let_go_if_small(&mut self.events);
                Some(e)
            }
            None => self.poll_gate_event(),
        }
    }

    /// How many events are queued (an interceptor's socket shutdown that
    /// is due is queued first). A runtime that takes them in batches (to
    /// publish the state they come from before handling them) takes this
    /// many with [`Conn::poll_event`]; what it leaves stays queued, in
    /// order, ahead of later events.
    pub fn queued_events(&mut self) -> usize {
        if self.events.is_empty() {
            if let Some(e) = self.poll_gate_event() {
                self.events.push_back(e);
            }
        }
        self.events.len()
    }

    // ------------------------------------------------------------ user calls

    /// Queues a message; it is written when the session is READY (and a
    /// standby lossless connection reconnects for it).
    pub fn send(&mut self, msg: impl Into<Box<Message>>, now: Instant) {
        let msg = msg.into();
        if matches!(self.state, State::Closed) {
            return;
        }
        // Past the hard limit the connection is marked down (with a reset)
        // rather than hold more for a peer that does not read.
        let held = self.held_bytes();
        let max = self.config.queue_limits.hard;
        if held.saturating_add(Session::cost(msg.payload_len())) > max {
            return self.fail_closed(ProtocolError::QueueOverflow { held, max });
        }
        self.session.enqueue(msg);
        self.note_unread(now);
        self.wake(now);
    }

    /// Sends a KEEPALIVE2 stamped `stamp` (the sender's clock).
    pub fn send_keepalive(&mut self, stamp: UTime, now: Instant) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.session.keepalive_pending = Some(stamp);
        self.wake(now);
    }

    /// Closes the connection for good, dropping what is queued; no reset
    /// event (AsyncConnection::mark_down).
    pub fn mark_down(&mut self) {
        self.close(false);
    }

    /// Closed because a new connection from the same peer replaces this
    /// lossy one: a reset for the user.
    pub fn close_replaced(&mut self) {
        self.close(true);
    }

    /// Makes the connection lossy from now on (mark_disposable).
    pub fn mark_disposable(&mut self) {
        self.peer.policy.lossy = true;
    }

    // ------------------------------------------------------------ sockets

    /// The socket the driver opened after [`Event::Connect`] is connected,
    /// from `local` (its local end, when the transport knows it: a wildcard
    /// bind is advertised on this socket as that address). Returns whether
    /// the connection took it.
    pub fn socket_connected(&mut self, local: Option<SocketAddr>, now: Instant) -> bool {
        if !matches!(self.state, State::NeedSocket { .. }) {
            // Not waiting for one any more (an accepted socket was adopted
            // meanwhile, or the connection closed): the driver drops it.
            return false;
        }
        if let Some(l) = local {
            self.me.on_socket(l.ip());
        }
        self.session.global_seq = match self.config.global_seq.next() {
            Ok(g) => g,
            Err(e) => {
                self.fail_closed(e);
                return false;
            }
        };
        self.state = State::Connecting(Connecting::start(self.protocol));
        self.new_link(now);
        true
    }

    /// The connect after [`Event::Connect`] failed with `error`.
    pub fn socket_failed(&mut self, error: &std::io::Error, now: Instant) {
        if !matches!(self.state, State::NeedSocket { .. }) {
            return;
        }
        if error.kind() == std::io::ErrorKind::ConnectionRefused {
            self.events.push_back(Event::Refused);
        }
        self.fault(ProtocolError::transport(error), now);
    }

    /// The current socket (link `link`) failed with `error`, or hit EOF
    /// (`UnexpectedEof`). A close by the peer during our handshake says in
    /// which phase it refused us.
    pub fn socket_closed(&mut self, link: LinkId, error: &std::io::Error, now: Instant) {
        if self.link_id() != Some(link) || self.held_link_died() {
            return;
        }
        use std::io::ErrorKind::{BrokenPipe, ConnectionReset, UnexpectedEof};
        let e = match &self.state {
            State::Connecting(phase)
                if matches!(error.kind(), UnexpectedEof | ConnectionReset | BrokenPipe) =>
            {
                ProtocolError::ClosedInHandshake {
                    phase: phase.name(),
                    kind: error.kind(),
                }
            }
            _ => ProtocolError::transport(error),
        };
        self.fault(e, now);
    }

    /// Fails the current socket on purpose (fault injection).
    pub fn inject_fault(&mut self, now: Instant) {
        if self.link.is_some() {
            self.fault(ProtocolError::Injected, now);
        }
    }

    // ------------------------------------------------------------ input

    /// Processes every banner and frame complete in `input`, the bytes the
    /// driver read from the current socket and keeps in its own buffer:
    /// what is taken leaves it, a partial frame stays for the next read.
    /// When the socket is dropped meanwhile (a fault, a replacement), what
    /// is left of its bytes is dropped with it.
    pub fn handle_input(&mut self, input: &mut BytesMut, now: Instant) {
        let link = self.link_id();
        let mut progressed = false;
        loop {
            let next = match self.link.as_mut().map(|l| l.poll_input(input)) {
                None => break,
                Some(Ok(None)) => break,
                Some(Ok(Some(i))) => i,
                Some(Err(e)) => {
                    self.fault(e, now);
                    break;
                }
            };
            self.last_active = now;
            self.awaiting_answer = false;
            progressed = true;
            if let Err(e) = self.on_input(next, now) {
                self.fault(e, now);
                break;
            }
            if self.link_id() != link {
                break;
            }
        }
        if self.link_id() != link || link.is_none() {
            input.clear();
            return;
        }
        self.after_input(input, progressed, now);
    }

    pub(crate) fn on_input(&mut self, input: Input, now: Instant) -> Result<(), ProtocolError> {
        // READY, every message's state, is looked at in place: taking the
        // state out and putting it back moves all of it (a handshake
        // phase's size), lines a busy server would otherwise touch per
        // message for nothing.
        if matches!(self.state, State::Ready) {
            return self.on_ready_input(input, now);
        }
        let state = std::mem::replace(&mut self.state, State::Closed);
        match state {
            State::Connecting(phase) => {
                // A failed phase consumed itself: leave a connecting state
                // behind so fault() applies the connector's rules (not the
                // Closed placeholder, which fault() would take for a
                // finished connection and leave its socket open).
                let protocol = self.protocol;
                let step = self
                    .with_cx(|cx| phase.on_input(input, cx))
                    .inspect_err(|_| self.state = State::Connecting(Connecting::start(protocol)))?;
                match step {
                    ConnectStep::Next(next) => {
                        if next.sent_ident() {
                            self.stats.client_idents = self.stats.client_idents.saturating_add(1);
                        }
                        if next.sent_reconnect() {
                            self.stats.reconnects_sent =
                                self.stats.reconnects_sent.saturating_add(1);
                        }
                        self.state = State::Connecting(next);
                    }
                    ConnectStep::Ready { reconnected } => {
                        self.resumed = reconnected;
                        if reconnected {
                            self.stats.reconnects = self.stats.reconnects.saturating_add(1);
                        }
                        self.backoff = Duration::ZERO;
                        // Dispatched before the first write of the session
                        // (crimson's to_new_sid), so a fault there follows it.
                        self.events.push_back(Event::Connected);
                        self.become_ready(now)?;
                    }
                    ConnectStep::Wait => {
                        // Drop this socket and back off the maximum: the
                        // peer's own connection to us will win.
                        self.waited = true;
                        self.state = State::Connecting(Connecting::start(self.protocol));
                        return Err(ProtocolError::Wait);
                    }
                }
            }
            State::Accepting(phase) => {
                let peer_socket = self.peer_socket;
                let protocol = self.protocol;
                // As above: a failed acceptor phase leaves an accepting
                // state, which fault() closes.
                let step = self
                    .with_cx(|cx| phase.on_input(input, cx, peer_socket))
                    .inspect_err(|_| self.state = State::Accepting(Accepting::start(protocol)))?;
                match step {
                    AcceptStep::Next(next) => self.state = State::Accepting(next),
                    AcceptStep::Ready => self.ready_v1(now)?,
                    AcceptStep::Ident(req) => self.on_ident(req).inspect_err(|_| {
                        self.state = State::Accepting(Accepting::start(protocol))
                    })?,
                }
            }
            other => {
                // Waiting for a socket, a decision or the peer's close:
                // nothing is expected.
                let got = input.wire();
                self.state = other;
                return Err(ProtocolError::UnexpectedFrame {
                    state: self.phase(),
                    expected: &[],
                    got,
                });
            }
        }
        Ok(())
    }

    pub(crate) fn with_cx<R>(&mut self, f: impl FnOnce(&mut Cx<'_>) -> R) -> R {
        let mut cx = Cx {
            config: &self.config,
            link: self.link.as_mut().expect("handshakes run on a link"),
            session: &mut self.session,
            peer: &mut self.peer,
            me: &mut self.me,
            events: &mut self.events,
        };
        f(&mut cx)
    }

    // ------------------------------------------------------------ READY

    pub(crate) fn become_ready(&mut self, now: Instant) -> Result<(), ProtocolError> {
        self.state = State::Ready;
        // The deadline was set `timeouts.connect` after the start (none: a
        // handshake not timed here, 0).
        let start = self
            .handshake_deadline
            .take()
            .and_then(|d| d.checked_sub(self.config.timeouts.connect));
        let took = start.map_or(0, |s| now.saturating_duration_since(s).as_nanos());
        self.stats.last_handshake_ns = u64::try_from(took).unwrap_or(u64::MAX);
        self.waited = false;
        self.last_active = now;
        self.unread_since = None;
        let mut limits = self.config.frame_limits;
        if let Some(b) = self.budget() {
            // A compressed message must fit the budget once decompressed.
            let b = usize::try_from(b).unwrap_or(usize::MAX);
            limits.max_decompressed_len = limits.max_decompressed_len.min(b);
        }
        if let Some(l) = self.link.as_mut() {
            l.set_limits(limits);
        }
        self.flush()
    }

    /// Writes what the session has pending, when READY.
    pub(crate) fn flush(&mut self) -> Result<(), ProtocolError> {
        if !matches!(self.state, State::Ready) {
            return Ok(());
        }
        let lossy = self.peer.policy.lossy;
        let room = (self.config.output_window).map(|window| crate::session::Room {
            window,
            left: window.saturating_sub(self.writer_backlog),
        });
        if let Some(link) = self.link.as_mut() {
            let n = self.session.write_pending(link, lossy, room)?;
            if n > 0 && lossy && self.side == Side::Connector {
                self.awaiting_answer = true;
            }
            self.stats.messages_out = self.stats.messages_out.saturating_add(n as u64);
        }
        Ok(())
    }

    /// Something to send: write it now, or get a socket for it.
    pub(crate) fn wake(&mut self, now: Instant) {
        match self.state {
            State::Ready => {
                if let Err(e) = self.flush() {
                    self.fault(e, now);
                }
            }
            State::Standby if !self.peer.policy.server => {
                if self.has_session() && !self.next_connect_seq() {
                    return;
                }
                self.request_socket(now);
            }
            _ => {}
        }
    }

    pub(crate) fn on_ready_input(
        &mut self,
        input: Input,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        match input {
            Input::V2(i) => self.on_ready_v2(i, now),
            Input::V1(i) => self.on_ready_v1(i, now),
        }
    }

    /// Writes any ACK owed for received messages (the driver calls this
    /// once it has drained a batch of input).
    pub fn flush_acks(&mut self, now: Instant) {
        if matches!(self.state, State::Ready) && self.session.ack_left > 0 {
            if let Err(e) = self.flush() {
                self.fault(e, now);
            }
        }
    }

    // ------------------------------------------------------------ faults

    pub(crate) fn link_send(&mut self, frame: &ControlFrame) -> Result<(), ProtocolError> {
        match self.link.as_mut() {
            Some(l) => l.send_control(frame),
            None => Err(ProtocolError::Transport {
                kind: std::io::ErrorKind::NotConnected,
                message: "no socket".into(),
            }),
        }
    }

    pub(crate) fn new_link(&mut self, now: Instant) {
        self.drop_link();
        let id = self.next_link;
        self.next_link = self.next_link.saturating_add(1);
        self.handshake_deadline = Some(later(now, self.config.timeouts.connect));
        self.last_active = now;
        self.awaiting_answer = false;
        let opened = match self.protocol {
            Protocol::V2 => self.open_link_v2(id),
            Protocol::V1 => self.open_link_v1(id),
        };
        if let Err(e) = opened {
            self.fault(e, now);
        }
    }

    pub(crate) fn request_socket(&mut self, now: Instant) {
        self.drop_link();
        self.state = State::NeedSocket { since: now };
        self.side = Side::Connector;
        self.stats.connect_attempts = self.stats.connect_attempts.saturating_add(1);
        if self.peer.target_addr.addr.is_none() {
            return self.close(true);
        }
        if self.intercept_connect(now) {
            self.emit_connect();
        }
    }

    /// Closes for good; `reset` dispatches a reset event (if the user knew
    /// the connection).
    pub(crate) fn close(&mut self, reset: bool) {
        if matches!(self.state, State::Closed) && self.link.is_none() {
            return;
        }
        self.drop_link();
        self.session.discard_queue();
        self.state = State::Closed;
        if reset && self.known {
            self.events.push_back(Event::Reset);
        }
        self.events.push_back(Event::Closed);
    }

    /// ProtocolV2::_fault, with crimson's corrections (see the module doc of
    /// session.rs and §7/§12 of the research note).
    pub(crate) fn fault(&mut self, err: ProtocolError, now: Instant) {
        let path_failed = err.is_path_failure();
        self.probing = path_failed;
        self.report_fault(err);
        let policy = self.peer.policy;
        let connecting = matches!(
            self.state,
            State::NeedSocket { .. } | State::Backoff { .. } | State::Connecting(_)
        );
        // The session opened here and awaits the connector's confirmation
        // (Accepting::session_opened).
        let seq_pending = matches!(&self.state, State::Accepting(a) if a.session_opened());
        match self.state {
            State::Closed => return,
            _ if seq_pending => {}
            // An accepted socket that never became a session: just close.
            State::Accepting(_) | State::Deciding(_) | State::ServerWait => {
                return self.close(false)
            }
            _ => {}
        }
        if policy.lossy && !connecting {
            return self.close(true);
        }
        self.drop_link();
        self.session.requeue_sent();
        let was_established = matches!(self.state, State::Ready | State::Standby) || seq_pending;
        if policy.server
            || (policy.standby
                && !self.session.has_output()
                && self.session.unacked() == 0
                && !self.waited)
        {
            if policy.lossy {
                return self.close(true);
            }
            self.state = State::Standby;
            // The standby deadline (Timeouts::standby) runs from here.
            self.last_active = now;
            return;
        }
        let resumes = self.session_goes_on(was_established);
        if resumes && !policy.lossy && !self.next_connect_seq() {
            return;
        }
        if was_established {
            self.backoff = Duration::ZERO;
            self.request_socket(now);
        } else {
            let t = &self.config.timeouts;
            self.backoff = if self.waited {
                t.backoff_max
            } else if self.backoff.is_zero() {
                t.backoff_initial
            } else {
                self.backoff.saturating_mul(2).min(t.backoff_max)
            };
            let wait = match path_failed && !self.waited {
                true => self.path_backoff(self.backoff, now),
                false => self.backoff,
            };
            self.state = State::Backoff {
                until: later(now, wait),
            };
        }
    }
}

impl Conn {
    /// Whether a session was established (msgr2's sessions have a server
    /// cookie; an msgr1 connector's connect_seq is set by its first READY).
    pub(crate) fn has_session(&self) -> bool {
        match self.protocol {
            Protocol::V2 => self.session.server_cookie != 0,
            Protocol::V1 => self.session.connect_seq > 0,
        }
    }

    /// Whether a fault's reconnect resumes the session with the next
    /// connect_seq: msgr2's whenever there is one; msgr1's only once it
    /// was established (a connecting msgr1 session keeps its own).
    pub(crate) fn session_goes_on(&self, was_established: bool) -> bool {
        match self.protocol {
            Protocol::V2 => self.has_session(),
            Protocol::V1 => self.has_session() && was_established,
        }
    }

    /// The next connect_seq of a session (a reconnect). A session whose
    /// connect_seq a peer took to its limit closes (with a reset) rather
    /// than wrap; returns whether it goes on.
    pub(crate) fn next_connect_seq(&mut self) -> bool {
        match self.session.connect_seq.checked_add(1) {
            Some(n) => {
                self.session.connect_seq = n;
                true
            }
            None => {
                self.fail_closed(ProtocolError::CounterOverflow {
                    counter: "connect_seq",
                });
                false
            }
        }
    }

    /// A fault that ends the connection whatever its policy: reported,
    /// then closed with a reset (what it held for the peer is lost).
    pub(crate) fn fail_closed(&mut self, e: ProtocolError) {
        self.report_fault(e);
        self.close(true);
    }

    /// Counts fault `e`, keeps it as the last, and queues its event.
    pub(crate) fn report_fault(&mut self, e: ProtocolError) {
        self.stats.faults = self.stats.faults.saturating_add(1);
        self.last_fault = Some(Box::new(e.clone()));
        self.events.push_back(Event::Fault(e));
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("side", &self.side)
            .field("phase", &self.phase())
            .field("peer", &self.peer.name)
            .field("target", &self.peer.target_addr)
            .finish()
    }
}

#[cfg(test)]
mod size {
    /// Every connection holds one, idle or not (Conn, its Link): boxing
    /// what few connections use (a secure-mode cipher, an interceptor's
    /// held state) keeps it so.
    #[test]
    fn a_connection_is_small() {
        assert!(std::mem::size_of::<super::Conn>() <= 1536);
        assert!(std::mem::size_of::<crate::link::Link>() <= 640);
    }
}
