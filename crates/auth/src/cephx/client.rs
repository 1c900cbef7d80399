//! The cephx client (CephxClientHandler + MonClient's auth hooks;
//! docs/research/cephx-protocol.md §6–7, §9).
//!
//! A [`CephxClient`] is what one entity knows — its name, key, global id
//! and tickets — shared by every connection of its messenger. Each
//! connection runs a [`CephxConnAuth`], whose phases are:
//!
//! ```text
//! to a monitor:  Start --request--> Challenged? --reply_more--> Authenticating --done--> Done
//!                (AUTH_REQUEST {10, name, global_id}; AUTH_REPLY_MORE CephXServerChallenge;
//!                 AUTH_REQUEST_MORE GET_AUTH_SESSION_KEY; AUTH_DONE tickets + secret)
//! to a service:  Start --request--> Authorizing --reply_more (challenge)--> Authorizing --done--> Done
//!                (AUTH_REQUEST authorizer; AUTH_REPLY_MORE CephXAuthorizeChallenge;
//!                 AUTH_REQUEST_MORE authorizer with challenge+1; AUTH_DONE CephXAuthorizeReply)
//! ```
//!
//! A reconnect to a monitor presents the previous global id and the old
//! AUTH ticket (global-id reclaim, required when the cluster has
//! `auth_allow_insecure_global_id_reclaim = false`).

use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes};
use msgr_encoding::{AuthName, Decode, Decoder, Encode, EntityType, UTime};

use super::crypto::usage;
use super::key::CryptoKey;
use super::key_server::KeyServer;
use super::tickets::{Ticket, Tickets};
use super::wire::{
    client_server_challenge, open, open_from, request, seal_into, Authenticate, Authorize,
    AuthorizeChallenge, AuthorizeReply, AuthorizerHead, RequestHeader, ResponseHeader,
    ServerChallenge, AUTH_MODE_MON,
};
use crate::{
    method, AuthError, AuthOutcome, AuthPeer, AuthRequest, ClientAuth, Clock, ConMode, Random,
    SessionKey,
};

/// `CEPH_ENTITY_TYPE_AUTH`: the AUTH service's ticket.
const AUTH_SERVICE: u32 = EntityType::AUTH.0 as u32;

/// The shared cephx identity of one entity.
pub struct CephxClient {
    name: AuthName,
    key: CryptoKey,
    /// Modes to offer monitors (`ms_mon_client_mode`) and services
    /// (`ms_client_mode`), best first.
    pub mon_modes: Vec<ConMode>,
    /// Modes to offer services (OSDs, MGRs, MDSs) (`ms_client_mode`), best first.
    pub service_modes: Vec<ConMode>,
    rng: Arc<dyn Random>,
    clock: Clock,
    state: Mutex<ClientState>,
}

#[derive(Default)]
struct ClientState {
    global_id: u64,
    /// The monitor session's server challenge: an AUTH ticket renewal over
    /// MAuth answers it again (the mon keeps it for the session).
    server_challenge: u64,
    /// Services whose tickets are wanted (`set_want_keys`).
    want: u32,
    tickets: Tickets,
}

