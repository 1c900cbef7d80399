//! Memory a peer can make a server hold is bounded, over TCP: a peer that
//! never reads our replies, peers that trickle frames, a flood of
//! AUTH_BAD_METHOD rounds, 20000 clients that connect and vanish under a
//! stateful server. Each runs beside a well-behaved client that is served
//! throughout, and each has its peak resident memory measured (printed)
//! and bounded. Floods of empty messages, over msgr2 and msgr1, meet the
//! same limits as large ones (each message counts for what it costs,
//! Session::cost): towards a peer that never reads, from a lossless peer
//! that never acknowledges, and waiting for dispatch. Also: the connection
//! limit counts live sockets and evicts idle ones before refusing, and a
//! connection waiting for receive budget still writes.
//!
//! The scenarios share the process's memory counters, so they run one at
//! a time (SERIAL).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messenger::{
    Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::{PolicySet, Session};
use msgr_transport::tcp::Tcp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

#[path = "support/poll.rs"]
mod poll;
#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::RawPeer;
#[path = "support/echo.rs"]
mod echo;
#[path = "support/raw_v1.rs"]
#[allow(dead_code)]
mod raw_v1;
#[path = "support/rss.rs"]
mod rss;
use echo::{Echo, AMPLIFY};
use rss::{reset_peak, rss_kib};

static SERIAL: Mutex<()> = Mutex::new(());

/// Prints and bounds the peak resident memory since `base` (KiB).
fn assert_peak_below(what: &str, base: u64, mib: u64) {
    let peak = rss_kib("VmHWM:");
    let grew = peak.saturating_sub(base) / 1024;
    eprintln!(
        "{what}: resident memory {} MiB, peak +{grew} MiB",
        base / 1024
    );
    assert!(grew < mib, "{what}: peak grew {grew} MiB (bound {mib} MiB)");
}

async fn server(
    policy: Policy,
    reply_len: usize,
    tune: impl FnOnce(&mut Options),
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Echo>) {
    server_at(Wire::V2, policy, reply_len, 1, tune).await
}

/// A server listening on 127.0.0.1 over `wire`, answering AMPLIFY with
/// `burst` empty replies.
async fn server_at(
    wire: Wire,
    policy: Policy,
    reply_len: usize,
    burst: usize,
    tune: impl FnOnce(&mut Options),
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Echo>) {
    let echo = Arc::new(Echo::sized(reply_len, burst));
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(policy),
        Arc::new(NoneProvider),
    );
    // The raw peers reach it at nonce 0.
    o.nonce = 0;
    tune(&mut o);
    let m = Messenger::new(Tcp::default(), o, echo.clone());
    let addrs = m.bind(&wire.local().parse().unwrap()).await.unwrap();
    (m, addrs, echo)
}

struct Replies(mpsc::UnboundedSender<u64>);
impl Dispatcher for Replies {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        let _ = self.0.send(msg.tid);
    }
}

/// A well-behaved client: a request every 20 ms, each answered.
struct Good {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<(u64, Duration)>,
}

impl Good {
    fn start(server: &EntityAddrvec) -> Good {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let server = server.clone();
        let task = tokio::spawn(async move {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let mut o = Options::new(
                "client.9999".parse().unwrap(),
                PolicySet::new(Policy::lossless_client()),
                Arc::new(NoneProvider),
            );
            o.nonce = 9999;
            let m = Messenger::new(Tcp::default(), o, Arc::new(Replies(tx)));
            let conn = m.connect(&server, EntityType::OSD);
            let (mut served, mut worst) = (0u64, Duration::ZERO);
            for tid in 1.. {
                let t = Instant::now();
                let mut msg = Message::new(42, Bytes::from_static(b"hello"));
                msg.tid = tid;
                conn.send(msg).await;
                match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                    Ok(Some(got)) if got == tid => served += 1,
                    other => panic!("the good client was not served: {other:?}"),
                }
                worst = worst.max(t.elapsed());
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
            m.shutdown().await;
            (served, worst)
        });
        Good { stop, task }
    }

    /// Stops; says how many round trips it made and the slowest (every
    /// one was answered, or it panicked).
    async fn finish(self, what: &str) {
        let _ = self.stop.send(true);
        let (served, worst) = self.task.await.unwrap();
        eprintln!("{what}: the good client made {served} round trips, slowest {worst:?}");
        assert!(served >= 1, "{what}: no round trip");
        assert!(
            worst < Duration::from_secs(2),
            "{what}: a round trip took {worst:?}"
        );
    }
}

