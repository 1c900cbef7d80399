//! The objecter against a real map (Ceph 16's at epoch 43: pool 1
//! replicated size 3 on osd.0-2, pool 2 EC), OSDs played by the test.

use super::*;
use crate::request::Ops;
use msgr_messages::osd_types::OsdOp;

fn map() -> Arc<OsdMap> {
    let bytes = include_bytes!("../../../../testdata/osdmaps/pacific/full-43.bin");
    Arc::new(OsdMap::decode(bytes).expect("map"))
}

fn req(name: &'static str, ops: Ops) -> Request {
    let object = Object {
        pool: 1,
        name: Bytes::from_static(name.as_bytes()),
        ..Object::default()
    };
    Request {
        mtime: UTime::new(1, 2),
        ..Request::new(object, ops)
    }
}

fn reply_to(t: &Transmit, result: i32, out: &'static [u8]) -> MOSDOpReply {
    let mut r = MOSDOpReply::answering(t.msg.clone(), result);
    r.retry_attempt = t.msg.retry_attempt;
    if let Some(op) = r.ops.first_mut() {
        op.payload_len = out.len() as u32;
    }
    r.data = Bytes::from_static(out);
    r
}

/// What the objecter sends, once its queued placements are computed.
fn drain(o: &mut Objecter) -> Vec<Transmit> {
    o.place_now();
    std::iter::from_fn(|| o.poll_transmit()).collect()
}

#[test]
fn a_read_goes_to_the_acting_primary_and_completes() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let now = Instant::now();
    let tid = o.submit(req("a", Ops::new().read(0, 10)), now);
    let t = drain(&mut o);
    assert_eq!(t.len(), 1);
    let t = &t[0];
    // `ceph osd map test a` at e43: pg 1.29eec818 (1.0), acting [1,0,2] p1.
    let place = m.place(1, b"a", b"").expect("placed");
    assert_eq!(t.osd, place.osds.acting_primary);
    assert_eq!(t.msg.pgid.pgid, place.pg);
    assert_eq!(t.msg.hash, 0x29ee_c818);
    assert_eq!(t.msg.flags, 0x0040_0014);
    assert_eq!((t.msg.retry_attempt, t.msg.osdmap_epoch), (0, 43));
    assert_eq!(t.msg.mtime, UTime::default(), "reads carry no time");
    o.handle_reply(t.osd, reply_to(t, 0, b"0123456789"));
    let c = o.poll_completion().expect("completed");
    assert_eq!(c.tid, tid);
    let r = c.result.expect("reply");
    assert_eq!(&r.ops[0].outdata[..], b"0123456789");
    assert_eq!(o.pending(), 0);
}

#[test]
fn stale_replies_are_dropped_and_a_reset_resends() {
    let mut o = Objecter::new(map(), Limits::default());
    let data = Bytes::from_static(b"payload");
    o.submit(
        req("b", Ops::new().write_full(data.clone())),
        Instant::now(),
    );
    let first = drain(&mut o).remove(0);
    assert_eq!(first.msg.flags, 0x0040_0024);
    assert_eq!(first.msg.ops[0].payload_len, 7);
    assert_eq!(first.msg.data, data);
    assert_eq!(first.msg.mtime, UTime::new(1, 2));
    o.handle_reset(first.osd);
    let second = drain(&mut o).remove(0);
    assert_eq!(second.msg.retry_attempt, 1);
    // The first send's reply is stale now; from another OSD, foreign.
    o.handle_reply(first.osd, reply_to(&first, 0, b""));
    o.handle_reply((first.osd + 1) % 3, reply_to(&second, 0, b""));
    assert!(o.poll_completion().is_none());
    o.handle_reply(second.osd, reply_to(&second, 0, b""));
    assert!(o.poll_completion().expect("done").result.is_ok());
}

#[test]
fn eagain_sends_again() {
    let mut o = Objecter::new(map(), Limits::default());
    o.submit(req("c", Ops::new().stat()), Instant::now());
    let t = drain(&mut o).remove(0);
    o.handle_reply(t.osd, reply_to(&t, -11, b""));
    assert!(o.poll_completion().is_none());
    let again = drain(&mut o).remove(0);
    assert_eq!(again.msg.retry_attempt, 1);
}

