//! A path that stops working: partitions shorter and longer than the stall
//! check, both protocols, over the pair harness's partition model (bytes
//! held while partitioned, connects failing as to an unreachable host, path
//! checks answered as TCP would). A lossless session resumes within a probe
//! interval of the path healing, however long the partition lasted, and
//! loses and duplicates nothing.

use std::time::Duration;

use msgr_encoding::UTime;
use msgr_protocol::testing::*;
use msgr_protocol::{ConnState, PathProgress, Policy, ProtocolError, Timeouts};

/// A lossless client (node 0) and a stateful server (node 1), both
/// speaking `proto` ("v2" or "v1").
fn two_nodes(proto: &str) -> Net {
    nodes(proto, Policy::lossless_client(), Policy::stateful_server())
}

/// A client with `client` (node 0) and a server with `server` (node 1).
fn nodes(proto: &str, client: Policy, server: Policy) -> Net {
    let mut net = Net::new();
    let client = policies(client);
    net.add_node(
        "client.1",
        &format!("{proto}:10.0.0.1:0/11"),
        client,
        none(),
    );
    let server = policies(server);
    net.add_node(
        "osd.0",
        &format!("{proto}:10.0.0.2:6800/22"),
        server,
        none(),
    );
    net
}

/// A lossy client and a server that keeps no state for it (an OSD's
/// policy for clients).
fn lossy(proto: &str) -> Net {
    nodes(proto, Policy::lossy_client(), Policy::stateless_server())
}

/// [`two_nodes`], connected.
fn connected(proto: &str) -> (Net, usize) {
    let mut net = two_nodes(proto);
    let c = net.connect(0, 1);
    net.run();
    assert_eq!(
        net.state((0, c)),
        ConnState::Ready,
        "{:?}",
        net.nodes[0].faults
    );
    (net, c)
}

/// Advances in steps of `step` until node 1 has received `n` messages;
/// returns how long that took.
fn until_delivered(net: &mut Net, n: usize, step: Duration, most: Duration) -> Duration {
    let start = net.now;
    while net.delivered(1).len() < n {
        assert!(
            net.now - start <= most,
            "not delivered within {most:?}: {:?}",
            net.nodes[0].faults
        );
        net.advance(step);
    }
    net.now - start
}

fn stalls(net: &Net) -> usize {
    net.nodes[0]
        .faults
        .iter()
        .filter(|(_, f)| f.contains("path to the peer is down"))
        .count()
}

#[test]
fn a_long_partition_heals_within_a_probe_interval() {
    let t = Timeouts::default();
    for proto in ["v2", "v1"] {
        for partition in [2.5, 25.0, 40.0, 300.0].map(Duration::from_secs_f64) {
            let (mut net, c) = connected(proto);
            for tid in 1..=10 {
                net.send((0, c), tid, 1000);
            }
            net.run();
            assert_eq!(net.delivered(1).len(), 10);

            net.partition();
            for tid in 11..=42 {
                net.send((0, c), tid, 4096);
            }
            net.advance(partition);
            // The stall was seen (once: the socket it was seen on is gone)
            // and the client kept trying.
            assert_eq!(
                stalls(&net),
                1,
                "{proto} {partition:?}: {:?}",
                net.nodes[0].faults
            );
            assert!(net.conn((0, c)).stats().connect_attempts > 1);

            // Probing: each connect bounded by the probe interval.
            assert_eq!(net.last_connect_timeout, Some(t.probe));
            net.heal();
            let took = until_delivered(&mut net, 42, Duration::from_millis(10), t.probe * 3);
            assert!(
                took <= t.probe + Duration::from_millis(20),
                "{proto}: resumed after {took:?}"
            );
            assert_eq!(
                net.delivered(1),
                (1..=42).collect::<Vec<_>>(),
                "{proto}: lost or duplicated"
            );
            assert_eq!(net.state((0, c)), ConnState::Ready);
        }
    }
}

