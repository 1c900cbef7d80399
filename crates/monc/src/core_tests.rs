//! The monitor client's core under virtual time: the instants handed to it
//! are made up, the monitors are messages built here.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::cephx::tickets::Ticket;
use msgr_auth::cephx::wire::TicketBlob;
use msgr_auth::cephx::{CephxClient, CryptoKey, KeyKind};
use msgr_auth::{method, SeededRandom};
use msgr_encoding::{AuthName, EntityAddrvec, EntityType, UTime, Uuid};
use msgr_messages::*;
use msgr_protocol::Message;

use super::*;
use crate::config::{MonAuth, MonClientConfig};
use crate::error::MonError;

fn mon(i: u8) -> EntityAddrvec {
    format!("v2:10.0.0.{i}:3300/0").parse().expect("addr")
}

fn mon_v1(i: u8) -> EntityAddrvec {
    format!("v1:10.0.0.{i}:6789/0").parse().expect("addr")
}

fn core_with(
    mons: Vec<EntityAddrvec>,
    auth: MonAuth,
    f: impl FnOnce(&mut MonClientConfig),
) -> MonCore {
    let mut cfg = MonClientConfig::new(mons.clone(), auth);
    cfg.hostname = "test".into();
    f(&mut cfg);
    MonCore::new(cfg, mons)
}

fn core(n: u8) -> MonCore {
    core_with((1..=n).map(mon).collect(), MonAuth::None, |_| {})
}

fn secs(t0: Instant, s: u64) -> Instant {
    t0 + Duration::from_secs(s)
}

fn drain(core: &mut MonCore) -> Vec<Transmit> {
    std::iter::from_fn(|| core.poll_transmit()).collect()
}

/// The connections dialled, in order.
fn dialled(ts: &[Transmit]) -> Vec<(ConnId, EntityAddrvec)> {
    ts.iter()
        .filter_map(|t| match t {
            Transmit::Connect { conn, addrs } => Some((*conn, addrs.clone())),
            _ => None,
        })
        .collect()
}

fn marked_down(ts: &[Transmit]) -> Vec<ConnId> {
    ts.iter()
        .filter_map(|t| match t {
            Transmit::MarkDown { conn } => Some(*conn),
            _ => None,
        })
        .collect()
}

fn sent_to(ts: &[Transmit], to: ConnId) -> Vec<Outgoing> {
    ts.iter()
        .filter_map(|t| match t {
            Transmit::Send { conn, msg } if *conn == to => Some(msg.clone()),
            _ => None,
        })
        .collect()
}

fn commands(ts: &[Transmit], to: ConnId) -> Vec<u64> {
    sent_to(ts, to)
        .iter()
        .filter_map(|m| match m {
            Outgoing::Command(c) => Some(c.tid),
            _ => None,
        })
        .collect()
}

fn subscriptions(ts: &[Transmit], to: ConnId) -> Vec<BTreeMap<String, SubscribeItem>> {
    sent_to(ts, to)
        .into_iter()
        .filter_map(|m| match m {
            Outgoing::Subscribe(s) => Some(s.what),
            _ => None,
        })
        .collect()
}

fn monmap(epoch: u32) -> Message {
    let map = MonMap {
        epoch,
        ..MonMap::default()
    };
    let mut out = Vec::new();
    map.encode(&mut out);
    MMonMap {
        monmap: Bytes::from(out),
    }
    .to_message(0)
}

fn ack(tid: u64) -> Message {
    MMonCommandAck {
        tid,
        r: 0,
        rs: "forged".into(),
        cmd: Vec::new(),
        output: Bytes::from_static(b"forged"),
    }
    .to_message(0)
}

