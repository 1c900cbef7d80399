//! A client's tickets (CephXTicketManager / CephXTicketHandler): one per
//! service, each a session key and the sealed blob to present, with its
//! expiry; and the service ticket reply that carries them
//! (cephx_build_service_ticket_reply; docs/research/cephx-protocol.md §3.4).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use msgr_encoding::{Decode, Decoder, Encode, UTime};

use super::crypto::usage;
use super::key::CryptoKey;
use super::wire::{open, open_from, seal_into, ServiceTicket, TicketBlob};
use crate::{AuthError, Random};

/// One service's ticket as the client holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The session key shared with the service.
    pub session_key: CryptoKey,
    /// The ticket blob to present to the service, sealed for it.
    pub blob: TicketBlob,
    /// Unusable from then on.
    pub expires: UTime,
    /// Worth renewing from then on (a quarter of the validity before expiry).
    pub renew_after: UTime,
}

impl Ticket {
    /// Whether the ticket may still be used at `now`.
    pub fn valid_at(&self, now: UTime) -> bool {
        now < self.expires
    }
}

/// Tickets by service (`CEPH_ENTITY_TYPE_*` bit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tickets {
    by_service: BTreeMap<u32, Ticket>,
}

impl Tickets {
    /// The ticket for `service` (a `CEPH_ENTITY_TYPE_*` bit), if held.
    pub fn get(&self, service: u32) -> Option<&Ticket> {
        self.by_service.get(&service)
    }

    /// Holds `t` as the ticket for `service`, replacing any before.
    pub fn insert(&mut self, service: u32, t: Ticket) {
        self.by_service.insert(service, t);
    }

    /// Drops the ticket for `service`.
    pub fn remove(&mut self, service: u32) {
        self.by_service.remove(&service);
    }

    /// Services in `want` with no ticket valid until after `now`'s renewal
    /// point (`validate_tickets`' need).
    pub fn need(&self, want: u32, now: UTime) -> u32 {
        (0..32)
            .map(|b| 1u32 << b)
            .filter(|s| want & s != 0)
            .filter(|s| self.get(*s).is_none_or(|t| now >= t.renew_after))
            .fold(0, |a, s| a | s)
    }

    /// Reads a service ticket reply, decrypting each `CephXServiceTicket`
    /// with `principal` (usage 4) and, for a blob the server re-encrypted,
    /// with the service's previous session key (usage 5). Returns the
    /// tickets, with expiries counted from `now`.
    pub fn read_reply(
        &self,
        d: &mut Decoder<'_>,
        principal: &CryptoKey,
        now: UTime,
    ) -> Result<Vec<(u32, Ticket)>, AuthError> {
        let bad = |e: &dyn std::fmt::Display| AuthError::Malformed(format!("ticket reply: {e}"));
        let _reply_v = d.u8("service_ticket_reply_v").map_err(|e| bad(&e))?;
        let n = d.length("service tickets", 9).map_err(|e| bad(&e))?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let service = d.u32("service_id").map_err(|e| bad(&e))?;
            let _v = d.u8("service_ticket_v").map_err(|e| bad(&e))?;
            let st: ServiceTicket = open_from(d, principal, usage::TICKET_SESSION_KEY)
                .map_err(|e| AuthError::Denied(format!("service ticket for {service:#x}: {e}")))?;
            let is_enc = d.u8("is_enc").map_err(|e| bad(&e))? != 0;
            let blob_bl: Bytes = match is_enc {
                false => Bytes::decode(d).map_err(|e| bad(&e))?,
                true => {
                    let old = self.get(service).ok_or_else(|| {
                        AuthError::Denied(format!(
                            "re-encrypted ticket for {service:#x} without an old one"
                        ))
                    })?;
                    open_from::<Bytes>(d, &old.session_key, usage::TICKET_BLOB)
                        .map_err(|e| AuthError::Denied(format!("re-encrypted ticket: {e}")))?
                }
            };
            let blob =
                TicketBlob::decode_exact(&blob_bl, "CephXTicketBlob").map_err(|e| bad(&e))?;
            let (expires, renew_after) = match st.validity.sec {
                0 => (
                    UTime {
                        sec: u32::MAX,
                        nsec: 0,
                    },
                    UTime {
                        sec: u32::MAX,
                        nsec: 0,
                    },
                ),
                v => {
                    let expires = now.sec.saturating_add(v);
                    (
                        UTime {
                            sec: expires,
                            nsec: now.nsec,
                        },
                        UTime {
                            // expires >= v >= v / 4: never saturates.
                            sec: expires.saturating_sub(v / 4),
                            nsec: now.nsec,
                        },
                    )
                }
            };
            out.push((
                service,
                Ticket {
                    session_key: st.session_key,
                    blob,
                    expires,
                    renew_after,
                },
            ));
        }
        Ok(out)
    }
}

/// What a server puts in a service ticket reply for one service.
pub struct IssuedTicket<'a> {
    /// The service (`CEPH_ENTITY_TYPE_*` bit) the ticket is for.
    pub service: u32,
    /// The client's half: session key and validity.
    pub ticket: &'a ServiceTicket,
    /// The service's sealed half.
    pub blob: &'a TicketBlob,
    /// Re-encrypt the blob with this (the client's previous session key).
    pub encrypt_blob_with: Option<&'a CryptoKey>,
}

/// `cephx_build_service_ticket_reply`.
pub fn write_reply(
    out: &mut Vec<u8>,
    principal: &CryptoKey,
    tickets: &[IssuedTicket<'_>],
    rng: &dyn Random,
) {
    out.put_u8(1);
    out.put_u32_le(tickets.len() as u32);
    for t in tickets {
        out.put_u32_le(t.service);
        out.put_u8(1);
        seal_into(out, principal, usage::TICKET_SESSION_KEY, t.ticket, rng);
        let blob = t.blob.to_bytes();
        match t.encrypt_blob_with {
            None => {
                out.put_u8(0);
                blob.encode(out);
            }
            Some(old) => {
                out.put_u8(1);
                seal_into(out, old, usage::TICKET_BLOB, &blob, rng);
            }
        }
    }
}

/// Reads a `CephXTicketBlob.blob`'s contents with the service secret that
/// sealed it (usage 0x30; a raw envelope).
pub fn open_ticket_blob(
    secret: &CryptoKey,
    blob: &[u8],
) -> Result<super::wire::ServiceTicketInfo, super::wire::EnvelopeError> {
    open(secret, usage::TICKET_INFO, blob)
}
