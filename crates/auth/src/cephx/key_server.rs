//! A key server (src/auth/cephx/CephxKeyServer.cc, reduced to what our
//! servers need): entity keys from a keyring, service secrets, global ids,
//! and minting tickets.
//!
//! Service secrets: a ticket blob for service `S` is sealed with a secret
//! named by `secret_id`. Ceph's monitors rotate such secrets and hand them
//! to daemons; here a service's secret is either the fixed key of the
//! keyring entity `S.` (e.g. `[osd.]`), named by `secret_id = u64::MAX` as
//! Ceph does for fixed service keys, or a secret added with
//! [`KeyServer::add_service_secret`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use msgr_encoding::{AuthName, Encode, EntityType, UTime};

use super::key::{CryptoKey, KeyKind};
use super::keyring::Keyring;
use super::tickets::Ticket;
use super::wire::{seal, AuthTicket, CapsInfo, ServiceTicket, ServiceTicketInfo, TicketBlob};
use crate::Random;

/// `secret_id` of a service's fixed key.
pub const FIXED_SECRET_ID: u64 = u64::MAX;

/// `auth_mon_ticket_ttl` and `auth_service_ticket_ttl` defaults.
pub const AUTH_TICKET_TTL: u32 = 259_200;
/// `auth_service_ticket_ttl`'s default, in seconds: how long a service ticket lasts.
pub const SERVICE_TICKET_TTL: u32 = 3_600;

/// A minted ticket: what the client receives and what the blob seals.
#[derive(Debug, Clone)]
pub struct Minted {
    /// The client's half: the session key and validity, sealed for the client.
    pub service_ticket: ServiceTicket,
    /// The service's half, sealed with the service's secret.
    pub blob: TicketBlob,
    /// What the blob seals, in the clear (for the server's own records and tests).
    pub info: ServiceTicketInfo,
}

impl Minted {
    /// The ticket as a client stores it, valid from `now`.
    pub fn client_ticket(&self, now: UTime) -> Ticket {
        let v = self.service_ticket.validity.sec;
        Ticket {
            session_key: self.service_ticket.session_key.clone(),
            blob: self.blob.clone(),
            expires: UTime {
                sec: now.sec.saturating_add(v),
                nsec: now.nsec,
            },
            renew_after: UTime {
                // Renewed after three quarters of the validity (v / 4 <= v:
                // the subtraction never saturates).
                sec: now.sec.saturating_add(v.saturating_sub(v / 4)),
                nsec: now.nsec,
            },
        }
    }
}

/// Keys and secrets a cephx server works from.
pub struct KeyServer {
    keyring: Keyring,
    /// Extra secrets by service bit and secret id.
    secrets: BTreeMap<(u32, u64), CryptoKey>,
    next_global_id: AtomicU64,
}

impl KeyServer {
    /// A key server for the entities of `keyring`, with no extra service secrets.
    pub fn new(keyring: Keyring) -> KeyServer {
        KeyServer {
            keyring,
            secrets: BTreeMap::new(),
            next_global_id: AtomicU64::new(4096),
        }
    }

    /// Adds a (rotating-style) secret for `service`.
    pub fn add_service_secret(&mut self, service: EntityType, secret_id: u64, key: CryptoKey) {
        self.secrets.insert((service.0 as u32, secret_id), key);
    }

    /// An entity's long-term key.
    pub fn entity_key(&self, name: &AuthName) -> Option<&CryptoKey> {
        self.keyring.get(name).map(|e| &e.key)
    }

    /// An entity's caps for a service (`caps mon = "..."`).
    pub fn caps(&self, name: &AuthName, service: &str) -> Option<&str> {
        self.keyring
            .get(name)
            .and_then(|e| e.caps.get(service))
            .map(String::as_str)
    }

    /// The secret that seals tickets for `service`: the newest added one,
    /// else the fixed key of `[TYPE.]`.
    pub fn sealing_secret(&self, service: u32) -> Option<(u64, &CryptoKey)> {
        if let Some(((_, id), k)) = self
            .secrets
            .range((service, 0)..=(service, u64::MAX))
            .next_back()
        {
            return Some((*id, k));
        }
        let ty = EntityType(u8::try_from(service).ok()?);
        self.keyring
            .get(&AuthName::new(ty, ""))
            .map(|e| (FIXED_SECRET_ID, &e.key))
    }

    /// The secret named by a ticket blob (`KeyStore::get_service_secret`).
    pub fn service_secret(&self, service: u32, secret_id: u64) -> Option<&CryptoKey> {
        if secret_id == FIXED_SECRET_ID {
            let ty = EntityType(u8::try_from(service).ok()?);
            return self.keyring.get(&AuthName::new(ty, "")).map(|e| &e.key);
        }
        self.secrets.get(&(service, secret_id))
    }

    /// A fresh global id (AuthMonitor::_assign_global_id).
    pub fn assign_global_id(&self) -> u64 {
        self.next_global_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Mints a ticket for `name` to `service` (KeyServer::build_session_auth_info
    /// and cephx_build_service_ticket_blob): a new session key of the
    /// principal's key type (as Ceph 20 does), the caps for the service,
    /// the blob sealed with the service secret.
    pub fn mint(
        &self,
        name: &AuthName,
        global_id: u64,
        service: u32,
        ttl: u32,
        now: UTime,
        rng: &dyn Random,
    ) -> Option<Minted> {
        let principal = self.entity_key(name)?;
        let kind = match principal.kind {
            KeyKind::None => KeyKind::Aes128,
            k => k,
        };
        let session_key = CryptoKey::random(kind, now, rng);
        let service_name = EntityType(u8::try_from(service).ok()?).name().unwrap_or("");
        let caps = self
            .caps(name, service_name)
            .map(|c| c.to_string().to_bytes())
            .unwrap_or_default();
        let info = ServiceTicketInfo {
            ticket: AuthTicket {
                name: name.clone(),
                global_id,
                created: now,
                expires: UTime {
                    sec: now.sec.saturating_add(ttl),
                    nsec: now.nsec,
                },
                caps: CapsInfo {
                    allow_all: false,
                    caps,
                },
                flags: 0,
            },
            session_key: session_key.clone(),
        };
        let (secret_id, secret) = self.sealing_secret(service)?;
        let blob = TicketBlob {
            secret_id,
            blob: Bytes::from(seal(secret, super::usage::TICKET_INFO, &info, rng)),
        };
        Some(Minted {
            service_ticket: ServiceTicket {
                session_key,
                validity: UTime { sec: ttl, nsec: 0 },
            },
            blob,
            info,
        })
    }
}