impl CephxClient {
    /// The cephx identity of `name` with secret `key`, offering secure then crc to monitors and
    /// crc then secure to services, and wanting tickets for monitors, OSDs and managers.
    pub fn new(name: AuthName, key: CryptoKey, rng: Arc<dyn Random>, clock: Clock) -> CephxClient {
        CephxClient {
            name,
            key,
            mon_modes: vec![ConMode::SECURE, ConMode::CRC],
            service_modes: vec![ConMode::CRC, ConMode::SECURE],
            rng,
            clock,
            state: Mutex::new(ClientState {
                want: (EntityType::MON.0 | EntityType::OSD.0 | EntityType::MGR.0) as u32,
                ..Default::default()
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ClientState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entity name it authenticates as.
    pub fn name(&self) -> &AuthName {
        &self.name
    }

    /// The global id the monitors gave it; 0 before the first authentication.
    pub fn global_id(&self) -> u64 {
        self.state().global_id
    }

    /// Services (`CEPH_ENTITY_TYPE_*` bits) to get tickets for.
    pub fn set_want(&self, services: u32) {
        self.state().want = services;
    }

    /// A copy of the ticket for `service`.
    pub fn ticket(&self, service: EntityType) -> Option<Ticket> {
        self.state().tickets.get(service.0 as u32).cloned()
    }

    /// Installs a ticket obtained elsewhere (e.g. minted by a local key
    /// server for a self-contained benchmark).
    pub fn install_ticket(&self, service: EntityType, global_id: u64, ticket: Ticket) {
        let mut s = self.state();
        s.global_id = global_id;
        s.tickets.insert(service.0 as u32, ticket);
    }

    /// Mints this client's ticket to `service` from `keys` and installs it
    /// under `global_id`, as a monitor session would have fetched it: for
    /// self-contained benchmarks, servers and tests that hold the service
    /// secret themselves. `None` (nothing installed) when `keys` has no key
    /// for this client or no secret for `service`.
    pub fn grant_from(
        &self,
        keys: &KeyServer,
        service: EntityType,
        global_id: u64,
        ttl: u32,
    ) -> Option<()> {
        let now = (self.clock)();
        let minted = keys.mint(
            &self.name,
            global_id,
            service.0 as u32,
            ttl,
            now,
            &*self.rng,
        )?;
        self.install_ticket(service, global_id, minted.client_ticket(now));
        Some(())
    }

    /// Forgets the global id and tickets (MonClient::shutdown).
    pub fn reset(&self) {
        let mut s = self.state();
        s.global_id = 0;
        s.tickets = Tickets::default();
    }

    /// Services wanted (and the AUTH service itself) whose tickets are
    /// missing or due for renewal (`validate_tickets`).
    pub fn need(&self) -> u32 {
        let s = self.state();
        s.tickets.need(s.want | AUTH_SERVICE, (self.clock)())
    }

    /// The MAuth payload renewing the tickets in `need`: with the AUTH
    /// ticket due, CEPHX_GET_AUTH_SESSION_KEY (answering the session's
    /// challenge again, presenting the old ticket, asking for the other
    /// services too); else CEPHX_GET_PRINCIPAL_SESSION_KEY (an authorizer
    /// for the AUTH service, then `CephXServiceTicketRequest`).
    pub fn build_ticket_request(&self, need: u32) -> Result<Bytes, AuthError> {
        let s = self.state();
        let auth = s
            .tickets
            .get(AUTH_SERVICE)
            .ok_or_else(|| AuthError::NoKey("the AUTH service (not authenticated)".into()))?;
        let mut out = Vec::new();
        if need & AUTH_SERVICE != 0 {
            RequestHeader {
                request_type: request::GET_AUTH_SESSION_KEY,
            }
            .encode(&mut out);
            let client_challenge = self.rng.u64();
            Authenticate {
                struct_v: 3,
                client_challenge,
                key: client_server_challenge(&self.key, s.server_challenge, client_challenge),
                old_ticket: auth.blob.clone(),
                other_keys: s.want | AUTH_SERVICE,
            }
            .encode(&mut out);
            return Ok(Bytes::from(out));
        }
        RequestHeader {
            request_type: request::GET_PRINCIPAL_SESSION_KEY,
        }
        .encode(&mut out);
        let nonce = self.rng.u64();
        write_authorizer(
            &mut out,
            s.global_id,
            AUTH_SERVICE,
            auth,
            nonce,
            None,
            &*self.rng,
        );
        super::wire::ServiceTicketRequest { keys: need }.encode(&mut out);
        Ok(Bytes::from(out))
    }

    /// Reads an MAuthReply's payload to a ticket request: service tickets
    /// under the AUTH session key, or a renewed AUTH ticket (under our key,
    /// its blob under the old session key) with the other tickets after it.
    pub fn handle_ticket_reply(&self, result_bl: &[u8]) -> Result<(), AuthError> {
        let now = (self.clock)();
        let mut s = self.state();
        let mut d = Decoder::new(result_bl);
        let h = ResponseHeader::decode(&mut d)
            .map_err(|e| AuthError::Malformed(format!("MAuthReply: {e}")))?;
        if h.status < 0 {
            return Err(AuthError::Denied(format!(
                "ticket request refused: {}",
                h.status
            )));
        }
        let principal = match h.request_type {
            request::GET_AUTH_SESSION_KEY => self.key.clone(),
            _ => s
                .tickets
                .get(AUTH_SERVICE)
                .map(|t| t.session_key.clone())
                .ok_or_else(|| AuthError::NoKey("the AUTH service".into()))?,
        };
        let got = s.tickets.read_reply(&mut d, &principal, now)?;
        for (svc, t) in got {
            s.tickets.insert(svc, t);
        }
        if h.request_type == request::GET_AUTH_SESSION_KEY && !d.is_empty() {
            let bad = |e: &dyn std::fmt::Display| AuthError::Malformed(format!("MAuthReply: {e}"));
            // No connection secret on this path; then the other tickets,
            // under the new AUTH session key.
            let _cbl = Bytes::decode(&mut d).map_err(|e| bad(&e))?;
            let extra = Bytes::decode(&mut d).map_err(|e| bad(&e))?;
            if !extra.is_empty() {
                let session = s
                    .tickets
                    .get(AUTH_SERVICE)
                    .map(|t| t.session_key.clone())
                    .ok_or_else(|| bad(&"no AUTH ticket"))?;
                let more = s
                    .tickets
                    .read_reply(&mut Decoder::new(&extra), &session, now)?;
                for (svc, t) in more {
                    s.tickets.insert(svc, t);
                }
            }
        }
        Ok(())
    }

    /// A per-connection authenticator.
    pub fn conn_auth(self: &Arc<Self>) -> CephxConnAuth {
        CephxConnAuth {
            client: self.clone(),
            phase: Phase::Start,
        }
    }
}

/// Appends an authorizer for `service` (CephXTicketHandler::build_authorizer).
fn write_authorizer(
    out: &mut Vec<u8>,
    global_id: u64,
    service: u32,
    ticket: &Ticket,
    nonce: u64,
    challenge: Option<u64>,
    rng: &dyn Random,
) {
    AuthorizerHead {
        global_id,
        service_id: service,
        ticket: ticket.blob.clone(),
    }
    .encode(out);
    let part_b = Authorize {
        nonce,
        have_challenge: challenge.is_some(),
        server_challenge_plus_one: challenge.map_or(0, |c| c.wrapping_add(1)),
    };
    seal_into(out, &ticket.session_key, usage::AUTHORIZE, &part_b, rng);
}

enum Phase {
    Start,
    /// AUTH_REQUEST sent to a monitor with this global id.
    MonRequested {
        global_id: u64,
    },
    /// AUTH_REQUEST_MORE sent.
    MonAuthenticating,
    /// An authorizer sent for `service`.
    Authorizing {
        service: u32,
        ticket: Ticket,
        global_id: u64,
        nonce: u64,
    },
    Done,
}

/// One connection's cephx exchange, client side.
pub struct CephxConnAuth {
    client: Arc<CephxClient>,
    phase: Phase,
}

impl ClientAuth for CephxConnAuth {
    fn request(&mut self, peer: &AuthPeer, allowed: &[u32]) -> Result<AuthRequest, AuthError> {
        if !allowed.is_empty() && !allowed.contains(&method::CEPHX) {
            return Err(AuthError::NoMethodLeft);
        }
        let c = &self.client;
        if peer.entity_type == EntityType::MON {
            let global_id = c.global_id();
            let mut out = vec![AUTH_MODE_MON];
            c.name.encode(&mut out);
            out.put_u64_le(global_id);
            self.phase = Phase::MonRequested { global_id };
            return Ok(AuthRequest {
                method: method::CEPHX,
                preferred_modes: c.mon_modes.clone(),
                payload: Bytes::from(out),
            });
        }
        let service = peer.entity_type.0 as u32;
        let (ticket, global_id) = {
            let s = c.state();
            let now = (c.clock)();
            let t = s
                .tickets
                .get(service)
                .filter(|t| t.valid_at(now))
                .cloned()
                .ok_or_else(|| AuthError::NoKey(format!("a {} ticket", peer.entity_type)))?;
            (t, s.global_id)
        };
        let nonce = c.rng.u64();
        let mut out = Vec::new();
        write_authorizer(&mut out, global_id, service, &ticket, nonce, None, &*c.rng);
        self.phase = Phase::Authorizing {
            service,
            ticket,
            global_id,
            nonce,
        };
        Ok(AuthRequest {
            method: method::CEPHX,
            preferred_modes: c.service_modes.clone(),
            payload: Bytes::from(out),
        })
    }

    fn reply_more(&mut self, payload: &[u8]) -> Result<Bytes, AuthError> {
        let c = self.client.clone();
        match &self.phase {
            Phase::MonRequested { global_id } => {
                let ch = ServerChallenge::decode_exact(payload, "CephXServerChallenge")
                    .map_err(|e| AuthError::Malformed(e.to_string()))?;
                let client_challenge = c.rng.u64();
                let key = client_server_challenge(&c.key, ch.server_challenge, client_challenge);
                c.state().server_challenge = ch.server_challenge;
                let (old_ticket, other_keys) = {
                    let s = c.state();
                    // Reclaiming a global id needs the old AUTH ticket.
                    let old = match *global_id {
                        0 => Default::default(),
                        _ => s
                            .tickets
                            .get(AUTH_SERVICE)
                            .map(|t| t.blob.clone())
                            .unwrap_or_default(),
                    };
                    (old, s.want | AUTH_SERVICE)
                };
                let mut out = Vec::new();
                RequestHeader {
                    request_type: request::GET_AUTH_SESSION_KEY,
                }
                .encode(&mut out);
                Authenticate {
                    struct_v: 3,
                    client_challenge,
                    key,
                    old_ticket,
                    other_keys,
                }
                .encode(&mut out);
                self.phase = Phase::MonAuthenticating;
                Ok(Bytes::from(out))
            }
            Phase::Authorizing {
                service,
                ticket,
                global_id,
                nonce,
            } => {
                let ch: AuthorizeChallenge =
                    open(&ticket.session_key, usage::AUTHORIZE_CHALLENGE, payload)
                        .map_err(|e| AuthError::Denied(format!("authorizer challenge: {e}")))?;
                let mut out = Vec::new();
                write_authorizer(
                    &mut out,
                    *global_id,
                    *service,
                    ticket,
                    *nonce,
                    Some(ch.server_challenge),
                    &*c.rng,
                );
                Ok(Bytes::from(out))
            }
            _ => Err(AuthError::Malformed("unexpected AUTH_REPLY_MORE".into())),
        }
    }

    fn done(
        &mut self,
        global_id: u64,
        con_mode: ConMode,
        payload: &[u8],
    ) -> Result<AuthOutcome, AuthError> {
        let c = self.client.clone();
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        match phase {
            Phase::MonAuthenticating => c.mon_done(global_id, con_mode, payload),
            Phase::Authorizing { ticket, nonce, .. } => {
                let mut d = Decoder::new(payload);
                let reply: AuthorizeReply =
                    open_from(&mut d, &ticket.session_key, usage::AUTHORIZE_REPLY)
                        .map_err(|e| AuthError::Denied(format!("authorizer reply: {e}")))?;
                let expected = nonce.wrapping_add(1).to_le_bytes();
                if !crate::ct_eq(&reply.nonce_plus_one.to_le_bytes(), &expected) {
                    return Err(AuthError::Denied(
                        "authorizer reply has the wrong nonce".into(),
                    ));
                }
                Ok(AuthOutcome {
                    global_id,
                    con_mode,
                    session_key: SessionKey::new(ticket.session_key.secret().to_vec()),
                    connection_secret: reply.connection_secret,
                    peer: None,
                })
            }
            _ => Err(AuthError::Malformed("unexpected AUTH_DONE".into())),
        }
    }

    fn bad_method(
        &mut self,
        m: u32,
        result: i32,
        allowed: &[u32],
        allowed_modes: &[ConMode],
    ) -> Result<(), AuthError> {
        // cephx is all this authenticator speaks; a refusal of it is final.
        if m == method::CEPHX && result == -13 {
            return Err(AuthError::Denied(format!(
                "the server refused {} (EACCES: wrong key, unknown entity, or a stale ticket)",
                self.client.name
            )));
        }
        // The method is allowed, but none of the modes we offered.
        let offered = match self.phase {
            Phase::MonRequested { .. } | Phase::MonAuthenticating => &self.client.mon_modes,
            _ => &self.client.service_modes,
        };
        if m == method::CEPHX
            && allowed.contains(&method::CEPHX)
            && !allowed_modes.is_empty()
            && !allowed_modes.iter().any(|a| offered.contains(a))
        {
            return Err(AuthError::ModeRefused {
                offered: offered.clone(),
                allowed: allowed_modes.to_vec(),
            });
        }
        if allowed.contains(&method::CEPHX) && m != method::CEPHX {
            return Ok(());
        }
        Err(AuthError::NoMethodLeft)
    }
}

impl CephxClient {
    /// AUTH_DONE from a monitor (CephxClientHandler::handle_response for
    /// GET_AUTH_SESSION_KEY): the AUTH ticket under our key, then the
    /// connection secret and the other tickets under its session key.
    fn mon_done(
        &self,
        global_id: u64,
        con_mode: ConMode,
        payload: &[u8],
    ) -> Result<AuthOutcome, AuthError> {
        let bad = |e: &dyn std::fmt::Display| AuthError::Malformed(format!("AUTH_DONE: {e}"));
        let now = (self.clock)();
        let mut d = Decoder::new(payload);
        let h = ResponseHeader::decode(&mut d).map_err(|e| bad(&e))?;
        if h.request_type != request::GET_AUTH_SESSION_KEY {
            return Err(bad(&format!("response type {:#x}", h.request_type)));
        }
        let mut s = self.state();
        let first = s.tickets.read_reply(&mut d, &self.key, now)?;
        for (svc, t) in first {
            s.tickets.insert(svc, t);
        }
        let session = s
            .tickets
            .get(AUTH_SERVICE)
            .map(|t| t.session_key.clone())
            .ok_or_else(|| bad(&"no AUTH ticket"))?;
        let mut connection_secret = crate::Secret::default();
        if !d.is_empty() {
            let cbl = Bytes::decode(&mut d).map_err(|e| bad(&e))?;
            if !cbl.is_empty() {
                let mut cd = Decoder::new(&cbl);
                connection_secret = open_from(&mut cd, &session, usage::AUTH_CONNECTION_SECRET)
                    .map_err(|e| AuthError::Denied(format!("connection secret: {e}")))?;
            }
            let extra = Bytes::decode(&mut d).map_err(|e| bad(&e))?;
            if !extra.is_empty() {
                let mut ed = Decoder::new(&extra);
                let more = s.tickets.read_reply(&mut ed, &session, now)?;
                for (svc, t) in more {
                    s.tickets.insert(svc, t);
                }
            }
        }
        s.global_id = global_id;
        Ok(AuthOutcome {
            global_id,
            con_mode,
            session_key: SessionKey::new(session.secret().to_vec()),
            connection_secret,
            peer: None,
        })
    }

    /// The time now, as this client sees it.
    pub fn now(&self) -> UTime {
        (self.clock)()
    }
}