#[test]
fn connects_are_bounded_by_the_probe_interval_only_while_the_path_fails() {
    let t = Timeouts::default();
    let (mut net, c) = connected("v2");
    assert_eq!(net.last_connect_timeout, Some(t.connect));
    // A fault that is not the path's (the server reset the socket):
    // the reconnect gets the whole connect timeout.
    net.send((0, c), 1, 10);
    net.cut((0, c));
    net.run();
    assert_eq!(net.conn((0, c)).stats().connect_attempts, 2);
    assert_eq!(net.last_connect_timeout, Some(t.connect));
}

#[test]
fn a_partition_shorter_than_the_stall_check_changes_nothing() {
    for proto in ["v2", "v1"] {
        let (mut net, c) = connected(proto);
        net.partition();
        for tid in 1..=5 {
            net.send((0, c), tid, 100);
        }
        net.advance(Duration::from_millis(1500));
        net.heal();
        // TCP's own retransmission (3 s after the partition began) carries
        // them: within 2 s of the heal.
        let took = until_delivered(
            &mut net,
            5,
            Duration::from_millis(10),
            Duration::from_secs(2),
        );
        assert!(took <= Duration::from_millis(1510), "{proto}: {took:?}");
        assert_eq!(net.delivered(1), vec![1, 2, 3, 4, 5], "{proto}");
        assert_eq!(net.nodes[0].faults, Vec::new(), "{proto}");
        assert_eq!(net.conn((0, c)).stats().connect_attempts, 1, "{proto}");
    }
}

#[test]
fn an_idle_connection_is_not_checked() {
    // Nothing outstanding: a partition nobody sends into is not noticed,
    // and nothing happens when it heals.
    let (mut net, c) = connected("v2");
    net.partition();
    net.advance(Duration::from_secs(60));
    net.heal();
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
    assert_eq!(net.nodes[0].faults, Vec::new());
}

#[test]
fn a_peer_whose_host_acknowledges_is_kept() {
    // A peer that does not read (its throttle full) has its host still
    // acknowledge, or answer zero-window probes: whatever the silence, no
    // fault; a keepalive goes out when nothing is in flight.
    let (mut net, c) = connected("v2");
    net.send((0, c), 1, 10);
    let link = net.conn((0, c)).link_id().unwrap();
    let now = net.now + Duration::from_secs(600);
    let alive = PathProgress {
        in_flight: false,
        unanswered: 0,
        since_ack: Duration::from_millis(5),
        host_heard: None,
    };
    net.conn((0, c))
        .handle_path(link, Some(alive), UTime::default(), now);
    let acked_in_flight = PathProgress {
        in_flight: true,
        unanswered: 200,
        since_ack: Duration::from_millis(100),
        host_heard: None,
    };
    net.conn((0, c))
        .handle_path(link, Some(acked_in_flight), UTime::default(), now);
    let lossy = PathProgress {
        in_flight: true,
        unanswered: 2,
        since_ack: Duration::from_secs(600),
        host_heard: None,
    };
    net.conn((0, c))
        .handle_path(link, Some(lossy), UTime::default(), now);
    // A transport that cannot tell changes nothing.
    net.conn((0, c))
        .handle_path(link, None, UTime::default(), now);
    assert_eq!(net.conn((0, c)).stats().faults, 0);
    assert_eq!(net.state((0, c)), ConnState::Ready);
    // A stale link's report is ignored.
    let dead = PathProgress {
        in_flight: true,
        unanswered: 9,
        since_ack: Duration::from_secs(60),
        host_heard: None,
    };
    net.conn((0, c))
        .handle_path(link + 1, Some(dead), UTime::default(), now);
    assert_eq!(net.conn((0, c)).stats().faults, 0);
    net.conn((0, c))
        .handle_path(link, Some(dead), UTime::default(), now);
    assert_eq!(net.conn((0, c)).stats().faults, 1);
}

#[test]
fn path_failures_are_told_apart_from_refusals() {
    use std::io::{Error, ErrorKind};
    let path = [
        ErrorKind::TimedOut,
        ErrorKind::HostUnreachable,
        ErrorKind::NetworkUnreachable,
    ];
    for kind in path {
        assert!(
            ProtocolError::transport(&Error::from(kind)).is_path_failure(),
            "{kind:?}"
        );
    }
    for kind in [
        ErrorKind::ConnectionRefused,
        ErrorKind::ConnectionReset,
        ErrorKind::UnexpectedEof,
    ] {
        assert!(
            !ProtocolError::transport(&Error::from(kind)).is_path_failure(),
            "{kind:?}"
        );
    }
}

