//! `msgr bench`: MOSDOp writes of `size` bytes, `depth` in flight on each
//! of `conns` connections, replies awaited; against a server given by
//! `--connect`, or one started in this process on loopback. With
//! `--verify`, every reply is checked (tid and the crc32c of the data it
//! answers) and lost, duplicated and reordered replies are counted. With
//! `--raw`, the same pattern over plain TCP runs first as the baseline.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messages::{MOSDOp, MOSDOpReply, TypedMessage};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage};

use crate::common::{cpu_time, messenger, Latencies, NetOpts};
use crate::json::Object;
use crate::workload::{data_checksum, Progress, OP_FLAG_CHECKSUM};

#[derive(Debug, Clone)]
pub struct BenchOpts {
    pub connect: Option<EntityAddrvec>,
    pub size: usize,
    pub depth: usize,
    pub conns: usize,
    pub duration: Option<Duration>,
    pub count: Option<u64>,
    pub net: NetOpts,
    /// Policy of the in-process server.
    pub server_net: NetOpts,
    /// The client's entity name (default client.N per connection); with
    /// a number, connection i takes number N + i.
    pub name: Option<EntityName>,
    /// First run the same bench in crc mode (same auth, same server), and
    /// report secure against it.
    pub vs_crc: bool,
    pub verify: bool,
    pub raw: bool,
    /// Only the raw TCP pattern: against `connect` (a `msgr serve --raw`)
    /// when given, else against a raw server in this process.
    pub raw_only: bool,
    pub json: bool,
    /// Run the in-process server's messenger (one shard) on tokio's
    /// multi-threaded runtime with this many workers, instead of on its
    /// own shards (the comparison BENCHMARKS.md makes).
    pub server_workers: Option<usize>,
    /// Refill each connection's window from a thread of its own instead of
    /// from the dispatcher (the cost of a send from a foreign thread).
    pub foreign_sends: bool,
    /// The process id of the server at `connect`: its CPU time over the
    /// steady part of the run is reported (see [`Steady`]).
    pub server_pid: Option<u32>,
    /// How long to wait for replies that stopped coming before giving up
    /// on them (default 20 s, 60 s with injected socket failures): a run
    /// through a longer partition waits longer.
    pub give_up: Option<Duration>,
    /// Beside the stream, on the first connection: a small request every
    /// `interval` at `priority`, whose latency is reported apart (how long
    /// a small message waits behind large ones on the same connection).
    pub probe: Option<Probe>,
}

/// `--probe`: small requests sent beside the stream, on its connection.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub interval: Duration,
    /// The message priority (Ceph's CEPH_MSG_PRIO_*: 127 default, 196
    /// high); the stream's requests go at the default.
    pub priority: u16,
}

impl Probe {
    /// A probe's payload: small enough that its own transmission is
    /// nothing beside a large request's.
    const SIZE: usize = 64;
    /// Probes' tids have this bit set: the stream's count up from 1.
    const TID_BIT: u64 = 1 << 62;
}

/// The outcome of one run.
#[derive(Debug, Default)]
pub struct BenchResult {
    pub completed: u64,
    pub elapsed: Duration,
    pub size: usize,
    pub latencies: Latencies,
    pub reconnects: u64,
    /// Connect to READY (banner, auth, idents) of the first connection.
    pub handshake: Option<Duration>,
    /// Why the run stopped early (an authentication refusal).
    pub error: Option<String>,
    /// The first connection's mode, msgr2 revision and compression, as
    /// negotiated.
    pub session: Option<(String, bool, Option<String>)>,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub corrupted: u64,
    /// CPU time of the client side.
    pub cpu: Duration,
    /// CPU time of the in-process server's thread, when there is one.
    pub server_cpu: Option<Duration>,
    /// The steady part of a timed run, when it had one.
    pub steady: Option<Steady>,
    /// What the client messengers' perf counters say of the run.
    pub counted: Option<Counted>,
    /// Replies each connection had (msgr runs): how fairly a shared link
    /// or server served them.
    pub per_conn: Vec<u64>,
    /// With `--probe`: the probes' latencies, and how many went
    /// unanswered.
    pub probes: Option<(Latencies, u64)>,
}

/// A run as the client messengers' perf counters count it (the
/// `AsyncMessenger::Worker-N` and `msgr-sessions` loggers that `perf
/// dump` shows), summed over the connections' messengers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counted {
    pub sent: u64,
    pub received: u64,
    /// Bytes on the wire, both ways: frames, acks, keepalives, handshakes.
    pub wire_bytes: u64,
    pub reconnects: u64,
    pub faults: u64,
    /// Handshakes to READY, and their mean time.
    pub handshakes: u64,
    pub handshake_mean: Duration,
    /// Sampled sends, and their mean wait in the send queue.
    pub queue_samples: u64,
    pub queue_mean: Duration,
}

