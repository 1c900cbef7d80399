//! The interceptor's actions (FAULT, BLOCK, STALL) at custom and frame
//! breakpoints, on the sans-IO connections of the pair harness, with
//! crimson's counting rules (docs/research/crimson-v2-matrix.md §1–2): a
//! breakpoint's rounds count its hits across every connection of the
//! intercepted node, and attempts count even when the action faults them.

use std::sync::Arc;
use std::time::Duration;

use msgr_frames::Tag;
use msgr_protocol::intercept::{Action, Breakpoint, CustomPoint, Direction, Interceptor, Traps};
use msgr_protocol::testing::*;
use msgr_protocol::{Config, ConnState, Policy};

fn write(tag: Tag) -> Breakpoint {
    Breakpoint::Frame(tag, Direction::Write)
}

fn read(tag: Tag) -> Breakpoint {
    Breakpoint::Frame(tag, Direction::Read)
}

const CONNECTING: Breakpoint = Breakpoint::Custom(CustomPoint::SocketConnecting);
const ACCEPTED: Breakpoint = Breakpoint::Custom(CustomPoint::SocketAccepted);

/// A lossless client (node 0) and a stateful server (node 1); `traps` on
/// the node `intercepted`.
fn client_server(intercepted: usize, traps: &Arc<Traps>) -> Net {
    let mut net = Net::new();
    let nodes = [
        ("client.1", "v2:10.0.0.1:0/11", Policy::lossless_client()),
        ("osd.0", "v2:10.0.0.2:6800/22", Policy::stateful_server()),
    ];
    for (i, (name, addr, policy)) in nodes.into_iter().enumerate() {
        let mut config = Config::new(name.parse().unwrap(), none(), policies(policy));
        if i == intercepted {
            config.interceptor = Some(traps.clone() as Arc<dyn Interceptor>);
        }
        net.add_node_with(config, addr);
    }
    net
}

/// client_server with `arms` (round 1) on node `intercepted`, after the
/// client connected, sent message 1 and the network settled.
fn started(intercepted: usize, arms: &[(Breakpoint, Action)]) -> (Net, usize, Arc<Traps>) {
    let traps = Arc::new(Traps::default());
    for &(bp, action) in arms {
        traps.arm(bp, 1, action);
    }
    let mut net = client_server(intercepted, &traps);
    let c = net.connect(0, 1);
    net.send((0, c), 1, 10);
    net.run();
    (net, c, traps)
}

#[test]
fn every_point_of_a_clean_handshake_is_hit_once() {
    let (net, c, traps) = started(0, &[]);
    assert_eq!(net.delivered(1), vec![1]);
    let id = conn_id(0, c);
    for bp in [
        CONNECTING,
        Breakpoint::Custom(CustomPoint::BannerWrite),
        Breakpoint::Custom(CustomPoint::BannerRead),
        Breakpoint::Custom(CustomPoint::BannerPayloadRead),
        write(Tag::HELLO),
        read(Tag::HELLO),
        write(Tag::AUTH_REQUEST),
        read(Tag::AUTH_DONE),
        write(Tag::AUTH_SIGNATURE),
        read(Tag::AUTH_SIGNATURE),
        write(Tag::CLIENT_IDENT),
        read(Tag::SERVER_IDENT),
        write(Tag::MESSAGE),
    ] {
        assert_eq!(traps.conn_hits(id, bp), 1, "{bp}");
    }
    assert_eq!(traps.hits(ACCEPTED), 0, "the client accepted nothing");
}

#[test]
fn fault_at_client_ident_write_retries_and_counts_both_attempts() {
    let (mut net, c, traps) = started(0, &[(write(Tag::CLIENT_IDENT), Action::Fault)]);
    net.advance(Duration::from_secs(1));
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1]);
    let id = conn_id(0, c);
    assert_eq!(traps.conn_hits(id, CONNECTING), 2);
    assert_eq!(traps.conn_hits(id, write(Tag::CLIENT_IDENT)), 2);
    assert_eq!(net.log(0, c), vec![Ev::Connected]);
}

