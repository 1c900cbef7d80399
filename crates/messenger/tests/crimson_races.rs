//! crimson's failover matrix, continued (see tests/crimson.rs and
//! docs/research/crimson-v2-matrix.md): check_peer_wins (#21), the connect
//! and reconnect races in the branch the addresses call for (#22, #23; over
//! memory both branches), the connect/reconnect races (#24, #25) and the
//! stale handshakes made with STALL (#26-#30), with crimson's exact
//! counters, over memory and TCP.

#[path = "support/poll.rs"]
mod poll;
#[path = "crimson/suite.rs"]
#[macro_use]
mod suite;

use msgr_frames::Tag;
use msgr_protocol::intercept::{Action, Breakpoint, CustomPoint, Direction, Traps};
use std::time::Duration;
use suite::*;

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

// #30 test_v2_stale_reaccept
armed!(
    stale_reaccept,
    peers(),
    [
        (frame(Tag::MESSAGE, Direction::Read), 1, Action::Fault),
        (
            frame(Tag::SESSION_RECONNECT_OK, Direction::Write),
            1,
            Action::Stall
        )
    ],
    |s| {
        s.peer_send_me();
        s.peer_connect_me();
        s.wait_blocked().await;
        // Hold the broken replacement past a backoff or two.
        tokio::time::sleep(Duration::from_millis(210)).await;
        s.unblock();
        let results = s.wait_results(3).await;
        let mut last = ex(St::Replaced, NONE, [1, 0, 0, 0], [0, 0]);
        last.accept_short = true;
        let expect = [
            ex(St::Established, NONE, [1, 1, 0, 3], [0, 0]),
            ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
            last,
        ];
        stage("stale_reaccept", 0, &results, &expect);
        assert!(results[2].accept[2] >= 1, "{results:?}");
    }
);

// ---------------------------------------------------------------- racing

/// #22: the test connects (blocked at `bp`) while the peer connects to it.
/// Which side's connection survives depends on the addresses (crimson's
/// peer_wins; #21 check_peer_wins): both branches are ported, and each run
/// takes the one its addresses call for.
async fn racing_connect_case<T: msgr_transport::Transport>(
    t: T,
    ip: &str,
    ports: (u16, u16),
    round: usize,
) {
    let mut s = Suite::new_at(t, ip, ports, Traps::default(), peers().0, peers().1).await;
    // The branch these addresses call for (crimson's peer_wins).
    let peer_wins = s.peer_wins();
    let connecting = Breakpoint::Custom(CustomPoint::SocketConnecting);
    let win_bps: Vec<Breakpoint> = std::iter::once(connecting)
        .chain(connector_handshake())
        .chain([frame(Tag::CLIENT_IDENT, Direction::Write)])
        .collect();
    let lose_bps: Vec<Breakpoint> = acceptor_handshake()
        .into_iter()
        .chain([frame(Tag::CLIENT_IDENT, Direction::Read)])
        .collect();
    let bps: &[Breakpoint] = if peer_wins { &win_bps } else { &lose_bps };
    let Some(&bp) = bps.get(round) else {
        return s.finish().await;
    };
    s.traps.arm(bp, 1, Action::Block);
    let name = format!(
        "racing_connect_acceptor_{} -- {bp}",
        if peer_wins { "win" } else { "lose" }
    );
    if peer_wins {
        s.send_peer();
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.peer_connect_me();
        s.wait_replaced(1).await;
        s.unblock();
        let results = s.wait_results(2).await;
        let mut r0 = ex(St::Established, [1, 0, 0, 0], [0, 0, 0, 1], [0, 0]);
        r0.connect_short = true;
        let r1 = ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]);
        stage(&name, 0, &results, &[r0, r1]);
    } else {
        s.peer_send_me();
        s.peer_connect_me();
        s.wait_blocked().await;
        s.send_peer();
        s.connect_peer();
        s.wait_established().await;
        s.unblock();
        let results = s.wait_results(2).await;
        let mut r0 = ex(St::Closed, NONE, [1, 0, 0, 0], [0, 0]);
        r0.accept_short = true;
        let r1 = ex(St::Established, C1, NONE, [0, 0]);
        stage(&name, 0, &results, &[r0, r1]);
    }
    s.finish().await;
}