/// A raw client that sends 16 KiB requests and never reads the 64 KiB
/// replies: the server stops reading from it once it holds its soft limit
/// (the client's writes stall), and holds no more than that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_is_pushed_back_then_marked_down() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, echo) = server(Policy::stateless_server(), 64 << 10, |o| {
        o.max_queued_bytes = 1 << 20;
        o.max_queued_bytes_hard = 4 << 20;
    })
    .await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let sock = addrs.msgr2().unwrap().addr.unwrap();

    let mut p = RawPeer::connect(sock).await.unwrap();
    p.session(1, true).await.unwrap();
    let mut sent = 0u64;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let write = p.message(sent + 1, Bytes::from(vec![7u8; 16 << 10]));
        match tokio::time::timeout(Duration::from_millis(500), write).await {
            Ok(Ok(())) => sent += 1,
            Ok(Err(_)) => break,
            Err(_) => break, // the server stopped reading: our writes stall
        }
    }
    let answered = echo.served.load(Ordering::Relaxed);
    eprintln!(
        "never reads: {sent} requests written before the writes stalled, {answered} answered"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the writes never stalled"
    );
    // The writes stalled because the server stopped reading, not because
    // it closed the connection (it held less than its hard limit): what
    // it answered is its soft limit plus what the kernel's socket buffers
    // took (several MiB each way on loopback).
    assert!(!p.closed_by_server(Duration::from_millis(200)).await);
    assert!(answered < 256, "{answered} answered");
    assert!(s.connections().len() <= 2);
    assert_peak_below("never reads", base, 64);

    // An amplifier: a burst of requests whose replies pass the hard limit
    // at once is marked down.
    let (s2, addrs2, _) = server(Policy::stateless_server(), 1 << 20, |o| {
        o.max_queued_bytes = 1 << 20;
        o.max_queued_bytes_hard = 4 << 20;
    })
    .await;
    let mut p = RawPeer::connect(addrs2.msgr2().unwrap().addr.unwrap())
        .await
        .unwrap();
    p.session(2, true).await.unwrap();
    for seq in 1..=20 {
        p.message(seq, Bytes::from_static(b"give me a MiB"))
            .await
            .unwrap();
    }
    p.s.flush().await.unwrap();
    assert!(
        p.closed_by_server(Duration::from_secs(10)).await,
        "marked down"
    );
    good.finish("never reads").await;
    s.shutdown().await;
    s2.shutdown().await;
}

/// Tricklers: 20 announce a 1 MiB MESSAGE and send a byte every 200 ms;
/// each is cut off at the frame deadline (2 s here). One announcing more
/// than the whole receive budget is refused at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tricklers_are_cut_off_and_oversized_messages_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, _) = server(Policy::stateless_server(), 16, |o| {
        o.timeouts.frame = Duration::from_secs(2);
        o.dispatch_throttle_bytes = 64 << 20;
    })
    .await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let sock = addrs.msgr2().unwrap().addr.unwrap();

    let mut oversized = RawPeer::connect(sock).await.unwrap();
    oversized.session(1, true).await.unwrap();
    let preamble = |len: u32| {
        let p = msgr_frames::Preamble::new(msgr_frames::Tag::MESSAGE, [41, 0, 0, len], [8; 4], 0);
        p.encode()
    };
    oversized.s.write_all(&preamble(200 << 20)).await.unwrap();
    let t = Instant::now();
    assert!(oversized.closed_by_server(Duration::from_secs(5)).await);
    assert!(t.elapsed() < Duration::from_secs(1), "refused at once");

    let mut jobs = Vec::new();
    for i in 0..20u32 {
        jobs.push(tokio::spawn(async move {
            let mut p = RawPeer::connect(sock).await.unwrap();
            p.session(10 + i, true).await.unwrap();
            p.s.write_all(&preamble(1 << 20)).await.unwrap();
            let t = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if p.s.write_all(&[0u8]).await.is_err() || t.elapsed() > Duration::from_secs(10) {
                    break;
                }
                if p.closed_by_server(Duration::from_millis(1)).await {
                    break;
                }
            }
            t.elapsed()
        }));
    }
    for j in jobs {
        let took = j.await.unwrap();
        assert!(took < Duration::from_secs(5), "a trickler lasted {took:?}");
    }
    assert!(poll::until(|| s.dispatch_budget_held() == (0, 0)).await);
    assert_peak_below("tricklers", base, 64);
    good.finish("tricklers").await;
    s.shutdown().await;
}

