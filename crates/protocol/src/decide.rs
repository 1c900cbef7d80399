//! What an acceptor does with CLIENT_IDENT and SESSION_RECONNECT when the
//! messenger may already hold a connection to the same peer: pure decision
//! functions over a snapshot of that connection (ProtocolV2::
//! handle_existing_connection and handle_reconnect; §6.3 and §6.4 of
//! docs/research/protocol-v2-sessions.md).

use msgr_auth::Identity;
use msgr_encoding::{EntityAddr, EntityType};
use msgr_frames::control::{ClientIdent, SessionReconnect};

/// Which of Ceph's two protocols a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// msgr1 (Ceph's AsyncMessenger ProtocolV1): `v1:` addresses.
    V1,
    /// msgr2 (ProtocolV2): `v2:` addresses.
    V2,
}

/// Who holds a session. Sessions are found by the address a peer claims
/// (msgr1's and msgr2's alike: the registry keys them by IP, port and
/// nonce); only the entity that holds one may resume, reuse or replace it,
/// so a peer with any valid ticket, or with none, cannot claim another's
/// address and be handed its queued messages, reset it, or kick it off.
/// (Ceph decides on the claimed address and cookies alone.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The holder's entity type (mon, osd, client, ...).
    pub entity_type: EntityType,
    /// The `entity_name_t` number: an acceptor's from CLIENT_IDENT (bound
    /// to the authenticated name) or msgr1's first message header, a
    /// connector's from SERVER_IDENT; none for a SESSION_RECONNECT or an
    /// msgr1 CONNECT, which carry no gid.
    pub num: Option<i64>,
    /// Who it authenticated as, as an acceptor learned it: proven (cephx)
    /// or only claimed (auth none, or an msgr1 CONNECT without an
    /// authorizer). A connector has none: it knows its server by type.
    pub identity: Option<Identity>,
    /// The handshake proved who the peer is: an acceptor's peer its
    /// identity, a connector's server its type (only that service's key
    /// holders can answer our authorizer).
    pub proven: bool,
    /// The protocol the session speaks; it is resumed over the same one only.
    pub protocol: Protocol,
    /// Its messages are protected beyond crcs: msgr2's secure mode, or
    /// msgr1's cephx signatures.
    pub protected: bool,
}

impl Owner {
    /// Whether `newcomer` is the entity that holds this session, over the
    /// same protocol and with protection at least as strong.
    pub fn admits(&self, newcomer: &Owner) -> bool {
        if self.entity_type != newcomer.entity_type
            || self.protocol != newcomer.protocol
            || (self.protected && !newcomer.protected)
        {
            return false;
        }
        if self.proven {
            // A proven session goes only to a peer that proves the same
            // identity: never to one that merely claims it (auth none, no
            // authorizer), whatever numbers it gives.
            let Some(b) = newcomer.identity.as_ref().filter(|b| b.proven) else {
                return false;
            };
            return match &self.identity {
                Some(a) => a.name == b.name && a.global_id == b.global_id,
                // A server we dialled: the newcomer proves that type and
                // owns the number the server gave.
                None => {
                    b.matches_type(self.entity_type)
                        && self
                            .num
                            .is_none_or(|n| u64::try_from(n).is_ok_and(|n| b.owns_gid(n)))
                }
            };
        }
        match (&self.identity, &newcomer.identity) {
            (Some(a), Some(b)) => a.name == b.name && a.global_id == b.global_id,
            // One side is known by its idents only: their numbers agree.
            _ => match (self.num, newcomer.num) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            },
        }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.identity, self.num) {
            (Some(id), _) => write!(f, "{id}")?,
            (None, Some(n)) => write!(f, "{}.{n}", self.entity_type)?,
            (None, None) => write!(f, "an {}", self.entity_type)?,
        }
        let protection = match (self.protocol, self.protected) {
            (Protocol::V1, false) => "msgr1",
            (Protocol::V1, true) => "msgr1, signed",
            (Protocol::V2, false) => "msgr2",
            (Protocol::V2, true) => "msgr2, secure",
        };
        write!(f, " over {protection}")
    }
}

