//! The async client: a monitor session that keeps the OSD map current, a
//! lossy-client messenger to the OSDs, and the [`Objecter`] between them,
//! driven under one lock (each step is short: no I/O happens under it, and
//! no placement: CRUSH runs on a snapshot of the map after the lock is
//! released). A request's own placement runs in the task that submits it,
//! as librados computes it in the caller's thread; the placements a new
//! map, a reset, a timeout or an OSD's reply call for run on tokio's
//! blocking pool, never in the messenger's dispatch callback nor on the
//! runtime's workers, where the messenger's connections run (a peer's
//! CRUSH map may make each mapping cost up to its budget).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_encoding::{EntityType, UTime};
use msgr_messages::{
    HObject, MOSDBackoff, MOSDOpReply, TypedMessage, MSG_OSD_BACKOFF, MSG_OSD_OPREPLY,
};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_monc::identity::Identity;
use msgr_monc::{MonClient, MonError};
use msgr_osdmap::OsdMap;
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;
use tokio::sync::{oneshot, Notify};

use crate::objecter::{Limits, Object, Objecter, Request, ENOENT, ETIMEDOUT};
use crate::request::{
    decode_nls, decode_omap_keys, decode_omap_vals, decode_stat, decode_xattrs, Listed, Ops, Reply,
    Stat,
};

/// How long a reset connection's ops wait before they go again (the OSD
/// may be restarting; its new address comes with a new map).
const RESET_DELAY: Duration = Duration::from_millis(200);
/// Reads and writes of whole objects go in pieces of this size, as the
/// `rados` tool's (`--op-size`, 4 MiB).
pub const OP_SIZE: usize = 4 << 20;
/// Omap entries asked for at a time (librados's default batch).
pub const OMAP_BATCH: u64 = 512;
/// Objects asked for per PGNLS.
const LIST_COUNT: u64 = 1024;
/// The namespace that lists every namespace (`LIBRADOS_ALL_NSPACES`).
pub const ALL_NAMESPACES: &str = "\u{1}";

/// What went wrong with a request.
#[derive(Debug)]
pub enum RadosError {
    /// The monitors could not be reached or refused us.
    Mon(MonError),
    /// No pool of that name.
    NoPool(String),
    /// An OSD (or the objecter) answered with an errno.
    Os {
        /// The negative errno.
        errno: i32,
        /// What was being done.
        what: String,
    },
    /// A reply that could not be read.
    BadReply(String),
    /// The client is shut down.
    Shutdown,
    /// An OSD's paging did not move on (a listing cursor that is not past
    /// the one asked with, omap keys not after the last one, with more
    /// promised): asking again would go round for ever. The OSD's fault.
    NoProgress {
        /// The OSD that did not move on.
        osd: i32,
        /// What was being paged (a listing, omap keys).
        what: String,
        /// What was asked and what the OSD answered.
        detail: String,
    },
}

/// The name of an errno an OSD returns (negative or not).
pub fn errno_name(errno: i32) -> &'static str {
    match errno.saturating_abs() {
        1 => "EPERM (operation not permitted)",
        2 => "ENOENT (no such object)",
        5 => "EIO (input/output error)",
        7 => "E2BIG (argument list too long)",
        11 => "EAGAIN (try again)",
        13 => "EACCES (permission denied)",
        17 => "EEXIST (object exists)",
        22 => "EINVAL (invalid argument)",
        27 => "EFBIG (object too large)",
        28 => "ENOSPC (no space left)",
        34 => "ERANGE (out of range)",
        61 => "ENODATA (no such attribute)",
        95 => "EOPNOTSUPP (operation not supported)",
        108 => "ESHUTDOWN (client blocklisted)",
        110 => "ETIMEDOUT (timed out)",
        122 => "EDQUOT (quota exceeded)",
        125 => "ECANCELED (canceled)",
        _ => "unknown errno",
    }
}

impl std::fmt::Display for RadosError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RadosError::Mon(e) => write!(f, "monitors: {e}"),
            RadosError::NoPool(p) => write!(f, "pool {p} does not exist"),
            RadosError::Os { errno, what } => {
                write!(f, "{what}: error {errno}: {}", errno_name(*errno))
            }
            RadosError::BadReply(why) => write!(f, "an OSD's reply: {why}"),
            RadosError::Shutdown => write!(f, "the client is shut down"),
            RadosError::NoProgress { osd, what, detail } => write!(
                f,
                "osd.{osd} made no progress in {what} (the OSD is at fault): {detail}"
            ),
        }
    }
}

