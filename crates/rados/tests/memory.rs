//! The RADOS client over the in-memory network: a fake monitor hands out
//! Ceph 16's OSD map at epoch 43 (pool 1 "test", replicated on osd.0-2),
//! and the OSDs are fake too, listening where that map says they are and
//! keeping objects in memory. The network's fault hooks break the
//! primary's connection under a request, which must go again.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{AuthName, EntityAddrvec, EntityName, EntityType, Uuid};
use msgr_messages::osd_types::op as code;
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_monc::identity::Identity;
use msgr_osdmap::OsdMap;
use msgr_protocol::{PolicyName, PolicySet};
use msgr_rados::{Limits, Rados};
use msgr_transport::memory::MemoryNet;

fn full_map() -> Bytes {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/osdmaps/pacific/full-43.bin"
    );
    Bytes::from(std::fs::read(path).expect("testdata"))
}

/// A monitor: the monmap, and the OSD map to whoever subscribes to it.
struct FakeMon;

impl Dispatcher for FakeMon {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        let f = conn.features();
        match m.msg_type {
            MSG_MON_GET_MAP => {
                let mut out = Vec::new();
                MonMap {
                    epoch: 1,
                    ..MonMap::default()
                }
                .encode(&mut out);
                let mm = MMonMap {
                    monmap: Bytes::from(out),
                };
                conn.send_nowait(mm.to_message(f));
            }
            MSG_MON_SUBSCRIBE => {
                let sub = MMonSubscribe::from_message(&m).expect("an MMonSubscribe");
                if sub.what.contains_key("osdmap") {
                    let om = MOSDMap {
                        fsid: Uuid::default(),
                        incremental_maps: BTreeMap::new(),
                        maps: BTreeMap::from([(43, full_map())]),
                        oldest_map: 1,
                        newest_map: 43,
                    };
                    conn.send_nowait(om.to_message(f));
                }
            }
            _ => {}
        }
    }
}

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

fn server(name: EntityName, nonce: u32) -> Options {
    let mut o = Options::new(
        name,
        PolicySet::new(PolicyName::StatelessServer.policy()),
        Arc::new(NoneProvider),
    );
    o.nonce = nonce;
    o
}

/// The fake cluster and a client of it.
struct Cluster {
    net: MemoryNet,
    map: OsdMap,
    store: Arc<Store>,
    rados: Rados<MemoryNet>,
    mon: Messenger<MemoryNet>,
    osds: Vec<Messenger<MemoryNet>>,
}

impl Cluster {
    async fn start() -> Cluster {
        let net = MemoryNet::new();
        let mon_at: EntityAddrvec = "v2:10.0.0.1:3300/0".parse().expect("addr");
        let mon = Messenger::new(
            net.clone(),
            server(EntityName::new(EntityType::MON, 0), 0),
            Arc::new(FakeMon),
        );
        mon.bind(&mon_at).await.expect("bind the monitor");
        let map = OsdMap::decode(&full_map()).expect("the map");
        let store = Arc::new(Store::default());
        let mut osds = Vec::new();
        for id in 0..3 {
            let at = map.osd_addrs(id).expect("an up OSD").clone();
            let nonce = at.0.first().map_or(0, |a| a.nonce);
            let osd = Messenger::new(
                net.clone(),
                server(EntityName::new(EntityType::OSD, i64::from(id)), nonce),
                Arc::new(FakeOsd(store.clone())),
            );
            osd.bind(&at).await.expect("bind an OSD");
            osds.push(osd);
        }

        let config =
            msgr_config::Config::from_text(AuthName::client_admin(), "", Default::default())
                .expect("a config");
        let id = Identity {
            config,
            none_fallback: false,
            mons: vec![mon_at],
            cephx: None,
            rev1: true,
            msgr2: true,
            sign_messages: false,
            cephx_require_version: 2,
            mount_timeout: msgr_monc::identity::DEFAULT_MOUNT_TIMEOUT,
        };
        let rados = Rados::connect_over(net.clone(), &id, Limits::default())
            .await
            .expect("connected");
        Cluster {
            net,
            map,
            store,
            rados,
            mon,
            osds,
        }
    }

    async fn shutdown(self) {
        self.rados.shutdown().await;
        for osd in self.osds {
            osd.shutdown().await;
        }
        self.mon.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_written_and_read_over_the_memory_network_through_a_reset() {
    let Cluster {
        net,
        map,
        store,
        rados,
        mon,
        osds,
    } = Cluster::start().await;
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
        store,
        rados,
        mon,
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

    let c = Cluster::start().await;
    let io = c.rados.ioctx("test").expect("pool test");
    let data: Vec<u8> = (0..10u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut w = io.object(b"big").with_window(1 << 20, 3);
    let mut from = &data[..];
    tokio::io::copy(&mut from, &mut w).await.expect("copied in");
    w.shutdown().await.expect("every write acknowledged");
    assert_eq!(w.position(), data.len() as u64);
    let writes = c.store.ops.load(Ordering::SeqCst);
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
    let sent = c.store.ops.load(Ordering::SeqCst);
    let e = io.zero(b"big", 5, 0).await.expect_err("a zero of no bytes");
    assert_eq!(e.errno(), Some(-22), "{e}");
    assert_eq!(c.store.ops.load(Ordering::SeqCst), sent, "nothing sent");

    let mut none = io.object(b"missing");
    let e = none
        .read_to_end(&mut Vec::new())
        .await
        .expect_err("no such object");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    c.shutdown().await;
}
