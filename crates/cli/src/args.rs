//! The command line: every command, option and argument of `msgr`, with
//! the help text that `msgr --help` and `msgr COMMAND --help` print, from
//! one declaration (clap's derive) that both parses and documents them.
//! README.md's usage section is `msgr --help`'s output, and a test holds
//! the two equal.
//!
//! Two kinds of option are taken out of the command line before clap sees
//! it, as Ceph's tools take them: `--debug-ms N` anywhere
//! ([`crate::logging::take_debug_ms`]), and Ceph's messenger options
//! `--ms_NAME VALUE` / `--ms_NAME=VALUE` ([`take_ms_options`]), whose names
//! are open-ended.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand};
use msgr_auth::ConMode;
use msgr_encoding::{EntityAddrvec, EntityName};
use msgr_protocol::PolicyName;

/// What follows the commands in `msgr --help`.
const AFTER_HELP: &str = "\
Logs (stderr): --debug-ms N anywhere (Ceph's debug_ms: 0 warnings, 1 every
message and fault, 5 handshakes and state changes, 20 all), else debug_ms
in CEPH_ARGS or ceph.conf; RUST_LOG overrides both.

Ceph's messenger options (serve, ping, mon, osd, rados): --ms_NAME VALUE or
--ms_NAME=VALUE (e.g. --ms_bind_msgr2=false), as the ceph CLI takes them.

Policies: lossy-client, lossless-client, stateless-server,
stateless-registered-server, stateful-server, lossless-peer,
lossless-peer-reuse. Addresses: v2:IP:PORT[/NONCE], v1:IP:PORT[/NONCE].

`msgr COMMAND --help` describes a command and its options.";

/// `msgr`: Ceph's messenger, msgr2 and msgr1, natively: an OSD-like
/// server and a benchmark, pings, the monitor, OSD-map and rados commands
/// of a Ceph client, CRUSH tests, and a capture decoder.
#[derive(Debug, Parser)]
#[command(
    name = "msgr",
    about = "Ceph's messenger (msgr2 and msgr1), natively: serve, bench, ping, \
             mon, osd, rados, crush, decode",
    after_help = AFTER_HELP,
    args_override_self = true,
    disable_help_subcommand = true,
    max_term_width = 80
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// MOSDOp writes against a server (in this process, or --connect's)
    #[command(long_about = BENCH_ABOUT)]
    Bench(BenchArgs),
    /// An OSD-like server: MOSDOp answered with MOSDOpReply, MPing with MPing
    #[command(long_about = SERVE_ABOUT)]
    Serve(ServeArgs),
    /// KEEPALIVE2 round trips to any peer, or a command sent to it
    #[command(long_about = PING_ABOUT)]
    Ping(PingArgs),
    /// The cluster's status, its monmap, or any monitor command's reply
    #[command(long_about = MON_ABOUT)]
    Mon(MonArgs),
    /// Where objects live: osd map POOL OBJ [NSPACE] | osd map POOL --objects FILE
    // clap's help text, where [NSPACE] is an optional word, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[command(long_about = OSD_ABOUT)]
    Osd(OsdArgs),
    /// The rados tool's commands, on our RADOS client
    #[command(long_about = RADOS_ABOUT)]
    Rados(RadosArgs),
    /// crushtool --test --show-mappings, with our CRUSH mapper
    #[command(long_about = CRUSH_ABOUT, allow_negative_numbers = true)]
    Crush(CrushArgs),
    /// Every msgr2 frame and msgr1 message of a pcap/pcapng capture
    #[command(long_about = DECODE_ABOUT)]
    Decode(DecodeArgs),
}

