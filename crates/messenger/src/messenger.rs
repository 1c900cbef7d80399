//! The messenger: binds, accepts, connects, keeps the registry of
//! connections by peer, and shuts down.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use msgr_auth::{AuthProvider, Random};
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType};
use msgr_protocol::registry::{PeerKey, Registry};
use msgr_protocol::{CompressionConfig, Config, Conn, Policy, PolicySet, Timeouts};
use msgr_transport::Transport;
use tokio::sync::watch;

use crate::connection::{Connection, IdleClock};
use crate::driver::Driver;
use crate::inject::{InjectConfig, Injector};
use crate::inner::Inner;
use crate::shard::Shards;
use crate::throttle::Throttle;

mod dump;
mod listen;
use crate::{Dispatcher, MessageTypes};

/// How a messenger is set up (Ceph's ms_* options that matter here).
///
/// Made with [`Options::new`] (the name, the policies and the
/// authentication: what has no default) and set with the chained `with_*`
/// methods, one per field:
///
/// ```
/// # use std::sync::Arc;
/// # use msgr_messenger::Options;
/// # use msgr_protocol::{Policy, PolicySet};
/// let opts = Options::new(
///     "client.1".parse().unwrap(),
///     PolicySet::new(Policy::lossy_client()),
///     Arc::new(msgr_auth::NoneProvider),
/// )
/// .with_shards(1)
/// .with_seed(7);
/// assert_eq!(opts.shards, 1);
/// ```
///
/// Its fields can be read, and set in place; new ones may come
/// (`non_exhaustive`), so it is not made as a struct literal.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// Who this messenger is (`client.admin`, `osd.3`).
    pub name: EntityName,
    /// Our addresses' nonce (tells our instances apart at the same
    /// address). Random by default, from the system's source (Ceph's
    /// get_random_nonce): two clients on one host never share an address;
    /// a daemon that peers must find sets its own.
    pub nonce: u32,
    /// The policy for each peer type (lossy or lossless, who reconnects,
    /// throttles, features).
    pub policies: PolicySet,
    /// How we authenticate, and check peers (auth none, cephx).
    pub auth: Arc<dyn AuthProvider>,
    /// Announce msgr2.1 (REVISION_1); false speaks msgr2.0 only.
    pub rev1: bool,
    /// Dial peers' msgr2 addresses (ms_bind_msgr2); false: their msgr1
    /// (`v1:`) addresses only.
    pub msgr2: bool,
    /// msgr1: sign messages with the cephx session key and check the
    /// peer's (cephx_sign_messages).
    pub sign_messages: bool,
    /// msgr1: require signatures of keyed peers (cephx_require_signatures).
    pub require_signatures: bool,
    /// msgr1: the cephx signature version keyed peers must offer
    /// (cephx_require_version; 2, Ceph's default, requires CEPHX_V2 so that
    /// the bit cannot be stripped from an unauthenticated CONNECT).
    pub cephx_require_version: u32,
    /// Handshake, connect, idle and keepalive times, and reconnect backoff.
    pub timeouts: Timeouts,
    /// On-wire compression (msgr2's ms_osd_compress_* options).
    pub compression: CompressionConfig,
    /// Caps on frames of READY sessions (segment, frame, decompressed sizes).
    pub frame_limits: msgr_frames::FrameLimits,
    /// ms_dispatch_throttle_bytes: received messages held by the user.
    /// Each message takes its share when its preamble arrives, before its
    /// bytes are read: its payload and a fixed overhead
    /// (msgr_protocol::Session::cost), so that empty messages count too; a
    /// message announced larger than this is refused.
    pub dispatch_throttle_bytes: u64,
    /// Bytes a connection holds for its peer (queued, unacknowledged,
    /// unwritten) before it stops reading from it and `Connection::send`
    /// waits (msgr_protocol::QueueLimits::soft). A message counts for its
    /// payload and a fixed overhead (msgr_protocol::Session::cost), so that
    /// a flood of empty messages meets the limit as large ones do.
    pub max_queued_bytes: usize,
    /// Bytes past which a connection is marked down (QueueLimits::hard).
    pub max_queued_bytes_hard: usize,
    /// Live sockets this messenger holds at most (a STANDBY session has
    /// none). At the limit, a new socket evicts the READY connection idle
    /// longest, if it has been idle `evict_idle_after`; else it is closed
    /// at once: a flood of peers cannot exhaust memory or descriptors.
    pub max_connections: usize,
    /// How long a READY connection must have been idle to be evicted for a
    /// new one at `max_connections`.
    pub evict_idle_after: std::time::Duration,
    /// Injected faults (ms_inject_socket_failures and the like), for tests.
    pub inject: InjectConfig,
    /// Seeds cookies and fault injection, for tests that must repeat
    /// exactly; 0 (the default): cookies from the system's random source.
    pub seed: u64,
    /// Shards: threads, each with its own single-threaded runtime pinned
    /// to a core, that own connections (their sockets, sessions and
    /// dispatch). The default is the cores this process may use. One shard
    /// runs in the caller's runtime, as do all when `shard_threads` is
    /// false.
    pub shards: usize,
    /// Whether each shard gets its own thread (the default). False keeps
    /// every shard in the caller's runtime, as logical shards: connections
    /// are still placed on and moved between them, deterministically on a
    /// paused runtime (tests).
    pub shard_threads: bool,
    /// Whether shard threads wait in an io_uring of their own
    /// (`msgr_uring::exec`: one system call per turn for every
    /// connection's sends and receives) rather than in tokio's epoll; also
    /// with one shard, which then gets a thread too. Only for a transport
    /// that runs there ([`Transport::runs_on_ring_loop`], the io_uring
    /// one); otherwise, or where the system refuses an io_uring, shards
    /// are tokio's (logged).
    pub ring_shards: bool,
    /// Shard threads are named `{thread_name}-{i}` (the kernel keeps 15
    /// bytes of a name).
    pub thread_name: String,
    /// With several shards, whether each accepts on a bound port itself
    /// (SO_REUSEPORT, where the transport can share a port: the default)
    /// or one listener hands connections out to the shards in turn.
    pub accept_on_every_shard: bool,
    /// Where the messenger's perf counters are shown (an admin socket's
    /// `perf dump`): its shards' loggers, `AsyncMessenger::Worker-N`
    /// (crate::counters), while it lives.
    pub perf: Option<msgr_admin::perf::Collection>,
    /// Names for the message types the per-type counters show, and the
    /// reply type of each request [`crate::Connection::call`] may send:
    /// none by default (msgr-messages has Ceph's; the `msgr` facade's
    /// `CEPH_MESSAGE_TYPES`).
    pub message_types: MessageTypes,
    /// Failover tests' breakpoints (msgr_protocol::intercept); connection
    /// ids are [`crate::Connection::id`].
    #[cfg(feature = "interceptor")]
    pub interceptor: Option<Arc<dyn msgr_protocol::intercept::Interceptor>>,
}

