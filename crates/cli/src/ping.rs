//! `msgr ping TARGET`: connects (learning the peer's type from its HELLO)
//! and times KEEPALIVE2 → KEEPALIVE2_ACK round trips.
//!
//! Without cluster options the connection uses auth none. With them (a
//! ceph.conf, a keyring), the tool first opens a monitor session for
//! service tickets and presents a cephx authorizer, as any Ceph client
//! does; TARGET may then also be an OSD's name (`osd.0`), and an address
//! without a nonce is completed from the OSD map (a Ceph daemon refuses a
//! client that names it with the wrong nonce).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messages::{MCommand, MCommandReply, TypedMessage};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_monc::MonClient;
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;

use crate::identity::{ClusterOpts, Identity};

/// Watches faults as they happen (a lossy connection retries its
/// handshake by itself): a peer that refuses us ends the ping with its
/// reason, at once.
#[derive(Default)]
struct Watch {
    refusals: std::sync::Mutex<crate::common::RefusalWatch>,
    refused: std::sync::Mutex<Option<String>>,
    /// The reply to `--tell`'s command.
    reply: std::sync::Mutex<Option<MCommandReply>>,
    replied: tokio::sync::Notify,
}

impl Dispatcher for Watch {
    fn ms_dispatch(&self, _: &Connection, m: IncomingMessage) {
        if let Ok(r) = MCommandReply::from_message(&m) {
            *self.reply.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            self.replied.notify_waiters();
        }
    }

    fn ms_handle_connect(&self, _: &Connection, _prev_shard: usize) {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .on_connect();
    }

    fn ms_handle_fault(&self, conn: &Connection, e: &msgr_protocol::ProtocolError) {
        let refused = self
            .refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .on_fault(e);
        if refused {
            *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            conn.mark_down();
        }
    }
}

/// What to ping and how.
#[derive(Debug, Clone)]
pub struct PingOpts {
    /// An address, or (with a cluster) `osd.N`.
    pub target: String,
    pub count: u32,
    pub interval: Duration,
    /// A command (JSON) to send the peer after the round trips.
    pub tell: Option<String>,
    /// Use the cluster configuration (cephx through the monitors).
    pub cluster: Option<ClusterOpts>,
    pub rev1: bool,
}

/// One round trip.
#[derive(Debug, Clone)]
pub struct Pong {
    pub peer: String,
    pub rtt: Duration,
}

