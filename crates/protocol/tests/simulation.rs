//! Deterministic simulation: the sans-IO connections of two messengers over
//! a seeded network ([`msgr_protocol::testing::Sim`]: delays, split writes, socket cuts,
//! connects completing in any order), through the races the msgr2 document
//! and crimson's test_v2_protocol care about:
//! connect/connect, reconnect/reconnect, connect/reconnect, mark_down during
//! the handshake, and a server restart (same address, and a new nonce).
//!
//! Every run ends (after the faults stop and backoffs run out) with each
//! lossless stream having delivered every message it still owed exactly
//! once and in order, and no leaked connection: every connection READY,
//! STANDBY or CLOSED, a closed one holding no socket, every live one
//! registered, every open socket joining two live connections. The test
//! prints how many distinct interleavings (trace hashes) its seeds explored.
//!
//! Each seed runs twice: with idents resolved at once (one messenger core,
//! as Ceph's lock has it), and in the sharded runtime's separate steps
//! (ask, verdict, adoption: each a delayed hop between connections that
//! other events interleave with, `Sim::split_idents`).
//!
//! `MSGR_SIM_RUNS=20000 cargo test --release -p msgr-protocol --test simulation many -- --ignored --nocapture`
//! explores more; `MSGR_SIM_SEED=N` replays one run (`MSGR_SIM_SPLIT=1`:
//! with split idents); `MSGR_SIM_PROTOCOL=v1` runs either over msgr1.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use msgr_protocol::testing::*;
use msgr_protocol::{ConnState, Policy};

thread_local! {
    /// The kind of the nodes' addresses, "v2" or "v1": the protocol the
    /// runs on this thread speak (set by the test).
    static PROTOCOL: std::cell::Cell<&'static str> = const { std::cell::Cell::new("v2") };
}

/// `host` (e.g. "10.0.0.1:6800/11") at an address of this thread's kind.
fn at(host: &str) -> String {
    format!("{}:{host}", PROTOCOL.get())
}

const FAMILIES: [&str; 6] = [
    "connect/connect",
    "reconnect/reconnect",
    "connect/reconnect",
    "mark_down during handshake",
    "server restart, same nonce",
    "server restart, new nonce",
];

/// A stream: the messages one connection handle sent.
#[derive(Default)]
struct Stream {
    sent: u64,
    /// Messages below this may be lost (a reset or mark_down said so).
    loss_below: u64,
    closed: bool,
}

/// The scenario's side of the bookkeeping: what was sent when.
struct Run {
    sim: Sim,
    streams: BTreeMap<(usize, usize), Stream>,
    /// (events seen when sent, stream, seq): to place sends against resets.
    sends: Vec<(usize, (usize, usize), u64)>,
    /// Nodes that marked a connection down or restarted.
    dropped_sessions: HashSet<usize>,
}

fn tid(stream: (usize, usize), seq: u64) -> u64 {
    ((stream.0 as u64) << 48) | ((stream.1 as u64) << 32) | seq
}

fn stream_of(tid: u64) -> ((usize, usize), u64) {
    (
        ((tid >> 48) as usize, ((tid >> 32) & 0xffff) as usize),
        tid & 0xffff_ffff,
    )
}

impl Run {
    fn new(seed: u64, a: Policy, b: Policy, split: bool) -> Run {
        let mut net = Net::new();
        net.add_node("osd.1", &at("10.0.0.1:6800/11"), policies(a), none());
        net.add_node("osd.2", &at("10.0.0.2:6800/22"), policies(b), none());
        let mut sim = Sim::new(net, seed);
        sim.split_idents = split;
        Run {
            sim,
            streams: BTreeMap::new(),
            sends: Vec::new(),
            dropped_sessions: HashSet::new(),
        }
    }

    fn connect(&mut self, from: usize, to: usize) -> (usize, usize) {
        (from, self.sim.net.connect(from, to))
    }

    fn send(&mut self, c: (usize, usize)) {
        let s = self.streams.entry(c).or_default();
        if s.closed {
            return;
        }
        let seq = s.sent;
        s.sent += 1;
        self.sends.push((self.sim.events.len(), c, seq));
        let len = 1 + self.sim.rng.below(3000) as usize;
        self.sim.net.send(c, tid(c, seq), len);
    }