const BENCH_ABOUT: &str = "\
MOSDOp writes of SIZE bytes, DEPTH in flight on each of CONNS connections,
for S seconds or N messages; replies awaited. Without --connect, a server
runs in this process on loopback, on S shards (default: the cores this
process may use), or with --server-tokio-mt on one shard in tokio's
multi-threaded runtime of W workers; each client connection is a one-shard
messenger of its own. A timed run also reports its steady part (from a
second after every connection's first reply to a second before the end:
msgs/s and CPU per message without the handshakes), with the CPU of the
server process --server-pid when given.";

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The server's address (v2:IP:PORT[/NONCE], or v1: for msgr1)
    #[arg(long, value_name = "ADDR", value_parser = parsed::<EntityAddrvec>)]
    pub connect: Option<EntityAddrvec>,
    /// Bytes of data in each write
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub size: usize,
    /// Writes in flight on each connection
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub depth: usize,
    /// Connections, each a client messenger of its own
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub conns: usize,
    /// Seconds to run (5 unless --count is given)
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Messages to send, rather than a duration
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// The client's policy
    #[arg(long, value_name = "P", default_value = "lossless-client", value_parser = parsed::<PolicyName>)]
    pub policy: PolicyName,
    /// The in-process server's policy (default: stateful-server for a
    /// lossless client, stateless-server for a lossy one)
    #[arg(long, value_name = "P", value_parser = parsed::<PolicyName>)]
    pub server_policy: Option<PolicyName>,
    /// Fail one in N socket operations, on both sides
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub inject_socket_failures: u32,
    /// Offer msgr2.0 only
    #[arg(long)]
    pub rev0: bool,
    /// Check every reply (tid, data checksum) and count lost, duplicated
    /// and reordered messages
    #[arg(long)]
    pub verify: bool,
    /// First run the same pattern over plain TCP: the baseline, in the
    /// same run
    #[arg(long)]
    pub raw: bool,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
    /// The client's entity name; connection i takes number N + i
    #[arg(long, value_name = "TYPE.N", value_parser = parsed::<EntityName>)]
    pub name: Option<EntityName>,
    /// First run the same bench in crc mode and report this mode against
    /// it (and both handshake times)
    #[arg(long)]
    pub vs_crc: bool,
    /// The in-process server's shards
    #[arg(long, value_name = "S")]
    pub shards: Option<usize>,
    /// Run the in-process server on one shard in tokio's multi-threaded
    /// runtime of W workers
    #[arg(long, value_name = "W")]
    pub server_tokio_mt: Option<usize>,
    /// Send requests from a thread of their own rather than from the
    /// dispatcher that took the reply
    #[arg(long)]
    pub foreign_sends: bool,
    /// One listener hands connections to the server's shards in turn
    /// (rather than every shard accepting on the port, SO_REUSEPORT)
    #[arg(long)]
    pub server_hand_out: bool,
    /// Move both sides' bytes through epoll (tcp) or io_uring (uring), or
    /// io_uring with the server's shards waiting in rings of their own
    /// (ring)
    #[arg(long, value_name = "tcp|uring|ring", default_value = "tcp", value_parser = parse_shard_transport, action = clap::ArgAction::Set)]
    pub transport: ShardTransport,
    /// Run only the raw TCP pattern, against --connect's address (a msgr
    /// serve --raw) when given
    #[arg(long)]
    pub raw_only: bool,
    /// The process id of the server at --connect, whose CPU time the
    /// steady part reports
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Give up on replies that stopped coming after this many seconds
    /// without one (default 20; 60 with --inject-socket-failures)
    #[arg(long, value_name = "S")]
    pub give_up: Option<f64>,
    /// Beside the stream, send a 64-byte request every MS milliseconds on
    /// the first connection and report its latency apart (how long a
    /// small message waits behind large ones)
    #[arg(long, value_name = "MS")]
    pub probe: Option<f64>,
    /// The probes' message priority (Ceph's 127 default, 196 high, 255
    /// highest); the stream's go at 127
    #[arg(long, value_name = "P", default_value_t = 196)]
    pub probe_priority: u16,
    #[command(flatten)]
    pub security: SecurityArgs,
}