/// Pings; returns the round trips (also printed as they happen).
pub async fn run(o: &PingOpts) -> Result<Vec<Pong>, String> {
    let policies = PolicySet::new(PolicyName::LossyClient.policy());
    let (mut opts, addr, mc) = match &o.cluster {
        None => {
            let mut opts = Options::new(
                EntityName::new(EntityType::CLIENT, EntityName::NEW),
                policies,
                Arc::new(NoneProvider),
            );
            opts.nonce = std::process::id();
            opts.message_types = msgr_messenger::MessageTypes::new(
                msgr_messages::MESSAGE_TYPES,
                msgr_messages::REPLY_TYPES,
            );
            (opts, o.target.parse().map_err(|e| format!("{e}"))?, None)
        }
        Some(c) => {
            let id = Identity::load(c)?;
            let mc = MonClient::connect(id.mon_client_config())
                .await
                .map_err(|e| e.to_string())?;
            let addr = match resolve(&mc, &o.target).await {
                Ok(a) => a,
                Err(e) => {
                    mc.shutdown().await;
                    return Err(e);
                }
            };
            (id.client_options(policies), addr, Some(mc))
        }
    };
    opts.rev1 = o.rev1;
    let watch = Arc::new(Watch::default());
    let m = Messenger::new(Tcp::default(), opts, watch.clone());
    // msgr2 learns the peer's type from its HELLO; msgr1 has none, and
    // learns it from a first CONNECT's BADPROTOVER unless we know it.
    let peer_type = match o.target.starts_with("osd.") {
        true => EntityType::OSD,
        false => EntityType::ANY,
    };
    let mut conn = m.connect(&addr, peer_type);
    let mut pongs = Vec::new();
    let mut failure = None;
    // A round trip lost to a connection fault is tried again on a new
    // connection (the lossy session is gone), up to a few times in a row.
    const MAX_RETRIES: u32 = 5;
    let mut retries = 0;
    let mut i = 0;
    while i < o.count {
        match conn.keepalive_roundtrip(Duration::from_secs(10)).await {
            Some(rtt) => {
                let peer = conn
                    .peer_name()
                    .map_or_else(|| "?".into(), |n| n.to_string());
                let mode = match conn.is_msgr1() {
                    true => "msgr1".to_string(),
                    false => conn.con_mode().map(|m| m.to_string()).unwrap_or_default(),
                };
                crate::outln!(
                    "keepalive from {peer} at {addr} ({mode}): seq={} time={:.3} ms",
                    i + 1,
                    rtt.as_secs_f64() * 1e3
                );
                pongs.push(Pong { peer, rtt });
                retries = 0;
                i += 1;
                if i < o.count {
                    tokio::time::sleep(o.interval).await;
                }
            }
            None => {
                let fault = conn.last_fault();
                let why = fault
                    .as_ref()
                    .map(|f| f.to_string())
                    .unwrap_or_else(|| format!("connection {:?}", conn.state()));
                let refused = watch
                    .refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                if let Some(why) = refused {
                    failure = Some(format!("{addr} refused us: {why}"));
                    break;
                }
                if retries >= MAX_RETRIES {
                    failure = Some(format!("no keepalive ack from {addr}: {why}"));
                    break;
                }
                retries += 1;
                eprintln!("msgr ping: {why}; reconnecting ({retries}/{MAX_RETRIES})");
                conn.mark_down();
                tokio::time::sleep(Duration::from_millis(100 * retries as u64)).await;
                conn = m.connect(&addr, peer_type);
            }
        }
    }
    if let (None, Some(cmd)) = (&failure, &o.tell) {
        let fsid = mc.as_ref().map(|m| m.monmap().fsid).unwrap_or_default();
        if let Err(e) = tell(&conn, &watch, cmd, fsid).await {
            failure = Some(e);
        }
    }
    m.shutdown().await;
    if let Some(mc) = mc {
        mc.shutdown().await;
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(pongs),
    }
}

/// Sends `cmd` as an MCommand and prints the reply's status and output.
async fn tell(
    conn: &Connection,
    watch: &Watch,
    cmd: &str,
    fsid: msgr_encoding::Uuid,
) -> Result<(), String> {
    let m = MCommand {
        tid: 1,
        fsid,
        cmd: vec![cmd.to_string()],
        input: Bytes::new(),
    };
    let waited = watch.replied.notified();
    conn.send_nowait(m.to_message(conn.features()));
    if tokio::time::timeout(Duration::from_secs(20), waited)
        .await
        .is_err()
    {
        return Err(format!("no reply to {cmd}"));
    }
    let r = watch
        .reply
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or("no reply")?;
    let peer = conn
        .peer_name()
        .map_or_else(|| "?".into(), |n| n.to_string());
    crate::outln!("reply from {peer}: r={} {}", r.r, r.rs);
    crate::outln!("{}", String::from_utf8_lossy(&r.output));
    Ok(())
}

/// The address vector to dial for `target`: `osd.N`, or an address whose
/// nonce the OSD map supplies when it was left out.
async fn resolve(mc: &MonClient, target: &str) -> Result<EntityAddrvec, String> {
    const TIMEOUT: Duration = Duration::from_secs(20);
    if let Some(n) = target.strip_prefix("osd.") {
        let n = n
            .parse()
            .map_err(|_| format!("{target}: not an OSD's name"))?;
        return mc.osd_addrs(n, TIMEOUT).await.map_err(|e| e.to_string());
    }
    let given: EntityAddrvec = target.parse().map_err(|e| format!("{e}"))?;
    // An explicit nonce, or a monitor's address: as given.
    let mon = mc.monmap().mons.values().any(|m| {
        m.public_addrs
            .0
            .iter()
            .any(|x| given.0.iter().any(|y| x.addr == y.addr))
    });
    if mon || given.0.iter().any(|x| x.nonce != 0) {
        return Ok(given);
    }
    let found = mc
        .osd_at(&given, TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    Ok(found.unwrap_or(given))
}
