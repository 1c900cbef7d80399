//! The messenger's side of an accepted ident: find the existing connection
//! to the same peer, decide ([`crate::decide`]), and carry the decision out
//! on both connections. Drivers keep the map of connections; these
//! functions hold the rules, so every driver (the sharded runtime, the pair
//! tests, the simulator, the fuzzer) applies them the same way.
//!
//! The two connections may live on different shards, so the steps are
//! separate and exchange only data: the accepting connection sends an
//! [`Ask`]; the existing one decides with its own state and carries out
//! its half ([`apply_existing`]); the accepting one carries out its half
//! ([`apply_accepting`]), which for a Reuse yields the socket's state for
//! the existing one to [`adopt`]. Between the decision and the adoption
//! the existing connection is `replacing`, as in Ceph, so that another
//! ident meanwhile is told to wait. [`resolve`] runs the steps in order
//! for drivers that hold both connections.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Instant;

use msgr_encoding::{EntityAddr, EntityAddrvec, UTime};

use crate::conn::{Conn, Reuse};
use crate::decide::{self, Decision, Owner};
use crate::ident::IdentRequest;

/// How connections are keyed: the peer's msgr2 (or first) address and
/// nonce (AsyncMessenger's conns map is keyed by the peer's addrvec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerKey {
    /// The peer's IP and port.
    pub addr: SocketAddr,
    /// The peer's nonce: tells a restarted messenger at the same address
    /// from its previous incarnation.
    pub nonce: u32,
}

impl PeerKey {
    /// The key of a peer with addresses `addrs`: its msgr2 address, else its
    /// first; None when that has no IP and port.
    pub fn of(addrs: &EntityAddrvec) -> Option<PeerKey> {
        let a = addrs.msgr2().or(addrs.0.first())?;
        Some(PeerKey {
            addr: a.addr?,
            nonce: a.nonce,
        })
    }
}

/// Which connection holds each peer: one per peer key (AsyncMessenger's
/// `conns`), whatever a driver names its connections by (an index, a
/// handle to a connection on another shard).
#[derive(Debug, Clone)]
pub struct Registry<H> {
    by_peer: HashMap<PeerKey, H>,
}

impl<H> Default for Registry<H> {
    fn default() -> Self {
        Registry {
            by_peer: HashMap::new(),
        }
    }
}

impl<H: PartialEq> Registry<H> {
    /// The connection registered for `key`.
    pub fn holder(&self, key: &PeerKey) -> Option<&H> {
        self.by_peer.get(key)
    }

    /// Makes `conn` the holder of `key` (a new session, a dialled peer).
    pub fn register(&mut self, key: PeerKey, conn: H) {
        self.by_peer.insert(key, conn);
    }

    /// `conn` no longer holds `key`, if it still does (another connection
    /// may have been registered in its place meanwhile).
    pub fn forget(&mut self, key: &PeerKey, conn: &H) {
        if self.by_peer.get(key) == Some(conn) {
            self.by_peer.remove(key);
        }
    }

    /// `conn` holds no peer any more.
    pub fn forget_holder(&mut self, conn: &H) {
        self.by_peer.retain(|_, h| h != conn);
    }

    /// Forgets every peer.
    pub fn clear(&mut self) {
        self.by_peer.clear();
    }

    /// Every registered connection.
    pub fn holders(&self) -> impl Iterator<Item = &H> {
        self.by_peer.values()
    }

    /// How many peers are registered.
    pub fn len(&self) -> usize {
        self.by_peer.len()
    }

    /// Whether no peer is registered.
    pub fn is_empty(&self) -> bool {
        self.by_peer.is_empty()
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
    match req {
        IdentRequest::New(c) => PeerKey::of(&c.addrs),
        IdentRequest::Reconnect(r) => PeerKey::of(&r.addrs),
        IdentRequest::V1(c) => PeerKey::of(&c.addrs()),
    }
}

/// What an accepting connection holding `req` brings to the decision: the
/// ident, and who asks where. It is all data, so the connection that
/// decides (the existing one, which may live on another shard) needs
/// nothing else of the asker.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The ident the accepted peer sent.
    pub req: IdentRequest,
    newcomer: Owner,
    /// Our address on the accepting socket (msgr2's; msgr1's for a
    /// CONNECT), which a race compares with the peer's.
    me: EntityAddr,
    /// The peer's address, as its ident gave it.
    peer: EntityAddr,
    resetcheck: bool,
}

