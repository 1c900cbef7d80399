//! msgr1's two handshakes (ProtocolV1; docs/research/msgr1-wire.md §1, §2,
//! §4), as state types like msgr2's.
//!
//! Connector: `Hello → Reply ⟲ (CHALLENGE_AUTHORIZER, RETRY_SESSION,
//! RETRY_GLOBAL, RESETSESSION) → READY | SEQ`, or WAIT.
//! Acceptor: `Hello → Connect ⟲ (BADPROTOVER, FEATURES, BADAUTHORIZER,
//! CHALLENGE_AUTHORIZER)`, which ends in a request for the messenger to
//! decide on (a new session, a replacement, a retry, a reset, WAIT);
//! after SEQ, `Seq`.
//!
//! Authorizers go through the same [`ClientAuth`] / [`ServerAuth`] as
//! msgr2's AUTH_REQUEST: the CONNECT's authorizer is a request's payload,
//! CHALLENGE_AUTHORIZER a server's `More`, and the authorizer of the final
//! reply its `Done`. A connector sends none to a monitor (clients
//! authenticate to monitors with MAuth messages over an open session).

use bytes::Bytes;
use msgr_auth::{AuthPeer, ClientAuth, ConMode, ServerAuth, ServerStep};
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityType};
use msgr_frames::control::auth_method;
use msgr_frames::v1::{Connect, ConnectReply, ServerHello, Tag, FLAG_LOSSY};

use super::link::Input;
use crate::cx::{auth_round, Cx};
use crate::error::{Claim, ProtocolError, Wire};
use crate::features;
pub(crate) use crate::ident::ConnectRequest;
use crate::intercept::Point1;

/// `CEPH_OSD_PROTOCOL`, `CEPH_MON_PROTOCOL`: between two daemons of a type.
const OSD_PROTOCOL: u32 = 10;
const MON_PROTOCOL: u32 = 13;
/// `CEPH_OSDC_PROTOCOL`, `CEPH_MDSC_PROTOCOL`, `CEPH_MONC_PROTOCOL`: a
/// client (any other type) with a daemon.
const OSDC_PROTOCOL: u32 = 24;
const MDSC_PROTOCOL: u32 = 32;
const MONC_PROTOCOL: u32 = 15;

/// The protocol version two entity types speak
/// (AsyncMessenger::get_proto_version): the daemon's type decides, the
/// peer's for a connector and our own for an acceptor.
pub(crate) fn proto_version(me: EntityType, peer: EntityType, connector: bool) -> u32 {
    if me == peer {
        return match me {
            EntityType::OSD => OSD_PROTOCOL,
            EntityType::MON => MON_PROTOCOL,
            _ => 0,
        };
    }
    match if connector { peer } else { me } {
        EntityType::OSD => OSDC_PROTOCOL,
        EntityType::MDS => MDSC_PROTOCOL,
        EntityType::MON => MONC_PROTOCOL,
        _ => 0,
    }
}

fn unexpected(state: &'static str, expected: &'static [Wire], got: Wire) -> ProtocolError {
    ProtocolError::UnexpectedFrame {
        state,
        expected,
        got,
    }
}

fn u32_of(v: u64, counter: &'static str) -> Result<u32, ProtocolError> {
    u32::try_from(v).map_err(|_| ProtocolError::CounterOverflow { counter })
}

// ------------------------------------------------------------ connector

/// msgr1's connector phases.
pub(crate) enum Connecting {
    /// Our banner is out; awaiting the acceptor's banner and addresses.
    Hello,
    /// A CONNECT is out; awaiting the verdict. `auth` (with the method
    /// of its authorizer) answers a challenge and checks the final
    /// authorizer reply; none: no authorizer was sent.
    Reply {
        auth: Option<(Box<dyn ClientAuth>, u32)>,
    },
}

pub(crate) enum ConnectStep {
    Next(Connecting),
    Ready { reconnected: bool },
    Wait,
}

