//! mgr commands over the in-memory network, against a fake monitor that
//! hands out the MgrMap the test sets and fake mgrs: a command waits for
//! an active mgr, goes again to the new one when the active mgr fails
//! over while it is out, and goes as MgrClient sends it (MMgrCommand, or
//! MCommand for a tell and for a mgr without SERVER_OCTOPUS).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_encoding::{EntityAddrvec, EntityName, EntityType, Uuid};
use msgr_messages::mgr::{MgrMap, FEATUREMASK_SERVER_OCTOPUS};
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_rados::Rados;
use msgr_transport::memory::MemoryNet;
use support::memory::{server, Cluster, FakeMon, FSID};

/// A mgr: records what it gets (type, fsid, command); answers unless
/// mute, with its name as the output.
struct FakeMgr {
    name: &'static str,
    mute: bool,
    got: Arc<Mutex<Vec<(u16, Uuid, Vec<String>)>>>,
}

impl Dispatcher for FakeMgr {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        let reply = match m.msg_type {
            MSG_MGR_COMMAND => {
                let c = MMgrCommand::from_message(&m).expect("an MMgrCommand");
                self.got.lock().unwrap().push((m.msg_type, c.fsid, c.cmd));
                MMgrCommandReply {
                    tid: c.tid,
                    r: 0,
                    rs: String::new(),
                    output: Bytes::from(self.name),
                }
                .to_message(0)
            }
            msgr_messages::simple::MSG_COMMAND => {
                let c = MCommand::from_message(&m).expect("an MCommand");
                self.got.lock().unwrap().push((m.msg_type, c.fsid, c.cmd));
                MCommandReply {
                    tid: c.tid,
                    r: -22,
                    rs: format!("told {}", self.name),
                    output: Bytes::new(),
                }
                .to_message(0)
            }
            _ => return,
        };
        if !self.mute {
            conn.send_nowait(reply);
        }
    }
}

type Log = Arc<Mutex<Vec<(u16, Uuid, Vec<String>)>>>;

struct Setup {
    cluster: Cluster,
    mon: Arc<FakeMon>,
    mgrs: Vec<Messenger<MemoryNet>>,
    /// Mgr `a` (mute) and `b` (answering): where, and what each got.
    a: (EntityAddrvec, Log),
    b: (EntityAddrvec, Log),
}

/// An OSD that answers nothing (these tests talk to mgrs).
struct NoOsd;

impl Dispatcher for NoOsd {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
}

async fn start() -> Setup {
    let net = MemoryNet::new();
    let mgr = |name: &'static str, at: &str, nonce: u32, mute: bool| {
        let got: Log = Default::default();
        let m = Messenger::new(
            net.clone(),
            server(EntityName::new(EntityType::MGR, i64::from(nonce)), nonce),
            Arc::new(FakeMgr {
                name,
                mute,
                got: got.clone(),
            }),
        );
        let at: EntityAddrvec = at.parse().unwrap();
        (m, at, got)
    };
    let (ma, a_at, a_got) = mgr("a", "v2:10.0.0.9:6800/11", 11, true);
    let (mb, b_at, b_got) = mgr("b", "v2:10.0.0.9:6810/12", 12, false);
    ma.bind(&a_at).await.unwrap();
    mb.bind(&b_at).await.unwrap();
    let cluster = Cluster::start_on(net, Arc::new(NoOsd)).await;
    Setup {
        mon: cluster.fake_mon.clone(),
        cluster,
        mgrs: vec![ma, mb],
        a: (a_at, a_got),
        b: (b_at, b_got),
    }
}

impl Setup {
    fn rados(&self) -> &Rados<MemoryNet> {
        &self.cluster.rados
    }

    async fn shutdown(self) {
        self.cluster.shutdown().await;
        for s in self.mgrs {
            s.shutdown().await;
        }
    }
}