impl std::error::Error for RadosError {}

impl From<MonError> for RadosError {
    fn from(e: MonError) -> Self {
        RadosError::Mon(e)
    }
}

impl RadosError {
    /// The errno, for errors that have one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            RadosError::Os { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

/// What the tasks and the dispatcher share.
struct Shared {
    objecter: Mutex<Objecter>,
    waiters: Mutex<HashMap<u64, oneshot::Sender<Result<Reply, i32>>>>,
    /// The connection to each OSD we talk to, and the addresses (as the
    /// map gave them) it was opened to.
    conns: Mutex<HashMap<i32, (msgr_encoding::EntityAddrvec, Connection)>>,
    /// The messenger to the OSDs, whatever its transport (`None` once
    /// shut down).
    messenger: Mutex<Option<Arc<dyn Dial>>>,
    /// Wakes the timer when a request with a deadline arrives.
    timer: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens connections to OSDs: a messenger of any transport, so that the
/// objecter's shared state needs no transport parameter.
trait Dial: Send + Sync {
    fn dial(&self, addrs: &msgr_encoding::EntityAddrvec) -> Connection;
}

impl<T: Transport> Dial for Messenger<T> {
    fn dial(&self, addrs: &msgr_encoding::EntityAddrvec) -> Connection {
        self.connect(addrs, EntityType::OSD)
    }
}

impl Shared {
    /// Computes the targets the objecter queued, a batch at a time until
    /// none is left, each with the map it was taken with and without the
    /// objecter's lock (a batch another task has out is finished by that
    /// task, which looks again once it is back); then sends and hands out
    /// what that decided. Not for the messenger's dispatch callback.
    fn place(&self) {
        loop {
            let batch = lock(&self.objecter).take_placements();
            let Some(batch) = batch else {
                break;
            };
            let placed = batch.run();
            lock(&self.objecter).finish_placements(placed);
        }
        self.flush();
    }

    /// [`Shared::place`] on tokio's blocking pool, off the runtime's
    /// workers, for placements a map, a reset, a timeout or a reply called
    /// for.
    async fn place_aside(self: &Arc<Self>) {
        let shared = self.clone();
        let _ = tokio::task::spawn_blocking(move || shared.place()).await;
    }

    /// Sends what the objecter queued and hands out what it finished.
    fn flush(&self) {
        let (map, transmits, done) = {
            let mut o = lock(&self.objecter);
            let t: Vec<_> = std::iter::from_fn(|| o.poll_transmit()).collect();
            let d: Vec<_> = std::iter::from_fn(|| o.poll_completion()).collect();
            (o.map().clone(), t, d)
        };
        for t in transmits {
            // An OSD gone from this newer map: its request goes again with
            // the map that moved it.
            let Some(c) = map.osd_addrs(t.osd).and_then(|a| self.conn_to(t.osd, a)) else {
                continue;
            };
            c.send_nowait(t.msg.to_message(c.features()));
        }
        let mut waiters = lock(&self.waiters);
        for c in done {
            if let Some(w) = waiters.remove(&c.tid) {
                let _ = w.send(c.result);
            }
        }
    }

    /// The connection to `osd` at `addrs` (a new one if the OSD moved).
    fn conn_to(&self, osd: i32, addrs: &msgr_encoding::EntityAddrvec) -> Option<Connection> {
        let messenger = lock(&self.messenger).clone()?;
        let mut conns = lock(&self.conns);
        if let Some((at, c)) = conns.get(&osd) {
            if at == addrs {
                return Some(c.clone());
            }
            c.mark_down();
        }
        let c = messenger.dial(addrs);
        conns.insert(osd, (addrs.clone(), c.clone()));
        Some(c)
    }

