//! What a peer can make a connection hold is bounded, sans-IO: a message
//! announced beyond the receive budget is refused on its preamble; a
//! frame trickled in is cut off at its deadline; a peer cannot loop on
//! AUTH_BAD_METHOD or grow the pre-auth transcript; a standby session
//! expires; a peer that never reads is marked down at the hard queue limit.

use std::time::Duration;

use bytes::Bytes;
use msgr_frames::control::Ack;
use msgr_frames::WireQueue;
use msgr_protocol::{
    ConnState, Event, Message, Policy, ProtocolError, QueueLimits, Session, Timeouts,
};

mod script;
use script::{server_config, Script};

fn faults(events: &[Event]) -> Vec<ProtocolError> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fault(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_message_beyond_the_budget_is_refused_on_its_preamble() {
    let mut cfg = server_config(Policy::stateless_server());
    cfg.receive_budget = Some(1000);
    let mut s = Script::accepted(cfg);
    s.events();
    // Within the budget: delivered.
    let ok = s.message(1, &[1; 900]);
    s.bytes(&ok);
    assert!(s
        .events()
        .iter()
        .any(|e| matches!(e, Event::Message(m) if m.data.len() == 900)));
    // 2000 announced: refused once its preamble is in, before the rest.
    let big = s.message(2, &[2; 2000]);
    s.bytes(&big[..32]);
    assert_eq!(
        faults(&s.events()),
        vec![ProtocolError::OverBudget {
            len: 2000,
            budget: 1000
        }]
    );
    assert_eq!(s.conn.state(), ConnState::Closed);
}

#[test]
fn a_trickled_frame_is_cut_off_at_its_deadline() {
    let mut cfg = server_config(Policy::stateless_server());
    cfg.timeouts = Timeouts {
        frame: Duration::from_secs(5),
        ..Timeouts::default()
    };
    let mut s = Script::accepted(cfg);
    s.events();
    // Frames that keep coming, each within 5 s of the last, are fine,
    // however long the stream lasts.
    for seq in 1..=10 {
        let m = s.message(seq, &[0; 100]);
        s.bytes(&m[..50]);
        s.wait(Duration::from_secs(3));
        s.bytes(&m[50..]);
        s.wait(Duration::from_secs(3));
    }
    assert_eq!(faults(&s.events()), vec![]);
    // One frame a byte a second: cut off 5 s after its first byte.
    let m = s.message(11, &[0; 100]);
    for b in m.iter().take(4) {
        s.bytes(std::slice::from_ref(b));
        s.wait(Duration::from_secs(1));
    }
    assert_eq!(faults(&s.events()), vec![]);
    s.bytes(&m[4..5]);
    s.wait(Duration::from_secs(1));
    assert_eq!(faults(&s.events()), vec![ProtocolError::Timeout("frame")]);
}

#[test]
fn the_frame_deadline_restarts_when_the_runtime_resumes_reading() {
    let mut cfg = server_config(Policy::stateless_server());
    cfg.timeouts.frame = Duration::from_secs(5);
    let mut s = Script::accepted(cfg);
    let m = s.message(1, &[0; 100]);
    s.bytes(&m[..40]);
    // The runtime stopped reading 4 s (waiting for budget), then resumes.
    s.wait(Duration::from_secs(4));
    s.conn.resume_reading(s.now);
    s.wait(Duration::from_secs(4));
    assert_eq!(faults(&s.events()), vec![]);
    s.bytes(&m[40..]);
    assert!(s.events().iter().any(|e| matches!(e, Event::Message(_))));
}

#[test]
fn auth_bad_method_rounds_are_capped() {
    let mut s = Script::acceptor_before_auth(server_config(Policy::stateless_server()));
    for _ in 0..msgr_protocol::MAX_AUTH_ROUNDS {
        s.auth_request(0x7777); // a method the server does not know
        assert_eq!(faults(&s.events()), vec![]);
        assert_eq!(s.conn.phase(), "AUTH_ACCEPTING");
    }
    s.auth_request(0x7777);
    assert_eq!(
        faults(&s.events()),
        vec![ProtocolError::TooManyAuthRounds {
            max: msgr_protocol::MAX_AUTH_ROUNDS
        }]
    );
    assert_eq!(s.conn.state(), ConnState::Closed);
}

#[test]
fn the_pre_auth_transcript_is_capped() {
    // Requests near the handshake frame cap, each answered with
    // AUTH_BAD_METHOD: the transcript passes its cap before the rounds do.
    let mut s = Script::acceptor_before_auth(server_config(Policy::stateless_server()));
    let mut rounds = 0;
    while s.conn.state() != ConnState::Closed && rounds < 6 {
        s.auth_request_with(0x7777, Bytes::from(vec![0; 15 << 10]));
        rounds += 1;
    }
    assert_eq!(rounds, 5, "64 KiB is four such requests and a bit");
    assert_eq!(
        faults(&s.events()),
        vec![ProtocolError::HandshakeTooLong {
            max: msgr_protocol::MAX_PRE_AUTH
        }]
    );
}

#[test]
fn a_standby_session_expires_with_a_reset() {
    let mut cfg = server_config(Policy::stateful_server());
    cfg.timeouts.standby = Duration::from_secs(30);
    let mut s = Script::accepted(cfg);
    s.events();
    let link = s.conn.link_id().unwrap();
    s.conn
        .socket_closed(link, &std::io::ErrorKind::UnexpectedEof.into(), s.now);
    assert_eq!(s.conn.state(), ConnState::Standby);
    s.events();
    s.wait(Duration::from_secs(29));
    assert_eq!(s.conn.state(), ConnState::Standby);
    s.wait(Duration::from_secs(1));
    assert_eq!(s.conn.state(), ConnState::Closed);
    let ev = s.events();
    assert!(ev.iter().any(|e| matches!(e, Event::Reset)), "{ev:?}");
    assert_eq!(faults(&ev), vec![ProtocolError::Timeout("standby session")]);
}

/// Messages count for what they cost (Session::cost: their 4000 bytes
/// and a message's overhead): two and a half make the soft limit, five
/// the hard one.
#[test]
fn a_peer_that_never_reads_is_marked_down_at_the_hard_limit() {
    let mut cfg = server_config(Policy::stateful_server());
    let cost = Session::cost(4000);
    cfg.queue_limits = QueueLimits {
        soft: 2 * cost + cost / 2,
        hard: 5 * cost,
    };
    let mut s = Script::accepted(cfg);
    s.events();
    let reply = || Message::new(43, Bytes::from(vec![0; 4000]));
    // Written into the link (nobody takes it: the peer does not read).
    for _ in 0..2 {
        s.conn.send(reply(), s.now);
    }
    assert!(!s.conn.over_queue_limit());
    s.conn.send(reply(), s.now);
    assert!(s.conn.over_queue_limit(), "{} held", s.conn.held_bytes());
    s.conn.send(reply(), s.now);
    assert_eq!(s.conn.state(), ConnState::Ready);
    s.conn.send(reply(), s.now);
    s.conn.send(reply(), s.now);
    assert_eq!(s.conn.state(), ConnState::Closed);
    let ev = s.events();
    assert_eq!(
        faults(&ev),
        vec![ProtocolError::QueueOverflow {
            held: 5 * cost,
            max: 5 * cost
        }]
    );
    assert!(ev.iter().any(|e| matches!(e, Event::Reset)));
}

/// A peer that sends and never reads: reading stops at the soft limit,
/// and a peer that then takes nothing for Timeouts::unread is marked down
/// with a reset, what we held for it let go. One that takes a little
/// within each spell is not, however long it is slow.
#[test]
fn a_paused_peer_that_takes_nothing_is_marked_down() {
    let mut cfg = server_config(Policy::stateful_server());
    let cost = Session::cost(4000);
    cfg.queue_limits = QueueLimits {
        soft: 3 * cost,
        hard: 100 * cost,
    };
    cfg.timeouts.unread = Duration::from_secs(30);
    for reads in [false, true] {
        let mut s = Script::accepted(cfg.clone());
        s.events();
        let mut runtime = WireQueue::new();
        for _ in 0..4 {
            s.conn
                .send(Message::new(43, Bytes::from(vec![0; 4000])), s.now);
            s.conn.fill_output(&mut runtime, s.now);
        }
        assert!(s.conn.reading_paused());
        for _ in 0..5 {
            s.wait(Duration::from_secs(20));
            if reads {
                // The socket took a little of what the runtime held.
                runtime.advance(100);
                s.conn.fill_output(&mut runtime, s.now);
                assert!(s.conn.reading_paused(), "still paused");
            }
        }
        if reads {
            assert_eq!(s.conn.state(), ConnState::Ready, "slow, not stuck");
            continue;
        }
        assert_eq!(s.conn.state(), ConnState::Closed);
        let ev = s.events();
        assert!(ev.iter().any(|e| matches!(e, Event::Reset)), "{ev:?}");
        assert!(
            matches!(faults(&ev)[..], [ProtocolError::QueueOverflow { max, .. }] if max == 3 * cost),
            "{ev:?}"
        );
        assert_eq!(s.conn.session().held_bytes(), 0, "let go");
    }
}

/// A flood of empty messages meets the limits as large ones do: each
/// counts for a message's overhead (Session::cost), so senders wait from
/// the soft limit on, and the peer is marked down past the hard one,
/// holding no more than it plus one message.
#[test]
fn empty_messages_count_against_the_limits() {
    let mut cfg = server_config(Policy::stateful_server());
    let cost = Session::cost(0);
    let (soft, hard) = (10 * cost, 20 * cost);
    cfg.queue_limits = QueueLimits { soft, hard };
    let mut s = Script::accepted(cfg);
    s.events();
    let mut sent = 0;
    while s.conn.state() == ConnState::Ready && sent < 1000 {
        assert!(
            s.conn.held_bytes() <= hard + cost,
            "{} held",
            s.conn.held_bytes()
        );
        assert_eq!(s.conn.over_queue_limit(), s.conn.held_bytes() >= soft);
        s.conn.send(Message::new(2, Bytes::new()), s.now);
        sent += 1;
    }
    assert_eq!(
        s.conn.state(),
        ConnState::Closed,
        "{sent} sent, never closed"
    );
    assert!((20..=22).contains(&sent), "closed after {sent}");
    assert!(faults(&s.events())
        .iter()
        .any(|e| matches!(e, ProtocolError::QueueOverflow { max, .. } if *max == hard)));
}

/// What the peer took and has yet to acknowledge makes senders wait but
/// does not stop reading: the acknowledgements come in what we read.
#[test]
fn unacknowledged_bytes_do_not_stop_reading() {
    let mut cfg = server_config(Policy::stateful_server());
    cfg.queue_limits = QueueLimits {
        soft: 10_000,
        hard: 100_000,
    };
    let mut s = Script::accepted(cfg);
    s.events();
    for _ in 0..4 {
        s.conn
            .send(Message::new(43, Bytes::from(vec![0; 4000])), s.now);
    }
    // Framed and not yet taken by the runtime: the peer has not read them.
    assert!(s.conn.reading_paused());
    // The runtime takes them and the socket takes them all.
    let mut out = WireQueue::new();
    s.conn.fill_output(&mut out, s.now);
    out.advance(out.len());
    s.conn.fill_output(&mut out, s.now);
    assert_eq!(s.conn.session().unacked(), 4);
    assert!(s.conn.over_queue_limit(), "{} held", s.conn.held_bytes());
    assert!(!s.conn.reading_paused());
    // The peer's acknowledgement is read, and lets them go.
    s.frame(Ack { seq: 4 }.into());
    assert_eq!(s.conn.session().unacked(), 0);
    assert!(!s.conn.over_queue_limit());
    assert_eq!(faults(&s.events()), vec![]);
}

/// A READY server connection that trims its queues after a second idle.
fn trimming_server() -> Script {
    let mut cfg = server_config(Policy::stateless_server());
    cfg.timeouts.trim = Duration::from_secs(1);
    let mut s = Script::accepted(cfg);
    s.events();
    s
}

#[test]
fn an_idle_connection_trims_its_queues_once_and_stays_ready() {
    let mut s = trimming_server();
    // A burst of messages grows the event queue past what an emptied
    // queue lets go of at once (msgr_frames::let_go_if_small).
    let burst = |s: &mut Script, first: u64| {
        let frames: Vec<Bytes> = (first..first + 20)
            .map(|q| s.message(q, &[7; 100]))
            .collect();
        s.bytes(&frames.concat());
        assert_eq!(s.events().len(), 20);
    };
    burst(&mut s, 1);
    // The trim comes first, a second after the last traffic, and once:
    // then only the idle deadline is left.
    let trim_at = s.now + Duration::from_secs(1);
    assert_eq!(s.conn.poll_timeout(), Some(trim_at));
    s.wait(Duration::from_secs(1));
    assert_eq!(faults(&s.events()), vec![]);
    assert_eq!(s.conn.state(), ConnState::Ready);
    let idle = s.conn.poll_timeout().expect("the idle deadline");
    assert!(idle > s.now + Duration::from_secs(60), "{idle:?}");
    // Traffic resumes as before, and a new idle spell trims again.
    burst(&mut s, 21);
    assert_eq!(s.conn.poll_timeout(), Some(s.now + Duration::from_secs(1)));
}

#[test]
fn a_connection_with_nothing_to_trim_has_no_trim_timer() {
    let mut s = trimming_server();
    // A message at a time, as at depth 1, its output taken as a runtime
    // takes it: its emptied queues hold no buffers, and no timer fires
    // each second while it is busy.
    for seq in 1..=5 {
        let m = s.message(seq, &[7; 100]);
        s.bytes(&m);
        assert_eq!(s.events().len(), 1);
        s.conn.fill_output(&mut WireQueue::new(), s.now);
        let next = s.conn.poll_timeout().expect("the idle deadline");
        assert!(next > s.now + Duration::from_secs(60), "{next:?}");
        s.now += Duration::from_millis(700);
    }
    // A runtime whose own emptied queues kept buffers gets the trim.
    let trim_at = s.now - Duration::from_millis(700) + Duration::from_secs(1);
    assert_eq!(s.conn.poll_timeout_holding(true), Some(trim_at));
}
