//! Authenticating to a monitor over msgr1, which has no AUTH frames: the
//! session opens without an authorizer, then MAuth / MAuthReply messages
//! carry what msgr2's AUTH_REQUEST / AUTH_REPLY_MORE / AUTH_DONE carry
//! (MonConnection::start and authenticate for a v1 peer;
//! docs/research/msgr1-wire.md §6.1):
//!
//! 1. MAuth, protocol 0: `u8 1`, our methods, our name, our global_id;
//! 2. MAuthReply: the method the monitor picked, the global_id it gives
//!    us, and (cephx) its challenge;
//! 3. cephx: MAuth with CephXAuthenticate, answered with the AUTH ticket
//!    (and the others asked for), as AUTH_DONE's payload is.

use bytes::{BufMut, Bytes};
use msgr_auth::cephx::CephxConnAuth;
use msgr_auth::{method, AuthError, AuthPeer, ClientAuth, ConMode};
use msgr_encoding::{AuthName, Encode, EntityType};
use msgr_messages::{MAuth, MAuthReply};

use crate::config::MonAuth;

/// Where a candidate's authentication stands.
pub(crate) enum Auth {
    /// The first MAuth (our methods) is out.
    Negotiating,
    /// cephx's CephXAuthenticate is out.
    Cephx(Box<CephxConnAuth>),
}

/// What to do after a monitor's MAuthReply.
pub(crate) enum Step {
    /// Send this MAuth and wait for the next reply.
    Send(MAuth, Auth),
    /// Authenticated: the session is ours.
    Done,
}

/// The methods we offer, best first.
fn methods(auth: &MonAuth, none_fallback: bool) -> Vec<u32> {
    match auth {
        MonAuth::None => vec![method::NONE],
        MonAuth::Cephx(_) if none_fallback => vec![method::CEPHX, method::NONE],
        MonAuth::Cephx(_) => vec![method::CEPHX],
    }
}

/// The first MAuth (MonConnection::start for a v1 peer).
pub(crate) fn first(auth: &MonAuth, none_fallback: bool, name: &AuthName) -> MAuth {
    let global_id = match auth {
        MonAuth::Cephx(c) => c.global_id(),
        MonAuth::None => 0,
    };
    let mut p = vec![1u8];
    let methods = methods(auth, none_fallback);
    // A handful of methods: the count fits.
    p.put_u32_le(u32::try_from(methods.len()).unwrap_or(u32::MAX));
    for m in methods {
        p.put_u32_le(m);
    }
    name.encode(&mut p);
    p.put_u64_le(global_id);
    MAuth {
        protocol: 0,
        payload: Bytes::from(p),
        monmap_epoch: 0,
    }
}

/// The next step after `reply`, from `at`.
pub(crate) fn on_reply(
    at: Auth,
    reply: &MAuthReply,
    auth: &MonAuth,
    none_fallback: bool,
    monmap_epoch: u32,
) -> Result<Step, AuthError> {
    if reply.result < 0 {
        let why = match reply.result {
            -13 => "EACCES: wrong key, unknown entity, or a stale ticket",
            -95 => "EOPNOTSUPP: no auth method we offered is allowed",
            -1 => "EPERM",
            _ => "",
        };
        return Err(AuthError::Denied(format!(
            "the monitor refused us: {} ({why}){}",
            reply.result,
            match reply.message.is_empty() {
                true => String::new(),
                false => format!(": {}", reply.message),
            }
        )));
    }
    match at {
        Auth::Negotiating => {
            if !methods(auth, none_fallback).contains(&reply.protocol) {
                return Err(AuthError::MethodNotSupported {
                    method: reply.protocol,
                });
            }
            let MonAuth::Cephx(cx) = auth else {
                return Ok(Step::Done);
            };
            if reply.protocol == method::NONE {
                return Ok(Step::Done);
            }
            let mut a = Box::new(cx.conn_auth());
            let mon = AuthPeer {
                entity_type: EntityType::MON,
            };
            // msgr2's AUTH_REQUEST to a monitor; msgr1 sent its own first
            // message instead, and goes on from the challenge.
            a.request(&mon, &[method::CEPHX])?;
            let payload = a.reply_more(&reply.payload)?;
            let m = MAuth {
                protocol: method::CEPHX,
                payload,
                monmap_epoch,
            };
            Ok(Step::Send(m, Auth::Cephx(a)))
        }
        Auth::Cephx(mut a) => {
            a.done(reply.global_id, ConMode::CRC, &reply.payload)?;
            Ok(Step::Done)
        }
    }
}