    /// The OSD a connection is to.
    fn osd_of(&self, conn: &Connection) -> Option<i32> {
        lock(&self.conns)
            .iter()
            .find(|(_, (_, c))| c == conn)
            .map(|(o, _)| *o)
    }
}

struct OsdDispatch(Arc<Shared>);

impl Dispatcher for OsdDispatch {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        // Only from the OSD's current connection.
        let Some(osd) = self.0.osd_of(conn) else {
            return;
        };
        match msg.msg_type {
            MSG_OSD_OPREPLY => {
                let Ok(reply) = MOSDOpReply::from_message(&msg) else {
                    // Unreadable: the request stays in flight and goes
                    // again on the next reset or map change.
                    return;
                };
                if let Some(r) = &reply.redirect {
                    tracing::info!(target: "msgr::rados", osd, tid = reply.tid, pool = r.locator.pool, "request redirected");
                }
                lock(&self.0.objecter).handle_reply(osd, reply);
            }
            MSG_OSD_BACKOFF => {
                let Ok(b) = MOSDBackoff::from_message(&msg) else {
                    return;
                };
                tracing::info!(target: "msgr::rados", osd, op = b.op, id = b.id, pg = %b.pgid.pgid, "backoff");
                let ack = lock(&self.0.objecter).handle_backoff(osd, b);
                if let Some(ack) = ack {
                    conn.send_nowait(ack.to_message(conn.features()));
                }
            }
            _ => return,
        }
        self.0.flush();
        // A resend the reply asked for (EAGAIN, a redirect) is placed off
        // this callback.
        if lock(&self.0.objecter).placements_waiting() {
            let shared = self.0.clone();
            tokio::task::spawn_blocking(move || shared.place());
        }
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        let Some(osd) = self.0.osd_of(conn) else {
            return;
        };
        lock(&self.0.conns).retain(|_, (_, c)| c != conn);
        let shared = self.0.clone();
        tokio::spawn(async move {
            tokio::time::sleep(RESET_DELAY).await;
            lock(&shared.objecter).handle_reset(osd);
            shared.place_aside().await;
        });
    }
}

/// A RADOS client, over transport `T` (to the monitors and the OSDs).
pub struct Rados<T: Transport = Tcp> {
    mon: Arc<MonClient<T>>,
    shared: Arc<Shared>,
    messenger: Messenger<T>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Rados<Tcp> {
    /// Connects to the monitors as `id` over TCP, takes the OSD map, and
    /// is ready to talk to OSDs.
    pub async fn connect(id: &Identity, limits: Limits) -> Result<Rados<Tcp>, RadosError> {
        Rados::connect_over(Tcp::default(), id, limits).await
    }
}

impl<T: Transport> Rados<T> {
    /// Connects to the monitors as `id` over `transport`, takes the OSD
    /// map, and is ready to talk to OSDs over it too.
    pub async fn connect_over(
        transport: T,
        id: &Identity,
        limits: Limits,
    ) -> Result<Rados<T>, RadosError> {
        let mut cfg = id.mon_client_config();
        cfg.subscribe.push(("osdmap".to_string(), 0));
        let mon = Arc::new(MonClient::connect_over(transport.clone(), cfg).await?);
        let map = mon.wait_osdmap(0, Duration::from_secs(30)).await?;
        let shared = Arc::new(Shared {
            objecter: Mutex::new(Objecter::new(map, limits)),
            waiters: Mutex::new(HashMap::new()),
            conns: Mutex::new(HashMap::new()),
            messenger: Mutex::new(None),
            timer: Notify::new(),
        });
        let mut options = id.client_options(PolicySet::new(PolicyName::LossyClient.policy()));
        // One shard, in the caller's runtime: a request, its message and
        // its reply stay on the thread that made them (no hand-off to a
        // shard thread and back per op). A caller on a multi-threaded
        // runtime spreads its requests itself.
        options.shards = 1;
        let messenger = Messenger::new(transport, options, Arc::new(OsdDispatch(shared.clone())));
        *lock(&shared.messenger) = Some(Arc::new(messenger.clone()));
        let tasks = vec![
            tokio::spawn(follow_maps(mon.clone(), shared.clone())),
            tokio::spawn(timeouts(shared.clone())),
        ];
        Ok(Rados {
            mon,
            shared,
            messenger,
            tasks,
        })
    }

    /// The current OSD map.
    pub fn osdmap(&self) -> Arc<OsdMap> {
        lock(&self.shared.objecter).map().clone()
    }

    /// The monitor session.
    pub fn mon(&self) -> &MonClient<T> {
        &self.mon
    }