impl Counted {
    /// Reads the counters of `perf` (a JSON `perf dump`).
    fn read(perf: &msgr_admin::perf::Collection) -> Counted {
        let dump = perf.dump(None, None);
        let u =
            |v: Option<&crate::json::Value>| v.and_then(crate::json::Value::as_u64).unwrap_or(0);
        let workers: Vec<&crate::json::Value> = match &dump {
            crate::json::Value::Object(sections) => sections
                .iter()
                .filter(|(name, _)| name.starts_with("AsyncMessenger::Worker-"))
                .map(|(_, v)| v)
                .collect(),
            _ => Vec::new(),
        };
        let sum = |path: &str| workers.iter().map(|w| u(w.pointer(path))).sum::<u64>();
        // Averages: (count, sum of seconds as S.NNNNNNNNN).
        let secs =
            |v: Option<&crate::json::Value>| v.and_then(crate::json::Value::as_f64).unwrap_or(0.0);
        let mean = |count: u64, total: f64| Duration::from_secs_f64(total / count.max(1) as f64);
        let queue_samples = sum("/msgr_send_messages_queue_lat/avgcount");
        let queue_total: f64 = workers
            .iter()
            .map(|w| secs(w.pointer("/msgr_send_messages_queue_lat/sum")))
            .sum();
        let session = |c: &str| u(dump.get("msgr-sessions").and_then(|s| s.get(c)));
        let handshakes = u(dump.pointer("/msgr-sessions/msgr_handshake_lat/avgcount"));
        let handshake_total = secs(dump.pointer("/msgr-sessions/msgr_handshake_lat/sum"));
        Counted {
            sent: sum("/msgr_send_messages"),
            received: sum("/msgr_recv_messages"),
            wire_bytes: sum("/msgr_send_bytes") + sum("/msgr_recv_bytes"),
            reconnects: session("msgr_connection_reconnects"),
            faults: session("msgr_connection_faults"),
            handshakes,
            handshake_mean: mean(handshakes, handshake_total),
            queue_samples,
            queue_mean: mean(queue_samples, queue_total),
        }
    }

    /// Two runs' counts together (means weighted by their counts).
    fn merge(self, o: Counted) -> Counted {
        let mean = |a: Duration, n: u64, b: Duration, m: u64| {
            let total = a.as_secs_f64() * n as f64 + b.as_secs_f64() * m as f64;
            Duration::from_secs_f64(total / (n + m).max(1) as f64)
        };
        Counted {
            sent: self.sent + o.sent,
            received: self.received + o.received,
            wire_bytes: self.wire_bytes + o.wire_bytes,
            reconnects: self.reconnects + o.reconnects,
            faults: self.faults + o.faults,
            handshakes: self.handshakes + o.handshakes,
            handshake_mean: mean(
                self.handshake_mean,
                self.handshakes,
                o.handshake_mean,
                o.handshakes,
            ),
            queue_samples: self.queue_samples + o.queue_samples,
            queue_mean: mean(
                self.queue_mean,
                self.queue_samples,
                o.queue_mean,
                o.queue_samples,
            ),
        }
    }

    fn json(&self, completed: u64) -> crate::json::Value {
        let mut o = Object::new();
        o.set("sent", self.sent)
            .set("received", self.received)
            .set("wire_bytes", self.wire_bytes)
            .set(
                "wire_bytes_per_msg",
                self.wire_bytes as f64 / completed.max(1) as f64,
            )
            .set("reconnects", self.reconnects)
            .set("faults", self.faults)
            .set("handshakes", self.handshakes)
            .set("handshake_mean_us", self.handshake_mean.as_secs_f64() * 1e6)
            .set("send_queue_samples", self.queue_samples)
            .set("send_queue_mean_us", self.queue_mean.as_secs_f64() * 1e6);
        o.into_value()
    }
}

/// The steady part of a timed run: from a second after every connection
/// had its first reply to a second before the end. Handshakes and the ramp
/// up and down are left out, so per-message costs at many connections are
/// not the handshakes'.
#[derive(Debug, Clone, Copy)]
pub struct Steady {
    pub msgs: u64,
    pub elapsed: Duration,
    pub client_cpu: Duration,
    /// The server's (the whole process's, given its pid).
    pub server_cpu: Option<Duration>,
}

impl Steady {
    fn json(&self) -> crate::json::Value {
        let per_msg = |d: Duration| d.as_secs_f64() * 1e6 / self.msgs.max(1) as f64;
        let mut o = Object::new();
        o.set("msgs", self.msgs)
            .set("seconds", self.elapsed.as_secs_f64())
            .set(
                "msgs_per_sec",
                self.msgs as f64 / self.elapsed.as_secs_f64().max(1e-9),
            )
            .set("client_cpu_us_per_msg", per_msg(self.client_cpu));
        if let Some(s) = self.server_cpu {
            o.set("server_cpu_us_per_msg", per_msg(s));
        }
        o.into_value()
    }
}

