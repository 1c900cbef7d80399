//! A fake cluster on the in-memory network: a monitor handing out Ceph
//! 16's OSD map at epoch 43 (pool 1 "test", replicated on osd.0-2) and the
//! MgrMap a test publishes, the three OSDs listening where that map says
//! they are (each answering with the test's dispatcher), and a client
//! connected to them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{AuthName, EntityAddrvec, EntityName, EntityType, Uuid};
use msgr_messages::mgr::MgrMap;
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_monc::identity::{Identity, DEFAULT_MOUNT_TIMEOUT};
use msgr_osdmap::OsdMap;
use msgr_protocol::{PolicyName, PolicySet};
use msgr_rados::{Limits, Rados};
use msgr_transport::memory::MemoryNet;

/// Ceph 16's full OSD map at epoch 43.
pub fn full_map() -> Bytes {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/osdmaps/pacific/full-43.bin"
    );
    Bytes::from(std::fs::read(path).expect("testdata"))
}

/// The cluster's fsid (the monmap's).
pub const FSID: Uuid = Uuid([9; 16]);

/// The monitor: a monmap, the OSD map, and the MgrMap of the moment to a
/// `mgrmap` subscriber (kept, to send it the next ones).
#[derive(Default)]
pub struct FakeMon {
    mgrmap: Mutex<Option<MgrMap>>,
    subscriber: Mutex<Option<Connection>>,
}

impl FakeMon {
    /// Makes `map` the MgrMap of the moment, sent to the subscriber.
    pub fn publish(&self, map: MgrMap) {
        *self.mgrmap.lock().unwrap() = Some(map.clone());
        if let Some(c) = self.subscriber.lock().unwrap().as_ref() {
            c.send_nowait(MMgrMap { map }.to_message(c.features()));
        }
    }
}

struct Mon(Arc<FakeMon>);

impl Dispatcher for Mon {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        let f = conn.features();
        match m.msg_type {
            MSG_MON_GET_MAP => {
                let mut out = Vec::new();
                MonMap {
                    epoch: 1,
                    fsid: FSID,
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
                if sub.what.contains_key("mgrmap") {
                    *self.0.subscriber.lock().unwrap() = Some(conn.clone());
                    if let Some(map) = self.0.mgrmap.lock().unwrap().clone() {
                        conn.send_nowait(MMgrMap { map }.to_message(f));
                    }
                }
            }
            _ => {}
        }
    }
}

/// A stateless server's options, named `name`, with auth none.
pub fn server(name: EntityName, nonce: u32) -> Options {
    let mut o = Options::new(
        name,
        PolicySet::new(PolicyName::StatelessServer.policy()),
        Arc::new(NoneProvider),
    );
    o.nonce = nonce;
    o
}

/// The fake cluster and a client of it.
pub struct Cluster {
    pub net: MemoryNet,
    pub map: OsdMap,
    pub rados: Rados<MemoryNet>,
    pub mon: Messenger<MemoryNet>,
    /// What the monitor hands out.
    pub fake_mon: Arc<FakeMon>,
    pub osds: Vec<Messenger<MemoryNet>>,
}

impl Cluster {
    /// The monitor, the OSDs answering with `osd` and a connected client.
    pub async fn start(osd: Arc<dyn Dispatcher>) -> Cluster {
        Cluster::start_on(MemoryNet::new(), osd).await
    }

    /// The same on `net` (where a test may have bound more servers).
    pub async fn start_on(net: MemoryNet, osd: Arc<dyn Dispatcher>) -> Cluster {
        let fake_mon = Arc::new(FakeMon::default());
        let mon_at: EntityAddrvec = "v2:10.0.0.1:3300/0".parse().expect("addr");
        let mon = Messenger::new(
            net.clone(),
            server(EntityName::new(EntityType::MON, 0), 0),
            Arc::new(Mon(fake_mon.clone())),
        );
        mon.bind(&mon_at).await.expect("bind the monitor");
        let map = OsdMap::decode(&full_map()).expect("the map");
        let mut osds = Vec::new();
        for id in 0..3 {
            let at = map.osd_addrs(id).expect("an up OSD").clone();
            let nonce = at.0.first().map_or(0, |a| a.nonce);
            let m = Messenger::new(
                net.clone(),
                server(EntityName::new(EntityType::OSD, i64::from(id)), nonce),
                osd.clone(),
            );
            m.bind(&at).await.expect("bind an OSD");
            osds.push(m);
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
            mount_timeout: DEFAULT_MOUNT_TIMEOUT,
            timeouts: Default::default(),
        };
        let rados = Rados::connect_over(net.clone(), &id, Limits::default())
            .await
            .expect("connected");
        assert_eq!(rados.osdmap().epoch, 43);
        Cluster {
            net,
            map,
            rados,
            mon,
            fake_mon,
            osds,
        }
    }

    pub async fn shutdown(self) {
        self.rados.shutdown().await;
        for osd in self.osds {
            osd.shutdown().await;
        }
        self.mon.shutdown().await;
    }
}