#[test]
fn a_map_that_moves_the_pg_resends_to_the_new_primary() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    let t = drain(&mut o).remove(0);
    // The primary goes down in the next epoch.
    let mut next = (*m).clone();
    next.epoch += 1;
    next.osd_state[t.osd as usize] &= !msgr_osdmap::state::UP;
    o.handle_map(Arc::new(next.clone()));
    let moved = drain(&mut o).remove(0);
    assert_ne!(moved.osd, t.osd);
    assert_eq!(moved.msg.osdmap_epoch, next.epoch);
    assert_eq!(moved.msg.retry_attempt, 1);
    // A map that changes nothing for it sends nothing.
    next.epoch += 1;
    o.handle_map(Arc::new(next.clone()));
    assert!(drain(&mut o).is_empty());
    // Its pool deleted: ENOENT.
    next.epoch += 1;
    next.pools.remove(&1);
    o.handle_map(Arc::new(next));
    o.place_now();
    assert_eq!(o.poll_completion().expect("ended").result, Err(ENOENT));
}

#[test]
fn in_flight_limits_hold_what_does_not_fit() {
    let limits = Limits { ops: 2, bytes: 10 };
    let mut o = Objecter::new(map(), limits);
    let now = Instant::now();
    for name in ["a", "b", "c"] {
        o.submit(
            req(name, Ops::new().write(0, Bytes::from_static(b"xxxx"))),
            now,
        );
    }
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 2, "two ops at most");
    o.handle_reply(sent[0].osd, reply_to(&sent[0], 0, b""));
    let third = drain(&mut o);
    assert_eq!(third.len(), 1);
    assert_eq!(&third[0].msg.oid[..], b"c");
    // Bytes: a write larger than the whole budget goes alone.
    let mut o = Objecter::new(map(), limits);
    o.submit(
        req("big", Ops::new().write(0, Bytes::from_static(&[7; 64]))),
        now,
    );
    o.submit(
        req("small", Ops::new().write(0, Bytes::from_static(b"x"))),
        now,
    );
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1);
    o.handle_reply(sent[0].osd, reply_to(&sent[0], 0, b""));
    assert_eq!(drain(&mut o).len(), 1);
}

#[test]
fn a_backoff_holds_requests_until_it_is_lifted() {
    let mut o = Objecter::new(map(), Limits::default());
    let now = Instant::now();
    o.submit(req("a", Ops::new().read(0, 1)), now);
    let t = drain(&mut o).remove(0);
    let block = MOSDBackoff {
        pgid: t.msg.pgid,
        map_epoch: 43,
        op: backoff_op::BLOCK,
        id: 9,
        begin: HObject::pg_start(1, t.msg.pgid.pgid.seed),
        end: HObject::max(),
    };
    let ack = o
        .handle_backoff(t.osd, block.clone())
        .expect("acknowledged");
    assert_eq!(
        (ack.op, ack.id, ack.map_epoch),
        (backoff_op::ACK_BLOCK, 9, 43)
    );
    // The in-flight one was dropped by the OSD: a reset would resend it,
    // but the block holds; so does a new request to the same PG.
    o.submit(req("a", Ops::new().stat()), now);
    assert!(drain(&mut o).is_empty(), "held by the block");
    let unblock = MOSDBackoff {
        op: backoff_op::UNBLOCK,
        ..block
    };
    assert!(o.handle_backoff(t.osd, unblock).is_none());
    assert_eq!(drain(&mut o).len(), 2, "both go when it lifts");
}

#[test]
fn requests_time_out() {
    let mut o = Objecter::new(map(), Limits::default());
    let now = Instant::now();
    let mut r = req("a", Ops::new().read(0, 1));
    r.timeout = Some(Duration::from_secs(5));
    let tid = o.submit(r, now);
    assert_eq!(o.next_deadline(), Some(now + Duration::from_secs(5)));
    o.handle_timeout(now + Duration::from_secs(4));
    assert!(o.poll_completion().is_none());
    o.handle_timeout(now + Duration::from_secs(5));
    let c = o.poll_completion().expect("timed out");
    assert_eq!((c.tid, c.result), (tid, Err(ETIMEDOUT)));
}