const SERVE_ABOUT: &str = "\
Answers MOSDOp with MOSDOpReply and MPing with MPing on each ADDR (msgr2
on v2:IP:PORT, msgr1 on v1:IP:PORT; --bind repeats; a bare IP:PORT binds
as a Ceph daemon does, [v2:IP:PORT,v1:IP:PORT+1], under --ms_bind_msgr2 /
--ms_bind_msgr1, CEPH_ARGS or ceph.conf), on S shards (threads pinned to
cores; default: the cores this process may use). With cephx, serve writes
a new keyring to --keyring's FILE if there is none; it grants compression
to any peer that asks.";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// An address to listen on (repeats)
    #[arg(long, value_name = "ADDR", required = true)]
    pub bind: Vec<String>,
    /// The server's entity name
    #[arg(long, value_name = "TYPE.N", default_value = "osd.0", value_parser = parsed::<EntityName>)]
    pub name: EntityName,
    /// The nonce of the server's addresses
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub nonce: u32,
    /// The server's policy
    #[arg(long, value_name = "P", default_value = "stateless-server", value_parser = parsed::<PolicyName>)]
    pub policy: PolicyName,
    /// Fail one in N socket operations
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub inject_socket_failures: u32,
    /// Offer msgr2.0 only
    #[arg(long)]
    pub rev0: bool,
    /// Print the messenger's counters every SECONDS
    #[arg(long, value_name = "SECONDS")]
    pub stats: Option<f64>,
    /// Stop after S seconds
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Shards (threads pinned to cores)
    #[arg(long, value_name = "S")]
    pub shards: Option<usize>,
    /// Move bytes through epoll (tcp) or io_uring (uring), or io_uring
    /// with each shard waiting in a ring of its own instead of tokio's
    /// epoll (ring)
    #[arg(long, value_name = "tcp|uring|ring", default_value = "tcp", value_parser = parse_shard_transport, action = clap::ArgAction::Set)]
    pub transport: ShardTransport,
    /// Serve bench's raw TCP pattern instead, on one thread (the baseline
    /// for msgr bench --raw-only --connect); with --transport uring, one
    /// thread driving an io_uring of its own
    #[arg(long)]
    pub raw: bool,
    /// Answer Ceph's admin socket protocol at PATH (ceph --admin-daemon
    /// PATH perf dump | perf schema | messenger dump client | config show
    /// | help)
    #[arg(long, value_name = "PATH")]
    pub admin_socket: Option<PathBuf>,
    /// The admin socket's mode (octal, e.g. 0660; also from CEPH_ARGS or
    /// ceph.conf); 0600, its owner only, when unset
    #[arg(long, value_name = "MODE", alias = "admin_socket_mode")]
    pub admin_socket_mode: Option<String>,
    /// A ceph.conf to read ms_bind_msgr1/2 and admin_socket_mode from
    #[arg(short = 'c', long, value_name = "FILE")]
    pub conf: Option<String>,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Auth, connection mode and compression of `serve` and `bench`. With
/// cephx, the keyring holds the client's key [client.admin] and the
/// service secret [osd.] a monitor would hold.
#[derive(Debug, Args)]
#[command(next_help_heading = "Security options")]
pub struct SecurityArgs {
    /// Authentication: none or cephx
    #[arg(long, value_name = "none|cephx", value_parser = ["none", "cephx"])]
    pub auth: Option<String>,
    /// The cephx keyring (the in-process bench makes a temporary one)
    #[arg(short = 'k', long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// The connection mode (default: both, the client chooses)
    #[arg(long, value_name = "crc|secure", value_parser = parsed::<ConMode>)]
    pub mode: Option<ConMode>,
    /// On-wire compression: none, or force (a bench client asks OSDs)
    #[arg(long, value_name = "none|force", value_parser = ["none", "force"])]
    pub compress: Option<String>,
    /// Compression algorithms, in order of preference
    #[arg(long, value_name = "snappy,zlib,zstd,lz4")]
    pub compress_algorithms: Option<String>,
}

/// The options of a command that talks to a cluster, as the ceph CLI's
/// (CEPH_ARGS and CEPH_CONF are read too).
#[derive(Debug, Args)]
#[command(next_help_heading = "Cluster options")]
pub struct ClusterArgs {
    /// The ceph.conf
    #[arg(short = 'c', long, value_name = "FILE")]
    pub conf: Option<String>,
    /// The entity to authenticate as
    #[arg(short = 'n', long, value_name = "TYPE.ID")]
    pub name: Option<String>,
    /// client.ID to authenticate as
    #[arg(short = 'i', long, value_name = "ID", alias = "user")]
    pub id: Option<String>,
    /// The keyring
    #[arg(short = 'k', long, value_name = "FILE")]
    pub keyring: Option<String>,
    /// The monitors' addresses
    #[arg(short = 'm', long, value_name = "ADDRS", alias = "mon_host")]
    pub mon_host: Option<String>,
    /// The cluster's name
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The connection mode of monitor and service connections
    #[arg(long, value_name = "crc|secure", value_parser = parsed::<ConMode>)]
    pub mode: Option<ConMode>,
    /// Offer msgr2.0 only
    #[arg(long)]
    pub rev0: bool,
    /// With a key, still accept a monitor that offers only auth none (off
    /// by default: an attacker on the path could force it)
    #[arg(long)]
    pub auth_none_fallback: bool,
}

