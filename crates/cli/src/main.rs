//! `msgr`: a native Ceph messenger toolbox, speaking msgr2 and msgr1. The
//! command line is declared in [`msgr_cli::args`]; this file turns what it
//! parsed into each command's settings and runs it.
#![forbid(unsafe_code)]
// Arithmetic and indexing are checked where peers' bytes are parsed (the
// protocol crates); this tool counts and formats its own measurements.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

/// The tool's allocator. A messenger allocates in bursts (a window of
/// messages encoded, then freed when acked), which glibc's per-thread
/// caches (7 chunks per size) do not absorb; Ceph's daemons link tcmalloc
/// for the same reason, and mimalloc lowers the bench's CPU per message
/// (BENCHMARKS.md). The library crates leave the choice to their user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use msgr_cli::args::{
    BenchArgs, Cli, ClusterArgs, Command, CrushArgs, DecodeArgs, MonArgs, OsdArgs, PingArgs,
    RadosArgs, ServeArgs, ShardTransport,
};
use msgr_cli::bench::BenchOpts;
use msgr_cli::common::NetOpts;
use msgr_cli::identity::ClusterOpts;
use msgr_cli::security::SecurityOpts;
use msgr_cli::{out, outln};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Ceph's messenger options taken from the command line, in order.
type MsOptions = Vec<(String, Option<String>)>;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    msgr_cli::out::end_on(io); // the reader went away
                }
            }
            eprintln!("msgr: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Res<ExitCode> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let debug_ms = msgr_cli::logging::take_debug_ms(&mut args);
    let ms = msgr_cli::args::take_ms_options(&mut args);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help goes to stdout (exit 0), mistakes to stderr (exit 2).
            if e.use_stderr() {
                eprint!("{e}");
                return Ok(ExitCode::from(2));
            }
            out!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
    };
    msgr_cli::logging::init(debug_ms)?;
    let Some(command) = cli.command else {
        let help = <Cli as clap::CommandFactory>::command().render_help();
        out!("{help}");
        return Ok(ExitCode::SUCCESS);
    };
    if matches!(command, Command::Bench(_) | Command::Serve(_)) {
        // Thousands of connections: as many files as the hard limit allows
        // (a limit it cannot raise is left as it is).
        let _ = msgr_sys::raise_fd_limit();
    }
    let no_ms = |command: &str| -> Res<()> {
        match ms.first() {
            Some((flag, _)) => Err(format!("{command}: unexpected option {flag}").into()),
            None => Ok(()),
        }
    };
    match command {
        Command::Decode(a) => no_ms("decode").and_then(|()| decode(a)),
        Command::Crush(a) => no_ms("crush").and_then(|()| crush(a)),
        Command::Bench(a) => no_ms("bench").and_then(|()| bench(a)),
        Command::Serve(a) => serve(a, ms),
        Command::Ping(a) => ping(a, ms),
        Command::Mon(a) => mon(a, ms),
        Command::Osd(a) => osd(a, ms),
        Command::Rados(a) => rados(a, ms),
    }
}