    /// `n` sends on `c`, spread over `over`.
    fn send_some(&mut self, c: (usize, usize), n: u64, over: Duration) {
        for _ in 0..n {
            let gap = over.as_micros() as u64 / n.max(1);
            let d = Duration::from_micros(self.sim.rng.below(gap.max(1)));
            self.sim.run_for(d);
            self.send(c);
        }
    }

    fn mark_down(&mut self, c: (usize, usize)) {
        let s = self.streams.entry(c).or_default();
        s.closed = true;
        s.loss_below = s.sent;
        self.dropped_sessions.insert(c.0);
        self.sim.net.conn(c).mark_down();
    }

    fn restart(&mut self, n: usize, addr: &str) {
        for (&(node, _), s) in self.streams.iter_mut() {
            if node == n {
                s.closed = true;
                s.loss_below = s.sent;
            }
        }
        self.dropped_sessions.insert(n);
        self.sim.restart(n, addr);
    }

    /// Node `n`'s session with `peer`, once there is one (cuts may delay it).
    fn session_at(&mut self, n: usize, peer: usize) -> Result<(usize, usize), String> {
        for _ in 0..1000 {
            if let Some(c) = self.sim.net.registered(n, peer) {
                if matches!(
                    self.sim.net.state((n, c)),
                    ConnState::Ready | ConnState::Standby
                ) {
                    return Ok((n, c));
                }
            }
            self.sim.run_for(Duration::from_millis(10));
        }
        Err(format!(
            "node {n} has no session with {peer} after 10 s: {}",
            self.describe()
        ))
    }

    fn describe(&self) -> String {
        let mut out = String::new();
        for (n, node) in self.sim.net.nodes.iter().enumerate() {
            for (c, conn) in node.conns().iter().enumerate() {
                out += &format!("\n  ({n},{c}) {:?} link {:?}", conn.state(), conn.link_id());
            }
            out += &format!(
                "\n  node {n} registry {:?}",
                node.endpoint.registry().holders().collect::<Vec<_>>()
            );
            for (c, f) in node.faults.iter().rev().take(6) {
                out += &format!("\n  node {n} fault on {c}: {f}");
            }
        }
        out
    }

    /// Lets faults stop and backoffs run out.
    fn settle(&mut self) {
        self.sim.cuts_left = 0;
        self.sim.run_for(Duration::from_secs(120));
    }

    /// Every promise checked; `Err` says which broke.
    fn check(&mut self) -> Result<(), String> {
        // Resets move each stream's loss boundary to what was sent by then.
        for (k, (node, conn, ev)) in self.sim.events.iter().enumerate() {
            if matches!(ev, Ev::Reset | Ev::RemoteReset) {
                let sent_by_then = self
                    .sends
                    .iter()
                    .filter(|(seen, s, _)| *seen <= k && *s == (*node, *conn))
                    .count() as u64;
                let s = self.streams.entry((*node, *conn)).or_default();
                s.loss_below = s.loss_below.max(sent_by_then);
            }
        }
        let mut received: BTreeMap<(usize, usize), Vec<u64>> = BTreeMap::new();
        for &(node, _, t) in &self.sim.deliveries {
            let (stream, seq) = stream_of(t);
            if stream.0 == node {
                return Err(format!(
                    "node {node} received its own message {stream:?}/{seq}"
                ));
            }
            let got = received.entry(stream).or_default();
            if got.last().is_some_and(|&l| seq <= l) {
                return Err(format!(
                    "stream {stream:?}: seq {seq} after {:?} ({})",
                    got.last(),
                    if got.contains(&seq) {
                        "duplicate"
                    } else {
                        "reordered"
                    }
                ));
            }
            got.push(seq);
        }
        for (&stream, s) in &self.streams {
            let owner_is_server = self.sim.net.nodes[stream.0]
                .config()
                .policies
                .default_policy()
                .server;
            let peer = 1 - stream.0;
            if owner_is_server && self.dropped_sessions.contains(&peer) {
                continue; // held in standby for a client that went away
            }
            let got = received.get(&stream).map(Vec::as_slice).unwrap_or(&[]);
            let missing: Vec<u64> = (s.loss_below..s.sent)
                .filter(|q| got.binary_search(q).is_err())
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "stream {stream:?} ({:?}): lost {missing:?} (sent {}, loss allowed below {})",
                    self.sim.net.state(stream),
                    s.sent,
                    s.loss_below
                ));
            }
        }
        self.check_no_leaks()
    }

    fn check_no_leaks(&self) -> Result<(), String> {
        let net = &self.sim.net;
        for (n, node) in net.nodes.iter().enumerate() {
            for (c, conn) in node.conns().iter().enumerate() {
                match conn.state() {
                    ConnState::Ready | ConnState::Standby => {
                        if !node.endpoint.registry().holders().any(|&r| r == c) {
                            return Err(format!(
                                "({n},{c}) is {:?} but unregistered",
                                conn.state()
                            ));
                        }
                    }
                    ConnState::Closed => {
                        if conn.link_id().is_some() {
                            return Err(format!("({n},{c}) is closed but holds a socket"));
                        }
                    }
                    other => return Err(format!("({n},{c}) left in {other:?}")),
                }
            }
            for &r in node.endpoint.registry().holders() {
                if node.conns()[r].state() == ConnState::Closed {
                    return Err(format!("node {n} registers closed connection {r}"));
                }
            }
        }
        net.check_sockets()
    }
}

