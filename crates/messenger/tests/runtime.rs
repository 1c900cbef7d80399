//! The runtime over real transports (memory and TCP): sessions, policies,
//! replay after injected socket failures, resets, shutdown.

#[path = "support/pair.rs"]
mod pair;
#[path = "support/poll.rs"]
mod poll;
#[path = "support/recorder.rs"]
mod recorder;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::{AuthProvider, ConMode, NoneProvider};
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messenger::{
    Connection, IncomingMessage, InjectConfig, Message, MessageTypes, Messenger, Options, Policy,
};
use msgr_protocol::PolicySet;
use msgr_transport::memory::MemoryNet;
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;
use tokio::sync::mpsc;

use pair::Pair;
use recorder::{Ev, Recorder};

fn options(name: &str, policy: Policy, inject: u32, seed: u64) -> Options {
    options_auth(name, policy, inject, seed, Arc::new(NoneProvider))
}

fn options_auth(
    name: &str,
    policy: Policy,
    inject: u32,
    seed: u64,
    auth: Arc<dyn AuthProvider>,
) -> Options {
    let mut o = Options::new(name.parse().unwrap(), PolicySet::new(policy), auth);
    o.nonce = seed as u32;
    o.seed = seed;
    o.inject = InjectConfig {
        socket_failures: inject,
        ..Default::default()
    };
    o.timeouts.backoff_initial = Duration::from_millis(5);
    o.timeouts.backoff_max = Duration::from_millis(50);
    o.with_message_types(CEPH_TYPES)
}

/// Ceph's names and replies, for the per-type counters and calls.
const CEPH_TYPES: MessageTypes =
    MessageTypes::new(msgr_messages::MESSAGE_TYPES, msgr_messages::REPLY_TYPES);

async fn pair<T: Transport>(
    t: T,
    bind: &str,
    client: Policy,
    server: Policy,
    inject: u32,
) -> Pair<T> {
    pair_auth(
        t,
        bind,
        client,
        server,
        inject,
        Arc::new(NoneProvider),
        Arc::new(NoneProvider),
    )
    .await
}

async fn pair_auth<T: Transport>(
    t: T,
    bind: &str,
    client: Policy,
    server: Policy,
    inject: u32,
    client_auth: Arc<dyn AuthProvider>,
    server_auth: Arc<dyn AuthProvider>,
) -> Pair<T> {
    let s = options_auth("osd.0", server, inject, 7, server_auth);
    let c = options_auth("client.1", client, inject, 9, client_auth);
    pair_with(t, bind, c, s).await
}

/// A pair made with these options: an echoing server bound to `bind`, and
/// a client connected to it.
async fn pair_with<T: Transport>(t: T, bind: &str, client: Options, server: Options) -> Pair<T> {
    Pair::start(t, bind, client, server, true).await
}

/// Collects events until `done` says so (or the deadline passes).
async fn collect(
    rx: &mut mpsc::UnboundedReceiver<Ev>,
    mut done: impl FnMut(&[Ev]) -> bool,
) -> Vec<Ev> {
    let mut got = Vec::new();
    // On the caller's loop: tokio's, or a ring's (request_reply_on_a_ring_loop).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done(&got) {
        match msgr_uring::rt::timeout_at(deadline, rx.recv()).await {
            Ok(Some(e)) => got.push(e),
            _ => break,
        }
    }
    got
}

fn msgs(evs: &[Ev]) -> Vec<u64> {
    evs.iter()
        .filter_map(|e| match e {
            Ev::Msg(t) => Some(*t),
            _ => None,
        })
        .collect()
}

fn msg(tid: u64, len: usize) -> Message {
    let mut m = Message::new(42, Bytes::from(vec![tid as u8; len]));
    m.tid = tid;
    m
}

async fn request_reply<T: Transport>(t: T, bind: &str) {
    let mut p = pair(
        t,
        bind,
        Policy::lossless_client(),
        Policy::stateful_server(),
        0,
    )
    .await;
    for tid in 1..=200 {
        p.conn.send(msg(tid, (tid as usize * 97) % 70_000)).await;
    }
    let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= 200).await;
    assert_eq!(msgs(&replies), (1..=200).collect::<Vec<_>>());
    assert_eq!(replies[0], Ev::Connect);
    let got = collect(&mut p.server_rx, |e| msgs(e).len() >= 200).await;
    assert_eq!(got[0], Ev::Accept);
    assert_eq!(msgs(&got), (1..=200).collect::<Vec<_>>());
    p.client.shutdown().await;
    p.server.shutdown().await;
}

