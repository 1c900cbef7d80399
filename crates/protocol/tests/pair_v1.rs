//! Deterministic pair tests of msgr1: two messengers' connections over an
//! in-memory network with virtual time, through ProtocolV1's handshake
//! (banner and addresses, CONNECT and its replies, SEQ), its sessions
//! (acks, replay, resets) and races (docs/research/msgr1-wire.md §4).

use std::time::Duration;

use msgr_auth::ConMode;
use msgr_protocol::testing::*;
use msgr_protocol::{ConnState, Policy};

/// A client (node 0, "client.1") and a server (node 1, "osd.0"), at v1
/// addresses.
fn two_nodes(
    client: Policy,
    server: Policy,
    auth: std::sync::Arc<dyn msgr_auth::AuthProvider>,
) -> Net {
    let mut net = Net::new();
    net.add_node(
        "client.1",
        "v1:10.0.0.1:0/11",
        policies(client),
        auth.clone(),
    );
    net.add_node("osd.0", "v1:10.0.0.2:6800/22", policies(server), auth);
    net
}

fn client_server(auth: std::sync::Arc<dyn msgr_auth::AuthProvider>) -> (Net, usize) {
    let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), auth);
    let c = net.connect(0, 1);
    net.run();
    (net, c)
}

/// The handshake opens a session both ways, with auth none and with an
/// authorizer the server challenges once (CHALLENGE_AUTHORIZER, then a
/// second CONNECT, then messages signed with its session key); messages
/// (one of 4 MiB) flow in order both ways and acks empty the senders'
/// unacknowledged lists.
#[test]
fn handshake_and_messages_both_ways() {
    for auth in [none(), shared_key(&[ConMode::CRC])] {
        let keyed = auth.server().allowed_methods(&msgr_auth::AuthPeer {
            entity_type: msgr_encoding::EntityType::CLIENT,
        }) != [1];
        let (mut net, c) = client_server(auth);
        assert!(net.conn((0, c)).is_msgr1());
        // A session key (the shared-key method's) signs every message.
        assert_eq!(net.conn((0, c)).msgr1_signs(), keyed);
        assert_eq!(
            net.state((0, c)),
            ConnState::Ready,
            "{:?} {:?}",
            net.nodes[0].faults,
            net.nodes[1].faults
        );
        assert_eq!(net.log(0, c), vec![Ev::Connected]);
        let s = net.registered(1, 0).expect("server registered the client");
        assert_eq!(net.log(1, s), vec![Ev::Accepted]);
        for t in 1..=5 {
            net.send((0, c), t, 100 * t as usize);
        }
        // Larger than any handshake frame: the session's caps apply.
        net.send((0, c), 6, 4 << 20);
        net.send((1, s), 100, 10);
        net.run();
        assert_eq!(net.delivered(1), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(net.delivered(0), vec![100]);
        assert_eq!(net.conn((0, c)).session().unacked(), 0);
        assert_eq!(net.conn((1, s)).session().unacked(), 0);
        // The session's numbers: connect_seq 1 on both sides.
        assert_eq!(net.conn((0, c)).session().connect_seq(), 1);
        assert_eq!(net.conn((1, s)).session().connect_seq(), 1);
    }
}

/// A lossless client whose socket fails reconnects with connect_seq 2,
/// the server's session takes the new socket (SEQ: each side tells the
/// other what it received), and every message arrives exactly once.
#[test]
fn reconnect_after_socket_failure_replays_exactly_once() {
    let (mut net, c) = client_server(none());
    for t in 1..=3 {
        net.send((0, c), t, 10);
    }
    net.run();
    for t in 4..=6 {
        net.send((0, c), t, 10);
    }
    net.cut((0, c));
    for t in 7..=9 {
        net.send((0, c), t, 10);
    }
    net.run();
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?} {:?}",
        net.nodes[0].faults,
        net.nodes[1].faults
    );
    assert_eq!(net.delivered(1), (1..=9).collect::<Vec<_>>());
    assert_eq!(net.log(0, c), vec![Ev::Connected, Ev::Connected]);
    let s = net.registered(1, 0).unwrap();
    assert_eq!(
        net.log(1, s).iter().filter(|e| **e == Ev::Accepted).count(),
        2
    );
    assert_eq!(net.conn((0, c)).stats().reconnects, 1);
}

