//! The cephx server: a monitor-style authenticator backed by a
//! [`KeyServer`] (CephxServiceHandler: challenge, authenticate, tickets,
//! connection secret; global-id reclaim) and a service-style authorizer
//! verifier (cephx_verify_authorizer, with the CVE-2018-1128 challenge).
//! One [`CephxServerAuth`] per connection dispatches on the first byte of
//! the request, as a Ceph monitor does: 10..=19 a monitor session, 1..=9 an
//! authorizer (docs/research/cephx-protocol.md §6.4, §7.2, §9).
//!
//! ```text
//! monitor session:  Start --AUTH_REQUEST--> Challenged --AUTH_REQUEST_MORE--> done
//! authorizer:       Start --AUTH_REQUEST--> Challenged --AUTH_REQUEST_MORE--> done
//!                   (an authorizer without the answer to our challenge is
//!                    answered with a challenge; a wrong answer is refused)
//! ```

use std::sync::Arc;

use bytes::Bytes;
use msgr_encoding::{AuthName, Decode, Decoder, Encode, EntityType, UTime};

use super::crypto::usage;
use super::key_server::{KeyServer, AUTH_TICKET_TTL, SERVICE_TICKET_TTL};
use super::tickets::{open_ticket_blob, write_reply, IssuedTicket};
use super::wire::{
    client_server_challenge, open_from, request, seal, seal_into, Authenticate, Authorize,
    AuthorizeChallenge, AuthorizeReply, AuthorizerHead, RequestHeader, ResponseHeader,
    ServerChallenge, ServiceTicketInfo, AUTH_MODE_MON, AUTH_MODE_MON_MAX,
};
use crate::{
    ct_eq, method, AuthError, AuthOutcome, AuthPeer, Caps, Clock, ConMode, Identity, Random,
    Secret, ServerAuth, ServerStep, SessionKey,
};

const AUTH_SERVICE: u32 = EntityType::AUTH.0 as u32;

/// `AuthConnectionMeta::get_connection_secret_length`.
fn secret_len(mode: ConMode) -> usize {
    match mode {
        ConMode::SECURE => 64,
        _ => 0,
    }
}

/// What a cephx server is configured with, shared by its connections.
pub struct CephxServer {
    /// The keys and secrets it works from.
    pub keys: Arc<KeyServer>,
    /// Modes for monitor sessions (`ms_mon_service_mode`) and for
    /// authorizers (`ms_service_mode`), best first.
    pub mon_modes: Vec<ConMode>,
    /// Modes for authorizers (`ms_service_mode`), best first.
    pub service_modes: Vec<ConMode>,
    /// Which services this server verifies authorizers for (its own type).
    pub service: EntityType,
    /// `auth_allow_insecure_global_id_reclaim`.
    pub allow_insecure_reclaim: bool,
    rng: Arc<dyn Random>,
    clock: Clock,
}

impl CephxServer {
    /// A server verifying for `service`, offering secure then crc to monitor sessions and crc
    /// then secure to authorizers, refusing insecure global id reclaims.
    pub fn new(
        keys: Arc<KeyServer>,
        service: EntityType,
        rng: Arc<dyn Random>,
        clock: Clock,
    ) -> CephxServer {
        CephxServer {
            keys,
            mon_modes: vec![ConMode::SECURE, ConMode::CRC],
            service_modes: vec![ConMode::CRC, ConMode::SECURE],
            service,
            allow_insecure_reclaim: false,
            rng,
            clock,
        }
    }

    /// The server side of one connection's auth exchange.
    pub fn conn_auth(self: &Arc<Self>) -> CephxServerAuth {
        CephxServerAuth {
            server: self.clone(),
            phase: ServerPhase::Start,
        }
    }
}

enum ServerPhase {
    Start,
    /// Monitor session: challenge sent.
    MonChallenged {
        name: AuthName,
        global_id: u64,
        reclaiming: bool,
        server_challenge: u64,
    },
    /// Authorizer: challenge sent.
    AuthorizerChallenged {
        server_challenge: u64,
    },
    Done,
}

/// One connection's cephx exchange, server side.
pub struct CephxServerAuth {
    server: Arc<CephxServer>,
    phase: ServerPhase,
}