/// Measures the steady part of a run that ends at `until` (see
/// [`Steady`]); None if the run has none (connections never all up, or
/// too short).
async fn sample_steady(
    progress: Arc<Progress>,
    conns: u64,
    until: Instant,
    server_pid: Option<u32>,
) -> Option<Steady> {
    const MARGIN: Duration = Duration::from_secs(1);
    let server_cpu = || server_pid.map(|p| crate::common::stat_cpu(&format!("/proc/{p}/stat")));
    while progress.up.load(Ordering::Relaxed) < conns {
        if Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(MARGIN).await;
    let end = until.checked_sub(MARGIN)?;
    let t0 = Instant::now();
    if t0 + MARGIN > end {
        return None;
    }
    let (n0, c0, s0) = (
        progress.completed.load(Ordering::Relaxed),
        cpu_time(),
        server_cpu(),
    );
    tokio::time::sleep_until(end.into()).await;
    let (n1, c1, s1) = (
        progress.completed.load(Ordering::Relaxed),
        cpu_time(),
        server_cpu(),
    );
    Some(Steady {
        msgs: n1.saturating_sub(n0),
        elapsed: t0.elapsed(),
        client_cpu: c1.saturating_sub(c0),
        server_cpu: s0.zip(s1).map(|(a, b)| b.saturating_sub(a)),
    })
}

impl BenchResult {
    fn cpu_us(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1e6 / self.completed.max(1) as f64
    }

    pub fn msgs_per_sec(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn mb_per_sec(&self) -> f64 {
        self.msgs_per_sec() * self.size as f64 / 1e6
    }

    /// Jain's fairness index over the connections' replies: 1 when each
    /// had the same, 1/n when one had them all. None for one connection.
    pub fn jain_index(&self) -> Option<f64> {
        if self.per_conn.len() < 2 {
            return None;
        }
        let sum: f64 = self.per_conn.iter().map(|&x| x as f64).sum();
        let squares: f64 = self.per_conn.iter().map(|&x| (x as f64) * (x as f64)).sum();
        Some(sum * sum / (self.per_conn.len() as f64 * squares.max(1.0)))
    }

    fn json(&mut self, o: &mut Object, verify: bool) {
        o.set("msgs", self.completed)
            .set("seconds", self.elapsed.as_secs_f64())
            .set("msgs_per_sec", self.msgs_per_sec())
            .set("mb_per_sec", self.mb_per_sec())
            .set("lat_p50_us", self.latencies.percentile(50.0))
            .set("lat_p99_us", self.latencies.percentile(99.0))
            .set("reconnects", self.reconnects)
            .set("client_cpu_seconds", self.cpu.as_secs_f64())
            .set("client_cpu_us_per_msg", self.cpu_us(self.cpu));
        if let Some(j) = self.jain_index() {
            o.set("jain_index", j)
                .set(
                    "per_conn_min",
                    self.per_conn.iter().copied().min().unwrap_or(0),
                )
                .set(
                    "per_conn_max",
                    self.per_conn.iter().copied().max().unwrap_or(0),
                );
        }
        if let Some(s) = self.server_cpu {
            o.set("server_cpu_seconds", s.as_secs_f64())
                .set("server_cpu_us_per_msg", self.cpu_us(s));
        }
        if let Some(h) = self.handshake {
            o.set("handshake_us", h.as_micros() as u64);
        }
        if let Some((mode, rev1, compression)) = &self.session {
            o.set("con_mode", mode.as_str())
                .set("msgr2_rev1", *rev1)
                .set("compression", compression.clone());
        }
        if let Some(st) = &self.steady {
            o.set("steady", st.json());
        }
        if let Some(c) = &self.counted {
            o.set("counters", c.json(self.completed));
        }
        // Requests never answered are counted whether or not we verify.
        o.set("lost", self.lost);
        if let Some((l, lost)) = &mut self.probes {
            o.set("probe_msgs", l.len())
                .set("probe_p50_us", l.percentile(50.0))
                .set("probe_p99_us", l.percentile(99.0))
                .set("probe_max_us", l.percentile(100.0))
                .set("probe_lost", *lost);
        }
        if verify {
            o.set("duplicated", self.duplicated)
                .set("reordered", self.reordered)
                .set("corrupted", self.corrupted);
        }
    }
}

/// One connection's request loop, driven from its dispatcher: each reply
/// is accounted for and immediately replaced by the next request, on the
/// connection's own task, so requests go out in the same batch as the
/// replies that freed their slots.
struct Loop {
    opts: Arc<BenchOpts>,
    /// When the connection was asked for, and when it became READY.
    started: Instant,
    connected_at: std::sync::OnceLock<Instant>,
    quota: Option<u64>,
    until: Option<Instant>,
    base: Bytes,
    base_sum: u64,
    progress: Arc<Progress>,
    state: Mutex<LoopState>,
    done: tokio::sync::Notify,
    /// With `--foreign-sends`: requests go out from this thread's sender
    /// (another thread than the connection's), not from the dispatcher.
    foreign: Mutex<Option<std::sync::mpsc::Sender<msgr_protocol::Message>>>,
}

/// Hashes tids (distinct, sequential u64s) with one multiplication
/// instead of SipHash: the map is ours and its keys are not adversarial.
#[derive(Default)]
struct TidHasher(u64);

impl std::hash::Hasher for TidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type TidMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<TidHasher>>;

#[derive(Default)]
struct LoopState {
    res: BenchResult,
    inflight: TidMap<(Instant, u64)>,
    /// The request every write is encoded from (its tid and data set each
    /// time), so that a request costs no allocation of its own.
    request: Option<MOSDOp>,
    next_tid: u64,
    /// Probes sent and not yet answered (tid: when sent).
    probes: TidMap<Instant>,
    last_reply: u64,
    stopped: bool,
    refusals: crate::common::RefusalWatch,
}

impl Loop {
    /// Whether the run goes on after `sent` requests, at `now`.
    fn more(&self, sent: u64, now: Instant) -> bool {
        self.quota.is_none_or(|q| sent < q) && self.until.is_none_or(|t| now < t)
    }

    /// The next request, sent at `now`, if the window and the run allow one.
    fn next_request(
        &self,
        st: &mut LoopState,
        features: u64,
        now: Instant,
    ) -> Option<msgr_protocol::Message> {
        if st.stopped || st.inflight.len() >= self.opts.depth || !self.more(st.next_tid, now) {
            return None;
        }
        st.next_tid += 1;
        let tid = st.next_tid;
        let (data, sum) = if self.opts.verify {
            let mut d = BytesMut::from(&self.base[..]);
            let stamp = tid.to_le_bytes();
            let n = stamp.len().min(d.len());
            d[..n].copy_from_slice(&stamp[..n]);
            let d = d.freeze();
            let s = data_checksum(&d);
            (d, s)
        } else {
            (self.base.clone(), self.base_sum)
        };
        st.inflight.insert(tid, (now, sum));
        let verify = self.opts.verify;
        let op = st.request.get_or_insert_with(|| {
            let mut op = MOSDOp::write(0, 1, "bench-object", 0, data.clone(), false);
            op.data = Bytes::new();
            if verify {
                op.ops[0].flags |= OP_FLAG_CHECKSUM;
            }
            op
        });
        // The data goes into the message itself, not through the op (whose
        // extent and payload_len already say its length, the same for every
        // request), so encoding does not clone it.
        op.tid = tid;
        let mut msg = op.to_message(features);
        msg.data = data;
        Some(msg)
    }

    fn on_reply(&self, tid: u64, checksum: u64, at: Instant, conn: &Connection) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if tid & Probe::TID_BIT != 0 {
            if let Some(sent_at) = st.probes.remove(&tid) {
                let (l, _) = st.res.probes.get_or_insert_with(Default::default);
                l.record(at - sent_at);
            }
            return;
        }
        match st.inflight.remove(&tid) {
            Some((sent_at, sum)) => {
                st.res.latencies.record(at - sent_at);
                st.res.completed += 1;
                self.progress.completed.fetch_add(1, Ordering::Relaxed);
                if st.res.completed == 1 {
                    self.progress.up.fetch_add(1, Ordering::Relaxed);
                }
                if self.opts.verify && checksum != sum {
                    st.res.corrupted += 1;
                }
                if tid < st.last_reply {
                    st.res.reordered += 1;
                }
                st.last_reply = st.last_reply.max(tid);
            }
            None => st.res.duplicated += 1,
        }
        let features = conn.features();
        let foreign = self.foreign.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(m) = self.next_request(&mut st, features, at) {
            match foreign.as_ref() {
                Some(f) => drop(f.send(m)),
                None => conn.send_nowait(m),
            }
        }
        if st.inflight.is_empty() {
            self.done.notify_one();
        }
    }
}

struct LoopDispatcher(std::sync::OnceLock<Arc<Loop>>);

impl Dispatcher for LoopDispatcher {
    fn ms_handle_connect(&self, _conn: &Connection, _prev_shard: usize) {
        if let Some(l) = self.0.get() {
            let _ = l.connected_at.set(Instant::now());
            let mut st = l.state.lock().unwrap_or_else(|e| e.into_inner());
            st.refusals.on_connect();
        }
    }

    /// A peer that refuses us will not change its mind: stop the run with
    /// its reason (crate::common::RefusalWatch).
    fn ms_handle_fault(&self, _conn: &Connection, error: &msgr_protocol::ProtocolError) {
        let Some(l) = self.0.get() else { return };
        {
            let mut st = l.state.lock().unwrap_or_else(|e| e.into_inner());
            if !st.refusals.on_fault(error) {
                return;
            }
            st.stopped = true;
            st.res.error.get_or_insert_with(|| error.to_string());
            st.inflight.clear();
        }
        l.done.notify_waiters();
    }

    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        if msg.msg_type != msgr_messages::MSG_OSD_OPREPLY {
            return;
        }
        let at = Instant::now();
        let Some(l) = self.0.get() else { return };
        let checksum = if l.opts.verify {
            MOSDOpReply::from_message(&msg).map_or(u64::MAX, |r| r.user_version)
        } else {
            0
        };
        l.on_reply(msg.tid, checksum, at, conn);
    }
}