    /// An I/O context on pool `name` (the default namespace).
    pub fn ioctx(&self, name: &str) -> Result<IoCtx, RadosError> {
        let pool = self
            .osdmap()
            .pool_id(name)
            .ok_or_else(|| RadosError::NoPool(name.to_string()))?;
        Ok(IoCtx {
            shared: self.shared.clone(),
            pool,
            nspace: String::new(),
            timeout: None,
        })
    }

    /// Closes the OSD sessions and the monitor session.
    pub async fn shutdown(self) {
        for t in &self.tasks {
            t.abort();
        }
        lock(&self.shared.messenger).take();
        self.messenger.shutdown().await;
        if let Ok(mon) = Arc::try_unwrap(self.mon) {
            mon.shutdown().await;
        }
    }
}

/// Hands each new OSD map to the objecter.
async fn follow_maps<T: Transport>(mon: Arc<MonClient<T>>, shared: Arc<Shared>) {
    follow(
        || lock(&shared.objecter).map().epoch,
        |next| mon.wait_osdmap(next, Duration::from_secs(3600)),
        |map| {
            lock(&shared.objecter).handle_map(map);
            shared.place_aside()
        },
    )
    .await
}

/// Waits for each map after the epoch `have` says (`wait`, which may give
/// up) and hands it to `take`. A map claims its epoch: one at u32::MAX has
/// no next to wait for (waiting for "the next" would find it again at
/// once, round and round without yielding), so following ends there.
async fn follow<W, Fut, T, Taken>(have: impl Fn() -> u32, mut wait: W, mut take: T)
where
    W: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Arc<OsdMap>, MonError>>,
    T: FnMut(Arc<OsdMap>) -> Taken,
    Taken: std::future::Future<Output = ()>,
{
    while let Some(next) = have().checked_add(1) {
        if let Ok(map) = wait(next).await {
            take(map).await;
        }
    }
}

/// Ends requests whose time is up.
async fn timeouts(shared: Arc<Shared>) {
    loop {
        let next = lock(&shared.objecter).next_deadline();
        let wake = shared.timer.notified();
        match next {
            Some(at) => {
                let _ = tokio::time::timeout_at(at.into(), wake).await;
            }
            None => wake.await,
        }
        lock(&shared.objecter).handle_timeout(Instant::now());
        shared.place_aside().await;
    }
}

/// Object I/O in one pool and namespace.
#[derive(Clone)]
pub struct IoCtx {
    shared: Arc<Shared>,
    pool: i64,
    nspace: String,
    timeout: Option<Duration>,
}

/// The first op's output of a reply.
fn first_out(r: &Reply) -> Bytes {
    r.ops.first().map(|o| o.outdata.clone()).unwrap_or_default()
}

impl IoCtx {
    /// The pool this context works in.
    pub fn pool(&self) -> i64 {
        self.pool
    }

    /// Objects in namespace `nspace` from now on.
    pub fn set_namespace(&mut self, nspace: &str) {
        self.nspace = nspace.to_string();
    }

    /// Requests end with ETIMEDOUT after this long (`rados_osd_op_timeout`).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// Runs `ops` on object `name`; an errno in the reply is an error
    /// naming `what`.
    pub async fn operate(&self, name: &[u8], ops: Ops) -> Result<Reply, RadosError> {
        self.submit(Bytes::copy_from_slice(name), None, ops).await
    }

    async fn submit(&self, name: Bytes, pg: Option<u32>, ops: Ops) -> Result<Reply, RadosError> {
        // What an error names: the object, or the listing of a PG.
        let what = |name: &Bytes| match pg {
            Some(_) => "listing".to_string(),
            None => String::from_utf8_lossy(name).into_owned(),
        };
        let label = name.clone();
        let req = Request {
            object: Object {
                pool: self.pool,
                name,
                nspace: self.nspace.clone(),
                key: String::new(),
                pg,
            },
            ops,
            mtime: UTime::from_duration(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default(),
            ),
            timeout: self.timeout,
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut o = lock(&self.shared.objecter);
            let tid = o.submit(req, Instant::now());
            lock(&self.shared.waiters).insert(tid, tx);
        }
        self.shared.timer.notify_one();
        self.shared.place();
        match rx.await {
            Ok(Ok(r)) if r.result < 0 => Err(RadosError::Os {
                errno: r.result,
                what: what(&label),
            }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(errno)) if errno == ENOENT => Err(RadosError::NoPool(self.pool.to_string())),
            Ok(Err(errno)) => Err(RadosError::Os {
                errno,
                what: match errno {
                    ETIMEDOUT => format!("{} (no reply in time)", what(&label)),
                    _ => what(&label),
                },
            }),
            Err(_) => Err(RadosError::Shutdown),
        }
    }

