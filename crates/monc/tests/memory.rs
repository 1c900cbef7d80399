//! The monitor client over the in-memory network, against two fake
//! monitors (messengers that answer MMonGetMap, MMonSubscribe,
//! MMonCommand and MMonGetVersion as a monitor does), with the network's
//! fault hooks: refused connects and connections broken under a command;
//! and over io_uring, against the same monitors on loopback TCP.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityName, EntityType, Uuid};
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_monc::{MonAuth, MonClient, MonClientConfig};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::memory::MemoryNet;
use msgr_transport::Transport;

const FSID: Uuid = Uuid([7; 16]);

/// A monitor that answers what a client asks; mute, it takes commands
/// and answers none.
struct FakeMon {
    mute: Arc<AtomicBool>,
    commands: Arc<AtomicUsize>,
}

impl Dispatcher for FakeMon {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let m = msg.into_message();
        let f = conn.features();
        let reply = match m.msg_type {
            MSG_MON_GET_MAP => {
                let map = MonMap {
                    fsid: FSID,
                    epoch: 1,
                    ..MonMap::default()
                };
                let mut out = Vec::new();
                map.encode(&mut out);
                MMonMap {
                    monmap: Bytes::from(out),
                }
                .to_message(f)
            }
            MSG_MON_SUBSCRIBE => MConfig {
                config: BTreeMap::from([("debug_ms".to_string(), "1".to_string())]),
            }
            .to_message(f),
            MSG_MON_COMMAND => {
                let c = MMonCommand::from_message(&m).expect("an MMonCommand");
                self.commands.fetch_add(1, Ordering::SeqCst);
                if self.mute.load(Ordering::SeqCst) {
                    return;
                }
                assert_eq!(c.fsid, FSID, "the command names the monmap's fsid");
                MMonCommandAck {
                    tid: c.tid,
                    r: 0,
                    rs: String::new(),
                    cmd: c.cmd.clone(),
                    output: Bytes::from(format!("done: {}", c.cmd.join(" "))),
                }
                .to_message(f)
            }
            MSG_MON_GET_VERSION => {
                let v = MMonGetVersion::from_message(&m).expect("an MMonGetVersion");
                MMonGetVersionReply {
                    handle: v.handle,
                    version: 42,
                    oldest_version: 3,
                }
                .to_message(f)
            }
            _ => return,
        };
        conn.send_nowait(reply);
    }
}

struct Mons<T: Transport> {
    net: T,
    addrs: Vec<EntityAddrvec>,
    servers: Vec<Messenger<T>>,
    mute: Arc<AtomicBool>,
    commands: Arc<AtomicUsize>,
}

/// `n` monitors over `net`, at `ip` N (each its own IP on the memory
/// network, port 0 on loopback).
async fn mons<T: Transport>(net: T, n: u8, at: impl Fn(u8) -> String) -> Mons<T> {
    let mute = Arc::new(AtomicBool::new(false));
    let commands = Arc::new(AtomicUsize::new(0));
    let mut addrs = Vec::new();
    let mut servers = Vec::new();
    for i in 1..=n {
        let mut o = Options::new(
            EntityName::new(EntityType::MON, i64::from(i)),
            PolicySet::new(PolicyName::StatelessServer.policy()),
            Arc::new(NoneProvider),
        );
        o.nonce = 0;
        let dispatch = FakeMon {
            mute: mute.clone(),
            commands: commands.clone(),
        };
        let m = Messenger::new(net.clone(), o, Arc::new(dispatch));
        let want: EntityAddrvec = at(i).parse().expect("addr");
        addrs.push(m.bind(&want).await.expect("bind"));
        servers.push(m);
    }
    Mons {
        net,
        addrs,
        servers,
        mute,
        commands,
    }
}

fn on_memory(i: u8) -> String {
    format!("v2:10.0.0.{i}:3300/0")
}

impl<T: Transport> Mons<T> {
    async fn shutdown(self) {
        for s in self.servers {
            s.shutdown().await;
        }
    }
}

const T: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_the_memory_network_answers_commands_and_versions() {
    let mons = mons(MemoryNet::new(), 2, on_memory).await;
    // The first connects are refused: the hunt goes on until one takes.
    mons.net.refuse_next(2);
    let cfg = MonClientConfig::new(mons.addrs.clone(), MonAuth::None);
    let mc = MonClient::connect_over(mons.net.clone(), cfg)
        .await
        .expect("a session");
    assert_eq!(mc.monmap().fsid, FSID);
    assert!(mc.session().is_some());
    let r = mc
        .command("{\"prefix\": \"status\"}", Bytes::new(), T)
        .await
        .expect("a reply");
    assert_eq!(
        (r.r, r.output),
        (0, Bytes::from("done: {\"prefix\": \"status\"}"))
    );
    assert_eq!(mc.get_version("osdmap", T).await, Ok((42, 3)));
    // The MConfig of the subscription arrives after the session is ready.
    for _ in 0..100 {
        if !mc.mon_config().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        mc.mon_config().get("debug_ms").map(String::as_str),
        Some("1")
    );
    mc.shutdown().await;
    mons.shutdown().await;
}

/// A command the session's monitor took and never answered goes again on
/// the session found after the connection broke, with its tid, and the
/// new monitor's ack completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_outlives_a_broken_session() {
    let mons = mons(MemoryNet::new(), 2, on_memory).await;
    let cfg = MonClientConfig::new(mons.addrs.clone(), MonAuth::None);
    let mc = Arc::new(
        MonClient::connect_over(mons.net.clone(), cfg)
            .await
            .expect("a session"),
    );
    let first = mc.session().expect("a session");
    mons.mute.store(true, Ordering::SeqCst);
    let pending = {
        let mc = mc.clone();
        tokio::spawn(async move { mc.command("{\"prefix\": \"df\"}", Bytes::new(), T).await })
    };
    for _ in 0..250 {
        if mons.commands.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        mons.commands.load(Ordering::SeqCst),
        1,
        "the monitor got it"
    );
    mons.mute.store(false, Ordering::SeqCst);
    assert!(mons.net.break_connections(None) > 0);
    let r = pending
        .await
        .expect("joined")
        .expect("answered after the break");
    assert_eq!(r.output, Bytes::from("done: {\"prefix\": \"df\"}"));
    assert_eq!(mons.commands.load(Ordering::SeqCst), 2, "sent once more");
    assert!(mc.session().is_some_and(|c| c != first), "a new session");
    if let Ok(mc) = Arc::try_unwrap(mc) {
        mc.shutdown().await;
    }
    mons.shutdown().await;
}

/// The same session over io_uring (where this system allows it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_io_uring() {
    if !msgr_uring::Uring::available() {
        eprintln!("io_uring is not available here: skipped");
        return;
    }
    let mons = mons(msgr_uring::Uring::default(), 2, |_| {
        "v2:127.0.0.1:0/0".into()
    })
    .await;
    let cfg = MonClientConfig::new(mons.addrs.clone(), MonAuth::None);
    let mc = MonClient::connect_over(mons.net.clone(), cfg)
        .await
        .expect("a session");
    assert_eq!(mc.monmap().fsid, FSID);
    let r = mc
        .command("{\"prefix\": \"status\"}", Bytes::new(), T)
        .await
        .expect("a reply");
    assert_eq!(r.output, Bytes::from("done: {\"prefix\": \"status\"}"));
    mc.shutdown().await;
    mons.shutdown().await;
}
