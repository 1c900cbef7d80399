//! Memory a peer can make a server hold is bounded, over TCP: a peer that
//! never reads our replies, peers that trickle frames, a flood of
//! AUTH_BAD_METHOD rounds, 20000 clients that connect and vanish under a
//! stateful server. Each runs beside a well-behaved client that is served
//! throughout, and each has its peak resident memory measured (printed)
//! and bounded. Also: the connection limit counts live sockets and evicts
//! idle ones before refusing, and a connection waiting for receive budget
//! still writes.
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
use msgr_protocol::PolicySet;
use msgr_transport::tcp::Tcp;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

#[path = "support/poll.rs"]
mod poll;
#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::RawPeer;
#[path = "support/rss.rs"]
mod rss;
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

/// Echoes every message with a reply of `reply_len` bytes; counts them.
struct Echo {
    reply_len: usize,
    served: AtomicU64,
}

impl Dispatcher for Echo {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.served.fetch_add(1, Ordering::Relaxed);
        let mut reply = Message::new(43, Bytes::from(vec![0u8; self.reply_len]));
        reply.tid = msg.tid;
        conn.send_nowait(reply);
    }
}

async fn server(
    policy: Policy,
    reply_len: usize,
    tune: impl FnOnce(&mut Options),
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Echo>) {
    let echo = Arc::new(Echo {
        reply_len,
        served: AtomicU64::new(0),
    });
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(policy),
        Arc::new(NoneProvider),
    );
    // The raw peers reach it at nonce 0.
    o.nonce = 0;
    tune(&mut o);
    let m = Messenger::new(Tcp::default(), o, echo.clone());
    let addrs = m.bind(&"v2:127.0.0.1:0".parse().unwrap()).await.unwrap();
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
    assert!(poll::until(|| s.dispatch_budget_held() == (1, 3 << 20)).await);
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
    assert_eq!(s.dispatch_budget_held(), (1, 800 << 10));
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
    let holder = Arc::new(Holder::default());
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    o.nonce = 0;
    o.dispatch_throttle_bytes = budget;
    let s = Messenger::new(Tcp::default(), o, holder.clone());
    let addrs = s.bind(&"v2:127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut p = RawPeer::connect(addrs.msgr2().unwrap().addr.unwrap())
        .await
        .unwrap();
    p.session(1, true).await.unwrap();
    let n = 1000;
    let data = Bytes::from(vec![7u8; 100]);
    let frames = raw_peer::messages(&mut p.enc, 1, n, 42, &data).unwrap();
    p.s.write_all(&frames).await.unwrap();
    // The budget is full: the next message waits.
    assert!(poll::until(|| s.dispatch_budget_held().1 + 100 > budget).await);
    holder.let_go.store(true, Ordering::Release);
    holder.held.lock().unwrap().clear();
    let dispatched = || holder.received.load(Ordering::Relaxed) == n;
    assert!(
        poll::until(|| dispatched() && s.dispatch_budget_held() == (0, 0)).await,
        "{} of {n} dispatched, budget held {:?}",
        holder.received.load(Ordering::Relaxed),
        s.dispatch_budget_held()
    );
    s.shutdown().await;
}
