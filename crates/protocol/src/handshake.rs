//! The two handshakes as state types. Each phase consumes itself on the
//! next input and returns the next phase (or the handshake's end); an input
//! the phase does not accept is a typed error.
//!
//! Connector (msgr2 document, client state diagram; ProtocolV2.cc
//! BANNER_CONNECTING .. SESSION_RECONNECTING):
//! `Banner → Hello → Auth ⟲ (REPLY_MORE, BAD_METHOD) → Signature →
//! [Compression] → Ident | Reconnect ⟲ (RETRY, RETRY_GLOBAL, RESET) → READY`,
//! or WAIT.
//! Acceptor (server state diagram; START_ACCEPT .. SESSION_ACCEPTING):
//! `Banner → Hello → Auth ⟲ (MORE, BAD_METHOD) → Signature → [Compression]
//! → Session`, which ends in an ident for the messenger to decide on.

use std::collections::VecDeque;

use bytes::Bytes;
use msgr_auth::{AuthError, AuthPeer, ClientAuth, ConMode, Identity, ServerAuth, ServerStep};
use msgr_encoding::{EntityAddr, EntityName};
use msgr_frames::compression::{Algorithm, TxCompression};
use msgr_frames::control::*;
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::{ControlFrame, Tag};

use crate::config::Config;
use crate::error::{Claim, ProtocolError, Wire};
use crate::features;
use crate::link::{Input, Link};
use crate::peer::{MyAddrs, PeerInfo};
use crate::session::Session;
use crate::Event;

/// What a phase works with.
pub(crate) struct Cx<'a> {
    pub config: &'a Config,
    pub link: &'a mut Link,
    pub session: &'a mut Session,
    pub peer: &'a mut PeerInfo,
    pub me: &'a mut MyAddrs,
    pub events: &'a mut VecDeque<Event>,
}

/// What each phase accepts (for errors that say what was expected).
mod expect {
    use super::Tag;
    use crate::error::Wire::{self, Banner, Frame};
    pub const BANNER: &[Wire] = &[Banner];
    pub const HELLO: &[Wire] = &[Frame(Tag::HELLO)];
    pub const AUTH_REPLY: &[Wire] = &[
        Frame(Tag::AUTH_REPLY_MORE),
        Frame(Tag::AUTH_DONE),
        Frame(Tag::AUTH_BAD_METHOD),
    ];
    pub const AUTH_REQUEST: &[Wire] = &[Frame(Tag::AUTH_REQUEST)];
    pub const AUTH_REQUEST_MORE: &[Wire] = &[Frame(Tag::AUTH_REQUEST_MORE)];
    pub const AUTH_SIGNATURE: &[Wire] = &[Frame(Tag::AUTH_SIGNATURE)];
    pub const COMPRESSION_REQUEST: &[Wire] = &[Frame(Tag::COMPRESSION_REQUEST)];
    pub const COMPRESSION_DONE: &[Wire] = &[Frame(Tag::COMPRESSION_DONE)];
    pub const IDENT_REPLY: &[Wire] = &[
        Frame(Tag::SERVER_IDENT),
        Frame(Tag::IDENT_MISSING_FEATURES),
        Frame(Tag::WAIT),
    ];
    pub const RECONNECT_REPLY: &[Wire] = &[
        Frame(Tag::SESSION_RECONNECT_OK),
        Frame(Tag::SESSION_RESET),
        Frame(Tag::SESSION_RETRY),
        Frame(Tag::SESSION_RETRY_GLOBAL),
        Frame(Tag::WAIT),
    ];
    pub const IDENT: &[Wire] = &[Frame(Tag::CLIENT_IDENT), Frame(Tag::SESSION_RECONNECT)];
}

/// `got` where `state` accepts only `expected`.
fn unexpected(state: &'static str, expected: &'static [Wire], got: Wire) -> ProtocolError {
    ProtocolError::UnexpectedFrame {
        state,
        expected,
        got,
    }
}

fn wire(input: &Input) -> Wire {
    match input {
        Input::Frame(f) => Wire::Frame(f.tag),
        Input::Banner(_) => Wire::Banner,
    }
}

/// The `$variant` control frame `$input` must carry in `$state`, which
/// expects `$expected`; anything else returns from the phase with what was
/// expected against what came.
macro_rules! take {
    ($state:expr, $expected:expr, $input:expr, $variant:ident) => {
        match control($state, $expected, $input)? {
            ControlFrame::$variant(frame) => frame,
            other => return Err(unexpected($state, $expected, Wire::Frame(other.tag()))),
        }
    };
}