fn lossless_peers(seed: u64, reuse: bool, split: bool) -> Run {
    let p = if reuse {
        Policy::lossless_peer_reuse()
    } else {
        Policy::lossless_peer()
    };
    Run::new(seed, p, p, split)
}

fn client_server(seed: u64, split: bool) -> Run {
    Run::new(
        seed,
        Policy::lossless_client(),
        Policy::stateful_server(),
        split,
    )
}

/// One run of scenario family `seed % 6`, idents resolved at once or
/// `split`; returns its trace hash and how the split resolution went.
fn simulate(seed: u64, split: bool) -> Result<(u64, IdentCounts), String> {
    let family = (seed % FAMILIES.len() as u64) as usize;
    scenario(seed, family, split).map_err(|e| {
        let how = if split { ", split idents" } else { "" };
        format!("seed {seed} ({}{how}): {e}", FAMILIES[family])
    })
}

fn scenario(seed: u64, family: usize, split: bool) -> Result<(u64, IdentCounts), String> {
    let ms = Duration::from_millis;
    let mut run = match family {
        0 => lossless_peers(seed, false, split),
        1 | 2 => lossless_peers(seed, true, split),
        _ => client_server(seed, split),
    };
    run.sim.cuts_left = run.sim.rng.below(4) as u32;
    run.sim.cut_one_in = 10 + run.sim.rng.below(40);
    match family {
        0 => {
            // Both connect at once, and both talk.
            let a = run.connect(0, 1);
            let b = run.connect(1, 0);
            for _ in 0..8 {
                let c = if run.sim.rng.below(2) == 0 { a } else { b };
                run.send_some(c, 1, ms(3));
            }
        }
        1 => {
            // Established, then the socket breaks with both sides sending:
            // both reconnect.
            let a = run.connect(0, 1);
            run.send_some(a, 2, ms(2));
            run.sim.run_for(ms(20));
            let b = run.session_at(1, 0)?;
            // A burst each way, cut while messages and acks are in flight.
            for _ in 0..4 {
                run.send(a);
                run.send(b);
            }
            let t = run.sim.rng.below(4000);
            run.sim.run_for(Duration::from_micros(t));
            run.sim.net.cut(a);
            for _ in 0..6 {
                let c = if run.sim.rng.below(2) == 0 { a } else { b };
                run.send_some(c, 1, ms(2));
            }
        }
        2 => {
            // Established; node 0 drops its session and connects anew while
            // node 1 reconnects the old one to send what it has.
            let a = run.connect(0, 1);
            run.send_some(a, 2, ms(2));
            run.sim.run_for(ms(20));
            let b = run.session_at(1, 0)?;
            run.sim.net.cut(a);
            run.send_some(b, 2, ms(1));
            run.mark_down(a);
            let a2 = run.connect(0, 1);
            for _ in 0..6 {
                let c = if run.sim.rng.below(2) == 0 { a2 } else { b };
                run.send_some(c, 1, ms(2));
            }
        }
        3 => {
            // The client gives up mid-handshake and starts again.
            let a = run.connect(0, 1);
            run.send(a);
            let t = run.sim.rng.below(3000);
            run.sim.run_for(Duration::from_micros(t));
            run.mark_down(a);
            let a2 = run.connect(0, 1);
            run.send_some(a2, 6, ms(10));
        }
        4 | 5 => {
            let a = run.connect(0, 1);
            run.send_some(a, 3, ms(3));
            run.sim.run_for(ms(20));
            if let Some(s) = run.sim.net.registered(1, 0) {
                run.send_some((1, s), 2, ms(1));
            }
            let addr = if family == 4 {
                at("10.0.0.2:6800/22")
            } else {
                at("10.0.0.2:6800/23")
            };
            run.restart(1, &addr);
            run.send_some(a, 3, ms(3));
            if family == 5 {
                // The old instance is gone for good: the client learns the new
                // address (a map update) and starts a new session.
                let t = run.sim.rng.below(20);
                run.sim.run_for(ms(t));
                run.mark_down(a);
                let a2 = run.connect(0, 1);
                run.send_some(a2, 4, ms(4));
            } else {
                run.send_some(a, 3, ms(3));
            }
        }
        _ => unreachable!(),
    }
    run.settle();
    run.check()?;
    Ok((run.sim.trace, run.sim.ident_counts()))
}