fn blob(kind: &str, epoch: u32) -> Bytes {
    let path = format!(
        "{}/../../testdata/osdmaps/pacific/{kind}-{epoch}.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    Bytes::from(std::fs::read(path).expect("testdata"))
}

fn osd_map(key: u32, full: Bytes, oldest: u32) -> Message {
    MOSDMap {
        fsid: Uuid::default(),
        incremental_maps: BTreeMap::new(),
        maps: BTreeMap::from([(key, full)]),
        oldest_map: oldest,
        newest_map: key,
    }
    .to_message(0)
}

/// Hands `m` to the core as the driver does: an MOSDMap is applied
/// outside it.
fn deliver(core: &mut MonCore, conn: ConnId, m: Message, now: Instant) {
    if let Some(work) = core.handle_message(conn, m, now) {
        let done = work.run();
        core.finish_osd_map(done);
    }
}

/// A core with a session on its first monitor (and a monmap), at `t0`.
fn with_session(mut core: MonCore, t0: Instant) -> (MonCore, ConnId) {
    core.handle_timeout(t0);
    let ts = drain(&mut core);
    let (first, _) = dialled(&ts)[0].clone();
    core.handle_connect(first, t0);
    deliver(&mut core, first, monmap(1), t0);
    assert_eq!(core.ready(), Some(Ok(())));
    drain(&mut core);
    (core, first)
}

#[test]
fn a_hunt_dials_a_batch_and_the_first_to_answer_wins() {
    let t0 = Instant::now();
    let mut core = core(4);
    core.handle_timeout(t0);
    let ts = drain(&mut core);
    let batch = dialled(&ts);
    // hunt_parallel 3: the first three monitors, each greeted at once.
    let addrs: Vec<_> = batch.iter().map(|(_, a)| a.clone()).collect();
    assert_eq!(addrs, vec![mon(1), mon(2), mon(3)]);
    for (conn, _) in &batch {
        let msgs = sent_to(&ts, *conn);
        assert!(matches!(msgs.first(), Some(Outgoing::GetMap)), "{msgs:?}");
        let subs = subscriptions(&ts, *conn);
        assert!(subs
            .iter()
            .any(|s| s.contains_key("monmap") && s.contains_key("config")));
    }
    assert_eq!(core.ready(), None);

    // The second answers first: it wins, the others are closed.
    let (winner, _) = batch[1].clone();
    core.handle_connect(winner, t0);
    assert_eq!(core.active(), Some(winner));
    let mut lost = marked_down(&drain(&mut core));
    lost.sort();
    assert_eq!(lost, vec![batch[0].0, batch[2].0]);
    // A late connect of a loser changes nothing; what it sends is dropped.
    core.handle_connect(batch[0].0, t0);
    assert_eq!(core.active(), Some(winner));
    deliver(&mut core, batch[0].0, monmap(7), t0);
    assert!(core.monmap().is_none());
    // Ready once the session's monmap is in.
    assert_eq!(core.ready(), None);
    deliver(&mut core, winner, monmap(2), t0);
    assert_eq!(core.ready(), Some(Ok(())));
    assert_eq!(core.monmap().map(|m| m.epoch), Some(2));
    // With a session, no more hunting.
    core.handle_timeout(secs(t0, 5));
    assert!(dialled(&drain(&mut core)).is_empty());
}

#[test]
fn a_hunt_without_an_answer_moves_on_every_interval() {
    let t0 = Instant::now();
    let mut core = core_with((1..=4).map(mon).collect(), MonAuth::None, |c| {
        c.hunt_parallel = 2;
    });
    core.handle_timeout(t0);
    let first = dialled(&drain(&mut core));
    assert_eq!(
        first.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        vec![mon(1), mon(2)]
    );
    // Within the interval: the batch is given its time.
    core.handle_timeout(secs(t0, 2));
    assert!(drain(&mut core).is_empty());
    core.handle_refused(first[0].0);
    // At the interval: the batch is closed, the next two dialled.
    core.handle_timeout(secs(t0, 3));
    let ts = drain(&mut core);
    let mut closed = marked_down(&ts);
    closed.sort();
    assert_eq!(closed, vec![first[0].0, first[1].0]);
    let second = dialled(&ts);
    assert_eq!(
        second.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        vec![mon(3), mon(4)]
    );
    // Then round again, on new connections.
    core.handle_timeout(secs(t0, 6));
    let third = dialled(&drain(&mut core));
    assert_eq!(
        third.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        vec![mon(1), mon(2)]
    );
    assert!(third
        .iter()
        .all(|(c, _)| *c != first[0].0 && *c != first[1].0));
    // A batch gone before its interval (each reset) is replaced at once.
    for (c, _) in &third {
        core.handle_reset(*c);
    }
    core.handle_timeout(secs(t0, 7));
    assert_eq!(dialled(&drain(&mut core)).len(), 2);
    // The hunt's error names each monitor and what it last did.
    let MonError::Unreachable { tried, .. } = core.unreachable() else {
        panic!("not Unreachable");
    };
    assert_eq!(tried[0], (mon(1), "connection refused".to_string()));
    assert_eq!(tried[1], (mon(2), "no answer".to_string()));
}

#[test]
fn commands_go_again_on_a_new_session_and_only_their_tid_completes_them() {
    let t0 = Instant::now();
    let (mut core, first) = with_session(core(2), t0);
    let a = core.add_command(vec!["{\"prefix\": \"a\"}".into()], Bytes::new());
    let b = core.add_command(vec!["{\"prefix\": \"b\"}".into()], Bytes::new());
    assert_eq!((a, b), (1, 2));
    assert_eq!(commands(&drain(&mut core), first), vec![a, b]);
    core.handle_message(first, ack(b), t0);
    assert!(core.take_command_reply(b).is_some());

    // The session is lost; the hunt finds another monitor.
    core.handle_reset(first);
    assert_eq!(core.active(), None);
    core.handle_timeout(secs(t0, 1));
    let ts = drain(&mut core);
    assert!(commands(&ts, first).is_empty());
    let (second, _) = dialled(&ts)[0].clone();
    // Not before the candidate is ready.
    assert!(commands(&ts, second).is_empty());
    core.handle_connect(second, secs(t0, 1));
    // Only the unanswered command goes again, with its tid.
    assert_eq!(commands(&drain(&mut core), second), vec![a]);
    // The old session's ack is not taken, nor a tid of none of ours.
    core.handle_message(first, ack(a), secs(t0, 1));
    core.handle_message(second, ack(0), secs(t0, 1));
    core.handle_message(second, ack(b.wrapping_add(1)), secs(t0, 1));
    assert!(core.take_command_reply(a).is_none());
    core.handle_message(second, ack(a), secs(t0, 1));
    let reply = core.take_command_reply(a).expect("answered");
    assert_eq!(reply.output, Bytes::from_static(b"forged"));
    assert!(core.take_command_reply(a).is_none(), "taken once");
}

#[test]
fn version_requests_go_again_until_answered() {
    let t0 = Instant::now();
    let (mut core, conn) = with_session(core(1), t0);
    let h = core.add_version_request("osdmap", t0);
    let asked = |ts: &[Transmit]| {
        sent_to(ts, conn)
            .iter()
            .filter(|m| matches!(m, Outgoing::GetVersion(v) if v.handle == h && v.what == "osdmap"))
            .count()
    };
    assert_eq!(asked(&drain(&mut core)), 1);
    core.handle_timeout(secs(t0, 1));
    assert_eq!(asked(&drain(&mut core)), 0);
    core.handle_timeout(secs(t0, 3));
    assert_eq!(asked(&drain(&mut core)), 1);
    let reply = MMonGetVersionReply {
        handle: h,
        version: 40,
        oldest_version: 1,
    };
    core.handle_message(conn, reply.to_message(0), secs(t0, 4));
    assert_eq!(core.take_version(h), Some((40, 1)));
    core.handle_timeout(secs(t0, 9));
    assert_eq!(asked(&drain(&mut core)), 0);
}

#[test]
fn a_session_whose_keepalives_go_unanswered_is_dropped() {
    let t0 = Instant::now();
    let (mut core, conn) = with_session(core(2), t0);
    let keepalives = |ts: &[Transmit]| {
        ts.iter()
            .filter(|t| matches!(t, Transmit::Keepalive { conn: c } if *c == conn))
            .count()
    };
    core.handle_timeout(secs(t0, 9));
    assert_eq!(keepalives(&drain(&mut core)), 0);
    core.handle_timeout(secs(t0, 10));
    assert_eq!(keepalives(&drain(&mut core)), 1);
    // An ack at 15 s: the session lives 30 s past it.
    core.handle_keepalive_ack(conn, Some(UTime::new(1, 0)), secs(t0, 15));
    for s in [20, 30, 40] {
        core.handle_timeout(secs(t0, s));
        assert_eq!(keepalives(&drain(&mut core)), 1, "at {s} s");
        // The same stamp again is no new ack.
        core.handle_keepalive_ack(conn, Some(UTime::new(1, 0)), secs(t0, s));
    }
    assert_eq!(core.active(), Some(conn));
    core.handle_timeout(secs(t0, 45));
    assert_eq!(core.active(), Some(conn), "30 s after the ack: not yet");
    // Found at the first tick past the timeout (MonClient::tick, every
    // second), not at the next keepalive 10 s on.
    core.handle_timeout(secs(t0, 46));
    assert_eq!(marked_down(&drain(&mut core)), vec![conn]);
    assert_eq!(core.active(), None);
    core.handle_timeout(secs(t0, 47));
    assert_eq!(dialled(&drain(&mut core)).len(), 2);
}

/// A cephx client whose clock the test sets (seconds), holding tickets
/// for the AUTH, MON, OSD and MGR services that are worth renewing from
/// 100 s and expire at 200 s.
fn cephx_with_tickets(clock: Arc<AtomicU32>) -> Arc<CephxClient> {
    let rng = SeededRandom::new(1);
    let key = CryptoKey::random(KeyKind::Aes128, UTime::default(), &rng);
    let read = clock.clone();
    let cx = CephxClient::new(
        AuthName::client_admin(),
        key,
        Arc::new(SeededRandom::new(2)),
        Arc::new(move || UTime::new(read.load(Ordering::SeqCst), 0)),
    );
    for service in [
        EntityType::AUTH,
        EntityType::MON,
        EntityType::OSD,
        EntityType::MGR,
    ] {
        let ticket = Ticket {
            session_key: CryptoKey::random(KeyKind::Aes128, UTime::default(), &rng),
            blob: TicketBlob {
                secret_id: 1,
                blob: Bytes::from_static(b"ticket"),
            },
            expires: UTime::new(200, 0),
            renew_after: UTime::new(100, 0),
        };
        cx.install_ticket(service, 4100, ticket);
    }
    Arc::new(cx)
}

fn ticket_requests(ts: &[Transmit], to: ConnId) -> usize {
    sent_to(ts, to)
        .iter()
        .filter(|m| matches!(m, Outgoing::Auth(a) if a.protocol == method::CEPHX))
        .count()
}

#[test]
fn tickets_are_renewed_before_they_expire() {
    let t0 = Instant::now();
    let clock = Arc::new(AtomicU32::new(50));
    let cx = cephx_with_tickets(clock.clone());
    let core = core_with(vec![mon(1)], MonAuth::Cephx(cx.clone()), |_| {});
    let (mut core, conn) = with_session(core, t0);
    // Fresh tickets: nothing asked.
    core.handle_timeout(secs(t0, 1));
    assert_eq!(ticket_requests(&drain(&mut core), conn), 0);
    // Past renew_after, before expiry: asked on the session, once.
    clock.store(150, Ordering::SeqCst);
    assert_ne!(cx.need(), 0);
    core.handle_timeout(secs(t0, 2));
    assert_eq!(ticket_requests(&drain(&mut core), conn), 1);
    core.handle_timeout(secs(t0, 20));
    assert_eq!(ticket_requests(&drain(&mut core), conn), 0);
    // Unanswered for over 30 s (the session itself alive): asked again.
    core.handle_keepalive_ack(conn, Some(UTime::new(20, 0)), secs(t0, 20));
    core.handle_timeout(secs(t0, 33));
    assert_eq!(ticket_requests(&drain(&mut core), conn), 1);
    // Refused: said why, and asked again at the next timeout.
    let refused = MAuthReply {
        protocol: method::CEPHX,
        result: -13,
        global_id: 0,
        payload: Bytes::new(),
        message: String::new(),
    };
    core.handle_message(conn, refused.to_message(0), secs(t0, 34));
    assert_eq!(core.last_error(), Some("ticket renewal refused: -13"));
    core.handle_timeout(secs(t0, 35));
    assert_eq!(ticket_requests(&drain(&mut core), conn), 1);
}

#[test]
fn a_new_session_subscribes_from_the_epochs_after_ours_and_gaps_are_asked_for() {
    let t0 = Instant::now();
    let core = core_with((1..=2).map(mon).collect(), MonAuth::None, |c| {
        c.subscribe.push(("osdmap".into(), 0));
    });
    let (mut core, first) = with_session(core, t0);
    deliver(&mut core, first, monmap(3), t0);
    deliver(&mut core, first, osd_map(10, blob("full", 10), 1), t0);
    assert_eq!(core.osdmap().map(|m| m.epoch), Some(10));
    assert!(drain(&mut core).is_empty());
    // A message skipping 11 and 12 (which the monitors still have): the
    // map stays, and they are asked for on that session.
    deliver(&mut core, first, osd_map(13, blob("full", 13), 1), t0);
    assert_eq!(core.osdmap().map(|m| m.epoch), Some(10));
    let subs = subscriptions(&drain(&mut core), first);
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].get("osdmap").map(|s| s.start), Some(11));
    assert_eq!(subs[0].get("osdmap").map(|s| s.flags), Some(0));

    // The session is lost: the next one subscribes from the epoch after
    // each map we have.
    core.handle_reset(first);
    core.handle_timeout(secs(t0, 1));
    let ts = drain(&mut core);
    let (second, _) = dialled(&ts)[0].clone();
    let subs = subscriptions(&ts, second);
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].get("monmap").map(|s| s.start), Some(4));
    assert_eq!(subs[0].get("osdmap").map(|s| s.start), Some(11));
    assert_eq!(subs[0].get("config").map(|s| s.start), Some(0));

    // Without a subscription, a wait for the map asks once, ONETIME.
    let (mut plain, conn) = with_session(core_with(vec![mon(1)], MonAuth::None, |_| {}), t0);
    assert_eq!(plain.request_osdmap(), Some(conn));
    let subs = subscriptions(&drain(&mut plain), conn);
    assert_eq!(
        subs[0].get("osdmap").map(|s| (s.start, s.flags)),
        Some((0, SUBSCRIBE_ONETIME))
    );
}

