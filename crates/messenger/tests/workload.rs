//! Seeded synthetic workloads: Ceph's SyntheticWorkload
//! (src/test/msgr/test_msgr.cc, `SyntheticInjectTest`), made reproducible.
//!
//! A seed drives N servers × M clients (or N lossless peers) over the memory
//! transport on a single-threaded runtime with paused (virtual) time: random
//! connect / send / mark_down / sleep, payloads of 32 B to 4 MiB whose front
//! carries (sender, stream, seq, body seed) so the receiver regenerates and
//! compares every byte, a bound on messages in flight, one socket operation
//! in 30 failing and writes delayed. Checks (see [`Model`]):
//! - a lossless stream delivers every message exactly once, in order,
//!   intact, except what a reset the policy reports was allowed to drop,
//!   and, for lossless peers without resetcheck, the unacknowledged tail
//!   that Ceph sends again when the receiver marked its session down;
//! - a lossy stream never duplicates or reorders;
//! - resets are reported as Ceph reports them: `ms_handle_reset` only on
//!   lossy connections, once; `ms_handle_remote_reset` only on lossless ones
//!   and only where a session was really lost (a mark_down between the two);
//!   a lossy connection that closed without our mark_down reported its reset;
//! - after shutdown no connection and no socket is left.
//!
//! A failure prints its seed. Replay one:
//! `MSGR_WORKLOAD_SEED=1234 cargo test --release -p msgr-messenger --test workload replay -- --nocapture`
//! (add `MSGR_WORKLOAD_SETUP=lossless-peer` to pick one setup, and
//! `MSGR_WORKLOAD_TRACE=1` to print every operation and event). The runtime
//! selects in a fixed order and reads tokio's paused clock, so a seed
//! replays event for event. Run many:
//! `MSGR_WORKLOAD_SEEDS=2000 cargo test --release -p msgr-messenger --test workload many_seeds -- --ignored --nocapture`
//!
//! The same workloads run over real sockets on 127.0.0.1, epoll TCP and
//! io_uring, in real time (`MSGR_WORKLOAD_NET=Tcp|Uring` for `replay` and
//! `many_seeds`): the same checks, but the kernel's timing picks the
//! interleavings, so a seed is run again rather than replayed.

#[path = "workload/model.rs"]
mod model;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messenger::{
    Connection, Dispatcher, IncomingMessage, InjectConfig, Messenger, Options, Policy,
};
use msgr_protocol::PolicySet;
use msgr_transport::memory::MemoryNet;
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;
use msgr_uring::Uring;

use model::{Model, Rng};

/// Which policies the messengers of a workload use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    LossyClientStatelessServer,
    LosslessClientStatefulServer,
    LosslessPeer,
    LosslessPeerReuse,
}

impl Setup {
    const ALL: [Setup; 4] = [
        Setup::LossyClientStatelessServer,
        Setup::LosslessClientStatefulServer,
        Setup::LosslessPeer,
        Setup::LosslessPeerReuse,
    ];

    fn name(self) -> &'static str {
        match self {
            Setup::LossyClientStatelessServer => "lossy-client",
            Setup::LosslessClientStatefulServer => "lossless-client",
            Setup::LosslessPeer => "lossless-peer",
            Setup::LosslessPeerReuse => "lossless-peer-reuse",
        }
    }

    /// (policy, binds) of messenger `i` of `n`.
    fn messenger(self, i: usize, servers: usize) -> (Policy, bool) {
        let server = i < servers;
        match self {
            Setup::LossyClientStatelessServer if server => (Policy::stateless_server(), true),
            Setup::LossyClientStatelessServer => (Policy::lossy_client(), false),
            Setup::LosslessClientStatefulServer if server => (Policy::stateful_server(), true),
            Setup::LosslessClientStatefulServer => (Policy::lossless_client(), false),
            Setup::LosslessPeer => (Policy::lossless_peer(), true),
            Setup::LosslessPeerReuse => (Policy::lossless_peer_reuse(), true),
        }
    }

    fn peers(self) -> bool {
        matches!(self, Setup::LosslessPeer | Setup::LosslessPeerReuse)
    }
}