/// The control frame `input` carries (a banner or a MESSAGE is refused
/// as not among `expected`).
fn control(
    state: &'static str,
    expected: &'static [Wire],
    input: Input,
) -> Result<ControlFrame, ProtocolError> {
    match input {
        Input::Frame(f) if f.tag != Tag::MESSAGE => Ok(ControlFrame::from_received(&f)?),
        other => Err(unexpected(state, expected, wire(&other))),
    }
}

fn auth_peer(peer: &PeerInfo) -> AuthPeer {
    AuthPeer {
        entity_type: peer.entity_type,
    }
}

/// The most auth frames a peer may send on one socket (AUTH_REQUEST and
/// AUTH_REQUEST_MORE to an acceptor, AUTH_REPLY_MORE and AUTH_BAD_METHOD
/// to a connector). cephx takes two, and a method fallback one or two
/// more; a peer bouncing AUTH_BAD_METHOD is cut off. (Ceph counts none;
/// its handshake timeout alone ends such a loop.)
pub const MAX_AUTH_ROUNDS: u32 = 8;

/// Counts one auth frame from the peer.
fn auth_round(cx: &mut Cx<'_>) -> Result<(), ProtocolError> {
    cx.link.auth_rounds = cx.link.auth_rounds.saturating_add(1);
    if cx.link.auth_rounds > MAX_AUTH_ROUNDS {
        return Err(ProtocolError::TooManyAuthRounds {
            max: MAX_AUTH_ROUNDS,
        });
    }
    Ok(())
}

/// Installs secure mode on both directions of `link` (after AUTH_DONE).
fn go_secure(link: &mut Link, secret: &[u8], role: Role) -> Result<(), ProtocolError> {
    let rev1 = link.negotiated().is_some_and(|n| n.rev1);
    let (tx, rx) = SecureKeys::from_connection_secret(secret, role)?.ciphers(rev1);
    if let Some(e) = link.encoder_mut() {
        e.set_cipher(tx);
    }
    if let Some(d) = link.decoder_mut() {
        d.set_cipher(rx);
    }
    Ok(())
}

/// Turns compression on in both directions of `link`.
fn set_compression(link: &mut Link, alg: Algorithm, min_size: usize) {
    if let Some(e) = link.encoder_mut() {
        e.set_compression(Some(TxCompression {
            algorithm: alg,
            min_frame_len: min_size,
        }));
    }
    if let Some(d) = link.decoder_mut() {
        d.set_decompression(Some(alg));
    }
}

/// Checks the peer's AUTH_SIGNATURE against what we sent (handle_auth_signature).
fn verify_signature(
    sig: &AuthSignature,
    key: &msgr_auth::SessionKey,
    tx: &[u8],
) -> Result<(), ProtocolError> {
    // In constant time (SessionKey::verify).
    if !key.verify([tx], &sig.sha256) {
        return Err(ProtocolError::BadSignature);
    }
    Ok(())
}

fn hello(cx: &mut Cx<'_>, peer_addr: EntityAddr) -> Result<(), ProtocolError> {
    cx.link.send_control(
        &Hello {
            entity_type: cx.config.my_name.kind,
            peer_addr,
        }
        .into(),
    )
}

// ------------------------------------------------------------------ connector

/// The connector's phases.
pub(crate) enum Connecting {
    /// Our banner is out; the peer's is awaited.
    Banner,
    /// Our HELLO is out.
    Hello,
    /// AUTH_REQUEST or AUTH_REQUEST_MORE is out, offering `offered` modes.
    Auth {
        auth: Box<dyn ClientAuth>,
        offered: Vec<ConMode>,
    },
    /// Our AUTH_SIGNATURE is out; the peer's is awaited.
    Signature {
        outcome: msgr_auth::AuthOutcome,
        tx: Vec<u8>,
    },
    /// COMPRESSION_REQUEST is out, offering `offered` methods (none when
    /// we did not ask to compress).
    Compression { offered: Vec<u32> },
    /// CLIENT_IDENT is out.
    Ident,
    /// SESSION_RECONNECT is out.
    Reconnect,
}

