//! The messenger's side of an accepted ident: find the existing connection
//! to the same peer, decide ([`crate::decide`]), and carry the decision out
//! on both connections. Drivers keep the map of connections; these
//! functions hold the rules, so every driver (the tokio runtime, the pair
//! tests, the simulator) applies them the same way.

use std::net::SocketAddr;
use std::time::Instant;

use msgr_encoding::{EntityAddrvec, UTime};

use crate::decide::{self, Decision};
use crate::{Conn, IdentRequest};

/// How connections are keyed: the peer's msgr2 (or first) address and
/// nonce (AsyncMessenger's conns map is keyed by the peer's addrvec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerKey {
    pub addr: SocketAddr,
    pub nonce: u32,
}

impl PeerKey {
    pub fn of(addrs: &EntityAddrvec) -> Option<PeerKey> {
        let a = addrs.msgr2().or(addrs.0.first())?;
        Some(PeerKey {
            addr: a.addr?,
            nonce: a.nonce,
        })
    }
}

/// The key under which an accepting connection's peer is looked up, and
/// whether the lookup happens at all (a lossy server that does not register
/// its clients keeps them anonymous).
pub fn lookup_key(accepting: &Conn, req: &IdentRequest) -> Option<PeerKey> {
    let policy = accepting.peer().policy;
    if policy.server && policy.lossy && !policy.register_lossy_clients {
        return None;
    }
    let addrs = match req {
        IdentRequest::New(c) => &c.addrs,
        IdentRequest::Reconnect(r) => &r.addrs,
    };
    PeerKey::of(addrs)
}

/// The decision for `req`, held by `accepting`, given the existing
/// connection to the same peer.
pub fn decide(accepting: &Conn, existing: Option<&Conn>, req: &IdentRequest) -> Decision {
    let info = existing.map(|e| e.existing_info());
    let me = accepting.my_msgr2_addr();
    let peer = accepting.peer().target_addr;
    let newcomer = accepting.peer().owner();
    let resetcheck = accepting.peer().policy.resetcheck;
    match req {
        IdentRequest::New(c) => {
            decide::on_client_ident(c, info.as_ref(), &newcomer, &peer, &me, resetcheck)
        }
        IdentRequest::Reconnect(r) => {
            decide::on_reconnect(r, info.as_ref(), &newcomer, &peer, &me, resetcheck)
        }
    }
}

/// What the driver must do with its map after [`apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `accepting` now holds a session: register it under the peer's key.
    RegisterAccepting,
    /// `accepting`'s socket moved into the existing connection; drop
    /// `accepting` and hand its socket to the existing connection's driver.
    MovedToExisting,
    /// Nothing changes in the map.
    Nothing,
}

/// Carries out `decision` on the accepting connection and the existing one.
pub fn apply(
    decision: Decision,
    accepting: &mut Conn,
    existing: Option<&mut Conn>,
    stamp: UTime,
    now: Instant,
) -> Outcome {
    match (decision, existing) {
        (Decision::Reuse { reset_session, .. }, Some(ex)) => match accepting.take_for_reuse() {
            Some(reuse) => {
                ex.adopt(reuse, reset_session, now);
                Outcome::MovedToExisting
            }
            None => Outcome::Nothing,
        },
        (Decision::ReplaceLossy, Some(ex)) => {
            ex.close_replaced();
            accepting.resolve(Decision::NewSession, now);
            Outcome::RegisterAccepting
        }
        (Decision::Wait, Some(ex)) => {
            // Make sure our own connection completes rather than standing by.
            ex.send_keepalive(stamp, now);
            accepting.resolve(Decision::Wait, now);
            Outcome::Nothing
        }
        (d @ (Decision::NewSession | Decision::Reuse { .. } | Decision::ReplaceLossy), _) => {
            let d = if matches!(d, Decision::Reuse { .. }) {
                Decision::NewSession
            } else {
                d
            };
            accepting.resolve(d, now);
            Outcome::RegisterAccepting
        }
        (d, _) => {
            accepting.resolve(d, now);
            Outcome::Nothing
        }
    }
}
