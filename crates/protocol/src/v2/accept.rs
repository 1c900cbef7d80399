//! The acceptor's handshake (server state diagram; START_ACCEPT ..
//! SESSION_ACCEPTING), up to the ident the messenger decides on.

use super::handshake::*;
use crate::ident::IdentRequest;

/// msgr2's acceptor phases.
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
                Input::Banner => {
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
            cx.peer.proven = outcome.peer.as_ref().is_some_and(|p| p.proven);
            cx.peer.protected = mode == ConMode::SECURE;
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