impl ServerAuth for CephxServerAuth {
    fn allowed_methods(&self, _peer: &AuthPeer) -> Vec<u32> {
        vec![method::CEPHX]
    }

    fn allowed_modes(&self, peer: &AuthPeer, m: u32) -> Vec<ConMode> {
        if m != method::CEPHX {
            return Vec::new();
        }
        // What AUTH_BAD_METHOD lists, before a request says its kind:
        // clients most often come for a monitor session, other entities
        // with authorizers. The mode of a request is picked from its own
        // kind's list (pick_mode).
        match peer.entity_type {
            EntityType::CLIENT => self.server.mon_modes.clone(),
            _ => self.server.service_modes.clone(),
        }
    }

    fn pick_mode(
        &self,
        _peer: &AuthPeer,
        m: u32,
        client_modes: &[ConMode],
        payload: &[u8],
    ) -> Option<ConMode> {
        if m != method::CEPHX {
            return None;
        }
        // The list of the request's kind: a monitor session (its first
        // byte AUTH_MODE_MON..) is held to ms_mon_service_mode, an
        // authorizer to ms_service_mode, never to the union of both. Then,
        // as AuthRegistry::pick_mode, the first of the client's modes that
        // list allows.
        let ours = match payload.first() {
            Some(b) if (AUTH_MODE_MON..=AUTH_MODE_MON_MAX).contains(b) => &self.server.mon_modes,
            _ => &self.server.service_modes,
        };
        client_modes.iter().copied().find(|m| ours.contains(m))
    }

    fn handle(
        &mut self,
        _peer: &AuthPeer,
        m: u32,
        con_mode: ConMode,
        more: bool,
        payload: &[u8],
    ) -> Result<ServerStep, AuthError> {
        if m != method::CEPHX {
            return Err(AuthError::MethodNotSupported { method: m });
        }
        let phase = std::mem::replace(&mut self.phase, ServerPhase::Done);
        match (phase, more) {
            (ServerPhase::Start, false) => match payload.first() {
                Some(b) if (AUTH_MODE_MON..=AUTH_MODE_MON_MAX).contains(b) => {
                    self.start_mon(payload)
                }
                Some(1..=9) => self.authorizer(payload, con_mode, None),
                _ => Err(AuthError::Denied("empty or unknown auth payload".into())),
            },
            (
                ServerPhase::MonChallenged {
                    name,
                    global_id,
                    reclaiming,
                    server_challenge,
                },
                true,
            ) => self.authenticate(
                &name,
                global_id,
                reclaiming,
                server_challenge,
                con_mode,
                payload,
            ),
            (ServerPhase::AuthorizerChallenged { server_challenge }, true) => {
                self.authorizer(payload, con_mode, Some(server_challenge))
            }
            _ => Err(AuthError::Malformed("auth request out of order".into())),
        }
    }
}