/// Peers whose announced messages find no receive budget (4 MiB here,
/// each announcing 3 MiB) cost nothing until they get it: no buffer is made
/// for a frame before its budget is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_buffer_is_made_for_a_frame_before_its_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, _) = server(Policy::stateless_server(), 16, |o| {
        o.dispatch_throttle_bytes = 4 << 20;
    })
    .await;
    let base = reset_peak();
    let virtual_base = rss_kib("VmSize:");
    let good = Good::start(&addrs);
    let sock = addrs.msgr2().unwrap().addr.unwrap();
    let preamble =
        msgr_frames::Preamble::new(msgr_frames::Tag::MESSAGE, [41, 0, 0, 3 << 20], [8; 4], 0)
            .encode();
    let mut peers = Vec::new();
    for i in 0..40u32 {
        let mut p = RawPeer::connect(sock).await.unwrap();
        p.session(10 + i, true).await.unwrap();
        p.s.write_all(&preamble).await.unwrap();
        p.s.write_all(&[0u8; 100]).await.unwrap();
        peers.push(p);
    }
    // One holds the budget; the others wait for it, holding nothing.
    let one = Session::cost(3 << 20) as u64;
    assert!(poll::until(|| s.dispatch_budget_held() == (1, one)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Not even address space: an allocator that maps large buffers
    // lazily would hide such a buffer from the resident size.
    let mapped = rss_kib("VmSize:").saturating_sub(virtual_base) / 1024;
    eprintln!("announcements without budget: +{mapped} MiB mapped");
    assert!(mapped < 32, "{mapped} MiB mapped for frames without budget");
    assert_peak_below("announcements without budget", base, 32);
    drop(peers);
    good.finish("announcements without budget").await;
    s.shutdown().await;
}

/// 300 peers that bounce AUTH_BAD_METHOD (9 requests of a method the
/// server does not have), and 300 that grow the pre-auth transcript: each
/// is cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_bad_method_floods_are_cut_off() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, _) = server(Policy::stateless_server(), 16, |_| {}).await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let sock = addrs.msgr2().unwrap().addr.unwrap();
    let mut jobs = Vec::new();
    for i in 0..600usize {
        jobs.push(tokio::spawn(async move {
            let mut p = RawPeer::connect(sock).await.unwrap();
            p.hello(EntityType::CLIENT).await.unwrap();
            let payload = Bytes::from(vec![1u8; if i % 2 == 0 { 100 } else { 12 << 10 }]);
            for _ in 0..20 {
                let req = msgr_frames::control::AuthRequest {
                    method: 0x7777,
                    preferred_modes: vec![1],
                    auth_payload: payload.clone(),
                };
                if p.control(req.into()).await.is_err() {
                    break;
                }
            }
            p.closed_by_server(Duration::from_secs(5)).await
        }));
    }
    for j in jobs {
        assert!(j.await.unwrap(), "the server cut the flood off");
    }
    assert!(poll::until(|| s.connections().len() <= 1).await);
    // 600 connections at once, the attackers in this process included.
    assert_peak_below("AUTH_BAD_METHOD floods", base, 64);
    good.finish("AUTH_BAD_METHOD floods").await;
    s.shutdown().await;
}

/// 20000 clients connect, start a session with a stateful server and
/// vanish. Each leaves a STANDBY session, which does not count against
/// the connection limit (1000 here: no one is refused) and expires (5 s
/// here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_vanishing_clients_neither_keep_others_out_nor_stay() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, _) = server(Policy::stateful_server(), 16, |o| {
        o.max_connections = 1000;
        o.timeouts.standby = Duration::from_secs(5);
    })
    .await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let sock = addrs.msgr2().unwrap().addr.unwrap();
    let started = Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(64));
    let mut jobs = Vec::new();
    for i in 0..20000u32 {
        let permit = gate.clone().acquire_owned().await.unwrap();
        jobs.push(tokio::spawn(async move {
            let mut p = RawPeer::connect(sock).await.unwrap();
            let ok = p.session(100_000 + i, false).await.is_some();
            drop(p);
            drop(permit);
            ok
        }));
    }
    let mut served = 0;
    for j in jobs {
        served += j.await.unwrap() as u32;
    }
    let flood = started.elapsed();
    let sessions = s.connections().len();
    eprintln!(
        "vanishing clients: 20000 sessions started in {flood:?}; {sessions} held right after, {} live sockets",
        s.live_sockets()
    );
    assert_eq!(served, 20000, "every one got its SERVER_IDENT");
    assert_eq!(s.refused_accepts(), 0, "standby sessions keep no one out");
    assert_peak_below("vanishing clients", base, 256);
    // They expire.
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.connections().len() > 1 {
        assert!(
            Instant::now() < deadline,
            "{} sessions left",
            s.connections().len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    good.finish("vanishing clients").await;
    s.shutdown().await;
}

/// At the limit, a new connection evicts the one idle longest (if idle
/// long enough) instead of being refused. (Lossy clients, as Ceph's
/// clients of OSDs are: an evicted one is reset and comes back when it has
/// something to send. A lossless client would reconnect at once.)
#[tokio::test]
async fn at_the_limit_an_idle_connection_is_evicted_for_a_new_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (s, addrs, _) = server(Policy::stateless_server(), 16, |o| {
        o.max_connections = 4;
        o.evict_idle_after = Duration::from_millis(300);
    })
    .await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut clients = Vec::new();
    for i in 0..5u32 {
        let mut o = Options::new(
            format!("client.{i}").parse().unwrap(),
            PolicySet::new(Policy::lossy_client()),
            Arc::new(NoneProvider),
        );
        o.nonce = 500 + i;
        let m = Messenger::new(Tcp::default(), o, Arc::new(Replies(tx.clone())));
        let conn = m.connect(&addrs, EntityType::OSD);
        let mut msg = Message::new(42, Bytes::from_static(b"x"));
        msg.tid = i as u64;
        conn.send(msg).await;
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert_eq!(got.ok().flatten(), Some(i as u64), "client {i} served");
        clients.push(m);
        if i == 3 {
            // Four idle connections fill the limit; the fifth comes later.
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    }
    assert_eq!(s.refused_accepts(), 0);
    assert_eq!(s.evictions(), 1);
    for m in clients {
        m.shutdown().await;
    }
    s.shutdown().await;
}

/// Holds what it receives (and so its receive budget) until released,
/// and, once `let_go`, what comes after it too; counts what it received.
#[derive(Default)]
struct Holder {
    held: Mutex<Vec<IncomingMessage>>,
    conn: Mutex<Option<Connection>>,
    let_go: AtomicBool,
    received: AtomicU64,
}

impl Dispatcher for Holder {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.received.fetch_add(1, Ordering::Relaxed);
        *self.conn.lock().unwrap() = Some(conn.clone());
        if !self.let_go.load(Ordering::Acquire) {
            self.held.lock().unwrap().push(msg);
        }
    }
}

