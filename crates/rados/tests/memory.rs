//! The RADOS client over the in-memory network, against the fake cluster
//! of tests/support/memory.rs, its OSDs keeping objects in memory. The network's fault hooks break the
//! primary's connection under a request, which must go again.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_messages::osd_types::op as code;
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage};
use support::memory::Cluster;

/// The OSDs' shared store; mute, they take ops and answer none.
#[derive(Default)]
struct Store {
    objects: Mutex<HashMap<Bytes, Bytes>>,
    mute: AtomicBool,
    ops: AtomicUsize,
}

struct FakeOsd(Arc<Store>);

impl Dispatcher for FakeOsd {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        if m.msg_type != MSG_OSD_OP {
            return;
        }
        let op = MOSDOp::from_message(&m).expect("an MOSDOp");
        self.0.ops.fetch_add(1, Ordering::SeqCst);
        if self.0.mute.load(Ordering::SeqCst) {
            return;
        }
        let first = op.ops.first().map(|o| o.op);
        let (oid, data) = (op.oid.clone(), op.data.clone());
        let (offset, length) = op.ops.first().map_or((0, 0), |o| o.extent_range());
        let mut reply = MOSDOpReply::answering(op, 0);
        let mut objects = self.0.objects.lock().expect("store");
        let out = |reply: &mut MOSDOpReply, d: Bytes| {
            if let Some(o) = reply.ops.first_mut() {
                o.payload_len = u32::try_from(d.len()).expect("small");
            }
            reply.data = d;
        };
        match first {
            Some(code::WRITEFULL) => {
                objects.insert(oid, data);
            }
            // WRITE at an offset, growing the object with zeros.
            Some(code::WRITE) => {
                let o = objects.entry(oid).or_default();
                let mut v = o.to_vec();
                let end = offset as usize + data.len();
                if v.len() < end {
                    v.resize(end, 0);
                }
                v[offset as usize..end].copy_from_slice(&data);
                *o = Bytes::from(v);
            }
            // READ of an extent (length 0: to the end).
            Some(code::READ) => match objects.get(&oid) {
                Some(d) => {
                    let from = (offset as usize).min(d.len());
                    let to = match length {
                        0 => d.len(),
                        n => (from + n as usize).min(d.len()),
                    };
                    out(&mut reply, d.slice(from..to));
                }
                None => reply.result = -2,
            },
            Some(code::STAT) => match objects.get(&oid) {
                Some(d) => {
                    let mut o = (d.len() as u64).to_le_bytes().to_vec();
                    o.extend_from_slice(&[0; 8]);
                    out(&mut reply, Bytes::from(o));
                }
                None => reply.result = -2,
            },
            _ => reply.result = -95,
        }
        conn.send_nowait(reply.to_message(conn.features()));
    }
}