/// The server forgets the session (as after a restart): the client's
/// CONNECT with connect_seq > 0 is answered RESETSESSION, the client
/// resets (a remote reset for its user) and opens a new session.
#[test]
fn server_reset_gives_remote_reset_and_a_new_session() {
    let (mut net, c) = client_server(none());
    net.send((0, c), 1, 10);
    net.run();
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
    assert_eq!(
        net.log(0, c),
        vec![Ev::Connected, Ev::RemoteReset, Ev::Connected]
    );
    net.send((0, c), 2, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1, 2]);
    assert_ne!(net.registered(1, 0).unwrap(), s);
}

/// A lossy client's fault closes it with a reset; the server's reply said
/// the session is lossy (its policy decides).
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

/// Two lossless peers connect to each other at once: one connection wins
/// (the lower address's, by Ceph's memcmp order), the other side is told
/// WAIT or replaced, and messages sent both ways arrive once each.
#[test]
fn connect_race_leaves_one_session() {
    let mut net = Net::new();
    let a = net.add_node(
        "osd.1",
        "v1:10.0.0.1:6800/1",
        policies(Policy::lossless_peer()),
        none(),
    );
    let b = net.add_node(
        "osd.2",
        "v1:10.0.0.2:6800/2",
        policies(Policy::lossless_peer()),
        none(),
    );
    let ca = net.connect(a, b);
    let cb = net.connect(b, a);
    net.send((a, ca), 1, 10);
    net.send((b, cb), 2, 10);
    net.run();
    net.advance(Duration::from_secs(20));
    assert_eq!(net.delivered(b), vec![1], "{:?}", net.nodes[b].faults);
    assert_eq!(net.delivered(a), vec![2], "{:?}", net.nodes[a].faults);
    net.send((a, ca), 3, 10);
    net.send((b, cb), 4, 10);
    net.run();
    assert_eq!(net.delivered(b), vec![1, 3]);
    assert_eq!(net.delivered(a), vec![2, 4]);
}

/// A keepalive is answered with KEEPALIVE2_ACK, its stamp echoed.
#[test]
fn keepalive_is_acknowledged() {
    let (mut net, c) = client_server(none());
    let now = net.now;
    let stamp = msgr_encoding::UTime::new(7, 9);
    net.conn((0, c)).send_keepalive(stamp, now);
    net.run();
    assert_eq!(net.conn((0, c)).last_keepalive_ack(), Some(stamp));
}

/// The socket fails while the server's session awaits the client's in_seq
/// (SEQ is out, nothing more came): that is an open session's fault, not
/// a refused socket's. The server stands by with the session, the client's
/// next CONNECT resumes it, and nothing is lost or reset.
#[test]
fn a_fault_awaiting_the_in_seq_keeps_the_session() {
    let (mut net, c) = client_server(none());
    net.send((0, c), 1, 10);
    net.run();
    let s = net.registered(1, 0).unwrap();
    // Lose what the client writes once READY again: its in_seq, message 2.
    net.drop_in_phase = Some((0, "READY"));
    net.cut((0, c));
    net.send((0, c), 2, 10);
    net.run();
    assert_eq!(net.conn((1, s)).phase(), "ACCEPTING_HANDLED_CONNECT_MSG");
    net.stop_dropping();
    net.cut((1, s));
    net.run();
    net.advance(Duration::from_secs(1));
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    assert_eq!(net.delivered(1), vec![1, 2]);
    assert!(
        !net.log(0, c).contains(&Ev::RemoteReset),
        "{:?}",
        net.log(0, c)
    );
    assert_eq!(net.registered(1, 0), Some(s));
}

