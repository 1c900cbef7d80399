//! `msgr`: a native Ceph messenger toolbox, speaking msgr2 and msgr1.
#![forbid(unsafe_code)]
// Arithmetic and indexing are checked where peers' bytes are parsed (the
// protocol crates); this tool counts and formats its own measurements.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

/// The tool's allocator. A messenger allocates in bursts (a window of
/// messages encoded, then freed when acked), which glibc's per-thread
/// caches (7 chunks per size) do not absorb; Ceph's daemons link tcmalloc
/// for the same reason. mimalloc cut the bench's CPU per message by about
/// 4 % (BENCHMARKS.md). The library crates leave the choice to their user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;
use std::time::Duration;

use lexopt::prelude::*;
use msgr_cli::bench::BenchOpts;
use msgr_cli::common::NetOpts;
use msgr_cli::{out, outln};
use msgr_encoding::{EntityAddrvec, EntityName};

const USAGE: &str = "\
usage: msgr <command> [options]

commands:
  bench [--connect ADDR] [--size BYTES] [--depth N] [--conns N]
        [--duration S | --count N] [--policy P] [--server-policy P]
        [--inject-socket-failures N] [--rev0] [--verify] [--raw] [--json]
        [--name TYPE.N] [--vs-crc] [--shards S | --server-tokio-mt W]
        [--foreign-sends] [--server-hand-out] [--transport tcp|uring]
        [--raw-only] [--server-pid PID] [SECURITY OPTIONS]
      MOSDOp writes of SIZE bytes (default 4096), DEPTH in flight (16) on
      each of CONNS connections (1), for S seconds (5) or N messages; replies
      awaited. Without --connect, a server runs in this process on loopback.
      --verify checks every reply (tid, data checksum) and counts lost,
      duplicated and reordered messages. --raw first runs the same pattern
      over plain TCP: the baseline, in the same run. --vs-crc first runs the
      same bench in crc mode and reports this mode against it (and both
      handshake times). --json prints one object. The in-process server
      runs on S shards (default: the cores this process may use), or with
      --server-tokio-mt on one shard in tokio's multi-threaded runtime of W
      workers; each client connection is a one-shard messenger of its own.
      --foreign-sends: requests are sent from a thread of their own rather
      than from the dispatcher that took the reply. --server-hand-out: one
      listener hands connections to the server's shards in turn (rather
      than every shard accepting on the port, SO_REUSEPORT). --transport
      uring: both sides move bytes through io_uring (default tcp: epoll).
      --raw-only runs only the raw TCP pattern, against --connect's address
      (a msgr serve --raw) when given. A timed run also reports its steady
      part (from a second after every connection's first reply to a second
      before the end: msgs/s and CPU per message without the handshakes),
      with the CPU of the server process --server-pid when given.

  serve --bind ADDR [--name osd.0] [--nonce N] [--policy P] [--shards S]
        [--inject-socket-failures N] [--rev0] [--stats SECONDS] [--duration S]
        [--transport tcp|uring] [--raw] [--admin-socket PATH]
        [--admin_socket_mode MODE] [SECURITY OPTIONS]
      Answers MOSDOp with MOSDOpReply and MPing with MPing on each ADDR
      (msgr2 on v2:IP:PORT, msgr1 on v1:IP:PORT; --bind repeats; a bare
      IP:PORT binds as a Ceph daemon does, [v2:IP:PORT,v1:IP:PORT+1], under
      --ms_bind_msgr2 / --ms_bind_msgr1, CEPH_ARGS or ceph.conf), on S shards
      (threads pinned to cores; default: the cores this process may use),
      moving bytes through epoll (tcp, the default) or io_uring. --raw
      serves bench's raw TCP pattern instead, on one thread (the baseline
      for msgr bench --raw-only --connect). --admin-socket PATH answers
      Ceph's admin socket protocol there (ceph --admin-daemon PATH perf
      dump | perf schema | messenger dump client | config show | help),
      the file's mode from admin_socket_mode (octal, e.g. 0660; also from
      CEPH_ARGS or ceph.conf), 0600 (its owner only) when unset.
      --stats prints the messenger's counters every SECONDS.