/// The fake cluster with OSDs keeping objects in `Store`.
async fn start() -> (Cluster, Arc<Store>) {
    let store = Arc::new(Store::default());
    let c = Cluster::start(Arc::new(FakeOsd(store.clone()))).await;
    (c, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_written_and_read_over_the_memory_network_through_a_reset() {
    let (c, store) = start().await;
    let Cluster {
        net,
        map,
        rados,
        mon,
        fake_mon,
        osds,
    } = c;
    assert_eq!(rados.osdmap().epoch, 43);
    let io = rados.ioctx("test").expect("pool test");
    io.write_full(b"a", Bytes::from_static(b"hello"))
        .await
        .expect("written");
    assert_eq!(
        io.read(b"a", 0, 100).await.expect("read"),
        Bytes::from_static(b"hello")
    );

    // The primary takes the next op and never answers; its connection
    // breaks, and the op goes again on a new one.
    store.mute.store(true, Ordering::SeqCst);
    let before = store.ops.load(Ordering::SeqCst);
    let pending = {
        let io = io.clone();
        tokio::spawn(async move { io.write_full(b"b", Bytes::from_static(b"again")).await })
    };
    for _ in 0..250 {
        if store.ops.load(Ordering::SeqCst) > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        store.ops.load(Ordering::SeqCst),
        before + 1,
        "the OSD took it"
    );
    store.mute.store(false, Ordering::SeqCst);
    let primary = map.place(1, b"b", b"").expect("placed").osds.acting_primary;
    let at = map
        .osd_addrs(primary)
        .and_then(|a| a.msgr2())
        .expect("msgr2");
    assert!(net.break_connections(at.addr) > 0);
    tokio::time::timeout(Duration::from_secs(20), pending)
        .await
        .expect("done within 20 s")
        .expect("joined")
        .expect("written after the reset");
    assert_eq!(
        store.ops.load(Ordering::SeqCst),
        before + 2,
        "sent once more"
    );
    assert_eq!(
        io.read(b"b", 0, 100).await.expect("read"),
        Bytes::from_static(b"again")
    );

    Cluster {
        net,
        map,
        rados,
        mon,
        fake_mon,
        osds,
    }
    .shutdown()
    .await;
}

/// An object as a file: 10 MiB copied in through AsyncWrite in 1 MiB
/// writes, 3 in flight, read back through AsyncRead with read-ahead,
/// seeks from the start, the current position and the end (a STAT), and a
/// missing object's read is NotFound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_handle_reads_writes_and_seeks() {
    use std::io::SeekFrom;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    let (c, store) = start().await;
    let io = c.rados.ioctx("test").expect("pool test");
    let data: Vec<u8> = (0..10u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut w = io.object(b"big").with_window(1 << 20, 3);
    let mut from = &data[..];
    tokio::io::copy(&mut from, &mut w).await.expect("copied in");
    w.shutdown().await.expect("every write acknowledged");
    assert_eq!(w.position(), data.len() as u64);
    let writes = store.ops.load(Ordering::SeqCst);
    assert!(writes >= 10, "1 MiB pieces: {writes} ops");

    let mut r = io.object(b"big").with_window(1 << 20, 3);
    let mut back = Vec::new();
    r.read_to_end(&mut back).await.expect("read back");
    assert!(back == data, "the same bytes ({} read)", back.len());

    let at = r.seek(SeekFrom::Start(5 << 20)).await.expect("seek");
    assert_eq!(at, 5 << 20);
    let mut some = [0u8; 100];
    r.read_exact(&mut some).await.expect("read at 5 MiB");
    assert_eq!(&some[..], &data[5 << 20..(5 << 20) + 100]);
    let at = r.seek(SeekFrom::Current(-50)).await.expect("seek back");
    assert_eq!(at, (5 << 20) + 50);
    let at = r.seek(SeekFrom::End(-10)).await.expect("seek from the end");
    assert_eq!(at, data.len() as u64 - 10);
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).await.expect("the tail");
    assert_eq!(&tail[..], &data[data.len() - 10..]);
    assert!(r
        .seek(SeekFrom::Current(-(data.len() as i64) - 1))
        .await
        .is_err());

    // Overwrite in the middle through the same handle, then read it.
    let mut rw = io.object(b"big");
    rw.seek(SeekFrom::Start(3)).await.expect("seek");
    rw.write_all(b"XYZ").await.expect("written");
    rw.seek(SeekFrom::Start(0)).await.expect("seek");
    let mut head = [0u8; 8];
    rw.read_exact(&mut head).await.expect("read");
    assert_eq!(
        &head[..],
        &[data[0], data[1], data[2], b'X', b'Y', b'Z', data[6], data[7]]
    );

    // A ZERO of no bytes (it aborts Ceph 16 OSDs) is refused unsent.
    let sent = store.ops.load(Ordering::SeqCst);
    let e = io.zero(b"big", 5, 0).await.expect_err("a zero of no bytes");
    assert_eq!(e.errno(), Some(-22), "{e}");
    assert_eq!(store.ops.load(Ordering::SeqCst), sent, "nothing sent");

    let mut none = io.object(b"missing");
    let e = none
        .read_to_end(&mut Vec::new())
        .await
        .expect_err("no such object");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    c.shutdown().await;
}
