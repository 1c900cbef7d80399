//! `msgr bench`: MOSDOp writes of `size` bytes, `depth` in flight on each
//! of `conns` connections, replies awaited; against a server given by
//! `--connect`, or one started in this process on loopback. With
//! `--verify`, every reply is checked (tid and the crc32c of the data it
//! answers) and lost, duplicated and reordered replies are counted. With
//! `--raw`, the same pattern over plain TCP runs first as the baseline.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messages::{MOSDOp, MOSDOpReply, TypedMessage};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage};
use tokio::sync::mpsc;

use crate::common::{cpu_time, messenger, Latencies, NetOpts};
use crate::json::Object;
use crate::serve::data_checksum;

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
    pub verify: bool,
    pub raw: bool,
    pub json: bool,
}

/// The outcome of one run.
#[derive(Debug, Default)]
pub struct BenchResult {
    pub completed: u64,
    pub elapsed: Duration,
    pub size: usize,
    pub latencies: Latencies,
    pub reconnects: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub corrupted: u64,
    /// CPU time of the client side.
    pub cpu: Duration,
    /// CPU time of the in-process server's thread, when there is one.
    pub server_cpu: Option<Duration>,
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
        if let Some(s) = self.server_cpu {
            o.set("server_cpu_seconds", s.as_secs_f64())
                .set("server_cpu_us_per_msg", self.cpu_us(s));
        }
        // Requests never answered are counted whether or not we verify.
        o.set("lost", self.lost);
        if verify {
            o.set("duplicated", self.duplicated)
                .set("reordered", self.reordered)
                .set("corrupted", self.corrupted);
        }
    }
}

struct Reply {
    tid: u64,
    checksum: u64,
    at: Instant,
}

struct ReplySink(mpsc::UnboundedSender<Reply>);

impl Dispatcher for ReplySink {
    fn ms_dispatch(&self, _conn: &Connection, msg: IncomingMessage) {
        if msg.msg_type == msgr_messages::MSG_OSD_OPREPLY {
            let at = Instant::now();
            let checksum = MOSDOpReply::from_message(&msg).map_or(u64::MAX, |r| r.user_version);
            let _ = self.0.send(Reply {
                tid: msg.tid,
                checksum,
                at,
            });
        }
    }
}

/// Shared progress counters.
#[derive(Default)]
struct Progress {
    completed: AtomicU64,
}

async fn run_conn(
    i: usize,
    server: EntityAddrvec,
    opts: Arc<BenchOpts>,
    quota: Option<u64>,
    until: Option<Instant>,
    progress: Arc<Progress>,
) -> BenchResult {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let name = EntityName::new(EntityType::CLIENT, i as i64);
    let m = messenger(name, 1000 + i as u32, &opts.net, Arc::new(ReplySink(tx)));
    let conn = m.connect(&server, EntityType::OSD);
    let base = Bytes::from(
        (0..opts.size)
            .map(|b| (b * 131 + i) as u8)
            .collect::<Vec<_>>(),
    );
    let base_sum = data_checksum(&base);
    let mut res = BenchResult {
        size: opts.size,
        ..Default::default()
    };
    let mut inflight: HashMap<u64, (Instant, u64)> = HashMap::new();
    let mut next_tid = 0u64;
    let mut last_reply = 0u64;
    let more =
        |sent: u64| quota.is_none_or(|q| sent < q) && until.is_none_or(|t| Instant::now() < t);
    let drain_deadline = Duration::from_secs(if opts.net.inject_socket_failures > 0 {
        60
    } else {
        20
    });
    loop {
        while inflight.len() < opts.depth && more(next_tid) {
            next_tid += 1;
            let (data, sum) = if opts.verify {
                let mut d = BytesMut::from(&base[..]);
                let stamp = next_tid.to_le_bytes();
                let n = stamp.len().min(d.len());
                d[..n].copy_from_slice(&stamp[..n]);
                let d = d.freeze();
                let s = data_checksum(&d);
                (d, s)
            } else {
                (base.clone(), base_sum)
            };
            let op = MOSDOp::write(next_tid, 1, "bench-object", 0, data, false);
            inflight.insert(next_tid, (Instant::now(), sum));
            conn.send(op.to_message(conn.features())).await;
        }
        if inflight.is_empty() {
            break;
        }
        let wait = if more(next_tid) {
            Duration::from_secs(3600)
        } else {
            drain_deadline
        };
        let first = match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(r)) => r,
            _ => break,
        };
        // Take every reply that has arrived before refilling the window, so
        // that requests go out in batches (as the raw client's do).
        let mut next = Some(first);
        while let Some(reply) = next {
            match inflight.remove(&reply.tid) {
                Some((sent_at, sum)) => {
                    res.latencies.record(reply.at - sent_at);
                    res.completed += 1;
                    progress.completed.fetch_add(1, Ordering::Relaxed);
                    if reply.checksum != sum {
                        res.corrupted += 1;
                    }
                    if reply.tid < last_reply {
                        res.reordered += 1;
                    }
                    last_reply = last_reply.max(reply.tid);
                }
                None => res.duplicated += 1,
            }
            next = rx.try_recv().ok();
        }
    }
    res.lost = inflight.len() as u64;
    res.reconnects = conn.stats().reconnects;
    m.shutdown().await;
    res
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
        total.latencies.merge(r.latencies);
        total.reconnects += r.reconnects;
        total.lost += r.lost;
        total.duplicated += r.duplicated;
        total.reordered += r.reordered;
        total.corrupted += r.corrupted;
    }
    total.elapsed = start.elapsed();
    total.cpu = cpu_time() - cpu0;
    if let Some(t) = ticker {
        t.abort();
        eprintln!();
    }
    total
}