const EXPECT_HELLO: &[Wire] = &[Wire::Hello1];
const EXPECT_REPLY: &[Wire] = &[
    Wire::Reply1(Tag::Ready),
    Wire::Reply1(Tag::Seq),
    Wire::Reply1(Tag::Wait),
    Wire::Reply1(Tag::RetrySession),
    Wire::Reply1(Tag::RetryGlobal),
    Wire::Reply1(Tag::ResetSession),
    Wire::Reply1(Tag::ChallengeAuthorizer),
];

impl Connecting {
    pub fn name(&self) -> &'static str {
        match self {
            Connecting::Hello => "CONNECTING_WAIT_BANNER_AND_IDENTIFY",
            Connecting::Reply { .. } => "CONNECTING_SEND_CONNECT_MSG",
        }
    }

    pub fn on_input(self, input: Input, cx: &mut Cx<'_>) -> Result<ConnectStep, ProtocolError> {
        let state = self.name();
        match (self, input) {
            (Connecting::Hello, Input::ServerHello(h)) => on_server_hello(cx, h),
            (
                Connecting::Reply { auth },
                Input::Reply {
                    reply,
                    authorizer,
                    in_seq,
                },
            ) => {
                auth_round(cx)?;
                on_reply(cx, auth, reply, &authorizer, in_seq)
            }
            (Connecting::Hello, other) => Err(unexpected(state, EXPECT_HELLO, other.wire())),
            (Connecting::Reply { .. }, other) => Err(unexpected(state, EXPECT_REPLY, other.wire())),
        }
    }
}

/// The acceptor's hello (handle_server_banner_and_identify): it must be
/// the address we dialled (or a blank one with its port and nonce); we
/// may learn our IP from what it saw; our address, then a CONNECT.
fn on_server_hello(cx: &mut Cx<'_>, h: ServerHello) -> Result<ConnectStep, ProtocolError> {
    let target = cx.peer.target_addr;
    let same = h.addr.addr == target.addr && h.addr.nonce == target.nonce;
    let blank_same =
        h.addr.is_blank_ip() && h.addr.port() == target.port() && h.addr.nonce == target.nonce;
    if !same && !blank_same {
        return Err(ProtocolError::WrongServer);
    }
    if cx.config.learn_addr_from_peer {
        if let Some(a) = cx.me.learn(&h.peer_addr) {
            cx.events.push_back(crate::Event::LearnedAddr(a));
        }
    }
    let mine = my_legacy_addr(&cx.me.addrs);
    cx.link.output.put_slice(&mine.encode_legacy());
    // A peer of a type we do not know gets a first CONNECT without an
    // authorizer (there is no ticket for "any"), to learn its type.
    let known = cx.peer.entity_type != EntityType::ANY;
    let auth = (known && wants_authorizer(cx)).then(|| cx.config.auth.client(&cx.config.my_name));
    send_connect(cx, auth)
}

/// The entity type whose daemons answer with protocol version `v` (the
/// acceptor's own type picks it, get_proto_version).
fn type_of_version(v: u32) -> Option<EntityType> {
    match v {
        OSDC_PROTOCOL => Some(EntityType::OSD),
        MONC_PROTOCOL => Some(EntityType::MON),
        MDSC_PROTOCOL => Some(EntityType::MDS),
        _ => None,
    }
}

/// Our address as msgr1 gives it: the legacy entry of our addresses, or
/// the first one as legacy (a client's blank address with its nonce).
pub(crate) fn my_legacy_addr(addrs: &EntityAddrvec) -> EntityAddr {
    let mut a = addrs
        .legacy()
        .or(addrs.0.first())
        .copied()
        .unwrap_or_default();
    a.kind = EntityAddrType::LEGACY;
    a
}

/// No authorizer to a monitor unless we are one (send_connect_message).
fn wants_authorizer(cx: &Cx<'_>) -> bool {
    cx.peer.entity_type != EntityType::MON || cx.config.my_name.kind == EntityType::MON
}

fn auth_peer(cx: &Cx<'_>) -> AuthPeer {
    AuthPeer {
        entity_type: cx.peer.entity_type,
    }
}