impl Options {
    /// Options for messenger `name`, with `policies` and `auth`, and the
    /// defaults of Ceph's options for the rest.
    pub fn new(name: EntityName, policies: PolicySet, auth: Arc<dyn AuthProvider>) -> Options {
        Options {
            name,
            nonce: msgr_auth::SystemRandom.u64() as u32,
            policies,
            auth,
            rev1: true,
            msgr2: true,
            sign_messages: true,
            require_signatures: false,
            cephx_require_version: 2,
            timeouts: Timeouts::default(),
            compression: CompressionConfig::default(),
            frame_limits: msgr_frames::FrameLimits::default(),
            dispatch_throttle_bytes: 100 << 20,
            max_queued_bytes: 64 << 20,
            max_queued_bytes_hard: 128 << 20,
            max_connections: 16384,
            evict_idle_after: std::time::Duration::from_secs(30),
            inject: InjectConfig::default(),
            seed: 0,
            shards: msgr_sys::allowed_cpus().len().max(1),
            shard_threads: true,
            ring_shards: false,
            thread_name: "msgr-shard".into(),
            accept_on_every_shard: true,
            perf: None,
            message_types: MessageTypes::NONE,
            #[cfg(feature = "interceptor")]
            interceptor: None,
        }
    }

    /// Sets [`Options::nonce`].
    pub fn with_nonce(mut self, nonce: u32) -> Options {
        self.nonce = nonce;
        self
    }