    /// Every object of the pool in this namespace (or in all of them, with
    /// the namespace [`ALL_NAMESPACES`]), PG by PG in the order the OSDs
    /// keep them (`list_nobjects`).
    pub async fn list(&self) -> Result<Vec<Listed>, RadosError> {
        list_pages(|cursor| self.list_page(cursor)).await
    }

    /// One PGNLS from `cursor`: the OSD that answered, where to go on,
    /// what it found.
    async fn list_page(&self, cursor: HObject) -> Result<(i32, HObject, Vec<Listed>), RadosError> {
        let (epoch, pg) = {
            let o = lock(&self.shared.objecter);
            let map = o.map();
            let pool = map
                .pools
                .get(&self.pool)
                .ok_or_else(|| RadosError::NoPool(self.pool.to_string()))?;
            let seed = msgr_osdmap::hash::stable_mod(cursor.hash, pool.pg_num, pool.pg_num_mask);
            (map.epoch, seed)
        };
        let ops = Ops::new().pg_nls(LIST_COUNT, &cursor, epoch);
        let r = self.submit(Bytes::new(), Some(pg), ops).await?;
        let (next, entries) = decode_nls(&first_out(&r))
            .map_err(|e| RadosError::BadReply(format!("object listing: {e}")))?;
        Ok((r.osd, next, entries))
    }

    /// Replace the object's data with `data` (WRITEFULL).
    pub async fn write_full(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().write_full(data))
            .await
            .map(drop)
    }

    /// Write `data` at `offset` (WRITE).
    pub async fn write(&self, name: &[u8], offset: u64, data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().write(offset, data))
            .await
            .map(drop)
    }

