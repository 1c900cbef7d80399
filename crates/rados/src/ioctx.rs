//! [`IoCtx`]: object I/O in one pool, namespace, locator key, read
//! snapshot and write snap context, each request a future that cancels
//! its op when dropped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_encoding::UTime;
use msgr_messages::osd_types::NOSNAP;
use msgr_messages::HObject;
use tokio::sync::oneshot;

use crate::error::RadosError;
use crate::objecter::{Object, Request, ENOENT, ETIMEDOUT};
use crate::paging::{list_pages, omap_pages};
use crate::request::{
    decode_nls, decode_omap_keys, decode_omap_vals, decode_stat, decode_xattrs, Listed, Ops, Reply,
    SnapContext, Stat,
};
use crate::shared::{lock, Shared};

/// Reads and writes of whole objects go in pieces of this size, as the
/// `rados` tool's (`--op-size`, 4 MiB).
pub const OP_SIZE: usize = 4 << 20;
/// Omap entries asked for at a time (librados's default batch).
pub const OMAP_BATCH: u64 = 512;
/// Objects asked for per PGNLS.
const LIST_COUNT: u64 = 1024;
/// The namespace that lists every namespace (`LIBRADOS_ALL_NSPACES`).
pub const ALL_NAMESPACES: &str = "\u{1}";

/// Object I/O in one pool and namespace, from [`Rados::ioctx`](crate::Rados::ioctx).
/// Each method is a future: dropping it cancels its request (unsent, or
/// its reply ignored). Clones share the client and start with the same
/// namespace, locator key, snapshots and timeout.
///
/// ```no_run
/// use std::time::Duration;
/// use msgr_rados::Bytes;
/// # async fn f(rados: msgr_rados::Rados) -> Result<(), msgr_rados::RadosError> {
/// let mut io = rados.ioctx("rbd")?;
/// io.set_namespace("tenant-a");
/// io.set_timeout(Some(Duration::from_secs(10)));
/// io.write_full(b"greeting", Bytes::from_static(b"hello")).await?;
/// io.append(b"greeting", Bytes::from_static(b", world")).await?;
/// assert_eq!(&io.read(b"greeting", 0, 0).await?[..], b"hello, world");
/// io.setxattr(b"greeting", "lang", b"en").await?;
/// io.remove(b"greeting").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct IoCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pool: i64,
    pub(crate) nspace: String,
    /// The locator key objects are placed by (empty: their names).
    pub(crate) key: String,
    pub(crate) timeout: Option<Duration>,
    /// The snapshot reads read ([`NOSNAP`]: the head).
    pub(crate) read_snap: u64,
    /// The snap context writes carry.
    pub(crate) snapc: SnapContext,
    /// The object version the last reply said (`rados_get_last_version`).
    pub(crate) last_version: Arc<AtomicU64>,
    /// `CEPH_OSD_FLAG_*` every request of this context adds (librados's
    /// `extra_op_flags`: `FULL_TRY`).
    pub(crate) extra_flags: u32,
}

impl IoCtx {
    pub(crate) fn new(shared: Arc<Shared>, pool: i64) -> IoCtx {
        IoCtx {
            shared,
            pool,
            nspace: String::new(),
            key: String::new(),
            timeout: None,
            read_snap: NOSNAP,
            snapc: SnapContext::default(),
            last_version: Arc::default(),
            extra_flags: 0,
        }
    }
}

/// A request in flight for a future: dropping it before its reply came
/// cancels the op in the objecter (not sent if it was not yet; a late
/// reply ignored).
struct InFlight<'a> {
    shared: &'a Arc<Shared>,
    tid: u64,
    answered: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let mut o = lock(&self.shared.objecter);
        o.cancel(self.tid);
        lock(&self.shared.waiters).remove(&self.tid);
        // The budget it freed may let a waiting request go.
        let waiting = o.placements_waiting();
        drop(o);
        if waiting {
            self.shared.place_soon();
        }
    }
}

