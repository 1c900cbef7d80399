//! crimson's policy lifecycles (#31-#38; see tests/crimson.rs and
//! docs/research/crimson-v2-matrix.md §4.8): four stages each (connect,
//! markdown on either side, reconnect) with crimson's exact counters, over
//! memory and TCP.

#[path = "support/poll.rs"]
mod poll;
#[path = "crimson/suite.rs"]
#[macro_use]
mod suite;

use msgr_messenger::Policy;
use msgr_protocol::intercept::Traps;
use suite::*;

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
    // The stage expects the message dispatched on the new connection, which
    // the results could otherwise be read before (over real sockets).
    s.wait_dispatched(2, 1).await;
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