fn runtime() -> Res<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// The options of `valued` that were given, then the messenger options
/// `ms`, in order: each flag with its value, or the error of a flag
/// given none.
fn given_options<const N: usize>(
    valued: [(&'static str, Option<String>); N],
    ms: MsOptions,
) -> impl Iterator<Item = (String, Result<String, String>)> {
    valued
        .into_iter()
        .filter_map(|(flag, v)| Some((flag.to_string(), Some(v?))))
        .chain(ms)
        .map(|(flag, v)| {
            let v = v.ok_or_else(|| format!("{flag} needs a value"));
            (flag, v)
        })
}

/// The cluster options as Ceph's option table takes them (with the
/// messenger options `ms`), and whether any but `--rev0` was given.
fn cluster(a: ClusterArgs, ms: MsOptions) -> Res<(ClusterOpts, bool)> {
    let mut opts = ClusterOpts::default();
    let mut given = false;
    let valued = [
        ("--conf", a.conf),
        ("--name", a.name),
        ("--id", a.id),
        ("--keyring", a.keyring),
        ("--mon-host", a.mon_host),
        ("--cluster", a.cluster),
    ];
    for (flag, value) in given_options(valued, ms) {
        given = true;
        opts.take(&flag, || value.clone())?;
    }
    opts.mode = a.mode;
    given |= a.mode.is_some() || a.auth_none_fallback;
    opts.rev0 = a.rev0;
    opts.auth_none_fallback = a.auth_none_fallback;
    Ok((opts, given))
}

fn bench(a: BenchArgs) -> Res<ExitCode> {
    let mut o = BenchOpts {
        connect: a.connect,
        size: a.size,
        depth: a.depth.max(1),
        conns: a.conns.max(1),
        duration: a.duration.map(Duration::from_secs_f64),
        count: a.count,
        net: NetOpts {
            policy: a.policy,
            inject_socket_failures: a.inject_socket_failures,
            rev1: !a.rev0,
            uring: a.transport.uring(),
            ..Default::default()
        },
        server_net: NetOpts {
            policy: msgr_protocol::PolicyName::StatelessServer,
            shards: a.shards.map(|s| s.max(1)),
            hand_out: a.server_hand_out,
            uring: a.transport.uring(),
            ring_shards: a.transport == ShardTransport::Ring,
            ..Default::default()
        },
        name: a.name,
        vs_crc: a.vs_crc,
        verify: a.verify,
        give_up: a.give_up.map(Duration::from_secs_f64),
        probe: a
            .probe
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .map(|ms| msgr_cli::bench::Probe {
                interval: Duration::from_secs_f64(ms / 1000.0),
                priority: a.probe_priority,
            }),
        raw: a.raw,
        raw_only: a.raw_only,
        json: a.json,
        server_workers: a.server_tokio_mt.map(|w| w.max(1)),
        foreign_sends: a.foreign_sends,
        server_pid: a.server_pid,
    };
    let security = SecurityOpts::from_args(a.security)?.resolve(false)?;
    o.net.security = security.clone();
    // The in-process server allows both modes: the client chooses.
    o.server_net.security = msgr_cli::security::Security {
        mode: None,
        ..security
    };
    o.server_net.compress_all_peers = true;
    if o.duration.is_none() && o.count.is_none() {
        o.duration = Some(Duration::from_secs(5));
    }
    // The in-process server mirrors the client: a lossless client gets a
    // stateful server (so sessions survive faults), a lossy one a stateless.
    match a.server_policy {
        Some(p) => o.server_net.policy = p,
        None if !o.net.policy.policy().lossy => {
            o.server_net.policy = msgr_protocol::PolicyName::StatefulServer
        }
        None => {}
    }
    o.server_net.inject_socket_failures = o.net.inject_socket_failures;
    o.server_net.rev1 = o.net.rev1;
    o.server_net.thread_name = Some(msgr_cli::common::SERVER_SHARDS.into());
    if o.server_workers.is_some() {
        o.server_net.shards = Some(1);
    }
    // Each bench connection is a client messenger of its own: one shard,
    // in the bench's runtime.
    o.net.shards = Some(1);
    // The client runs on this thread's runtime and the in-process server on
    // its own thread: one core each, as two processes would.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ok = rt.block_on(msgr_cli::bench::run(o))?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn serve(a: ServeArgs, ms: MsOptions) -> Res<ExitCode> {
    // ms_bind_msgr1 / ms_bind_msgr2 for a bare --bind IP:PORT,
    // admin_socket_mode for --admin-socket, and a ceph.conf to read them
    // from, as a daemon takes them.
    let mut conf = msgr_config::ConfigOptions::default();
    let valued = [
        ("--conf", a.conf),
        ("--admin_socket_mode", a.admin_socket_mode),
    ];
    for (flag, value) in given_options(valued, ms) {
        conf.take(&flag, &mut std::iter::once(value?))?;
    }
    let net = NetOpts {
        policy: a.policy,
        inject_socket_failures: a.inject_socket_failures,
        rev1: !a.rev0,
        security: SecurityOpts::from_args(a.security)?.resolve(true)?,
        compress_all_peers: true,
        shards: a.shards.map(|s| s.max(1)),
        uring: a.transport.uring(),
        ring_shards: a.transport == ShardTransport::Ring,
        ..Default::default()
    };
    let interval = a.stats.map(Duration::from_secs_f64);
    let duration = a.duration.map(Duration::from_secs_f64);
    let admin = match a.admin_socket {
        Some(path) => Some((
            path,
            msgr_cli::serve::admin_socket_options(conf.clone(), &a.name)?,
        )),
        None => None,
    };
    let (msgr1, msgr2) = msgr_cli::serve::bind_protocols(conf, &a.name)?;
    // Repeated, the addresses add up: `--bind v2:IP:P --bind v1:IP:Q`
    // listens for both protocols and advertises both.
    let bind = msgr_cli::serve::bind_addrs(&a.bind, msgr1, msgr2)?;
    // One thread: with one shard the messenger runs here, in crimson's
    // model (a shard is a thread; tokio's work-stealing runtime would move
    // its connections' tasks between threads); with more, the shards are
    // threads of their own and this one only prints statistics.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if a.raw {
        let addr = bind
            .0
            .first()
            .and_then(|a| a.addr)
            .ok_or("serve --raw needs an IP address")?;
        rt.block_on(msgr_cli::serve::run_raw(
            addr,
            a.transport.uring(),
            interval,
            duration,
        ))?;
    } else {
        rt.block_on(msgr_cli::serve::run(
            bind, a.name, a.nonce, net, interval, duration, admin,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn ping(a: PingArgs, ms: MsOptions) -> Res<ExitCode> {
    let (cluster, used_cluster_opts) = cluster(a.cluster, ms)?;
    let target = a
        .target
        .ok_or("ping needs an address (or, with a cluster, osd.N)")?;
    let with_cluster = used_cluster_opts
        || std::env::var_os("CEPH_CONF").is_some()
        || std::env::var_os("CEPH_ARGS").is_some();
    let o = msgr_cli::ping::PingOpts {
        target,
        count: a.count.max(1),
        interval: Duration::from_millis(a.interval),
        tell: a.tell,
        rev1: !cluster.rev0,
        cluster: with_cluster.then_some(cluster),
    };
    match runtime()?.block_on(msgr_cli::ping::run(&o)) {
        Ok(pongs) => {
            let ms: Vec<f64> = pongs.iter().map(|p| p.rtt.as_secs_f64() * 1e3).collect();
            let avg = ms.iter().sum::<f64>() / ms.len() as f64;
            let min = ms.iter().cloned().fold(f64::MAX, f64::min);
            let max = ms.iter().cloned().fold(0.0, f64::max);
            outln!(
                "{} keepalives, rtt min/avg/max = {min:.3}/{avg:.3}/{max:.3} ms",
                ms.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("msgr ping: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn decode(a: DecodeArgs) -> Res<ExitCode> {
    let keys = match &a.keys {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            msgr_inspect::KeyLog::parse(&text)?
        }
        None => msgr_inspect::KeyLog::default(),
    };
    let path = a.capture.ok_or("decode needs a capture file")?;
    let capture = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary = msgr_inspect::decode::decode(&capture, &keys, a.json, &mut out)?;
    Ok(if summary.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn crush(a: CrushArgs) -> Res<ExitCode> {
    let mut t = msgr_cli::crush_cmd::CrushTest {
        max_x: 1023,
        min_rep: 1,
        max_rep: 1,
        rule: a.rule,
        pool_id: a.pool_id,
        ..Default::default()
    };
    if let Some(x) = a.min_x {
        t.min_x = x;
    }
    if let Some(x) = a.max_x {
        t.max_x = x;
    }
    if let Some(x) = a.x {
        (t.min_x, t.max_x) = (x, x);
    }
    if let Some(n) = a.num_rep {
        (t.min_rep, t.max_rep) = (n, n);
    }
    if let Some(n) = a.min_rep {
        t.min_rep = n;
    }
    if let Some(n) = a.max_rep {
        t.max_rep = n;
    }
    for pair in a.weight.chunks(2) {
        let [dev, w] = pair else {
            return Err("--weight needs DEV and W".into());
        };
        let dev: usize = dev.parse().map_err(|_| format!("{dev}: not a number"))?;
        let w: f64 = w.parse().map_err(|_| format!("{w}: not a weight"))?;
        t.weights.insert(dev, w);
    }
    if !(a.test && a.show_mappings) {
        return Err("crush: only --test --show-mappings is implemented".into());
    }
    let path = a.map.ok_or("crush needs -i MAP")?;
    let data = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let map = msgr_crush::CrushMap::decode(&data).map_err(|e| format!("{path}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    msgr_cli::crush_cmd::run(&map, &t, &mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(ExitCode::SUCCESS)
}

fn osd(a: OsdArgs, ms: MsOptions) -> Res<ExitCode> {
    use msgr_cli::osd::{Format, ObjectName};
    let format = Format::parse(&a.format)?;
    let (opts, _) = cluster(a.cluster, ms)?;
    let words: Vec<&str> = a.words.iter().map(String::as_str).collect();
    let one = |name: &str, nspace: &str| ObjectName {
        nspace: nspace.to_string(),
        name: name.to_string(),
    };
    let (pool, objects) =
        match (words.as_slice(), &a.objects) {
            (["map", pool], Some(file)) => {
                let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
                (*pool, msgr_cli::osd::parse_objects(&text))
            }
            (["map", pool, obj], None) => (*pool, vec![one(obj, "")]),
            (["map", pool, obj, ns], None) => (*pool, vec![one(obj, ns)]),
            _ => return Err(
                "osd: expected map POOL OBJ [NSPACE] or map POOL --objects FILE (msgr osd --help)"
                    .into(),
            ),
        };
    printing("osd", msgr_cli::osd::map(&opts, pool, &objects, format), 2)
}

fn rados(a: RadosArgs, ms: MsOptions) -> Res<ExitCode> {
    let mut cmd_opts = msgr_cli::rados_cmd::CmdOpts {
        all: a.all,
        no_cleanup: a.no_cleanup,
        json: a.format.as_deref() == Some("json"),
        lock: msgr_cli::rados_lock::LockOpts {
            tag: a.lock_tag,
            cookie: a.lock_cookie,
            description: a.lock_description,
            duration: a.lock_duration,
            kind: a.lock_type,
            pretty: a.format.as_deref() == Some("json-pretty"),
        },
        ..Default::default()
    };
    if let Some(n) = a.concurrent_ios {
        cmd_opts.concurrency = n;
    }
    cmd_opts.concurrency_given = a.concurrent_ios;
    if let Some(n) = a.block_size {
        cmd_opts.op_size = n;
    }
    let mut words = a.words.clone();
    if a.really {
        words.push(msgr_cli::rados_snap::REALLY.to_string());
    }
    if let Some(cmd) = msgr_cli::rados_snap::SnapCmd::parse(&words) {
        let cmd = cmd.map_err(|e| format!("rados: {e}"))?;
        let (opts, _) = cluster(a.cluster, ms)?;
        let work = msgr_cli::rados_snap::run(&opts, a.transport.uring(), a.pool.as_deref(), &cmd);
        return printing_on(a.transport, "rados", work, 1);
    }
    let (opts, _) = cluster(a.cluster, ms)?;
    if a.words == ["df"] {
        let work =
            msgr_cli::rados_df::run(&opts, a.transport.uring(), a.pool.as_deref(), cmd_opts.json);
        return printing_on(a.transport, "rados", work, 1);
    }
    let cmd = msgr_cli::rados_cmd::RadosCmd::parse(&a.words, &cmd_opts)
        .map_err(|e| format!("rados: {e} (msgr rados --help)"))?;
    let pool = a.pool.ok_or("rados: -p POOL is needed")?;
    printing_on(
        a.transport,
        "rados",
        msgr_cli::rados_cmd::run(
            &opts,
            a.transport.uring(),
            &pool,
            &a.namespace,
            a.snap.as_deref(),
            &cmd,
        ),
        1,
    )
}

/// Runs a command's work on a current-thread runtime: its text to
/// stdout, or `msgr NAME: ERROR` to stderr and exit status `code`.
fn printing(
    name: &str,
    work: impl std::future::Future<Output = Result<String, String>>,
    code: u8,
) -> Res<ExitCode> {
    printing_on(ShardTransport::Tcp, name, work, code)
}

/// [`printing`], on a loop that waits in its own io_uring for `ring`
/// (`msgr_uring::exec`: the client's tasks, timers and sockets there, one
/// system call a turn), else on tokio's.
fn printing_on(
    transport: ShardTransport,
    name: &str,
    work: impl std::future::Future<Output = Result<String, String>>,
    code: u8,
) -> Res<ExitCode> {
    let done = match transport {
        ShardTransport::Ring => {
            // What still asks tokio for its reactor or timers (a part not
            // on msgr_uring::rt) finds a runtime, driven by its own thread.
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("msgr-tokio")
                .enable_all()
                .build()?;
            let _tokio = tokio.enter();
            // A client's loop: its timers and a few sockets' receives and
            // sends per turn (a full submission queue is submitted, not
            // refused).
            msgr_uring::exec::Executor::new(256)?.block_on(work)?
        }
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work),
    };
    match done {
        Ok(text) => {
            out!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("msgr {name}: {e}");
            Ok(ExitCode::from(code))
        }
    }
}

/// `msgr mon mgr JSON` / `msgr mon tell mgr.NAME JSON` (mgr_cmd.rs).
fn mgr(opts: &msgr_cli::identity::ClusterOpts, target: Option<&str>, json: &str) -> Res<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(mon_printed(
        rt.block_on(msgr_cli::mgr_cmd::run(opts, target, json)),
    ))
}

/// What `msgr mon` prints of a finished request, and its exit code.
fn mon_printed(done: Result<msgr_cli::mon::MonOutput, String>) -> ExitCode {
    match done {
        Ok(out) => {
            out!("{}", out.stdout);
            eprint!("{}", out.stderr);
            ExitCode::from(out.code)
        }
        Err(e) => {
            eprintln!("msgr mon: {e}");
            ExitCode::from(1)
        }
    }
}

fn mon(a: MonArgs, ms: MsOptions) -> Res<ExitCode> {
    use msgr_cli::mon::MonAction;
    let (opts, _) = cluster(a.cluster, ms)?;
    let words: Vec<&str> = a.words.iter().map(String::as_str).collect();
    let action = match words.as_slice() {
        ["status"] | [] => MonAction::Status,
        ["monmap"] => MonAction::Monmap,
        ["command", json] => MonAction::Command(json.to_string()),
        ["mgr", json] => return mgr(&opts, None, json),
        ["tell", target, json] => return mgr(&opts, Some(target), json),
        _ => {
            return Err(
                "mon: expected status, monmap, command JSON, mgr JSON or tell \
                        mgr.NAME JSON (msgr mon --help)"
                    .into(),
            )
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(mon_printed(
        rt.block_on(msgr_cli::mon::run(&opts, action, a.json)),
    ))
}