#[test]
fn a_reply_whose_lengths_overrun_its_data_is_eio() {
    let mut o = Objecter::new(map(), Limits::default());
    o.submit(req("a", Ops::new().read(0, 4)), Instant::now());
    let t = drain(&mut o).remove(0);
    let mut r = reply_to(&t, 0, b"ab");
    r.ops = vec![OsdOp {
        payload_len: 99,
        ..r.ops[0]
    }];
    o.handle_reply(t.osd, r);
    assert_eq!(o.poll_completion().expect("ended").result, Err(-5));
}

#[test]
fn what_an_osd_can_make_us_hold_in_blocks_is_bounded() {
    let mut o = Objecter::new(map(), Limits::default());
    let block = |id: u64| MOSDBackoff {
        pgid: Default::default(),
        map_epoch: 43,
        op: backoff_op::BLOCK,
        id,
        begin: HObject::default(),
        end: HObject::max(),
    };
    for id in 0..(MAX_BACKOFFS_PER_OSD as u64 + 50) {
        assert!(
            o.handle_backoff(1, block(id)).is_some(),
            "each is acknowledged"
        );
        assert!(
            o.handle_backoff(1, block(id)).is_some(),
            "again, replacing itself"
        );
    }
    assert_eq!(o.backoffs.len(), MAX_BACKOFFS_PER_OSD);
    // The newest are kept.
    assert_eq!(
        o.backoffs.last().map(|b| b.block.id),
        Some(MAX_BACKOFFS_PER_OSD as u64 + 49)
    );
}

/// The map with `f` applied, one epoch on.
fn next_map(m: &OsdMap, f: impl FnOnce(&mut OsdMap)) -> Arc<OsdMap> {
    let mut next = m.clone();
    next.epoch += 1;
    f(&mut next);
    Arc::new(next)
}

#[test]
fn paused_requests_wait_for_a_map_that_lifts_the_pause() {
    use msgr_osdmap::flag::{PAUSERD, PAUSEWR};
    let m = next_map(&map(), |m| m.flags |= PAUSEWR);
    let mut o = Objecter::new(m.clone(), Limits::default());
    let now = Instant::now();
    let w = o.submit(
        req("w", Ops::new().write_full(Bytes::from_static(b"x"))),
        now,
    );
    o.submit(req("r", Ops::new().read(0, 1)), now);
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1, "the read goes, the write waits");
    assert_eq!(sent[0].msg.flags & flag::READ, flag::READ);
    // Reads paused too; a reset sends nothing paused.
    let m = next_map(&m, |m| m.flags |= PAUSERD);
    o.handle_map(m.clone());
    o.handle_reset(sent[0].osd);
    assert!(drain(&mut o).is_empty());
    // Writes lifted: the write goes, once, its first send.
    let m = next_map(&m, |m| m.flags &= !PAUSEWR);
    o.handle_map(m.clone());
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].msg.tid, sent[0].msg.retry_attempt), (w, 0));
    // Reads lifted: the read goes again.
    o.handle_map(next_map(&m, |m| m.flags &= !PAUSERD));
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].msg.flags & flag::READ, flag::READ);
}

/// A paused write whose caller went away is never sent: lifting the pause
/// sends nothing (a new user saw a dropped write land after `ceph osd
/// unpause`).
#[test]
fn a_cancelled_paused_write_never_goes() {
    use msgr_osdmap::flag::PAUSEWR;
    let m = next_map(&map(), |m| m.flags |= PAUSEWR);
    let mut o = Objecter::new(m.clone(), Limits::default());
    let w = o.submit(
        req("w", Ops::new().write_full(Bytes::from_static(b"x"))),
        Instant::now(),
    );
    assert!(drain(&mut o).is_empty());
    assert!(o.cancel(w));
    assert!(!o.cancel(w), "once");
    assert_eq!(o.pending(), 0);
    o.handle_map(next_map(&m, |m| m.flags &= !PAUSEWR));
    assert!(drain(&mut o).is_empty());
    assert!(o.poll_completion().is_none());
}