#[test]
fn fault_at_socket_connecting_makes_no_connection() {
    let (mut net, c, traps) = started(0, &[(CONNECTING, Action::Fault)]);
    assert_eq!(net.state((0, c)), ConnState::Backoff);
    assert!(net.nodes[1].conns().is_empty(), "no socket was opened");
    net.advance(Duration::from_secs(1));
    assert_eq!(net.delivered(1), vec![1]);
    assert_eq!(traps.hits(CONNECTING), 2);
}

#[test]
fn block_holds_the_server_ident_until_unblocked() {
    let (mut net, c, traps) = started(1, &[(write(Tag::SERVER_IDENT), Action::Block)]);
    // The server accepted (its state machine moved on) but nothing after
    // the blocked write reached the client.
    assert_eq!(net.state((0, c)), ConnState::Connecting);
    let s = net.registered(1, 0).expect("registered");
    assert!(net.conn((1, s)).link_held());
    assert!(net.delivered(1).is_empty());
    net.unblock((1, s));
    net.run();
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1]);
    assert_eq!(traps.hits(read(Tag::CLIENT_IDENT)), 1);
}

#[test]
fn block_at_socket_connecting_waits_for_the_unblock() {
    let (mut net, c, _traps) = started(0, &[(CONNECTING, Action::Block)]);
    net.advance(Duration::from_secs(60));
    assert_eq!(net.state((0, c)), ConnState::NeedSocket);
    net.unblock((0, c));
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
}

/// crimson's stale accept: the server stalls after reading CLIENT_IDENT
/// (the client sees its socket die and connects again, establishing a
/// session); released, the stale acceptor carries on with the old ident,
/// is found stale and closes, and the session stands.
#[test]
fn a_stalled_acceptor_resumes_stale_and_closes() {
    let (mut net, c, traps) = started(1, &[(read(Tag::CLIENT_IDENT), Action::Stall)]);
    net.advance(Duration::from_secs(1));
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1]);
    let stale = 0;
    assert!(
        net.conn((1, stale)).link_held(),
        "the first acceptor is frozen"
    );
    net.unblock((1, stale));
    net.run();
    assert_eq!(net.state((1, stale)), ConnState::Closed);
    assert_eq!(net.state((0, c)), ConnState::Ready);
    let live = net.registered(1, 0).expect("the session");
    assert_ne!(live, stale);
    assert_eq!(net.state((1, live)), ConnState::Ready);
    net.send((0, c), 2, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1, 2]);
    assert_eq!(traps.hits(read(Tag::CLIENT_IDENT)), 2);
    assert_eq!(traps.hits(ACCEPTED), 2);
}

/// STALL on a write: the frame goes out, then the socket dies under the
/// writer; the reader (the client) reconnects, and the released writer
/// fails at once.
#[test]
fn a_stalled_write_is_delivered_before_the_socket_dies() {
    let (mut net, c, _traps) = started(1, &[(write(Tag::SERVER_IDENT), Action::Stall)]);
    // The client got SERVER_IDENT (ready), then lost the socket.
    assert_eq!(net.log(0, c)[0], Ev::Connected);
    // Its reconnect found the server's session (ready, its socket stalled)
    // and moved into it: the stalled socket was dropped on the way.
    net.advance(Duration::from_secs(1));
    let s = net.registered(1, 0).expect("registered");
    assert!(!net.conn((1, s)).link_held());
    net.unblock((1, s)); // nothing held any more: no effect
    net.run();
    assert_eq!(net.state((0, c)), ConnState::Ready);
    assert_eq!(net.state((1, s)), ConnState::Ready);
    assert_eq!(net.delivered(1), vec![1]);
    assert_eq!(net.conn((0, c)).stats().reconnects, 1);
}