    /// Sets [`Options::rev1`].
    pub fn with_rev1(mut self, rev1: bool) -> Options {
        self.rev1 = rev1;
        self
    }

    /// Sets [`Options::msgr2`].
    pub fn with_msgr2(mut self, msgr2: bool) -> Options {
        self.msgr2 = msgr2;
        self
    }

    /// Sets [`Options::sign_messages`].
    pub fn with_sign_messages(mut self, sign_messages: bool) -> Options {
        self.sign_messages = sign_messages;
        self
    }

    /// Sets [`Options::require_signatures`].
    pub fn with_require_signatures(mut self, require_signatures: bool) -> Options {
        self.require_signatures = require_signatures;
        self
    }

    /// Sets [`Options::cephx_require_version`].
    pub fn with_cephx_require_version(mut self, cephx_require_version: u32) -> Options {
        self.cephx_require_version = cephx_require_version;
        self
    }

    /// Sets [`Options::timeouts`].
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Options {
        self.timeouts = timeouts;
        self
    }

    /// Sets [`Options::compression`].
    pub fn with_compression(mut self, compression: CompressionConfig) -> Options {
        self.compression = compression;
        self
    }

    /// Sets [`Options::frame_limits`].
    pub fn with_frame_limits(mut self, frame_limits: msgr_frames::FrameLimits) -> Options {
        self.frame_limits = frame_limits;
        self
    }

    /// Sets [`Options::dispatch_throttle_bytes`].
    pub fn with_dispatch_throttle_bytes(mut self, dispatch_throttle_bytes: u64) -> Options {
        self.dispatch_throttle_bytes = dispatch_throttle_bytes;
        self
    }

    /// Sets [`Options::max_queued_bytes`].
    pub fn with_max_queued_bytes(mut self, max_queued_bytes: usize) -> Options {
        self.max_queued_bytes = max_queued_bytes;
        self
    }

    /// Sets [`Options::max_queued_bytes_hard`].
    pub fn with_max_queued_bytes_hard(mut self, max_queued_bytes_hard: usize) -> Options {
        self.max_queued_bytes_hard = max_queued_bytes_hard;
        self
    }

    /// Sets [`Options::max_connections`].
    pub fn with_max_connections(mut self, max_connections: usize) -> Options {
        self.max_connections = max_connections;
        self
    }

    /// Sets [`Options::evict_idle_after`].
    pub fn with_evict_idle_after(mut self, evict_idle_after: std::time::Duration) -> Options {
        self.evict_idle_after = evict_idle_after;
        self
    }

    /// Sets [`Options::inject`].
    pub fn with_inject(mut self, inject: InjectConfig) -> Options {
        self.inject = inject;
        self
    }

    /// Sets [`Options::seed`].
    pub fn with_seed(mut self, seed: u64) -> Options {
        self.seed = seed;
        self
    }

    /// Sets [`Options::shards`].
    pub fn with_shards(mut self, shards: usize) -> Options {
        self.shards = shards;
        self
    }

    /// Sets [`Options::ring_shards`].
    pub fn with_ring_shards(mut self, ring_shards: bool) -> Options {
        self.ring_shards = ring_shards;
        self
    }

    /// Sets [`Options::shard_threads`].
    pub fn with_shard_threads(mut self, shard_threads: bool) -> Options {
        self.shard_threads = shard_threads;
        self
    }

    /// Sets [`Options::thread_name`].
    pub fn with_thread_name(mut self, thread_name: String) -> Options {
        self.thread_name = thread_name;
        self
    }

    /// Sets [`Options::accept_on_every_shard`].
    pub fn with_accept_on_every_shard(mut self, accept_on_every_shard: bool) -> Options {
        self.accept_on_every_shard = accept_on_every_shard;
        self
    }

    /// Sets [`Options::perf`].
    pub fn with_perf(mut self, perf: Option<msgr_admin::perf::Collection>) -> Options {
        self.perf = perf;
        self
    }