#[tokio::test]
async fn racing_connect() {
    for round in 0..11 {
        // Over memory, both branches: the Test side's address higher
        // (crimson's default, acceptor wins), then lower (acceptor loses).
        for ports in [(9014, 9013), (9013, 9014)] {
            let net = msgr_transport::memory::MemoryNet::new();
            racing_connect_case(net, "10.0.0.1", ports, round).await;
        }
        // Over TCP and io_uring, whichever the ephemeral ports make it.
        racing_connect_case(
            msgr_transport::tcp::Tcp::default(),
            "127.0.0.1",
            (0, 0),
            round,
        )
        .await;
        racing_connect_case(msgr_uring::Uring::default(), "127.0.0.1", (0, 0), round).await;
    }
}

/// #23: a reconnect races the peer's reconnect (the test's side blocked at
/// the `round`-th hit of a breakpoint), in the branch the addresses call for.
async fn racing_reconnect_case<T: msgr_transport::Transport>(
    t: T,
    ip: &str,
    ports: (u16, u16),
    case: usize,
) {
    let mut s = Suite::new_at(t, ip, ports, Traps::default(), peers().0, peers().1).await;
    // The branch these addresses call for (crimson's peer_wins).
    let peer_wins = s.peer_wins();
    let connecting = (2, Breakpoint::Custom(CustomPoint::SocketConnecting));
    let win: Vec<(u32, Breakpoint)> = [
        (1, frame(Tag::SESSION_RECONNECT, Direction::Write)),
        connecting,
    ]
    .into_iter()
    .chain(connector_handshake().into_iter().map(|bp| (2, bp)))
    .collect();
    let lose: Vec<(u32, Breakpoint)> =
        std::iter::once((1, frame(Tag::SESSION_RECONNECT, Direction::Read)))
            .chain(acceptor_handshake().into_iter().map(|bp| (2, bp)))
            .collect();
    let cases: &[(u32, Breakpoint)] = if peer_wins { &win } else { &lose };
    let Some(&(round, bp)) = cases.get(case) else {
        return s.finish().await;
    };
    let fault = match peer_wins {
        true => frame(Tag::MESSAGE, Direction::Write),
        false => frame(Tag::MESSAGE, Direction::Read),
    };
    s.traps.arm(fault, 1, Action::Fault);
    s.traps.arm(bp, round, Action::Block);
    let side = if peer_wins { "win" } else { "lose" };
    let name = format!("racing_reconnect_acceptor_{side} -- {bp}({round})");
    if peer_wins {
        s.send_peer();
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let results = s.wait_results(2).await;
        let mut r0 = ex(St::Established, [2, 0, 0, 1], [0, 0, 0, 1], [0, 0]);
        r0.connect_short = true;
        let r1 = ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]);
        stage(&name, 0, &results, &[r0, r1]);
    } else {
        s.peer_send_me();
        s.peer_connect_me();
        s.wait_blocked().await;
        s.send_peer();
        s.wait_established().await;
        s.unblock();
        let results = s.wait_results(2).await;
        let r0 = ex(St::Established, [1, 0, 1, 1], A1, [0, 0]);
        let mut r1 = ex(St::Closed, NONE, [1, 0, 0, 0], [0, 0]);
        r1.accept_short = true;
        stage(&name, 0, &results, &[r0, r1]);
    }
    s.finish().await;
}

#[tokio::test]
async fn racing_reconnect() {
    for case in 0..11 {
        for ports in [(9014, 9013), (9013, 9014)] {
            let net = msgr_transport::memory::MemoryNet::new();
            racing_reconnect_case(net, "10.0.0.1", ports, case).await;
        }
        racing_reconnect_case(
            msgr_transport::tcp::Tcp::default(),
            "127.0.0.1",
            (0, 0),
            case,
        )
        .await;
        racing_reconnect_case(msgr_uring::Uring::default(), "127.0.0.1", (0, 0), case).await;
    }
}

/// #21 check_peer_wins: an established connection decides races by the
/// addresses the suite computed them from.
#[tokio::test]
async fn check_peer_wins() {
    for ports in [(9014, 9013), (9013, 9014)] {
        let net = msgr_transport::memory::MemoryNet::new();
        let mut s = Suite::new_at(
            net,
            "10.0.0.1",
            ports,
            Traps::default(),
            lossy().0,
            lossy().1,
        )
        .await;
        s.connect_peer();
        let results = s.wait_results(1).await;
        let r0 = ex(St::Established, C1, NONE, [0, 0]);
        stage("check_peer_wins", 0, &results, &[r0]);
        let conn = s.test.connections().pop().expect("r0");
        let peer = conn.peer_addrs().msgr2().copied().expect("peer address");
        let me = s.test.addrs().msgr2().copied().expect("our address");
        let ret = msgr_protocol::decide::peer_wins(&peer, &me, false);
        assert_eq!(ret, s.peer_wins());
        assert_eq!(ret, ports.0 > ports.1);
        s.finish().await;
    }
}