async fn run_conn(
    i: usize,
    server: EntityAddrvec,
    opts: Arc<BenchOpts>,
    quota: Option<u64>,
    until: Option<Instant>,
    progress: Arc<Progress>,
) -> BenchResult {
    let dispatcher = Arc::new(LoopDispatcher(std::sync::OnceLock::new()));
    let name = match opts.name {
        Some(n) => EntityName::new(n.kind, n.num.max(0) + i as i64),
        None => EntityName::new(EntityType::CLIENT, i as i64),
    };
    // Each connection's messenger counts into a collection of its own,
    // read before it shuts down.
    let perf = msgr_admin::perf::Collection::new();
    let net = crate::common::NetOpts {
        perf: Some(perf.clone()),
        ..opts.net.clone()
    };
    let m = messenger(name, 1000 + i as u32, &net, dispatcher.clone());
    let base = Bytes::from(
        (0..opts.size)
            .map(|b| (b * 131 + i) as u8)
            .collect::<Vec<_>>(),
    );
    let l = Arc::new(Loop {
        started: Instant::now(),
        connected_at: std::sync::OnceLock::new(),
        base_sum: data_checksum(&base),
        base,
        opts: opts.clone(),
        quota,
        until,
        progress,
        state: Mutex::new(LoopState::default()),
        done: tokio::sync::Notify::new(),
        foreign: Mutex::new(None),
    });
    let _ = dispatcher.0.set(l.clone());
    let conn = m.connect(&server, EntityType::OSD);
    if opts.foreign_sends {
        let (tx, rx) = std::sync::mpsc::channel::<msgr_protocol::Message>();
        let c = conn.clone();
        std::thread::spawn(move || {
            while let Ok(m) = rx.recv() {
                c.send_nowait(m);
            }
        });
        *l.foreign.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
    }
    let prober = match opts.probe {
        Some(p) if i == 0 => Some(tokio::spawn(send_probes(l.clone(), conn.clone(), p))),
        _ => None,
    };
    // The first window; replies refill it from the dispatcher.
    {
        let mut st = l.state.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(msg) = l.next_request(&mut st, conn.features(), Instant::now()) {
            conn.send_nowait(msg);
        }
    }
    let drain = opts.give_up.unwrap_or(Duration::from_secs(
        if opts.net.inject_socket_failures > 0 {
            60
        } else {
            20
        },
    ));
    // The run ends when every request sent is answered, probes too (or an
    // error stops it). It gives up on replies that stop coming: `drain` without one
    // (however long the run itself takes: under valgrind, say).
    let mut progress = (0u64, Instant::now());
    loop {
        let done = l.done.notified();
        let (finished, completed) = {
            let st = l.state.lock().unwrap_or_else(|e| e.into_inner());
            let answered = st.inflight.is_empty() && st.probes.is_empty();
            let finished =
                (answered && !l.more(st.next_tid, Instant::now())) || st.res.error.is_some();
            (finished, st.res.completed)
        };
        if finished {
            break;
        }
        let now = Instant::now();
        if completed != progress.0 {
            progress = (completed, now);
        } else if now.duration_since(progress.1) >= drain {
            break;
        }
        // Look again at least every 50 ms: the end of a timed run, a stall.
        let _ = tokio::time::timeout(Duration::from_millis(50), done).await;
    }
    if let Some(p) = prober {
        p.abort();
    }
    let mut res = {
        let mut st = l.state.lock().unwrap_or_else(|e| e.into_inner());
        st.stopped = true;
        let mut res = std::mem::take(&mut st.res);
        res.lost = st.inflight.len() as u64;
        if opts.probe.is_some() && i == 0 {
            res.probes.get_or_insert_with(Default::default).1 = st.probes.len() as u64;
        }
        res
    };
    res.size = opts.size;
    res.handshake = l.connected_at.get().map(|t| t.duration_since(l.started));
    res.session = conn.con_mode().map(|m| {
        (
            m.to_string(),
            conn.rev1().unwrap_or(false),
            conn.compression().map(|a| a.name().to_string()),
        )
    });
    // Reconnects as the messenger counted them.
    let counted = Counted::read(&perf);
    res.reconnects = counted.reconnects;
    res.counted = Some(counted);
    l.foreign.lock().unwrap_or_else(|e| e.into_inner()).take();
    m.shutdown().await;
    res
}

