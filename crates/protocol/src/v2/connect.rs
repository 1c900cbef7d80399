//! The connector's handshake (msgr2 document, client state diagram;
//! ProtocolV2.cc BANNER_CONNECTING .. SESSION_RECONNECTING).

use super::handshake::*;

/// msgr2's connector phases.
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
                Input::Banner => {
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
                // A keyed method (cephx) proved the server's type: only that
                // service's key holders could answer our authorizer.
                cx.peer.proven = !outcome.session_key.is_empty();
                cx.peer.protected = outcome.con_mode == ConMode::SECURE;
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
                ControlFrame::IdentMissingFeatures(m) => Err(ProtocolError::FeaturesRefused {
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
                    cx.session.global_seq = cx
                        .config
                        .global_seq
                        .raise(r.global_seq, &mut cx.peer.global_seq_pushed)?;
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
        cx.session.client_cookie = cx.config.new_cookie();
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
