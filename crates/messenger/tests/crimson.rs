//! Ceph's crimson failover matrix (src/test/crimson/test_messenger.cc,
//! `test_v2_protocol`; docs/research/crimson-v2-matrix.md), ported scenario
//! by scenario with crimson's exact expected counters, each breakpoint a
//! separate case, over the memory transport and TCP.
//!
//! A case: a Test messenger with the interceptor and a plain TestPeer; the
//! body sends and connects; `wait_results` waits until every Test
//! connection is READY or closed and what was sent arrived; then each
//! connection's counters are checked: C(connect attempts, CLIENT_IDENT
//! writes, SESSION_RECONNECT writes, connects dispatched), A(accepts,
//! CLIENT_IDENT reads, SESSION_RECONNECT reads, accepts dispatched),
//! R(resets, remote resets) and its final state.
//!
//! Ported so far: every fault scenario, #1 to #20 of the note's §4.1 (51
//! breakpoint cases). Still to come: the racing, stale and policy
//! lifecycle scenarios (#21 to #38).

#[path = "crimson/suite.rs"]
mod suite;

use msgr_frames::Tag;
use msgr_messenger::Policy;
use msgr_protocol::intercept::{Breakpoint, CustomPoint, Direction, Traps};
use suite::*;

fn lossy() -> (Policy, Policy) {
    (Policy::lossy_client(), Policy::stateless_server())
}

fn lossless() -> (Policy, Policy) {
    (Policy::lossless_client(), Policy::stateful_server())
}

fn peers() -> (Policy, Policy) {
    (Policy::lossless_peer(), Policy::lossless_peer())
}

const fn established(connect: [u32; 4]) -> Expect {
    ex(St::Established, connect, [0; 4], [0, 0])
}

/// #1 test_v2_lossy_early_connect_fault
#[tokio::test]
async fn lossy_early_connect_fault() {
    use CustomPoint::*;
    let bps = [
        Breakpoint::Custom(SocketConnecting),
        Breakpoint::Custom(BannerWrite),
        Breakpoint::Custom(BannerRead),
        Breakpoint::Custom(BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Write),
        frame(Tag::AUTH_DONE, Direction::Read),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ];
    for bp in bps {
        let name = format!("lossy_early_connect_fault -- {bp}");
        case(
            &name,
            &[bp],
            lossy(),
            Body::SendConnect,
            &[established([2, 1, 0, 1])],
        )
        .await;
    }
}

/// #2 test_v2_lossy_connect_fault
#[tokio::test]
async fn lossy_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("lossy_connect_fault -- {bp}");
        case(
            &name,
            &[bp],
            lossy(),
            Body::SendConnect,
            &[established([2, 2, 0, 1])],
        )
        .await;
    }
}

/// #3 test_v2_lossy_connected_fault
#[tokio::test]
async fn lossy_connected_fault() {
    let closed = ex(St::Closed, [1, 1, 0, 1], [0; 4], [1, 0]);
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossy_connected_fault -- {bp}");
        case(&name, &[bp], lossy(), Body::BidirectionalConnect, &[closed]).await;
    }
}

/// #8 test_v2_lossless_connect_fault
#[tokio::test]
async fn lossless_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("lossless_connect_fault -- {bp}");
        case(
            &name,
            &[bp],
            lossless(),
            Body::BidirectionalConnect,
            &[established([2, 2, 0, 1])],
        )
        .await;
    }
}

/// #9 test_v2_lossless_connected_fault
#[tokio::test]
async fn lossless_connected_fault() {
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossless_connected_fault -- {bp}");
        case(
            &name,
            &[bp],
            lossless(),
            Body::BidirectionalConnect,
            &[established([2, 1, 1, 2])],
        )
        .await;
    }
}

/// #10 test_v2_lossless_connected_fault2
#[tokio::test]
async fn lossless_connected_fault2() {
    for bp in [
        frame(Tag::ACK, Direction::Read),
        frame(Tag::ACK, Direction::Write),
        frame(Tag::KEEPALIVE2, Direction::Read),
        frame(Tag::KEEPALIVE2, Direction::Write),
        frame(Tag::KEEPALIVE2_ACK, Direction::Read),
        frame(Tag::KEEPALIVE2_ACK, Direction::Write),
    ] {
        let name = format!("lossless_connected_fault2 -- {bp}");
        case(
            &name,
            &[bp],
            lossless(),
            Body::Keepalives,
            &[established([2, 1, 1, 2])],
        )
        .await;
    }
}