/// Sends a probe every `p.interval` while the stream runs (from its first
/// request to its last), each a write of [`Probe::SIZE`] bytes at
/// `p.priority`, answered as the stream's are.
async fn send_probes(l: Arc<Loop>, conn: Connection, p: Probe) {
    let data = Bytes::from(vec![0x5a; Probe::SIZE]);
    let mut tick = tokio::time::interval(p.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 1u64.. {
        tick.tick().await;
        if l.connected_at.get().is_none() {
            continue;
        }
        let now = Instant::now();
        let tid = Probe::TID_BIT | n;
        {
            let mut st = l.state.lock().unwrap_or_else(|e| e.into_inner());
            if st.stopped || !l.more(st.next_tid, now) {
                return;
            }
            st.probes.insert(tid, now);
        }
        let mut op = MOSDOp::write(0, 1, "bench-probe", 0, data.clone(), false);
        op.tid = tid;
        let mut msg = op.to_message(conn.features());
        msg.priority = p.priority;
        conn.send_nowait(msg);
    }
}

fn progress_line(p: &Progress, start: Instant, size: usize) {
    let n = p.completed.load(Ordering::Relaxed);
    let s = start.elapsed().as_secs_f64().max(1e-9);
    eprint!(
        "\r[bench {:5.1}s] {:10} msgs  {:10.0} msgs/s  {:9.1} MB/s ",
        s,
        n,
        n as f64 / s,
        n as f64 * size as f64 / s / 1e6
    );
}

/// Runs the messenger benchmark against `server`.
pub async fn run_msgr(server: EntityAddrvec, opts: Arc<BenchOpts>) -> BenchResult {
    let progress = Arc::new(Progress::default());
    let show = !opts.json && std::io::stderr().is_terminal();
    let start = Instant::now();
    let cpu0 = cpu_time();
    let until = opts.duration.map(|d| start + d);
    let per_conn = opts.count.map(|c| c.div_ceil(opts.conns as u64));
    let mut handles = Vec::new();
    for i in 0..opts.conns {
        handles.push(tokio::spawn(run_conn(
            i,
            server.clone(),
            opts.clone(),
            per_conn,
            until,
            progress.clone(),
        )));
    }
    let steady = until.map(|u| {
        tokio::spawn(sample_steady(
            progress.clone(),
            opts.conns as u64,
            u,
            opts.server_pid,
        ))
    });
    let ticker = show.then(|| {
        let p = progress.clone();
        let size = opts.size;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                progress_line(&p, start, size);
            }
        })
    });
    let mut total = BenchResult {
        size: opts.size,
        ..Default::default()
    };
    for h in handles {
        let r = h.await.expect("bench connection task");
        total.completed += r.completed;
        total.per_conn.push(r.completed);
        total.latencies.merge(r.latencies);
        total.reconnects += r.reconnects;
        total.session = total.session.take().or(r.session.clone());
        total.error = total.error.take().or(r.error.clone());
        total.handshake = total.handshake.take().or(r.handshake);
        total.lost += r.lost;
        if let Some((l, lost)) = r.probes {
            let (t, tl) = total.probes.get_or_insert_with(Default::default);
            t.merge(l);
            *tl += lost;
        }
        total.duplicated += r.duplicated;
        total.reordered += r.reordered;
        total.corrupted += r.corrupted;
        total.counted = Some(
            total
                .counted
                .unwrap_or_default()
                .merge(r.counted.unwrap_or_default()),
        );
    }
    total.elapsed = start.elapsed();
    total.cpu = cpu_time() - cpu0;
    if let Some(s) = steady {
        total.steady = s.await.ok().flatten();
    }
    if let Some(t) = ticker {
        t.abort();
        eprintln!();
    }
    total
}