/// A CONNECT with `authorizer` (of `method`; 0: none).
fn send_connect_with(cx: &mut Cx<'_>, method: u32, authorizer: &[u8]) -> Result<(), ProtocolError> {
    let c = Connect {
        features: cx.peer.policy.features_supported,
        host_type: u32::from(cx.config.my_name.kind.0),
        global_seq: u32_of(cx.session.global_seq, "global_seq")?,
        connect_seq: u32_of(cx.session.connect_seq, "connect_seq")?,
        protocol_version: proto_version(cx.config.my_name.kind, cx.peer.entity_type, true),
        authorizer_protocol: method,
        authorizer_len: u32::try_from(authorizer.len()).unwrap_or(u32::MAX),
        flags: if cx.peer.policy.lossy { FLAG_LOSSY } else { 0 },
    };
    cx.link.write1(Point1::Connect, |_, out| {
        out.put_slice(&c.encode());
        out.put_slice(authorizer);
    })
}

/// A CONNECT with a fresh authorizer from `auth` (each CONNECT of a
/// socket has its own, as Ceph builds a new one per attempt).
fn send_connect(
    cx: &mut Cx<'_>,
    auth: Option<Box<dyn ClientAuth>>,
) -> Result<ConnectStep, ProtocolError> {
    let peer = auth_peer(cx);
    let auth = match auth {
        Some(mut a) => {
            let r = a.request(&peer, &[])?;
            send_connect_with(cx, r.method, &r.payload)?;
            Some((a, r.method))
        }
        None => {
            send_connect_with(cx, 0, &[])?;
            None
        }
    };
    Ok(ConnectStep::Next(Connecting::Reply { auth }))
}

/// The acceptor's verdict (handle_connect_reply_1/_2; msgr1-wire.md §4.1).
fn on_reply(
    cx: &mut Cx<'_>,
    mut auth: Option<(Box<dyn ClientAuth>, u32)>,
    reply: ConnectReply,
    authorizer: &[u8],
    in_seq: Option<u64>,
) -> Result<ConnectStep, ProtocolError> {
    let ours = cx.peer.policy.features_supported;
    match reply.tag {
        Tag::ChallengeAuthorizer => {
            let (a, method) =
                auth.as_mut()
                    .ok_or(ProtocolError::Auth(msgr_auth::AuthError::Malformed(
                        "a challenge to a CONNECT without an authorizer".into(),
                    )))?;
            let answer = a.reply_more(authorizer)?;
            let method = *method;
            send_connect_with(cx, method, &answer)?;
            return Ok(ConnectStep::Next(Connecting::Reply { auth }));
        }
        Tag::Features => {
            return Err(ProtocolError::FeaturesRefused {
                missing: reply.features & !ours,
            })
        }
        Tag::BadProtoVer if cx.peer.entity_type == EntityType::ANY => {
            // msgr1 has no HELLO: a connector that did not know the peer's
            // type learns it from the version the refusal gives, and asks
            // again as that type would be asked (ms_connect to an address
            // alone, e.g. `msgr ping v1:IP:PORT`).
            if let Some(t) = type_of_version(reply.protocol_version) {
                cx.peer.entity_type = t;
                cx.peer.policy = cx.config.policies.get(t);
                let auth = wants_authorizer(cx).then(|| cx.config.auth.client(&cx.config.my_name));
                return send_connect(cx, auth);
            }
            return Err(ProtocolError::ProtocolVersion {
                ours: 0,
                theirs: reply.protocol_version,
            });
        }
        Tag::BadProtoVer => {
            return Err(ProtocolError::ProtocolVersion {
                ours: proto_version(cx.config.my_name.kind, cx.peer.entity_type, true),
                theirs: reply.protocol_version,
            })
        }
        Tag::BadAuthorizer => {
            return Err(ProtocolError::Auth(msgr_auth::AuthError::Denied(
                "the peer refused our authorizer (BADAUTHORIZER)".into(),
            )))
        }
        Tag::ResetSession => {
            // session_reset: what was queued is lost; numbering restarts.
            cx.session.reset();
            cx.events.push_back(crate::Event::RemoteReset);
            return send_connect(cx, auth.map(|a| a.0));
        }
        Tag::RetryGlobal => {
            cx.session.global_seq = cx
                .config
                .global_seq
                .raise(u64::from(reply.global_seq), &mut cx.peer.global_seq_pushed)?;
            return send_connect(cx, auth.map(|a| a.0));
        }
        Tag::RetrySession => {
            let got = u64::from(reply.connect_seq);
            if got <= cx.session.connect_seq {
                return Err(ProtocolError::RetryBackwards {
                    ours: cx.session.connect_seq,
                    got,
                });
            }
            cx.session.connect_seq = got;
            return send_connect(cx, auth.map(|a| a.0));
        }
        Tag::Wait => return Ok(ConnectStep::Wait),
        _ => {}
    }
    // READY or SEQ.
    let mut required = cx.peer.policy.features_required;
    let mut keyed = false;
    if let Some((mut a, _)) = auth {
        let outcome = a.done(0, ConMode::CRC, authorizer)?;
        keyed = !outcome.session_key.is_empty();
        if cx.peer.identity.is_none() {
            cx.peer.identity = outcome.peer;
        }
        if let Some(l) = cx.link.v1_mut() {
            if cx.config.sign_messages {
                l.set_key(outcome.session_key);
            }
        }
    }
    if keyed {
        required |= signing_required(cx);
    }
    let missing = required & !(reply.features & ours);
    if missing != 0 {
        return Err(ProtocolError::MissingFeatures { missing });
    }
    // A keyed authorizer's reply proved the server's type: only that
    // service's key holders can answer it.
    cx.peer.proven = keyed;
    if let Some(peer_in_seq) = in_seq {
        // The acceptor got up to its in_seq: what we requeued up to there
        // is dropped; ours goes back.
        cx.session.resume_from(peer_in_seq);
        let in_seq = cx.session.in_seq;
        cx.link
            .write1(Point1::Seq, |_, out| out.put_slice(&in_seq.to_le_bytes()))?;
    }
    let reconnected = cx.session.connect_seq > 0;
    cx.session.peer_global_seq = u64::from(reply.global_seq);
    cx.session.connect_seq = u64::from(reply.connect_seq);
    // The acceptor decides whether the session is lossy.
    cx.peer.policy.lossy = reply.flags & FLAG_LOSSY != 0;
    cx.peer.features = reply.features & ours;
    if let Some(l) = cx.link.v1_mut() {
        l.open_stream(cx.peer.features);
        cx.peer.protected = l.signs();
    }
    Ok(ConnectStep::Ready { reconnected })
}