const PING_ABOUT: &str = "\
KEEPALIVE2 round trips to any peer, over msgr2 (learning its type from its
HELLO) or msgr1 (a v1: address, or --ms_bind_msgr2=false). Without cluster
options: auth none. With them (or CEPH_CONF / CEPH_ARGS): service tickets
from the monitors and a cephx authorizer, as a Ceph client; OSDs may be
named (osd.0), and an address without a nonce is completed from the OSD
map. --tell then sends the peer a command (MCommand, as `ceph tell` does)
and prints its reply.";

#[derive(Debug, Args)]
pub struct PingArgs {
    /// The peer: an address, or (with a cluster) osd.N
    #[arg(value_name = "ADDR|osd.N")]
    pub target: Option<String>,
    /// Round trips
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub count: u32,
    /// Milliseconds between round trips
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub interval: u64,
    /// Send the peer this command and print its reply
    #[arg(long, value_name = "JSON")]
    pub tell: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

const MON_ABOUT: &str = "\
Connects to the cluster's monitors like the ceph CLI (hunting, cephx or
none, monmap), then prints the cluster status (fsid, health, monitors,
OSDs), the monmap, or the reply to any monitor command, e.g.
command '{\"prefix\": \"osd dump\", \"format\": \"json\"}'. mgr JSON sends
a command to the active mgr instead (as ceph sends its mgr commands, e.g.
mgr '{\"prefix\": \"balancer status\"}'), tell mgr.NAME JSON to that mgr (as
ceph tell does); both wait up to 30 s for an active mgr.";

#[derive(Debug, Args)]
pub struct MonArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// status (the default) | monmap | command JSON | mgr JSON | tell mgr.NAME JSON
    #[arg(value_name = "ACTION")]
    pub words: Vec<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

const OSD_ABOUT: &str = "\
Where objects live, computed here from the OSD map the monitors send
(CRUSH, upmaps, primary affinity, pg_temp), printed as ceph osd map prints
it: osd map POOL OBJ [NSPACE], or osd map POOL --objects FILE, which
places every line of FILE (NAME, or NSPACE<TAB>NAME) against one map.";