/// Runs the raw TCP baseline with the same shape: against a raw server
/// started on a thread of this process, or the one at `external`.
pub async fn run_raw(
    opts: &BenchOpts,
    external: Option<std::net::SocketAddr>,
) -> std::io::Result<BenchResult> {
    let server = match external {
        Some(_) => None,
        None => Some(crate::raw::server_thread()?),
    };
    let addr = match (&server, external) {
        (Some(s), _) => s.addr,
        (None, a) => a.expect("one of the two"),
    };
    let start = Instant::now();
    let cpu0 = cpu_time();
    let until = opts.duration.map(|d| start + d);
    let per_conn = opts.count.map(|c| c.div_ceil(opts.conns as u64));
    let progress = Arc::new(Progress::default());
    let mut handles = Vec::new();
    for _ in 0..opts.conns {
        handles.push(tokio::spawn(crate::raw::run_client(
            addr,
            opts.size,
            opts.depth,
            per_conn,
            until,
            progress.clone(),
        )));
    }
    let pid = opts.server_pid.filter(|_| external.is_some());
    let steady =
        until.map(|u| tokio::spawn(sample_steady(progress.clone(), opts.conns as u64, u, pid)));
    let mut total = BenchResult {
        size: opts.size,
        ..Default::default()
    };
    for h in handles {
        let r = h.await.expect("raw task")?;
        total.completed += r.completed;
        total.latencies.merge(r.latencies);
    }
    total.elapsed = start.elapsed();
    total.cpu = cpu_time() - cpu0;
    if let Some(s) = steady {
        total.steady = s.await.ok().flatten();
    }
    if let Some(server) = server {
        let server_cpu = server.stop();
        total.cpu = total.cpu.saturating_sub(server_cpu);
        total.server_cpu = Some(server_cpu);
    }
    Ok(total)
}