/// A cancelled request frees its budget for the next one; a reply to it
/// arriving late is dropped; a throttled one is cancelled too.
#[test]
fn cancelling_frees_the_budget_and_drops_a_late_reply() {
    let mut o = Objecter::new(map(), Limits { ops: 1, bytes: 100 });
    let now = Instant::now();
    let a = o.submit(req("a", Ops::new().read(0, 1)), now);
    let b = o.submit(req("b", Ops::new().read(0, 1)), now);
    let c = o.submit(req("c", Ops::new().read(0, 1)), now);
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1);
    assert!(o.cancel(c), "throttled");
    assert!(o.cancel(a), "in flight");
    let next = drain(&mut o);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].msg.tid, b);
    o.handle_reply(sent[0].osd, reply_to(&sent[0], 0, b"x"));
    assert!(o.poll_completion().is_none(), "the late reply is dropped");
    o.handle_reply(next[0].osd, reply_to(&next[0], 0, b"y"));
    assert_eq!(o.poll_completion().map(|c| c.tid), Some(b));
    assert_eq!(o.pending(), 0);
}

/// A request's snapshot, snap context and extra flags go into its MOSDOp.
#[test]
fn snapshots_and_flags_go_on_the_wire() {
    let mut o = Objecter::new(map(), Limits::default());
    let mut r = req("a", Ops::new().read(0, 1));
    r.snapid = 4;
    r.snapc = SnapContext {
        seq: 9,
        snaps: vec![9, 4],
    };
    r.flags = 0x10_0000;
    o.submit(r, Instant::now());
    let t = drain(&mut o).remove(0);
    assert_eq!((t.msg.snapid, t.msg.snap_seq), (4, 9));
    assert_eq!(t.msg.snaps, vec![9, 4]);
    assert_eq!(t.msg.flags & 0x10_0000, 0x10_0000);
    assert_eq!(t.msg.flags & flag::READ, flag::READ);
}

#[test]
fn a_full_pool_or_cluster_holds_writes_only() {
    use msgr_osdmap::pool::flag::FULL as POOL_FULL;
    for full in [
        |m: &mut OsdMap| m.pools.get_mut(&1).unwrap().flags |= POOL_FULL,
        |m: &mut OsdMap| m.flags |= msgr_osdmap::flag::FULL,
    ] {
        let m = next_map(&map(), full);
        let mut o = Objecter::new(m.clone(), Limits::default());
        let now = Instant::now();
        o.submit(req("w", Ops::new().append(Bytes::from_static(b"x"))), now);
        o.submit(req("s", Ops::new().stat()), now);
        o.submit(req("rm", Ops::new().remove()), now);
        let sent = drain(&mut o);
        assert_eq!(sent.len(), 2, "the stat and the remove go");
        assert_eq!(sent[1].msg.flags & flag::FULL_FORCE, flag::FULL_FORCE);
        let lifted = next_map(&m, |m| {
            m.flags &= !msgr_osdmap::flag::FULL;
            m.pools.get_mut(&1).unwrap().flags &= !POOL_FULL;
        });
        o.handle_map(lifted);
        let sent = drain(&mut o);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].msg.flags & flag::WRITE, flag::WRITE);
    }
}

/// Pool 1 with pool 2 as its cache tier for reads and writes.
fn tiered() -> Arc<OsdMap> {
    next_map(&map(), |m| {
        let base = m.pools.get_mut(&1).unwrap();
        base.read_tier = 2;
        base.write_tier = 2;
    })
}

#[test]
fn a_tier_overlay_sends_object_ops_to_the_cache_pool() {
    let m = tiered();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let now = Instant::now();
    o.submit(req("a", Ops::new().read(0, 1)), now);
    o.submit(
        req("b", Ops::new().write_full(Bytes::from_static(b"x"))),
        now,
    );
    let mut listing = req("", Ops::new().stat());
    listing.object.pg = Some(0);
    o.submit(listing, now);
    let sent = drain(&mut o);
    let place = m.place(2, b"a", b"").expect("placed");
    assert_eq!(sent[0].msg.pgid.pgid, place.pg);
    assert_eq!(sent[0].msg.oloc.pool, 2);
    assert_eq!(sent[1].msg.oloc.pool, 2);
    assert_eq!(sent[2].msg.oloc.pool, 1, "PG ops ignore the overlay");
    assert_eq!(sent[2].msg.pgid.pgid.pool, 1);
}