/// A connector that does not know its peer's type (an address alone)
/// learns it from the BADPROTOVER its first CONNECT gets (the version the
/// acceptor's type picks), and opens the session at the second CONNECT.
#[test]
fn an_unknown_peer_type_is_learned_from_badprotover() {
    for auth in [none(), shared_key(&[ConMode::CRC])] {
        let mut net = two_nodes(Policy::lossless_client(), Policy::stateful_server(), auth);
        let target = net.nodes[1].addrs().clone();
        let now = net.now;
        let endpoint = &mut net.nodes[0].endpoint;
        endpoint.connect(target, msgr_encoding::EntityType::ANY, now);
        net.send((0, 0), 1, 10);
        net.run();
        assert_eq!(
            net.state((0, 0)),
            ConnState::Ready,
            "{:?}",
            net.nodes[0].faults
        );
        assert_eq!(
            net.conn((0, 0)).peer().entity_type,
            msgr_encoding::EntityType::OSD
        );
        assert_eq!(net.delivered(1), vec![1]);
    }
}

/// cephx_sign_messages off on both sides: a keyed session signs nothing
/// (and checks nothing), and messages flow.
#[test]
fn signing_can_be_turned_off() {
    let mut net = Net::new();
    for (name, addr, policy) in [
        ("client.1", "v1:10.0.0.1:0/11", Policy::lossless_client()),
        ("osd.0", "v1:10.0.0.2:6800/22", Policy::stateful_server()),
    ] {
        let mut cfg = msgr_protocol::Config::new(
            name.parse().unwrap(),
            shared_key(&[ConMode::CRC]),
            policies(policy),
        );
        cfg.sign_messages = false;
        net.add_node_with(cfg, addr);
    }
    let c = net.connect(0, 1);
    net.send((0, c), 1, 100);
    net.run();
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert!(!net.conn((0, c)).msgr1_signs());
    assert_eq!(net.delivered(1), vec![1]);
}

/// cephx_require_signatures on an acceptor: a keyed peer without MSG_AUTH
/// is answered FEATURES, and its connector says what it lacks.
#[test]
fn required_signatures_refuse_a_peer_without_msg_auth() {
    let mut net = Net::new();
    let mut client = Policy::lossless_client();
    client.features_supported &= !msgr_protocol::features::MSG_AUTH;
    net.add_node(
        "client.1",
        "v1:10.0.0.1:0/11",
        policies(client),
        shared_key(&[ConMode::CRC]),
    );
    let mut cfg = msgr_protocol::Config::new(
        "osd.0".parse().unwrap(),
        shared_key(&[ConMode::CRC]),
        policies(Policy::stateful_server()),
    );
    cfg.require_signatures = true;
    net.add_node_with(cfg, "v1:10.0.0.2:6800/22");
    let c = net.connect(0, 1);
    net.send((0, c), 1, 100);
    net.run();
    assert_ne!(net.state((0, c)), ConnState::Ready);
    let msg_auth = msgr_protocol::features::MSG_AUTH;
    let expected = format!("the peer requires features {msg_auth:#x} that we do not offer");
    assert!(
        net.nodes[0]
            .faults
            .iter()
            .any(|(_, f)| f.contains(&expected)),
        "{:?}",
        net.nodes[0].faults
    );
    assert!(net.delivered(1).is_empty());
}