Security options (serve and bench):
  --auth none|cephx   --keyring FILE   --mode crc|secure
  --compress none|force   --compress-algorithms snappy,zlib,zstd,lz4
  With cephx, the keyring holds the client's key [client.admin] and the
  service secret [osd.] a monitor would hold; serve writes a new one if
  FILE does not exist, the in-process bench makes a temporary one. serve
  grants compression to any peer that asks; a bench client asks OSDs.

  ping ADDR|osd.N [CLUSTER OPTIONS] [--count N] [--interval MS] [--rev0]
       [--tell JSON]
      KEEPALIVE2 round trips to any peer, over msgr2 (learning its type
      from its HELLO) or msgr1 (a v1: address, or --ms_bind_msgr2=false).
      Without cluster options: auth none. With them (or CEPH_CONF /
      CEPH_ARGS): service tickets from the monitors and a cephx authorizer,
      as a Ceph client; OSDs may be named (osd.0), and an address without a
      nonce is completed from the OSD map. --tell then sends the peer a
      command (MCommand, as `ceph tell` does) and prints its reply.

  mon [CLUSTER OPTIONS] [--json] status | monmap | command JSON
      Connects to the cluster's monitors like the ceph CLI (hunting,
      cephx or none, monmap), then prints the cluster status (fsid, health,
      monitors, OSDs), the monmap, or the reply to any monitor command,
      e.g. command '{\"prefix\": \"osd dump\", \"format\": \"json\"}'.

