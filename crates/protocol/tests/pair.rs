//! Deterministic pair tests: two messengers' connections driven over an
//! in-memory network with virtual time, through every path of the msgr2
//! document's failure diagrams.

use std::time::Duration;

use msgr_auth::ConMode;
use msgr_protocol::testing::*;
use msgr_protocol::{ConnState, Policy};

/// A client (node 0, "client.1") and a server (node 1, "osd.0").
fn two_nodes(
    client: Policy,
    server: Policy,
    auth: std::sync::Arc<dyn msgr_auth::AuthProvider>,
) -> Net {
    let mut net = Net::new();
    net.add_node(
        "client.1",
        "v2:10.0.0.1:0/11",
        policies(client),
        auth.clone(),
    );
    net.add_node("osd.0", "v2:10.0.0.2:6800/22", policies(server), auth);
    net
}

/// A lossless client (node 0) and a stateful server (node 1), connected.
fn client_server(auth: std::sync::Arc<dyn msgr_auth::AuthProvider>) -> (Net, usize) {
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), auth);
    let c = net.connect(0, 1);
    net.run();
    (net, c)
}

#[test]
fn handshake_and_messages_both_ways() {
    for auth in [
        none(),
        shared_key(&[ConMode::CRC]),
        shared_key(&[ConMode::SECURE]),
    ] {
        let (mut net, c) = client_server(auth);
        assert_eq!(
            net.state((0, c)),
            ConnState::Ready,
            "{:?}",
            net.nodes[0].faults
        );
        assert_eq!(net.log(0, c), vec![Ev::Connected]);
        let s = net.registered(1, 0).expect("server registered the client");
        assert_eq!(net.log(1, s), vec![Ev::Accepted]);
        for t in 1..=5 {
            net.send((0, c), t, 100 * t as usize);
        }
        net.send((1, s), 100, 10);
        net.run();
        assert_eq!(net.delivered(1), vec![1, 2, 3, 4, 5]);
        assert_eq!(net.delivered(0), vec![100]);
        // Acks flowed: nothing left unacknowledged.
        assert_eq!(net.conn((0, c)).session().unacked(), 0);
        assert_eq!(net.conn((1, s)).session().unacked(), 0);
    }
}

#[test]
fn msgr2_0_only_peer() {
    let mut net = Net::new();
    let mut cfg = msgr_protocol::Config::new(
        "client.1".parse().unwrap(),
        none(),
        policies(Policy::lossless_client()),
    );
    cfg = cfg.rev0_only();
    net.add_node_with(cfg, "v2:10.0.0.1:0/11");
    net.add_node(
        "osd.0",
        "v2:10.0.0.2:6800/22",
        policies(Policy::stateful_server()),
        none(),
    );
    let c = net.connect(0, 1);
    net.send((0, c), 1, 5000);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
}

#[test]
fn reconnect_after_socket_failure_replays_exactly_once() {
    let (mut net, c) = client_server(shared_key(&[ConMode::SECURE]));
    for t in 1..=3 {
        net.send((0, c), t, 10);
    }
    net.run();
    // Cut the socket with messages in flight both ways and queued.
    for t in 4..=6 {
        net.send((0, c), t, 10);
    }
    net.cut((0, c));
    for t in 7..=9 {
        net.send((0, c), t, 10);
    }
    net.run();
    // The lossless client reconnects at once (it was READY).
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    assert_eq!(net.delivered(1), (1..=9).collect::<Vec<_>>());
    assert_eq!(net.log(0, c), vec![Ev::Connected, Ev::Connected]);
    assert_eq!(net.conn((0, c)).stats().reconnects, 1);
}

#[test]
fn lost_server_ident_restarts_establishment() {
    // Server's SERVER_IDENT is lost: the client reconnects with CLIENT_IDENT
    // (it has no server cookie), and the server continues the same session.
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), none());
    net.drop_after_accept = Some(1);
    let c = net.connect(0, 1);
    net.run();
    let s = net.registered(1, 0).expect("the server has the session");
    assert_eq!(net.state((1, s)), ConnState::Ready);
    assert_eq!(
        net.state((0, c)),
        ConnState::Connecting,
        "SERVER_IDENT was lost"
    );
    net.stop_dropping();
    net.cut((0, c));
    net.send((0, c), 1, 10);
    net.advance(Duration::from_secs(1));
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    assert_eq!(net.delivered(1), vec![1]);
    assert_eq!(net.conn((0, c)).stats().client_idents, 2);
    // The same server connection took the new socket (cookie matched).
    assert_eq!(
        net.log(1, s),
        vec![Ev::Accepted, Ev::Accepted, Ev::Message(1)]
    );
}