    /// Sets [`Options::message_types`].
    pub fn with_message_types(mut self, message_types: MessageTypes) -> Options {
        self.message_types = message_types;
        self
    }

    /// Sets [`Options::interceptor`].
    #[cfg(feature = "interceptor")]
    pub fn with_interceptor(
        mut self,
        interceptor: Option<Arc<dyn msgr_protocol::intercept::Interceptor>>,
    ) -> Options {
        self.interceptor = interceptor;
        self
    }
}

/// A messenger over transport `T`: it binds addresses, accepts and opens
/// connections to peers (one per peer, found again by `connect`), and
/// hands what they receive to its dispatcher.
///
/// Here a server takes what arrives as a stream ([`crate::dispatch::events`]),
/// and a chain of dispatchers ([`crate::dispatch::Chain`]) takes the
/// client's: the first link that wants a message keeps it.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use msgr_auth::NoneProvider;
/// use msgr_encoding::EntityType;
/// use msgr_messenger::dispatch::{events, Chain, ChainLink, DispatchEvent};
/// use msgr_messenger::{Connection, IncomingMessage, Message, Messenger, Options, Policy};
/// use msgr_protocol::PolicySet;
/// use msgr_transport::memory::MemoryNet;
///
/// /// Keeps the replies of one type, and counts them.
/// #[derive(Default)]
/// struct Replies(AtomicU64);
/// impl ChainLink for Replies {
///     fn ms_take(&self, _: &Connection, m: IncomingMessage) -> Option<IncomingMessage> {
///         if m.msg_type != 43 {
///             return Some(m); // for the next link
///         }
///         self.0.fetch_add(1, Ordering::Relaxed);
///         None
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let net = MemoryNet::new();
/// let none = Arc::new(NoneProvider);
/// let (dispatcher, mut incoming) = events();
/// let server = Messenger::new(
///     net.clone(),
///     Options::new("osd.0".parse()?, PolicySet::new(Policy::stateless_server()), none.clone()),
///     dispatcher,
/// );
/// let addrs = server.bind(&"v2:10.0.0.1:6800".parse()?).await?;
///
/// let replies = Arc::new(Replies::default());
/// let client = Messenger::new(
///     net,
///     Options::new("client.1".parse()?, PolicySet::new(Policy::lossy_client()), none),
///     Arc::new(Chain::new().then(replies.clone())),
/// );
/// let osd = client.connect(&addrs, EntityType::OSD);
/// osd.send(Message::new(42, "ping".into())).await;
///
/// // The server answers what it receives.
/// loop {
///     match incoming.recv().await {
///         Some(DispatchEvent::Message(conn, m)) => {
///             assert_eq!(&m.front[..], b"ping");
///             conn.send(Message::new(43, "pong".into())).await;
///             break;
///         }
///         Some(_) => continue, // accepted, ...
///         None => unreachable!("the server runs"),
///     }
/// }
/// while replies.0.load(Ordering::Relaxed) == 0 {
///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
/// }
/// client.shutdown().await;
/// server.shutdown().await;
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub struct Messenger<T: Transport> {
    inner: Arc<Inner<T>>,
}

