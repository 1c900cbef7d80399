//! Linger ops in virtual time, against a real map (Ceph 16's at epoch 43).

use std::sync::Arc;

use super::*;
use msgr_osdmap::OsdMap;

fn map() -> Arc<OsdMap> {
    let bytes = include_bytes!("../../../../../testdata/osdmaps/pacific/full-43.bin");
    Arc::new(OsdMap::decode(bytes).expect("map"))
}

fn obj(name: &'static str) -> Object {
    Object {
        pool: 1,
        name: Bytes::from_static(name.as_bytes()),
        ..Object::default()
    }
}

fn ok() -> Result<Reply, i32> {
    Ok(Reply {
        result: 0,
        ops: Vec::new(),
        version: 0,
        osd: 0,
    })
}

/// The watch op's fields: (op, cookie, watch op, gen).
fn fields(o: &Outgoing) -> (u16, u64, u8, u32) {
    let op = &o.request.ops.0[0].op;
    let cookie = u64::from_le_bytes(op.args[..8].try_into().unwrap());
    let gen = u32::from_le_bytes(op.args[17..21].try_into().unwrap());
    (op.op, cookie, op.args[16], gen)
}

/// A watch registered at `t0`, its target computed in the map.
fn registered(l: &mut Lingers, t0: Instant) -> (u64, Outgoing) {
    let (cookie, reg) = l.watch(obj("w"), 30, t0);
    assert_eq!(fields(&reg), (OP_WATCH, cookie, watch_op::WATCH, 0));
    let timeout = &reg.request.ops.0[0].op.args[21..25];
    assert_eq!(timeout, &30u32.to_le_bytes());
    assert_eq!(
        l.handle_target(cookie, watch_target(&map(), &obj("w")), t0)
            .map(|o| o.sent),
        None
    );
    l.handle_result(reg.sent, &ok()).unwrap();
    (cookie, reg)
}

#[test]
fn a_registered_watch_is_pinged_every_tick_interval() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (cookie, _) = registered(&mut l, t0);
    assert!(l.tick(t0 + Duration::from_secs(4)).is_empty());
    assert_eq!(l.next_tick(), Some(t0 + PING_INTERVAL));
    let pings = l.tick(t0 + PING_INTERVAL);
    assert_eq!(pings.len(), 1);
    assert_eq!(fields(&pings[0]), (OP_WATCH, cookie, watch_op::PING, 0));
    assert_ne!(pings[0].request.flags & flag::READ, 0);
    // Not again before the next interval.
    assert!(l.tick(t0 + PING_INTERVAL).is_empty());
    assert_eq!(l.tick(t0 + 2 * PING_INTERVAL).len(), 1);
    // A confirmed ping moves what watch_check counts from.
    l.handle_result(pings[0].sent, &ok()).unwrap();
    let now = t0 + Duration::from_secs(7);
    assert_eq!(l.check(cookie, now), Ok(Duration::from_secs(2)));
}

#[test]
fn a_reset_or_a_moved_pg_registers_again_with_reconnect_and_the_next_gen() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (cookie, _) = registered(&mut l, t0);
    let target = watch_target(&map(), &obj("w")).expect("placed");
    let old_ping = l.tick(t0 + PING_INTERVAL).remove(0);
    // A reset of another OSD's connection leaves it alone.
    assert!(l.handle_reset(target.osd + 1, t0).is_empty());
    let again = l.handle_reset(target.osd, t0);
    assert_eq!(again.len(), 1);
    assert_eq!(
        fields(&again[0]),
        (OP_WATCH, cookie, watch_op::RECONNECT, 1)
    );
    // The ping of gen 0 failing is stale: no error.
    l.handle_result(old_ping.sent, &Err(-110)).unwrap();
    assert_eq!(l.poll_event(), None);
    l.handle_result(again[0].sent, &ok()).unwrap();
    let ping = l.tick(t0 + 2 * PING_INTERVAL).remove(0);
    assert_eq!(fields(&ping).3, 1, "pings carry the new gen");
    // The same target in a new map: nothing; another: RECONNECT, gen 2.
    assert!(l.handle_target(cookie, Some(target.clone()), t0).is_none());
    let moved = watch_target(&map(), &obj("elsewhere-1")).expect("placed");
    assert_ne!(moved, target);
    let r = l
        .handle_target(cookie, Some(moved), t0)
        .expect("registers again");
    assert_eq!(fields(&r), (OP_WATCH, cookie, watch_op::RECONNECT, 2));
}

#[test]
fn a_failed_ping_is_the_watchs_error_once_and_stops_the_pings() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (cookie, _) = registered(&mut l, t0);
    let ping = l.tick(t0 + PING_INTERVAL).remove(0);
    l.handle_result(ping.sent, &Err(-2)).unwrap();
    assert_eq!(
        l.poll_event(),
        Some(LingerEvent::Watch {
            cookie,
            event: WatchEvent::Error { err: ENOTCONN }
        })
    );
    assert_eq!(l.check(cookie, t0), Err(ENOTCONN));
    // A DISCONNECT after it says nothing more; no pings go.
    l.handle_watch_notify(wn(event::DISCONNECT, cookie));
    assert_eq!(l.poll_event(), None);
    assert!(l.tick(t0 + 10 * PING_INTERVAL).is_empty());
    assert_eq!(l.next_tick(), None);
}