/// #11 test_v2_lossless_reconnect_fault
#[tokio::test]
async fn lossless_reconnect_fault() {
    let message_write = frame(Tag::MESSAGE, Direction::Write);
    for second in [
        frame(Tag::SESSION_RECONNECT, Direction::Write),
        frame(Tag::SESSION_RECONNECT_OK, Direction::Read),
    ] {
        let name = format!("lossless_reconnect_fault -- {message_write}, {second}");
        let faults = [message_write, second];
        let expect = [established([3, 1, 2, 2])];
        case(
            &name,
            &faults,
            lossless(),
            Body::BidirectionalConnect,
            &expect,
        )
        .await;
    }
}

/// #16 test_v2_peer_connect_fault
#[tokio::test]
async fn peer_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("peer_connect_fault -- {bp}");
        case(
            &name,
            &[bp],
            peers(),
            Body::SendConnect,
            &[established([2, 2, 0, 1])],
        )
        .await;
    }
}

/// #19 test_v2_peer_connected_fault_reconnect
#[tokio::test]
async fn peer_connected_fault_reconnect() {
    let bp = frame(Tag::MESSAGE, Direction::Write);
    let name = format!("peer_connected_fault_reconnect -- {bp}");
    case(
        &name,
        &[bp],
        peers(),
        Body::SendConnect,
        &[established([2, 1, 1, 2])],
    )
    .await;
}

fn acceptor(policies: (Policy, Policy)) -> (Policy, Policy) {
    (policies.1, policies.0)
}

const NONE: [u32; 4] = [0; 4];

/// #4 test_v2_lossy_early_accept_fault
#[tokio::test]
async fn lossy_early_accept_fault() {
    use CustomPoint::*;
    let bps = [
        Breakpoint::Custom(BannerWrite),
        Breakpoint::Custom(BannerRead),
        Breakpoint::Custom(BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Read),
        frame(Tag::AUTH_DONE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ];
    let expect = [
        ex(St::Closed, NONE, [1, 0, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    for bp in bps {
        let name = format!("lossy_early_accept_fault -- {bp}");
        case(
            &name,
            &[bp],
            acceptor(lossy()),
            Body::PeerSendPeerConnect,
            &expect,
        )
        .await;
    }
}

/// #5 test_v2_lossy_accept_fault
#[tokio::test]
async fn lossy_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossy_accept_fault -- {bp}");
    case(
        &name,
        &[bp],
        acceptor(lossy()),
        Body::PeerSendPeerConnect,
        &expect,
    )
    .await;
}

/// #6 test_v2_lossy_establishing_fault
#[tokio::test]
async fn lossy_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 1], [1, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossy_establishing_fault -- {bp}");
    case(
        &name,
        &[bp],
        acceptor(lossy()),
        Body::PeerSendPeerConnect,
        &expect,
    )
    .await;
}

/// #7 test_v2_lossy_accepted_fault
#[tokio::test]
async fn lossy_accepted_fault() {
    let expect = [ex(St::Closed, NONE, [1, 1, 0, 1], [1, 0])];
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossy_accepted_fault -- {bp}");
        case(
            &name,
            &[bp],
            acceptor(lossy()),
            Body::BidirectionalPeerConnect,
            &expect,
        )
        .await;
    }
}

/// #12 test_v2_lossless_accept_fault
#[tokio::test]
async fn lossless_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossless_accept_fault -- {bp}");
    case(
        &name,
        &[bp],
        acceptor(lossless()),
        Body::BidirectionalPeerConnect,
        &expect,
    )
    .await;
}

/// #13 test_v2_lossless_establishing_fault
#[tokio::test]
async fn lossless_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
        ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]),
    ];
    let name = format!("lossless_establishing_fault -- {bp}");
    case(
        &name,
        &[bp],
        acceptor(lossless()),
        Body::BidirectionalPeerConnect,
        &expect,
    )
    .await;
}

/// #14 test_v2_lossless_accepted_fault
#[tokio::test]
async fn lossless_accepted_fault() {
    let mut replaced = ex(St::Replaced, NONE, [1, 0, 0, 0], [0, 0]);
    replaced.accept_short = true;
    let expect = [ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]), replaced];
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossless_accepted_fault -- {bp}");
        case(
            &name,
            &[bp],
            acceptor(lossless()),
            Body::BidirectionalPeerConnect,
            &expect,
        )
        .await;
    }
}