/// A core hunting one msgr1 monitor with auth none: the candidate's
/// first MAuth out, nothing back.
fn hunting_v1() -> (MonCore, ConnId) {
    let mut core = core_with(vec![mon_v1(1)], MonAuth::None, |c| c.msgr2 = false);
    core.handle_timeout(Instant::now());
    let ts = drain(&mut core);
    let (conn, _) = dialled(&ts)[0].clone();
    let first = sent_to(&ts, conn);
    assert!(
        matches!(first.as_slice(), [Outgoing::Auth(a)] if a.protocol == 0),
        "{first:?}"
    );
    // Not its session before it authenticated us.
    core.handle_connect(conn, Instant::now());
    assert_eq!(core.active(), None);
    (core, conn)
}

/// A candidate that never answered our MAuth pushes an MOSDMap, an
/// MMonMap and a tid-0 MMonCommandAck. None is taken, and why is kept for
/// the error the hunt ends with.
#[test]
fn an_unauthenticated_candidate_is_heard_only_for_its_auth_reply() {
    let (mut core, c) = hunting_v1();
    let now = Instant::now();
    let tid = core.add_command(vec!["{}".into()], Bytes::new());
    deliver(&mut core, c, osd_map(10, blob("full", 10), 1), now);
    assert!(core.osdmap().is_none());
    let mm = MMonMap {
        monmap: Bytes::from_static(b"not even a monmap"),
    };
    deliver(&mut core, c, mm.to_message(0), now);
    assert!(core.monmap().is_none());
    deliver(&mut core, c, ack(0), now);
    deliver(&mut core, c, ack(tid), now);
    assert!(core.take_command_reply(tid).is_none());
    let why = core.last_error().unwrap_or_default().to_string();
    assert!(why.contains("before authenticating us"), "{why}");
    assert!(why.contains("MSG_MON_COMMAND_ACK"), "{why}");
    // Still its candidate: its MAuthReply (auth none) makes the session,
    // greeted then, with the pending command.
    let reply = MAuthReply {
        protocol: method::NONE,
        result: 0,
        global_id: 4100,
        payload: Bytes::new(),
        message: String::new(),
    };
    deliver(&mut core, c, reply.to_message(0), now);
    assert_eq!(core.active(), Some(c));
    let ts = drain(&mut core);
    assert_eq!(commands(&ts, c), vec![tid]);
    assert!(sent_to(&ts, c)
        .iter()
        .any(|m| matches!(m, Outgoing::GetMap)));
    deliver(&mut core, c, osd_map(10, blob("full", 10), 1), now);
    assert_eq!(core.osdmap().map(|m| m.epoch), Some(10));
}

