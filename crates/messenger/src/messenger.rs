//! The messenger: binds, accepts, connects, keeps the registry of
//! connections by peer, and shuts down.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use msgr_auth::{AuthProvider, Random};
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType};
use msgr_protocol::registry::PeerKey;
use msgr_protocol::{CompressionConfig, Config, Conn, Policy, PolicySet, ThrottleLimits, Timeouts};
use msgr_transport::Transport;
use tokio::sync::{watch, Notify};

use crate::connection::{Connection, IdleClock};
use crate::driver::Driver;
use crate::inject::{InjectConfig, Injector};
use crate::shard::Shards;
use crate::throttle::Throttle;

mod dump;
mod listen;
use crate::Dispatcher;

/// How a messenger is set up (Ceph's ms_* options that matter here).
#[derive(Clone)]
pub struct Options {
    pub name: EntityName,
    /// Our addresses' nonce (tells our instances apart at the same
    /// address). Random by default, from the system's source (Ceph's
    /// get_random_nonce): two clients on one host never share an address;
    /// a daemon that peers must find sets its own.
    pub nonce: u32,
    pub policies: PolicySet,
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
    pub timeouts: Timeouts,
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
    /// Failover tests' breakpoints (msgr_protocol::intercept); connection
    /// ids are [`crate::Connection::id`].
    #[cfg(feature = "interceptor")]
    pub interceptor: Option<Arc<dyn msgr_protocol::intercept::Interceptor>>,
}

impl Options {
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
            thread_name: "msgr-shard".into(),
            accept_on_every_shard: true,
            perf: None,
            #[cfg(feature = "interceptor")]
            interceptor: None,
        }
    }
}

pub(crate) struct Inner<T: Transport> {
    pub transport: T,
    pub config: Arc<Config>,
    pub dispatcher: Arc<dyn Dispatcher>,
    pub shards: Shards,
    pub my_addrs: Mutex<EntityAddrvec>,
    /// What `bind` listens on, wildcards included.
    pub listening: Mutex<EntityAddrvec>,
    /// The connection that holds each peer (taken when connections open,
    /// close, or resolve an ident: never per message).
    pub registry: Mutex<HashMap<PeerKey, Connection>>,
    /// Every live connection, registered or not (for shutdown).
    pub all: Mutex<HashMap<u64, Connection>>,
    pub dispatch_throttle: Arc<Throttle>,
    /// The throttle each peer type's policy names, made on a connection's
    /// first message: the connections of a type whose policy keeps its
    /// limits share one throttle, and a policy changed at run time with
    /// other limits gets a new one (connections made before keep theirs).
    policy_throttles: Mutex<HashMap<(EntityType, ThrottleLimits), Arc<Throttle>>>,
    pub injector: Injector,
    pub max_connections: usize,
    pub evict_idle_after: std::time::Duration,
    /// Every shard accepts on a bound port where the transport allows.
    pub accept_on_every_shard: bool,
    /// How connections publish their idle times (from when, how finely).
    pub idle_clock: IdleClock,
    /// Sockets alive now (SocketSlot).
    pub live_sockets: Arc<AtomicUsize>,
    /// Sockets closed at accept because `max_connections` were open.
    pub refused_accepts: AtomicU64,
    /// Idle connections evicted to make room at `max_connections`.
    pub evictions: AtomicU64,
    /// Perf counters, a logger per shard.
    pub counters: crate::counters::Counters,
    next_id: AtomicU64,
    tasks: AtomicUsize,
    tasks_done: Notify,
    pub shutdown: watch::Sender<bool>,
}

impl<T: Transport> Inner<T> {
    /// What of a peer's addresses this messenger dials: a messenger bound
    /// without msgr2 (v1: addresses only) dials peers' msgr1 addresses, as
    /// Ceph's AsyncMessenger::_filter_addrs does (in a race, its address
    /// could not be compared with theirs over msgr2).
    fn dialable(&self, addrs: &EntityAddrvec) -> EntityAddrvec {
        let listening = self.listening.lock().unwrap_or_else(|e| e.into_inner());
        let msgr1_only =
            !listening.0.is_empty() && !listening.0.iter().any(|a| a.kind == EntityAddrType::MSGR2);
        if msgr1_only && addrs.legacy().is_some() {
            let v1 = addrs.0.iter().filter(|a| a.kind == EntityAddrType::LEGACY);
            return EntityAddrvec(v1.copied().collect());
        }
        addrs.clone()
    }
}