/// Where a connector phase leads.
pub(crate) enum ConnectStep {
    Next(Connecting),
    /// SERVER_IDENT or SESSION_RECONNECT_OK: the session is READY.
    Ready {
        reconnected: bool,
    },
    /// WAIT: the peer's connection to us will win; back off.
    Wait,
}

impl Connecting {
    pub fn name(&self) -> &'static str {
        match self {
            Connecting::Banner => "BANNER_CONNECTING",
            Connecting::Hello => "HELLO_CONNECTING",
            Connecting::Auth { .. } => "AUTH_CONNECTING",
            Connecting::Signature { .. } => "AUTH_CONNECTING_SIGN",
            Connecting::Compression { .. } => "COMPRESSION_CONNECTING",
            Connecting::Ident => "SESSION_CONNECTING",
            Connecting::Reconnect => "SESSION_RECONNECTING",
        }
    }

    pub fn on_input(self, input: Input, cx: &mut Cx<'_>) -> Result<ConnectStep, ProtocolError> {
        let state = self.name();
        match self {
            Connecting::Banner => match input {
                Input::Banner(_) => {
                    hello(cx, cx.peer.target_addr)?;
                    Ok(ConnectStep::Next(Connecting::Hello))
                }
                other => Err(unexpected(state, expect::BANNER, wire(&other))),
            },
            Connecting::Hello => {
                let h = take!(state, expect::HELLO, input, Hello);
                if cx.peer.entity_type == msgr_encoding::EntityType::ANY {
                    // Whoever it is: learn its type, and its policy, from HELLO.
                    cx.peer.entity_type = h.entity_type;
                    cx.peer.policy = cx.config.policies.get(h.entity_type);
                } else if h.entity_type != cx.peer.entity_type {
                    return Err(ProtocolError::PeerTypeMismatch {
                        expected: cx.peer.entity_type.0,
                        got: h.entity_type.0,
                    });
                }
                if cx.config.learn_addr_from_peer {
                    if let Some(a) = cx.me.learn(&h.peer_addr) {
                        cx.events.push_back(Event::LearnedAddr(a));
                    }
                }
                let mut auth = cx.config.auth.client(&cx.config.my_name);
                let offered = send_auth_request(cx, auth.as_mut(), &[])?;
                Ok(ConnectStep::Next(Connecting::Auth { auth, offered }))
            }
            Connecting::Auth { mut auth, offered } => {
                match control(state, expect::AUTH_REPLY, input)? {
                    ControlFrame::AuthBadMethod(b) => {
                        auth_round(cx)?;
                        let modes: Vec<ConMode> =
                            b.allowed_modes.iter().map(|m| ConMode(*m)).collect();
                        auth.bad_method(b.method, b.result, &b.allowed_methods, &modes)?;
                        let offered = send_auth_request(cx, auth.as_mut(), &b.allowed_methods)?;
                        Ok(ConnectStep::Next(Connecting::Auth { auth, offered }))
                    }
                    ControlFrame::AuthReplyMore(m) => {
                        auth_round(cx)?;
                        let reply = auth.reply_more(&m.auth_payload)?;
                        cx.link.send_control(
                            &AuthRequestMore {
                                auth_payload: reply,
                            }
                            .into(),
                        )?;
                        Ok(ConnectStep::Next(Connecting::Auth { auth, offered }))
                    }
                    ControlFrame::AuthDone(d) => {
                        // The server picks from what we offered; a mode we did
                        // not offer (secure where we asked for crc, or the
                        // other way) is refused, whatever the method says.
                        if !offered.contains(&ConMode(d.con_mode)) {
                            return Err(ProtocolError::NotOffered {
                                what: "connection mode",
                                offered: offered.iter().map(|m| m.0).collect(),
                                got: d.con_mode,
                            });
                        }
                        let outcome =
                            auth.done(d.global_id, ConMode(d.con_mode), &d.auth_payload)?;
                        // Sign what we received; verify the peer's against what we sent.
                        let record = cx.link.stop_recording();
                        if outcome.con_mode == ConMode::SECURE {
                            go_secure(
                                cx.link,
                                outcome.connection_secret.expose(),
                                Role::Connector,
                            )?;
                        }
                        let sha256 = outcome.session_key.signature([&record.rx[..]]);
                        cx.link.send_control(&AuthSignature { sha256 }.into())?;
                        Ok(ConnectStep::Next(Connecting::Signature {
                            outcome,
                            tx: record.tx,
                        }))
                    }
                    other => Err(unexpected(
                        state,
                        expect::AUTH_REPLY,
                        Wire::Frame(other.tag()),
                    )),
                }
            }
            Connecting::Signature { outcome, tx } => {
                let sig = take!(state, expect::AUTH_SIGNATURE, input, AuthSignature);
                verify_signature(&sig, &outcome.session_key, &tx)?;
                if cx.link.negotiated().is_some_and(|n| n.compression) {
                    let c = &cx.config.compression;
                    let secure = outcome.con_mode == ConMode::SECURE;
                    let wanted = c.wanted(cx.peer.entity_type, secure);
                    let methods = if wanted {
                        c.algorithms.iter().map(|a| *a as u32).collect()
                    } else {
                        Vec::new()
                    };
                    cx.link.send_control(
                        &CompressionRequest {
                            is_compress: wanted,
                            preferred_methods: methods.clone(),
                        }
                        .into(),
                    )?;
                    return Ok(ConnectStep::Next(Connecting::Compression {
                        offered: methods,
                    }));
                }
                start_session(cx)
            }
            Connecting::Compression { offered } => {
                let d = take!(state, expect::COMPRESSION_DONE, input, CompressionDone);
                if d.is_compress {
                    // Only a method we offered (none, if we did not ask).
                    let alg = Algorithm::from_wire(d.method)
                        .filter(|a| *a != Algorithm::None && offered.contains(&d.method))
                        .ok_or(ProtocolError::NotOffered {
                            what: "compression method",
                            offered,
                            got: d.method,
                        })?;
                    set_compression(cx.link, alg, cx.config.compression.min_size);
                }
                start_session(cx)
            }
            Connecting::Ident => match control(state, expect::IDENT_REPLY, input)? {
                ControlFrame::ServerIdent(s) => {
                    if !s
                        .addrs
                        .0
                        .iter()
                        .any(|a| same_endpoint(a, &cx.peer.target_addr))
                    {
                        return Err(ProtocolError::WrongServer);
                    }
                    cx.session.server_cookie = s.cookie;
                    cx.session.peer_global_seq = s.global_seq;
                    cx.peer.addrs = s.addrs;
                    cx.peer.name = Some(EntityName::new(cx.peer.entity_type, s.gid));
                    cx.peer.features = s.supported_features & cx.peer.policy.features_supported;
                    // The client adopts the server's lossy flag.
                    cx.peer.policy.lossy = s.flags & CONNECT_FLAG_LOSSY != 0;
                    if cx.peer.policy.lossy {
                        cx.session.server_cookie = 0;
                        cx.session.connect_seq = 0;
                    }
                    cx.session.restart_numbering();
                    Ok(ConnectStep::Ready { reconnected: false })
                }
                ControlFrame::IdentMissingFeatures(m) => Err(ProtocolError::MissingFeatures {
                    missing: m.features,
                }),
                ControlFrame::Wait(_) => Ok(ConnectStep::Wait),
                other => Err(unexpected(
                    state,
                    expect::IDENT_REPLY,
                    Wire::Frame(other.tag()),
                )),
            },
            Connecting::Reconnect => match control(state, expect::RECONNECT_REPLY, input)? {
                ControlFrame::SessionReconnectOk(ok) => {
                    cx.session.resume_from(ok.msg_seq);
                    Ok(ConnectStep::Ready { reconnected: true })
                }
                ControlFrame::SessionReset(r) => {
                    if r.full {
                        cx.session.reset();
                        cx.events.push_back(Event::RemoteReset);
                    } else {
                        cx.session.server_cookie = 0;
                        cx.session.connect_seq = 0;
                        cx.session.in_seq = 0;
                    }
                    send_client_ident(cx)?;
                    Ok(ConnectStep::Next(Connecting::Ident))
                }
                ControlFrame::SessionRetry(r) => {
                    cx.session.connect_seq =
                        r.connect_seq
                            .checked_add(1)
                            .ok_or(ProtocolError::CounterOverflow {
                                counter: "connect_seq",
                            })?;
                    send_reconnect(cx)?;
                    Ok(ConnectStep::Next(Connecting::Reconnect))
                }
                ControlFrame::SessionRetryGlobal(r) => {
                    cx.session.global_seq = cx.config.global_seq.next(r.global_seq)?;
                    send_reconnect(cx)?;
                    Ok(ConnectStep::Next(Connecting::Reconnect))
                }
                ControlFrame::Wait(_) => Ok(ConnectStep::Wait),
                other => Err(unexpected(
                    state,
                    expect::RECONNECT_REPLY,
                    Wire::Frame(other.tag()),
                )),
            },
        }
    }
}