/// A connection waiting for receive budget stops reading, and only
/// reading: what the server sends meanwhile goes out.
#[tokio::test]
async fn waiting_for_budget_stops_reading_only() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let holder = Arc::new(Holder::default());
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateful_server()),
        Arc::new(NoneProvider),
    );
    o.dispatch_throttle_bytes = 1 << 20;
    let s = Messenger::new(Tcp::default(), o, holder.clone());
    let addrs = s.bind(&"v2:127.0.0.1:0".parse().unwrap()).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut co = Options::new(
        "client.1".parse().unwrap(),
        PolicySet::new(Policy::lossless_client()),
        Arc::new(NoneProvider),
    );
    co.nonce = 1;
    let c = Messenger::new(Tcp::default(), co, Arc::new(Replies(tx)));
    let conn = c.connect(&addrs, EntityType::OSD);
    for tid in 1..=2 {
        let mut m = Message::new(42, Bytes::from(vec![1u8; 800 << 10]));
        m.tid = tid;
        conn.send(m).await;
    }
    // The first is held; the second's preamble found no budget.
    assert!(poll::until(|| holder.held.lock().unwrap().len() == 1).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(holder.held.lock().unwrap().len(), 1);
    let one = Session::cost(800 << 10) as u64;
    assert_eq!(s.dispatch_budget_held(), (1, one));
    // Meanwhile the server writes: its replies reach the client.
    let server_side = holder.conn.lock().unwrap().clone().unwrap();
    for tid in 100..105 {
        let mut m = Message::new(43, Bytes::new());
        m.tid = tid;
        server_side.send_nowait(m);
    }
    for tid in 100..105 {
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert_eq!(got.ok().flatten(), Some(tid), "written while waiting");
    }
    assert_eq!(holder.held.lock().unwrap().len(), 1, "still waiting");
    // Released: the second is read and dispatched.
    holder.held.lock().unwrap().clear();
    assert!(poll::until(|| holder.held.lock().unwrap().len() == 1).await);
    assert_eq!(holder.held.lock().unwrap()[0].tid, 2);
    c.shutdown().await;
    s.shutdown().await;
}

/// A message waiting for receive budget with more messages read behind it
/// (a thousand small ones in one write, an 8 KiB budget): the connection
/// waits for the budget rather than going round its loop for the events
/// queued behind, which never waited and so never saw the budget come
/// back, while its shard did nothing else. Let go, every message is
/// dispatched and the budget returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_waiting_for_budget_with_more_read_behind_it_waits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let budget = 8 << 10;
    let (s, addrs, holder) = holding_server(budget, 1).await;
    let n = 1000;
    let _p = flood(&addrs, 1, n).await;
    // The budget is full: the next message waits.
    let next = Session::cost(100) as u64;
    assert!(poll::until(|| s.dispatch_budget_held().1 + next > budget).await);
    let_go(&s, &holder, n).await;
    s.shutdown().await;
}

/// A stateless server of `shards` shards with a dispatch budget of
/// `budget` bytes, whose user holds every message until let go.
async fn holding_server(
    budget: u64,
    shards: usize,
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Holder>) {
    let holder = Arc::new(Holder::default());
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    o.nonce = 0;
    o.shards = shards;
    o.dispatch_throttle_bytes = budget;
    let s = Messenger::new(Tcp::default(), o, holder.clone());
    let addrs = s.bind(&"v2:127.0.0.1:0".parse().unwrap()).await.unwrap();
    (s, addrs, holder)
}

/// A raw peer (address nonce `nonce`) that wrote `n` messages of 100
/// bytes in one go.
async fn flood(addrs: &EntityAddrvec, nonce: u32, n: u64) -> RawPeer {
    let mut p = RawPeer::connect(addrs.msgr2().unwrap().addr.unwrap())
        .await
        .unwrap();
    p.session(nonce, true).await.unwrap();
    let data = Bytes::from(vec![7u8; 100]);
    let frames = raw_peer::messages(&mut p.enc, 1, n, 42, &data).unwrap();
    p.s.write_all(&frames).await.unwrap();
    p
}