/// The state of an existing connection that matters to the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingInfo {
    /// The connection is CLOSED: it holds no session to resume, and the
    /// newcomer starts a new one.
    pub closed: bool,
    /// Already being replaced by another incoming connection.
    pub replacing: bool,
    /// Its policy is lossy: faults end the session rather than reconnect.
    pub lossy: bool,
    /// Its policy has the `server` flag.
    pub server: bool,
    /// READY, or STANDBY with an established session (not in the middle
    /// of a handshake, nor a connector that never got SERVER_IDENT).
    pub established: bool,
    /// The highest global_seq the peer showed on this connection: an ident
    /// with a lower one is from an older attempt.
    pub peer_global_seq: u64,
    /// msgr2: the session's client cookie (CLIENT_IDENT's, matched by
    /// SESSION_RECONNECT).
    pub client_cookie: u64,
    /// msgr2: the session's server cookie (SERVER_IDENT's); zero when none
    /// was given.
    pub server_cookie: u64,
    /// How many times the session was reconnected (Ceph's connect_seq).
    pub connect_seq: u64,
    /// msgr1: a session this acceptor opened whose connector never
    /// confirmed it (SEQ went out, its in_seq never came) and that never
    /// carried a message: the connector may not know the session exists,
    /// and resuming it cannot deliver anything twice.
    pub unconfirmed: bool,
    /// Who holds the session.
    pub owner: Owner,
}

/// The messenger's answer to an ident.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A new session on this connection: SERVER_IDENT.
    NewSession,
    /// Close the existing lossy connection (with a reset event), then a new
    /// session here.
    ReplaceLossy,
    /// Move this socket into the existing connection, which answers with
    /// SERVER_IDENT (`reconnect` false) or SESSION_RECONNECT_OK; the existing
    /// session is reset first when `reset_session`.
    Reuse {
        /// Answer SESSION_RECONNECT_OK (the newcomer reconnects) rather
        /// than SERVER_IDENT.
        reconnect: bool,
        /// Reset the existing session (drop its queues and sequence
        /// numbers) before the socket joins it.
        reset_session: bool,
    },
    /// Tell the client to wait: our own connection to it will win the race.
    /// The existing connection is kicked (keepalive) so that it completes.
    Wait,
    /// Answer SESSION_RESET (full or not); the client starts a new session.
    Reset {
        /// SESSION_RESET's `full` flag: the client resets its whole
        /// session, queued messages dropped; without it, only its server
        /// cookie and sequence numbers start over.
        full: bool,
    },
    /// Answer SESSION_RETRY with our connect_seq.
    Retry {
        /// Our connect_seq, which the client's next reconnect must pass.
        connect_seq: u64,
    },
    /// Answer SESSION_RETRY_GLOBAL with the global_seq to exceed.
    RetryGlobal {
        /// The global_seq the client's next attempt must exceed.
        global_seq: u64,
    },
    /// This connection is stale (an older global_seq): close it.
    CloseStale,
    /// The session at the claimed address belongs to another entity: close
    /// this connection and leave that session alone.
    Refuse {
        /// The entity that holds the session at that address.
        owner: Owner,
    },
}

/// Whether the peer's connection wins a race against ours: the lower
/// address (by Ceph's memcmp order) keeps its outgoing connection, and a
/// server never keeps one.
pub fn peer_wins(peer: &EntityAddr, me: &EntityAddr, existing_is_server: bool) -> bool {
    peer.ceph_less(me) || existing_is_server
}

/// The newcomer's identity against the live session's, before any rule
/// that could touch that session.
fn foreign(ex: &ExistingInfo, newcomer: &Owner) -> Option<Decision> {
    (!ex.owner.admits(newcomer)).then(|| Decision::Refuse {
        owner: ex.owner.clone(),
    })
}