/// Runs the raw TCP baseline with the same shape.
pub async fn run_raw(opts: &BenchOpts) -> std::io::Result<BenchResult> {
    let server = crate::raw::server_thread()?;
    let addr = server.addr;
    let start = Instant::now();
    let cpu0 = cpu_time();
    let until = opts.duration.map(|d| start + d);
    let per_conn = opts.count.map(|c| c.div_ceil(opts.conns as u64));
    let mut handles = Vec::new();
    for _ in 0..opts.conns {
        handles.push(tokio::spawn(crate::raw::run_client(
            addr, opts.size, opts.depth, per_conn, until,
        )));
    }
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
    let server_cpu = server.stop();
    total.cpu = (cpu_time() - cpu0).saturating_sub(server_cpu);
    total.server_cpu = Some(server_cpu);
    Ok(total)
}

/// `msgr bench`: prints the result (text or one JSON object). Returns
/// whether verification (if asked) found no problem.
pub async fn run(opts: BenchOpts) -> std::io::Result<bool> {
    let opts = Arc::new(opts);
    let mut raw = if opts.raw {
        Some(run_raw(&opts).await?)
    } else {
        None
    };
    let (server, local) = match &opts.connect {
        Some(a) => (a.clone(), None),
        None => {
            let net = opts.server_net.clone();
            let t = crate::common::ServerThread::spawn(move || async move {
                let bind: EntityAddrvec = "v2:127.0.0.1:0".parse().expect("literal");
                let name = EntityName::new(EntityType::OSD, 0);
                let (m, addrs, _) = crate::serve::start(&bind, name, 0, &net).await?;
                Ok((addrs, async move { m.shutdown().await }))
            })?;
            (t.addr.clone(), Some(t))
        }
    };
    let mut res = run_msgr(server, opts.clone()).await;
    if let Some(t) = local {
        let server_cpu = t.stop();
        res.cpu = res.cpu.saturating_sub(server_cpu);
        res.server_cpu = Some(server_cpu);
    }
    let ok = !opts.verify
        || (res.lost == 0 && res.duplicated == 0 && res.reordered == 0 && res.corrupted == 0);
    if opts.json {
        let mut o = Object::new();
        o.set("size", opts.size)
            .set("depth", opts.depth)
            .set("conns", opts.conns);
        o.set("policy", opts.net.policy.to_string());
        res.json(&mut o, opts.verify);
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
        println!("{}", o.into_value().to_json());
    } else {
        let line = |label: &str, r: &mut BenchResult| {
            let server = r
                .server_cpu
                .map_or(String::new(), |s| format!(" / server {:.1}", r.cpu_us(s)));
            println!(
                "{label:5} {:>10} msgs in {:6.2}s  {:10.0} msgs/s  {:9.1} MB/s  p50 {:6} us  p99 {:6} us  cpu us/msg: client {:.1}{server}",
                r.completed,
                r.elapsed.as_secs_f64(),
                r.msgs_per_sec(),
                r.mb_per_sec(),
                r.latencies.percentile(50.0),
                r.latencies.percentile(99.0),
                r.cpu_us(r.cpu),
            )
        };
        println!(
            "msgr bench: {} B x depth {} x {} conn(s), policy {}",
            opts.size, opts.depth, opts.conns, opts.net.policy
        );
        if let Some(r) = raw.as_mut() {
            line("raw", r);
        }
        line("msgr", &mut res);
        if let Some(r) = raw.as_ref() {
            println!(
                "msgr/raw: {:.2}x msgs/s, {:.2}x MB/s",
                res.msgs_per_sec() / r.msgs_per_sec().max(1e-9),
                res.mb_per_sec() / r.mb_per_sec().max(1e-9)
            );
        }
        println!("reconnects {}", res.reconnects);
        if opts.verify {
            println!(
                "verify: lost {} duplicated {} reordered {} corrupted {}",
                res.lost, res.duplicated, res.reordered, res.corrupted
            );
        }
    }
    Ok(ok)
}
