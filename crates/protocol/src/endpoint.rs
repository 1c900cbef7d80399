//! The connections of one messenger, for drivers that hold them all in
//! one place (the pair harness, the simulator, the fuzzer): a table of
//! [`Conn`]s and the registry that keys them by peer, with the registry's
//! rules ([`crate::registry`]) applied when an accepted peer identifies
//! itself. The sharded runtime keeps its connections on their shards and
//! asks across them, but keys them with the same [`Registry`].
//!
//! Like quinn-proto's `Endpoint`, it does no I/O: the driver moves bytes
//! and time through each connection and tells the endpoint what the
//! connections' events mean for the table.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use msgr_encoding::{EntityAddrvec, EntityType, UTime};

use crate::config::Config;
use crate::conn::{Conn, FailedPaths, HostsHeard};
use crate::decide::Protocol;
use crate::error::ProtocolError;
use crate::ident::IdentRequest;
use crate::link::LinkId;
use crate::registry::{self, Outcome, PeerKey, Registry};

/// A connection's index in its endpoint (stable: closed connections keep
/// their place until [`Endpoint::clear`]).
pub type ConnId = usize;

/// What an ident's decision did to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// The accepting connection holds a session now, registered for its
    /// peer.
    Registered,
    /// The accepted socket moved into connection `into`, as its link
    /// `link`: the driver hands the socket over.
    Moved {
        /// The connection that holds the peer's session.
        into: ConnId,
        /// The link id the socket has in that connection.
        link: LinkId,
    },
    /// Nothing changed in the table (a retry, a reset, WAIT, a refusal).
    Unchanged,
}

/// One messenger's connections and its registry.
pub struct Endpoint {
    config: Arc<Config>,
    addrs: EntityAddrvec,
    /// The interceptor's names of our connections are `id_base | index`.
    id_base: u64,
    conns: Vec<Conn>,
    registry: Registry<ConnId>,
    failed_paths: FailedPaths,
    hosts_heard: HostsHeard,
}

impl Endpoint {
    /// An endpoint at `addrs`; its connections are named `id_base | index`
    /// for the interceptor.
    pub fn new(config: Arc<Config>, addrs: EntityAddrvec, id_base: u64) -> Endpoint {
        Endpoint {
            config,
            addrs,
            id_base,
            conns: Vec::new(),
            registry: Registry::default(),
            failed_paths: FailedPaths::default(),
            hosts_heard: HostsHeard::default(),
        }
    }

    /// The configuration every connection of this endpoint takes.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// The addresses we listen on and advertise.
    pub fn addrs(&self) -> &EntityAddrvec {
        &self.addrs
    }

    /// Moves the endpoint to `addrs` (a restarted messenger, with a new
    /// nonce).
    pub fn set_addrs(&mut self, addrs: EntityAddrvec) {
        self.addrs = addrs;
    }

    /// Which connection holds each peer.
    pub fn registry(&self) -> &Registry<ConnId> {
        &self.registry
    }

    /// The registry, for a driver that registers or forgets holders itself
    /// (a connection that closed, a connect it made).
    pub fn registry_mut(&mut self) -> &mut Registry<ConnId> {
        &mut self.registry
    }

    /// Whether one of our addresses is `addr` on `protocol`'s listener.
    pub fn listens_on(&self, addr: SocketAddr) -> Option<Protocol> {
        let a = self.addrs.0.iter().find(|a| a.addr == Some(addr))?;
        Some(match a.kind == msgr_encoding::EntityAddrType::LEGACY {
            true => Protocol::V1,
            false => Protocol::V2,
        })
    }

    fn next_id(&self) -> u64 {
        self.id_base | self.conns.len() as u64
    }

    /// A connection that dials `target`, registered for it (lossy ones
    /// too, so that the peer's own connection finds it in a race).
    pub fn connect(
        &mut self,
        target: EntityAddrvec,
        peer_type: EntityType,
        now: Instant,
    ) -> ConnId {
        let id = self.conns.len();
        let mut conn = Conn::connect(
            self.config.clone(),
            target.clone(),
            peer_type,
            self.addrs.clone(),
            now,
            self.next_id(),
        );
        if PeerKey::of(&target).is_some_and(|k| self.failed_paths.recent(&k, now)) {
            conn.start_probing();
        }
        self.conns.push(conn);
        if let Some(k) = PeerKey::of(&target) {
            self.registry.register(k, id);
        }
        id
    }

    /// A connection for a socket accepted from `peer_socket` on our
    /// `protocol` listener.
    pub fn accept(&mut self, protocol: Protocol, peer_socket: SocketAddr, now: Instant) -> ConnId {
        let id = self.conns.len();
        let me = crate::peer::MyAddrs::from(self.addrs.clone());
        let conn = Conn::accept_on(
            self.config.clone(),
            me,
            peer_socket,
            now,
            self.next_id(),
            protocol,
        );
        self.conns.push(conn);
        id
    }