/// Runs `seeds`; returns how many ran, how many distinct interleavings
/// they took, and (split) how many runs took each path of the split
/// resolution.
fn explore(seeds: impl Iterator<Item = u64>, split: bool) -> (usize, usize, IdentCounts) {
    let mut traces = HashSet::new();
    let mut runs = 0;
    let mut failures = Vec::new();
    let mut took = IdentCounts::default();
    for seed in seeds {
        runs += 1;
        match simulate(seed, split) {
            Ok((t, c)) => {
                traces.insert(t);
                took.asks += (c.asks > 0) as u64;
                took.retries += (c.retries > 0) as u64;
                took.deferred += (c.deferred > 0) as u64;
                took.adopted += (c.adopted > 0) as u64;
                took.cancelled += (c.cancelled > 0) as u64;
                took.held += (c.held > 0) as u64;
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed; replay with MSGR_SIM_SEED=N:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    println!(
        "{runs} runs explored {} distinct interleavings",
        traces.len()
    );
    if split {
        println!("runs that took each path of the split resolution: {took:?}");
    }
    (runs, traces.len(), took)
}

/// The bounded exploration the test command runs.
#[test]
fn races_end_with_every_message_once_and_no_leaks() {
    let (runs, distinct, _) = explore(0..1200, false);
    // Nearly every seed takes its own path through the races.
    assert!(distinct * 10 >= runs * 9, "{distinct} distinct of {runs}");
}

/// The same races with idents resolved as the sharded runtime does: the
/// ask, the verdict and the adoption each a separate, delayed step.
#[test]
fn races_with_idents_resolved_across_shards_end_the_same() {
    let (runs, distinct, took) = explore(0..1200, true);
    assert!(distinct * 10 >= runs * 9, "{distinct} distinct of {runs}");
    // The interleavings the split steps allow are reached.
    assert!(
        took.asks > 0 && took.adopted > 0 && took.held > 0,
        "{took:?}"
    );
}

/// The same races over msgr1: its CONNECT table, SEQ and resets instead of
/// msgr2's idents, through the same cuts and restarts, ending the same.
#[test]
fn races_over_msgr1_end_the_same() {
    PROTOCOL.set("v1");
    for split in [false, true] {
        let (runs, distinct, _) = explore(0..600, split);
        assert!(distinct * 10 >= runs * 8, "{distinct} distinct of {runs}");
    }
}

/// MSGR_SIM_PROTOCOL=v1: `replay` and `many` over msgr1.
fn protocol_from_env() {
    if std::env::var("MSGR_SIM_PROTOCOL").is_ok_and(|v| v == "v1") {
        PROTOCOL.set("v1");
    }
}

/// The same seed is the same run.
#[test]
fn a_seed_replays_exactly() {
    for seed in [3, 4, 5] {
        assert_eq!(simulate(seed, false), simulate(seed, false));
        assert_eq!(simulate(seed, true), simulate(seed, true));
    }
}

#[test]
fn replay() {
    if let Some(seed) = std::env::var("MSGR_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        let split = std::env::var("MSGR_SIM_SPLIT").is_ok_and(|v| v == "1");
        protocol_from_env();
        explore(std::iter::once(seed), split);
    }
}

#[test]
#[ignore]
fn many() {
    let runs = std::env::var("MSGR_SIM_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000u64);
    protocol_from_env();
    explore(0..runs, false);
    explore(0..runs, true);
}
