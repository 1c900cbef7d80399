//! `msgr serve`: an OSD-like server. Answers MOSDOp with MOSDOpReply (as
//! ceph_perf_msgr_server does; the reply's user_version carries the crc32c
//! of the request's data, for `msgr bench --verify`) and MPing with MPing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName};
use msgr_messages::{MOSDOp, MOSDOpReply, MPing, TypedMessage};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_uring::TcpOrUring;

use crate::common::{cpu_time, messenger, NetOpts};
use crate::workload::{data_checksum, ServeStats, OP_FLAG_CHECKSUM};

/// The server's dispatcher.
pub struct OsdLike {
    pub stats: Arc<ServeStats>,
}

impl Dispatcher for OsdLike {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        match msg.msg_type {
            msgr_messages::MSG_OSD_OP => {
                self.stats.op(conn.shard(), msg.data.len() as u64);
                let reply = match MOSDOp::from_message(&msg) {
                    Ok(op) => {
                        let checksum = op
                            .ops
                            .first()
                            .is_some_and(|o| o.flags & OP_FLAG_CHECKSUM != 0)
                            .then(|| data_checksum(&op.data));
                        let mut r = MOSDOpReply::answering(op, 0);
                        r.user_version = checksum.unwrap_or(0);
                        r
                    }
                    // A request we cannot fully read still gets the reply
                    // ceph_perf_msgr_server would send.
                    Err(_) => MOSDOpReply::perf_reply(msg.tid, Default::default(), 0),
                };
                conn.send_nowait(reply.to_message(conn.features()));
            }
            msgr_messages::simple::MSG_PING => {
                self.stats.ping(conn.shard());
                conn.send_nowait(MPing.to_message(conn.features()));
            }
            _ => self.stats.other(conn.shard()),
        }
    }

    fn ms_handle_accept(&self, _conn: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.stats.connections.fetch_add(1, Ordering::Relaxed);
    }
}

/// The protocols a server binds a bare `IP:PORT` for, as a Ceph daemon's
/// `ms_bind_msgr1` and `ms_bind_msgr2` (both default true), from the
/// command line's `--ms_bind_*`, CEPH_ARGS or ceph.conf (as `name`).
pub fn bind_protocols(
    mut conf: msgr_config::ConfigOptions,
    name: &EntityName,
) -> Result<(bool, bool), String> {
    if conf.name.is_none() {
        conf.name = Some(name.to_string().parse().map_err(|e| format!("{e}"))?);
    }
    let env = msgr_config::Env::from_process();
    let config = msgr_config::Config::load(&conf, &env).map_err(|e| e.to_string())?;
    let flag = |option: &str| match config.get(option).as_deref() {
        None => Ok(true),
        Some(v) => {
            crate::identity::parse_bool(v).ok_or(format!("{option}: {v:?} is not a boolean"))
        }
    };
    Ok((flag("ms_bind_msgr1")?, flag("ms_bind_msgr2")?))
}

/// The admin socket's options as a Ceph daemon reads them, from the
/// command line's `--admin_socket_mode`, CEPH_ARGS or ceph.conf (as
/// `name`): its file's mode from `admin_socket_mode` (owner-only, 0600,
/// when unset or empty, as in Ceph), the bounds on its clients their
/// defaults.
pub fn admin_socket_options(
    mut conf: msgr_config::ConfigOptions,
    name: &EntityName,
) -> Result<msgr_admin::socket::SocketOptions, String> {
    if conf.name.is_none() {
        conf.name = Some(name.to_string().parse().map_err(|e| format!("{e}"))?);
    }
    let env = msgr_config::Env::from_process();
    let config = msgr_config::Config::load(&conf, &env).map_err(|e| e.to_string())?;
    let mut options = msgr_admin::socket::SocketOptions::default();
    if let Some(mode) = config.get("admin_socket_mode").filter(|m| !m.is_empty()) {
        options.mode = msgr_admin::socket::parse_mode(&mode).map_err(|e| e.to_string())?;
    }
    Ok(options)
}

/// The addresses `--bind` names. One written with its protocol (`v1:`,
/// `v2:`, `any:` or a bracketed vector) is bound as written. A bare
/// `IP:PORT` is bound as a Ceph daemon binds its public address: msgr2 at
/// PORT while `msgr2`, msgr1 while `msgr1`, at the next port when both
/// are (as an OSD takes [v2:IP:6800, v1:IP:6801]); port 0 picks a free
/// port for each.
pub fn bind_addrs(binds: &[String], msgr1: bool, msgr2: bool) -> Result<EntityAddrvec, String> {
    let mut out = EntityAddrvec::default();
    for b in binds {
        let written = ["v1:", "v2:", "any:", "["].iter().any(|p| b.starts_with(p));
        let vec: EntityAddrvec = b.parse().map_err(|e| format!("--bind {b}: {e}"))?;
        if written {
            out.0.extend(vec.0);
            continue;
        }
        let [bare] = vec.0.as_slice() else {
            return Err(format!("--bind {b}: expected one address"));
        };
        let Some(sock) = bare.addr else {
            return Err(format!("--bind {b}: expected IP:PORT"));
        };
        if msgr2 {
            out.0
                .push(EntityAddr::new(EntityAddrType::MSGR2, sock, bare.nonce));
        }
        if msgr1 {
            let mut v1 = sock;
            if msgr2 && sock.port() != 0 {
                let next = sock.port().checked_add(1);
                v1.set_port(next.ok_or(format!("--bind {b}: no port after {}", sock.port()))?);
            }
            out.0
                .push(EntityAddr::new(EntityAddrType::LEGACY, v1, bare.nonce));
        }
    }
    match out.0.is_empty() {
        true => Err("nothing to bind: ms_bind_msgr1 and ms_bind_msgr2 are both off".into()),
        false => Ok(out),
    }
}