impl CephxServerAuth {
    /// AUTH_REQUEST in monitor mode: who, and which global id (new or
    /// reclaimed); answered with a challenge.
    fn start_mon(&mut self, payload: &[u8]) -> Result<ServerStep, AuthError> {
        let mut d = Decoder::new(payload);
        let parse = |d: &mut Decoder<'_>| -> msgr_encoding::DecodeResult<(AuthName, u64)> {
            d.u8("auth mode")?;
            Ok((AuthName::decode(d)?, d.u64("global_id")?))
        };
        let (name, requested) =
            parse(&mut d).map_err(|e| AuthError::Denied(format!("auth request: {e}")))?;
        let (global_id, reclaiming) = match requested {
            0 => (self.server.keys.assign_global_id(), false),
            g => (g, true),
        };
        // generate_random_number(1, max): never zero.
        let server_challenge = self.server.rng.u64().max(1);
        self.phase = ServerPhase::MonChallenged {
            name,
            global_id,
            reclaiming,
            server_challenge,
        };
        Ok(ServerStep::More(
            ServerChallenge { server_challenge }.to_bytes(),
        ))
    }

    /// AUTH_REQUEST_MORE in monitor mode (GET_AUTH_SESSION_KEY).
    fn authenticate(
        &mut self,
        name: &AuthName,
        global_id: u64,
        reclaiming: bool,
        server_challenge: u64,
        con_mode: ConMode,
        payload: &[u8],
    ) -> Result<ServerStep, AuthError> {
        let s = &self.server;
        let mut d = Decoder::new(payload);
        let header =
            RequestHeader::decode(&mut d).map_err(|e| AuthError::Malformed(e.to_string()))?;
        if header.request_type != request::GET_AUTH_SESSION_KEY {
            return Err(AuthError::Malformed(format!(
                "request type {:#x}",
                header.request_type
            )));
        }
        let req = Authenticate::decode(&mut d).map_err(|e| AuthError::Malformed(e.to_string()))?;
        let key = s
            .keys
            .entity_key(name)
            .ok_or_else(|| AuthError::Denied(format!("unknown entity {name}")))?;
        let expected = client_server_challenge(key, server_challenge, req.client_challenge);
        if !ct_eq(&expected.to_le_bytes(), &req.key.to_le_bytes()) {
            return Err(AuthError::Denied(format!("{name} does not hold its key")));
        }
        let now = (s.clock)();
        // Global-id reclaim (CephxServiceHandler::verify_old_ticket).
        let old_session = self.verify_old_ticket(name, global_id, reclaiming, &req)?;
        let auth = s
            .keys
            .mint(name, global_id, AUTH_SERVICE, AUTH_TICKET_TTL, now, &*s.rng)
            .ok_or_else(|| AuthError::NoKey("a secret for the AUTH service".into()))?;
        let mut out = Vec::new();
        ResponseHeader {
            request_type: request::GET_AUTH_SESSION_KEY,
            status: 0,
        }
        .encode(&mut out);
        write_reply(
            &mut out,
            key,
            &[IssuedTicket {
                service: AUTH_SERVICE,
                ticket: &auth.service_ticket,
                blob: &auth.blob,
                encrypt_blob_with: old_session.as_ref(),
            }],
            &*s.rng,
        );
        let session = auth.service_ticket.session_key.clone();
        let connection_secret = Secret::random(secret_len(con_mode), &*s.rng);
        if req.other_keys != 0 {
            let mut cbl = Vec::new();
            seal_into(
                &mut cbl,
                &session,
                usage::AUTH_CONNECTION_SECRET,
                &connection_secret,
                &*s.rng,
            );
            Bytes::from(cbl).encode(&mut out);
            let minted: Vec<(u32, _)> = (0..32)
                .map(|b| 1u32 << b)
                .filter(|svc| req.other_keys & svc != 0 && *svc != AUTH_SERVICE)
                .filter_map(|svc| {
                    s.keys
                        .mint(name, global_id, svc, SERVICE_TICKET_TTL, now, &*s.rng)
                        .map(|m| (svc, m))
                })
                .collect();
            let mut extra = Vec::new();
            if !minted.is_empty() {
                let issued: Vec<IssuedTicket<'_>> = minted
                    .iter()
                    .map(|(svc, m)| IssuedTicket {
                        service: *svc,
                        ticket: &m.service_ticket,
                        blob: &m.blob,
                        encrypt_blob_with: None,
                    })
                    .collect();
                write_reply(&mut extra, &session, &issued, &*s.rng);
            }
            Bytes::from(extra).encode(&mut out);
        }
        let caps = s
            .keys
            .caps(name, "mon")
            .map(|c| c.to_string().to_bytes())
            .unwrap_or_default();
        Ok(ServerStep::Done {
            payload: Bytes::from(out),
            outcome: AuthOutcome {
                global_id,
                con_mode,
                session_key: SessionKey::new(session.secret().to_vec()),
                connection_secret: match req.other_keys {
                    0 => Secret::default(),
                    _ => connection_secret,
                },
                peer: Some(Identity {
                    name: name.clone(),
                    global_id,
                    caps: Caps {
                        allow_all: false,
                        caps,
                    },
                    proven: true,
                }),
            },
        })
    }

    /// The rules of CVE-2021-20288: a new global id must not come with a
    /// ticket; a reclaimed one must come with a valid AUTH ticket for the
    /// same id (unless insecure reclaim is allowed for old clients).
    /// Returns the old session key to re-encrypt the new ticket with.
    fn verify_old_ticket(
        &self,
        name: &AuthName,
        global_id: u64,
        reclaiming: bool,
        req: &Authenticate,
    ) -> Result<Option<super::key::CryptoKey>, AuthError> {
        let has_old = !req.old_ticket.blob.is_empty();
        if !reclaiming {
            if has_old {
                return Err(AuthError::Malformed("a ticket with a new global id".into()));
            }
            return Ok(None);
        }
        let insecure_ok = self.server.allow_insecure_reclaim && req.struct_v < 3;
        let info: Option<ServiceTicketInfo> = has_old
            .then(|| {
                let secret = self
                    .server
                    .keys
                    .service_secret(AUTH_SERVICE, req.old_ticket.secret_id)?;
                open_ticket_blob(secret, &req.old_ticket.blob).ok()
            })
            .flatten();
        match info {
            Some(i) if i.ticket.global_id == global_id && &i.ticket.name == name => {
                Ok(Some(i.session_key))
            }
            _ if insecure_ok => Ok(None),
            _ => Err(AuthError::Denied(format!(
                "{name} reclaims global id {global_id} without a valid ticket for it"
            ))),
        }
    }

    /// An authorizer (first try or answer to our challenge).
    fn authorizer(
        &mut self,
        payload: &[u8],
        con_mode: ConMode,
        issued: Option<u64>,
    ) -> Result<ServerStep, AuthError> {
        let s = &self.server;
        let mut d = Decoder::new(payload);
        let head = AuthorizerHead::decode(&mut d)
            .map_err(|e| AuthError::Denied(format!("authorizer: {e}")))?;
        if head.service_id != s.service.0 as u32 {
            return Err(AuthError::Denied(format!(
                "authorizer for service {:#x}, we are {}",
                head.service_id, s.service
            )));
        }
        let secret = s
            .keys
            .service_secret(head.service_id, head.ticket.secret_id)
            .ok_or_else(|| {
                AuthError::Denied(format!("unknown service secret {}", head.ticket.secret_id))
            })?;
        let info = open_ticket_blob(secret, &head.ticket.blob)
            .map_err(|e| AuthError::Denied(format!("ticket: {e}")))?;
        if info.ticket.global_id != head.global_id {
            return Err(AuthError::Denied("ticket of another global id".into()));
        }
        let now: UTime = (s.clock)();
        if info.ticket.expires <= now {
            return Err(AuthError::Expired(format!(
                "ticket of {}",
                info.ticket.name
            )));
        }
        let auth: Authorize = open_from(&mut d, &info.session_key, usage::AUTHORIZE)
            .map_err(|e| AuthError::Denied(format!("authorizer: {e}")))?;
        let answers = |c: u64| {
            ct_eq(
                &auth.server_challenge_plus_one.to_le_bytes(),
                &c.wrapping_add(1).to_le_bytes(),
            )
        };
        match (issued, auth.have_challenge) {
            (Some(c), true) if answers(c) => {}
            (Some(_), _) => return Err(AuthError::Replayed),
            (None, _) => {
                let server_challenge = s.rng.u64();
                self.phase = ServerPhase::AuthorizerChallenged { server_challenge };
                let ch = seal(
                    &info.session_key,
                    usage::AUTHORIZE_CHALLENGE,
                    &AuthorizeChallenge { server_challenge },
                    &*s.rng,
                );
                return Ok(ServerStep::More(Bytes::from(ch)));
            }
        }
        let connection_secret = Secret::random(secret_len(con_mode), &*s.rng);
        let mut out = Vec::new();
        seal_into(
            &mut out,
            &info.session_key,
            usage::AUTHORIZE_REPLY,
            &AuthorizeReply {
                nonce_plus_one: auth.nonce.wrapping_add(1),
                connection_secret: connection_secret.clone(),
            },
            &*s.rng,
        );
        Ok(ServerStep::Done {
            payload: Bytes::from(out),
            outcome: AuthOutcome {
                global_id: info.ticket.global_id,
                con_mode,
                session_key: SessionKey::new(info.session_key.secret().to_vec()),
                connection_secret,
                peer: Some(Identity {
                    name: info.ticket.name.clone(),
                    global_id: info.ticket.global_id,
                    caps: Caps {
                        allow_all: info.ticket.caps.allow_all,
                        caps: info.ticket.caps.caps.clone(),
                    },
                    proven: true,
                }),
            },
        })
    }
}