/// How big a workload is.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub servers: usize,
    pub clients: usize,
    pub ops: usize,
    pub max_in_flight: u64,
    /// Logical shards per messenger (one runtime: a seed still replays).
    /// With more than one, accepted connections are placed on another
    /// shard than the one that accepted them, and connections are moved
    /// between shards mid-stream.
    pub shards: usize,
    pub protocols: Protocols,
}

/// Which protocols the messengers that bind listen with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocols {
    Msgr2,
    /// Every one on a `v1:` address: msgr1 everywhere.
    Msgr1,
    /// Even ones on `[v2:..., v1:...]` (as Ceph's daemons bind), odd ones
    /// on `v1:` only: clients dial the first, so msgr2 to the even ones and
    /// msgr1 to the odd ones; a messenger bound without msgr2 dials msgr1.
    Mixed,
}

const DEFAULT_SIZE: Size = Size {
    servers: 3,
    clients: 4,
    ops: 400,
    max_in_flight: 48,
    shards: 1,
    protocols: Protocols::Msgr2,
};

/// Hands every event to the model.
struct Recorder {
    me: usize,
    model: Arc<Mutex<Model>>,
}

impl Dispatcher for Recorder {
    /// An accepted connection goes to the shard after the one that
    /// accepted it (a placement that always moves it).
    fn ms_choose_shard(&self, p: &msgr_messenger::Placement<'_>) -> Option<usize> {
        p.accepted.then(|| p.shard + 1)
    }
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let reply = self.model.lock().unwrap().received(self.me, conn, &msg);
        if let Some(reply) = reply {
            conn.send_nowait(reply);
        }
    }
    fn ms_handle_accept(&self, conn: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.model.lock().unwrap().accepted(self.me, conn);
    }
    fn ms_handle_reset(&self, conn: &Connection) {
        self.model.lock().unwrap().reset(self.me, conn, false);
    }
    fn ms_handle_remote_reset(&self, conn: &Connection) {
        self.model.lock().unwrap().reset(self.me, conn, true);
    }
}

/// The network a workload runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// In-memory pipes in virtual time: a seed replays exactly.
    Memory,
    /// Sockets on 127.0.0.1 in real time (the kernel's timing decides the
    /// interleavings: the same checks hold, a seed does not replay).
    Tcp,
    Uring,
}

/// What a workload needs of its network beyond the messenger's transport:
/// where messenger `i` binds, and how many sockets are still open.
trait WorkloadNet: Transport + Sized {
    /// Messenger `i`'s address at `port` (0: any).
    fn ip_of(&self, i: usize) -> String;
    fn addr_of(&self, i: usize, p: Protocols) -> EntityAddrvec {
        let ip = self.ip_of(i);
        let port = |n: u16| if ip == "127.0.0.1" { 0 } else { n };
        let text = match (p, i % 2) {
            (Protocols::Msgr2, _) => format!("v2:{ip}:{}", port(6800)),
            (Protocols::Msgr1, _) | (Protocols::Mixed, 1) => format!("v1:{ip}:{}", port(6800)),
            (Protocols::Mixed, _) => format!("[v2:{ip}:{},v1:{ip}:{}]", port(6800), port(6801)),
        };
        text.parse().unwrap()
    }
    fn live(&self, msgrs: &[Messenger<Self>]) -> usize {
        msgrs.iter().map(|m| m.live_sockets()).sum()
    }
}

impl WorkloadNet for MemoryNet {
    fn ip_of(&self, i: usize) -> String {
        format!("10.0.{}.{}", i / 200, i % 200 + 1)
    }
    /// Both ends of every pipe, whoever holds them.
    fn live(&self, _: &[Messenger<Self>]) -> usize {
        self.live_connections()
    }
}

impl WorkloadNet for Tcp {
    fn ip_of(&self, _: usize) -> String {
        "127.0.0.1".into()
    }
}

impl WorkloadNet for Uring {
    fn ip_of(&self, _: usize) -> String {
        "127.0.0.1".into()
    }
}

/// Runs one workload over the memory network; `Err` describes every
/// broken promise.
pub fn run(seed: u64, setup: Setup, size: Size) -> Result<String, String> {
    run_over(Net::Memory, seed, setup, size)
}