/// A client that queues more than its soft queue limit before its
/// handshake (16 writes of 256 KiB over 1 MiB) gets every reply: neither
/// the queued bytes nor, once written, the ones awaiting the server's
/// acknowledgement stop it reading.
#[tokio::test]
async fn more_in_flight_than_the_soft_limit_is_answered() {
    let mut client = options("client.1", Policy::lossless_client(), 0, 9);
    client.max_queued_bytes = 1 << 20;
    let server = options("osd.0", Policy::stateful_server(), 0, 7);
    let mut p = pair_with(MemoryNet::new(), "v2:10.0.0.1:6800", client, server).await;
    for tid in 1..=16 {
        p.conn.send_nowait(msg(tid, 256 << 10));
    }
    let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= 16).await;
    assert_eq!(msgs(&replies), (1..=16).collect::<Vec<_>>());
    p.client.shutdown().await;
    p.server.shutdown().await;
}

#[tokio::test]
async fn request_reply_over_memory() {
    request_reply(MemoryNet::new(), "v2:10.0.0.1:6800").await;
}

#[tokio::test]
async fn request_reply_over_tcp() {
    request_reply(Tcp::default(), "v2:127.0.0.1:0").await;
}

#[tokio::test]
async fn request_reply_over_uring() {
    request_reply(msgr_uring::Uring::default(), "v2:127.0.0.1:0").await;
}

/// Both messengers of one shard each, run by a thread that waits in its
/// own io_uring with no tokio runtime anywhere (as `msgr rados --transport
/// ring` runs its client): their tasks, timers and sockets are the loop's.
#[test]
fn request_reply_on_a_ring_loop() {
    request_reply_on_a_loop(msgr_uring::Uring::default());
}

/// The same with a client's ring ([`msgr_uring::Config::client`]), whose
/// pool of 32 buffers of 16 KiB is the thread's (the first stream on a
/// thread sizes it): frames up to 70 kB, most of them larger than a
/// buffer, so received straight into the connection's buffer.
#[test]
fn request_reply_on_a_ring_loop_with_a_client_pool() {
    request_reply_on_a_loop(msgr_uring::Uring::client());
}

fn request_reply_on_a_loop(t: msgr_uring::Uring) {
    let mut ex = msgr_uring::exec::Executor::new(256).expect("an io_uring");
    ex.block_on(async {
        let mut client = options("client.1", Policy::lossless_client(), 0, 9);
        let mut server = options("osd.0", Policy::stateful_server(), 0, 7);
        (client.shards, server.shards) = (1, 1);
        let mut p = pair_with(t, "v2:127.0.0.1:0", client, server).await;
        for tid in 1..=200 {
            p.conn.send(msg(tid, (tid as usize * 97) % 70_000)).await;
        }
        let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= 200).await;
        assert_eq!(msgs(&replies), (1..=200).collect::<Vec<_>>());
        p.client.shutdown().await;
        p.server.shutdown().await;
    })
    .expect("the loop ran");
}

/// Lossless sessions under 1-in-30 injected socket failures on both sides:
/// every message arrives exactly once, in order, and there were reconnects,
/// each counted in the client's `msgr-sessions` perf counters.
#[tokio::test]
async fn lossless_under_injected_failures() {
    for (seed, t) in [(1u64, MemoryNet::new())] {
        let _ = seed;
        let perf = msgr_admin::perf::Collection::new();
        let mut c = options("client.1", Policy::lossless_client(), 30, 9);
        c.perf = Some(perf.clone());
        let s = options("osd.0", Policy::stateful_server(), 30, 7);
        let mut p = pair_with(t, "v2:10.0.0.1:6800", c, s).await;
        let n = 1000;
        for tid in 1..=n {
            p.conn.send(msg(tid, 100 + (tid as usize % 3000))).await;
        }
        let got = collect(&mut p.server_rx, |e| msgs(e).len() >= n as usize).await;
        assert_eq!(
            msgs(&got),
            (1..=n).collect::<Vec<_>>(),
            "exactly once, in order"
        );
        let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= n as usize).await;
        assert_eq!(msgs(&replies), (1..=n).collect::<Vec<_>>());
        assert!(p.client.injected_failures() + p.server.injected_failures() > 0);
        // Read once the client is shut down: a last fault and reconnect
        // may still be under way, counted a step after the stats show it.
        p.client.shutdown().await;
        let reconnects = p.conn.stats().reconnects;
        assert!(reconnects > 0, "{:?}", p.conn.stats());
        let all =
            msgr_admin::json::parse(&perf.dump(Some("msgr-sessions"), None).to_string()).unwrap();
        let at = |c: &str| {
            all.get("msgr-sessions")
                .and_then(|s| s.get(c))
                .and_then(|v| v.as_u64())
        };
        assert_eq!(
            at("msgr_connection_reconnects"),
            Some(reconnects),
            "{}",
            all
        );
        assert!(at("msgr_connection_faults") >= Some(reconnects), "{}", all);
        let handshakes = all.pointer("/msgr-sessions/msgr_handshake_lat/avgcount");
        assert_eq!(handshakes.and_then(|v| v.as_u64()), Some(reconnects + 1));
        p.server.shutdown().await;
    }
}