/// Same IP, port and nonce (the addr types may differ: v2 vs any).
fn same_endpoint(a: &EntityAddr, b: &EntityAddr) -> bool {
    a.addr == b.addr && a.nonce == b.nonce
}

/// AUTH_REQUEST; returns the modes it offered.
fn send_auth_request(
    cx: &mut Cx<'_>,
    auth: &mut dyn ClientAuth,
    allowed: &[u32],
) -> Result<Vec<ConMode>, ProtocolError> {
    let req = auth.request(&auth_peer(cx.peer), allowed)?;
    cx.link.send_control(
        &AuthRequest {
            method: req.method,
            preferred_modes: req.preferred_modes.iter().map(|m| m.0).collect(),
            auth_payload: req.payload,
        }
        .into(),
    )?;
    Ok(req.preferred_modes)
}

/// CLIENT_IDENT for a new session, or SESSION_RECONNECT to resume one
/// (start_session_connect: the only test is whether we hold a server cookie).
fn start_session(cx: &mut Cx<'_>) -> Result<ConnectStep, ProtocolError> {
    if cx.session.server_cookie == 0 {
        send_client_ident(cx)?;
        Ok(ConnectStep::Next(Connecting::Ident))
    } else {
        send_reconnect(cx)?;
        Ok(ConnectStep::Next(Connecting::Reconnect))
    }
}