/// Runs one workload over `net`.
pub fn run_over(net: Net, seed: u64, setup: Setup, size: Size) -> Result<String, String> {
    let mut rt = tokio::runtime::Builder::new_current_thread();
    match net {
        Net::Memory => rt.enable_time().start_paused(true),
        Net::Tcp | Net::Uring => rt.enable_all(),
    };
    let rt = rt.build().unwrap();
    match net {
        Net::Memory => rt.block_on(run_async(MemoryNet::new(), seed, setup, size)),
        Net::Tcp => rt.block_on(run_async(Tcp::default(), seed, setup, size)),
        Net::Uring => rt.block_on(run_async(Uring::default(), seed, setup, size)),
    }
}

async fn run_async<T: WorkloadNet>(
    net: T,
    seed: u64,
    setup: Setup,
    size: Size,
) -> Result<String, String> {
    let mut rng = Rng::new(seed);
    let total = size.servers + size.clients;
    let model = Arc::new(Mutex::new(Model::new(seed ^ 0x5eed, total)));
    let mut msgrs = Vec::new();
    let mut bound = Vec::new();
    let mut addrs = Vec::with_capacity(total);
    for i in 0..total {
        let (policy, binds) = setup.messenger(i, size.servers);
        let name = if binds {
            format!("osd.{i}")
        } else {
            format!("client.{i}")
        };
        let mut o = Options::new(
            name.parse().unwrap(),
            PolicySet::new(policy),
            Arc::new(NoneProvider),
        );
        o.nonce = 1000 + i as u32;
        o.seed = seed.wrapping_mul(31).wrapping_add(i as u64 + 1);
        o.inject = InjectConfig {
            socket_failures: 30,
            delay_one_in: 20,
            delay_max: Duration::from_millis(5),
        };
        o.timeouts.backoff_initial = Duration::from_millis(5);
        o.timeouts.backoff_max = Duration::from_millis(200);
        o.shards = size.shards;
        o.shard_threads = false;
        let m = Messenger::new(
            net.clone(),
            o,
            Arc::new(Recorder {
                me: i,
                model: model.clone(),
            }),
        );
        let mut my_addrs = EntityAddrvec::default();
        if binds {
            my_addrs = m
                .bind(&net.addr_of(i, size.protocols))
                .await
                .map_err(|e| e.to_string())?;
            bound.push(i);
        }
        addrs.push(my_addrs);
        model.lock().unwrap().add_messenger(i, policy, m.name());
        msgrs.push(m);
    }

    let trace = std::env::var_os("MSGR_WORKLOAD_TRACE").is_some();
    for op in 0..size.ops {
        if trace {
            let m = model.lock().unwrap();
            eprintln!(
                "op {op} at {:?}: in flight {}",
                tokio::time::Instant::now(),
                m.in_flight()
            );
        }
        match rng.below(100) {
            0..=9 => connect(&mut rng, setup, size, &msgrs, &bound, &addrs, &model),
            10..=81 => {
                let Some((from, conn)) = pick_open(&mut rng, &model) else {
                    connect(&mut rng, setup, size, &msgrs, &bound, &addrs, &model);
                    continue;
                };
                let len = payload_len(&mut rng);
                let msg = model
                    .lock()
                    .unwrap()
                    .make_message(from, &conn, len, &mut rng);
                conn.send(msg).await;
            }
            82..=85 => {
                if let Some((who, conn)) = pick_open(&mut rng, &model) {
                    model.lock().unwrap().marking_down(who, &conn);
                    conn.mark_down();
                }
            }
            86..=89 if size.shards > 1 => {
                if let Some((_, conn)) = pick_open(&mut rng, &model) {
                    conn.move_to_shard(rng.below(size.shards as u64) as usize);
                }
            }
            _ => tokio::time::sleep(Duration::from_millis(rng.below(50))).await,
        }
        wait_in_flight(&model, size.max_in_flight, Duration::from_secs(120)).await?;
    }
    wait_in_flight(&model, 0, Duration::from_secs(300)).await?;
    // Let late events land, then check what the quiet system holds.
    tokio::time::sleep(Duration::from_secs(1)).await;
    model.lock().unwrap().check_quiet();

    for m in &msgrs {
        m.shutdown().await;
    }
    // Sockets close as their tasks end (a real socket's task may need a
    // turn of the reactor).
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if net.live(&msgrs) == 0 {
            break;
        }
    }
    let mut m = model.lock().unwrap();
    for (i, msgr) in msgrs.iter().enumerate() {
        if !msgr.connections().is_empty() {
            m.fail(format!("messenger {i} holds connections after shutdown"));
        }
    }
    let live = net.live(&msgrs);
    if live != 0 {
        m.fail(format!("{live} sockets left open"));
    }
    let injected: u64 = msgrs.iter().map(|m| m.injected_failures()).sum();
    m.verdict(injected)
}