/// The in-process server's shard count.
fn server_shards(opts: &BenchOpts) -> usize {
    opts.server_net
        .shards
        .unwrap_or_else(|| msgr_sys::allowed_cpus().len().max(1))
}

/// `msgr bench`: prints the result (text or one JSON object). Returns
/// whether verification (if asked) found no problem.
pub async fn run(opts: BenchOpts) -> std::io::Result<bool> {
    let opts = Arc::new(opts);
    if opts.raw_only {
        let external = match &opts.connect {
            Some(a) => Some(
                a.0.first()
                    .and_then(|a| a.addr)
                    .ok_or_else(|| std::io::Error::other("--connect: no IP address"))?,
            ),
            None => None,
        };
        let mut r = run_raw(&opts, external).await?;
        report_raw_only(&opts, &mut r);
        return Ok(true);
    }
    let mut raw = if opts.raw {
        Some(run_raw(&opts, None).await?)
    } else {
        None
    };
    let (server, local) = match &opts.connect {
        Some(a) => (a.clone(), None),
        None => {
            let net = opts.server_net.clone();
            let t =
                crate::common::ServerThread::spawn_on(opts.server_workers, move || async move {
                    let bind: EntityAddrvec = "v2:127.0.0.1:0".parse().expect("literal");
                    let name = EntityName::new(EntityType::OSD, 0);
                    let (m, addrs, _) = crate::serve::start(&bind, name, 0, &net).await?;
                    Ok((addrs, async move { m.shutdown().await }))
                })?;
            (t.addr.clone(), Some(t))
        }
    };
    let server_cpu = || local.as_ref().map(|t| t.cpu()).unwrap_or_default();
    // run_msgr counts the whole process's CPU: take the in-process server's
    // share out of it, run by run.
    let measured = |mut r: BenchResult, server: Duration| {
        if local.is_some() {
            r.cpu = r.cpu.saturating_sub(server);
            r.server_cpu = Some(server);
        }
        r
    };
    let mut crc = match opts.vs_crc {
        true => {
            let mut o = (*opts).clone();
            o.net.security.mode = Some(msgr_auth::ConMode::CRC);
            let s0 = server_cpu();
            let r = run_msgr(server.clone(), Arc::new(o)).await;
            Some(measured(r, server_cpu() - s0))
        }
        false => None,
    };
    let s0 = server_cpu();
    let res = run_msgr(server, opts.clone()).await;
    let mut res = measured(res, server_cpu() - s0);
    if let Some(t) = local {
        t.stop();
    }
    if let Some(e) = &res.error {
        return Err(std::io::Error::other(format!("the server refused us: {e}")));
    }
    let ok = !opts.verify
        || (res.lost == 0 && res.duplicated == 0 && res.reordered == 0 && res.corrupted == 0);
    if opts.json {
        let mut o = Object::new();
        o.set("size", opts.size)
            .set("depth", opts.depth)
            .set("conns", opts.conns);
        o.set("policy", opts.net.policy.to_string());
        if opts.connect.is_none() {
            o.set("server_shards", server_shards(&opts));
        }
        res.json(&mut o, opts.verify);
        if let Some(c) = crc.as_mut() {
            let mut co = Object::new();
            c.json(&mut co, false);
            o.set("crc", co.into_value());
            o.set(
                "ratio_vs_crc_mb_per_sec",
                res.mb_per_sec() / c.mb_per_sec().max(1e-9),
            );
        }
        if let Some(r) = raw.as_mut() {
            let mut ro = Object::new();
            r.json(&mut ro, false);
            o.set("raw", ro.into_value());
            o.set(
                "ratio_msgs_per_sec",
                res.msgs_per_sec() / r.msgs_per_sec().max(1e-9),
            );
            o.set(
                "ratio_mb_per_sec",
                res.mb_per_sec() / r.mb_per_sec().max(1e-9),
            );
        }
        crate::outln!("{}", o.into_value());
    } else {
        let line = |label: &str, r: &mut BenchResult| print_line(label, r);
        crate::outln!(
            "msgr bench: {} B x depth {} x {} conn(s), policy {}{}",
            opts.size,
            opts.depth,
            opts.conns,
            opts.net.policy,
            match (&opts.connect, opts.server_workers) {
                (Some(_), _) => String::new(),
                (None, Some(w)) =>
                    format!(", server: 1 shard on tokio's multi-threaded runtime ({w} workers)"),
                (None, None) => format!(", server shards {}", server_shards(&opts)),
            }
        );
        if let Some(r) = raw.as_mut() {
            line("raw", r);
        }
        if let Some(c) = crc.as_mut() {
            line("crc", c);
        }
        line("msgr", &mut res);
        if let Some(c) = crc.as_ref() {
            crate::outln!(
                "msgr/crc: {:.2}x MB/s; handshake crc {} us, this mode {} us",
                res.mb_per_sec() / c.mb_per_sec().max(1e-9),
                c.handshake.map_or(0, |h| h.as_micros()),
                res.handshake.map_or(0, |h| h.as_micros()),
            );
        }
        if let Some(r) = raw.as_ref() {
            crate::outln!(
                "msgr/raw: {:.2}x msgs/s, {:.2}x MB/s",
                res.msgs_per_sec() / r.msgs_per_sec().max(1e-9),
                res.mb_per_sec() / r.mb_per_sec().max(1e-9)
            );
        }
        crate::outln!("reconnects {}", res.reconnects);
        if let Some(j) = res.jain_index() {
            crate::outln!(
                "fairness: Jain's index {:.3} over {} connections ({} to {} replies each)",
                j,
                res.per_conn.len(),
                res.per_conn.iter().min().unwrap_or(&0),
                res.per_conn.iter().max().unwrap_or(&0),
            );
        }
        if let Some(c) = &res.counted {
            crate::outln!(
                "counters: {} sent, {} received, {:.0} wire bytes/msg, {} handshake(s) of {:.0} us, send queue {:.1} us ({} samples)",
                c.sent,
                c.received,
                c.wire_bytes as f64 / res.completed.max(1) as f64,
                c.handshakes,
                c.handshake_mean.as_secs_f64() * 1e6,
                c.queue_mean.as_secs_f64() * 1e6,
                c.queue_samples,
            );
        }
        if opts.verify {
            crate::outln!(
                "verify: lost {} duplicated {} reordered {} corrupted {}",
                res.lost,
                res.duplicated,
                res.reordered,
                res.corrupted
            );
        }
    }
    Ok(ok)
}

