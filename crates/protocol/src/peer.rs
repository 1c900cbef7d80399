//! What a connection knows about its peer and itself, shared by the
//! handshake and the session logic.

use std::net::IpAddr;

use msgr_auth::Identity;
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType};

use crate::decide::{Owner, Protocol};
use crate::policy::Policy;

/// The peer as far as it is known.
///
/// `repr(C)`: what a READY connection reads per message (the name it
/// stamps on messages, the policy) first, beside the connection's other
/// per-message fields (Conn).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct PeerInfo {
    /// Known from the ident exchange.
    pub name: Option<EntityName>,
    /// The policy the connection took for the peer's type.
    pub policy: Policy,
    /// Features both sides support (connection features).
    pub features: u64,
    /// The peer's entity type: the one we connected to, or the one its
    /// HELLO (msgr1: CONNECT's host type) names.
    pub entity_type: EntityType,
    // The three below fill what would pad `entity_type` up to `addrs`.
    /// The handshake proved who the peer is (see [`Owner::proven`]).
    pub proven: bool,
    /// The session's messages are protected beyond crcs (see
    /// [`Owner::protected`]).
    pub protected: bool,
    /// How far this peer's RETRY_GLOBALs pushed our messenger-wide
    /// global_seq over the connection's life (bounded:
    /// [`crate::GlobalSeq::raise`]).
    pub global_seq_pushed: u32,
    /// Its addresses (the target's on a connector until SERVER_IDENT; from
    /// the ident on an acceptor).
    pub addrs: EntityAddrvec,
    /// The address a connector dials / the acceptor's peer's msgr2 address.
    pub target_addr: EntityAddr,
    /// Who the peer authenticated as (an acceptor learns it at AUTH_DONE or
    /// from msgr1's CONNECT; a connector knows the server by the type it
    /// connected to).
    pub identity: Option<Identity>,
}

/// The address a connector dials in `addrs` (AsyncMessenger::
/// create_connect: "always prefer the first one"): the first msgr2 or
/// msgr1 one, msgr2 ones only if `msgr2` (a messenger bound without msgr2
/// drops them, _filter_addrs); an `any:` address speaks either. Else the
/// first address, whatever it is.
pub fn target_addr(addrs: &EntityAddrvec, msgr2: bool) -> Option<EntityAddr> {
    let usable = |a: &&EntityAddr| match a.kind {
        EntityAddrType::LEGACY => true,
        EntityAddrType::MSGR2 | EntityAddrType::ANY => msgr2,
        _ => false,
    };
    let mut a = addrs.0.iter().find(usable).or(addrs.0.first()).copied()?;
    if a.kind == EntityAddrType::ANY {
        a.kind = match msgr2 {
            true => EntityAddrType::MSGR2,
            false => EntityAddrType::LEGACY,
        };
    }
    Some(a)
}

impl PeerInfo {
    /// Who holds a session with this peer over `protocol`, for the rule
    /// that only its owner may resume, reuse or replace it.
    pub fn owner(&self, protocol: Protocol) -> Owner {
        Owner {
            entity_type: self.entity_type,
            num: self.name.map(|n| n.num),
            identity: self.identity.clone(),
            proven: self.proven,
            protocol,
            protected: self.protected,
        }
    }
}

/// Our own addresses, possibly still with a blank IP to be learned from a
/// peer (a client that never bound), and, on an accepted connection, the
/// addresses we listen on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MyAddrs {
    /// What we tell peers (HELLO, idents).
    pub addrs: EntityAddrvec,
    /// What we listen on, wildcards included (an acceptor's CLIENT_IDENT
    /// check); empty on a connector.
    pub listening: EntityAddrvec,
}

impl From<EntityAddrvec> for MyAddrs {
    fn from(addrs: EntityAddrvec) -> MyAddrs {
        MyAddrs::new(addrs)
    }
}

impl MyAddrs {
    /// Our addresses `addrs`, listening on none (a connector's).
    pub fn new(addrs: EntityAddrvec) -> MyAddrs {
        MyAddrs {
            addrs,
            listening: EntityAddrvec::default(),
        }
    }

    /// Fills in our IP from what the peer saw, if we did not know it
    /// (ProtocolV2::handle_hello → learned_addr): a connector's, never an
    /// acceptor's (see `Accepting::Hello`). Returns the address if it
    /// changed.
    pub fn learn(&mut self, seen: &EntityAddr) -> Option<EntityAddr> {
        let seen_ip = seen.addr?.ip();
        let first = self.addrs.0.first_mut()?;
        if !first.is_blank_ip() {
            return None;
        }
        let port = first.port();
        first.addr = Some(std::net::SocketAddr::new(seen_ip, port));
        Some(*first)
    }