/// Opens (or reuses) a connection from a random initiator to a random
/// bound messenger.
fn connect<T: Transport>(
    rng: &mut Rng,
    setup: Setup,
    size: Size,
    msgrs: &[Messenger<T>],
    bound: &[usize],
    addrs: &[EntityAddrvec],
    model: &Arc<Mutex<Model>>,
) {
    let from = if setup.peers() {
        rng.below(msgrs.len() as u64) as usize
    } else {
        size.servers + rng.below(size.clients as u64) as usize
    };
    let to = bound[rng.below(bound.len() as u64) as usize];
    if to == from {
        return;
    }
    let conn = msgrs[from].connect(&addrs[to], EntityType::OSD);
    model.lock().unwrap().connected(from, to, &conn);
}

/// A random connection that is still open, and who holds it.
fn pick_open(rng: &mut Rng, model: &Arc<Mutex<Model>>) -> Option<(usize, Connection)> {
    let mut m = model.lock().unwrap();
    m.prune_closed();
    let open = m.open_connections();
    if open.is_empty() {
        return None;
    }
    let (who, c) = &open[rng.below(open.len() as u64) as usize];
    Some((*who, c.clone()))
}

/// 32 B to 4 MiB, mostly small (large messages under 1-in-30 socket
/// failures would otherwise rarely get through).
fn payload_len(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=79 => 32 + rng.below(4096 - 32) as usize,
        80..=97 => 4096 + rng.below(256 << 10) as usize,
        _ => (256 << 10) + rng.below((4 << 20) - (256 << 10)) as usize,
    }
}