#[test]
fn server_reset_gives_remote_reset_and_a_new_session() {
    let (mut net, c) = client_server(none());
    net.send((0, c), 1, 10);
    net.run();
    // The server loses the session (as after a restart): its socket closes.
    let s = net.registered(1, 0).unwrap();
    net.conn((1, s)).mark_down();
    net.run();
    net.advance(Duration::from_secs(1));
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    // RECONNECT → RESET(full) → CLIENT_IDENT: remote reset, then connected.
    assert_eq!(
        net.log(0, c),
        vec![Ev::Connected, Ev::RemoteReset, Ev::Connected]
    );
    net.send((0, c), 2, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1, 2]);
    let s2 = net.registered(1, 0).unwrap();
    assert_ne!(s2, s, "a new server connection holds the new session");
}

#[test]
fn lossy_client_fault_closes_with_reset() {
    let mut net = two_nodes(Policy::lossy_client(), Policy::stateless_server(), none());
    let c = net.connect(0, 1);
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
    net.cut((0, c));
    net.run();
    assert_eq!(net.state((0, c)), ConnState::Closed);
    assert_eq!(net.log(0, c), vec![Ev::Connected, Ev::Reset, Ev::Closed]);
}

#[test]
fn refused_connect_backs_off_and_retries() {
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), none());
    net.nodes[1].listening = false;
    let c = net.connect(0, 1);
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.log(0, c), vec![Ev::Refused]);
    assert_eq!(net.state((0, c)), ConnState::Backoff);
    net.nodes[1].listening = true;
    net.advance(Duration::from_secs(1));
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1]);
}

#[test]
fn racing_lossless_peers_end_with_one_session_each_way() {
    let mut net = Net::new();
    net.add_node(
        "osd.1",
        "v2:10.0.0.1:6800/1",
        policies(Policy::lossless_peer()),
        none(),
    );
    net.add_node(
        "osd.2",
        "v2:10.0.0.2:6800/2",
        policies(Policy::lossless_peer()),
        none(),
    );
    let a = net.connect(0, 1);
    let b = net.connect(1, 0);
    for t in 1..=3 {
        net.send((0, a), t, 10);
        net.send((1, b), 100 + t, 10);
    }
    net.run();
    net.advance(Duration::from_secs(20));
    for t in 4..=5 {
        net.send((0, a), t, 10);
        net.send((1, b), 100 + t, 10);
    }
    net.run();
    assert_eq!(
        net.delivered(1),
        vec![1, 2, 3, 4, 5],
        "{:?} {:?}",
        net.nodes[0].faults,
        net.nodes[1].faults
    );
    assert_eq!(net.delivered(0), vec![101, 102, 103, 104, 105]);
    // Each side's registered connection to the other is READY.
    let ra = net.registered(0, 1).unwrap();
    let rb = net.registered(1, 0).unwrap();
    assert_eq!(net.state((0, ra)), ConnState::Ready);
    assert_eq!(net.state((1, rb)), ConnState::Ready);
}

#[test]
fn lost_client_ident_is_sent_again() {
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), none());
    net.drop_in_phase = Some((0, "SESSION_CONNECTING"));
    let c = net.connect(0, 1);
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.state((0, c)), ConnState::Connecting);
    assert!(
        net.registered(1, 0).is_none(),
        "the server never saw the ident"
    );
    net.stop_dropping();
    net.cut((0, c));
    net.advance(Duration::from_secs(1));
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    assert_eq!(net.conn((0, c)).stats().client_idents, 2);
    assert_eq!(net.delivered(1), vec![1]);
    let s = net.registered(1, 0).unwrap();
    assert_eq!(net.log(1, s), vec![Ev::Accepted, Ev::Message(1)]);
}

