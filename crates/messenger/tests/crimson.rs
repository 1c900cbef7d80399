//! Ceph's crimson failover matrix (src/test/crimson/test_messenger.cc,
//! `test_v2_protocol`; docs/research/crimson-v2-matrix.md), ported scenario
//! by scenario with crimson's exact expected counters, each breakpoint a
//! separate case, over the memory transport, TCP and io_uring.
//!
//! A case: a Test messenger with the interceptor and a plain TestPeer; the
//! body sends and connects; `wait_results` waits until every Test
//! connection is READY or closed and what was sent arrived; then each
//! connection's counters are checked: C(connect attempts, CLIENT_IDENT
//! writes, SESSION_RECONNECT writes, connects dispatched), A(accepts,
//! CLIENT_IDENT reads, SESSION_RECONNECT reads, accepts dispatched),
//! R(resets, remote resets) and its final state.
//!
//! Every scenario of `test_v2_protocol` (#1 to #38 of the note's §4.1):
//! the 51 fault cases, check_peer_wins, both branches of the connect and
//! reconnect races (acceptor wins: 22 cases; acceptor loses: 20 cases; over
//! memory both branches run, over TCP and io_uring whichever the ephemeral ports call
//! for), the connect/reconnect races, the 5 stale scenarios and the 8
//! policy lifecycles.

#[path = "support/poll.rs"]
mod poll;
#[path = "crimson/suite.rs"]
#[macro_use]
mod suite;

use msgr_frames::Tag;
use msgr_protocol::intercept::{Breakpoint, CustomPoint, Direction};
use suite::*;

/// #1 test_v2_lossy_early_connect_fault
#[tokio::test]
async fn lossy_early_connect_fault() {
    use CustomPoint::*;
    let bps = std::iter::once(Breakpoint::Custom(SocketConnecting)).chain(connector_handshake());
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

/// #4 test_v2_lossy_early_accept_fault
#[tokio::test]
async fn lossy_early_accept_fault() {
    let bps = acceptor_handshake();
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