/// The user lets go of what it holds: all `n` messages are dispatched and
/// the budget returns.
async fn let_go(s: &Messenger<Tcp>, holder: &Holder, n: u64) {
    holder.let_go.store(true, Ordering::Release);
    holder.held.lock().unwrap().clear();
    let dispatched = || holder.received.load(Ordering::Relaxed) == n;
    assert!(
        poll::until(|| dispatched() && s.dispatch_budget_held() == (0, 0)).await,
        "{} of {n} dispatched, budget held {:?}",
        holder.received.load(Ordering::Relaxed),
        s.dispatch_budget_held()
    );
}

/// Two shards, four connections flooding a 16 KiB dispatch budget while
/// the user holds every message: the shards take the budget through
/// leases of their own, and still never more is held than the budget, to
/// the byte (what the user holds is what the throttle says is held). Let
/// go, every message is dispatched and the budget returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_hold_no_more_than_the_dispatch_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let budget = 16 << 10;
    let (s, addrs, holder) = holding_server(budget, 2).await;
    let (conns, n) = (4, 200);
    let mut peers = Vec::new();
    for nonce in 1..=conns {
        peers.push(flood(&addrs, nonce, n).await);
    }
    let cost = Session::cost(100) as u64;
    let most = budget / cost;
    assert!(poll::until(|| holder.held.lock().unwrap().len() as u64 >= most).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = holder.held.lock().unwrap().len() as u64;
    assert_eq!(held, most, "held past the budget");
    assert_eq!(s.dispatch_budget_held(), (most, most * cost));
    let_go(&s, &holder, u64::from(conns) * n).await;
    drop(peers);
    s.shutdown().await;
}

/// What a message counts for beyond its payload (Session::cost).
const OVERHEAD: usize = Session::MESSAGE_OVERHEAD;

/// Two tests of `$body(wire)`: over msgr2 (`$v2`) and msgr1 (`$v1`).
macro_rules! over_both_wires {
    ($v2:ident, $v1:ident, $body:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $v2() {
            $body(Wire::V2).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $v1() {
            $body(Wire::V1).await;
        }
    };
}

/// The protocol a raw peer speaks, and the server listens for.
#[derive(Clone, Copy, Debug)]
enum Wire {
    V1,
    V2,
}

impl Wire {
    /// The address a server binds for it.
    fn local(self) -> &'static str {
        match self {
            Wire::V1 => "v1:127.0.0.1:0",
            Wire::V2 => "v2:127.0.0.1:0",
        }
    }
}

/// Frames `n` empty messages of a type, numbered from a sequence number.
type Frames = Box<dyn FnMut(u64, u64, u16) -> std::io::Result<Vec<u8>> + Send>;

/// A raw peer's open session (auth none), its socket split: a flood writes
/// one half while the test reads the other, or never does.
struct Raw {
    read: OwnedReadHalf,
    write: OwnedWriteHalf,
    frames: Frames,
}

impl Raw {
    /// A session with the server at `addrs` over `wire`, as the client of
    /// address nonce `nonce`.
    async fn open(addrs: &EntityAddrvec, wire: Wire, nonce: u32, lossy: bool) -> Raw {
        match wire {
            Wire::V2 => {
                let sock = addrs.msgr2().unwrap().addr.unwrap();
                let mut p = RawPeer::connect(sock).await.unwrap();
                p.session(nonce, lossy).await.expect("a READY session");
                let RawPeer { s, mut enc, .. } = p;
                let (read, write) = s.into_split();
                let frames: Frames = Box::new(move |first, n, t| {
                    raw_peer::messages(&mut enc, first, n, t, &Bytes::new())
                });
                Raw {
                    read,
                    write,
                    frames,
                }
            }
            Wire::V1 => {
                let sock = addrs.legacy().unwrap().addr.unwrap();
                let me = format!("v1:127.0.0.1:0/{nonce}").parse().unwrap();
                let mut p = raw_v1::RawV1::hello(sock, me).await.unwrap();
                let mut c = raw_v1::connect(EntityType::CLIENT, 1, 0);
                if lossy {
                    c.flags = msgr_frames::v1::FLAG_LOSSY;
                }
                p.connect(c, None).await.expect("an open msgr1 session");
                let (s, msg_auth) = p.into_socket();
                let (read, write) = s.into_split();
                // Anonymous: the headers name a client, as the CONNECT did.
                let src = format!("client.{nonce}").parse().unwrap();
                let frames: Frames = Box::new(move |first, n, t| {
                    Ok(raw_v1::empty_messages(src, t, first, n, msg_auth))
                });
                Raw {
                    read,
                    write,
                    frames,
                }
            }
        }
    }
}

/// Reads and drops what the server sends on `read` until it closes the
/// connection; the bytes read.
fn drain(mut read: OwnedReadHalf) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 << 10];
        let mut n = 0u64;
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return n,
                Ok(k) => n = n.saturating_add(k as u64),
            }
        }
    })
}

/// Empty messages written by a task of their own, 1024 to a write,
/// acknowledging nothing: until `max` are written, the test stops it, or a
/// write fails (the server closed the connection).
struct Flood {
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// The write half when it ends (kept open: dropped, it would end the
    /// session), or the error that ended it.
    task: tokio::task::JoinHandle<std::io::Result<OwnedWriteHalf>>,
}

