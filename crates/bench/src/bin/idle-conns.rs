//! Memory a server holds per idle connection. Opens connections to a
//! server on loopback in steps, each from a one-shard client messenger of
//! its own; a connection counts once it is READY, a keepalive came back
//! and one 4 KiB MOSDOp write was answered. After each step it reads the
//! server's resident memory from /proc and prints the KiB each step's
//! connections added per connection.
//!
//! ```text
//! idle-conns [--shards S] [--mode crc|secure] [--cephx] [N ...]
//! idle-conns --addr ADDR --pid PID [--mode M] [--keyring FILE] [N ...]
//! ```
//!
//! The server is `msgr serve` (the binary beside this one, or `MSGR_BIN`)
//! started as a child process; or, with `--addr` and `--pid`, a server
//! already running (Ceph's `ceph_perf_msgr_server`, or ours under a
//! profiler). Secure mode uses cephx, with a keyring made for the run.
//! Default steps: 1000 2000 4000 8000.
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::ConMode;
use msgr_cli::common::{messenger, NetOpts};
use msgr_cli::security::SecurityOpts;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messages::{MOSDOp, TypedMessage, MSG_OSD_OPREPLY};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_transport::tcp::Tcp;

/// Counts the replies that came back.
#[derive(Default)]
struct Replies {
    count: AtomicUsize,
    arrived: tokio::sync::Notify,
}

impl Dispatcher for Replies {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        if msg.msg_type == MSG_OSD_OPREPLY {
            self.count.fetch_add(1, Ordering::AcqRel);
            self.arrived.notify_waiters();
        }
    }
}

/// The child's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Args {
    shards: Option<String>,
    mode: Option<String>,
    cephx: bool,
    addr: Option<String>,
    pid: Option<u32>,
    keyring: Option<std::path::PathBuf>,
    steps: Vec<usize>,
}

fn parse_args() -> Args {
    let mut a = Args::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--shards" => a.shards = Some(value()),
            "--mode" => a.mode = Some(value()),
            "--cephx" => a.cephx = true,
            "--addr" => a.addr = Some(value()),
            "--pid" => a.pid = Some(value().parse().expect("a pid")),
            "--keyring" => a.keyring = Some(value().into()),
            n => a.steps.push(n.parse().expect("a number of connections")),
        }
    }
    if a.steps.is_empty() {
        a.steps = vec![1000, 2000, 4000, 8000];
    }
    a.cephx |= a.mode.as_deref() == Some("secure");
    a
}

/// Starts `msgr serve` with `security`'s flags; returns it, its address
/// and its binary's path.
fn spawn_server(a: &Args, security: &[String]) -> (Child, EntityAddrvec, String) {
    let bin = std::env::var("MSGR_BIN").unwrap_or_else(|_| {
        let me = std::env::current_exe().expect("this binary's path");
        me.with_file_name("msgr").to_string_lossy().into_owned()
    });
    let mut cmd = Command::new(&bin);
    cmd.args(["serve", "--bind", "v2:127.0.0.1:0"])
        .args(security);
    if let Some(s) = &a.shards {
        cmd.args(["--shards", s]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut first)
        .expect("serve's first line");
    let addr = first
        .split_whitespace()
        .find(|w| w.starts_with("v2:"))
        .expect("serve prints its address")
        .parse()
        .expect("an address");
    (child, addr, bin)
}

fn main() {
    let a = parse_args();
    let _ = msgr_sys::raise_fd_limit();
    let keyring = a.keyring.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("idle-conns-{}.keyring", std::process::id()))
    });
    let mut security = Vec::new();
    if a.cephx {
        security.extend(["--auth".into(), "cephx".into()]);
        security.extend(["--keyring".into(), keyring.to_string_lossy().into_owned()]);
    }
    if let Some(m) = &a.mode {
        security.extend(["--mode".into(), m.clone()]);
    }
    let (child, addr, what) = match (&a.addr, a.pid) {
        (Some(addr), Some(pid)) => (
            None,
            addr.parse().expect("an address"),
            format!("pid {pid}"),
        ),
        (None, None) => {
            let (c, addr, bin) = spawn_server(&a, &security);
            (Some(c), addr, bin)
        }
        _ => panic!("--addr and --pid go together"),
    };
    let pid = a.pid.or(child.as_ref().map(Child::id)).expect("a server");
    let mut opts = SecurityOpts {
        cephx: a.cephx,
        mode: a
            .mode
            .as_deref()
            .map(|m| m.parse::<ConMode>().expect("crc or secure")),
        ..Default::default()
    };
    if a.cephx {
        opts.keyring = Some(keyring.clone());
    }
    let mut net = NetOpts::default();
    // The server made the keyring (serve writes one where there is none).
    net.security = opts.resolve(false).expect("security options");
    net.shards = Some(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(addr, pid, &what, &a, &net));
    if a.keyring.is_none() {
        let _ = std::fs::remove_file(&keyring);
    }
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
}

async fn run(addr: EntityAddrvec, pid: u32, what: &str, a: &Args, net: &NetOpts) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = rss_kib(pid);
    println!(
        "idle-conns: server {what} on {addr}, shards {}, mode {}, resident {base} KiB before",
        a.shards.as_deref().unwrap_or("default"),
        a.mode.as_deref().unwrap_or("crc"),
    );
    let replies = Arc::new(Replies::default());
    let data = Bytes::from(vec![0x5a; 4096]);
    let mut held: Vec<(Messenger<Tcp>, Connection)> = Vec::new();
    let mut last = (0usize, base);
    for &n in &a.steps {
        while held.len() < n {
            let name = format!("client.{}", held.len() + 1)
                .parse()
                .expect("a name");
            let m = messenger(name, 0, net, replies.clone());
            let c = m.connect(&addr, EntityType::OSD);
            held.push((m, c));
        }
        for (_, c) in &held[last.0..] {
            if c.keepalive_roundtrip(Duration::from_secs(30))
                .await
                .is_none()
            {
                eprintln!("a connection did not come up");
            }
            let op = MOSDOp::write(1, 1, "idle", 0, data.clone(), false);
            c.send_nowait(op.to_message(c.features()));
        }
        let answered = async {
            while replies.count.load(Ordering::Acquire) < n {
                let arrived = replies.arrived.notified();
                if replies.count.load(Ordering::Acquire) >= n {
                    break;
                }
                arrived.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(30), answered)
            .await
            .is_err()
        {
            eprintln!("not every write was answered");
        }
        // Idle: past the 1 s after which a connection trims its queues.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = rss_kib(pid);
        let added = (n - last.0).max(1) as f64;
        println!(
            "{n:6} connections: resident {rss} KiB; {:.2} KiB per connection over the last {} ({:.2} over all)",
            (rss as f64 - last.1 as f64) / added,
            n - last.0,
            (rss as f64 - base as f64) / n as f64,
        );
        last = (n, rss);
    }
    for (m, _) in &held {
        m.shutdown().await;
    }
}
