//! What the tool's network commands share: building a messenger, CPU time,
//! latency percentiles.

use std::sync::Arc;

use msgr_encoding::EntityName;
use msgr_messenger::{Dispatcher, InjectConfig, Messenger, Options};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;
use msgr_uring::{TcpOrUring, Uring};

/// A RADOS client for `msgr rados`, its bytes through epoll or, with
/// `uring` (`--transport uring`), io_uring.
pub async fn rados_client(
    opts: &crate::identity::ClusterOpts,
    uring: bool,
) -> Result<msgr_rados::Rados<TcpOrUring>, String> {
    let id = crate::identity::Identity::load(opts)?;
    let transport = match uring {
        true => TcpOrUring::Uring(Uring::client()),
        false => TcpOrUring::Epoll(Tcp::default()),
    };
    msgr_rados::Rados::connect_over(transport, &id, msgr_rados::Limits::default())
        .await
        .map_err(|e| e.to_string())
}

/// Messenger settings the commands take from their flags.
#[derive(Debug, Clone)]
pub struct NetOpts {
    pub policy: PolicyName,
    pub inject_socket_failures: u32,
    pub rev1: bool,
    /// Auth, connection mode, compression.
    pub security: crate::security::Security,
    /// Grant compression to peers of any type (a server for tests).
    pub compress_all_peers: bool,
    /// The messenger's shards (None: as many as cores; 1: in the caller's
    /// runtime).
    pub shards: Option<usize>,
    /// Its shard threads' name (thread CPU is told apart by name).
    pub thread_name: Option<String>,
    /// With several shards, one listener hands connections out instead of
    /// every shard accepting (SO_REUSEPORT).
    pub hand_out: bool,
    /// Move bytes through io_uring rather than epoll.
    pub uring: bool,
    /// Shards wait in rings of their own (with `uring`).
    pub ring_shards: bool,
    /// Where the messenger's perf counters are shown (an admin socket).
    pub perf: Option<msgr_admin::perf::Collection>,
}

impl Default for NetOpts {
    fn default() -> Self {
        NetOpts {
            policy: PolicyName::LosslessClient,
            inject_socket_failures: 0,
            rev1: true,
            security: Default::default(),
            compress_all_peers: false,
            shards: None,
            thread_name: None,
            hand_out: false,
            uring: false,
            ring_shards: false,
            perf: None,
        }
    }
}

pub fn messenger(
    name: EntityName,
    nonce: u32,
    net: &NetOpts,
    dispatcher: Arc<dyn Dispatcher>,
) -> Messenger<TcpOrUring> {
    let mut o = Options::new(
        name,
        PolicySet::new(net.policy.policy()),
        net.security.provider(name),
    );
    o.nonce = nonce;
    o.rev1 = net.rev1;
    o.message_types =
        msgr_messenger::MessageTypes::new(msgr_messages::MESSAGE_TYPES, msgr_messages::REPLY_TYPES);
    o.compression = net.security.compression(net.compress_all_peers);
    o.inject = InjectConfig {
        socket_failures: net.inject_socket_failures,
        ..Default::default()
    };
    if net.inject_socket_failures > 0 {
        // Keep reconnects quick when they are provoked on purpose.
        o.timeouts.backoff_initial = std::time::Duration::from_millis(10);
        o.timeouts.backoff_max = std::time::Duration::from_millis(200);
    }
    if let Some(n) = net.shards {
        o.shards = n;
    }
    if let Some(t) = &net.thread_name {
        o.thread_name = t.clone();
    }
    o.accept_on_every_shard = !net.hand_out;
    o.ring_shards = net.ring_shards && net.uring;
    o.perf = net.perf.clone();
    let transport = match net.uring {
        true => TcpOrUring::Uring(Uring::default()),
        false => TcpOrUring::Epoll(Tcp::default()),
    };
    Messenger::new(transport, o, dispatcher)
}