/// #15 test_v2_lossless_reaccept_fault
#[tokio::test]
async fn lossless_reaccept_fault() {
    let message_read = frame(Tag::MESSAGE, Direction::Read);
    let cases = [
        (
            frame(Tag::SESSION_RECONNECT, Direction::Read),
            [
                ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
                ex(St::Closed, NONE, [1, 0, 1, 0], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
            ],
        ),
        (
            frame(Tag::SESSION_RECONNECT_OK, Direction::Write),
            [
                ex(St::Established, NONE, [1, 1, 0, 3], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
            ],
        ),
    ];
    for (second, expect) in cases {
        let name = format!("lossless_reaccept_fault -- {message_read}, {second}");
        let faults = [message_read, second];
        case(
            &name,
            &faults,
            acceptor(lossless()),
            Body::BidirectionalPeerConnect,
            &expect,
        )
        .await;
    }
}

/// #17 test_v2_peer_accept_fault
#[tokio::test]
async fn peer_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("peer_accept_fault -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendPeerConnect, &expect).await;
}

/// #18 test_v2_peer_establishing_fault
#[tokio::test]
async fn peer_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
        ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]),
    ];
    let name = format!("peer_establishing_fault -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendPeerConnect, &expect).await;
}

/// #20 test_v2_peer_connected_fault_reaccept
#[tokio::test]
async fn peer_connected_fault_reaccept() {
    let bp = frame(Tag::MESSAGE, Direction::Read);
    let expect = [
        ex(St::Established, [1, 1, 0, 1], [0, 0, 0, 1], [0, 0]),
        ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
    ];
    let name = format!("peer_connected_fault_reaccept -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendConnect, &expect).await;
}

// ---------------------------------------------------------------- lifecycles

/// Checks stage `stage` of scenario `name`: every result against `expects`.
fn stage(name: &str, stage: u32, results: &[Outcome], expects: &[Expect]) {
    assert_eq!(
        results.len(),
        expects.len(),
        "{name} stage {stage}: {results:?}"
    );
    for (i, (e, got)) in expects.iter().zip(results).enumerate() {
        e.check(got, &format!("{name} stage {stage} r{i}"));
    }
}

/// Runs a lifecycle scenario over memory and TCP.
macro_rules! lifecycle {
    ($test:ident, $name:literal, $policies:expr, |$s:ident| $body:block) => {
        #[tokio::test]
        async fn $test() {
            async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
                let policies = $policies;
                let mut $s = Suite::new(t, ip, Traps::default(), policies.0, policies.1).await;
                $body
                $s.finish().await;
            }
            scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
            scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
        }
    };
}

const C1: [u32; 4] = [1, 1, 0, 1];
const A1: [u32; 4] = [1, 1, 0, 1];

lifecycle!(lossy_client, "test_v2_lossy_client", lossy(), |s| {
    let n = "lossy_client";
    s.connect_peer();
    s.send_bidirectional();
    stage(
        n,
        0,
        &s.wait_results(1).await,
        &[ex(St::Established, C1, NONE, [0, 0])],
    );
    s.markdown().await;
    s.connect_peer();
    s.send_peer();
    let r0 = ex(St::Closed, C1, NONE, [0, 0]);
    let r1 = ex(St::Established, C1, NONE, [0, 0]);
    stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
    s.markdown_peer().await;
    let r1 = ex(St::Closed, C1, NONE, [1, 0]);
    stage(n, 2, &s.wait_results(2).await, &[r0, r1]);
    s.connect_peer();
    s.send_peer();
    let r2 = ex(St::Established, C1, NONE, [0, 0]);
    stage(n, 3, &s.wait_results(3).await, &[r0, r1, r2]);
});

lifecycle!(
    stateless_server,
    "test_v2_stateless_server",
    acceptor(lossy()),
    |s| {
        let n = "stateless_server";
        s.peer_connect_me();
        s.send_bidirectional();
        stage(
            n,
            0,
            &s.wait_results(1).await,
            &[ex(St::Established, NONE, A1, [0, 0])],
        );
        s.markdown_peer().await;
        s.peer_connect_me();
        s.peer_send_me();
        let r0 = ex(St::Closed, NONE, A1, [1, 0]);
        let r1 = ex(St::Established, NONE, A1, [0, 0]);
        stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
        s.markdown().await;
        let r1 = ex(St::Closed, NONE, A1, [0, 0]);
        stage(n, 2, &s.wait_results(2).await, &[r0, r1]);
        s.peer_connect_me();
        s.peer_send_me();
        let r2 = ex(St::Established, NONE, A1, [0, 0]);
        stage(n, 3, &s.wait_results(3).await, &[r0, r1, r2]);
    }
);

