//! What a connection knows about its peer and itself, shared by the
//! handshake and the session logic.

use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType};

use crate::policy::Policy;

/// The peer as far as it is known.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub entity_type: EntityType,
    /// Its addresses (the target's on a connector until SERVER_IDENT; from
    /// the ident on an acceptor).
    pub addrs: EntityAddrvec,
    /// The address a connector dials / the acceptor's peer's msgr2 address.
    pub target_addr: EntityAddr,
    /// Known from the ident exchange.
    pub name: Option<EntityName>,
    /// Features both sides support (connection features).
    pub features: u64,
    pub policy: Policy,
}

/// Our own addresses, possibly still with a blank IP to be learned from a
/// peer (a client that never bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyAddrs(pub EntityAddrvec);

impl MyAddrs {
    /// Fills in our IP from what the peer saw, if we did not know it
    /// (ProtocolV2::handle_hello → learned_addr). Returns the address if it
    /// changed.
    pub fn learn(&mut self, seen: &EntityAddr) -> Option<EntityAddr> {
        let seen_ip = seen.addr?.ip();
        let first = self.0 .0.first_mut()?;
        if !first.is_blank_ip() {
            return None;
        }
        let port = first.port();
        first.addr = Some(std::net::SocketAddr::new(seen_ip, port));
        Some(*first)
    }

    /// Whether `target` is one of ours (the ident's target check).
    pub fn contains(&self, target: &EntityAddr) -> bool {
        self.0 .0.iter().any(|a| {
            let same_ip = a.is_blank_ip() || a.addr.map(|x| x.ip()) == target.addr.map(|x| x.ip());
            same_ip && a.port() == target.port() && a.nonce == target.nonce
        })
    }

    /// The address a connection race compares (msgr2_addr).
    pub fn msgr2(&self) -> EntityAddr {
        self.0
            .msgr2()
            .or(self.0 .0.first())
            .copied()
            .unwrap_or(EntityAddr {
                kind: EntityAddrType::ANY,
                nonce: 0,
                addr: None,
            })
    }
}