impl<T: Transport> Clone for Messenger<T> {
    fn clone(&self) -> Self {
        Messenger {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Transport> Messenger<T> {
    /// A messenger over `transport`, set up by `opts`, handing what arrives
    /// to `dispatcher`. It listens once bound ([`Messenger::bind`]) and
    /// dials on [`Messenger::connect`]; its shards' threads start now.
    pub fn new(transport: T, opts: Options, dispatcher: Arc<dyn Dispatcher>) -> Messenger<T> {
        let mut config = Config::new(opts.name, opts.auth.clone(), opts.policies.clone());
        if !opts.rev1 {
            config = config.rev0_only();
        }
        config.msgr2 = opts.msgr2;
        config.sign_messages = opts.sign_messages;
        config.require_signatures = opts.require_signatures;
        config.cephx_require_version = opts.cephx_require_version;
        config.timeouts = opts.timeouts;
        config.compression = opts.compression.clone();
        config.frame_limits = opts.frame_limits;
        config.receive_budget = Some(opts.dispatch_throttle_bytes);
        config.queue_limits = msgr_protocol::QueueLimits {
            soft: opts.max_queued_bytes,
            hard: opts.max_queued_bytes_hard.max(opts.max_queued_bytes),
        };
        // The driver reports what it holds unwritten (Conn::fill_output).
        config.output_window = Some(crate::driver::OUTPUT_WINDOW);
        #[cfg(feature = "interceptor")]
        {
            config.interceptor = opts.interceptor.clone();
        }
        // A seed makes a run repeat exactly (tests); without one, cookies
        // come from the system's random source, as does the injector's seed.
        let seed = match opts.seed {
            0 => msgr_auth::SystemRandom.u64(),
            s => {
                config.random = Arc::new(msgr_auth::SeededRandom::new(s));
                s
            }
        };
        // Until bound or learned: a blank address with our nonce.
        let blank = EntityAddr {
            kind: EntityAddrType::ANY,
            nonce: opts.nonce,
            addr: Some("0.0.0.0:0".parse().expect("literal")),
        };
        let (shutdown, _) = watch::channel(false);
        // Threads that cannot be made leave every shard in the caller's
        // runtime: the messenger still works, on fewer cores.
        // A lease per shard when there are several (one shard has nothing
        // to share).
        let leases = if opts.shards > 1 { opts.shards } else { 0 };
        let dispatch_throttle =
            Throttle::with_shards(u64::MAX, opts.dispatch_throttle_bytes, leases);
        let counters = crate::counters::Counters::new(
            &opts.name.to_string(),
            opts.shards.max(1),
            dispatch_throttle.clone(),
            opts.perf,
            opts.message_types,
        );
        let ring = opts.ring_shards && opts.shard_threads;
        if ring && !transport.runs_on_ring_loop() {
            tracing::warn!(
                "ring shards asked for a transport that cannot run on them: tokio's shards"
            );
        }
        let ring_shards = match ring && transport.runs_on_ring_loop() {
            true => Shards::ring_threads(opts.shards.max(1), &opts.thread_name, &counters)
                .map_err(|e| tracing::warn!("no ring shards ({e}): tokio's shards"))
                .ok(),
            false => None,
        };
        let shards = match (ring_shards, opts.shards, opts.shard_threads) {
            (Some(s), _, _) => s,
            (None, 0 | 1, _) | (None, _, false) => Shards::inline(opts.shards),
            (None, n, true) => Shards::threads(n, &opts.thread_name, &counters)
                .unwrap_or_else(|_| Shards::inline(n)),
        };
        Messenger {
            inner: Arc::new(Inner {
                transport,
                config: Arc::new(config),
                dispatcher,
                shards,
                my_addrs: Mutex::new(EntityAddrvec::single(blank)),
                listening: Mutex::new(EntityAddrvec::default()),
                registry: Mutex::new(Registry::default()),
                failed_paths: Mutex::new(msgr_protocol::FailedPaths::default()),
                hosts_heard: Mutex::new(msgr_protocol::HostsHeard::default()),
                all: Mutex::new(HashMap::new()),
                dispatch_throttle,
                policy_throttles: Mutex::new(HashMap::new()),
                injector: Injector::new(opts.inject, seed ^ 0x5eed),
                max_connections: opts.max_connections,
                evict_idle_after: opts.evict_idle_after,
                idle_clock: IdleClock::new(crate::now(), opts.evict_idle_after),
                accept_on_every_shard: opts.accept_on_every_shard,
                live_sockets: Arc::new(AtomicUsize::new(0)),
                refused_accepts: AtomicU64::new(0),
                evictions: AtomicU64::new(0),
                counters,
                next_id: AtomicU64::new(1),
                tasks: Arc::default(),
                message_types: opts.message_types,
                shutdown,
            }),
        }
    }

    /// Our addresses (as bound, or learned from peers).
    pub fn addrs(&self) -> EntityAddrvec {
        self.inner.addrs()
    }

    /// Who this messenger is (Options::name).
    pub fn name(&self) -> EntityName {
        self.inner.config.my_name
    }

    /// Binds each address of `addrs` (port 0: any) and starts accepting,
    /// msgr1 on a `v1:` address and msgr2 on any other; returns the bound
    /// addresses, which the messenger advertises (both, as Ceph's daemons
    /// do with `[v2:IP:PORT,v1:IP:PORT]`). With several shards, every
    /// shard accepts on the address where the transport can share a port
    /// (SO_REUSEPORT); elsewhere one listener hands connections out to the
    /// shards in turn.
    pub async fn bind(&self, addrs: &EntityAddrvec) -> io::Result<EntityAddrvec> {
        let nonce = self.inner.addrs().0.first().map_or(0, |a| a.nonce);
        let mut bound = Vec::new();
        for a in &addrs.0 {
            let sock = a
                .addr
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "address without IP"))?;
            // A `v1:` address listens for msgr1; any other for msgr2.
            let msgr1 = a.kind == EntityAddrType::LEGACY;
            let local = self.listen(sock, msgr1).await?;
            let kind = if msgr1 {
                EntityAddrType::LEGACY
            } else {
                EntityAddrType::MSGR2
            };
            bound.push(EntityAddr::new(kind, local, nonce));
        }
        let bound = EntityAddrvec(bound);
        *self
            .inner
            .my_addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = bound.clone();
        *self
            .inner
            .listening
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = bound.clone();
        Ok(bound)
    }

    /// The connection to `addrs` (a peer of type `peer_type`): the existing
    /// one if there is one, else a new one that starts connecting, on the
    /// shard the dispatcher places it on (by default the caller's shard, or
    /// the next in turn). `EntityType::ANY` leaves the type to be learned
    /// from the peer: its HELLO (msgr2), or its BADPROTOVER (msgr1).
    pub fn connect(&self, addrs: &EntityAddrvec, peer_type: EntityType) -> Connection {
        // Keyed by what is dialled: the address the peer names itself by
        // on that protocol (an msgr1 peer by its v1: address).
        let dialable = self.inner.dialable(addrs);
        let addrs = &dialable;
        let key = PeerKey::of(addrs);
        let existing = |reg: &Registry<Connection>| {
            key.and_then(|k| reg.holder(&k))
                .filter(|c| c.state() != msgr_protocol::ConnState::Closed)
                .cloned()
        };
        if let Some(c) = existing(&self.inner.registry()) {
            return c;
        }
        let shards = &self.inner.shards;
        let here = shards.pick();
        let placed = self.inner.dispatcher.ms_choose_shard(&crate::Placement {
            peer_type,
            peer_name: None,
            peer_addrs: addrs,
            identity: None,
            accepted: false,
            shard: here,
            shards: shards.len(),
        });
        let shard = placed.map_or(here, |s| shards.index(s));
        let mut reg = self.inner.registry();
        if let Some(c) = existing(&reg) {
            return c;
        }
        let id = self.inner.next_id();
        // Listed before the connection exists: whoever sees it start (an
        // interceptor) finds it among `connections()`.
        let handle = self.inner.new_connection(id, shard);
        let now = crate::now();
        let mut conn = Conn::connect(
            self.inner.config.clone(),
            addrs.clone(),
            peer_type,
            self.inner.addrs(),
            now,
            id,
        );
        if key.is_some_and(|k| self.inner.failed_paths().recent(&k, now)) {
            conn.start_probing();
        }
        if let Some(k) = key {
            // Lossy connections are registered too, so the peer's incoming
            // connection is found (and replaces this one) in a race.
            self.inner.register(&mut reg, k, &handle);
        }
        drop(reg);
        let d = Driver::new(self.inner.clone(), conn, handle.clone(), shard, None);
        crate::driver::start(&self.inner, shard, Box::new(d));
        handle
    }

    /// How many shards this messenger runs on.
    pub fn shards(&self) -> usize {
        self.inner.shards.len()
    }

    /// Connections currently alive.
    pub fn connections(&self) -> Vec<Connection> {
        self.inner.all().values().cloned().collect()
    }

    /// Sockets closed at accept because the connection limit was reached.
    pub fn refused_accepts(&self) -> u64 {
        self.inner.refused_accepts.load(Ordering::Relaxed)
    }

    /// Idle connections evicted to make room at the connection limit.
    pub fn evictions(&self) -> u64 {
        self.inner.evictions.load(Ordering::Relaxed)
    }

    /// Sockets alive now (what `max_connections` counts).
    pub fn live_sockets(&self) -> usize {
        self.inner.live_sockets.load(Ordering::Acquire)
    }

    /// Receive budget held now: (messages, bytes) of the dispatch throttle,
    /// taken by messages being read or held by the user.
    pub fn dispatch_budget_held(&self) -> (u64, u64) {
        self.inner.dispatch_throttle.current()
    }

    /// The policy a new connection to a peer of `peer_type` takes.
    pub fn policy(&self, peer_type: EntityType) -> Policy {
        self.inner.config.policies.get(peer_type)
    }

    /// Gives peers of `peer_type` a new policy while the messenger runs
    /// (Ceph's `set_policy`): connections made from now on take it, those
    /// that exist keep theirs. A new throttle in it starts empty.
    pub fn set_policy(&self, peer_type: EntityType, policy: Policy) {
        self.inner.config.policies.set(peer_type, policy);
    }

    /// Replaces the policy of peer types that have none of their own
    /// (`set_default_policy`), for connections made from now on.
    pub fn set_default_policy(&self, policy: Policy) {
        self.inner.config.policies.set_default(policy);
    }

    /// Marks every connection down (mark_down_all); the messenger goes on
    /// listening and connecting.
    pub fn mark_down_all(&self) {
        for c in self.connections() {
            c.mark_down();
        }
    }

    /// Perf counter `i` (crate::counters, e.g. `RECV_MESSAGES`) summed
    /// over the shards: what `perf dump` shows, per shard, for this
    /// messenger.
    pub fn counter(&self, i: usize) -> u64 {
        self.inner.counters.total(i)
    }

    /// Messages and bytes in and out by message type (Ceph's name of each,
    /// `other` for the types it does not name), for the types seen.
    pub fn traffic_by_type(&self) -> Vec<(&'static str, crate::counters::Traffic)> {
        self.inner.counters.traffic()
    }

    /// Fault injection counters: socket failures injected so far.
    pub fn injected_failures(&self) -> u64 {
        self.inner.injector.failures.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection, waits for every task,
    /// and lets the shards' threads end.
    pub async fn shutdown(&self) {
        // Stored even when nothing listens yet (`send` would drop it): a
        // listener whose task has bound but not yet subscribed must see it.
        self.inner.shutdown.send_replace(true);
        let all: Vec<Connection> = self.inner.all().values().cloned().collect();
        for c in all {
            c.mark_down();
        }
        self.inner.tasks_ended().await;
        self.inner.shards.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use msgr_auth::NoneProvider;
    use msgr_encoding::{EntityAddrvec, EntityType};
    use msgr_protocol::{Policy, PolicySet};
    use msgr_transport::memory::MemoryNet;

    use crate::{dispatch, Messenger, Options};

    /// What a connection reads is noted for its peer's host (the path
    /// check's evidence that the host is reachable), and nothing for
    /// another host.
    #[tokio::test]
    async fn reads_are_noted_for_the_peer_host() {
        let net = MemoryNet::new();
        let opts = |name: &str, policy| {
            Options::new(
                name.parse().unwrap(),
                PolicySet::new(policy),
                Arc::new(NoneProvider),
            )
        };
        let (d, _server_events) = dispatch::events();
        let server = Messenger::new(net.clone(), opts("osd.0", Policy::stateless_server()), d);
        let bind: EntityAddrvec = "v2:10.0.0.2:6800/7".parse().unwrap();
        let addrs = server.bind(&bind).await.unwrap();
        let (d, _client_events) = dispatch::events();
        let client = Messenger::new(net.clone(), opts("client.1", Policy::lossy_client()), d);
        let conn = client.connect(&addrs, EntityType::OSD);
        conn.ready().await.unwrap();
        let now = crate::now();
        let heard = client.inner.hosts_heard();
        let host = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert!(heard.since(host("10.0.0.2"), now).is_some());
        assert_eq!(heard.since(host("10.0.0.3"), now), None);
        drop(heard);
        client.shutdown().await;
        server.shutdown().await;
    }
}