#[test]
fn a_refusing_peer_still_backs_off_to_the_maximum() {
    // The server's daemon is gone but its host answers (refused): the
    // doubling backoff of Ceph, not the path's probe interval.
    let mut net = two_nodes("v2");
    net.nodes[1].listening = false;
    let c = net.connect(0, 1);
    net.advance(Duration::from_secs(60));
    let attempts = net.conn((0, c)).stats().connect_attempts;
    let t = Timeouts::default();
    // 0.2 + 0.4 + ... doubling to 15 s: far fewer than one a second.
    assert!(attempts < 12, "{attempts} attempts in 60 s");
    assert!(t.backoff_max > t.probe * 10);
}

#[test]
fn a_lossy_client_is_reset_by_a_stalled_path_and_dials_again_probing() {
    // A lossy session keeps no sent messages to be acknowledged: a request
    // written with nothing read since is what the peer owes. Its path
    // stalls; the connection closes with a reset (the objecter's cue to
    // resend on a new one), and the new one probes from its first connect,
    // so that it gets through within a probe interval of the heal.
    let t = Timeouts::default();
    for proto in ["v2", "v1"] {
        let mut net = lossy(proto);
        let c = net.connect(0, 1);
        net.run();
        assert_eq!(net.state((0, c)), ConnState::Ready, "{proto}");
        assert_eq!(net.last_connect_timeout, Some(t.connect));
        net.partition();
        net.send((0, c), 1, 4096);
        // Not before its longer silence (PathProgress::LOSSY_CHECKS).
        net.advance(t.stall * (PathProgress::LOSSY_CHECKS - 1));
        assert_eq!(stalls(&net), 0, "{proto}: {:?}", net.nodes[0].faults);
        net.advance(t.stall * 2);
        assert_eq!(stalls(&net), 1, "{proto}: {:?}", net.nodes[0].faults);
        assert_eq!(
            net.state((0, c)),
            ConnState::Closed,
            "{proto}: {:?} {:?}",
            net.nodes[0].faults,
            net.log(0, c)
        );
        assert!(net.log(0, c).contains(&Ev::Reset), "{proto}");

        let again = net.connect(0, 1);
        net.advance(Duration::from_millis(10));
        assert_eq!(net.last_connect_timeout, Some(t.probe), "{proto}");
        net.advance(Duration::from_secs(20));
        net.heal();
        let start = net.now;
        while net.state((0, again)) != ConnState::Ready {
            assert!(net.now - start <= t.probe * 2, "{proto}: not connected");
            net.advance(Duration::from_millis(10));
        }
        assert!(
            net.now - start <= t.probe + Duration::from_millis(20),
            "{proto}"
        );
        net.send((0, again), 2, 10);
        net.run();
        assert_eq!(net.delivered(1), vec![2], "{proto}");

        // Established: the peer is forgotten, the next dial gets the
        // whole connect timeout.
        net.conn((0, again)).mark_down();
        net.run();
        net.connect(0, 1);
        net.advance(Duration::from_millis(10));
        assert_eq!(net.last_connect_timeout, Some(t.connect), "{proto}");
    }
}

#[test]
fn a_lossy_client_answered_by_its_peer_is_not_checked() {
    // Requests answered keep the connection out of the path check; a
    // request the peer's host took but its daemon has not answered gets a
    // keepalive, whose ack answers it.
    let (mut net, c) = {
        let mut net = lossy("v2");
        let c = net.connect(0, 1);
        net.run();
        (net, c)
    };
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
    // Delivered, and nothing came back: the peer still owes an answer.
    assert_eq!(net.conn((0, c)).last_keepalive_ack(), None);
    let link = net.conn((0, c)).link_id().unwrap();
    let alive = PathProgress {
        in_flight: false,
        unanswered: 0,
        since_ack: Duration::from_millis(5),
        host_heard: None,
    };
    let now = net.now + Duration::from_secs(3);
    let stamp = UTime { sec: 7, nsec: 0 };
    net.conn((0, c)).handle_path(link, Some(alive), stamp, now);
    net.run();
    assert_eq!(net.conn((0, c)).last_keepalive_ack(), Some(stamp));
    assert_eq!(net.nodes[0].faults, Vec::<(usize, String)>::new());
    assert_eq!(net.state((0, c)), ConnState::Ready);
    // Answered: a minute of silence is not checked.
    net.partition();
    net.advance(Duration::from_secs(60));
    assert_eq!(net.nodes[0].faults, Vec::<(usize, String)>::new());
}