impl Flood {
    fn start(mut write: OwnedWriteHalf, mut frames: Frames, msg_type: u16, max: u64) -> Flood {
        let written = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopped) = (written.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut next = 1u64;
            while next <= max && !stopped.load(Ordering::Acquire) {
                let n = 1024.min(max - next + 1);
                let buf = frames(next, n, msg_type)?;
                write.write_all(&buf).await?;
                next += n;
                count.store(next - 1, Ordering::Release);
            }
            Ok(write)
        });
        Flood {
            written,
            stop,
            task,
        }
    }

    /// Whether the writes stall (nothing more written for 500 ms while the
    /// task waits on its socket: the server stopped reading) within 30 s;
    /// false if they end first (all written, or the connection closed).
    /// `watch` runs every 10 ms meanwhile.
    async fn stalls(&self, mut watch: impl FnMut()) -> bool {
        let began = Instant::now();
        let (mut last, mut since) = (u64::MAX, Instant::now());
        while began.elapsed() < Duration::from_secs(30) {
            watch();
            if self.task.is_finished() {
                return false;
            }
            let n = self.written.load(Ordering::Acquire);
            if n != last {
                (last, since) = (n, Instant::now());
            } else if since.elapsed() >= Duration::from_millis(500) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Whether the writes end (all written, or the connection closed)
    /// within 30 s. `watch` runs every 10 ms meanwhile.
    async fn ends(&self, mut watch: impl FnMut()) -> bool {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(30) {
            watch();
            if self.task.is_finished() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Stops after the write under way (the server must read it for that
    /// to end): how many were written, and how the writes ended.
    async fn finish(self) -> (u64, std::io::Result<OwnedWriteHalf>) {
        self.stop.store(true, Ordering::Release);
        let ended = tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the flood's last write ended")
            .unwrap();
        (self.written.load(Ordering::Acquire), ended)
    }
}

/// The flood tests' servers' queue limits, 4 and 8 MiB: more than the
/// driver's 512 KiB output window, so that only a session queue that counts
/// its empty messages makes the server stop reading.
fn flood_limits(o: &mut Options) {
    o.max_queued_bytes = 4 << 20;
    o.max_queued_bytes_hard = HARD;
}
const HARD: usize = 8 << 20;

/// Asserts that no connection of `s` holds more queued messages than its
/// hard limit lets it count, at what they cost or by their number.
fn queued_within_the_hard_limit(s: &Messenger<Tcp>) {
    for c in s.connections() {
        let (n, bytes) = c.queued();
        assert!(bytes <= HARD + OVERHEAD, "{bytes} bytes queued");
        assert!(
            n.saturating_mul(OVERHEAD) <= HARD + OVERHEAD,
            "{n} messages queued, each costing {OVERHEAD} bytes or more, held as {bytes} bytes"
        );
    }
}

/// Whether no connection of `s` has anything queued.
fn nothing_queued(s: &Messenger<Tcp>) -> bool {
    s.connections().iter().all(|c| c.queued() == (0, 0))
}

/// A raw peer floods empty MPings and never reads the empty replies:
/// counted at what they cost, the replies the server queues reach its soft
/// limit and it stops reading (the peer's writes stall), never holding
/// more than its hard limit (plus one message) counted, or more messages
/// than that many bytes pay for. Once the peer reads, every MPing is
/// answered and the counts return to zero. A peer whose request makes
/// empty replies pass the hard limit at once (AMPLIFY) is marked down. A
/// well-behaved client is served throughout.
async fn empty_replies_to_a_peer_that_never_reads(wire: Wire) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("empty messages, never read, {wire:?}");
    let (s, addrs, echo) =
        server_at(wire, Policy::stateless_server(), 0, 100_000, flood_limits).await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let max = 2_000_000;
    let raw = Raw::open(&addrs, wire, 1, true).await;
    let flood = Flood::start(raw.write, raw.frames, raw_peer::MSG_PING, max);
    // The queue fills to the soft limit, less what the driver holds
    // framed (its output window), and stays there.
    let full = || {
        queued_within_the_hard_limit(&s);
        s.connections().iter().any(|c| c.queued().1 >= 3 << 20)
    };
    assert!(
        poll::until(full).await,
        "{what}: the queue never filled: {:?}",
        s.connections()
            .iter()
            .map(|c| c.queued())
            .collect::<Vec<_>>()
    );
    assert!(
        flood.stalls(|| queued_within_the_hard_limit(&s)).await,
        "{what}: the server never stopped reading ({} written)",
        flood.written.load(Ordering::Acquire)
    );
    // Stopped reading, not closed.
    assert!(!flood.task.is_finished(), "{what}: the writes ended");
    assert_peak_below(&what, base, 64);

    // The peer reads: everything it sent is answered, and what was
    // counted is released.
    let reader = drain(raw.read);
    let (written, ended) = flood.finish().await;
    let write = ended.expect("the session is still open");
    eprintln!("{what}: {written} MPings written before the writes stalled");
    assert!(written < max);
    let answered = || {
        queued_within_the_hard_limit(&s);
        echo.pings.load(Ordering::Relaxed) == written && nothing_queued(&s)
    };
    assert!(
        poll::until(answered).await,
        "{what}: {} of {written} answered, queued {:?}",
        echo.pings.load(Ordering::Relaxed),
        s.connections()
            .iter()
            .map(|c| c.queued())
            .collect::<Vec<_>>()
    );
    drop((write, reader));

    // One request whose empty replies pass the hard limit: marked down.
    let mut amp = Raw::open(&addrs, wire, 2, true).await;
    let request = (amp.frames)(1, 1, AMPLIFY).unwrap();
    amp.write.write_all(&request).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(10), drain(amp.read)).await;
    assert!(closed.is_ok(), "{what}: the amplifier was not marked down");
    good.finish(&what).await;
    assert!(poll::until(|| s.dispatch_budget_held() == (0, 0) && nothing_queued(&s)).await);
    s.shutdown().await;
}

over_both_wires!(
    empty_replies_to_a_peer_that_never_reads_count_what_they_cost_msgr2,
    empty_replies_to_a_peer_that_never_reads_count_what_they_cost_msgr1,
    empty_replies_to_a_peer_that_never_reads
);

/// A raw peer floods empty MPings and never reads: once the server stops
/// reading it (the soft limit) and it takes nothing for Timeouts::unread
/// (2 s here), it is marked down and what was held for it let go. A
/// well-behaved client is served throughout.
async fn a_peer_that_never_reads_is_marked_down_when_it_takes_nothing(wire: Wire) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("empty messages, never read, {wire:?}, unread timeout");
    let (s, addrs, _) = server_at(wire, Policy::stateless_server(), 0, 1, |o| {
        flood_limits(o);
        o.timeouts.unread = Duration::from_secs(2);
    })
    .await;
    let good = Good::start(&addrs);
    let raw = Raw::open(&addrs, wire, 1, true).await;
    let flood = Flood::start(raw.write, raw.frames, raw_peer::MSG_PING, 2_000_000);
    assert!(
        flood.ends(|| queued_within_the_hard_limit(&s)).await,
        "{what}: the flooder was not marked down ({} written)",
        flood.written.load(Ordering::Acquire)
    );
    let (written, ended) = flood.finish().await;
    assert!(
        ended.is_err(),
        "{what}: the writes ended by a closed socket"
    );
    eprintln!("{what}: marked down after {written} MPings");
    let mut reader = raw.read;
    let mut sink = vec![0u8; 1 << 16];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while reader.read(&mut sink).await.is_ok_and(|n| n > 0) {}
    });
    assert!(closed.await.is_ok(), "{what}: the socket stayed open");
    assert!(
        poll::until(|| nothing_queued(&s)).await,
        "{what}: still held"
    );
    good.finish(&what).await;
    s.shutdown().await;
}