/// CLIENT_IDENT (handle_existing_connection), from `newcomer`.
pub fn on_client_ident(
    ident: &ClientIdent,
    existing: Option<&ExistingInfo>,
    newcomer: &Owner,
    peer_addr: &EntityAddr,
    my_addr: &EntityAddr,
    resetcheck: bool,
) -> Decision {
    let Some(ex) = existing else {
        return Decision::NewSession;
    };
    if ex.closed {
        return Decision::NewSession;
    }
    if let Some(refuse) = foreign(ex, newcomer) {
        return refuse;
    }
    if ex.replacing {
        return Decision::Wait;
    }
    if ex.peer_global_seq > ident.global_seq {
        return Decision::CloseStale;
    }
    if ex.lossy {
        return Decision::ReplaceLossy;
    }
    if ex.server_cookie != 0 && ex.client_cookie != 0 && ex.client_cookie != ident.cookie {
        // The peer lost its session and starts anew.
        return Decision::Reuse {
            reconnect: false,
            reset_session: resetcheck,
        };
    }
    if ex.client_cookie == ident.cookie || ex.established {
        // An interrupted establishment resumed, or a reconnect of an
        // established session after the peer forgot our cookie.
        return Decision::Reuse {
            reconnect: false,
            reset_session: false,
        };
    }
    // Both sides are connecting to each other.
    if peer_wins(peer_addr, my_addr, ex.server) {
        Decision::Reuse {
            reconnect: false,
            reset_session: false,
        }
    } else {
        Decision::Wait
    }
}

/// SESSION_RECONNECT (handle_reconnect), from `newcomer`.
pub fn on_reconnect(
    reconnect: &SessionReconnect,
    existing: Option<&ExistingInfo>,
    newcomer: &Owner,
    peer_addr: &EntityAddr,
    my_addr: &EntityAddr,
    resetcheck: bool,
) -> Decision {
    let Some(ex) = existing.filter(|e| !e.closed) else {
        return Decision::Reset { full: true };
    };
    if let Some(refuse) = foreign(ex, newcomer) {
        return refuse;
    }
    if ex.replacing {
        return Decision::RetryGlobal {
            global_seq: ex.peer_global_seq,
        };
    }
    if ex.client_cookie != reconnect.client_cookie {
        // We must have reset: the peer's session is unknown here.
        return Decision::Reset { full: resetcheck };
    }
    if ex.server_cookie == 0 {
        // We were connecting and never got SERVER_IDENT: start over.
        return Decision::Reset { full: false };
    }
    if ex.peer_global_seq > reconnect.global_seq {
        return Decision::RetryGlobal {
            global_seq: ex.peer_global_seq,
        };
    }
    if ex.connect_seq > reconnect.connect_seq {
        return Decision::Retry {
            connect_seq: ex.connect_seq,
        };
    }
    if ex.connect_seq == reconnect.connect_seq && !peer_wins(peer_addr, my_addr, ex.server) {
        // Both reconnecting: ours wins.
        return Decision::Wait;
    }
    Decision::Reuse {
        reconnect: true,
        reset_session: false,
    }
}