/// What an error about a request names: its object, or the listing of a
/// PG; made only when an error needs it (not per request).
fn what_of(object: &Object) -> impl Fn() -> String {
    let name = object.pg.is_none().then(|| object.name.clone());
    move || match &name {
        None => "listing".to_string(),
        Some(n) => String::from_utf8_lossy(n).into_owned(),
    }
}

/// The first op's output of a reply.
pub(crate) fn first_out(r: &Reply) -> Bytes {
    r.ops.first().map(|o| o.outdata.clone()).unwrap_or_default()
}

impl IoCtx {
    /// The pool this context works in.
    pub fn pool(&self) -> i64 {
        self.pool
    }

    /// Whether appends to this pool must start at a multiple of
    /// [`IoCtx::required_alignment`] (an erasure-coded pool without
    /// overwrites, which also refuses partial overwrites and omap):
    /// `rados_ioctx_pool_requires_alignment2`.
    pub fn requires_alignment(&self) -> Result<bool, RadosError> {
        self.with_pool(|p| p.requires_aligned_append())
    }

    /// The alignment appends to this pool keep, in bytes (the EC stripe
    /// width; 0 for a replicated pool): `rados_ioctx_pool_required_alignment2`.
    pub fn required_alignment(&self) -> Result<u64, RadosError> {
        self.with_pool(|p| p.required_alignment())
    }

    /// `f` of the pool's entry in the current map.
    pub(crate) fn with_pool<R>(
        &self,
        f: impl FnOnce(&msgr_osdmap::Pool) -> R,
    ) -> Result<R, RadosError> {
        let o = lock(&self.shared.objecter);
        o.map()
            .pools
            .get(&self.pool)
            .map(f)
            .ok_or_else(|| RadosError::NoPool(self.pool.to_string()))
    }

    /// Objects in namespace `nspace` from now on ([`ALL_NAMESPACES`] lists
    /// every namespace).
    pub fn set_namespace(&mut self, nspace: &str) {
        self.nspace = nspace.to_string();
    }

    /// Objects placed by locator key `key` instead of their names from now
    /// on (`rados_ioctx_locator_set_key`; empty: by name).
    pub fn set_locator_key(&mut self, key: &str) {
        self.key = key.to_string();
    }

    /// Reads read snapshot `snap` from now on ([`NOSNAP`]: the head;
    /// `rados_ioctx_snap_set_read`).
    pub fn set_read_snap(&mut self, snap: u64) {
        self.read_snap = snap;
    }

    /// Writes carry `snapc` from now on (self-managed snapshots:
    /// `rados_ioctx_selfmanaged_snap_set_write_ctx`).
    pub fn set_write_snap_context(&mut self, snapc: SnapContext) {
        self.snapc = snapc;
    }

    /// Every request of this context carries `flags` (`CEPH_OSD_FLAG_*`)
    /// from now on, as librados's `extra_op_flags`
    /// (`rados_set_pool_full_try` sets [`crate::request::flag::FULL_TRY`]:
    /// writes go to the OSDs even while the pool or cluster is full).
    pub fn set_extra_flags(&mut self, flags: u32) {
        self.extra_flags = flags;
    }

    /// The flags [`IoCtx::set_extra_flags`] set.
    pub fn extra_flags(&self) -> u32 {
        self.extra_flags
    }

    /// Requests end with ETIMEDOUT after this long (`rados_osd_op_timeout`).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// Runs `ops` on object `name` atomically (one MOSDOp): the reply, or
    /// the errno of the first op that failed as an error naming the
    /// object.
    pub async fn operate(&self, name: &[u8], ops: Ops) -> Result<Reply, RadosError> {
        self.submit(Bytes::copy_from_slice(name), None, ops).await
    }

    pub(crate) async fn submit(
        &self,
        name: Bytes,
        pg: Option<u32>,
        ops: Ops,
    ) -> Result<Reply, RadosError> {
        let object = Object {
            pool: self.pool,
            name,
            nspace: self.nspace.clone(),
            key: self.key.clone(),
            pg,
        };
        let req = Request {
            mtime: UTime::from_duration(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default(),
            ),
            timeout: self.timeout,
            snapid: self.read_snap,
            snapc: self.snapc.clone(),
            flags: self.extra_flags,
            ..Request::new(object, ops)
        };
        self.run(req).await
    }

