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
        let mut reply = MOSDOpReply::answering(op, 0);
        let mut objects = self.0.objects.lock().expect("store");
        match first {
            Some(code::WRITEFULL) => {
                objects.insert(oid, data);
            }
            Some(code::READ) => match objects.get(&oid) {
                Some(d) => {
                    if let Some(o) = reply.ops.first_mut() {
                        o.payload_len = u32::try_from(d.len()).expect("small");
                    }
                    reply.data = d.clone();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_written_and_read_over_the_memory_network_through_a_reset() {
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

    let config = msgr_config::Config::from_text(AuthName::client_admin(), "", Default::default())
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

    rados.shutdown().await;
    for osd in osds {
        osd.shutdown().await;
    }
    mon.shutdown().await;
}