#[derive(Debug, Args)]
pub struct OsdArgs {
    /// plain, json or json-pretty
    #[arg(short = 'f', long, value_name = "FORMAT", default_value = "plain")]
    pub format: String,
    /// A file of objects to place, one a line
    #[arg(long, value_name = "FILE")]
    pub objects: Option<String>,
    /// map POOL OBJ [NSPACE] | map POOL
    // clap's help text, where [NSPACE] is an optional word, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(value_name = "WORDS")]
    pub words: Vec<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

const RADOS_ABOUT: &str = "\
The rados tool's commands on our RADOS client (objecter, OSD map, CRUSH):
  put OBJ FILE|- | get OBJ FILE|- | stat OBJ | rm OBJ... | ls [--all]
  | setxattr OBJ NAME VALUE | getxattr OBJ NAME | listxattr OBJ
  | rmxattr OBJ NAME | setomapval OBJ KEY VALUE | listomapkeys OBJ
  | rmomapkey OBJ KEY | listomapvals OBJ (KEY<TAB>VALUE a line)
  | setomapheader OBJ VALUE | getomapheader OBJ [FILE] | cmpext OBJ OFFSET FILE|-
  | bench SECONDS write|seq|rand [-t N] [-b SIZE] [--no-cleanup] [-f json]
  | opbench COUNT notify|compound-write|compound-read [-t N] (latency and
    CPU per op, as scripts/bench/rados_ops_bench.c measures librados)
  | watch OBJ | notify OBJ MSG | listwatchers OBJ
  | mksnap SNAP | rmsnap SNAP | lssnap | rollback OBJ SNAP | listsnaps OBJ
  | lspools | mkpool POOL [RULE] | rmpool POOL POOL --yes-i-really-really-mean-it
  | lock list OBJ | lock info OBJ NAME | lock break OBJ NAME LOCKER
  | lock get OBJ NAME [--lock-type exclusive|shared] [--lock-cookie C]
    [--lock-tag T] [--lock-description D] [--lock-duration SECONDS]
  | df [-p POOL] [-f json] (rados df: the pools' and the cluster's usage)
put and get move whole objects in 4 MiB pieces, as rados does; stat prints
POOL/OBJ mtime TIME, size N; ls lists the namespace (or all,
NSPACE<TAB>NAME). bench writes and reads the objects rados bench does
(same names, contents and metadata object: each tool reads what the other
wrote), printing what it prints.";

#[derive(Debug, Args)]
pub struct RadosArgs {
    /// The pool
    #[arg(short = 'p', long, value_name = "POOL")]
    pub pool: Option<String>,
    /// The namespace
    #[arg(short = 'N', long, value_name = "NSPACE", default_value = "")]
    pub namespace: String,
    /// Read at this pool snapshot
    #[arg(short = 's', long = "snap", value_name = "SNAP")]
    pub snap: Option<String>,
    /// ls: every namespace
    #[arg(long)]
    pub all: bool,
    /// bench: operations in flight
    #[arg(short = 't', long, value_name = "N")]
    pub concurrent_ios: Option<usize>,
    /// bench: bytes per object (4096, 4K, 4M)
    #[arg(short = 'b', long, value_name = "SIZE", value_parser = parse_size)]
    pub block_size: Option<usize>,
    /// bench: leave the objects written
    #[arg(long)]
    pub no_cleanup: bool,
    /// bench: json prints rados bench's JSON document
    #[arg(short = 'f', long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// rmpool: yes, delete the pool and its data
    #[arg(long = "yes-i-really-really-mean-it")]
    pub really: bool,
    /// lock: the lock's tag
    #[arg(long, value_name = "TAG")]
    pub lock_tag: Option<String>,
    /// lock: the locker's cookie
    #[arg(long, value_name = "COOKIE")]
    pub lock_cookie: Option<String>,
    /// lock get: the locker's description
    #[arg(long, value_name = "TEXT")]
    pub lock_description: Option<String>,
    /// lock get: seconds the lock is held (0: until unlocked)
    #[arg(long, value_name = "SECONDS")]
    pub lock_duration: Option<String>,
    /// lock get: exclusive (the default) or shared
    #[arg(long, value_name = "TYPE")]
    pub lock_type: Option<String>,
    /// Move the client's bytes through epoll (tcp) or io_uring (uring), or
    /// run the whole client on a loop that waits in its own io_uring (ring)
    #[arg(long, value_name = "tcp|uring|ring", default_value = "tcp", value_parser = parse_shard_transport, action = clap::ArgAction::Set)]
    pub transport: ShardTransport,
    /// The command and its arguments
    #[arg(value_name = "COMMAND")]
    pub words: Vec<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

const CRUSH_ABOUT: &str = "\
Maps inputs through a CRUSH map (crushtool -o, ceph osd getcrushmap) with
our mapper, printing what crushtool --test --show-mappings prints: CRUSH
rule R x X [a,b,c].";

#[derive(Debug, Args)]
pub struct CrushArgs {
    /// The CRUSH map
    #[arg(short = 'i', long = "infn", value_name = "MAP")]
    pub map: Option<String>,
    /// Test the map (with --show-mappings, the only test)
    #[arg(long)]
    pub test: bool,
    /// Print each input's mapping
    #[arg(long)]
    pub show_mappings: bool,
    /// Only rule R (default: every rule)
    #[arg(long, value_name = "R")]
    pub rule: Option<usize>,
    /// Replicas: --min-rep and --max-rep at once
    #[arg(long, value_name = "N")]
    pub num_rep: Option<usize>,
    /// The fewest replicas
    #[arg(long, value_name = "N")]
    pub min_rep: Option<usize>,
    /// The most replicas
    #[arg(long, value_name = "N")]
    pub max_rep: Option<usize>,
    /// The first input
    #[arg(long, value_name = "X")]
    pub min_x: Option<i32>,
    /// The last input (default 1023)
    #[arg(long, value_name = "X")]
    pub max_x: Option<i32>,
    /// One input: --min-x and --max-x at once
    #[arg(long, value_name = "X")]
    pub x: Option<i32>,
    /// Reweight device DEV to W (0.0 to 1.0; repeats)
    #[arg(short = 'w', long, num_args = 2, value_names = ["DEV", "W"], action = clap::ArgAction::Append)]
    pub weight: Vec<String>,
    /// Hash inputs with the pool id, as placement seeds are
    #[arg(long, value_name = "P")]
    pub pool_id: Option<i64>,
}

const DECODE_ABOUT: &str = "\
Print every msgr2 frame and msgr1 message of a pcap/pcapng capture, per
connection and direction. --keys names a file of connection secrets for
secure-mode connections, one per line:
  CLIENT_IP:PORT SERVER_IP:PORT SECRET_HEX
  conn=N SECRET_HEX
(# starts a comment). Exit status 0 when every stream decoded cleanly, 1
when some stream had a problem (reported inline), 2 on usage errors.";

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The capture
    #[arg(value_name = "CAPTURE")]
    pub capture: Option<String>,
    /// Print one JSON object per line
    #[arg(long)]
    pub json: bool,
    /// The connection secrets of secure-mode connections
    #[arg(long, value_name = "FILE")]
    pub keys: Option<String>,
}

/// A value through its type's `FromStr`, the type's error as the message.
fn parsed<T: FromStr>(v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.parse::<T>().map_err(|e| e.to_string())
}

/// How a messenger's bytes move and where its shards (a client: all of
/// it) wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardTransport {
    /// epoll, in tokio's runtime.
    Tcp,
    /// io_uring, its completions reaped in tokio's runtime.
    Uring,
    /// io_uring, each shard a loop that waits in its own ring.
    Ring,
}

impl ShardTransport {
    /// Whether bytes move through io_uring.
    pub fn uring(self) -> bool {
        self != ShardTransport::Tcp
    }
}

/// `--transport tcp|uring|ring` of serve and bench.
pub fn parse_shard_transport(v: &str) -> Result<ShardTransport, String> {
    match v {
        "ring" => Ok(ShardTransport::Ring),
        other => match parse_transport(other) {
            Ok(true) => Ok(ShardTransport::Uring),
            Ok(false) => Ok(ShardTransport::Tcp),
            Err(_) => Err(format!("--transport {other}: want tcp, uring or ring")),
        },
    }
}

/// `--transport tcp|uring`: whether bytes move through io_uring.
pub fn parse_transport(v: &str) -> Result<bool, String> {
    match v {
        "tcp" | "epoll" => Ok(false),
        "uring" | "io_uring" => Ok(true),
        other => Err(format!("--transport {other}: want tcp or uring")),
    }
}

/// `4096`, `4K`, `4M`: bytes, as rados takes `-b`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let (n, mul) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1usize << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("{s}: not a size"))
}