impl<T: Transport> Inner<T> {
    pub fn registry(&self) -> MutexGuard<'_, HashMap<PeerKey, Connection>> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `conn` as the holder of `key` (under the registry's lock,
    /// `reg`).
    pub fn register(
        &self,
        reg: &mut HashMap<PeerKey, Connection>,
        key: PeerKey,
        conn: &Connection,
    ) {
        *conn
            .shared
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(key);
        reg.insert(key, conn.clone());
    }

    pub fn all(&self) -> MutexGuard<'_, HashMap<u64, Connection>> {
        self.all.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn addrs(&self) -> EntityAddrvec {
        self.my_addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The throttle of a connection's policy (`policy`, taken for a peer
    /// of `peer_type`), if it has one.
    pub fn policy_throttle(&self, peer_type: EntityType, policy: Policy) -> Option<Arc<Throttle>> {
        let limits = policy.throttle?;
        let mut all = self
            .policy_throttles
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let t = all
            .entry((peer_type, limits))
            .or_insert_with(|| Throttle::new(limits.messages, limits.bytes));
        Some(t.clone())
    }

    /// A connector learned our IP from its peer's HELLO. Only a messenger
    /// that never bound takes it (a client, as Ceph's learned_addr): a
    /// wildcard bind is advertised per socket, as the address each peer
    /// reached (MyAddrs::on_socket), never as what one peer saw.
    pub fn learned(&self, addr: EntityAddr) {
        let mut mine = self.my_addrs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(first) = mine.0.first_mut() {
            if first.is_blank_ip() && first.port() == 0 {
                let port = first.port();
                first.addr = addr.addr.map(|a| std::net::SocketAddr::new(a.ip(), port));
            }
        }
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A handle on a new connection `id` on `shard`, known to shutdown.
    fn new_connection(&self, id: u64, shard: usize) -> Connection {
        let c = Connection::new(id, shard, self.config.queue_limits.soft);
        self.all().insert(id, c.clone());
        c
    }

    /// Runs `fut` on `shard` as a tracked task (shutdown waits for it).
    pub fn spawn(
        self: &Arc<Self>,
        shard: usize,
        fut: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let done = self.task_guard();
        self.shards.spawn(shard, async move {
            fut.await;
            drop(done);
        });
    }

    /// Counts a task done when the guard is dropped: shutdown waits for
    /// it. A connection's task holds it in its own future rather than
    /// being wrapped by `spawn`, whose future would store the task's twice
    /// (once captured, once awaited): an idle connection's task stays half
    /// the size.
    pub fn task_guard(self: &Arc<Self>) -> TaskDone<T> {
        self.tasks.fetch_add(1, Ordering::AcqRel);
        TaskDone(self.clone())
    }

    /// A closed connection leaves the tables (the registry only where it
    /// still holds its key).
    pub fn forget(&self, conn: &Connection) {
        self.all().remove(&conn.id());
        let mut reg = self.registry();
        let key = conn
            .shared
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(k) = key {
            if reg.get(&k) == Some(conn) {
                reg.remove(&k);
            }
        }
    }
}

/// Counts a tracked task done when it ends, or when its future is dropped
/// (a shard's runtime gone, a panic): shutdown waits for every one.
pub(crate) struct TaskDone<T: Transport>(Arc<Inner<T>>);

impl<T: Transport> Drop for TaskDone<T> {
    fn drop(&mut self) {
        if self.0.tasks.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.tasks_done.notify_waiters();
        }
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
        let dispatch_throttle = Throttle::new(u64::MAX, opts.dispatch_throttle_bytes);
        let counters = crate::counters::Counters::new(
            &opts.name.to_string(),
            opts.shards.max(1),
            dispatch_throttle.clone(),
            opts.perf,
        );
        let shards = match (opts.shards, opts.shard_threads) {
            (0 | 1, _) | (_, false) => Shards::inline(opts.shards),
            (n, true) => Shards::threads(n, &opts.thread_name, &counters)
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
                registry: Mutex::new(HashMap::new()),
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
                tasks: AtomicUsize::new(0),
                tasks_done: Notify::new(),
                shutdown,
            }),
        }
    }

    /// Our addresses (as bound, or learned from peers).
    pub fn addrs(&self) -> EntityAddrvec {
        self.inner.addrs()
    }

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
        let existing = |reg: &HashMap<PeerKey, Connection>| {
            key.and_then(|k| reg.get(&k))
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
        let conn = Conn::connect(
            self.inner.config.clone(),
            addrs.clone(),
            peer_type,
            self.inner.addrs(),
            crate::now(),
            id,
        );
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
        loop {
            let done = self.inner.tasks_done.notified();
            if self.inner.tasks.load(Ordering::Acquire) == 0 {
                break;
            }
            done.await;
        }
        self.inner.shards.stop();
    }
}