over_both_wires!(
    a_peer_that_never_reads_is_marked_down_when_it_takes_nothing_msgr2,
    a_peer_that_never_reads_is_marked_down_when_it_takes_nothing_msgr1,
    a_peer_that_never_reads_is_marked_down_when_it_takes_nothing
);

/// A lossless peer floods empty MPings and reads the empty replies but
/// never acknowledges them: the server keeps each for replay, counted at
/// what it costs, and marks the peer down once they pass its hard limit,
/// having kept no more messages than that many bytes pay for. A
/// well-behaved client is served throughout.
async fn a_lossless_peer_that_never_acks(wire: Wire) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("empty messages, never acknowledged, {wire:?}");
    let (s, addrs, _) = server_at(wire, Policy::stateful_server(), 0, 1, flood_limits).await;
    let base = reset_peak();
    let good = Good::start(&addrs);
    let max = 1_000_000;
    let raw = Raw::open(&addrs, wire, 3, false).await;
    let reader = drain(raw.read);
    let flood = Flood::start(raw.write, raw.frames, raw_peer::MSG_PING, max);
    // Nothing the server sent to the raw peer was acknowledged: all it
    // sent is kept (the good client's acknowledged replies are few).
    let unacked_within_the_hard_limit = || {
        for c in s.connections() {
            let sent = c.stats().messages_out;
            assert!(
                usize::try_from(sent).unwrap().saturating_mul(OVERHEAD) <= HARD + OVERHEAD,
                "{sent} messages sent and kept, each costing {OVERHEAD} bytes or more"
            );
        }
    };
    assert!(
        flood.ends(unacked_within_the_hard_limit).await,
        "{what}: the flood went on"
    );
    let (written, ended) = flood.finish().await;
    eprintln!("{what}: {written} MPings written before the server closed the connection");
    assert!(
        ended.is_err(),
        "{what}: all {written} written, never closed"
    );
    let closed = tokio::time::timeout(Duration::from_secs(10), reader).await;
    assert!(closed.is_ok(), "{what}: the connection stayed open");
    assert_peak_below(&what, base, 64);
    good.finish(&what).await;
    assert!(poll::until(|| s.connections().len() <= 1 && nothing_queued(&s)).await);
    s.shutdown().await;
}