/// Sleeps (virtual time) until at most `max` messages are in flight.
async fn wait_in_flight(
    model: &Arc<Mutex<Model>>,
    max: u64,
    patience: Duration,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let in_flight = {
            let mut m = model.lock().unwrap();
            m.prune_closed();
            m.in_flight()
        };
        if in_flight <= max {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let m = model.lock().unwrap();
            return Err(format!(
                "{in_flight} messages still in flight after {patience:?} (virtual): {}",
                m.describe_in_flight()
            ));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The setups to run (MSGR_WORKLOAD_SETUP picks one).
fn setups() -> Vec<Setup> {
    match std::env::var("MSGR_WORKLOAD_SETUP") {
        Ok(name) => Setup::ALL
            .into_iter()
            .filter(|s| s.name() == name)
            .collect(),
        Err(_) => Setup::ALL.to_vec(),
    }
}

fn run_seeds(seeds: impl Iterator<Item = u64>, shards: usize) {
    run_seeds_over(Net::Memory, seeds, shards)
}

fn run_seeds_over(net: Net, seeds: impl Iterator<Item = u64>, shards: usize) {
    run_seeds_with(net, seeds, shards, protocols_from_env())
}

fn run_seeds_with(net: Net, seeds: impl Iterator<Item = u64>, shards: usize, protocols: Protocols) {
    let size = Size {
        shards,
        protocols,
        ..DEFAULT_SIZE
    };
    let mut failures = Vec::new();
    for seed in seeds {
        for setup in setups() {
            let what = format!(
                "seed {seed} {} ({shards} shards, {net:?}, {protocols:?})",
                setup.name()
            );
            match run_over(net, seed, setup, size) {
                Ok(summary) => println!("{what}: {summary}"),
                Err(why) => {
                    println!("{what} FAILED: {why}");
                    let replay = match net {
                        Net::Memory => "replay",
                        // Real time: the seed is run again, not replayed.
                        Net::Tcp | Net::Uring => "again",
                    };
                    failures.push(format!(
                        "{what}: {why}\n  {replay}: MSGR_WORKLOAD_SEED={seed} \
                         MSGR_WORKLOAD_SETUP={} MSGR_WORKLOAD_SHARDS={shards} \
                         MSGR_WORKLOAD_NET={net:?} MSGR_WORKLOAD_PROTOCOLS={protocols:?} \
                         cargo test --release -p msgr-messenger --test workload replay -- --nocapture",
                        setup.name()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// MSGR_WORKLOAD_PROTOCOLS: Msgr2 (the default), Msgr1 or Mixed.
fn protocols_from_env() -> Protocols {
    match std::env::var("MSGR_WORKLOAD_PROTOCOLS").as_deref() {
        Ok("Msgr1" | "msgr1") => Protocols::Msgr1,
        Ok("Mixed" | "mixed") => Protocols::Mixed,
        _ => Protocols::Msgr2,
    }
}

/// MSGR_WORKLOAD_NET: Memory (the default), Tcp or Uring.
fn net_from_env() -> Net {
    match std::env::var("MSGR_WORKLOAD_NET").as_deref() {
        Ok("Tcp" | "tcp") => Net::Tcp,
        Ok("Uring" | "uring") => Net::Uring,
        _ => Net::Memory,
    }
}

/// The bounded set the test command runs: a few seeds, and the seeds that
/// once found bugs (116, 292: Ceph's replay for lossless peers without
/// resetcheck; 392, 903: a standby connector without a session taken for
/// an established one, and global_seq lost on session reset; 5022: a
/// server session orphaned by the client's mark_down, resumed by a socket
/// the client had opened before).
#[test]
fn seeded_workloads() {
    run_seeds((1..=4).chain([116, 292, 392, 903, 5022]), 1);
}

/// The same on two and four shards: connections placed away from the
/// shard that accepted them, moved mid-stream, replaced across shards.
#[test]
fn seeded_workloads_on_shards() {
    run_seeds(1..=4, 2);
    run_seeds(5..=8, 4);
}

/// The same workloads over real sockets, epoll TCP and io_uring, in real
/// time, on one shard and on two.
#[test]
fn seeded_workloads_over_tcp_and_uring() {
    for net in [Net::Tcp, Net::Uring] {
        run_seeds_over(net, 1..=2, 1);
        run_seeds_over(net, 3..=3, 2);
    }
}

/// The same workloads over msgr1 everywhere, and over a mix (some
/// messengers listening for msgr1 only), in virtual time and over TCP.
/// Seeds 5028 (msgr1) and 5132 (mix) once found a session resumed after
/// its client's mark_down, though it had carried messages the client then
/// got twice.
#[test]
fn seeded_workloads_over_msgr1_and_a_mix() {
    for p in [Protocols::Msgr1, Protocols::Mixed] {
        run_seeds_with(Net::Memory, (1..=4).chain([5028, 5132]), 1, p);
        run_seeds_with(Net::Memory, 5..=6, 2, p);
        run_seeds_with(Net::Tcp, 1..=1, 1, p);
    }
}

/// The same seed gives the same run, event for event.
#[test]
fn a_seed_replays_exactly() {
    for shards in [1, 3] {
        let size = Size {
            shards,
            ..DEFAULT_SIZE
        };
        let a = run(77, Setup::LosslessPeer, size).unwrap();
        let b = run(77, Setup::LosslessPeer, size).unwrap();
        assert_eq!(a, b);
    }
}

/// `MSGR_WORKLOAD_SEED=N`: one seed, every setup (or MSGR_WORKLOAD_SETUP).
#[test]
fn replay() {
    if let Some(seed) = env_u64("MSGR_WORKLOAD_SEED") {
        let shards = env_u64("MSGR_WORKLOAD_SHARDS").unwrap_or(1) as usize;
        run_seeds_over(net_from_env(), std::iter::once(seed), shards);
    }
}

/// Thousands of seeds: `MSGR_WORKLOAD_SEEDS=2000` (from
/// MSGR_WORKLOAD_FIRST, default 1000).
#[test]
#[ignore]
fn many_seeds() {
    let n = env_u64("MSGR_WORKLOAD_SEEDS").unwrap_or(1000);
    let first = env_u64("MSGR_WORKLOAD_FIRST").unwrap_or(1000);
    let shards = env_u64("MSGR_WORKLOAD_SHARDS").unwrap_or(1) as usize;
    run_seeds_over(net_from_env(), first..first + n, shards);
}