#[test]
fn a_disconnect_is_enotconn_and_a_failed_registration_the_callers() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (cookie, _) = registered(&mut l, t0);
    l.handle_watch_notify(wn(event::DISCONNECT, cookie));
    assert_eq!(
        l.poll_event(),
        Some(LingerEvent::Watch {
            cookie,
            event: WatchEvent::Error { err: ENOTCONN }
        })
    );
    let (c2, reg) = l.watch(obj("x"), 0, t0);
    assert_eq!(l.check(c2, t0), Err(ENOTCONN), "not confirmed yet");
    assert_eq!(l.handle_result(reg.sent, &Err(-13)), Err(-13));
    assert_eq!(l.check(c2, t0), Err(EBADF), "forgotten");
}

fn wn(opcode: u8, cookie: u64) -> MWatchNotify {
    MWatchNotify {
        opcode,
        cookie,
        ver: 0,
        notify_id: 99,
        payload: Bytes::from_static(b"p"),
        return_code: 0,
        notifier_gid: 4100,
        data: Bytes::from_static(b"replies"),
    }
}

#[test]
fn notifies_reach_their_watch_and_completions_their_notify_once() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (watch, _) = registered(&mut l, t0);
    let (notify, req) = l.notify(obj("w"), b"hi", 10);
    let op = &req.ops.0[0];
    assert_eq!(op.op.op, OP_NOTIFY);
    assert_eq!(&op.op.args[..8], &notify.to_le_bytes());
    assert_eq!(
        &op.indata[..],
        &[1, 0, 0, 0, 10, 0, 0, 0, 2, 0, 0, 0, b'h', b'i']
    );
    l.handle_watch_notify(wn(event::NOTIFY, watch));
    assert!(matches!(
        l.poll_event(),
        Some(LingerEvent::Watch { cookie, event: WatchEvent::Notify { notify_id: 99, notifier_gid: 4100, .. } }) if cookie == watch
    ));
    // A completion for the watch, or a notify for the notify: ignored.
    l.handle_watch_notify(wn(event::NOTIFY_COMPLETE, watch));
    l.handle_watch_notify(wn(event::NOTIFY, notify));
    l.handle_watch_notify(wn(event::NOTIFY, 12345));
    assert_eq!(l.poll_event(), None);
    l.handle_watch_notify(wn(event::NOTIFY_COMPLETE, notify));
    assert_eq!(
        l.poll_event(),
        Some(LingerEvent::NotifyComplete {
            cookie: notify,
            return_code: 0,
            data: Bytes::from_static(b"replies")
        })
    );
    // A duplicate end: ignored; after removal, everything is.
    l.handle_watch_notify(wn(event::NOTIFY_COMPLETE, notify));
    assert_eq!(l.poll_event(), None);
    assert!(l.remove(notify).is_none(), "a notify has no UNWATCH");
    let unwatch = l.remove(watch).expect("an UNWATCH");
    assert_eq!(unwatch.ops.0[0].op.args[16], watch_op::UNWATCH);
    l.handle_watch_notify(wn(event::NOTIFY, watch));
    assert_eq!(l.poll_event(), None);
}

fn reply_from(osd: i32) -> Result<Reply, i32> {
    Ok(Reply {
        result: 0,
        ops: Vec::new(),
        version: 0,
        osd,
    })
}

#[test]
fn an_accepted_notify_is_sent_again_when_its_osd_resets_or_its_pg_moves() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (notify, req) = l.notify(obj("n"), b"hi", 10);
    // On its way: the objecter itself sends the caller's request again.
    assert!(l.handle_reset(3, t0).is_empty());
    l.notify_accepted(notify, 3);
    assert!(l.handle_reset(2, t0).is_empty(), "another OSD");
    let again = l.handle_reset(3, t0);
    assert_eq!(again.len(), 1);
    let o = &again[0];
    assert_eq!(o.sent.kind, SentKind::Notify);
    assert_eq!(
        o.request.ops, req.ops,
        "the same cookie, timeout and payload"
    );
    // Not again while the second send is on its way.
    assert!(l.handle_reset(3, t0).is_empty());
    // Accepted again (by osd.1): a map whose primary is another OSD sends
    // it again; the accepting OSD's target does not.
    l.handle_result(o.sent, &reply_from(1)).unwrap();
    let target = watch_target(&map(), &obj("n")).expect("placed");
    let primary = target.osd;
    let moved = l.handle_target(notify, Some(target.clone()), t0);
    assert_eq!(moved.is_some(), primary != 1);
    if let Some(m) = moved {
        l.handle_result(m.sent, &reply_from(primary)).unwrap();
    }
    assert!(l.handle_target(notify, Some(target), t0).is_none());
    // Ended: nothing is sent again, and a stale result is ignored.
    l.handle_watch_notify(wn(event::NOTIFY_COMPLETE, notify));
    assert!(matches!(
        l.poll_event(),
        Some(LingerEvent::NotifyComplete { return_code: 0, .. })
    ));
    assert!(l.handle_reset(primary, t0).is_empty());
    l.handle_result(o.sent, &Err(-110)).unwrap();
    assert_eq!(l.poll_event(), None);
}

#[test]
fn a_notify_sent_again_that_fails_ends_with_the_error() {
    let mut l = Lingers::new();
    let t0 = Instant::now();
    let (notify, _) = l.notify(obj("n"), b"", 0);
    l.notify_accepted(notify, 0);
    let again = l.handle_reset(0, t0).remove(0);
    l.handle_result(again.sent, &Err(-2)).unwrap();
    assert_eq!(
        l.poll_event(),
        Some(LingerEvent::NotifyComplete {
            cookie: notify,
            return_code: -2,
            data: Bytes::new()
        })
    );
    // Its end came: a late NOTIFY_COMPLETE is ignored.
    l.handle_watch_notify(wn(event::NOTIFY_COMPLETE, notify));
    assert_eq!(l.poll_event(), None);
}