over_both_wires!(
    a_lossless_peer_that_never_acks_empty_messages_is_marked_down_msgr2,
    a_lossless_peer_that_never_acks_empty_messages_is_marked_down_msgr1,
    a_lossless_peer_that_never_acks
);

/// A raw peer floods empty MPings at a server whose dispatcher holds what
/// it receives: each takes receive budget for what it costs, so the
/// dispatch throttle (1 MiB here) fills, the server stops reading, and no
/// more messages are held than its bytes pay for. Let go, every message
/// is dispatched and the budget returns to zero.
async fn empty_messages_waiting_for_dispatch(wire: Wire) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("empty messages held by the dispatcher, {wire:?}");
    let budget: u64 = 1 << 20;
    let holder = Arc::new(Holder::default());
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    o.nonce = 0;
    o.dispatch_throttle_bytes = budget;
    let s = Messenger::new(Tcp::default(), o, holder.clone());
    let addrs = s.bind(&wire.local().parse().unwrap()).await.unwrap();
    let base = reset_peak();
    let max = 1_000_000;
    let raw = Raw::open(&addrs, wire, 4, true).await;
    let flood = Flood::start(raw.write, raw.frames, raw_peer::MSG_PING, max);
    let within_the_budget = || {
        let (n, bytes) = s.dispatch_budget_held();
        assert!(bytes <= budget, "{bytes} bytes of receive budget held");
        assert!(
            n.saturating_mul(OVERHEAD as u64) <= budget,
            "{n} messages held, each costing {OVERHEAD} bytes or more, taking {bytes} bytes of budget"
        );
    };
    // Full: one more message would not fit.
    let full = || {
        within_the_budget();
        s.dispatch_budget_held().1 + OVERHEAD as u64 > budget
    };
    assert!(poll::until(full).await, "{what}: the budget never filled");
    assert!(
        flood.stalls(within_the_budget).await,
        "{what}: the server never stopped reading"
    );
    assert_peak_below(&what, base, 64);

    // Let go: the rest is read and dispatched, and the budget returns.
    holder.let_go.store(true, Ordering::Release);
    holder.held.lock().unwrap().clear();
    let (written, ended) = flood.finish().await;
    let write = ended.expect("the session is still open");
    eprintln!("{what}: {written} MPings written before the writes stalled");
    let dispatched = || {
        holder.received.load(Ordering::Relaxed) == written
            && s.dispatch_budget_held() == (0, 0)
            && nothing_queued(&s)
    };
    assert!(
        poll::until(dispatched).await,
        "{what}: {} of {written} dispatched, budget held {:?}",
        holder.received.load(Ordering::Relaxed),
        s.dispatch_budget_held()
    );
    drop((write, raw.read));
    s.shutdown().await;
}

over_both_wires!(
    empty_messages_waiting_for_dispatch_take_what_they_cost_msgr2,
    empty_messages_waiting_for_dispatch_take_what_they_cost_msgr1,
    empty_messages_waiting_for_dispatch
);

/// Not a test: the attack of issue 33, against a server of the caller's
/// (to measure `msgr serve`'s peak resident memory, say). MSGR_FLOOD names
/// it (`v2:IP:PORT` or `v1:IP:PORT`); MSGR_FLOOD_PEERS peers (2) flood it
/// with empty MPings for MSGR_FLOOD_SECS seconds (20), never reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a tool: floods the server MSGR_FLOOD names"]
async fn flood_a_server() {
    let env = |k: &str, default: u64| {
        std::env::var(k)
            .ok()
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let target = std::env::var("MSGR_FLOOD").expect("MSGR_FLOOD=v2:IP:PORT");
    let addr: msgr_encoding::EntityAddr = target.parse().unwrap();
    let wire = match addr.kind {
        msgr_encoding::EntityAddrType::LEGACY => Wire::V1,
        _ => Wire::V2,
    };
    let addrs = EntityAddrvec::single(addr);
    let secs = Duration::from_secs(env("MSGR_FLOOD_SECS", 20));
    let mut floods = Vec::new();
    for i in 0..env("MSGR_FLOOD_PEERS", 2) {
        let raw = Raw::open(&addrs, wire, 1000 + i as u32, true).await;
        let flood = Flood::start(raw.write, raw.frames, raw_peer::MSG_PING, u64::MAX);
        floods.push((flood, raw.read));
    }
    tokio::time::sleep(secs).await;
    for (i, (flood, _read)) in floods.iter().enumerate() {
        let written = flood.written.load(Ordering::Acquire);
        let how = match flood.task.is_finished() {
            true => "ended (closed by the server)",
            false => "still writing or stalled",
        };
        eprintln!("peer {i}: {written} MPings written in {secs:?}; {how}");
    }
    for (flood, _) in floods {
        flood.task.abort();
    }
}