fn send_client_ident(cx: &mut Cx<'_>) -> Result<(), ProtocolError> {
    let lossy = cx.peer.policy.lossy;
    if !lossy && cx.session.client_cookie == 0 {
        cx.session.client_cookie = crate::conn::new_cookie(cx.config);
    }
    cx.link.send_control(
        &ClientIdent {
            addrs: cx.me.addrs.clone(),
            target_addr: cx.peer.target_addr,
            gid: cx.config.my_name.num,
            global_seq: cx.session.global_seq,
            supported_features: cx.peer.policy.features_supported,
            required_features: cx.peer.policy.features_required | features::MSGR2_REQUIRED,
            flags: if lossy { CONNECT_FLAG_LOSSY } else { 0 },
            cookie: cx.session.client_cookie,
        }
        .into(),
    )
}

fn send_reconnect(cx: &mut Cx<'_>) -> Result<(), ProtocolError> {
    cx.link.send_control(
        &SessionReconnect {
            addrs: cx.me.addrs.clone(),
            client_cookie: cx.session.client_cookie,
            server_cookie: cx.session.server_cookie,
            global_seq: cx.session.global_seq,
            connect_seq: cx.session.connect_seq,
            msg_seq: cx.session.in_seq,
        }
        .into(),
    )
}

// ------------------------------------------------------------------ acceptor

/// The acceptor's phases.
pub(crate) enum Accepting {
    Banner,
    Hello,
    /// Awaiting AUTH_REQUEST (first, or again after AUTH_BAD_METHOD).
    Auth {
        auth: Box<dyn ServerAuth>,
    },
    /// AUTH_REPLY_MORE is out; awaiting AUTH_REQUEST_MORE.
    AuthMore {
        auth: Box<dyn ServerAuth>,
        method: u32,
        mode: ConMode,
    },
    /// AUTH_DONE and our AUTH_SIGNATURE are out.
    Signature {
        outcome: msgr_auth::AuthOutcome,
        tx: Vec<u8>,
    },
    /// Awaiting COMPRESSION_REQUEST.
    Compression {
        secure: bool,
    },
    /// Awaiting CLIENT_IDENT or SESSION_RECONNECT.
    Session,
}

/// An ident for the messenger to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentRequest {
    New(ClientIdent),
    Reconnect(SessionReconnect),
}

pub(crate) enum AcceptStep {
    Next(Accepting),
    Ident(IdentRequest),
}