impl Ask {
    /// What `accepting`, which received `req`, brings to the decision: the
    /// newcomer's owner, our address on its socket (msgr1's for a CONNECT),
    /// the peer's, and its policy's resetcheck.
    pub fn of(accepting: &Conn, req: IdentRequest) -> Ask {
        let me = match &req {
            IdentRequest::V1(_) => crate::v1::handshake::my_legacy_addr(accepting.my_addrs()),
            _ => accepting.my_msgr2_addr(),
        };
        Ask {
            req,
            newcomer: accepting.owner(),
            me,
            peer: accepting.peer().target_addr,
            resetcheck: accepting.peer().policy.resetcheck,
        }
    }
}

/// The decision on `ask`, given the existing connection to the same peer
/// (decided where that connection lives, with its state as it is then).
pub fn decide(ask: &Ask, existing: Option<&Conn>) -> Decision {
    let info = existing.map(|e| e.existing_info());
    let (newcomer, peer, me, resetcheck) = (&ask.newcomer, &ask.peer, &ask.me, ask.resetcheck);
    match &ask.req {
        IdentRequest::New(c) => {
            decide::on_client_ident(c, info.as_ref(), newcomer, peer, me, resetcheck)
        }
        IdentRequest::Reconnect(r) => {
            decide::on_reconnect(r, info.as_ref(), newcomer, peer, me, resetcheck)
        }
        IdentRequest::V1(c) => {
            decide::on_connect_v1(&c.connect, info.as_ref(), newcomer, peer, me, resetcheck)
        }
    }
}

/// What the driver must do with its map of connections after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `accepting` now holds a session: register it under the peer's key.
    RegisterAccepting,
    /// `accepting`'s socket moves into the existing connection; drop
    /// `accepting` and hand its socket to the existing connection's driver.
    MovedToExisting,
    /// Nothing changes in the map.
    Nothing,
}

/// What `decision` does to the map (`existing`: there is an existing
/// connection).
pub fn outcome(decision: &Decision, existing: bool) -> Outcome {
    match decision {
        Decision::Reuse { .. } if existing => Outcome::MovedToExisting,
        Decision::Reuse { .. } | Decision::ReplaceLossy | Decision::NewSession => {
            Outcome::RegisterAccepting
        }
        _ => Outcome::Nothing,
    }
}

/// The existing connection's half of `decision`, carried out where it
/// lives, right after deciding: a lossy session replaced is closed; one
/// whose peer must WAIT is kicked (a keepalive) so that our own connection
/// completes rather than stands by; one that will take the accepted socket
/// is `replacing` until it arrives ([`adopt`]).
pub fn apply_existing(decision: &Decision, existing: &mut Conn, stamp: UTime, now: Instant) {
    match decision {
        Decision::ReplaceLossy => existing.close_replaced(),
        Decision::Wait => existing.send_keepalive(stamp, now),
        Decision::Reuse { .. } => existing.begin_replacing(),
        _ => {}
    }
}

/// The accepting connection's half of `decision` (`existing`: it was
/// decided against an existing connection). For a Reuse into that
/// connection, returns what the socket carries to it: hand it to
/// [`adopt`] on the existing connection, even when `None` (the accepting
/// connection closed first), so that it stops waiting.
pub fn apply_accepting(
    decision: Decision,
    accepting: &mut Conn,
    existing: bool,
    now: Instant,
) -> Option<Reuse> {
    match decision {
        Decision::Reuse { .. } if existing => accepting.take_for_reuse(),
        // Nothing to reuse: a new session.
        Decision::Reuse { .. } => {
            accepting.resolve(Decision::NewSession, now);
            None
        }
        d => {
            accepting.resolve(d, now);
            None
        }
    }
}

/// The existing connection takes the socket a Reuse promised it, or stops
/// waiting for it.
pub fn adopt(existing: &mut Conn, reuse: Option<Reuse>, decision: &Decision, now: Instant) {
    match (reuse, decision) {
        (Some(r), Decision::Reuse { reset_session, .. }) => existing.adopt(r, *reset_session, now),
        _ => existing.end_replacing(),
    }
}

/// The whole decision for a driver that holds both connections at once
/// (the pair tests, the simulator, the fuzzer): the same steps the
/// runtime takes on two shards, in the same order.
pub fn resolve(
    accepting: &mut Conn,
    mut existing: Option<&mut Conn>,
    req: IdentRequest,
    stamp: UTime,
    now: Instant,
) -> Outcome {
    let ask = Ask::of(accepting, req);
    let decision = decide(&ask, existing.as_deref());
    if let Some(ex) = existing.as_deref_mut() {
        apply_existing(&decision, ex, stamp, now);
    }
    let mut outcome = outcome(&decision, existing.is_some());
    let reuse = apply_accepting(decision.clone(), accepting, existing.is_some(), now);
    if let Some(ex) = existing {
        if outcome == Outcome::MovedToExisting {
            if reuse.is_none() {
                outcome = Outcome::Nothing;
            }
            adopt(ex, reuse, &decision, now);
        }
    }
    outcome
}
