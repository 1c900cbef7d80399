//! crimson's failover matrix in its form (crimson.rs), over msgr1: a Test
//! messenger with the interceptor and a TestPeer, both at `v1:` addresses;
//! a fault at every point of msgr1's handshake, on either side, for lossy
//! and lossless policies; a stale connect; both sides connecting at once,
//! won and lost (WAIT, or the peer's socket taken into the held
//! connection); a peer's reset answered RESETSESSION; a lost SEQ reply
//! answered RETRY_SESSION (RETRY_GLOBAL, for a stale CONNECT, is in
//! protocol's pair_v1.rs: our acceptor resumes a lossless session without
//! it, where Ceph's replace sends it); each connection's
//! counters checked exactly: C(connect attempts, CONNECT writes, 0, connects
//! dispatched), A(accepts, CONNECT reads, 0, accepts dispatched),
//! R(resets, remote resets), and its end state.

#[path = "support/poll.rs"]
mod poll;
#[path = "crimson/suite.rs"]
#[macro_use]
mod suite;

use msgr_frames::v1::Tag;
use msgr_protocol::intercept::{Breakpoint, CustomPoint, Direction, Point1};
use suite::*;

fn p1(p: Point1, d: Direction) -> Breakpoint {
    Breakpoint::Msgr1(p, d)
}

/// The connector's points, in handshake order.
fn connector_handshake1() -> Vec<Breakpoint> {
    use Direction::*;
    vec![
        Breakpoint::Custom(CustomPoint::SocketConnecting),
        p1(Point1::Hello, Write),
        p1(Point1::Hello, Read),
        p1(Point1::Connect, Write),
        p1(Point1::Reply(Tag::Seq), Read),
        p1(Point1::Seq, Write),
    ]
}

/// The acceptor's points, in handshake order.
fn acceptor_handshake1() -> Vec<Breakpoint> {
    use Direction::*;
    vec![
        p1(Point1::Hello, Write),
        p1(Point1::Hello, Read),
        p1(Point1::Connect, Read),
        p1(Point1::Reply(Tag::Seq), Write),
        p1(Point1::Seq, Read),
    ]
}

/// A fault at one point of the connector's handshake: the client (lossy,
/// or lossless against a stateful server) connects again and establishes
/// on its second attempt.
#[tokio::test]
async fn msgr1_connect_faults() {
    use_msgr1();
    for policies in [lossy(), lossless()] {
        for bp in connector_handshake1() {
            let name = format!("msgr1 connect fault -- {bp} ({:?})", policies.0);
            let writes = match bp {
                // The CONNECT of the faulted attempt was (about to be) written.
                Breakpoint::Msgr1(Point1::Connect | Point1::Reply(_) | Point1::Seq, _) => 2,
                _ => 1,
            };
            case(
                &name,
                &[bp],
                policies,
                Body::SendConnect,
                &[ex(St::Established, [2, writes, 0, 1], [0; 4], [0, 0])],
            )
            .await;
        }
    }
}

/// A fault at one point of the acceptor's handshake (the TestPeer
/// connects to Test): the faulted socket closes, the peer connects again,
/// and the second accepted connection holds the session.
#[tokio::test]
async fn msgr1_accept_faults() {
    use_msgr1();
    for policies in [lossy(), lossless()] {
        for bp in acceptor_handshake1() {
            let name = format!("msgr1 accept fault -- {bp} ({:?})", policies.0);
            case(
                &name,
                &[bp],
                acceptor(policies),
                Body::PeerSendPeerConnect,
                &accept_fault_expect(bp, policies.0.lossy),
            )
            .await;
        }
    }
}

/// What each accept fault leaves: before the session opened (SEQ not yet
/// written), the accepted connection closes and the peer's next one holds
/// the session. Once SEQ went out (a fault awaiting the in_seq), the
/// session is open: a lossy one is reset (and so is the peer's); a
/// lossless one stands by and takes the peer's next socket (that accepted
/// connection is replaced).
fn accept_fault_expect(bp: Breakpoint, lossy: bool) -> Vec<Expect> {
    let reads = match bp {
        Breakpoint::Msgr1(Point1::Connect | Point1::Reply(_), _) => 1,
        _ => 0,
    };
    match (bp, lossy) {
        // The lossy peer's session was open too: it ends with a reset and
        // does not connect again (its message is lost, as lossy allows).
        (Breakpoint::Msgr1(Point1::Seq, _), true) => {
            vec![ex(St::Closed, [0; 4], [1, 1, 0, 1], [1, 0])]
        }
        (Breakpoint::Msgr1(Point1::Seq, _), false) => vec![
            ex(St::Established, [0; 4], [1, 1, 0, 2], [0, 0]),
            ex(St::Replaced, [0; 4], [1, 1, 0, 0], [0, 0]),
        ],
        _ => vec![
            ex(St::Closed, [0; 4], [1, reads, 0, 0], [0, 0]),
            ex(St::Established, [0; 4], [1, 1, 0, 1], [0, 0]),
        ],
    }
}