Cluster options (as the ceph CLI's; CEPH_ARGS and CEPH_CONF are read too):
  -c/--conf FILE  -n/--name TYPE.ID  --id ID  -k/--keyring FILE
  -m/--mon-host ADDRS  --cluster NAME  --mode crc|secure  --rev0
  --auth-none-fallback  (with a key, still accept a monitor that offers
                         only auth none; off by default: an attacker on
                         the path could force it)

  osd map POOL OBJ [NSPACE] | osd map POOL --objects FILE
          [CLUSTER OPTIONS] [-f plain|json|json-pretty]
      Where objects live, computed here from the OSD map the monitors send
      (CRUSH, upmaps, primary affinity, pg_temp), printed as ceph osd map
      prints it. --objects places every line of FILE (NAME, or
      NSPACE<TAB>NAME) against one map.

  rados -p POOL [-N NSPACE] [CLUSTER OPTIONS] put OBJ FILE|- | get OBJ FILE|-
        | stat OBJ | rm OBJ... | ls [--all] | setxattr OBJ NAME VALUE
        | getxattr OBJ NAME | listxattr OBJ | rmxattr OBJ NAME
        | setomapval OBJ KEY VALUE | listomapkeys OBJ | rmomapkey OBJ KEY
        | listomapvals OBJ (KEY<TAB>VALUE a line)
        | bench SECONDS write|seq|rand [-t N] [-b SIZE] [--no-cleanup]
          [-f json]
      The rados tool's commands on our RADOS client (objecter, OSD map,
      CRUSH): put and get move whole objects in 4 MiB pieces, as rados does;
      stat prints POOL/OBJ mtime TIME, size N; ls lists the namespace (or
      all, NSPACE<TAB>NAME). bench writes and reads the objects rados bench
      does (same names, contents and metadata object: each tool reads what
      the other wrote), printing what it prints.

  crush -i MAP --test --show-mappings [--rule R] [--num-rep N | --min-rep N
        --max-rep N] [--min-x X] [--max-x X | --x X] [--weight DEV W]
        [--pool-id P]
      Maps inputs through a CRUSH map (crushtool -o, ceph osd getcrushmap)
      with our mapper, printing what crushtool --test --show-mappings
      prints: CRUSH rule R x X [a,b,c].

  decode CAPTURE [--json] [--keys FILE]
      Print every msgr2 frame of a pcap/pcapng capture, per connection and
      direction. --json prints one JSON object per line. --keys names a file
      of connection secrets for secure-mode connections, one per line:
        CLIENT_IP:PORT SERVER_IP:PORT SECRET_HEX
        conn=N SECRET_HEX
      (# starts a comment). Exit status 0 when every stream decoded cleanly,
      1 when some stream had a problem (reported inline), 2 on usage errors.

Logs (stderr): --debug-ms N anywhere (Ceph's debug_ms: 0 warnings, 1 every
message and fault, 5 handshakes and state changes, 20 all), else debug_ms
in CEPH_ARGS or ceph.conf; RUST_LOG overrides both.

Policies: lossy-client, lossless-client, stateless-server,
stateless-registered-server, stateful-server, lossless-peer,
lossless-peer-reuse. Addresses: v2:IP:PORT[/NONCE].
";

type Res<T> = Result<T, Box<dyn std::error::Error>>;

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
    msgr_cli::logging::init(debug_ms)?;
    let mut parser = lexopt::Parser::from_iter(args);
    let command = match parser.next()? {
        Some(Value(v)) => v.string()?,
        Some(Long("help") | Short('h')) | None => {
            out!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Some(other) => return Err(other.unexpected().into()),
    };
    if matches!(command.as_str(), "bench" | "serve") {
        // Thousands of connections: as many files as the hard limit allows
        // (a limit it cannot raise is left as it is).
        let _ = msgr_sys::raise_fd_limit();
    }
    match command.as_str() {
        "decode" => decode(parser),
        "crush" => crush(parser),
        "bench" => bench(parser),
        "serve" => serve(parser),
        "ping" => ping(parser),
        "mon" => mon(parser),
        "osd" => osd(parser),
        "rados" => rados(parser),
        other => Err(format!("unknown command {other:?}\n\n{USAGE}").into()),
    }
}

/// The next option as an owned `-x` / `--long` string (no positional
/// arguments are expected).
fn next_flag(parser: &mut lexopt::Parser) -> Res<Option<String>> {
    Ok(match parser.next()? {
        None => None,
        Some(Short(c)) => Some(format!("-{c}")),
        Some(Long(l)) => Some(format!("--{l}")),
        Some(Value(v)) => return Err(format!("unexpected argument {v:?}").into()),
    })
}

fn runtime() -> Res<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn parse<T: std::str::FromStr>(parser: &mut lexopt::Parser) -> Res<T>
where
    T::Err: std::fmt::Display,
{
    let v: String = parser.value()?.string()?;
    v.parse::<T>().map_err(|e| format!("{v:?}: {e}").into())
}

fn bench(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut o = BenchOpts {
        connect: None,
        size: 4096,
        depth: 16,
        conns: 1,
        duration: None,
        count: None,
        net: NetOpts::default(),
        server_net: NetOpts {
            policy: msgr_protocol::PolicyName::StatelessServer,
            ..Default::default()
        },
        name: None,
        vs_crc: false,
        verify: false,
        raw: false,
        raw_only: false,
        json: false,
        server_workers: None,
        foreign_sends: false,
        server_pid: None,
    };
    let mut server_policy_set = false;
    let mut sec = msgr_cli::security::SecurityOpts::default();
    while let Some(flag) = next_flag(&mut parser)? {
        if sec.take(&flag, &mut parser)? {
            continue;
        }
        match flag.as_str() {
            "--policy" => o.net.policy = parse(&mut parser)?,
            "--inject-socket-failures" => o.net.inject_socket_failures = parse(&mut parser)?,
            "--rev0" => o.net.rev1 = false,
            "--connect" => o.connect = Some(parse::<EntityAddrvec>(&mut parser)?),
            "--name" => o.name = Some(parse(&mut parser)?),
            "--size" => o.size = parse(&mut parser)?,
            "--depth" => o.depth = parse::<usize>(&mut parser)?.max(1),
            "--conns" => o.conns = parse::<usize>(&mut parser)?.max(1),
            "--shards" => o.server_net.shards = Some(parse::<usize>(&mut parser)?.max(1)),
            "--foreign-sends" => o.foreign_sends = true,
            "--server-hand-out" => o.server_net.hand_out = true,
            "--transport" => {
                let uring = msgr_cli::args::parse_transport(&parser.value()?.string()?)?;
                (o.net.uring, o.server_net.uring) = (uring, uring);
            }
            "--server-tokio-mt" => o.server_workers = Some(parse::<usize>(&mut parser)?.max(1)),
            "--duration" => o.duration = Some(Duration::from_secs_f64(parse(&mut parser)?)),
            "--count" => o.count = Some(parse(&mut parser)?),
            "--server-policy" => {
                o.server_net.policy = parse(&mut parser)?;
                server_policy_set = true;
            }
            "--verify" => o.verify = true,
            "--raw" => o.raw = true,
            "--raw-only" => o.raw_only = true,
            "--server-pid" => o.server_pid = Some(parse(&mut parser)?),
            "--vs-crc" => o.vs_crc = true,
            "--json" => o.json = true,
            "--help" | "-h" => {
                out!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unexpected option {other}").into()),
        }
    }
    let security = sec.resolve(false)?;
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
    if !server_policy_set && !o.net.policy.policy().lossy {
        o.server_net.policy = msgr_protocol::PolicyName::StatefulServer;
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

fn serve(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut binds: Vec<String> = Vec::new();
    let mut conf = msgr_config::ConfigOptions::default();
    let mut name: EntityName = "osd.0".parse()?;
    let mut nonce = 0u32;
    let mut net = NetOpts {
        policy: msgr_protocol::PolicyName::StatelessServer,
        ..Default::default()
    };
    let mut interval = None;
    let mut duration = None;
    let mut raw = false;
    let mut admin = None;
    let mut sec = msgr_cli::security::SecurityOpts::default();
    while let Some(flag) = next_flag(&mut parser)? {
        if sec.take(&flag, &mut parser)? {
            continue;
        }
        match flag.as_str() {
            "--policy" => net.policy = parse(&mut parser)?,
            "--inject-socket-failures" => net.inject_socket_failures = parse(&mut parser)?,
            "--rev0" => net.rev1 = false,
            // Repeated, the addresses add up: `--bind v2:IP:P --bind v1:IP:Q`
            // listens for both protocols and advertises both.
            "--bind" => binds.push(parser.value()?.string()?),
            // ms_bind_msgr1 / ms_bind_msgr2 for a bare --bind IP:PORT,
            // admin_socket_mode for --admin-socket, and a ceph.conf to read
            // them from, as a daemon takes them.
            f if f.starts_with("--ms_")
                || f.starts_with("--ms-")
                || f == "--admin_socket_mode"
                || f == "--admin-socket-mode"
                || f == "-c"
                || f == "--conf" =>
            {
                let v = msgr_cli::args::option_value(&mut parser)?;
                conf.take(f, &mut std::iter::once(v))?;
            }
            "--name" => name = parse(&mut parser)?,
            "--nonce" => nonce = parse(&mut parser)?,
            "--shards" => net.shards = Some(parse::<usize>(&mut parser)?.max(1)),
            "--transport" => {
                net.uring = msgr_cli::args::parse_transport(&parser.value()?.string()?)?
            }
            "--stats" => interval = Some(Duration::from_secs_f64(parse(&mut parser)?)),
            "--raw" => raw = true,
            "--admin-socket" => admin = Some(std::path::PathBuf::from(parser.value()?)),
            "--duration" => duration = Some(Duration::from_secs_f64(parse(&mut parser)?)),
            "--help" | "-h" => {
                out!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unexpected option {other}").into()),
        }
    }
    net.security = sec.resolve(true)?;
    net.compress_all_peers = true;
    if binds.is_empty() {
        return Err("serve needs --bind v2:IP:PORT (or v1:IP:PORT for msgr1, or IP:PORT)".into());
    }
    let admin = match admin {
        Some(path) => Some((
            path,
            msgr_cli::serve::admin_socket_options(conf.clone(), &name)?,
        )),
        None => None,
    };
    let (msgr1, msgr2) = msgr_cli::serve::bind_protocols(conf, &name)?;
    let bind = msgr_cli::serve::bind_addrs(&binds, msgr1, msgr2)?;
    // One thread: with one shard the messenger runs here, in crimson's
    // model (a shard is a thread; tokio's work-stealing runtime would move
    // its connections' tasks between threads); with more, the shards are
    // threads of their own and this one only prints statistics.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if raw {
        let addr = bind
            .0
            .first()
            .and_then(|a| a.addr)
            .ok_or("serve --raw needs an IP address")?;
        rt.block_on(msgr_cli::serve::run_raw(addr, interval, duration))?;
    } else {
        rt.block_on(msgr_cli::serve::run(
            bind, name, nonce, net, interval, duration, admin,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn ping(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut cluster = msgr_cli::identity::ClusterOpts::default();
    let mut used_cluster_opts = false;
    let mut target: Option<String> = None;
    let mut count = 3u32;
    let mut interval = Duration::from_millis(200);
    let mut tell = None;
    while let Some(arg) = parser.next()? {
        let flag = match arg {
            Value(v) if target.is_none() => {
                target = Some(v.string()?);
                continue;
            }
            Value(v) => return Err(format!("unexpected argument {:?}", v).into()),
            Short(c) => format!("-{c}"),
            Long(l) => format!("--{l}"),
        };
        if cluster.take(&flag, || msgr_cli::args::option_value(&mut parser))? {
            used_cluster_opts |= flag != "--rev0";
            continue;
        }
        match flag.as_str() {
            "--count" => count = parse(&mut parser)?,
            "--interval" => interval = Duration::from_millis(parse(&mut parser)?),
            "--tell" => tell = Some(parser.value()?.string()?),
            "--help" | "-h" => {
                out!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unexpected option {other}").into()),
        }
    }
    let target = target.ok_or("ping needs an address (or, with a cluster, osd.N)")?;
    let with_cluster = used_cluster_opts
        || std::env::var_os("CEPH_CONF").is_some()
        || std::env::var_os("CEPH_ARGS").is_some();
    let o = msgr_cli::ping::PingOpts {
        target,
        count: count.max(1),
        interval,
        tell,
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

fn decode(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut path = None;
    let mut json = false;
    let mut keys = msgr_inspect::KeyLog::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Long("keys") => {
                let file: String = parser.value()?.string()?;
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
                keys = msgr_inspect::KeyLog::parse(&text)?;
            }
            Value(v) if path.is_none() => path = Some(v.string()?),
            Long("help") | Short('h') => {
                out!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(other.unexpected().into()),
        }
    }
    let path = path.ok_or("decode needs a capture file")?;
    let capture = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary = msgr_inspect::decode::decode(&capture, &keys, json, &mut out)?;
    Ok(if summary.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn crush(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut path = None;
    let mut t = msgr_cli::crush_cmd::CrushTest {
        max_x: 1023,
        min_rep: 1,
        max_rep: 1,
        ..Default::default()
    };
    let (mut test, mut show) = (false, false);
    while let Some(arg) = parser.next()? {
        let num = |p: &mut lexopt::Parser| -> Res<i64> {
            let v: String = p.value()?.string()?;
            v.parse().map_err(|_| format!("{v}: not a number").into())
        };
        match arg {
            Short('i') | Long("infn") => path = Some(parser.value()?.string()?),
            Long("test") => test = true,
            Long("show-mappings") => show = true,
            Long("min-x") => t.min_x = i32::try_from(num(&mut parser)?)?,
            Long("max-x") => t.max_x = i32::try_from(num(&mut parser)?)?,
            Long("x") => {
                t.min_x = i32::try_from(num(&mut parser)?)?;
                t.max_x = t.min_x;
            }
            Long("rule") => t.rule = Some(usize::try_from(num(&mut parser)?)?),
            Long("num-rep") => {
                t.min_rep = usize::try_from(num(&mut parser)?)?;
                t.max_rep = t.min_rep;
            }
            Long("min-rep") => t.min_rep = usize::try_from(num(&mut parser)?)?,
            Long("max-rep") => t.max_rep = usize::try_from(num(&mut parser)?)?,
            Long("pool-id") => t.pool_id = Some(num(&mut parser)?),
            Long("weight") | Short('w') => {
                let dev = usize::try_from(num(&mut parser)?)?;
                let w: String = parser.value()?.string()?;
                let w: f64 = w.parse().map_err(|_| format!("{w}: not a weight"))?;
                t.weights.insert(dev, w);
            }
            Long("help") | Short('h') => {
                out!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(other.unexpected().into()),
        }
    }
    if !(test && show) {
        return Err("crush: only --test --show-mappings is implemented".into());
    }
    let path = path.ok_or("crush needs -i MAP")?;
    let data = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let map = msgr_crush::CrushMap::decode(&data).map_err(|e| format!("{path}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    msgr_cli::crush_cmd::run(&map, &t, &mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(ExitCode::SUCCESS)
}

fn osd(mut parser: lexopt::Parser) -> Res<ExitCode> {
    use msgr_cli::osd::{Format, ObjectName};
    let mut format = Format::Plain;
    let mut objects_file: Option<String> = None;
    let Some((opts, words)) = cluster_command(&mut parser, |flag, p| {
        match flag {
            "-f" | "--format" => format = Format::parse(&p.value()?.string()?)?,
            "--objects" => objects_file = Some(p.value()?.string()?),
            _ => return Ok(false),
        }
        Ok(true)
    })?
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let one = |name: &str, nspace: &str| ObjectName {
        nspace: nspace.to_string(),
        name: name.to_string(),
    };
    let (pool, objects) = match (words.as_slice(), &objects_file) {
        (["map", pool], Some(file)) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            (*pool, msgr_cli::osd::parse_objects(&text))
        }
        (["map", pool, obj], None) => (*pool, vec![one(obj, "")]),
        (["map", pool, obj, ns], None) => (*pool, vec![one(obj, ns)]),
        _ => {
            return Err(format!(
                "osd: expected map POOL OBJ [NSPACE] or map POOL --objects FILE\n\n{USAGE}"
            )
            .into())
        }
    };
    printing("osd", msgr_cli::osd::map(&opts, pool, &objects, format), 2)
}

fn rados(mut parser: lexopt::Parser) -> Res<ExitCode> {
    let mut pool: Option<String> = None;
    let mut nspace = String::new();
    let mut cmd_opts = msgr_cli::rados_cmd::CmdOpts::default();
    let Some((opts, words)) = cluster_command(&mut parser, |flag, p| {
        match flag {
            "-p" | "--pool" => pool = Some(p.value()?.string()?),
            "-N" | "--namespace" => nspace = p.value()?.string()?,
            "--all" => cmd_opts.all = true,
            "-t" | "--concurrent-ios" => cmd_opts.concurrency = p.value()?.parse()?,
            "-b" | "--block-size" => cmd_opts.op_size = parse_size(&p.value()?.string()?)?,
            "--no-cleanup" => cmd_opts.no_cleanup = true,
            "-f" | "--format" => cmd_opts.json = p.value()?.string()? == "json",
            _ => return Ok(false),
        }
        Ok(true)
    })?
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let cmd = msgr_cli::rados_cmd::RadosCmd::parse(&words, &cmd_opts)
        .map_err(|e| format!("rados: {e}\n\n{USAGE}"))?;
    let pool = pool.ok_or("rados: -p POOL is needed")?;
    printing(
        "rados",
        msgr_cli::rados_cmd::run(&opts, &pool, &nspace, &cmd),
        1,
    )
}

/// The cluster options and the words of a command that talks to a
/// cluster; `own` takes the command's own flags (false: not one of them).
/// `None` when `--help` was asked for (and printed).
fn cluster_command(
    parser: &mut lexopt::Parser,
    mut own: impl FnMut(&str, &mut lexopt::Parser) -> Res<bool>,
) -> Res<Option<(msgr_cli::identity::ClusterOpts, Vec<String>)>> {
    let mut opts = msgr_cli::identity::ClusterOpts::default();
    let mut words: Vec<String> = Vec::new();
    while let Some(arg) = parser.next()? {
        let flag = match arg {
            Value(v) => {
                words.push(v.string()?);
                continue;
            }
            Short(c) => format!("-{c}"),
            Long(l) => format!("--{l}"),
        };
        if opts.take(&flag, || msgr_cli::args::option_value(parser))? {
            continue;
        }
        if flag == "--help" || flag == "-h" {
            out!("{USAGE}");
            return Ok(None);
        }
        if !own(&flag, parser)? {
            return Err(format!("unexpected option {flag}").into());
        }
    }
    Ok(Some((opts, words)))
}

/// Runs a command's work on a current-thread runtime: its text to
/// stdout, or `msgr NAME: ERROR` to stderr and exit status `code`.
fn printing(
    name: &str,
    work: impl std::future::Future<Output = Result<String, String>>,
    code: u8,
) -> Res<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match rt.block_on(work) {
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

/// `4096`, `4K`, `4M`: bytes, as rados takes `-b`.
fn parse_size(s: &str) -> Res<usize> {
    let (n, mul) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    Ok(n.parse::<usize>().map_err(|_| format!("{s}: not a size"))? * mul)
}

fn mon(mut parser: lexopt::Parser) -> Res<ExitCode> {
    use msgr_cli::mon::MonAction;
    let mut as_json = false;
    let Some((opts, words)) = cluster_command(&mut parser, |flag, _| {
        as_json |= flag == "--json";
        Ok(flag == "--json")
    })?
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let action = match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["status"] | [] => MonAction::Status,
        ["monmap"] => MonAction::Monmap,
        ["command", json] => MonAction::Command(json.to_string()),
        _ => return Err(format!("mon: expected status, monmap or command JSON\n\n{USAGE}").into()),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match rt.block_on(msgr_cli::mon::run(&opts, action, as_json)) {
        Ok(out) => {
            out!("{}", out.stdout);
            eprint!("{}", out.stderr);
            Ok(ExitCode::from(out.code))
        }
        Err(e) => {
            eprintln!("msgr mon: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