/// Starts a server; returns its messenger, bound addresses and counters.
pub async fn start(
    bind: &EntityAddrvec,
    name: EntityName,
    nonce: u32,
    net: &NetOpts,
) -> std::io::Result<(Messenger<TcpOrUring>, EntityAddrvec, Arc<ServeStats>)> {
    // As many slots as the messenger will have shards (Options::shards).
    let shards = net.shards.unwrap_or_else(|| msgr_sys::allowed_cpus().len());
    let stats = Arc::new(ServeStats::new(shards));
    let m = messenger(
        name,
        nonce,
        net,
        Arc::new(OsdLike {
            stats: stats.clone(),
        }),
    );
    let addrs = m.bind(bind).await?;
    Ok((m, addrs, stats))
}

/// `msgr serve`: runs until killed (or for `duration`), printing a line of
/// statistics every `interval` when `interval` is set, from the
/// messenger's perf counters; with `admin` (a path and the socket's
/// options), an admin socket there shows them (`ceph --admin-daemon PATH
/// perf dump`) with the connections (`messenger dump client`) and the
/// server's settings (`config show`).
pub async fn run(
    bind: EntityAddrvec,
    name: EntityName,
    nonce: u32,
    mut net: NetOpts,
    interval: Option<Duration>,
    duration: Option<Duration>,
    admin: Option<(std::path::PathBuf, msgr_admin::socket::SocketOptions)>,
) -> std::io::Result<()> {
    let perf = msgr_admin::perf::Collection::new();
    net.perf = Some(perf.clone());
    let (m, addrs, stats) = start(&bind, name, nonce, &net).await?;
    crate::outln!(
        "msgr serve: {name} listening on {addrs} (policy {})",
        net.policy
    );
    let _asok = match &admin {
        Some((path, options)) => {
            Some(admin_socket(path, *options, perf, &m, name, &addrs, &net).await?)
        }
        None => None,
    };
    let figures = {
        use msgr_messenger::counters::{ACTIVE_CONNECTIONS, RECV_BYTES, RECV_MESSAGES};
        let m = m.clone();
        move || Figures {
            messages: m.counter(RECV_MESSAGES),
            bytes: m.counter(RECV_BYTES),
            connections: m.counter(ACTIVE_CONNECTIONS),
            pings: stats.pings(),
            ops: stats.ops(),
        }
    };
    report(figures, interval, duration).await;
    m.shutdown().await;
    Ok(())
}

/// The admin socket of `msgr serve --admin-socket PATH`.
async fn admin_socket(
    path: &std::path::Path,
    options: msgr_admin::socket::SocketOptions,
    perf: msgr_admin::perf::Collection,
    m: &Messenger<TcpOrUring>,
    name: EntityName,
    addrs: &EntityAddrvec,
    net: &NetOpts,
) -> std::io::Result<msgr_admin::socket::AdminSocket> {
    let commands = msgr_admin::commands::Commands::new(perf, Default::default());
    for (option, value) in [
        ("name", name.to_string()),
        ("admin_socket", path.display().to_string()),
        ("public_addrv", addrs.to_string()),
        ("ms_type", "async+posix".into()),
        ("ms_async_op_threads", m.shards().to_string()),
        ("ms_bind_msgr2", addrs.msgr2().is_some().to_string()),
        ("ms_bind_msgr1", addrs.legacy().is_some().to_string()),
        ("perf", "true".into()),
    ] {
        commands.set_config(option, value);
    }
    commands.set_config("msgr_policy", net.policy.to_string());
    let dumped = m.clone();
    commands.add_messenger(
        "client",
        Arc::new(move |contents: &[String], _tcp_info| dumped.dump(contents)),
    );
    commands.set_config("admin_socket_mode", format!("{:04o}", options.mode));
    let sock = msgr_admin::socket::AdminSocket::bind_with(path, commands, options).await?;
    eprintln!("msgr serve: admin socket at {}", path.display());
    Ok(sock)
}

/// What a server reports: messages and bytes received, connections open,
/// and of the messages, pings and MOSDOps.
struct Figures {
    messages: u64,
    bytes: u64,
    connections: u64,
    pings: u64,
    ops: u64,
}