#[test]
fn a_redirect_sends_the_request_where_the_osd_says() {
    let m = tiered();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let tid = o.submit(req("a", Ops::new().read(0, 3)), Instant::now());
    let first = drain(&mut o).remove(0);
    assert_eq!(first.msg.oloc.pool, 2);
    // The cache tier forwards the read to the base pool.
    let mut r = reply_to(&first, 0, b"");
    r.redirect = Some(msgr_messages::RequestRedirect {
        locator: ObjectLocator {
            pool: 1,
            ..ObjectLocator::default()
        },
        object: Bytes::new(),
    });
    o.handle_reply(first.osd, r);
    assert!(o.poll_completion().is_none());
    let second = drain(&mut o).remove(0);
    let place = m.place(1, b"a", b"").expect("placed");
    assert_eq!(
        (second.osd, second.msg.pgid.pgid),
        (place.osds.acting_primary, place.pg)
    );
    assert_eq!(second.msg.oloc.pool, 1);
    assert_eq!(&second.msg.oid[..], b"a");
    let redirected = flag::REDIRECTED | flag::IGNORE_CACHE | flag::IGNORE_OVERLAY;
    assert_eq!(second.msg.flags & redirected, redirected);
    assert_eq!(second.msg.retry_attempt, 1);
    // A new map does not send it back to the tier.
    o.handle_map(next_map(&m, |_| {}));
    assert!(drain(&mut o).is_empty());
    o.handle_reply(second.osd, reply_to(&second, 0, b"abc"));
    let c = o.poll_completion().expect("completed");
    assert_eq!(c.tid, tid);
    assert_eq!(&c.result.unwrap().ops[0].outdata[..], b"abc");
}

/// Placement (CRUSH) runs where the driver runs a batch, never inside the
/// objecter's own calls: submitting, a new map, a reset and a reply that
/// asks for a resend only queue it.
#[test]
fn placement_is_left_to_the_driver() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let tid = o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    assert!(o.poll_transmit().is_none(), "nothing placed yet");
    assert!(o.placements_waiting());
    let batch = o.take_placements().expect("one to place");
    assert_eq!(batch.len(), 1);
    assert!(o.take_placements().is_none(), "one batch out at a time");
    o.finish_placements(batch.run());
    let t = o.poll_transmit().expect("sent once placed");
    assert_eq!(t.msg.tid, tid);
    // EAGAIN from the OSD (what a dispatcher hands over): queued only.
    o.handle_reply(t.osd, reply_to(&t, -11, b""));
    assert!(o.poll_transmit().is_none());
    assert!(o.placements_waiting());
    assert_eq!(drain(&mut o).len(), 1);
    // A new map, and a reset: queued only.
    o.handle_map(next_map(&m, |_| {}));
    o.handle_reset(t.osd);
    assert!(o.poll_transmit().is_none());
    assert_eq!(drain(&mut o).len(), 1, "the reset sends it again");
}

/// A batch computed against a map that was replaced meanwhile is not
/// used: its requests are placed again in the new map.
#[test]
fn placements_of_a_replaced_map_are_done_again() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    let t = drain(&mut o).pop().expect("sent");
    // The primary goes down; a batch is taken, and before it comes back
    // the map moves on again (the primary still down).
    let down = next_map(&m, |m| {
        if let Some(s) = m.osd_state.get_mut(t.osd as usize) {
            *s &= !msgr_osdmap::state::UP;
        }
    });
    o.handle_map(down.clone());
    let stale = o.take_placements().expect("to place").run();
    let newer = next_map(&down, |_| {});
    o.handle_map(newer.clone());
    o.finish_placements(stale);
    assert!(o.poll_transmit().is_none(), "nothing sent from the old map");
    let sent = drain(&mut o);
    assert_eq!(sent.len(), 1);
    let moved = sent.first().expect("sent");
    assert_ne!(moved.osd, t.osd);
    assert_eq!(moved.msg.osdmap_epoch, newer.epoch);
}

