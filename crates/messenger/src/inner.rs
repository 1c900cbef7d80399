//! What a messenger's handles and its connections' drivers share: the
//! transport and protocol config, the shards, the peer registry and the
//! table of live connections, throttles, counters, and the count of
//! running tasks that shutdown waits for. [`crate::Messenger`] makes it;
//! each connection's driver (crate::driver) holds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec, EntityType};
use msgr_protocol::registry::{PeerKey, Registry};
use msgr_protocol::{Config, FailedPaths, HostsHeard, Policy, ThrottleLimits};
use msgr_transport::Transport;
use tokio::sync::{watch, Notify};

use crate::connection::{Connection, IdleClock};
use crate::inject::Injector;
use crate::shard::Shards;
use crate::throttle::Throttle;
use crate::{Dispatcher, MessageTypes};

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
    pub registry: Mutex<Registry<Connection>>,
    /// Peers whose path failed recently: connections dialled to them probe
    /// from their first connect (taken at faults of the path and at
    /// connects, never per message).
    pub failed_paths: Mutex<FailedPaths>,
    /// When connections last read from each peer host: the evidence that
    /// a silent connection's path is congested, not cut (taken a few times
    /// a second per busy connection, and at path checks).
    pub hosts_heard: Mutex<HostsHeard>,
    /// Every live connection, registered or not (for shutdown).
    pub all: Mutex<HashMap<u64, Connection>>,
    pub dispatch_throttle: Arc<Throttle>,
    /// The throttle each peer type's policy names, made on a connection's
    /// first message: the connections of a type whose policy keeps its
    /// limits share one throttle, and a policy changed at run time with
    /// other limits gets a new one (connections made before keep theirs).
    pub policy_throttles: Mutex<HashMap<(EntityType, ThrottleLimits), Arc<Throttle>>>,
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
    pub next_id: AtomicU64,
    /// Tracked tasks running (shutdown waits for none).
    pub tasks: Arc<TaskCount>,
    pub shutdown: watch::Sender<bool>,
    /// Options::message_types, for each connection's calls.
    pub message_types: MessageTypes,
}

impl<T: Transport> Inner<T> {
    /// What of a peer's addresses this messenger dials: a messenger bound
    /// without msgr2 (v1: addresses only) dials peers' msgr1 addresses, as
    /// Ceph's AsyncMessenger::_filter_addrs does (in a race, its address
    /// could not be compared with theirs over msgr2).
    pub fn dialable(&self, addrs: &EntityAddrvec) -> EntityAddrvec {
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
    pub fn registry(&self) -> MutexGuard<'_, Registry<Connection>> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `conn` as the holder of `key` (under the registry's lock,
    /// `reg`).
    pub fn register(&self, reg: &mut Registry<Connection>, key: PeerKey, conn: &Connection) {
        *conn
            .shared
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(key);
        reg.register(key, conn.clone());
    }

    pub fn failed_paths(&self) -> MutexGuard<'_, FailedPaths> {
        self.failed_paths.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn hosts_heard(&self) -> MutexGuard<'_, HostsHeard> {
        self.hosts_heard.lock().unwrap_or_else(|e| e.into_inner())
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
        let t = all.entry((peer_type, limits)).or_insert_with(|| {
            let shards = self.shards.len();
            let leases = if shards > 1 { shards } else { 0 };
            Throttle::with_shards(limits.messages, limits.bytes, leases)
        });
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

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A handle on a new connection `id` on `shard`, known to shutdown.
    pub fn new_connection(&self, id: u64, shard: usize) -> Connection {
        let c = Connection::new(id, shard, self.config.queue_limits.soft, self.message_types);
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
    pub fn task_guard(&self) -> TaskDone {
        self.tasks.running.fetch_add(1, Ordering::AcqRel);
        TaskDone(self.tasks.clone())
    }

    /// Returns once every tracked task has ended.
    pub async fn tasks_ended(&self) {
        loop {
            let done = self.tasks.done.notified();
            if self.tasks.running.load(Ordering::Acquire) == 0 {
                break;
            }
            done.await;
        }
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
            reg.forget(&k, conn);
        }
    }
}

/// The tracked tasks running, and the wake-up of the shutdown waiting for
/// them. Apart from [`Inner`]: a task's guard holds no reference to the
/// messenger, so once the count is 0 no task holds one (each lets go of
/// its own before its guard), and a messenger dropped after `shutdown`
/// is gone (its perf counters leave the collection with it).
#[derive(Default)]
pub(crate) struct TaskCount {
    running: AtomicUsize,
    done: Notify,
}

/// Counts a tracked task done when it ends, or when its future is dropped
/// (a shard's runtime gone, a panic): shutdown waits for every one.
pub(crate) struct TaskDone(Arc<TaskCount>);

impl Drop for TaskDone {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_waiters();
        }
    }
}