/// cephx_require_version 2 (the default): a keyed peer whose features
/// lack CEPHX_V2, as when an on-path attacker strips the bit to get the
/// older signature format, is refused by an acceptor (FEATURES) and by a
/// connector (its READY lacks what we require). Version 1 on both sides
/// lets it sign the old way.
#[test]
fn keyed_peers_must_offer_cephx_v2_unless_relaxed() {
    let cephx_v2 = msgr_protocol::features::CEPHX_V2;
    for (stripped_side, relaxed) in [(0, false), (1, false), (0, true), (1, true)] {
        let mut net = Net::new();
        for (i, (name, addr, policy)) in [
            ("client.1", "v1:10.0.0.1:0/11", Policy::lossless_client()),
            ("osd.0", "v1:10.0.0.2:6800/22", Policy::stateful_server()),
        ]
        .into_iter()
        .enumerate()
        {
            let mut policy = policy;
            if i == stripped_side {
                policy.features_supported &= !cephx_v2;
            }
            let mut cfg = msgr_protocol::Config::new(
                name.parse().unwrap(),
                shared_key(&[ConMode::CRC]),
                policies(policy),
            );
            if relaxed {
                cfg.cephx_require_version = 1;
            }
            net.add_node_with(cfg, addr);
        }
        let c = net.connect(0, 1);
        net.send((0, c), 1, 100);
        net.run();
        let case = format!("CEPHX_V2 stripped on node {stripped_side}, relaxed {relaxed}");
        if relaxed {
            assert_eq!(net.state((0, c)), ConnState::Ready, "{case}");
            assert!(net.conn((0, c)).msgr1_signs(), "{case}");
            assert_eq!(net.delivered(1), vec![1], "{case}");
            continue;
        }
        assert_ne!(net.state((0, c)), ConnState::Ready, "{case}");
        assert!(net.delivered(1).is_empty(), "{case}");
        let expected = match stripped_side {
            0 => format!("the peer requires features {cephx_v2:#x} that we do not offer"),
            _ => format!("the peer lacks features {cephx_v2:#x}"),
        };
        assert!(
            net.nodes[0]
                .faults
                .iter()
                .any(|(_, f)| f.contains(&expected)),
            "{case}: {:?}",
            net.nodes[0].faults
        );
    }
}

/// A CONNECT older than the session it meets (ProtocolV1's row E3): the
/// server holds the client's first CONNECT unread (BLOCK); the client's
/// second connection opens the session with a higher global_seq, and is
/// then let go; released, the first CONNECT is answered RETRY_GLOBAL, and
/// its connection tries again above the session's global_seq, as Ceph's
/// connector does, and gets a session: its message arrives, once.
#[test]
fn a_stale_connect_is_answered_retry_global() {
    use msgr_frames::v1::Tag;
    use msgr_protocol::intercept::{Action, Breakpoint, Direction, Interceptor, Point1, Traps};
    use msgr_protocol::Config;
    let server_traps = std::sync::Arc::new(Traps::default());
    let client_traps = std::sync::Arc::new(Traps::default());
    let connect_read = Breakpoint::Msgr1(Point1::Connect, Direction::Read);
    server_traps.arm(connect_read, 1, Action::Block);
    let mut net = Net::new();
    let nodes = [
        (
            "client.1",
            "v1:10.0.0.1:0/11",
            Policy::lossless_client(),
            &client_traps,
        ),
        (
            "osd.0",
            "v1:10.0.0.2:6800/22",
            Policy::stateful_server(),
            &server_traps,
        ),
    ];
    for (name, addr, policy, traps) in nodes {
        let mut config = Config::new(name.parse().unwrap(), none(), policies(policy));
        config.interceptor = Some(traps.clone() as std::sync::Arc<dyn Interceptor>);
        net.add_node_with(config, addr);
    }
    let first = net.connect(0, 1);
    net.send((0, first), 1, 10);
    net.run();
    assert_eq!(
        server_traps.hits(connect_read),
        1,
        "the first CONNECT is held"
    );
    let second = net.connect(0, 1);
    net.send((0, second), 2, 10);
    net.run();
    assert_eq!(
        net.delivered(1),
        vec![2],
        "the second connection opened the session"
    );
    // The client lets the second connection go (a messenger keeps one per
    // peer), then the server reads the first CONNECT, held on its first
    // accepted connection.
    net.conn((0, second)).mark_down();
    net.run();
    net.unblock((1, 0));
    net.run();
    net.advance(Duration::from_secs(5));
    let retry_global = Breakpoint::Msgr1(Point1::Reply(Tag::RetryGlobal), Direction::Read);
    assert_eq!(
        client_traps.hits(retry_global),
        1,
        "the stale CONNECT is answered RETRY_GLOBAL"
    );
    let mut got = net.delivered(1);
    got.sort_unstable();
    assert_eq!(got, vec![1, 2], "each message once");
    assert_eq!(net.state((0, first)), ConnState::Ready);
}