fn mgrmap(epoch: u32, name: &str, addrs: &EntityAddrvec, available: bool) -> MgrMap {
    MgrMap {
        struct_v: 9,
        epoch,
        active_addrs: addrs.clone(),
        active_gid: 4000 + u64::from(epoch),
        available,
        active_name: name.to_string(),
        active_mgr_features: FEATUREMASK_SERVER_OCTOPUS,
        ..Default::default()
    }
}

const CMD: &str = r#"{"prefix": "balancer status"}"#;

/// Out to a mgr that does not answer, the command goes again to the mgr
/// the next MgrMap makes active, which answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_follows_a_failover() {
    let s = start().await;
    s.mon.publish(mgrmap(1, "a", &s.a.0, true));
    let s = Arc::new(s);
    let s2 = s.clone();
    let pending = tokio::spawn(async move { s2.rados().mgr_command(CMD, Bytes::new()).await });
    // Mgr a has it, and stays mute.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.a.1.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "mgr a got nothing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!pending.is_finished());
    s.mon.publish(mgrmap(2, "b", &s.b.0, true));
    let r = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("answered after the failover")
        .unwrap()
        .expect("a reply");
    assert_eq!((r.r, &r.output[..]), (0, &b"b"[..]));
    let a = s.a.1.lock().unwrap().clone();
    let b = s.b.1.lock().unwrap().clone();
    // MMgrCommand, fsid zero, the command as given; once to each.
    assert_eq!(
        a,
        [(MSG_MGR_COMMAND, Uuid::default(), vec![CMD.to_string()])]
    );
    assert_eq!(b, a);
    Arc::try_unwrap(s).ok().expect("one owner").shutdown().await;
}

/// Without an active, available mgr a command waits; until the timeout
/// (then ETIMEDOUT), or until one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_waits_for_an_active_mgr() {
    let s = start().await;
    s.mon.publish(mgrmap(1, "b", &s.b.0, false));
    let e = s
        .rados()
        .mgr_command_within(None, CMD, Bytes::new(), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(-110), "{e}");
    assert!(e.to_string().contains("no active mgr"), "{e}");
    assert!(s.b.1.lock().unwrap().is_empty());
    let mon = s.mon.clone();
    let b = s.b.0.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        mon.publish(mgrmap(2, "b", &b, true));
    });
    let r = s
        .rados()
        .mgr_command_within(None, CMD, Bytes::new(), Duration::from_secs(10))
        .await
        .expect("answered once b is available");
    assert_eq!(&r.output[..], b"b");
    s.shutdown().await;
}

/// A tell goes as MCommand with the cluster's fsid, to the active mgr
/// only (ENXIO for another); a mgr without SERVER_OCTOPUS gets MCommand
/// with a zero fsid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tells_and_older_mgrs_get_mcommand() {
    let s = start().await;
    s.mon.publish(mgrmap(1, "b", &s.b.0, true));
    let r = s
        .rados()
        .mgr_command_target("b", r#"{"prefix": "version"}"#, Bytes::new())
        .await
        .expect("a reply");
    assert_eq!((r.r, r.rs.as_str()), (-22, "told b"));
    let e = s
        .rados()
        .mgr_command_target("a", r#"{"prefix": "version"}"#, Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(-6), "{e}");
    let mut older = mgrmap(2, "b", &s.b.0, true);
    older.active_mgr_features = 0;
    s.mon.publish(older);
    s.rados()
        .mon()
        .wait_mgrmap(|m| m.epoch == 2, Duration::from_secs(10))
        .await
        .expect("map 2");
    let r = s
        .rados()
        .mgr_command(CMD, Bytes::new())
        .await
        .expect("reply");
    assert_eq!(r.rs, "told b");
    let got = s.b.1.lock().unwrap().clone();
    assert_eq!(
        got.iter().map(|(t, f, _)| (*t, *f)).collect::<Vec<_>>(),
        [
            (msgr_messages::simple::MSG_COMMAND, FSID),
            (msgr_messages::simple::MSG_COMMAND, Uuid::default())
        ]
    );
    s.shutdown().await;
}
