//! Watches over the in-memory network against a scripted OSD (Ceph 16's
//! map at epoch 43, as in memory.rs): the registration, a RECONNECT with
//! the next gen when the primary's connection breaks, a notify pushed by
//! the OSD reaching the watch and its acknowledgement the OSD, and a
//! DISCONNECT making the watch lost.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_messages::watch_notify::event;
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage};
use msgr_rados::WatchEvent;
use support::memory::Cluster;

/// What the OSDs were sent: each WATCH's (watch op, gen), each
/// NOTIFY_ACK's input; and the connection the last WATCH came on.
#[derive(Default)]
struct Seen {
    watch_ops: Mutex<Vec<(u8, u32)>>,
    acks: Mutex<Vec<Bytes>>,
    conn: Mutex<Option<Connection>>,
}

struct FakeOsd(Arc<Seen>);

impl Dispatcher for FakeOsd {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        if m.msg_type != MSG_OSD_OP {
            return;
        }
        let op = MOSDOp::from_message(&m).expect("an MOSDOp");
        let first = op.ops.first().map(|o| (o.op, o.args));
        let data = op.data.clone();
        let mut reply = MOSDOpReply::answering(op, 0);
        match first {
            Some((0x220f, args)) => {
                let gen = u32::from_le_bytes(args[17..21].try_into().expect("4 bytes"));
                self.0.watch_ops.lock().expect("seen").push((args[16], gen));
                *self.0.conn.lock().expect("seen") = Some(conn.clone());
            }
            Some((0x1207, _)) => self.0.acks.lock().expect("seen").push(data),
            _ => reply.result = -95,
        }
        conn.send_nowait(reply.to_message(conn.features()));
    }
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_reconnects_after_a_reset_gets_notifies_and_learns_it_is_lost() {
    let seen = Arc::new(Seen::default());
    let c = Cluster::start(Arc::new(FakeOsd(seen.clone()))).await;
    let (net, map, rados) = (&c.net, &c.map, &c.rados);
    let io = rados.ioctx("test").expect("pool test");
    let mut w = io.watch(b"w").await.expect("watching");
    assert_eq!(
        *seen.watch_ops.lock().unwrap(),
        vec![(3, 0)],
        "WATCH, gen 0"
    );
    assert!(w.check().expect("confirmed") < Duration::from_secs(1));

    // The primary's connection breaks: the watch registers again.
    let primary = map.place(1, b"w", b"").expect("placed").osds.acting_primary;
    let at = map
        .osd_addrs(primary)
        .and_then(|a| a.msgr2())
        .expect("msgr2");
    assert!(net.break_connections(at.addr) > 0);
    until("a RECONNECT", || seen.watch_ops.lock().unwrap().len() == 2).await;
    assert_eq!(
        seen.watch_ops.lock().unwrap()[1],
        (5, 1),
        "RECONNECT, gen 1"
    );

    // A notify from the OSD reaches the watch; its ack reaches the OSD.
    let conn = seen.conn.lock().unwrap().clone().expect("a connection");
    let cookie = w.cookie();
    let notify = |opcode: u8, payload: &'static [u8]| MWatchNotify {
        opcode,
        cookie,
        ver: 0,
        notify_id: 77,
        payload: Bytes::from_static(payload),
        return_code: 0,
        notifier_gid: 4100,
        data: Bytes::new(),
    };
    conn.send_nowait(notify(event::NOTIFY, b"hi").to_message(conn.features()));
    let e = tokio::time::timeout(Duration::from_secs(10), w.next_event())
        .await
        .expect("in time");
    assert_eq!(
        e,
        Some(WatchEvent::Notify {
            notify_id: 77,
            cookie: w.cookie(),
            notifier_gid: 4100,
            payload: Bytes::from_static(b"hi")
        })
    );
    w.notify_ack(77, b"ok").await.expect("acked");
    let mut expected = 77u64.to_le_bytes().to_vec();
    expected.extend_from_slice(&w.cookie().to_le_bytes());
    expected.extend_from_slice(&[2, 0, 0, 0, b'o', b'k']);
    assert_eq!(*seen.acks.lock().unwrap(), vec![Bytes::from(expected)]);

    // DISCONNECT: the watch is lost, once.
    conn.send_nowait(notify(event::DISCONNECT, b"").to_message(conn.features()));
    let e = tokio::time::timeout(Duration::from_secs(10), w.next_event())
        .await
        .expect("in time");
    assert_eq!(e, Some(WatchEvent::Error { err: -107 }));
    assert!(w.check().is_err());
    w.unwatch().await.expect("unwatched");
    until("an UNWATCH", || {
        seen.watch_ops.lock().unwrap().last() == Some(&(0, 0))
    })
    .await;

    c.shutdown().await;
}