/// `--raw-only`'s result, as a msgr run's (text or one JSON object).
fn report_raw_only(opts: &BenchOpts, r: &mut BenchResult) {
    if opts.json {
        let mut o = Object::new();
        o.set("size", opts.size)
            .set("depth", opts.depth)
            .set("conns", opts.conns)
            .set("raw", true);
        r.json(&mut o, false);
        crate::outln!("{}", o.into_value());
    } else {
        crate::outln!(
            "msgr bench --raw-only: {} B x depth {} x {} conn(s)",
            opts.size,
            opts.depth,
            opts.conns
        );
        print_line("raw", r);
    }
}

/// One run's line of the text report.
fn print_line(label: &str, r: &mut BenchResult) {
    let server = r
        .server_cpu
        .map_or(String::new(), |s| format!(" / server {:.1}", r.cpu_us(s)));
    crate::outln!(
        "{label:5} {:>10} msgs in {:6.2}s  {:10.0} msgs/s  {:9.1} MB/s  p50 {:6} us  p99 {:6} us  cpu us/msg: client {:.1}{server}",
        r.completed,
        r.elapsed.as_secs_f64(),
        r.msgs_per_sec(),
        r.mb_per_sec(),
        r.latencies.percentile(50.0),
        r.latencies.percentile(99.0),
        r.cpu_us(r.cpu),
    );
    if let Some((l, lost)) = &mut r.probes {
        crate::outln!(
            "probe {:>10} msgs (at priority, beside the stream)  p50 {:6} us  p99 {:6} us  max {:6} us  unanswered {lost}",
            l.len(),
            l.percentile(50.0),
            l.percentile(99.0),
            l.percentile(100.0),
        );
    }
}