#[test]
fn an_idle_connection_to_a_vanished_peer_faults_at_the_idle_timeout() {
    // A peer gone without closing, with nothing outstanding: no path
    // check, and the idle timeout (ms_connection_idle_timeout) finds it,
    // as Ceph's does: not earlier, and not never.
    let idle = Duration::from_secs(30);
    let mut net = Net::new();
    for (name, addr, policy) in [
        ("client.1", "v2:10.0.0.1:0/11", Policy::lossless_client()),
        ("osd.0", "v2:10.0.0.2:6800/22", Policy::stateful_server()),
    ] {
        let mut config =
            msgr_protocol::Config::new(name.parse().unwrap(), none(), policies(policy));
        config.timeouts.idle = idle;
        net.add_node_with(config, addr);
    }
    let c = net.connect(0, 1);
    net.run();
    net.send((0, c), 1, 10);
    net.run();
    assert_eq!(net.delivered(1), vec![1]);
    let quiet = net.now;
    net.partition();
    net.advance(idle - Duration::from_secs(1));
    assert_eq!(net.nodes[0].faults, Vec::<(usize, String)>::new());
    net.advance(Duration::from_secs(2));
    let f = &net.nodes[0].faults;
    assert!(
        f.first().is_some_and(|(_, e)| e.contains("idle")),
        "{f:?} after {:?}",
        net.now - quiet
    );
    assert_eq!(stalls(&net), 0);
}

#[test]
fn a_starved_flow_to_a_host_that_answers_others_is_not_reset() {
    // A congested link drops one flow's segments and retransmissions while
    // another flow to the same host gets through: the host is reachable,
    // TCP recovers the starved flow, and resetting it would lose its
    // request. Once nothing is heard from the host either, the same
    // silence is a stalled path again.
    let t = Timeouts::default();
    for proto in ["v2", "v1"] {
        let mut net = Net::new();
        net.add_node(
            "client.1",
            &format!("{proto}:10.0.0.1:0/11"),
            policies(Policy::lossy_client()),
            none(),
        );
        for (name, addr) in [("osd.0", "10.0.0.2:6800/22"), ("osd.1", "10.0.0.2:6801/33")] {
            let server = policies(Policy::stateless_server());
            net.add_node(name, &format!("{proto}:{addr}"), server, none());
        }
        let starved = net.connect(0, 1);
        let other = net.connect(0, 2);
        net.run();
        for c in [starved, other] {
            assert_eq!(net.state((0, c)), ConnState::Ready, "{proto}");
        }
        net.starve((0, starved));
        net.send((0, starved), 1, 4096);
        // osd.1 answers on the other connection four times a second.
        let (mut tid, begin) = (100, net.now);
        while net.now - begin < t.stall * 6 {
            tid += 1;
            net.send((2, 0), tid, 10);
            net.advance(Duration::from_millis(250));
        }
        assert_eq!(stalls(&net), 0, "{proto}: {:?}", net.nodes[0].faults);
        assert_eq!(net.state((0, starved)), ConnState::Ready, "{proto}");
        net.unstarve((0, starved));
        net.run();
        assert_eq!(net.delivered(1), vec![1], "{proto}");

        // The host falls silent too: the starved flow's path fails.
        net.starve((0, starved));
        net.send((0, starved), 2, 4096);
        net.advance(t.stall * (PathProgress::LOSSY_CHECKS + 1));
        assert_eq!(stalls(&net), 1, "{proto}: {:?}", net.nodes[0].faults);
        assert_eq!(net.state((0, starved)), ConnState::Closed, "{proto}");
    }
}