/// crimson's stale_connect over msgr1: Test's connect stalls at reading
/// the reply to its CONNECT (its socket shut under it); meanwhile the
/// TestPeer connects to Test, and Test's accepting connection moves into
/// the stalled one (a race Test's CONNECT state loses to a live session);
/// released, the stale handshake fails and the session stays.
#[tokio::test]
async fn msgr1_stale_connect() {
    use msgr_protocol::intercept::{Action, Traps};
    use_msgr1();
    async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
        let traps = Traps::default();
        traps.arm(
            p1(Point1::Reply(Tag::Seq), Direction::Read),
            1,
            Action::Stall,
        );
        let (a, b) = peers();
        let mut s = Suite::new(t, ip, traps, a, b).await;
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_send_me();
        s.wait_replaced(1).await;
        s.unblock();
        let got = s.wait_results(2).await;
        let expect = [
            ex(St::Established, [1, 1, 0, 0], [0, 0, 0, 1], [0, 0]),
            ex(St::Replaced, [0; 4], [1, 1, 0, 0], [0, 0]),
        ];
        stage("msgr1_stale_connect", 0, &got, &expect);
        s.finish().await;
    }
    scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
    scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
    scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
}

/// The peer forgets the session (it marks its connection down): Test's
/// next CONNECT resumes a session the peer no longer has and is answered
/// RESETSESSION; Test resets its side (a remote reset for its user) and
/// opens a new session on the same socket with a second CONNECT.
#[tokio::test]
async fn msgr1_peer_reset_is_answered_resetsession() {
    use msgr_protocol::intercept::Traps;
    use_msgr1();
    async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
        let (a, b) = lossless();
        let mut s = Suite::new(t, ip, Traps::default(), a, b).await;
        s.send_peer();
        s.connect_peer();
        s.wait_established().await;
        s.markdown_peer().await;
        s.send_peer();
        let got = s.wait_results(1).await;
        let resets = s
            .traps
            .hits(p1(Point1::Reply(Tag::ResetSession), Direction::Read));
        let expect = [ex(St::Established, [2, 3, 0, 2], [0; 4], [0, 1])];
        stage("msgr1_peer_reset", 0, &got, &expect);
        assert_eq!(resets, 1, "one RESETSESSION");
        s.finish().await;
    }
    scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
    scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
    scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
}

/// Both sides connect at once (lossless peers): Test's connect is held
/// before it reads the peer's banner while the peer connects to Test.
/// Whoever's address is lower wins (Ceph's memcmp of the legacy
/// addresses): if the peer wins, Test's acceptor moves the peer's socket
/// into Test's held connection (which, released, finds its own socket
/// replaced); if Test wins, the peer's CONNECT is answered WAIT and Test's
/// own connection, released, opens the session. Either way one session
/// carries the messages both ways.
#[tokio::test]
async fn msgr1_connect_race() {
    use msgr_protocol::intercept::{Action, Traps};
    use_msgr1();
    async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
        let traps = Traps::default();
        traps.arm(p1(Point1::Hello, Direction::Read), 1, Action::Block);
        let (a, b) = peers();
        let mut s = Suite::new(t, ip, traps, a, b).await;
        let peer_wins = s.peer_wins();
        s.send_peer();
        s.connect_peer();
        s.wait_blocked().await;
        s.peer_connect_me();
        s.peer_send_me();
        let waits = || s.traps.hits(p1(Point1::Reply(Tag::Wait), Direction::Write));
        if peer_wins {
            s.wait_replaced(1).await;
        } else {
            assert!(poll::until(|| waits() >= 1).await, "no WAIT to the peer");
        }
        s.unblock();
        let got = s.wait_results(2).await;
        let expect = match peer_wins {
            // The held connection never wrote its CONNECT: its session came
            // with the peer's socket (an accept dispatched on it).
            true => [
                ex(St::Established, [1, 0, 0, 0], [0, 0, 0, 1], [0, 0]),
                ex(St::Replaced, [0; 4], [1, 1, 0, 0], [0, 0]),
            ],
            false => [
                ex(St::Established, [1, 1, 0, 1], [0; 4], [0, 0]),
                ex(St::Closed, [0; 4], [1, 1, 0, 0], [0, 0]),
            ],
        };
        stage("msgr1_connect_race", 0, &got, &expect);
        s.finish().await;
    }
    scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
    scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
    scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
}

/// The retry paths of a lossless reconnect: the second message's write
/// faults, so Test reconnects; the acceptor resumes the session (raising
/// its connect_seq) but Test's read of the SEQ reply faults too, so Test
/// tries again at the connect_seq it sent before, now behind the
/// acceptor's: RETRY_SESSION (row E6), and Test's next CONNECT, at the
/// acceptor's connect_seq, resumes the session; every message arrives once.
#[tokio::test]
async fn msgr1_retry_session() {
    use msgr_protocol::intercept::{Action, Traps};
    use_msgr1();
    async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
        let traps = Traps::default();
        traps.arm(
            p1(Point1::Item(Tag::Msg), Direction::Write),
            2,
            Action::Fault,
        );
        traps.arm(
            p1(Point1::Reply(Tag::Seq), Direction::Read),
            2,
            Action::Fault,
        );
        let (a, b) = lossless();
        let mut s = Suite::new(t, ip, traps, a, b).await;
        s.send_peer();
        s.connect_peer();
        s.wait_established().await;
        s.send_peer();
        let got = s.wait_results(1).await;
        // Sockets: the first, the one whose SEQ was lost, the one that
        // resumed; CONNECTs: one more on that last socket, answered
        // RETRY_SESSION; connects dispatched: the session's and its
        // resumption's.
        let expect = [ex(St::Established, [3, 4, 0, 2], [0; 4], [0, 0])];
        stage("msgr1_retry_session", 0, &got, &expect);
        let retries = s
            .traps
            .hits(p1(Point1::Reply(Tag::RetrySession), Direction::Read));
        assert_eq!(retries, 1, "one RETRY_SESSION");
        s.finish().await;
    }
    scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
    scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
    scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
}
