//! What an acceptor does with CLIENT_IDENT and SESSION_RECONNECT when the
//! messenger may already hold a connection to the same peer: pure decision
//! functions over a snapshot of that connection (ProtocolV2::
//! handle_existing_connection and handle_reconnect; §6.3 and §6.4 of
//! docs/research/protocol-v2-sessions.md).

use msgr_encoding::EntityAddr;
use msgr_frames::control::{ClientIdent, SessionReconnect};

/// The state of an existing connection that matters to the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingInfo {
    pub closed: bool,
    /// Already being replaced by another incoming connection.
    pub replacing: bool,
    pub lossy: bool,
    /// Its policy has the `server` flag.
    pub server: bool,
    /// READY, or STANDBY with an established session (not in the middle
    /// of a handshake, nor a connector that never got SERVER_IDENT).
    pub established: bool,
    pub peer_global_seq: u64,
    pub client_cookie: u64,
    pub server_cookie: u64,
    pub connect_seq: u64,
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
        reconnect: bool,
        reset_session: bool,
    },
    /// Tell the client to wait: our own connection to it will win the race.
    /// The existing connection is kicked (keepalive) so that it completes.
    Wait,
    /// Answer SESSION_RESET (full or not); the client starts a new session.
    Reset { full: bool },
    /// Answer SESSION_RETRY with our connect_seq.
    Retry { connect_seq: u64 },
    /// Answer SESSION_RETRY_GLOBAL with the global_seq to exceed.
    RetryGlobal { global_seq: u64 },
    /// This connection is stale (an older global_seq): close it.
    CloseStale,
}

/// Whether the peer's connection wins a race against ours: the lower
/// address (by Ceph's memcmp order) keeps its outgoing connection, and a
/// server never keeps one.
pub fn peer_wins(peer: &EntityAddr, me: &EntityAddr, existing_is_server: bool) -> bool {
    peer.ceph_less(me) || existing_is_server
}

/// CLIENT_IDENT (handle_existing_connection).
pub fn on_client_ident(
    ident: &ClientIdent,
    existing: Option<&ExistingInfo>,
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

/// SESSION_RECONNECT (handle_reconnect).
pub fn on_reconnect(
    reconnect: &SessionReconnect,
    existing: Option<&ExistingInfo>,
    peer_addr: &EntityAddr,
    my_addr: &EntityAddr,
    resetcheck: bool,
) -> Decision {
    let Some(ex) = existing.filter(|e| !e.closed) else {
        return Decision::Reset { full: true };
    };
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
            on_client_ident(&ident(9, 6), Some(&ex), &low, &high, false),
            Decision::Reuse {
                reconnect: false,
                reset_session: false
            }
        );
        // We are the low one: our connection wins; the peer waits.
        assert_eq!(
            on_client_ident(&ident(9, 6), Some(&ex), &high, &low, false),
            Decision::Wait
        );
    }

    #[test]
    fn ident_decisions() {
        let a = addr("v2:10.0.0.1:6800/1");
        let b = addr("v2:10.0.0.2:6800/1");
        assert_eq!(
            on_client_ident(&ident(1, 1), None, &a, &b, true),
            Decision::NewSession
        );
        let stale = ExistingInfo {
            peer_global_seq: 10,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(1, 3), Some(&stale), &a, &b, true),
            Decision::CloseStale
        );
        let lossy = ExistingInfo {
            lossy: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(0, 6), Some(&lossy), &a, &b, true),
            Decision::ReplaceLossy
        );
        let session = ExistingInfo {
            client_cookie: 7,
            server_cookie: 8,
            established: true,
            ..existing()
        };
        assert_eq!(
            on_client_ident(&ident(99, 6), Some(&session), &b, &a, true),
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
            on_client_ident(&ident(1, 6), Some(&replacing), &a, &b, true),
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
            on_reconnect(&rc(7, 6, 3), None, &a, &b, true),
            Decision::Reset { full: true }
        );
        assert_eq!(
            on_reconnect(&rc(1, 6, 3), Some(&ex), &a, &b, false),
            Decision::Reset { full: false }
        );
        assert_eq!(
            on_reconnect(&rc(7, 4, 3), Some(&ex), &a, &b, true),
            Decision::RetryGlobal { global_seq: 5 }
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 1), Some(&ex), &a, &b, true),
            Decision::Retry { connect_seq: 2 }
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 3), Some(&ex), &a, &b, true),
            Decision::Reuse {
                reconnect: true,
                reset_session: false
            }
        );
        // Equal connect_seq: a reconnect race, won by the lower address.
        assert_eq!(
            on_reconnect(&rc(7, 6, 2), Some(&ex), &b, &a, true),
            Decision::Wait
        );
        assert_eq!(
            on_reconnect(&rc(7, 6, 2), Some(&ex), &a, &b, true),
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
            on_reconnect(&rc(7, 6, 3), Some(&fresh), &a, &b, true),
            Decision::Reset { full: false }
        );
    }
}