/// Takes Ceph's messenger options (`--ms_NAME VALUE`, `--ms-NAME VALUE`,
/// `--ms_NAME=VALUE`) out of `args`, in order: their names are
/// open-ended, so they are passed to Ceph's option table rather than
/// declared here. A flag without a value is returned with none.
pub fn take_ms_options(args: &mut Vec<std::ffi::OsString>) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()).map(str::to_string) {
        if arg == "--" {
            break;
        }
        if !(arg.starts_with("--ms_") || arg.starts_with("--ms-")) {
            i += 1;
            continue;
        }
        args.remove(i);
        found.push(match arg.split_once('=') {
            Some((flag, v)) => (flag.to_string(), Some(v.to_string())),
            None if i < args.len() => {
                let v = args.remove(i).to_string_lossy().into_owned();
                (arg, Some(v))
            }
            None => (arg, None),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    fn parse(line: &str) -> Result<Command, clap::Error> {
        let words = std::iter::once("msgr").chain(line.split_whitespace());
        Cli::try_parse_from(words).map(|cli| cli.command.expect("a command"))
    }

    /// Command lines as scripts/, README.md and BENCHMARKS.md spell them.
    #[test]
    fn the_spellings_in_use_parse() {
        for line in [
            "bench --connect v2:127.0.0.1:6800/0 --count 2000 --json",
            "bench --raw --vs-crc --auth cephx --mode secure --keyring k",
            "bench --transport uring --policy lossless-client --inject-socket-failures 30",
            "bench --name osd.1 --compress force --compress-algorithms zstd --size 4096 --depth 16",
            "bench --raw-only --connect v2:127.0.0.1:1/0 --server-pid 7 --server-tokio-mt 2",
            "bench --shards 2 --server-hand-out --foreign-sends --verify --rev0 --duration 1.5",
            "serve --bind v2:127.0.0.1:0 --bind v1:127.0.0.1:0 --policy stateful-server",
            "serve --bind 127.0.0.1:0 --admin-socket p --admin_socket_mode 0660 -c conf",
            "serve --bind v2:127.0.0.1:0 --name osd.1 --nonce 5 --stats 1 --raw --shards 1",
            "ping osd.0 --count 2 --tell {\"prefix\":\"version\"} -c conf --mode secure",
            "ping v1:127.0.0.1:6789/0 --interval 20 --rev0 --auth-none-fallback",
            "mon -c conf -k keyring --mode crc status",
            "mon -c conf monmap --json",
            "mon -m v1:127.0.0.1:1 -n client.admin --id admin --user admin status",
            "mon --mon_host a --mon-host b --cluster ceph command {}",
            "osd map pool obj ns -c conf -f json-pretty",
            "osd map pool --objects names -c conf",
            "rados -c conf --mode secure -p pool put obj -",
            "rados -p pool -N ns rm a b c",
            "rados -p pool bench 10 write -t 16 -b 4M --no-cleanup -f json",
            "rados -p pool ls --all",
            "crush -i map --test --show-mappings --rule 0 --num-rep 3 --min-x 0 --max-x 9",
            "crush --infn map --test --show-mappings --x 5 --weight 1 0.5 -w 2 1 --pool-id -1",
            "decode capture.pcap --json --keys keys",
        ] {
            if let Err(e) = parse(line) {
                panic!("{line}: {e}");
            }
        }
    }

    #[test]
    fn repeated_options_add_up_or_the_last_wins() {
        let Ok(Command::Serve(s)) = parse("serve --bind a --bind b --nonce 1 --nonce 2") else {
            panic!("serve")
        };
        assert_eq!((s.bind, s.nonce), (vec!["a".into(), "b".into()], 2));
        let Ok(Command::Crush(c)) = parse("crush -w 1 0.5 --weight 2 1") else {
            panic!("crush")
        };
        assert_eq!(c.weight, ["1", "0.5", "2", "1"]);
        let Ok(Command::Bench(b)) = parse("bench --size 1 --size 2 --rev0 --rev0") else {
            panic!("bench")
        };
        assert!(b.size == 2 && b.rev0);
        let Ok(Command::Bench(b)) = parse("bench --transport uring") else {
            panic!("bench --transport")
        };
        assert_eq!(b.transport, ShardTransport::Uring);
        let Ok(Command::Serve(s)) = parse("serve --bind a --transport ring") else {
            panic!("serve --transport ring")
        };
        assert_eq!(s.transport, ShardTransport::Ring);
        let Ok(Command::Rados(r)) = parse("rados --transport ring -p p ls") else {
            panic!("rados --transport ring")
        };
        assert_eq!(r.transport, ShardTransport::Ring);
        let Ok(Command::Serve(s)) = parse("serve --bind a") else {
            panic!("serve")
        };
        assert_eq!(s.transport, ShardTransport::Tcp, "tcp by default");
        let Ok(Command::Rados(r)) = parse("rados --transport uring -p p bench 1 write") else {
            panic!("rados --transport")
        };
        assert!(
            r.transport == ShardTransport::Uring && r.words == ["bench", "1", "write"],
            "{r:?}"
        );
        let Ok(Command::Rados(r)) = parse("rados -p p ls") else {
            panic!("rados")
        };
        assert_eq!(r.transport, ShardTransport::Tcp, "tcp by default");
        assert!(parse("rados --transport rdma -p p ls").is_err());
        assert!(parse("bench --bogus").is_err());
        assert!(parse("decode a b").is_err());
    }

    #[test]
    fn ms_options_are_taken_in_both_spellings() {
        let mut args: Vec<std::ffi::OsString> = [
            "msgr",
            "mon",
            "--ms_bind_msgr2=false",
            "status",
            "--ms-bind-msgr1",
            "true",
            "--ms_x",
        ]
        .iter()
        .map(Into::into)
        .collect();
        let ms = take_ms_options(&mut args);
        assert_eq!(args, ["msgr", "mon", "status"]);
        assert_eq!(
            ms,
            [
                ("--ms_bind_msgr2".into(), Some("false".into())),
                ("--ms-bind-msgr1".into(), Some("true".into())),
                ("--ms_x".into(), None),
            ]
        );
    }

    #[test]
    fn sizes_take_rados_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4m"), Ok(4 << 20));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }
}
