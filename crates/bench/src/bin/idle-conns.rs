//! Memory a server holds per idle connection (msgr_bench::idle): opens
//! connections to a server on loopback in steps, and after each prints the
//! KiB the step's connections added to the server's resident memory, per
//! connection.
//!
//! ```text
//! idle-conns [--shards S] [--mode crc|secure] [N ...]
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

use std::path::PathBuf;

use msgr_auth::ConMode;
use msgr_bench::idle::{client_net, hold, Server, Step};

#[derive(Default)]
struct Args {
    shards: Option<usize>,
    mode: Option<ConMode>,
    addr: Option<String>,
    pid: Option<u32>,
    keyring: Option<PathBuf>,
    steps: Vec<usize>,
}

fn parse_args() -> Args {
    let mut a = Args::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--shards" => a.shards = Some(value().parse().expect("a number of shards")),
            "--mode" => a.mode = Some(value().parse().expect("crc or secure")),
            "--addr" => a.addr = Some(value()),
            "--pid" => a.pid = Some(value().parse().expect("a pid")),
            "--keyring" => a.keyring = Some(value().into()),
            n => a.steps.push(n.parse().expect("a number of connections")),
        }
    }
    if a.steps.is_empty() {
        a.steps = vec![1000, 2000, 4000, 8000];
    }
    a
}

fn main() {
    let a = parse_args();
    let _ = msgr_sys::raise_fd_limit();
    let mode = a.mode.unwrap_or(ConMode::CRC);
    let server = match (&a.addr, a.pid) {
        (Some(addr), Some(pid)) => Server::running(addr.parse().expect("an address"), pid),
        (None, None) => {
            let bin = std::env::var_os("MSGR_BIN").map_or_else(
                || {
                    let me = std::env::current_exe().expect("this binary's path");
                    me.with_file_name("msgr")
                },
                PathBuf::from,
            );
            Server::spawn(&bin, a.shards, mode).unwrap_or_else(|e| panic!("{e}"))
        }
        _ => panic!("--addr and --pid go together"),
    };
    let keyring = a.keyring.as_deref().or(server.keyring());
    let net = client_net(mode, keyring).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let base = server.rss_kib();
        println!(
            "idle-conns: server pid {} on {}, shards {}, mode {mode:?}, resident {base} KiB before",
            server.pid,
            server.addr,
            a.shards.map_or("default".into(), |s| s.to_string()),
        );
        let mut last = (0usize, base);
        let report = |s: Step| {
            let added = (s.conns - last.0).max(1) as f64;
            println!(
                "{:6} connections: resident {} KiB; {:.2} KiB per connection over the last {} ({:.2} over all); up in {:.2} s",
                s.conns,
                s.rss_kib,
                (s.rss_kib as f64 - last.1 as f64) / added,
                s.conns - last.0,
                (s.rss_kib as f64 - base as f64) / s.conns as f64,
                s.up.as_secs_f64(),
            );
            last = (s.conns, s.rss_kib);
        };
        if let Err(e) = hold(&server, &net, &a.steps, report).await {
            eprintln!("idle-conns: {e}");
        }
    });
}