/// `msgr serve --raw`: the raw TCP pattern of `msgr bench --raw` (the
/// physical baseline) on `addr`, with the same statistics.
///
/// Over io_uring (`uring`), a thread of its own drives a ring for every
/// connection (msgr_uring::raw): the measure of a ring-driven loop against
/// epoll's.
pub async fn run_raw(
    addr: std::net::SocketAddr,
    uring: bool,
    interval: Option<Duration>,
    duration: Option<Duration>,
) -> std::io::Result<()> {
    let stats = Arc::new(ServeStats::default());
    let addr = match uring {
        false => crate::raw::start_server_on(addr, stats.clone()).await?,
        true => {
            let l = std::net::TcpListener::bind(addr)?;
            let addr = l.local_addr()?;
            let s = stats.clone();
            std::thread::Builder::new()
                .name("msgr-raw-uring".into())
                .spawn(move || {
                    let on_conn = || {
                        s.connections.fetch_add(1, Ordering::Relaxed);
                    };
                    if let Err(e) = msgr_uring::raw::serve_raw(l, on_conn, |len| s.op(0, len)) {
                        eprintln!("msgr serve: the raw io_uring loop failed: {e}");
                    }
                })?;
            addr
        }
    };
    let how = if uring { "io_uring" } else { "epoll" };
    crate::outln!("msgr serve: raw TCP ({how}) listening on {addr}");
    let figures = move || Figures {
        messages: stats.ops(),
        bytes: stats.bytes(),
        connections: stats.connections.load(Ordering::Relaxed),
        pings: stats.pings(),
        ops: stats.ops(),
    };
    report(figures, interval, duration).await;
    Ok(())
}

/// Prints a line of statistics every `interval` (when set) until
/// `duration` has passed (or forever), then the totals.
async fn report(
    figures: impl Fn() -> Figures,
    interval: Option<Duration>,
    duration: Option<Duration>,
) {
    let start = Instant::now();
    let cpu0 = cpu_time();
    let mut last = (0u64, 0u64, Instant::now());
    loop {
        let tick = interval.unwrap_or(Duration::from_secs(3600));
        let wait = match duration {
            Some(d) => tick.min(d.saturating_sub(start.elapsed())),
            None => tick,
        };
        tokio::time::sleep(wait).await;
        let f = figures();
        if interval.is_some() {
            let dt = last.2.elapsed().as_secs_f64().max(1e-9);
            eprintln!(
                "[serve {:6.1}s] {:9.0} msgs/s {:9.1} MB/s in  total {} msgs, {} conns, {} pings, cpu {:.2}s",
                start.elapsed().as_secs_f64(),
                f.messages.saturating_sub(last.0) as f64 / dt,
                f.bytes.saturating_sub(last.1) as f64 / dt / 1e6,
                f.messages,
                f.connections,
                f.pings,
                (cpu_time() - cpu0).as_secs_f64(),
            );
            last = (f.messages, f.bytes, Instant::now());
        }
        if duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
    }
    let ops = figures().ops;
    let cpu = cpu_time() - cpu0;
    crate::outln!(
        "msgr serve: {ops} ops, cpu {:.3}s ({:.1} us/op)",
        cpu.as_secs_f64(),
        if ops > 0 {
            cpu.as_secs_f64() * 1e6 / ops as f64
        } else {
            0.0
        }
    );
}

#[cfg(test)]
mod tests {
    use super::bind_addrs;

    fn bind(binds: &[&str], msgr1: bool, msgr2: bool) -> Result<String, String> {
        let binds: Vec<String> = binds.iter().map(|b| b.to_string()).collect();
        bind_addrs(&binds, msgr1, msgr2).map(|v| v.to_string())
    }

    #[test]
    fn bare_addresses_bind_as_a_daemon_does() {
        let both = bind(&["10.0.0.1:6800/7"], true, true);
        assert_eq!(
            both.as_deref(),
            Ok("[v2:10.0.0.1:6800/7,v1:10.0.0.1:6801/7]")
        );
        let v1 = bind(&["10.0.0.1:6800"], true, false);
        assert_eq!(v1.as_deref(), Ok("v1:10.0.0.1:6800/0"));
        let any = bind(&["10.0.0.1:0"], true, true);
        assert_eq!(any.as_deref(), Ok("[v2:10.0.0.1:0/0,v1:10.0.0.1:0/0]"));
        // Written with a protocol: as written, whatever the options say.
        let written = bind(&["v1:10.0.0.1:6789", "v2:10.0.0.1:3300"], false, true);
        assert_eq!(
            written.as_deref(),
            Ok("[v1:10.0.0.1:6789/0,v2:10.0.0.1:3300/0]")
        );
        assert!(bind(&["10.0.0.1:65535"], true, true).is_err());
        assert!(bind(&["10.0.0.1:6800"], false, false).is_err());
    }
}