    /// Sends `req` and waits for its reply; dropping the future cancels it.
    pub(crate) async fn run(&self, req: Request) -> Result<Reply, RadosError> {
        let what = what_of(&req.object);
        match self.run_reply(req).await {
            Ok(r) if r.result < 0 => Err(RadosError::Os {
                errno: r.result,
                what: what(),
            }),
            other => other,
        }
    }

    /// [`IoCtx::run`], returning the OSD's reply even when its result is
    /// an error (each op's rval); records the object's version.
    pub(crate) async fn run_reply(&self, req: Request) -> Result<Reply, RadosError> {
        let what = what_of(&req.object);
        // A ZERO of no bytes aborts a Ceph 16 OSD (`ceph_assert(
        // op.extent.length)` in do_osd_ops): never sent.
        if let Some(i) = req
            .ops
            .0
            .iter()
            .position(|o| o.op.op == crate::request::code::ZERO && o.op.extent_range().1 == 0)
        {
            return Err(RadosError::Os {
                errno: -22,
                what: format!(
                    "{}: op {i} (zero) of 0 bytes, which Ceph 16 OSDs abort on: leave it out",
                    what()
                ),
            });
        }
        // Only a request with a deadline has the timer look again (a wake
        // per request cost each op a task switch).
        let deadline = req.timeout.is_some();
        let (tx, rx) = oneshot::channel();
        let mut pending = {
            let mut o = lock(&self.shared.objecter);
            let tid = o.submit(req, Instant::now());
            lock(&self.shared.waiters).insert(tid, tx);
            InFlight {
                shared: &self.shared,
                tid,
                answered: false,
            }
        };
        if deadline {
            self.shared.timer.notify_one();
        }
        self.shared.place();
        let answer = rx.await;
        pending.answered = true;
        match answer {
            Ok(Ok(r)) => {
                self.last_version.store(r.version, Ordering::Relaxed);
                Ok(r)
            }
            Ok(Err(errno)) if errno == ENOENT => Err(RadosError::NoPool(self.pool.to_string())),
            Ok(Err(errno)) => Err(RadosError::Os {
                errno,
                what: match errno {
                    ETIMEDOUT => format!("{} (no reply in time)", what()),
                    _ => what(),
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
    pub(crate) async fn list_page(
        &self,
        cursor: HObject,
    ) -> Result<(i32, HObject, Vec<Listed>), RadosError> {
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

    /// Replaces the object's data with `data`, creating it if need be
    /// (WRITEFULL): one op, atomic.
    pub async fn write_full(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().write_full(data))
            .await
            .map(drop)
    }

    /// Writes `data` at `offset`, creating the object if need be and
    /// growing it past its end (WRITE).
    pub async fn write(&self, name: &[u8], offset: u64, data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().write(offset, data))
            .await
            .map(drop)
    }

    /// Appends `data` to the object, creating it if need be (APPEND).
    pub async fn append(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
        self.operate(name, Ops::new().append(data)).await.map(drop)
    }

    /// Reads `length` bytes from `offset` (READ); a `length` of 0 reads to
    /// the end of the object. Fewer bytes come back past the end, none
    /// from an empty object; a missing object is ENOENT.
    pub async fn read(&self, name: &[u8], offset: u64, length: u64) -> Result<Bytes, RadosError> {
        let r = self.operate(name, Ops::new().read(offset, length)).await?;
        Ok(first_out(&r))
    }

    /// The object's size and modification time (STAT); ENOENT if it does
    /// not exist.
    pub async fn stat(&self, name: &[u8]) -> Result<Stat, RadosError> {
        let r = self.operate(name, Ops::new().stat()).await?;
        decode_stat(&first_out(&r)).map_err(|e| RadosError::BadReply(format!("stat: {e}")))
    }

    /// Deletes the object (DELETE); ENOENT if it does not exist.
    pub async fn remove(&self, name: &[u8]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().remove()).await.map(drop)
    }

    /// Truncates (or extends with zeros) the object to `size` bytes
    /// (TRUNCATE).
    pub async fn truncate(&self, name: &[u8], size: u64) -> Result<(), RadosError> {
        self.operate(name, Ops::new().truncate(size))
            .await
            .map(drop)
    }

    /// Zeroes `length` bytes from `offset`, not growing the object (ZERO);
    /// a zero reaching the end truncates the object there, as the OSD
    /// does. A `length` of 0 is EINVAL, unsent (it aborts Ceph 16 OSDs).
    pub async fn zero(&self, name: &[u8], offset: u64, length: u64) -> Result<(), RadosError> {
        self.operate(name, Ops::new().zero(offset, length))
            .await
            .map(drop)
    }

    /// Creates the object empty; with `exclusive`, EEXIST if it exists, else
    /// nothing happens to an existing one (CREATE).
    pub async fn create(&self, name: &[u8], exclusive: bool) -> Result<(), RadosError> {
        self.operate(name, Ops::new().create(exclusive))
            .await
            .map(drop)
    }

    /// Sets xattr `key` to `value`, creating the object if need be
    /// (SETXATTR).
    pub async fn setxattr(&self, name: &[u8], key: &str, value: &[u8]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().setxattr(key, value))
            .await
            .map(drop)
    }

    /// The value of xattr `key` (GETXATTR); ENODATA if it has none.
    pub async fn getxattr(&self, name: &[u8], key: &str) -> Result<Bytes, RadosError> {
        let r = self.operate(name, Ops::new().getxattr(key)).await?;
        Ok(first_out(&r))
    }

    /// All the object's xattrs, by name (GETXATTRS).
    pub async fn getxattrs(&self, name: &[u8]) -> Result<BTreeMap<String, Bytes>, RadosError> {
        let r = self.operate(name, Ops::new().getxattrs()).await?;
        decode_xattrs(&first_out(&r)).map_err(|e| RadosError::BadReply(format!("getxattrs: {e}")))
    }

    /// Removes xattr `key` (RMXATTR).
    pub async fn rmxattr(&self, name: &[u8], key: &str) -> Result<(), RadosError> {
        self.operate(name, Ops::new().rmxattr(key)).await.map(drop)
    }

    /// Sets the omap entries `kv`, creating the object if need be
    /// (OMAPSETVALS).
    pub async fn omap_set(
        &self,
        name: &[u8],
        kv: &BTreeMap<String, Bytes>,
    ) -> Result<(), RadosError> {
        self.operate(name, Ops::new().omap_set(kv)).await.map(drop)
    }

    /// Removes omap `keys`; missing ones are no error (OMAPRMKEYS).
    pub async fn omap_rm(&self, name: &[u8], keys: &[String]) -> Result<(), RadosError> {
        self.operate(name, Ops::new().omap_rm(keys)).await.map(drop)
    }

    /// Every omap key, in order, asked for [`OMAP_BATCH`] at a time
    /// (OMAPGETKEYS).
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

    /// Every omap entry, asked for [`OMAP_BATCH`] at a time (OMAPGETVALS).
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
    /// short, as `rados get` reads. Not atomic: a writer between two pieces
    /// is seen half; one [`read`](IoCtx::read) of length 0 reads the whole
    /// object at once.
    pub async fn read_in_pieces(&self, name: &[u8]) -> Result<Vec<u8>, RadosError> {
        let mut out = Vec::new();
        loop {
            let piece = self.read(name, out.len() as u64, OP_SIZE as u64).await?;
            out.extend_from_slice(&piece);
            if piece.len() < OP_SIZE {
                return Ok(out);
            }
        }
    }

    /// Replaces the object with `data`, written in [`OP_SIZE`] pieces, the
    /// first a WRITEFULL, as `rados put` writes (an OSD refuses one message
    /// larger than `osd_max_write_size`, 90 MiB by default). Not atomic: a
    /// reader may see the first pieces only, and a failure leaves them
    /// written; [`write_full`](IoCtx::write_full) is one op.
    pub async fn write_in_pieces(&self, name: &[u8], data: Bytes) -> Result<(), RadosError> {
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