/// Providers for a cephx client and an OSD, with the keys a monitor would
/// hold: the client's ticket for the OSD is minted from them.
fn cephx_providers(
    kind: msgr_auth::cephx::KeyKind,
) -> (Arc<dyn AuthProvider>, Arc<dyn AuthProvider>) {
    use msgr_auth::cephx::*;
    use msgr_encoding::UTime;
    let rng = Arc::new(msgr_auth::SeededRandom::new(kind.code() as u64));
    let clock = msgr_auth::system_clock();
    let mut ring = Keyring::default();
    for n in ["client.admin", "osd."] {
        ring.insert(
            n.parse().unwrap(),
            KeyringEntry {
                key: CryptoKey::random(kind, UTime::default(), &*rng),
                caps: Default::default(),
            },
        );
    }
    let keys = Arc::new(KeyServer::new(ring));
    let mut server = CephxServer::new(keys.clone(), EntityType::OSD, rng.clone(), clock.clone());
    server.service_modes = vec![ConMode::SECURE];
    let admin = msgr_encoding::AuthName::client_admin();
    let mut client = CephxClient::new(
        admin.clone(),
        keys.entity_key(&admin).unwrap().clone(),
        rng.clone(),
        clock.clone(),
    );
    client.service_modes = vec![ConMode::SECURE];
    // The client messenger is client.1: a client is numbered by its
    // global id, and the server holds it to that.
    client.grant_from(&keys, EntityType::OSD, 1, 3600).unwrap();
    (
        Arc::new(CephxProvider {
            client: Some(Arc::new(client)),
            server: None,
        }),
        Arc::new(CephxProvider {
            client: None,
            server: Some(Arc::new(server)),
        }),
    )
}

/// cephx and secure mode between two of our messengers over TCP, both key
/// types, lossless under 1-in-30 injected socket failures: every
/// reconnect runs the authorizer (with its challenge) again, and every
/// message still arrives exactly once, in order, encrypted.
#[tokio::test]
async fn cephx_secure_lossless_under_injected_failures() {
    secure_lossless_under_injected_failures(Tcp::default(), false).await;
    secure_lossless_under_injected_failures(msgr_uring::Uring::default(), false).await;
}

/// The same on ring shards (`Options::ring_shards`): every fault cancels
/// operations on a shard's loop, every reconnect connects from one.
#[tokio::test]
async fn cephx_secure_lossless_under_injected_failures_on_ring_shards() {
    secure_lossless_under_injected_failures(msgr_uring::Uring::default(), true).await;
}

/// `ring`: both messengers on ring shards.
async fn secure_lossless_under_injected_failures<T: Transport + Copy>(t: T, ring: bool) {
    for kind in [
        msgr_auth::cephx::KeyKind::Aes128,
        msgr_auth::cephx::KeyKind::Aes256k,
    ] {
        let (client_auth, server_auth) = cephx_providers(kind);
        let s = options_auth("osd.0", Policy::stateful_server(), 10, 7, server_auth);
        let c = options_auth("client.1", Policy::lossless_client(), 10, 9, client_auth);
        let (s, c) = (s.with_ring_shards(ring), c.with_ring_shards(ring));
        let mut p = pair_with(t, "v2:127.0.0.1:0", c, s).await;
        let n = 500;
        for tid in 1..=n {
            p.conn
                .send(msg(tid, 100 + (tid as usize * 37 % 5000)))
                .await;
        }
        let got = collect(&mut p.server_rx, |e| msgs(e).len() >= n as usize).await;
        assert_eq!(
            msgs(&got),
            (1..=n).collect::<Vec<_>>(),
            "{kind:?}: exactly once, in order"
        );
        let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= n as usize).await;
        assert_eq!(msgs(&replies), (1..=n).collect::<Vec<_>>());
        // The server knows who it served: the ticket's name and global id.
        let who: Vec<_> = p
            .server
            .connections()
            .iter()
            .filter_map(|c| c.peer_identity())
            .collect();
        assert!(!who.is_empty());
        for w in who {
            assert_eq!(
                (w.name.to_string(), w.global_id, w.proven),
                ("client.admin".into(), 1, true)
            );
        }
        // Injected failures go on: the session may be reconnecting now.
        let mut mode = None;
        for _ in 0..500 {
            mode = p.conn.con_mode();
            if mode.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(mode, Some(ConMode::SECURE));
        assert!(p.conn.stats().reconnects > 0, "{:?}", p.conn.stats());
        p.client.shutdown().await;
        p.server.shutdown().await;
    }
}