// ------------------------------------------------------------ acceptor

/// msgr1's acceptor phases.
pub(crate) enum Accepting {
    /// Our banner and addresses are out; awaiting the connector's.
    Hello,
    /// Awaiting a CONNECT. `auth` is set once an authorizer was
    /// challenged (the next CONNECT answers it).
    Connect { auth: Option<Box<dyn ServerAuth>> },
    /// SEQ is out; awaiting the connector's in_seq.
    Seq,
}

pub(crate) enum AcceptStep {
    Next(Accepting),
    Ident(ConnectRequest),
    /// The connector's in_seq arrived: the session is open.
    Ready,
}

const EXPECT_CONNECT: &[Wire] = &[Wire::Connect1];
const EXPECT_SEQ: &[Wire] = &[Wire::Seq1];

impl Accepting {
    pub fn name(&self) -> &'static str {
        match self {
            Accepting::Hello => "ACCEPTING",
            Accepting::Connect { .. } => "ACCEPTING_WAIT_CONNECT_MSG_AUTH",
            Accepting::Seq => "ACCEPTING_HANDLED_CONNECT_MSG",
        }
    }

    /// `peer_socket`: the connector's address as our socket sees it.
    pub fn on_input(
        self,
        input: Input,
        cx: &mut Cx<'_>,
        peer_socket: EntityAddr,
    ) -> Result<AcceptStep, ProtocolError> {
        let state = self.name();
        match (self, input) {
            (Accepting::Hello, Input::ClientHello(mut addr)) => {
                // handle_client_banner: a blank IP is the socket's, with
                // the port the connector claimed.
                if addr.is_blank_ip() {
                    addr.addr = peer_socket
                        .addr
                        .map(|s| std::net::SocketAddr::new(s.ip(), addr.port()));
                }
                addr.kind = EntityAddrType::LEGACY;
                cx.peer.addrs = EntityAddrvec::single(addr);
                cx.peer.target_addr = addr;
                Ok(AcceptStep::Next(Accepting::Connect { auth: None }))
            }
            (
                Accepting::Connect { auth },
                Input::Connect {
                    connect,
                    authorizer,
                },
            ) => {
                auth_round(cx)?;
                on_connect(cx, auth, connect, &authorizer)
            }
            (Accepting::Seq, Input::Seq(peer_in_seq)) => {
                cx.session.resume_from(peer_in_seq);
                Ok(AcceptStep::Ready)
            }
            (Accepting::Hello, other) => Err(unexpected(state, EXPECT_HELLO, other.wire())),
            (Accepting::Connect { .. }, other) => {
                Err(unexpected(state, EXPECT_CONNECT, other.wire()))
            }
            (Accepting::Seq, other) => Err(unexpected(state, EXPECT_SEQ, other.wire())),
        }
    }
}