    /// Append `data` to the object (APPEND).
    pub async fn append(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().append(data)).await.map(drop)
    }

    /// Read `length` bytes from `offset` (READ).
    pub async fn read(&self, name: &[u8], offset: u64, length: u64) -> Result<Bytes, RadosError> {
        let r = self.operate(name, Ops::new().read(offset, length)).await?;
        Ok(first_out(&r))
    }

    /// The object's size and mtime (STAT).
    pub async fn stat(&self, name: &[u8]) -> Result<Stat, RadosError> {
        let r = self.operate(name, Ops::new().stat()).await?;
        decode_stat(&first_out(&r)).map_err(|e| RadosError::BadReply(format!("stat: {e}")))
    }

    /// Delete the object (DELETE).
    pub async fn remove(&self, name: &[u8]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().remove()).await.map(drop)
    }

    /// Truncate the object to `size` bytes (TRUNCATE).
    pub async fn truncate(&self, name: &[u8], size: u64) -> Result<(), RadosError> {
        self.operate(name, Ops::new().truncate(size))
            .await
            .map(drop)
    }

    /// Zero `length` bytes from `offset` (ZERO).
    pub async fn zero(&self, name: &[u8], offset: u64, length: u64) -> Result<(), RadosError> {
        self.operate(name, Ops::new().zero(offset, length))
            .await
            .map(drop)
    }

    /// Create the object; with `exclusive`, fail if it exists (CREATE).
    pub async fn create(&self, name: &[u8], exclusive: bool) -> Result<(), RadosError> {
        self.operate(name, Ops::new().create(exclusive))
            .await
            .map(drop)
    }

    /// Set xattr `key` to `value` (SETXATTR).
    pub async fn setxattr(&self, name: &[u8], key: &str, value: &[u8]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().setxattr(key, value))
            .await
            .map(drop)
    }

    /// The value of xattr `key` (GETXATTR).
    pub async fn getxattr(&self, name: &[u8], key: &str) -> Result<Bytes, RadosError> {
        let r = self.operate(name, Ops::new().getxattr(key)).await?;
        Ok(first_out(&r))
    }

    /// All the object's xattrs (GETXATTRS).
    pub async fn getxattrs(&self, name: &[u8]) -> Result<BTreeMap<String, Bytes>, RadosError> {
        let r = self.operate(name, Ops::new().getxattrs()).await?;
        decode_xattrs(&first_out(&r)).map_err(|e| RadosError::BadReply(format!("getxattrs: {e}")))
    }

    /// Remove xattr `key` (RMXATTR).
    pub async fn rmxattr(&self, name: &[u8], key: &str) -> Result<(), RadosError> {
        self.operate(name, Ops::new().rmxattr(key)).await.map(drop)
    }

    /// Sets omap entries.
    pub async fn omap_set(
        &self,
        name: &[u8],
        kv: &BTreeMap<String, Bytes>,
    ) -> Result<(), RadosError> {
        self.operate(name, Ops::new().omap_set(kv)).await.map(drop)
    }

    /// Removes omap keys.
    pub async fn omap_rm(&self, name: &[u8], keys: &[String]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().omap_rm(keys)).await.map(drop)
    }

    /// Every omap key, asked for 512 at a time.
    pub async fn omap_keys(&self, name: &[u8]) -> Result<Vec<String>, RadosError> {
        let keys = omap_pages("omap keys", |after| async move {
            let r = self
                .operate(name, Ops::new().omap_get_keys(&after, OMAP_BATCH))
                .await?;
            let (batch, more) = decode_omap_keys(&first_out(&r))
                .map_err(|e| RadosError::BadReply(format!("omap keys: {e}")))?;
            Ok((r.osd, batch.into_iter().map(|k| (k, ())).collect(), more))
        })
        .await?;
        Ok(keys.into_iter().map(|(k, ())| k).collect())
    }

    /// Every omap entry, asked for 512 at a time.
    pub async fn omap_vals(&self, name: &[u8]) -> Result<BTreeMap<String, Bytes>, RadosError> {
        let vals = omap_pages("omap values", |after| async move {
            let r = self
                .operate(name, Ops::new().omap_get_vals(&after, "", OMAP_BATCH))
                .await?;
            let (batch, more) = decode_omap_vals(&first_out(&r))
                .map_err(|e| RadosError::BadReply(format!("omap values: {e}")))?;
            Ok((r.osd, batch.into_iter().collect(), more))
        })
        .await?;
        Ok(vals.into_iter().collect())
    }

    /// The whole object, read in [`OP_SIZE`] pieces until one comes back
    /// short (as `rados get` reads).
    pub async fn read_all(&self, name: &[u8]) -> Result<Vec<u8>, RadosError> {
        let mut out = Vec::new();
        loop {
            let piece = self.read(name, out.len() as u64, OP_SIZE as u64).await?;
            out.extend_from_slice(&piece);
            if piece.len() < OP_SIZE {
                return Ok(out);
            }
        }
    }

    /// Replaces the object with `data`, written in [`OP_SIZE`] pieces (the
    /// first a write_full, as `rados put` writes).
    pub async fn write_all(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
        let mut at = 0usize;
        loop {
            let end = at.saturating_add(OP_SIZE).min(data.len());
            let piece = data.slice(at..end);
            match at {
                0 => self.write_full(name, piece).await?,
                _ => self.write(name, at as u64, piece).await?,
            }
            at = end;
            if at >= data.len() {
                return Ok(());
            }
        }
    }
}

/// Ceph's order of `hobject_t` (`cmp`, the bitwise sort a PG lists in):
/// the end last, then by pool, the hash bit-reversed, namespace, the
/// locator key (when either has one: its key, else its name), name, snap.
fn hobject_order(l: &HObject, r: &HObject) -> Ordering {
    let effective = |h: &HObject| match h.key.is_empty() {
        true => h.oid.clone(),
        false => h.key.clone(),
    };
    l.max
        .cmp(&r.max)
        .then(l.pool.cmp(&r.pool))
        .then(l.hash.reverse_bits().cmp(&r.hash.reverse_bits()))
        .then(l.nspace.cmp(&r.nspace))
        .then_with(|| match l.key.is_empty() && r.key.is_empty() {
            true => Ordering::Equal,
            false => effective(l).cmp(&effective(r)),
        })
        .then(l.oid.cmp(&r.oid))
        .then(l.snap.cmp(&r.snap))
}

/// A listing cursor, as an error shows it.
fn cursor_text(h: &HObject) -> String {
    match h.max {
        true => "the end".into(),
        false => format!(
            "pool {} hash {:08x} namespace {:?} name {:?}",
            h.pool,
            h.hash,
            String::from_utf8_lossy(&h.nspace),
            String::from_utf8_lossy(&h.oid)
        ),
    }
}