lifecycle!(
    lossless_client,
    "test_v2_lossless_client",
    lossless(),
    |s| {
        let n = "lossless_client";
        s.connect_peer();
        s.send_bidirectional();
        stage(
            n,
            0,
            &s.wait_results(1).await,
            &[ex(St::Established, C1, NONE, [0, 0])],
        );
        s.markdown().await;
        s.connect_peer();
        s.send_peer();
        let r0 = ex(St::Closed, C1, NONE, [0, 0]);
        let r1 = ex(St::Established, C1, NONE, [0, 0]);
        stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
        s.markdown_peer().await;
        let r1 = ex(St::Established, [2, 2, 1, 2], NONE, [0, 1]);
        stage(n, 2, &s.wait_results(2).await, &[r0, r1]);
        s.connect_peer();
        s.send_peer();
        stage(n, 3, &s.wait_results(2).await, &[r0, r1]);
    }
);

lifecycle!(
    stateful_server,
    "test_v2_stateful_server",
    acceptor(lossless()),
    |s| {
        let n = "stateful_server";
        s.peer_connect_me();
        s.send_bidirectional();
        stage(
            n,
            0,
            &s.wait_results(1).await,
            &[ex(St::Established, NONE, A1, [0, 0])],
        );
        s.markdown_peer().await;
        s.peer_connect_me();
        s.peer_send_me();
        let r0 = ex(St::Established, NONE, [1, 1, 0, 2], [0, 1]);
        let r1 = ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]);
        stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
        s.markdown().await;
        let r0 = ex(St::Closed, NONE, [1, 1, 0, 2], [0, 1]);
        let r2 = ex(St::Established, NONE, [1, 1, 1, 1], [0, 0]);
        stage(n, 2, &s.wait_results(3).await, &[r0, r1, r2]);
        s.peer_connect_me();
        s.peer_send_me();
        stage(n, 3, &s.wait_results(3).await, &[r0, r1, r2]);
    }
);

/// #35 and #37: the connector's lifecycle between lossless peers.
async fn peer_connector<T: msgr_transport::Transport>(s: &mut Suite<T>, n: &str) {
    s.connect_peer();
    s.send_bidirectional();
    stage(
        n,
        0,
        &s.wait_results(1).await,
        &[ex(St::Established, C1, NONE, [0, 0])],
    );
    s.markdown().await;
    s.connect_peer();
    s.send_peer();
    let r0 = ex(St::Closed, C1, NONE, [0, 0]);
    let r1 = ex(St::Established, C1, NONE, [0, 0]);
    stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
    s.markdown_peer().await;
    assert!(s.is_standby(), "{n} stage 2: {:?}", s.results());
    s.connect_peer();
    s.try_send_peer();
    let r1 = ex(St::Established, [2, 2, 1, 2], NONE, [0, 1]);
    stage(n, 3, &s.wait_results(2).await, &[r0, r1]);
}

/// #36 and #38: the acceptor's lifecycle; `remote` is whether the peer's new
/// session resets ours (resetcheck).
async fn peer_acceptor<T: msgr_transport::Transport>(s: &mut Suite<T>, n: &str, remote: u32) {
    s.peer_connect_me();
    s.send_bidirectional();
    stage(
        n,
        0,
        &s.wait_results(1).await,
        &[ex(St::Established, NONE, A1, [0, 0])],
    );
    s.markdown_peer().await;
    s.peer_connect_me();
    s.peer_send_me();
    let r0 = ex(St::Established, NONE, [1, 1, 0, 2], [0, remote]);
    let r1 = ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]);
    stage(n, 1, &s.wait_results(2).await, &[r0, r1]);
    s.markdown().await;
    let r0 = ex(St::Closed, NONE, [1, 1, 0, 2], [0, remote]);
    stage(n, 2, &s.wait_results(2).await, &[r0, r1]);
    s.peer_connect_me();
    s.try_peer_send_me();
    let r2 = ex(St::Established, NONE, [1, 1, 1, 1], [0, 0]);
    stage(n, 3, &s.wait_results(3).await, &[r0, r1, r2]);
}

fn peers_reuse() -> (Policy, Policy) {
    (Policy::lossless_peer_reuse(), Policy::lossless_peer_reuse())
}

lifecycle!(
    peer_reuse_connector,
    "test_v2_peer_reuse_connector",
    peers_reuse(),
    |s| {
        peer_connector(&mut s, "peer_reuse_connector").await;
    }
);

lifecycle!(
    peer_reuse_acceptor,
    "test_v2_peer_reuse_acceptor",
    peers_reuse(),
    |s| {
        peer_acceptor(&mut s, "peer_reuse_acceptor", 1).await;
    }
);