/// A reply that refuses or redirects this CONNECT (send_connect_message_reply):
/// features and protocol version as the final reply would give them.
pub(crate) fn send_reply(
    cx: &mut Cx<'_>,
    tag: Tag,
    connect: &Connect,
    global_seq: u32,
    connect_seq: u32,
    authorizer: &[u8],
) -> Result<(), ProtocolError> {
    let policy = &cx.peer.policy;
    let mut required = policy.features_required;
    if cx.config.require_signatures {
        required |= features::MSG_AUTH;
    }
    if keyed(connect) {
        required |= signing_required(cx);
    }
    let reply = ConnectReply {
        tag,
        features: (connect.features & policy.features_supported) | required,
        global_seq,
        connect_seq,
        protocol_version: proto_version(cx.config.my_name.kind, cx.peer.entity_type, false),
        authorizer_len: u32::try_from(authorizer.len()).unwrap_or(u32::MAX),
        flags: 0,
    };
    cx.link.write1(Point1::Reply(tag), |_, out| {
        out.put_slice(&reply.encode());
        out.put_slice(authorizer);
    })?;
    if let Some(l) = cx.link.v1_mut() {
        l.expect_connect();
    }
    Ok(())
}

fn again(auth: Option<Box<dyn ServerAuth>>) -> Result<AcceptStep, ProtocolError> {
    Ok(AcceptStep::Next(Accepting::Connect { auth }))
}