/// A class call is a read-mode op: sent alone it is a read (`rados_exec`),
/// without a time; marked a write (an `ObjectWriteOperation`'s exec) it
/// goes as librados's writes go: the WRITE flag, its mtime and snap
/// context, and held while the map says PAUSEWR.
#[test]
fn a_class_call_marked_a_write_goes_as_a_write() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let call = || Ops::new().call("lock", "lock", b"in").expect("call");
    o.submit(req("a", call()), Instant::now());
    let read = drain(&mut o).remove(0);
    assert_eq!(read.msg.flags, 0x0040_0014);
    assert_eq!(read.msg.mtime, UTime::default());
    assert_eq!(read.msg.ops[0].op, crate::cls::CALL);
    assert_eq!(&read.msg.data[..], b"locklockin");
    let snapc = SnapContext {
        seq: 5,
        snaps: vec![5, 3],
    };
    let write = Request {
        flags: flag::WRITE,
        snapc: snapc.clone(),
        ..req("a", call())
    };
    o.submit(write.clone(), Instant::now());
    let sent = drain(&mut o).remove(0);
    assert_eq!(sent.msg.flags, 0x0040_0024);
    assert_eq!(sent.msg.mtime, UTime::new(1, 2));
    assert_eq!((sent.msg.snap_seq, sent.msg.snaps.clone()), (5, vec![5, 3]));
    // Under PAUSEWR the write waits; a read call still goes.
    let mut paused = (*m).clone();
    paused.epoch += 1;
    paused.flags |= msgr_osdmap::flag::PAUSEWR;
    let mut o = Objecter::new(Arc::new(paused), Limits::default());
    o.submit(write, Instant::now());
    assert!(drain(&mut o).is_empty(), "a write waits out PAUSEWR");
    o.submit(req("a", call()), Instant::now());
    assert_eq!(drain(&mut o).len(), 1, "a read call goes");
}

/// An object name whose PG in `m` is not `a`'s.
fn elsewhere(m: &OsdMap) -> &'static str {
    let pg = |n: &str| m.place(1, n.as_bytes(), b"").expect("placed").pg;
    ["b", "c", "d", "e", "f", "g", "h"]
        .into_iter()
        .find(|n| pg(n) != pg("a"))
        .expect("another PG")
}

/// A request to a PG already mapped in the current map goes at once, with
/// no placement round (no CRUSH); one to a PG not mapped yet is left to
/// the driver, and a later request never overtakes it.
#[test]
fn a_request_to_a_mapped_pg_goes_at_once_but_never_before_older_ones() {
    let m = map();
    let mut o = Objecter::new(m.clone(), Limits::default());
    let first = o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    assert!(o.poll_transmit().is_none(), "its PG not mapped yet");
    let t = drain(&mut o).pop().expect("sent");
    assert_eq!(t.msg.tid, first);
    // The same PG again: sent from submit, to the same OSD and PG.
    let again = o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    assert!(!o.placements_waiting());
    let fast = o.poll_transmit().expect("sent at once");
    assert_eq!((fast.msg.tid, fast.osd), (again, t.osd));
    assert_eq!((fast.msg.pgid, fast.msg.hash), (t.msg.pgid, t.msg.hash));
    // Another PG waits for the driver; "a" behind it waits too.
    let other = o.submit(req(elsewhere(&m), Ops::new().read(0, 1)), Instant::now());
    let behind = o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    assert!(
        o.poll_transmit().is_none(),
        "nothing overtakes the unplaced"
    );
    let tids: Vec<u64> = drain(&mut o).iter().map(|t| t.msg.tid).collect();
    assert_eq!(tids, [other, behind]);
    // A new map, with nothing in flight to place in it: what was mapped
    // in the old one is not used.
    for tid in [first, again, other, behind] {
        o.cancel(tid);
    }
    let down = next_map(&m, |m| {
        if let Some(s) = m.osd_state.get_mut(t.osd as usize) {
            *s &= !msgr_osdmap::state::UP;
        }
    });
    o.handle_map(down.clone());
    let moved = o.submit(req("a", Ops::new().read(0, 1)), Instant::now());
    assert!(o.poll_transmit().is_none(), "the old map's mapping unused");
    let sent = drain(&mut o).pop().expect("sent");
    assert_eq!(sent.msg.tid, moved);
    assert_ne!(sent.osd, t.osd, "placed in the new map");
    assert_eq!(sent.msg.osdmap_epoch, down.epoch);
}