#[test]
fn client_reset_resets_the_servers_session_too() {
    // A client that restarts comes back with a new cookie; a stateful
    // server (resetcheck) resets the old session: its queued replies are
    // dropped and it reports a remote reset.
    let (mut net, c) = client_server(none());
    net.send((0, c), 1, 10);
    net.run();
    let s = net.registered(1, 0).unwrap();
    net.send((1, s), 500, 10);
    net.nodes[1].listening = true;
    // The server's reply is still queued when the client vanishes.
    net.cut((0, c));
    net.restart(0);
    net.run();
    let c2 = net.connect(0, 1);
    net.send((0, c2), 2, 10);
    net.run();
    net.advance(Duration::from_secs(1));
    assert_eq!(
        net.state((0, c2)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    assert_eq!(
        net.log(1, s),
        vec![
            Ev::Accepted,
            Ev::Message(1),
            Ev::RemoteReset,
            Ev::Accepted,
            Ev::Message(2)
        ]
    );
    assert!(
        net.delivered(0).is_empty(),
        "the reply of the old session was dropped"
    );
}

#[test]
fn reconnect_race_ends_with_one_session_each_way() {
    let mut net = Net::new();
    net.add_node(
        "osd.1",
        "v2:10.0.0.1:6800/1",
        policies(Policy::lossless_peer()),
        none(),
    );
    net.add_node(
        "osd.2",
        "v2:10.0.0.2:6800/2",
        policies(Policy::lossless_peer()),
        none(),
    );
    let a = net.connect(0, 1);
    net.send((0, a), 1, 10);
    net.run();
    let b = net.registered(1, 0).unwrap();
    net.send((1, b), 101, 10);
    net.run();
    // Both sides fault at once with messages queued: both reconnect.
    for t in 2..=4 {
        net.send((0, a), t, 10);
        net.send((1, b), 100 + t, 10);
    }
    net.cut((0, a));
    net.run();
    net.advance(Duration::from_secs(20));
    assert_eq!(
        net.delivered(1),
        vec![1, 2, 3, 4],
        "{:?} {:?}",
        net.nodes[0].faults,
        net.nodes[1].faults
    );
    assert_eq!(net.delivered(0), vec![101, 102, 103, 104]);
    assert_eq!(
        net.state((0, net.registered(0, 1).unwrap())),
        ConnState::Ready
    );
    assert_eq!(
        net.state((1, net.registered(1, 0).unwrap())),
        ConnState::Ready
    );
}

#[test]
fn standby_until_there_is_something_to_send() {
    let mut net = Net::new();
    net.add_node(
        "osd.1",
        "v2:10.0.0.1:6800/1",
        policies(Policy::lossless_peer()),
        none(),
    );
    net.add_node(
        "osd.2",
        "v2:10.0.0.2:6800/2",
        policies(Policy::lossless_peer()),
        none(),
    );
    let a = net.connect(0, 1);
    net.send((0, a), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
    net.cut((0, a));
    net.run();
    // Nothing queued: both sides stand by instead of reconnecting.
    assert_eq!(net.state((0, a)), ConnState::Standby);
    let connects = net.conn((0, a)).stats().connect_attempts;
    net.advance(Duration::from_secs(30));
    assert_eq!(
        net.conn((0, a)).stats().connect_attempts,
        connects,
        "no reconnect while idle"
    );
    net.send((0, a), 2, 10);
    net.run();
    net.advance(Duration::from_secs(1));
    assert_eq!(net.state((0, a)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1, 2]);
}

/// AUTH_BAD_METHOD renegotiation (ProtocolV2::handle_auth_bad_method,
/// MonConnection::handle_auth_bad_method): a client that prefers another
/// method, falling back to auth none, meets a server that only allows
/// none. The server answers AUTH_BAD_METHOD with what it allows; the
/// client moves on to none on the same socket and the session comes up.
/// A client with nothing left to offer fails with a typed error.
#[test]
fn bad_method_renegotiates_to_a_method_the_server_allows() {
    use msgr_auth::{method, MultiProvider};
    let fallback = std::sync::Arc::new(MultiProvider {
        providers: vec![
            (SHARED_KEY_METHOD, shared_key(&[ConMode::CRC])),
            (method::NONE, none()),
        ],
    });
    let mut net = Net::new();
    net.add_node(
        "client.1",
        "v2:10.0.0.1:0/11",
        policies(Policy::lossless_client()),
        fallback,
    );
    net.add_node(
        "osd.0",
        "v2:10.0.0.2:6800/22",
        policies(Policy::stateful_server()),
        none(),
    );
    let c = net.connect(0, 1);
    net.run();
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);

    // Only the shared-key method: refused, with the auth error recorded.
    let mut net = Net::new();
    net.add_node(
        "client.1",
        "v2:10.0.0.1:0/11",
        policies(Policy::lossy_client()),
        shared_key(&[ConMode::CRC]),
    );
    net.add_node(
        "osd.0",
        "v2:10.0.0.2:6800/22",
        policies(Policy::stateful_server()),
        none(),
    );
    let c = net.connect(0, 1);
    net.run();
    assert_ne!(net.state((0, c)), ConnState::Ready);
    assert!(
        net.nodes[0]
            .faults
            .iter()
            .any(|(_, f)| f.contains("auth") || f.contains("method")),
        "{:?}",
        net.nodes[0].faults
    );
}

/// A handshake phase that fails (here the acceptor's: the client targets
/// an address whose nonce is not the server's, so its CLIENT_IDENT is
/// refused) leaves a connection that closes its socket and says Closed,
/// never one stuck between states with its socket open (found by the
/// seeded workloads, where such a connection spun on its closed socket).
#[test]
fn a_failed_handshake_phase_closes_the_accepted_connection() {
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), none());
    let c = net.connect(0, 1);
    // The server restarted with a new nonce at the same address.
    net.nodes[1]
        .endpoint
        .set_addrs(msgr_encoding::EntityAddrvec::single(
            "v2:10.0.0.2:6800/23".parse().unwrap(),
        ));
    net.send((0, c), 1, 10);
    net.run();
    let accepted: Vec<_> = net.nodes[1].log.clone();
    assert!(!accepted.is_empty(), "the server accepted a socket");
    assert!(
        accepted.iter().all(|(_, e)| *e == Ev::Closed),
        "every accepted socket closed: {accepted:?}"
    );
    assert!(net.nodes[1]
        .faults
        .iter()
        .any(|(_, f)| f.contains("not ours")));
    for conn in net.nodes[1].conns() {
        assert_eq!(conn.state(), ConnState::Closed);
        assert!(
            conn.link_id().is_none(),
            "a closed connection holds no socket"
        );
    }
    // The client keeps trying (lossless) and delivers nothing to the wrong
    // instance.
    assert_ne!(net.state((0, c)), ConnState::Ready);
    assert!(net.delivered(1).is_empty());
}

