//! Memory a server holds per idle connection: starts `msgr serve` (the
//! binary beside this one, or `MSGR_BIN`) on loopback as a child process,
//! opens connections to it in steps (each from a one-shard client
//! messenger of its own, READY once a keepalive round trip came back), and
//! after each step reads the server's resident memory from /proc. Prints
//! the KiB each step's connections added per connection.
//! `idle-conns [--shards S] [N ...]` (default steps: 1000 2000 4000 8000).
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_protocol::{Policy, PolicySet};
use msgr_transport::tcp::Tcp;

struct Quiet;

impl Dispatcher for Quiet {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
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

fn main() {
    let mut shards = None;
    let mut steps = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--shards" => shards = args.next(),
            n => steps.push(n.parse::<usize>().expect("a number of connections")),
        }
    }
    if steps.is_empty() {
        steps = vec![1000, 2000, 4000, 8000];
    }
    let bin = std::env::var("MSGR_BIN").unwrap_or_else(|_| {
        let me = std::env::current_exe().expect("this binary's path");
        me.with_file_name("msgr").to_string_lossy().into_owned()
    });
    let mut cmd = Command::new(&bin);
    cmd.args(["serve", "--bind", "v2:127.0.0.1:0"]);
    if let Some(s) = &shards {
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
    let addr: EntityAddrvec = first
        .split_whitespace()
        .find(|w| w.starts_with("v2:"))
        .expect("serve prints its address")
        .parse()
        .expect("an address");
    let pid = child.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let base = rss_kib(pid);
        println!(
            "idle-conns: server {bin} on {addr}, shards {}, resident {base} KiB before",
            shards.as_deref().unwrap_or("default")
        );
        let mut held: Vec<(Messenger<Tcp>, Connection)> = Vec::new();
        let mut last = (0usize, base);
        for n in steps {
            while held.len() < n {
                let i = held.len();
                let mut o = Options::new(
                    format!("client.{}", i + 1).parse().expect("a name"),
                    PolicySet::new(Policy::lossless_client()),
                    Arc::new(NoneProvider),
                );
                o.shards = 1;
                let m = Messenger::new(Tcp::default(), o, Arc::new(Quiet));
                let c = m.connect(&addr, EntityType::OSD);
                held.push((m, c));
            }
            for (_, c) in &held[last.0..] {
                if c.keepalive_roundtrip(Duration::from_secs(30)).await.is_none() {
                    eprintln!("a connection did not come up");
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
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
    });
    let _ = child.kill();
    let _ = child.wait();
}