impl Accepting {
    pub fn name(&self) -> &'static str {
        match self {
            Accepting::Banner => "BANNER_ACCEPTING",
            Accepting::Hello => "HELLO_ACCEPTING",
            Accepting::Auth { .. } => "AUTH_ACCEPTING",
            Accepting::AuthMore { .. } => "AUTH_ACCEPTING_MORE",
            Accepting::Signature { .. } => "AUTH_ACCEPTING_SIGN",
            Accepting::Compression { .. } => "COMPRESSION_ACCEPTING",
            Accepting::Session => "SESSION_ACCEPTING",
        }
    }

    /// `peer_socket`: the peer's address as our socket sees it (our HELLO
    /// tells it).
    pub fn on_input(
        self,
        input: Input,
        cx: &mut Cx<'_>,
        peer_socket: EntityAddr,
    ) -> Result<AcceptStep, ProtocolError> {
        let state = self.name();
        match self {
            Accepting::Banner => match input {
                Input::Banner(_) => {
                    hello(cx, peer_socket)?;
                    Ok(AcceptStep::Next(Accepting::Hello))
                }
                other => Err(unexpected(state, expect::BANNER, wire(&other))),
            },
            Accepting::Hello => {
                let h = take!(state, expect::HELLO, input, Hello);
                // The type picks the policy; with cephx it must be the
                // authenticated entity's (checked at AUTH_DONE). The
                // accepting side never learns its address from a peer
                // (Ceph's handle_hello would, on a wildcard bind, and then
                // refuse the clients that reached it on another address):
                // it is the address the socket was accepted on.
                cx.peer.entity_type = h.entity_type;
                cx.peer.policy = cx.config.policies.get(h.entity_type);
                Ok(AcceptStep::Next(Accepting::Auth {
                    auth: cx.config.auth.server(),
                }))
            }
            Accepting::Auth { auth } => {
                let r = take!(state, expect::AUTH_REQUEST, input, AuthRequest);
                auth_round(cx)?;
                let modes: Vec<ConMode> = r.preferred_modes.iter().map(|m| ConMode(*m)).collect();
                let peer = auth_peer(cx.peer);
                let Some(mode) = auth.pick_mode(&peer, r.method, &modes, &r.auth_payload) else {
                    return bad_method(cx, auth, r.method, -95);
                };
                handle_auth(cx, auth, r.method, mode, false, &r.auth_payload)
            }
            Accepting::AuthMore { auth, method, mode } => {
                let r = take!(state, expect::AUTH_REQUEST_MORE, input, AuthRequestMore);
                auth_round(cx)?;
                handle_auth(cx, auth, method, mode, true, &r.auth_payload)
            }
            Accepting::Signature { outcome, tx } => {
                let sig = take!(state, expect::AUTH_SIGNATURE, input, AuthSignature);
                verify_signature(&sig, &outcome.session_key, &tx)?;
                if cx.link.negotiated().is_some_and(|n| n.compression) {
                    Ok(AcceptStep::Next(Accepting::Compression {
                        secure: outcome.con_mode == ConMode::SECURE,
                    }))
                } else {
                    Ok(AcceptStep::Next(Accepting::Session))
                }
            }
            Accepting::Compression { secure } => {
                let r = take!(
                    state,
                    expect::COMPRESSION_REQUEST,
                    input,
                    CompressionRequest
                );
                let c = &cx.config.compression;
                let pick = (r.is_compress && c.wanted(cx.peer.entity_type, secure))
                    .then(|| c.pick(&r.preferred_methods))
                    .flatten();
                cx.link.send_control(
                    &CompressionDone {
                        is_compress: pick.is_some(),
                        method: pick.map_or(0, |a| a as u32),
                    }
                    .into(),
                )?;
                if let Some(alg) = pick {
                    set_compression(cx.link, alg, c.min_size);
                }
                Ok(AcceptStep::Next(Accepting::Session))
            }
            Accepting::Session => match control(state, expect::IDENT, input)? {
                ControlFrame::ClientIdent(c) => {
                    if c.addrs
                        .0
                        .first()
                        .is_none_or(|a| *a == EntityAddr::default())
                    {
                        return Err(ProtocolError::BadClientIdent("no address"));
                    }
                    if !cx.me.contains(&c.target_addr) {
                        return Err(ProtocolError::BadClientIdent("target address is not ours"));
                    }
                    check_gid(cx.peer, c.gid)?;
                    Ok(AcceptStep::Ident(IdentRequest::New(c)))
                }
                ControlFrame::SessionReconnect(r) => {
                    Ok(AcceptStep::Ident(IdentRequest::Reconnect(r)))
                }
                other => Err(unexpected(state, expect::IDENT, Wire::Frame(other.tag()))),
            },
        }
    }
}