/// An msgr1 CONNECT (ProtocolV1::handle_connect_message_2, from its
/// existing-connection lookup on; docs/research/msgr1-wire.md §4.3), from
/// `newcomer`. The rows' names are the note's.
pub fn on_connect_v1(
    c: &msgr_frames::v1::Connect,
    existing: Option<&ExistingInfo>,
    newcomer: &Owner,
    peer_addr: &EntityAddr,
    my_addr: &EntityAddr,
    resetcheck: bool,
) -> Decision {
    let (gs, cs) = (u64::from(c.global_seq), u64::from(c.connect_seq));
    let Some(ex) = existing.filter(|e| !e.closed) else {
        // N1: the peer resumes a session we do not have (we reset); N2.
        return match cs {
            0 => Decision::NewSession,
            _ => Decision::Reset { full: true },
        };
    };
    if let Some(refuse) = foreign(ex, newcomer) {
        return refuse;
    }
    // E2, E3: being replaced already, or an older connection attempt.
    if ex.replacing || gs < ex.peer_global_seq {
        return Decision::RetryGlobal {
            global_seq: ex.peer_global_seq,
        };
    }
    if ex.lossy {
        return Decision::ReplaceLossy; // E4
    }
    let reuse = Decision::Reuse {
        reconnect: true,
        reset_session: false,
    };
    let retry = Decision::Retry {
        connect_seq: ex.connect_seq.saturating_add(1),
    };
    if cs == 0 && ex.connect_seq > 0 {
        // E5: the peer reset its side of the session, or (a session it
        // never confirmed) never learned of it: its handshake failed after
        // our reply went out, and it tries again as it first did. Ceph
        // resets the session then too; like msgr2's cookie rule for a lost
        // SERVER_IDENT, a half-open session that never carried a message
        // is resumed instead (docs/research/msgr1-wire.md §4.6).
        return Decision::Reuse {
            reconnect: false,
            reset_session: resetcheck && !ex.unconfirmed,
        };
    }
    if cs < ex.connect_seq {
        return retry; // E6
    }
    if cs == ex.connect_seq {
        if ex.established {
            // E7
            return match resetcheck && ex.connect_seq == 0 {
                true => reuse,
                false => retry,
            };
        }
        // E8, E9: both sides connecting at once.
        return match peer_wins(peer_addr, my_addr, ex.server) {
            true => reuse,
            false => Decision::Wait,
        };
    }
    if resetcheck && ex.connect_seq == 0 {
        return Decision::Reset { full: true }; // E10
    }
    reuse // E11
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(cookie: u64, global_seq: u64) -> ClientIdent {
        ClientIdent {
            addrs: Default::default(),
            target_addr: Default::default(),
            gid: 1,
            global_seq,
            supported_features: 0,
            required_features: 0,
            flags: 0,
            cookie,
        }
    }

    fn existing() -> ExistingInfo {
        ExistingInfo {
            closed: false,
            replacing: false,
            lossy: false,
            server: false,
            established: false,
            peer_global_seq: 5,
            client_cookie: 0,
            server_cookie: 0,
            connect_seq: 0,
            unconfirmed: false,
            owner: peer(),
        }
    }

    fn peer() -> Owner {
        who("osd.1", 4100, true)
    }

    fn who(name: &str, global_id: u64, proven: bool) -> Owner {
        let name: msgr_encoding::AuthName = name.parse().unwrap();
        Owner {
            entity_type: name.kind,
            num: name.id.parse().ok(),
            identity: Some(Identity {
                name,
                global_id,
                caps: Default::default(),
                proven,
            }),
            proven,
            protocol: Protocol::V2,
            protected: false,
        }
    }

    /// A peer let in without an authorizer (msgr1): its type, no name.
    fn anonymous(kind: EntityType, protocol: Protocol) -> Owner {
        Owner {
            entity_type: kind,
            num: None,
            identity: Some(Identity {
                name: msgr_encoding::AuthName::new(kind, ""),
                global_id: 0,
                caps: Default::default(),
                proven: false,
            }),
            proven: false,
            protocol,
            protected: false,
        }
    }

    fn addr(s: &str) -> EntityAddr {
        s.parse().unwrap()
    }

    #[test]
    fn races_are_won_by_the_lower_address() {
        let low = addr("v2:10.0.0.1:6800/1");
        let high = addr("v2:10.0.0.2:6800/1");
        let ex = existing();
        // The peer (low) connects to us (high) while we connect to it: it wins.
        assert_eq!(
            on_client_ident(&ident(9, 6), Some(&ex), &peer(), &low, &high, false),
            Decision::Reuse {
                reconnect: false,
                reset_session: false
            }
        );
        // We are the low one: our connection wins; the peer waits.
        assert_eq!(
            on_client_ident(&ident(9, 6), Some(&ex), &peer(), &high, &low, false),
            Decision::Wait
        );
    }

    #[test]
    fn ident_decisions() {
        let a = addr("v2:10.0.0.1:6800/1");
        let b = addr("v2:10.0.0.2:6800/1");
        assert_eq!(
            on_client_ident(&ident(1, 1), None, &peer(), &a, &b, true),
            Decision::NewSession
        );
        let stale = ExistingInfo {
            peer_global_seq: 10,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(1, 3), Some(&stale), &peer(), &a, &b, true),
            Decision::CloseStale
        );
        let lossy = ExistingInfo {
            lossy: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(0, 6), Some(&lossy), &peer(), &a, &b, true),
            Decision::ReplaceLossy
        );
        let session = ExistingInfo {
            client_cookie: 7,
            server_cookie: 8,
            established: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(99, 6), Some(&session), &peer(), &b, &a, true),
            Decision::Reuse {
                reconnect: false,
                reset_session: true
            },
            "peer reset: resetcheck resets our session"
        );
        let replacing = ExistingInfo {
            replacing: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(1, 6), Some(&replacing), &peer(), &a, &b, true),
            Decision::Wait
        );
    }

    #[test]
    fn reconnect_decisions() {
        let a = addr("v2:10.0.0.1:6800/1");
        let b = addr("v2:10.0.0.2:6800/1");
        let rc = |cc: u64, gs: u64, cs: u64| SessionReconnect {
            addrs: Default::default(),
            client_cookie: cc,
            server_cookie: 8,
            global_seq: gs,
            connect_seq: cs,
            msg_seq: 0,
        };
        let ex = ExistingInfo {
            client_cookie: 7,
            server_cookie: 8,
            connect_seq: 2,
            established: true,
            ..existing()
        };
        assert_eq!(
            on_reconnect(&rc(7, 6, 3), None, &peer(), &a, &b, true),
            Decision::Reset { full: true }
        );
        assert_eq!(
            on_reconnect(&rc(1, 6, 3), Some(&ex), &peer(), &a, &b, false),
            Decision::Reset { full: false }
        );
        assert_eq!(
            on_reconnect(&rc(7, 4, 3), Some(&ex), &peer(), &a, &b, true),
            Decision::RetryGlobal { global_seq: 5 }
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 1), Some(&ex), &peer(), &a, &b, true),
            Decision::Retry { connect_seq: 2 }
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 3), Some(&ex), &peer(), &a, &b, true),
            Decision::Reuse {
                reconnect: true,
                reset_session: false
            }
        );
        // Equal connect_seq: a reconnect race, won by the lower address.
        assert_eq!(
            on_reconnect(&rc(7, 6, 2), Some(&ex), &peer(), &b, &a, true),
            Decision::Wait
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 2), Some(&ex), &peer(), &a, &b, true),
            Decision::Reuse {
                reconnect: true,
                reset_session: false
            }
        );
        let fresh = ExistingInfo {
            client_cookie: 7,
            server_cookie: 0,
            ..existing()
        };
        assert_eq!(
            on_reconnect(
                &rc(7, 6, 3),
                Some(&ex),
                &who("osd.2", 4200, true),
                &a,
                &b,
                true
            ),
            Decision::Refuse { owner: peer() },
            "another OSD's reconnect is refused, whatever its cookies"
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 3), Some(&fresh), &peer(), &a, &b, true),
            Decision::Reset { full: false }
        );
    }

    #[test]
    fn only_the_owner_may_take_a_session_over() {
        let a = addr("v2:10.0.0.1:6800/1");
        let b = addr("v2:10.0.0.2:6800/1");
        let session = ExistingInfo {
            client_cookie: 7,
            server_cookie: 8,
            established: true,
            ..existing()
        };
        let refused = Decision::Refuse { owner: peer() };
        // Another entity with a valid ticket, the same name with another
        // global id, the same name only claimed, and another type: refused
        // before any rule could reuse, reset or replace the session.
        for newcomer in [
            who("osd.2", 4200, true),
            who("osd.1", 9999, true),
            who("osd.1", 4100, false),
            who("client.1", 4100, true),
        ] {
            assert_eq!(
                on_client_ident(&ident(99, 1 << 40), Some(&session), &newcomer, &b, &a, true),
                refused,
                "{newcomer}"
            );
        }
        let lossy = ExistingInfo {
            lossy: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(
                &ident(0, 1 << 40),
                Some(&lossy),
                &who("osd.2", 1, true),
                &a,
                &b,
                true
            ),
            refused,
            "a registered lossy peer is not replaced by another"
        );
        // The owner itself is admitted, and a connector's session (known
        // by type and SERVER_IDENT gid) by the same number.
        assert_eq!(
            on_client_ident(&ident(99, 6), Some(&session), &peer(), &b, &a, true),
            Decision::Reuse {
                reconnect: false,
                reset_session: true
            }
        );
        let dialed = ExistingInfo {
            owner: Owner {
                entity_type: EntityType::OSD,
                num: Some(1),
                identity: None,
                proven: true,
                protocol: Protocol::V2,
                protected: false,
            },
            ..session.clone()
        };
        assert_ne!(
            on_client_ident(&ident(99, 6), Some(&dialed), &peer(), &b, &a, true),
            Decision::Refuse {
                owner: dialed.owner.clone()
            }
        );
        assert_eq!(
            on_client_ident(
                &ident(99, 6),
                Some(&dialed),
                &who("osd.2", 4100, true),
                &b,
                &a,
                true
            ),
            Decision::Refuse {
                owner: dialed.owner.clone()
            }
        );
    }

    /// msgr1's CONNECT table (msgr1-wire.md §4.3), row by row.
    #[test]
    fn msgr1_connect_decisions() {
        let connect = |gs: u32, cs: u32| msgr_frames::v1::Connect {
            global_seq: gs,
            connect_seq: cs,
            ..Default::default()
        };
        let low = addr("v1:10.0.0.1:6800/1");
        let high = addr("v1:10.0.0.2:6800/1");
        let d = |c, ex: Option<&ExistingInfo>, resetcheck| {
            on_connect_v1(&c, ex, &peer(), &low, &high, resetcheck)
        };
        let reuse = Decision::Reuse {
            reconnect: true,
            reset_session: false,
        };
        // N2, N1: no session here.
        assert_eq!(d(connect(1, 0), None, true), Decision::NewSession);
        assert_eq!(d(connect(1, 3), None, true), Decision::Reset { full: true });
        let ex = ExistingInfo {
            peer_global_seq: 5,
            connect_seq: 2,
            established: true,
            ..existing()
        };
        // E2, E3: replacing, or an older attempt.
        let replacing = ExistingInfo {
            replacing: true,
            ..ex.clone()
        };
        let retry_global = Decision::RetryGlobal { global_seq: 5 };
        assert_eq!(d(connect(9, 3), Some(&replacing), false), retry_global);
        assert_eq!(d(connect(4, 3), Some(&ex), false), retry_global);
        // E4: a lossy session is replaced.
        let lossy = ExistingInfo {
            lossy: true,
            ..ex.clone()
        };
        assert_eq!(
            d(connect(6, 3), Some(&lossy), false),
            Decision::ReplaceLossy
        );
        // E5: the peer reset (connect_seq 0); the session resets with
        // resetcheck, unless the peer never confirmed it (a retry).
        assert_eq!(
            d(connect(6, 0), Some(&ex), true),
            Decision::Reuse {
                reconnect: false,
                reset_session: true
            }
        );
        let half_open = ExistingInfo {
            unconfirmed: true,
            ..ex.clone()
        };
        assert_eq!(
            d(connect(6, 0), Some(&half_open), true),
            Decision::Reuse {
                reconnect: false,
                reset_session: false
            }
        );
        // E6, E7: behind or equal to an established session: retry past it.
        assert_eq!(
            d(connect(6, 1), Some(&ex), false),
            Decision::Retry { connect_seq: 3 }
        );
        assert_eq!(
            d(connect(6, 2), Some(&ex), false),
            Decision::Retry { connect_seq: 3 }
        );
        // E8, E9: a race between two connecting sides.
        let connecting = ExistingInfo {
            established: false,
            ..ex.clone()
        };
        assert_eq!(d(connect(6, 2), Some(&connecting), false), reuse);
        assert_eq!(
            on_connect_v1(
                &connect(6, 2),
                Some(&connecting),
                &peer(),
                &high,
                &low,
                false
            ),
            Decision::Wait
        );
        // E10, E11: ahead of ours: a reconnect, unless ours never had one.
        let fresh = ExistingInfo {
            connect_seq: 0,
            ..connecting.clone()
        };
        assert_eq!(
            d(connect(6, 1), Some(&fresh), true),
            Decision::Reset { full: true }
        );
        assert_eq!(d(connect(6, 3), Some(&ex), true), reuse);
        // Another entity's session is left alone.
        let foreign = ExistingInfo {
            owner: who("osd.7", 1, true),
            ..ex
        };
        assert!(matches!(
            d(connect(6, 3), Some(&foreign), false),
            Decision::Refuse { .. }
        ));
    }

    /// A session proven with cephx is taken over only by the same proven
    /// entity: not by a peer that claims it without proof (msgr1 without
    /// an authorizer, auth none), whatever numbers it gives; not over the
    /// other protocol; not with weaker protection.
    #[test]
    fn proven_sessions_stay_with_their_proven_owner() {
        let v1 = |mut o: Owner| {
            o.protocol = Protocol::V1;
            o
        };
        let owner = v1(who("client.admin", 4100, true));
        let mut claimed = v1(who("client.admin", 4100, false));
        claimed.num = Some(4100);
        for newcomer in [
            anonymous(EntityType::CLIENT, Protocol::V1),
            claimed,
            who("client.admin", 4100, true),
        ] {
            assert!(!owner.admits(&newcomer), "{newcomer}");
        }
        assert!(owner.admits(&v1(who("client.admin", 4100, true))));

        let secure = Owner {
            protected: true,
            ..who("client.admin", 4100, true)
        };
        assert!(
            !secure.admits(&who("client.admin", 4100, true)),
            "crc after secure"
        );
        assert!(
            !secure.admits(&v1(who("client.admin", 4100, true))),
            "msgr1"
        );
        assert!(secure.admits(&secure.clone()));
        assert!(
            who("client.admin", 4100, true).admits(&secure),
            "secure after crc: stronger"
        );

        // A server we dialled (proven by its answer to our authorizer) is
        // known by type and number: an anonymous peer of its type is not it.
        let dialed = Owner {
            entity_type: EntityType::OSD,
            num: Some(1),
            identity: None,
            proven: true,
            protocol: Protocol::V1,
            protected: true,
        };
        let mut anon = anonymous(EntityType::OSD, Protocol::V1);
        anon.num = Some(1);
        anon.protected = true;
        assert!(!dialed.admits(&anon));
        let mut osd1 = v1(who("osd.1", 5001, true));
        osd1.protected = true;
        assert!(dialed.admits(&osd1));
        let mut osd2 = v1(who("osd.2", 5002, true));
        osd2.protected = true;
        assert!(!dialed.admits(&osd2));

        // Unproven sessions are anybody's who claims the same: auth none
        // proves nothing either way.
        let open = anonymous(EntityType::CLIENT, Protocol::V1);
        assert!(open.admits(&anonymous(EntityType::CLIENT, Protocol::V1)));
        assert!(!open.admits(&anonymous(EntityType::CLIENT, Protocol::V2)));
    }

    /// msgr1's CONNECT table with an anonymous newcomer (no authorizer,
    /// connect_seq 2, the victim's address): a cephx session is refused
    /// before any row could resume it.
    #[test]
    fn an_anonymous_msgr1_connect_does_not_resume_a_proven_session() {
        let connect = msgr_frames::v1::Connect {
            global_seq: 1 << 20,
            connect_seq: 2,
            ..Default::default()
        };
        let mut owner = who("client.admin", 4100, true);
        owner.protocol = Protocol::V1;
        let ex = ExistingInfo {
            peer_global_seq: 5,
            connect_seq: 1,
            established: true,
            owner: owner.clone(),
            ..existing()
        };
        let a = addr("v1:10.0.0.1:0/11");
        let b = addr("v1:10.0.0.2:6800/22");
        assert_eq!(
            on_connect_v1(
                &connect,
                Some(&ex),
                &anonymous(EntityType::CLIENT, Protocol::V1),
                &a,
                &b,
                false
            ),
            Decision::Refuse { owner }
        );
    }
}