lifecycle!(
    lossless_peer_connector,
    "test_v2_lossless_peer_connector",
    peers(),
    |s| {
        peer_connector(&mut s, "lossless_peer_connector").await;
    }
);

lifecycle!(
    lossless_peer_acceptor,
    "test_v2_lossless_peer_acceptor",
    peers(),
    |s| {
        peer_acceptor(&mut s, "lossless_peer_acceptor", 0).await;
    }
);

// ---------------------------------------------------------------- stale

/// Runs a scenario with breakpoints armed by (breakpoint, round, action)
/// over memory and TCP.
macro_rules! armed {
    ($test:ident, $policies:expr, [$(($bp:expr, $round:expr, $action:expr)),*], |$s:ident| $body:block) => {
        #[tokio::test]
        async fn $test() {
            async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
                let policies = $policies;
                let traps = Traps::default();
                $(traps.arm($bp, $round, $action);)*
                let mut $s = Suite::new(t, ip, traps, policies.0, policies.1).await;
                $body
                $s.finish().await;
            }
            scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
            scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
        }
    };
}

use msgr_protocol::intercept::Action;

// #26 test_v2_stale_connect
armed!(
    stale_connect,
    peers(),
    [(frame(Tag::SERVER_IDENT, Direction::Read), 1, Action::Stall)],
    |s| {
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let expect = [
            ex(St::Established, [1, 1, 0, 0], [0, 0, 0, 1], [0, 0]),
            ex(St::Replaced, NONE, [1, 1, 1, 0], [0, 0]),
        ];
        stage("stale_connect", 0, &s.wait_results(2).await, &expect);
    }
);

// #27 test_v2_stale_reconnect
armed!(
    stale_reconnect,
    peers(),
    [
        (frame(Tag::MESSAGE, Direction::Write), 1, Action::Fault),
        (
            frame(Tag::SESSION_RECONNECT_OK, Direction::Read),
            1,
            Action::Stall
        )
    ],
    |s| {
        s.send_peer();
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let expect = [
            ex(St::Established, [2, 1, 1, 1], [0, 0, 0, 1], [0, 0]),
            ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
        ];
        stage("stale_reconnect", 0, &s.wait_results(2).await, &expect);
    }
);

// #28 test_v2_stale_accept
armed!(
    stale_accept,
    peers(),
    [(frame(Tag::CLIENT_IDENT, Direction::Read), 1, Action::Stall)],
    |s| {
        s.peer_connect_me();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_established().await;
        s.unblock();
        let expect = [
            ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
            ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
        ];
        stage("stale_accept", 0, &s.wait_results(2).await, &expect);
    }
);

// #29 test_v2_stale_establishing
armed!(
    stale_establishing,
    peers(),
    [(frame(Tag::SERVER_IDENT, Direction::Write), 1, Action::Stall)],
    |s| {
        s.peer_connect_me();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let mut replaced = ex(St::Replaced, NONE, [1, 0, 0, 0], [0, 0]);
        replaced.accept_short = true;
        let expect = [ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]), replaced];
        stage("stale_establishing", 0, &s.wait_results(2).await, &expect);
    }
);

// #24 test_v2_racing_connect_reconnect_win
armed!(
    racing_connect_reconnect_win,
    peers(),
    [
        (frame(Tag::SERVER_IDENT, Direction::Read), 1, Action::Fault),
        (
            frame(Tag::SESSION_RECONNECT, Direction::Read),
            1,
            Action::Block
        )
    ],
    |s| {
        s.peer_send_me();
        s.connect_peer();
        s.wait_blocked().await;
        s.send_peer();
        s.wait_established().await;
        s.unblock();
        let expect = [
            ex(St::Established, [2, 2, 0, 1], NONE, [0, 0]),
            ex(St::Closed, NONE, [1, 0, 1, 0], [0, 0]),
        ];
        stage(
            "racing_connect_reconnect_win",
            0,
            &s.wait_results(2).await,
            &expect,
        );
    }
);

// #25 test_v2_racing_connect_reconnect_lose
armed!(
    racing_connect_reconnect_lose,
    peers(),
    [
        (frame(Tag::SERVER_IDENT, Direction::Read), 1, Action::Fault),
        (frame(Tag::CLIENT_IDENT, Direction::Write), 2, Action::Block)
    ],
    |s| {
        s.send_peer();
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let expect = [
            ex(St::Established, [2, 2, 0, 0], [0, 0, 0, 1], [0, 0]),
            ex(St::Replaced, NONE, [1, 1, 1, 0], [0, 0]),
        ];
        stage(
            "racing_connect_reconnect_lose",
            0,
            &s.wait_results(2).await,
            &expect,
        );
    }
);