/// handle_connect_message_2's checks before any session is looked up:
/// protocol version, features, the authorizer.
fn on_connect(
    cx: &mut Cx<'_>,
    auth: Option<Box<dyn ServerAuth>>,
    connect: Connect,
    authorizer: &[u8],
) -> Result<AcceptStep, ProtocolError> {
    let peer_type =
        u8::try_from(connect.host_type).map_err(|_| ProtocolError::UnexpectedFrame {
            state: "ACCEPTING_WAIT_CONNECT_MSG_AUTH",
            expected: EXPECT_CONNECT,
            got: Wire::Connect1,
        })?;
    cx.peer.entity_type = EntityType(peer_type);
    cx.peer.policy = cx.config.policies.get(cx.peer.entity_type);
    let ours = proto_version(cx.config.my_name.kind, cx.peer.entity_type, false);
    if connect.protocol_version != ours {
        send_reply(cx, Tag::BadProtoVer, &connect, 0, 0, &[])?;
        return again(auth);
    }
    let mut required = cx.peer.policy.features_required | features::MSGR1_REQUIRED;
    // Signatures need a session key: a peer that presents an authorizer
    // of a keyed method (cephx) must sign (Ceph asks it of cephx peers).
    if keyed(&connect) {
        required |= signing_required(cx);
        if cx.config.require_signatures {
            required |= features::MSG_AUTH;
        }
    }
    if required & !connect.features != 0 {
        send_reply(cx, Tag::Features, &connect, 0, 0, &[])?;
        return again(auth);
    }
    let challenged = auth.is_some();
    let mut auth = auth.unwrap_or_else(|| cx.config.auth.server());
    let peer = AuthPeer {
        entity_type: cx.peer.entity_type,
    };
    let authorizer_reply = if connect.authorizer_len == 0 && tolerates_no_authorizer(cx, &*auth) {
        // Nobody proved anything: the peer is who its CONNECT says, as
        // with auth none, and never the holder of a proven session.
        cx.peer.identity = Some(unproven(cx, &*auth));
        cx.peer.proven = false;
        cx.peer.protected = false;
        Bytes::new()
    } else {
        let method = match connect.authorizer_protocol {
            0 => auth_method::NONE,
            m => m,
        };
        match auth.handle(&peer, method, ConMode::CRC, challenged, authorizer) {
            Ok(ServerStep::More(challenge)) => {
                send_reply(cx, Tag::ChallengeAuthorizer, &connect, 0, 0, &challenge)?;
                return again(Some(auth));
            }
            Ok(ServerStep::Done { payload, outcome }) => {
                if let Some(who) = outcome.peer.as_ref().filter(|w| w.proven) {
                    if !who.matches_type(cx.peer.entity_type) {
                        // The CONNECT's host type picks the policy: a
                        // client's ticket does not buy an OSD's.
                        let who = Box::new(who.clone());
                        send_reply(cx, Tag::BadAuthorizer, &connect, 0, 0, &[])?;
                        cx.link.linger = true;
                        return Err(ProtocolError::Impersonation {
                            authenticated: who,
                            claim: Claim::ConnectType(cx.peer.entity_type),
                        });
                    }
                }
                let signs = cx.config.sign_messages
                    && !outcome.session_key.is_empty()
                    && features::has(
                        connect.features & cx.peer.policy.features_supported,
                        features::MSG_AUTH,
                    );
                cx.peer.proven = outcome.peer.as_ref().is_some_and(|w| w.proven);
                cx.peer.protected = signs;
                cx.peer.identity = outcome.peer;
                if let Some(l) = cx.link.v1_mut() {
                    if cx.config.sign_messages {
                        l.set_key(outcome.session_key);
                    }
                }
                payload
            }
            Err(_) => {
                send_reply(cx, Tag::BadAuthorizer, &connect, 0, 0, &[])?;
                return again(None);
            }
        }
    };
    Ok(AcceptStep::Ident(ConnectRequest {
        addr: cx.peer.target_addr,
        connect,
        authorizer_reply,
    }))
}

/// Whether a CONNECT's authorizer is of a keyed method (cephx).
fn keyed(connect: &Connect) -> bool {
    !matches!(connect.authorizer_protocol, 0 | auth_method::NONE)
}

/// What a keyed peer must offer for its messages' signatures
/// (`Config::cephx_require_version`): MSG_AUTH and CEPHX_V2 at version 2,
/// while we sign; nothing more otherwise.
fn signing_required(cx: &Cx<'_>) -> u64 {
    match cx.config.sign_messages && cx.config.cephx_require_version >= 2 {
        true => features::MSG_AUTH | features::CEPHX_V2,
        false => 0,
    }
}

/// Who a peer let in without an authorizer is: its CONNECT's host type
/// with no name and no global id, unproven, with every cap where auth
/// none is allowed (as AuthNoneAuthorizeHandler grants), none where it
/// was let in only to authenticate to us as a monitor.
fn unproven(cx: &Cx<'_>, auth: &dyn ServerAuth) -> msgr_auth::Identity {
    let peer = AuthPeer {
        entity_type: cx.peer.entity_type,
    };
    msgr_auth::Identity {
        name: msgr_encoding::AuthName::new(cx.peer.entity_type, ""),
        global_id: 0,
        caps: msgr_auth::Caps {
            allow_all: auth.allowed_methods(&peer).contains(&auth_method::NONE),
            caps: Bytes::new(),
        },
        proven: false,
    }
}

/// A CONNECT without an authorizer is let through by a monitor from a
/// non-monitor (it authenticates with MAuth messages next), and by a
/// server whose auth allows method none.
fn tolerates_no_authorizer(cx: &Cx<'_>, auth: &dyn ServerAuth) -> bool {
    let me = cx.config.my_name.kind;
    if me == EntityType::MON && cx.peer.entity_type != EntityType::MON {
        return true;
    }
    let peer = AuthPeer {
        entity_type: cx.peer.entity_type,
    };
    auth.allowed_methods(&peer).contains(&auth_method::NONE)
}