    /// Connection `id`, if the endpoint has one by that index.
    pub fn conn(&self, id: ConnId) -> Option<&Conn> {
        self.conns.get(id)
    }

    /// Connection `id` to drive (feed input and time, take output and events).
    pub fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns.get_mut(id)
    }

    /// Every connection, by index.
    pub fn conns(&self) -> &[Conn] {
        &self.conns
    }

    /// Every connection, by index, to drive.
    pub fn conns_mut(&mut self) -> &mut [Conn] {
        &mut self.conns
    }

    /// The connection registered for the peer at `addrs`.
    pub fn registered(&self, addrs: &EntityAddrvec) -> Option<ConnId> {
        self.registry.holder(&PeerKey::of(addrs)?).copied()
    }

    /// Connection `id` identified its accepted peer with `req`: decide
    /// against the connection registered for the same peer and carry the
    /// decision out on both (registry::resolve), then update the table.
    pub fn handle_ident(
        &mut self,
        id: ConnId,
        req: IdentRequest,
        stamp: UTime,
        now: Instant,
    ) -> Resolved {
        let Some(accepting) = self.conns.get(id) else {
            return Resolved::Unchanged;
        };
        let key = registry::lookup_key(accepting, &req);
        let existing = key
            .and_then(|k| self.registry.holder(&k).copied())
            .filter(|&e| e != id && e < self.conns.len());
        let outcome = match existing.and_then(|e| two(&mut self.conns, id, e)) {
            Some((a, b)) => registry::resolve(a, Some(b), req, stamp, now),
            None => match self.conns.get_mut(id) {
                Some(a) => registry::resolve(a, None, req, stamp, now),
                None => Outcome::Nothing,
            },
        };
        match (outcome, existing) {
            (Outcome::RegisterAccepting, _) => {
                if let Some(k) = key {
                    self.registry.register(k, id);
                }
                Resolved::Registered
            }
            (Outcome::MovedToExisting, Some(into)) => {
                match self.conns.get(into).and_then(|c| c.link_id()) {
                    Some(link) => Resolved::Moved { into, link },
                    None => Resolved::Unchanged,
                }
            }
            _ => Resolved::Unchanged,
        }
    }

    /// Connection `id` faulted with `err`: a path that failed is
    /// remembered for the next connection to its peer ([`FailedPaths`]).
    pub fn faulted(&mut self, id: ConnId, err: &ProtocolError, now: Instant) {
        let Some(c) = self.conns.get(id).filter(|_| err.is_path_failure()) else {
            return;
        };
        if let Some(k) = PeerKey::of(&c.peer().addrs) {
            self.failed_paths.note(k, now);
        }
    }

    /// Connection `id` read something from its peer ([`HostsHeard`]; the
    /// harness notes every read).
    pub fn heard(&mut self, id: ConnId, now: Instant) {
        if let Some(host) = self.host(id) {
            self.hosts_heard.note(host, now);
        }
    }

    /// Since a connection to connection `id`'s peer host last read
    /// anything ([`crate::PathProgress::host_heard`]).
    pub fn host_heard(&self, id: ConnId, now: Instant) -> Option<std::time::Duration> {
        self.hosts_heard.since(self.host(id)?, now)
    }

    fn host(&self, id: ConnId) -> Option<std::net::IpAddr> {
        self.conns.get(id)?.peer_host()
    }

    /// Connection `id` established a session with its peer.
    pub fn connected(&mut self, id: ConnId) {
        if let Some(k) = self
            .conns
            .get(id)
            .and_then(|c| PeerKey::of(&c.peer().addrs))
        {
            self.failed_paths.forget(&k);
        }
    }

    /// Connection `id` closed: it leaves the registry.
    pub fn closed(&mut self, id: ConnId) {
        self.registry.forget_holder(&id);
    }

    /// Forgets every connection (a restart: all sessions are gone).
    pub fn clear(&mut self) {
        self.conns.clear();
        self.registry.clear();
    }
}

/// Connections `a` and `b` (distinct) of `conns`, both mutable.
fn two(conns: &mut [Conn], a: usize, b: usize) -> Option<(&mut Conn, &mut Conn)> {
    if a == b {
        return None;
    }
    let (lo, hi) = (a.min(b), a.max(b));
    let (left, right) = conns.split_at_mut(hi);
    let (l, r) = (left.get_mut(lo)?, right.first_mut()?);
    Some(if a < b { (l, r) } else { (r, l) })
}