/// A PG listing, page by page: `page(cursor)` answers with the OSD that
/// answered, the cursor to go on from and what it found. An OSD lists
/// from the cursor on and answers where it stopped (the next PG's start
/// once a PG is done), so each cursor is past the one asked with in
/// Ceph's order; one that is not would have us ask round a loop for ever,
/// and ends the listing as the OSD's fault. (Ceph's objecter takes what
/// it is given.)
async fn list_pages<F, Fut>(mut page: F) -> Result<Vec<Listed>, RadosError>
where
    F: FnMut(HObject) -> Fut,
    Fut: std::future::Future<Output = Result<(i32, HObject, Vec<Listed>), RadosError>>,
{
    let mut cursor = HObject::default();
    let mut found = Vec::new();
    while !cursor.max {
        let (osd, next, entries) = page(cursor.clone()).await?;
        if hobject_order(&next, &cursor) != Ordering::Greater {
            return Err(RadosError::NoProgress {
                osd,
                what: "an object listing".into(),
                detail: format!(
                    "asked from {}, it answered {}, which is not past it",
                    cursor_text(&cursor),
                    cursor_text(&next)
                ),
            });
        }
        found.extend(entries);
        cursor = next;
    }
    Ok(found)
}

/// An object's omap (`what`: keys or values), page by page: `page(after)`
/// answers with the OSD that answered, the entries after key `after` in
/// key order, and whether more follow. Each page must move past `after`
/// (the OSD lists after it); one that does not while promising more would
/// have us ask the same for ever, and ends the paging as the OSD's fault.
async fn omap_pages<V, F, Fut>(what: &str, mut page: F) -> Result<Vec<(String, V)>, RadosError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<(i32, Vec<(String, V)>, bool), RadosError>>,
{
    let mut all = Vec::new();
    // The last key taken (none before the first page, asked after "").
    let mut after: Option<String> = None;
    loop {
        let (osd, batch, more) = page(after.clone().unwrap_or_default()).await?;
        // A page is in key order (a set or map): its first key is its
        // least.
        if let (Some(last), Some((first, _))) = (&after, batch.first()) {
            if first <= last {
                return Err(RadosError::NoProgress {
                    osd,
                    what: format!("the {what} of an object"),
                    detail: format!("asked for keys after {last:?}, it answered from {first:?}"),
                });
            }
        }
        let done = !more || batch.is_empty();
        if let Some((last, _)) = batch.last() {
            after = Some(last.clone());
        }
        all.extend(batch);
        if done {
            return Ok(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cursor in pool 1 at `hash`, and the end.
    fn at(hash: u32) -> HObject {
        HObject {
            pool: 1,
            hash,
            ..HObject::default()
        }
    }

    fn entry(name: &'static str) -> Listed {
        Listed {
            nspace: String::new(),
            name: Bytes::from_static(name.as_bytes()),
            locator: String::new(),
        }
    }

    /// A fake OSD (osd.3) answering pages from a script, then repeating
    /// its last answer; more than 100 asks is a loop (the test fails).
    fn script<T: Clone>(answers: Vec<T>) -> impl FnMut() -> T {
        let mut asked = 0usize;
        move || {
            asked = asked.saturating_add(1);
            assert!(asked <= 100, "asked {asked} times: a loop");
            let i = asked.min(answers.len()).saturating_sub(1);
            answers.get(i).cloned().expect("an answer")
        }
    }

    #[tokio::test]
    async fn a_listing_goes_on_while_its_cursor_moves() {
        let mut osd = script(vec![
            (at(0x8000_0000), vec![entry("a")]),
            (at(0x4000_0000), vec![entry("b")]),
            (HObject::max(), vec![entry("c")]),
        ]);
        let listed = list_pages(|_| {
            let (next, found) = osd();
            std::future::ready(Ok((3, next, found)))
        })
        .await
        .expect("listed");
        assert_eq!(listed, vec![entry("a"), entry("b"), entry("c")]);
    }

    /// An OSD that answers with the cursor it was asked from (with entries
    /// each time) would have the listing ask and grow for ever.
    #[tokio::test]
    async fn an_osd_repeating_its_cursor_ends_the_listing() {
        let mut osd = script(vec![(at(0x8000_0000), vec![entry("a")])]);
        let e = list_pages(|_| {
            let (next, found) = osd();
            std::future::ready(Ok((3, next, found)))
        })
        .await
        .expect_err("no progress");
        let RadosError::NoProgress { osd, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*osd, 3);
        let said = e.to_string();
        assert!(said.contains("osd.3 made no progress"), "{said}");
        assert!(said.contains("the OSD is at fault"), "{said}");
        // Two cursors in turn, and one going back: as bad.
        for answers in [
            vec![at(0x8000_0000), at(0x4000_0000), at(0x8000_0000)],
            vec![at(0x4000_0000), at(0x8000_0000)],
        ] {
            let mut osd = script(answers);
            let r = list_pages(|_| std::future::ready(Ok((3, osd(), vec![entry("x")])))).await;
            assert!(
                matches!(r, Err(RadosError::NoProgress { osd: 3, .. })),
                "{r:?}"
            );
        }
    }

    #[test]
    fn cursors_order_as_ceph_orders_hobjects() {
        // The hash counts bit-reversed: 0x80000000 comes before 0x40000000.
        assert_eq!(
            hobject_order(&at(0x8000_0000), &at(0x4000_0000)),
            Ordering::Less
        );
        assert_eq!(hobject_order(&HObject::default(), &at(0)), Ordering::Less);
        assert_eq!(
            hobject_order(&at(u32::MAX), &HObject::max()),
            Ordering::Less
        );
        let named = |key: &'static str, oid: &'static str| HObject {
            key: Bytes::from_static(key.as_bytes()),
            oid: Bytes::from_static(oid.as_bytes()),
            ..at(7)
        };
        // The locator key, when there is one, before the name.
        assert_eq!(
            hobject_order(&named("b", "a"), &named("", "c")),
            Ordering::Less
        );
        assert_eq!(
            hobject_order(&named("", "a"), &named("", "b")),
            Ordering::Less
        );
        assert_eq!(
            hobject_order(&named("", "a"), &named("", "a")),
            Ordering::Equal
        );
    }

    /// A map claiming the last epoch there is: following stops, rather
    /// than finding it again as "the next" for ever.
    #[tokio::test]
    async fn following_maps_ends_at_the_last_epoch() {
        let last = Arc::new(OsdMap {
            epoch: u32::MAX,
            ..OsdMap::default()
        });
        let mut asked = 0usize;
        follow(
            || last.epoch,
            |_| {
                asked = asked.saturating_add(1);
                assert!(asked <= 100, "asked {asked} times: a loop");
                std::future::ready(Ok(last.clone()))
            },
            |_| std::future::ready(()),
        )
        .await;
        assert_eq!(asked, 0);
    }

    type Page = (Vec<(String, ())>, bool);

    fn keys(names: &[&str], more: bool) -> Page {
        (names.iter().map(|k| (k.to_string(), ())).collect(), more)
    }

    #[tokio::test]
    async fn omap_paging_goes_on_while_its_keys_move() {
        let mut osd = script(vec![keys(&["a", "b"], true), keys(&["c"], false)]);
        let mut asked = Vec::new();
        let all = omap_pages("omap keys", |after| {
            asked.push(after);
            let (batch, more) = osd();
            std::future::ready(Ok((3, batch, more)))
        })
        .await
        .expect("paged");
        assert_eq!(asked, ["", "b"]);
        let all: Vec<String> = all.into_iter().map(|(k, ())| k).collect();
        assert_eq!(all, ["a", "b", "c"]);
    }

    /// An OSD that repeats its last key, or goes back, while saying more
    /// follow would have us ask the same for ever.
    #[tokio::test]
    async fn an_osd_repeating_its_omap_keys_ends_the_paging() {
        for answers in [
            vec![keys(&["a", "b"], true)],
            vec![keys(&["a", "b"], true), keys(&["b", "c"], true)],
            vec![keys(&["m"], true), keys(&["a"], true)],
        ] {
            let mut osd = script(answers);
            let r = omap_pages("omap keys", |_| {
                let (batch, more) = osd();
                std::future::ready(Ok((3, batch, more)))
            })
            .await;
            let Err(e) = r else { panic!("{r:?}") };
            assert!(matches!(e, RadosError::NoProgress { osd: 3, .. }), "{e:?}");
            assert!(e.to_string().contains("the omap keys of an object"), "{e}");
        }
    }
}
