//! Pool operations (crate::core::pool_op) under virtual time.

use std::time::Instant;

use msgr_messages::pool_op::{CREATE_SNAP, CREATE_UNMANAGED_SNAP};
use msgr_messages::TypedMessage;

use super::*;
use crate::core::PoolOpRequest;

fn reply(tid: u64, code: i32, epoch: u32, data: Option<Bytes>) -> msgr_protocol::Message {
    MPoolOpReply {
        tid,
        version: u64::from(epoch),
        fsid: Default::default(),
        reply_code: code,
        epoch,
        response_data: data,
    }
    .to_message(0)
}

fn pool_ops_sent(ts: &[crate::core::Transmit], to: ConnId) -> Vec<MPoolOp> {
    sent_to(ts, to)
        .into_iter()
        .filter_map(|m| match m {
            Outgoing::PoolOp(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn snap(name: &str) -> PoolOpRequest {
    PoolOpRequest {
        op: CREATE_SNAP,
        pool: 3,
        name: name.into(),
        snapid: 0,
        crush_rule: 0,
    }
}

/// Sent on the session; after a hunt, only the unanswered one goes
/// again on the new session, with its tid; replies of another tid, or
/// from the old session, complete nothing.
#[test]
fn pool_ops_go_again_after_a_hunt_and_only_their_tid_answers() {
    let t0 = Instant::now();
    let (mut core, first) = with_session(core(2), t0);
    deliver(&mut core, first, osd_map(10, blob("full", 10), 1), t0);
    let a = core.add_pool_op(snap("a"));
    let b = core.add_pool_op(snap("b"));
    let sent = pool_ops_sent(&drain(&mut core), first);
    assert_eq!(sent.iter().map(|m| m.tid).collect::<Vec<_>>(), vec![a, b]);
    assert_eq!(sent[0].version, 10);
    assert_eq!(sent[0].name, "a");
    assert_eq!(sent[0].pool, 3);
    core.handle_message(first, reply(b, 0, 10, None), t0);
    assert_eq!(core.take_pool_op_reply(b).map(|r| r.r), Some(0));
    assert!(core.take_pool_op_reply(b).is_none(), "taken once");

    core.handle_reset(first);
    core.handle_timeout(secs(t0, 1));
    let ts = drain(&mut core);
    let (second, _) = dialled(&ts)[0].clone();
    assert!(pool_ops_sent(&ts, second).is_empty(), "not before ready");
    core.handle_connect(second, secs(t0, 1));
    let again = pool_ops_sent(&drain(&mut core), second);
    assert_eq!(again.iter().map(|m| m.tid).collect::<Vec<_>>(), vec![a]);

    // The old session's reply, a tid of none of ours, tid 0: nothing.
    core.handle_message(first, reply(a, 0, 10, None), secs(t0, 1));
    core.handle_message(second, reply(0, 0, 10, None), secs(t0, 1));
    core.handle_message(second, reply(b + 100, 0, 10, None), secs(t0, 1));
    assert!(core.take_pool_op_reply(a).is_none());
    core.handle_message(second, reply(a, -17, 10, None), secs(t0, 1));
    assert_eq!(core.take_pool_op_reply(a).map(|r| r.r), Some(-17));
}

/// A success is done only once the map has the reply's epoch: a newer
/// epoch is asked for, and the data (a new snap id) comes with it.
#[test]
fn a_pool_op_waits_for_the_map_of_its_epoch() {
    let t0 = Instant::now();
    let (mut core, conn) = with_session(core(1), t0);
    deliver(&mut core, conn, osd_map(10, blob("full", 10), 1), t0);
    drain(&mut core);
    let tid = core.add_pool_op(PoolOpRequest {
        op: CREATE_UNMANAGED_SNAP,
        snapid: 0,
        name: String::new(),
        ..snap("")
    });
    drain(&mut core);
    let id = Bytes::copy_from_slice(&5u64.to_le_bytes());
    core.handle_message(conn, reply(tid, 0, 13, Some(id.clone())), t0);
    let subs = subscriptions(&drain(&mut core), conn);
    assert_eq!(subs[0].get("osdmap").map(|s| s.start), Some(11));
    assert!(core.take_pool_op_reply(tid).is_none(), "map 10 < 13");
    for e in 11..=12 {
        deliver(&mut core, conn, osd_map(e, blob("full", e), 1), t0);
        assert!(core.take_pool_op_reply(tid).is_none(), "map {e} < 13");
    }
    deliver(&mut core, conn, osd_map(13, blob("full", 13), 1), t0);
    let r = core.take_pool_op_reply(tid).expect("map 13 arrived");
    assert_eq!((r.r, r.epoch, r.data), (0, 13, id));
    // A forgotten op's late reply is ignored.
    let gone = core.add_pool_op(snap("x"));
    core.forget_pool_op(gone);
    core.handle_message(conn, reply(gone, 0, 13, None), t0);
    assert!(core.take_pool_op_reply(gone).is_none());
}