/// A monitor refusing an msgr1 candidate's credentials ends it, and with
/// every monitor refusing, the client fails with the monitor's reason.
#[test]
fn an_msgr1_refusal_fails_with_the_monitors_reason() {
    let (mut core, c) = hunting_v1();
    let refused = MAuthReply {
        protocol: 0,
        result: -13,
        global_id: 0,
        payload: Bytes::new(),
        message: String::new(),
    };
    deliver(&mut core, c, refused.to_message(0), Instant::now());
    assert_eq!(marked_down(&drain(&mut core)), vec![c]);
    match core.ready() {
        Some(Err(MonError::AuthFailed(why))) => assert!(why.contains("EACCES"), "{why}"),
        other => panic!("not refused: {other:?}"),
    }
}

/// From our own monitor, the MOSDMap (a full map keyed u32::MAX,
/// oldest_map u32::MAX) is refused at once, the map kept.
#[test]
fn the_poison_osd_map_is_refused_from_a_session_too() {
    let t0 = Instant::now();
    let (mut core, c) = with_session(core(1), t0);
    deliver(&mut core, c, osd_map(10, blob("full", 10), 1), t0);
    let work = core
        .handle_message(c, osd_map(u32::MAX, blob("full", 10), u32::MAX), t0)
        .expect("an MOSDMap to apply");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work.run());
    });
    let done = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the message was handled within 10 s");
    core.finish_osd_map(done);
    assert_eq!(core.osdmap().map(|m| m.epoch), Some(10));
    let why = core.osdmap_error().unwrap_or_default();
    assert!(why.contains("epoch 4294967295"), "{why}");
}

#[path = "pool_op_tests.rs"]
mod pool_op_tests;