    /// Our addresses on a socket whose local end is `local`: a wildcard
    /// bind (a blank IP with a port) is advertised as the address the
    /// socket is on, which is the one its peer reached; an unbound client
    /// (port 0) stays blank and learns from the peer.
    pub fn on_socket(&mut self, local: IpAddr) {
        if local.is_unspecified() {
            return;
        }
        for a in self.addrs.0.iter_mut() {
            let wildcard = a.is_blank_ip() && a.port() != 0;
            let same_family = a.addr.is_some_and(|x| x.is_ipv4() == local.is_ipv4());
            if wildcard && same_family {
                a.addr = Some(std::net::SocketAddr::new(local, a.port()));
            }
        }
    }

    /// Whether `target` is one of ours (the ident's target check): an
    /// address we advertise on this socket, or one we listen on, a wildcard
    /// listening on every IP (Ceph compares with its advertised addresses
    /// only, which a wildcard bind fills in from its first peer; we listen
    /// on every address of a wildcard, so any of them is ours).
    pub fn contains(&self, target: &EntityAddr) -> bool {
        let same_ip = |a: &EntityAddr| a.addr.map(|x| x.ip()) == target.addr.map(|x| x.ip());
        let mine = |a: &EntityAddr, wildcard_ok: bool| {
            (same_ip(a) || (wildcard_ok && a.is_blank_ip()))
                && a.port() == target.port()
                && a.nonce == target.nonce
        };
        self.addrs
            .0
            .iter()
            .any(|a| mine(a, self.listening.0.is_empty()))
            || self.listening.0.iter().any(|a| mine(a, true))
    }

    /// The address a connection race compares (msgr2_addr).
    pub fn msgr2(&self) -> EntityAddr {
        self.addrs
            .msgr2()
            .or(self.addrs.0.first())
            .copied()
            .unwrap_or(EntityAddr {
                kind: EntityAddrType::ANY,
                nonce: 0,
                addr: None,
            })
    }
}

#[cfg(test)]
mod tests {
    /// The first msgr2 or msgr1 address is dialled, as Ceph's
    /// create_connect does; without msgr2, the first msgr1 one.
    #[test]
    fn target_is_the_first_usable_address() {
        let v: msgr_encoding::EntityAddrvec =
            "[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]".parse().unwrap();
        let t = |addrs, msgr2| super::target_addr(addrs, msgr2).unwrap().to_string();
        assert_eq!(t(&v, true), "v2:10.0.0.1:3300/0");
        assert_eq!(t(&v, false), "v1:10.0.0.1:6789/0");
        let v1_first: msgr_encoding::EntityAddrvec =
            "[v1:10.0.0.1:6789/0,v2:10.0.0.1:3300/0]".parse().unwrap();
        assert_eq!(t(&v1_first, true), "v1:10.0.0.1:6789/0");
        let any: msgr_encoding::EntityAddrvec = "[any:10.0.0.1:6800/5]".parse().unwrap();
        assert_eq!(t(&any, false), "v1:10.0.0.1:6800/5");
        assert_eq!(t(&any, true), "v2:10.0.0.1:6800/5");
    }

    use super::*;

    fn addr(s: &str) -> EntityAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_wildcard_bind_is_advertised_as_the_socket_address_and_listens_everywhere() {
        let bound = EntityAddrvec::single(addr("v2:0.0.0.0:6800/7"));
        let mut me = MyAddrs {
            addrs: bound.clone(),
            listening: bound,
        };
        me.on_socket("127.0.0.2".parse().unwrap());
        assert_eq!(me.addrs.0[0], addr("v2:127.0.0.2:6800/7"));
        assert!(me.contains(&addr("v2:127.0.0.2:6800/7")));
        assert!(
            me.contains(&addr("v2:127.0.0.1:6800/7")),
            "listening on every IP"
        );
        assert!(!me.contains(&addr("v2:127.0.0.1:6801/7")), "another port");
        assert!(!me.contains(&addr("v2:127.0.0.1:6800/8")), "another nonce");
        // Nothing is learned once the address is known.
        assert_eq!(me.learn(&addr("v2:10.0.0.1:0/0")), None);
    }

    #[test]
    fn an_unbound_client_learns_and_a_bound_address_is_kept() {
        let mut client = MyAddrs::new(EntityAddrvec::single(addr("any:0.0.0.0:0/3")));
        client.on_socket("127.0.0.1".parse().unwrap());
        assert!(
            client.addrs.0[0].is_blank_ip(),
            "a client learns from HELLO"
        );
        assert!(client.learn(&addr("v2:10.1.2.3:5555/0")).is_some());
        assert_eq!(client.addrs.0[0].addr.unwrap().ip().to_string(), "10.1.2.3");
        let mut server = MyAddrs::new(EntityAddrvec::single(addr("v2:10.0.0.1:6800/1")));
        server.on_socket("127.0.0.1".parse().unwrap());
        assert_eq!(server.addrs.0[0], addr("v2:10.0.0.1:6800/1"));
        assert!(!server.contains(&addr("v2:127.0.0.1:6800/1")));
    }
}