/// A client whose ticket the server cannot open hears of the refusal.
#[tokio::test]
async fn cephx_refusal_reaches_the_dispatcher() {
    let (client_auth, _) = cephx_providers(msgr_auth::cephx::KeyKind::Aes256k);
    let (_, other_server) = cephx_providers(msgr_auth::cephx::KeyKind::Aes128);
    let p = pair_auth(
        MemoryNet::new(),
        "v2:10.0.0.9:6800",
        Policy::lossless_client(),
        Policy::stateful_server(),
        0,
        client_auth,
        other_server,
    )
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(msgr_protocol::ProtocolError::Auth(e)) = p.conn.last_fault() {
            assert_eq!(e.errno(), -13, "{e}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no auth fault: {:?}",
            p.conn.last_fault()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!p.conn.is_connected());
    p.client.shutdown().await;
    p.server.shutdown().await;
}

#[tokio::test]
async fn lossy_client_gets_reset_when_the_connection_breaks() {
    let net = MemoryNet::new();
    let mut p = pair(
        net.clone(),
        "v2:10.0.0.1:6800",
        Policy::lossy_client(),
        Policy::stateless_server(),
        0,
    )
    .await;
    p.conn.send(msg(1, 10)).await;
    let got = collect(&mut p.client_rx, |e| !msgs(e).is_empty()).await;
    assert_eq!(got, vec![Ev::Connect, Ev::Msg(1)]);
    assert_eq!(net.break_connections(None), 1);
    let got = collect(&mut p.client_rx, |e| e.contains(&Ev::Reset)).await;
    assert_eq!(got, vec![Ev::Reset]);
    assert_eq!(p.conn.state(), msgr_messenger::ConnState::Closed);
    p.client.shutdown().await;
    p.server.shutdown().await;
}

/// A session resumed by SESSION_RECONNECT keeps, on both sides, the
/// features its CLIENT_IDENT agreed on (the frame carries none; without
/// them an OSD encodes its replies for a peer without any, MOSDOp v8).
#[tokio::test]
async fn a_reconnected_session_keeps_its_features() {
    let net = MemoryNet::new();
    let mut p = pair(
        net.clone(),
        "v2:10.0.0.1:6800",
        Policy::lossless_client(),
        Policy::stateful_server(),
        0,
    )
    .await;
    p.conn.send(msg(1, 10)).await;
    collect(&mut p.client_rx, |e| msgs(e).len() == 1).await;
    let accepted = || p.server.connections().into_iter().next().unwrap();
    let agreed = accepted().features();
    assert_ne!(agreed, 0);
    assert_eq!(net.break_connections(None), 1);
    p.conn.send(msg(2, 10)).await;
    collect(&mut p.client_rx, |e| msgs(e).len() == 1).await;
    let server_side = accepted();
    assert!(
        server_side.stats().reconnects > 0,
        "{:?}",
        server_side.stats()
    );
    assert_eq!(server_side.features(), agreed);
    assert_eq!(p.conn.features(), agreed);
    p.client.shutdown().await;
    p.server.shutdown().await;
}

#[tokio::test]
async fn refused_then_server_appears() {
    let net = MemoryNet::new();
    let (ctx, mut client_rx) = mpsc::unbounded_channel();
    let c = Messenger::new(
        net.clone(),
        options("client.1", Policy::lossless_client(), 0, 3),
        Recorder::sending(ctx, false),
    );
    let addrs: EntityAddrvec = "v2:10.0.0.9:6800/7".parse().unwrap();
    let conn = c.connect(&addrs, EntityType::OSD);
    conn.send(msg(5, 10)).await;
    let got = collect(&mut client_rx, |e| e.contains(&Ev::Refused)).await;
    assert!(got.contains(&Ev::Refused));
    let (stx, mut server_rx) = mpsc::unbounded_channel();
    let s = Messenger::new(
        net,
        options("osd.0", Policy::stateful_server(), 0, 7),
        Recorder::sending(stx, false),
    );
    s.bind(&addrs).await.unwrap();
    let got = collect(&mut server_rx, |e| !msgs(e).is_empty()).await;
    assert_eq!(msgs(&got), vec![5]);
    c.shutdown().await;
    s.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_connection() {
    let net = MemoryNet::new();
    let p = pair(
        net.clone(),
        "v2:10.0.0.1:6800",
        Policy::lossless_client(),
        Policy::stateful_server(),
        0,
    )
    .await;
    p.conn.send(msg(1, 10)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    p.client.shutdown().await;
    p.server.shutdown().await;
    assert!(p.client.connections().is_empty());
    assert!(p.server.connections().is_empty());
    assert_eq!(net.live_connections(), 0);
    let _ = Mutex::new(());
}

/// Every policy pairing Ceph uses, over memory and TCP: messages flow both
/// ways, and for lossless pairings they survive a broken connection.
#[tokio::test]
async fn every_policy_pairing() {
    let pairings = [
        (Policy::lossy_client(), Policy::stateless_server()),
        (
            Policy::lossy_client(),
            Policy::stateless_registered_server(),
        ),
        (Policy::lossless_client(), Policy::stateful_server()),
        (Policy::lossless_peer(), Policy::lossless_peer()),
        (Policy::lossless_peer_reuse(), Policy::lossless_peer_reuse()),
    ];
    for (client, server) in pairings {
        for tcp in [false, true] {
            let mut p = if tcp {
                let p = pair(Tcp::default(), "v2:127.0.0.1:0", client, server, 0).await;
                Box::new(p) as Box<dyn std::any::Any>
            } else {
                let p = pair(MemoryNet::new(), "v2:10.0.0.1:6800", client, server, 0).await;
                Box::new(p) as Box<dyn std::any::Any>
            };
            macro_rules! check {
                ($p:expr) => {{
                    let p = $p;
                    for tid in 1..=50 {
                        p.conn.send(msg(tid, 1000)).await;
                    }
                    let got = collect(&mut p.server_rx, |e| msgs(e).len() >= 50).await;
                    assert_eq!(
                        msgs(&got),
                        (1..=50).collect::<Vec<_>>(),
                        "{client:?} / {server:?} tcp={tcp}"
                    );
                    let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= 50).await;
                    assert_eq!(msgs(&replies), (1..=50).collect::<Vec<_>>());
                    p.client.shutdown().await;
                    p.server.shutdown().await;
                }};
            }
            if let Some(p) = p.downcast_mut::<Pair<Tcp>>() {
                check!(p);
            } else if let Some(p) = p.downcast_mut::<Pair<MemoryNet>>() {
                check!(p);
            }
        }
    }
}

#[tokio::test]
async fn keepalive_round_trip() {
    let p = pair(
        MemoryNet::new(),
        "v2:10.0.0.1:6800",
        Policy::lossy_client(),
        Policy::stateless_server(),
        0,
    )
    .await;
    let rtt = p.conn.keepalive_roundtrip(Duration::from_secs(5)).await;
    assert!(rtt.is_some(), "keepalive answered");
    assert!(p.conn.last_keepalive_ack().is_some());
    p.client.shutdown().await;
    p.server.shutdown().await;
}

/// A lossy connection left idle past the idle timeout is closed with a reset.
#[tokio::test]
async fn idle_timeout_closes_a_lossy_connection() {
    let (ctx, mut client_rx) = mpsc::unbounded_channel();
    let (stx, _server_rx) = mpsc::unbounded_channel();
    let net = MemoryNet::new();
    let s = Messenger::new(
        net.clone(),
        options("osd.0", Policy::stateless_server(), 0, 7),
        Recorder::sending(stx, true),
    );
    let addrs = s.bind(&"v2:10.0.0.1:6800".parse().unwrap()).await.unwrap();
    let mut o = options("client.1", Policy::lossy_client(), 0, 9);
    o.timeouts.idle = Duration::from_millis(200);
    let c = Messenger::new(net, o, Recorder::sending(ctx, false));
    let conn = c.connect(&addrs, EntityType::OSD);
    conn.send(msg(1, 10)).await;
    let got = collect(&mut client_rx, |e| e.contains(&Ev::Reset)).await;
    assert_eq!(got, vec![Ev::Connect, Ev::Msg(1), Ev::Reset]);
    c.shutdown().await;
    s.shutdown().await;
}

/// The perf counters (`AsyncMessenger::Worker-N` in `perf dump`) count
/// what went through: messages when queued and before dispatch, socket
/// bytes, encrypted bytes on secure sessions only, connections created and
/// active; a messenger's loggers leave the collection with it.
#[tokio::test]
async fn perf_counters_count_messages_bytes_and_connections() {
    use msgr_messenger::counters::*;
    for secure in [false, true] {
        let (client_auth, server_auth): (Arc<dyn AuthProvider>, Arc<dyn AuthProvider>) =
            match secure {
                true => cephx_providers(msgr_auth::cephx::KeyKind::Aes128),
                false => (Arc::new(NoneProvider), Arc::new(NoneProvider)),
            };
        let perf = msgr_admin::perf::Collection::new();
        let mut c = options_auth("client.1", Policy::lossless_client(), 0, 9, client_auth);
        c.perf = Some(perf.clone());
        let s = options_auth("osd.0", Policy::stateful_server(), 0, 7, server_auth);
        let mut p = pair_with(Tcp::default(), "v2:127.0.0.1:0", c, s).await;
        // Enough that this thread's sends include sampled ones.
        let n = 2 * u64::from(SAMPLE_EVERY) + 10;
        for tid in 1..=n {
            p.conn.send(msg(tid, 1000)).await;
        }
        let replies = collect(&mut p.client_rx, |e| msgs(e).len() >= n as usize).await;
        assert_eq!(msgs(&replies).len(), n as usize);
        let (client, server) = (&p.client, &p.server);
        assert_eq!(client.counter(SEND_MESSAGES), n);
        assert_eq!(client.counter(RECV_MESSAGES), n);
        assert_eq!(server.counter(RECV_MESSAGES), n);
        assert_eq!(server.counter(SEND_MESSAGES), n);
        assert!(client.counter(SEND_BYTES) > n * 1000);
        // Each side counts its socket's bytes after the syscall returns,
        // so the two counts are compared only as both exceed the payloads.
        assert!(server.counter(RECV_BYTES) > n * 1000);
        let encrypted = client.counter(SEND_ENCRYPTED_BYTES);
        match secure {
            // The handshake before AUTH_DONE is not encrypted.
            true => assert!(encrypted > n * 1000 && encrypted < client.counter(SEND_BYTES)),
            false => assert_eq!(encrypted, 0),
        }
        assert_eq!(client.counter(CREATED_CONNECTIONS), 1);
        assert_eq!(client.counter(ACTIVE_CONNECTIONS), 1);
        assert!(client.counter(RUNNING_TOTAL_TIME) > 0);
        // messenger dump: the server's one connection, its seqs and counters.
        let d = p.server.dump(&[]);
        let conn = d
            .get("connections")
            .and_then(|c| c.as_array().cloned())
            .unwrap_or_default();
        assert_eq!(conn.len(), 1, "{}", d);
        let c = conn[0].get("async_connection").unwrap();
        assert_eq!(
            c.pointer("/counters/messages_in").and_then(|v| v.as_u64()),
            Some(n)
        );
        assert_eq!(c.get("in_seq").and_then(|v| v.as_u64()), Some(n));
        assert!(c.pointer("/counters/bytes_in").and_then(|v| v.as_u64()) > Some(n * 1000));
        assert!(c
            .pointer("/counters/last_handshake_us")
            .and_then(|v| v.as_u64())
            .is_some());
        assert_eq!(
            c.pointer("/policy/server"),
            Some(&msgr_admin::json::Value::Bool(true))
        );
        // By message type: MOSDOps (42) in, their replies (43) out.
        let ops = d.pointer("/by_type/CEPH_MSG_OSD_OP").unwrap();
        assert_eq!(ops.get("recv_messages").and_then(|v| v.as_u64()), Some(n));
        assert_eq!(
            ops.get("recv_bytes").and_then(|v| v.as_u64()),
            Some(n * 1000)
        );
        let replies = d.pointer("/by_type/CEPH_MSG_OSD_OPREPLY/send_messages");
        assert_eq!(replies.and_then(|v| v.as_u64()), Some(n));
        assert_eq!(p.server.traffic_by_type().len(), 2);
        let dump = perf.dump(None, Some("msgr_recv_messages")).to_string();
        assert!(
            dump.contains(&format!(
                r#""AsyncMessenger::Worker-0":{{"msgr_recv_messages":{n}}}"#
            )),
            "{dump}"
        );
        // The sampled send queue latency, the sessions' handshake, and the
        // dispatch throttle's level and limit.
        let all = msgr_admin::json::parse(&perf.dump(None, None).to_string()).unwrap();
        let at = |path: &[&str]| {
            path.iter()
                .try_fold(&all, |v, k| v.get(k))
                .and_then(|v| v.as_u64())
        };
        let worker = "AsyncMessenger::Worker-0";
        let samples = at(&[worker, "msgr_send_messages_queue_lat", "avgcount"]);
        assert!(samples >= Some(2), "{}", all);
        assert_eq!(
            at(&["msgr-sessions", "msgr_handshake_lat", "avgcount"]),
            Some(1)
        );
        assert_eq!(at(&["msgr-sessions", "msgr_connection_faults"]), Some(0));
        let throttle = "throttle-msgr_dispatch_throttler-client.1";
        assert_eq!(at(&[throttle, "max"]), Some(100 << 20));
        assert!(at(&[throttle, "val"]).is_some(), "{}", all);
        p.client.shutdown().await;
        assert_eq!(p.client.counter(ACTIVE_CONNECTIONS), 0);
        p.server.shutdown().await;
        drop(p);
        assert_eq!(perf.dump(None, None).to_string(), "{}");
    }
}

/// Connection::call: each request's reply, matched by tid, goes to its
/// caller and not to the dispatcher; a type without a reply, a tid already
/// waiting, no reply in time, and a reset each end the call with their
/// error.
#[tokio::test]
async fn call_waits_for_the_reply_by_tid() {
    use msgr_messenger::CallError;
    let t = MemoryNet::new();
    let mut p = pair(
        t.clone(),
        "v2:10.0.0.1:6800",
        Policy::lossy_client(),
        Policy::stateless_server(),
        0,
    )
    .await;
    let calls: Vec<_> = (1..=20u64)
        .map(|i| {
            let c = p.conn.clone();
            tokio::spawn(async move {
                c.call(msg(0, 100 + i as usize), Duration::from_secs(10))
                    .await
            })
        })
        .collect();
    let mut tids = Vec::new();
    for h in calls {
        let reply = h.await.unwrap().unwrap();
        assert_eq!(reply.msg_type, 43);
        tids.push(reply.tid);
    }
    tids.sort_unstable();
    assert_eq!(
        tids,
        (1..=20).collect::<Vec<_>>(),
        "tids given in turn, each answered"
    );
    let got = collect(&mut p.server_rx, |e| msgs(e).len() >= 20).await;
    assert_eq!(msgs(&got).len(), 20);
    while let Ok(e) = p.client_rx.try_recv() {
        assert!(
            !matches!(e, Ev::Msg(_)),
            "a reply reached the dispatcher: {e:?}"
        );
    }
    let no_reply = p
        .conn
        .call(Message::new(99, Bytes::new()), Duration::from_secs(1))
        .await;
    assert_eq!(
        no_reply.unwrap_err(),
        CallError::NoReplyType { msg_type: 99 }
    );
    p.client.shutdown().await;
    p.server.shutdown().await;

    // A server that does not answer: timeouts, a tid in use, then a reset.
    let (stx, _server_rx) = mpsc::unbounded_channel();
    let silent = Messenger::new(
        t.clone(),
        options("osd.0", Policy::stateless_server(), 0, 7),
        Recorder::sending(stx, false),
    );
    let addrs = silent
        .bind(&"v2:10.0.0.2:6800".parse().unwrap())
        .await
        .unwrap();
    let (ctx, _client_rx) = mpsc::unbounded_channel();
    let client = Messenger::new(
        t,
        options("client.1", Policy::lossy_client(), 0, 9),
        Recorder::sending(ctx, false),
    );
    let conn = client.connect(&addrs, EntityType::OSD);
    let timeout = conn.call(msg(7, 10), Duration::from_millis(200)).await;
    assert!(
        matches!(timeout, Err(CallError::Timeout { .. })),
        "{timeout:?}"
    );
    let waiting = {
        let c = conn.clone();
        tokio::spawn(async move { c.call(msg(8, 10), Duration::from_secs(20)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let twice = conn.call(msg(8, 10), Duration::from_secs(1)).await;
    assert_eq!(twice.unwrap_err(), CallError::TidInUse { tid: 8 });
    // The server goes: the lossy session resets, and the waiting call ends.
    silent.shutdown().await;
    assert_eq!(waiting.await.unwrap().unwrap_err(), CallError::Reset);
    client.shutdown().await;
    let closed = conn.call(msg(9, 10), Duration::from_secs(1)).await;
    assert_eq!(closed.unwrap_err(), CallError::Closed);
}

/// Connection::ready: READY with the peer's features known; a lossy
/// session whose server went away ends with its fault; a marked-down
/// connection without one.
#[tokio::test]
async fn ready_waits_for_the_session_or_says_what_ended_it() {
    let p = pair(
        Tcp::default(),
        "v2:127.0.0.1:0",
        Policy::lossy_client(),
        Policy::stateless_server(),
        0,
    )
    .await;
    p.conn.ready().await.unwrap();
    assert_ne!(p.conn.features(), 0);
    assert_eq!(p.conn.state(), msgr_messenger::ConnState::Ready);
    p.server.shutdown().await;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match p.conn.ready().await {
                // Still READY until the driver sees the socket close.
                Ok(()) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(e) => return e,
            }
        }
    })
    .await
    .expect("the session ends");
    assert!(ended.last_fault.is_some(), "{ended}");

    // A peer that takes the socket and says nothing: no fault can come
    // before the mark down (the server above is gone, and a refused
    // connect could be seen first by the connection's shard).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let addrs: EntityAddrvec = format!("v2:127.0.0.1:{port}/1").parse().unwrap();
    let again = p.client.connect(&addrs, EntityType::OSD);
    again.mark_down();
    let e = again.ready().await.unwrap_err();
    assert!(e.last_fault.is_none(), "{e}");
    p.client.shutdown().await;
}

/// The other ways to take what a messenger delivers: a chain of
/// dispatchers (each message to the first that takes it, events to all),
/// and a stream of events; a connection's user data; mark_down_all.
#[tokio::test]
async fn chains_streams_user_data_and_mark_down_all() {
    use msgr_messenger::dispatch::{events, Chain, ChainLink, DispatchEvent};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Takes messages of one type, counts them and the accepts it hears.
    struct Takes {
        msg_type: u16,
        taken: AtomicU64,
        accepts: AtomicU64,
    }
    impl ChainLink for Takes {
        fn ms_take(&self, conn: &Connection, msg: IncomingMessage) -> Option<IncomingMessage> {
            if msg.msg_type != self.msg_type {
                return Some(msg);
            }
            self.taken.fetch_add(1, Ordering::Relaxed);
            conn.set_user_data(Arc::new(msg.tid));
            None
        }
        fn ms_handle_accept(&self, _: &Connection) {
            self.accepts.fetch_add(1, Ordering::Relaxed);
        }
    }
    let links: Vec<Arc<Takes>> = [42u16, 50]
        .into_iter()
        .map(|msg_type| {
            Arc::new(Takes {
                msg_type,
                taken: AtomicU64::new(0),
                accepts: AtomicU64::new(0),
            })
        })
        .collect();
    let chain = links
        .iter()
        .fold(Chain::new(), |c, l| c.then(l.clone() as Arc<dyn ChainLink>));
    let t = MemoryNet::new();
    let server = Messenger::new(
        t.clone(),
        options("osd.0", Policy::stateful_server(), 0, 7),
        Arc::new(chain),
    );
    let addrs = server
        .bind(&"v2:10.0.0.1:6800".parse().unwrap())
        .await
        .unwrap();
    let (dispatcher, mut rx) = events();
    let client = Messenger::new(
        t,
        options("client.1", Policy::lossless_client(), 0, 9),
        dispatcher,
    );
    let conn = client.connect(&addrs, EntityType::OSD);
    for tid in 1..=3 {
        conn.send(msg(tid, 10)).await;
    }
    let mut mon_command = Message::new(50, Bytes::new());
    mon_command.tid = 4;
    conn.send(mon_command).await;
    conn.send(Message::new(99, Bytes::new())).await; // no link takes it
    match rx.recv().await {
        Some(DispatchEvent::Connected(c)) => assert_eq!(c, conn),
        _ => panic!("the stream's first event is the connect"),
    }
    assert!(
        poll::until(|| links[0].taken.load(Ordering::Relaxed) == 3
            && links[1].taken.load(Ordering::Relaxed) == 1)
        .await
    );
    assert_eq!(
        links
            .iter()
            .map(|l| l.accepts.load(Ordering::Relaxed))
            .collect::<Vec<_>>(),
        [1, 1],
        "events go to every link"
    );
    let served = server.connections();
    assert_eq!(served.len(), 1);
    assert_eq!(served[0].user_data::<u64>().as_deref(), Some(&4));
    assert!(
        served[0].user_data::<String>().is_none(),
        "another type is not there"
    );
    server.mark_down_all();
    assert_eq!(served[0].state(), msgr_messenger::ConnState::Closed);
    // Gone from the messenger (the lossless client may connect again).
    assert!(poll::until(|| !server.connections().contains(&served[0])).await);
    client.shutdown().await;
    server.shutdown().await;
}

/// A peer type's policy changed while the messenger runs applies to
/// connections made after it (their policy, and the throttle it names),
/// not to the connections that exist, as Ceph's set_policy.
#[tokio::test]
async fn policies_change_at_run_time() {
    use msgr_messenger::dispatch::{events, DispatchEvent};

    let t = MemoryNet::new();
    let (dispatcher, mut served) = events();
    let server = Messenger::new(
        t.clone(),
        options("osd.0", Policy::stateless_server(), 0, 7),
        dispatcher,
    );
    let addrs = server
        .bind(&"v2:10.0.0.1:6800".parse().unwrap())
        .await
        .unwrap();
    let client = Messenger::new(
        t,
        options("client.1", Policy::lossy_client(), 0, 9),
        Recorder::sending(mpsc::unbounded_channel().0, false),
    );
    // A message that must come is waited for long; one that must not, a
    // while (it could only pass a broken throttle late, not fail).
    let (must, must_not) = (Duration::from_secs(20), Duration::from_millis(300));
    let next_message = |rx: &mut mpsc::UnboundedReceiver<DispatchEvent>, wait: Duration| {
        let mut rx = std::mem::replace(rx, mpsc::unbounded_channel().1);
        async move {
            let got = tokio::time::timeout(wait, async {
                loop {
                    match rx.recv().await {
                        Some(DispatchEvent::Message(c, m)) => return Some((c, m)),
                        Some(_) => continue,
                        None => return None,
                    }
                }
            })
            .await
            .ok()
            .flatten();
            (got, rx)
        }
    };

    let first = client.connect(&addrs, EntityType::OSD);
    first.send(msg(1, 10)).await;
    let (got, rx) = next_message(&mut served, must).await;
    served = rx;
    let (first_served, _) = got.expect("the first connection delivers");
    assert_eq!(first.policy(), Some(Policy::lossy_client()));
    assert_eq!(first_served.policy(), Some(Policy::stateless_server()));

    // Lossless to OSDs from now on; the server admits a client's messages
    // one at a time.
    client.set_policy(EntityType::OSD, Policy::lossless_client());
    let throttled = Policy::stateful_server().with_throttle(1, 1 << 20);
    server.set_policy(EntityType::CLIENT, throttled);
    assert_eq!(client.policy(EntityType::OSD), Policy::lossless_client());
    assert_eq!(client.policy(EntityType::MON), Policy::lossy_client());

    first.mark_down();
    let second = client.connect(&addrs, EntityType::OSD);
    assert_ne!(second, first);
    second.send(msg(2, 10)).await;
    second.send(msg(3, 10)).await;
    let (got, rx) = next_message(&mut served, must).await;
    served = rx;
    let (second_served, held) = got.expect("the second connection delivers");
    assert_eq!(held.tid, 2);
    assert_eq!(second.policy(), Some(Policy::lossless_client()));
    assert_eq!(second_served.policy(), Some(throttled));
    assert_eq!(first.policy(), Some(Policy::lossy_client()), "kept");
    // The new policy's throttle holds the next message while one is held.
    let (got, rx) = next_message(&mut served, must_not).await;
    served = rx;
    assert!(got.is_none(), "a second message passed a throttle of one");
    drop(held);
    let (got, _) = next_message(&mut served, must).await;
    assert_eq!(got.expect("released").1.tid, 3);
    client.shutdown().await;
    server.shutdown().await;
}