fn bad_method(
    cx: &mut Cx<'_>,
    auth: Box<dyn ServerAuth>,
    method: u32,
    result: i32,
) -> Result<AcceptStep, ProtocolError> {
    let peer = auth_peer(cx.peer);
    let allowed_methods = auth.allowed_methods(&peer);
    let allowed_modes = allowed_methods
        .first()
        .map(|m| auth.allowed_modes(&peer, *m))
        .unwrap_or_default();
    cx.link.send_control(
        &AuthBadMethod {
            method,
            result,
            allowed_methods,
            allowed_modes: allowed_modes.iter().map(|m| m.0).collect(),
        }
        .into(),
    )?;
    Ok(AcceptStep::Next(Accepting::Auth { auth }))
}

fn handle_auth(
    cx: &mut Cx<'_>,
    mut auth: Box<dyn ServerAuth>,
    method: u32,
    mode: ConMode,
    more: bool,
    payload: &Bytes,
) -> Result<AcceptStep, ProtocolError> {
    let peer = auth_peer(cx.peer);
    match auth.handle(&peer, method, mode, more, payload) {
        Ok(ServerStep::More(reply)) => {
            cx.link.send_control(
                &AuthReplyMore {
                    auth_payload: reply,
                }
                .into(),
            )?;
            Ok(AcceptStep::Next(Accepting::AuthMore { auth, method, mode }))
        }
        Ok(ServerStep::Done { payload, outcome }) => {
            if let Err(e) = check_hello_type(cx.peer, outcome.peer.as_ref()) {
                // Refused as a denied authentication (AUTH_BAD_METHOD,
                // EACCES), written before the socket closes so the peer
                // learns why.
                let peer = auth_peer(cx.peer);
                cx.link.send_control(
                    &AuthBadMethod {
                        method,
                        result: AuthError::Denied(String::new()).errno(),
                        allowed_methods: auth.allowed_methods(&peer),
                        allowed_modes: Vec::new(),
                    }
                    .into(),
                )?;
                cx.link.linger = true;
                return Err(e);
            }
            cx.peer.identity = outcome.peer.clone();
            cx.link.send_control(
                &AuthDone {
                    global_id: outcome.global_id,
                    con_mode: mode.0,
                    auth_payload: payload,
                }
                .into(),
            )?;
            // AUTH_DONE went out in crc mode; from here on, the mode chosen.
            let record = cx.link.stop_recording();
            if mode == ConMode::SECURE {
                go_secure(cx.link, outcome.connection_secret.expose(), Role::Acceptor)?;
            }
            let sha256 = outcome.session_key.signature([&record.rx[..]]);
            cx.link.send_control(&AuthSignature { sha256 }.into())?;
            Ok(AcceptStep::Next(Accepting::Signature {
                outcome,
                tx: record.tx,
            }))
        }
        Err(msgr_auth::AuthError::Busy) => Err(ProtocolError::Auth(msgr_auth::AuthError::Busy)),
        Err(e) => bad_method(cx, auth, method, e.errno()),
    }
}

/// A proven identity's type must be the type the peer said HELLO as (its
/// policy was chosen by it). Ceph picks the authorize handler by the HELLO
/// type and never compares it with the ticket's name; we refuse, so that
/// a client's ticket cannot buy an OSD's policy.
fn check_hello_type(peer: &PeerInfo, who: Option<&Identity>) -> Result<(), ProtocolError> {
    match who {
        Some(w) if w.proven && !w.matches_type(peer.entity_type) => {
            Err(ProtocolError::Impersonation {
                authenticated: Box::new(w.clone()),
                claim: Claim::HelloType(peer.entity_type),
            })
        }
        _ => Ok(()),
    }
}

/// A proven identity's CLIENT_IDENT must name a gid that is its own.
fn check_gid(peer: &PeerInfo, gid: i64) -> Result<(), ProtocolError> {
    match peer.identity.as_ref() {
        Some(w) if w.proven && !u64::try_from(gid).is_ok_and(|g| w.owns_gid(g)) => {
            Err(ProtocolError::Impersonation {
                authenticated: Box::new(w.clone()),
                claim: Claim::IdentGid(gid),
            })
        }
        _ => Ok(()),
    }
}