/// CPU time this process has used (user + system), from /proc/self/stat.
pub fn cpu_time() -> std::time::Duration {
    stat_cpu("/proc/self/stat")
}

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> std::time::Duration {
    stat_cpu("/proc/thread-self/stat")
}

/// A server running on its own thread and single-threaded runtime (one
/// core, as if it were another process); `stop` ends it and returns the
/// CPU time its thread used.
pub struct ServerThread<A> {
    pub addr: A,
    /// The server thread's /proc stat file (for its CPU time so far).
    stat: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<std::thread::JoinHandle<std::time::Duration>>,
}

impl<A: Send + 'static> ServerThread<A> {
    /// Runs `start` on a new thread; `start` returns the server's address
    /// and a future that shuts it down.
    pub fn spawn<F, Fut, S>(start: F) -> std::io::Result<ServerThread<A>>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = std::io::Result<(A, S)>>,
        S: std::future::Future<Output = ()>,
    {
        Self::spawn_on(None, start)
    }

    /// The same, on a runtime of `workers` threads (tokio's
    /// multi-threaded scheduler, threads named `msgr-server-w`) when given.
    pub fn spawn_on<F, Fut, S>(workers: Option<usize>, start: F) -> std::io::Result<ServerThread<A>>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = std::io::Result<(A, S)>>,
        S: std::future::Future<Output = ()>,
    {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("msgr-server".into())
            .spawn(move || {
                let rt = match workers {
                    Some(n) => tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(n)
                        .thread_name("msgr-server-w")
                        .enable_all()
                        .build(),
                    None => tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build(),
                }
                .expect("server runtime");
                rt.block_on(async move {
                    let cpu0 = thread_cpu_time();
                    let stat = std::fs::read_link("/proc/thread-self")
                        .map(|p| format!("/proc/{}/stat", p.display()))
                        .unwrap_or_default();
                    match start().await {
                        Ok((addr, shutdown)) => {
                            let _ = addr_tx.send(Ok((addr, stat)));
                            let _ = stop_rx.await;
                            let cpu = thread_cpu_time() - cpu0;
                            shutdown.await;
                            cpu
                        }
                        Err(e) => {
                            let _ = addr_tx.send(Err(e));
                            std::time::Duration::ZERO
                        }
                    }
                })
            })?;
        let (addr, stat) = addr_rx
            .recv()
            .map_err(|_| std::io::Error::other("server thread died"))??;
        Ok(ServerThread {
            addr,
            stat,
            stop: Some(stop_tx),
            handle: Some(handle),
        })
    }

    /// The CPU time the server has used so far: its thread's, and its
    /// runtime workers' and shards' (threads named `msgr-server*` and
    /// `srv-shard*`).
    pub fn cpu(&self) -> std::time::Duration {
        stat_cpu(&self.stat) + threads_cpu(&["msgr-server-w", SERVER_SHARDS])
    }

    /// Stops the server; returns the CPU time its thread used while running.
    pub fn stop(mut self) -> std::time::Duration {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// The name of the in-process server's shard threads.
pub const SERVER_SHARDS: &str = "srv-shard";

/// CPU time used by this process's live threads whose names start with
/// one of `prefixes`.
pub fn threads_cpu(prefixes: &[&str]) -> std::time::Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return std::time::Duration::ZERO;
    };
    tasks
        .flatten()
        .filter(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            prefixes.iter().any(|p| comm.starts_with(p))
        })
        .map(|t| stat_cpu(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// CPU time (user and system) of the process or thread whose /proc stat
/// file is `path`.
pub fn stat_cpu(path: &str) -> std::time::Duration {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3;
    // utime and stime are fields 14 and 15, in clock ticks (100 Hz).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let total = ticks(11) + ticks(12);
    std::time::Duration::from_millis(total * 10)
}

/// Latencies in microseconds, as a histogram (3 significant digits): a run
/// of any length holds the same few KiB, not a sample per message.
#[derive(Debug, Clone)]
pub struct Latencies(hdrhistogram::Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        // An auto-resizing histogram of 3 significant digits cannot fail
        // to be made.
        let h = hdrhistogram::Histogram::new(3).unwrap_or_else(|_| unreachable!());
        Latencies(h)
    }
}

impl Latencies {
    pub fn record(&mut self, d: std::time::Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        // Auto-resizing: only a value past u64's range fails, saturated.
        let _ = self.0.record(us).or_else(|_| self.0.record(self.0.high()));
    }

    pub fn merge(&mut self, other: Latencies) {
        let _ = self.0.add(&other.0);
    }

    /// How many were recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `p`-th percentile (0..=100), in microseconds.
    pub fn percentile(&mut self, p: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        self.0.value_at_quantile(p / 100.0)
    }
}

/// Tells a peer that refuses us from a connection that is merely failing,
/// for tools that should stop with the reason rather than reconnect
/// forever: a refusal ([`msgr_protocol::ProtocolError::is_refusal`]) at
/// once, or the peer closing our handshake in the same phase, attempt after
/// attempt with nothing else between: five times from a peer that never
/// gave us a session, eight once one did. Socket failures injected for a
/// test, one in thirty on both sides, land in one phase a few times
/// running now and then; five, or eight, running about never.
#[derive(Debug, Default)]
pub struct RefusalWatch {
    phase: Option<&'static str>,
    closes: u32,
    connected: bool,
}

impl RefusalWatch {
    /// Closes in one phase that make a refusal, before and after a session.
    pub const CLOSES: u32 = 5;
    pub const CLOSES_AFTER_A_SESSION: u32 = 8;

    /// A fault: whether the peer refuses us.
    pub fn on_fault(&mut self, e: &msgr_protocol::ProtocolError) -> bool {
        if e.is_refusal() {
            return true;
        }
        let msgr_protocol::ProtocolError::ClosedInHandshake { phase, .. } = e else {
            // Failed otherwise: the run of closes is broken.
            self.phase = None;
            self.closes = 0;
            return false;
        };
        self.closes = match self.phase == Some(*phase) {
            true => self.closes.saturating_add(1),
            false => 1,
        };
        self.phase = Some(*phase);
        let limit = match self.connected {
            true => Self::CLOSES_AFTER_A_SESSION,
            false => Self::CLOSES,
        };
        self.closes >= limit
    }

    /// The session became READY: earlier closes were not a refusal.
    pub fn on_connect(&mut self) {
        *self = RefusalWatch {
            connected: true,
            ..RefusalWatch::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_protocol::ProtocolError;

    #[test]
    fn refusals_stop_at_once_and_handshake_closes_when_they_repeat() {
        let closed = |phase| ProtocolError::ClosedInHandshake {
            phase,
            kind: std::io::ErrorKind::UnexpectedEof,
        };
        let reset = ProtocolError::Transport {
            kind: std::io::ErrorKind::ConnectionReset,
            message: "reset".into(),
        };
        let mut w = RefusalWatch::default();
        assert!(w.on_fault(&ProtocolError::Auth(msgr_auth::AuthError::NoMethodLeft)));
        assert!(!w.on_fault(&closed("SESSION_CONNECTING")));
        assert!(
            !w.on_fault(&closed("AUTH_CONNECTING")),
            "another phase starts over"
        );
        assert!(!w.on_fault(&closed("SESSION_CONNECTING")));
        assert!(!w.on_fault(&reset), "another failure breaks the run");
        for _ in 1..RefusalWatch::CLOSES {
            assert!(!w.on_fault(&closed("SESSION_CONNECTING")));
        }
        assert!(w.on_fault(&closed("SESSION_CONNECTING")));
        // After a session, it takes eight.
        w.on_connect();
        for _ in 1..RefusalWatch::CLOSES_AFTER_A_SESSION {
            assert!(!w.on_fault(&closed("COMPRESSION_CONNECTING")));
        }
        assert!(w.on_fault(&closed("COMPRESSION_CONNECTING")));
        assert!(!w.on_fault(&reset));
    }
}