/// A connector that lost its socket before SERVER_IDENT, with nothing to
/// send, stands by (as Ceph's and crimson's do) but holds no session; when
/// the peer then connects, that is a connection race decided by address,
/// not an established session to adopt. Adopting it (Ceph's READY/STANDBY
/// rule) let both peers of a race adopt each other's connection, and the
/// two sessions then reset each other, dropping queued messages (found by
/// the seeded workloads).
#[test]
fn a_standby_connector_without_a_session_races_rather_than_adopts() {
    let mut net = Net::new();
    let p = Policy::lossless_peer_reuse();
    net.add_node("osd.1", "v2:10.0.0.1:6800/11", policies(p), none());
    net.add_node("osd.2", "v2:10.0.0.2:6800/22", policies(p), none());
    // osd.1 connects; osd.2 accepts but its SERVER_IDENT is lost with the
    // socket.
    net.drop_after_accept = Some(1);
    let a = net.connect(0, 1);
    net.run();
    net.cut((0, a));
    net.run();
    net.stop_dropping();
    assert_eq!(net.state((0, a)), ConnState::Standby);
    assert!(!net.conn((0, a)).existing_info().established);
    // osd.2 (the higher address) now connects to osd.1 with a message.
    let b = net.connect(1, 0);
    net.send((1, b), 7, 100);
    net.advance(Duration::from_secs(5));
    assert_eq!(net.delivered(0), vec![7]);
    for node in 0..2 {
        assert!(
            !net.nodes[node]
                .log
                .iter()
                .any(|(_, e)| *e == Ev::RemoteReset),
            "node {node}: {:?}",
            net.nodes[node].log
        );
    }
    // One session: osd.1's connection (the race's winner) is READY and is
    // the one each side has registered.
    assert_eq!(net.state((0, a)), ConnState::Ready);
    assert_eq!(net.registered(0, 1), Some(a));
    let b_now = net.registered(1, 0).expect("osd.2 registered osd.1");
    assert_eq!(net.state((1, b_now)), ConnState::Ready);
}
