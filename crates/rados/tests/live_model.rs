//! A model-based randomized workload in the spirit of Ceph's
//! ceph_test_rados (RadosModel): random writes, appends, truncates, zeros,
//! removes, creates, xattrs and omap on a set of objects, self-managed
//! snapshots taken and removed, objects rolled back to them and read at
//! them, each checked against an in-memory model of what the object must
//! hold (now and at each snapshot); every read (data, size, xattrs, omap)
//! must match the model, and at the end every acknowledged write must be
//! there. It runs in a pool of its own (self-managed snapshots), deleted at
//! the end.
//!
//! Snapshots: a write carries the snap context of the moment it is sent,
//! so an object's contents at snapshot S are what it held just before its
//! first operation sent with S in the context (the OSD clones the object
//! then); until such an operation, the object as it is now. Snapshots are
//! created and removed under a write lock, and rollbacks and reads at a
//! snapshot hold the read lock, so no snapshot disappears under them. Seeded and reproducible: the seed is
//! printed, and `MSGR_TEST_MODEL_SEED` replays a run. scripts/interop/
//! rados.sh runs it while it stops and restarts an OSD (see
//! tests/support/live.rs for how live tests run).
//!
//! `MSGR_TEST_MODEL_OPS`: operations in all (default 2000), spread over
//! `MSGR_TEST_MODEL_OBJECTS` objects (default 16), each object's
//! operations in order, the objects' concurrently. `MSGR_TEST_MODEL_SNAPS`:
//! how many snapshots (default one per 250 operations, 4 to 40; 0: none,
//! and no rollbacks or reads at snapshots).

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use msgr_rados::{IoCtx, Rados, RadosError, SnapContext};
use support::live::{connect, scratch_pool, unique};
use tokio::sync::RwLock;

const ENOENT: i32 = -2;
/// Self-managed snapshots kept at most: taking one more removes the oldest.
const SNAPS_KEPT: usize = 6;
const EEXIST: i32 = -17;

/// splitmix64: a small, well-mixed, reproducible generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Up to `max` bytes (`min` at least).
    fn data(&mut self, min: u64, max: u64) -> Bytes {
        let len = (min + self.below(max - min + 1)) as usize;
        self.bytes(len)
    }

    fn bytes(&mut self, len: usize) -> Bytes {
        let seed = self.next();
        Bytes::from(
            (0..len)
                .map(|i| (seed.rotate_left((i % 64) as u32) as u8) ^ (i as u8))
                .collect::<Vec<u8>>(),
        )
    }
}

/// What an object must hold: `None` if it does not exist.
#[derive(Debug, Clone, Default, PartialEq)]
struct Contents {
    data: Vec<u8>,
    xattrs: BTreeMap<String, Bytes>,
    omap: BTreeMap<String, Bytes>,
}

/// One operation and what the model says it answers.
#[derive(Debug)]
enum Step {
    Write(u64, Bytes),
    WriteFull(Bytes),
    Append(Bytes),
    Truncate(u64),
    Zero(u64, u64),
    Remove,
    Create(bool),
    SetXattr(String, Bytes),
    RmXattr(String),
    OmapSet(String, Bytes),
    OmapRm(String),
    Check,
    /// Rolls the object back to the snapshot that many places from the
    /// newest (modulo the snapshots there are).
    Rollback(usize),
    /// Reads the object at a snapshot, chosen as for `Rollback`.
    CheckSnap(usize),
}

/// The pool's snapshots: the snap context writes carry.
#[derive(Debug, Default)]
struct Snaps {
    snapc: SnapContext,
}

/// One object's model: as it is now, and as it was at each snapshot an
/// operation of it has been sent past.
#[derive(Debug, Default)]
struct Object {
    now: Option<Contents>,
    at: BTreeMap<u64, Option<Contents>>,
    /// The snap context's seq of the last operation sent.
    seen: u64,
}

impl Object {
    /// Before an operation sent with `snapc`: the contents at each
    /// snapshot it names for the first time are the contents now.
    fn sending(&mut self, snapc: &SnapContext) {
        for &id in snapc.snaps.iter().filter(|&&id| id > self.seen) {
            self.at.insert(id, self.now.clone());
        }
        self.seen = self.seen.max(snapc.seq);
    }

    /// What the object held at snapshot `id`.
    fn at(&self, id: u64) -> &Option<Contents> {
        self.at.get(&id).unwrap_or(&self.now)
    }
}

fn choose(rng: &mut Rng, model: &Option<Contents>) -> Step {
    const MAX: u64 = 256 << 10;
    let size = model.as_ref().map_or(0, |c| c.data.len() as u64);
    loop {
        return match rng.below(12) {
            0 | 1 => {
                let len = 1 + rng.below(64 << 10) as usize;
                Step::Write(rng.below(MAX), rng.bytes(len))
            }
            // Not an empty one on an absent object: when the head is a
            // whiteout (removed while clones keep it), Ceph 20's OSD answers
            // it but does not record it, so the next remove answers ENOENT,
            // for Ceph's rados tool too (`rados put` of an empty file after
            // `rm` of a snapshotted object; its `stat` then fails as well):
            // WRITEFULL of 0 bytes clears the whiteout in memory only, its
            // transaction is empty, and PrimaryLogPG logs it as a no-op. An
            // empty write_full on an object that exists stays.
            2 => Step::WriteFull(rng.data(u64::from(model.is_none()), 32 << 10)),
            3 => Step::Append(rng.data(1, 16 << 10)),
            4 if model.is_some() => Step::Truncate(rng.below(size.saturating_mul(2).max(1))),
            5 if size > 0 => {
                let off = rng.below(size);
                Step::Zero(off, 1 + rng.below(size - off))
            }
            6 => Step::Remove,
            7 => Step::Create(rng.below(2) == 0),
            8 => Step::SetXattr(format!("x{}", rng.below(6)), rng.data(0, 300)),
            9 => match model.as_ref().and_then(|c| c.xattrs.keys().next().cloned()) {
                Some(k) => Step::RmXattr(k),
                None => continue,
            },
            10 => match rng.below(3) {
                0 if model.is_some() => Step::OmapRm(format!("k{}", rng.below(10))),
                _ => Step::OmapSet(format!("k{}", rng.below(10)), rng.data(0, 200)),
            },
            11 => match rng.below(16) {
                1 => Step::Rollback(rng.below(SNAPS_KEPT as u64) as usize),
                2 | 3 => Step::CheckSnap(rng.below(SNAPS_KEPT as u64) as usize),
                _ => Step::Check,
            },
            _ => continue,
        };
    }
}

/// A step as a failure lists it: data by its length.
fn describe(step: &Step) -> String {
    match step {
        Step::Write(off, d) => format!("write {} bytes at {off}", d.len()),
        Step::WriteFull(d) => format!("write_full {} bytes", d.len()),
        Step::Append(d) => format!("append {} bytes", d.len()),
        Step::SetXattr(k, v) => format!("setxattr {k} ({} bytes)", v.len()),
        Step::OmapSet(k, v) => format!("omap_set {k} ({} bytes)", v.len()),
        other => format!("{other:?}"),
    }
}

/// The model after `step`, and the errno the OSD must answer (0: none).
fn apply(model: &mut Option<Contents>, step: &Step) -> i32 {
    let exists = model.is_some();
    let c = model.get_or_insert_with(Contents::default);
    let grow = |d: &mut Vec<u8>, to: usize| {
        if d.len() < to {
            d.resize(to, 0);
        }
    };
    match step {
        Step::Write(off, data) => {
            let (off, end) = (*off as usize, *off as usize + data.len());
            grow(&mut c.data, end);
            c.data[off..end].copy_from_slice(data);
        }
        Step::WriteFull(data) => c.data = data.to_vec(),
        Step::Append(data) => c.data.extend_from_slice(data),
        Step::Truncate(size) => c.data.resize(*size as usize, 0),
        // A zero reaching the end truncates there (PrimaryLogPG's ZERO:
        // offset + length >= size truncates to offset).
        Step::Zero(off, len) if (*off + *len) as usize >= c.data.len() => {
            c.data.truncate(*off as usize)
        }
        Step::Zero(off, len) => c.data[*off as usize..(*off + *len) as usize].fill(0),
        Step::Remove => {
            *model = None;
            return if exists { 0 } else { ENOENT };
        }
        Step::Create(exclusive) => {
            if exists && *exclusive {
                return EEXIST;
            }
        }
        Step::SetXattr(k, v) => {
            c.xattrs.insert(k.clone(), v.clone());
        }
        Step::RmXattr(k) => {
            c.xattrs.remove(k);
        }
        Step::OmapSet(k, v) => {
            c.omap.insert(k.clone(), v.clone());
        }
        Step::OmapRm(k) => {
            c.omap.remove(k);
        }
        Step::Check | Step::Rollback(_) | Step::CheckSnap(_) => {
            if !exists {
                *model = None;
            }
        }
    }
    0
}

async fn run(io: &IoCtx, name: &[u8], step: &Step) -> Result<(), RadosError> {
    match step {
        Step::Write(off, data) => io.write(name, *off, data.clone()).await,
        Step::WriteFull(data) => io.write_full(name, data.clone()).await,
        Step::Append(data) => io.append(name, data.clone()).await,
        Step::Truncate(size) => io.truncate(name, *size).await,
        Step::Zero(off, len) => io.zero(name, *off, *len).await,
        Step::Remove => io.remove(name).await,
        Step::Create(exclusive) => io.create(name, *exclusive).await,
        Step::SetXattr(k, v) => io.setxattr(name, k, v).await,
        Step::RmXattr(k) => io.rmxattr(name, k).await,
        Step::OmapSet(k, v) => {
            io.omap_set(name, &BTreeMap::from([(k.clone(), v.clone())]))
                .await
        }
        Step::OmapRm(k) => io.omap_rm(name, std::slice::from_ref(k)).await,
        Step::Check | Step::Rollback(_) | Step::CheckSnap(_) => Ok(()),
    }
}

/// Reads the object whole and compares it with the model.
async fn check(io: &IoCtx, name: &[u8], model: &Option<Contents>) -> Result<(), String> {
    let Some(want) = model else {
        return match io.stat(name).await {
            Err(e) if e.errno() == Some(ENOENT) => Ok(()),
            other => Err(format!("a removed object: stat answered {other:?}")),
        };
    };
    let stat = io.stat(name).await.map_err(|e| format!("stat: {e}"))?;
    if stat.size != want.data.len() as u64 {
        return Err(format!(
            "size {} where the model has {}",
            stat.size,
            want.data.len()
        ));
    }
    let data = io
        .read(name, 0, 0)
        .await
        .map_err(|e| format!("read: {e}"))?;
    if data[..] != want.data[..] {
        let at = data.iter().zip(&want.data).position(|(a, b)| a != b);
        return Err(format!(
            "data differs (read {} bytes, first difference at {at:?})",
            data.len()
        ));
    }
    let xattrs = io
        .getxattrs(name)
        .await
        .map_err(|e| format!("getxattrs: {e}"))?;
    if xattrs != want.xattrs {
        return Err(format!(
            "xattrs {:?} where the model has {:?}",
            xattrs.keys(),
            want.xattrs.keys()
        ));
    }
    let omap = io.omap_vals(name).await.map_err(|e| format!("omap: {e}"))?;
    if omap != want.omap {
        return Err(format!(
            "omap {:?} where the model has {:?}",
            omap.keys(),
            want.omap.keys()
        ));
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The snapshot `back` places from the newest (modulo how many there are).
fn pick(snapc: &SnapContext, back: usize) -> Option<u64> {
    let n = snapc.snaps.len();
    (n > 0).then(|| snapc.snaps[back % n])
}

/// How far the workload has come, and the gate that makes it wait for
/// each snapshot: the operations are cut into `count + 1` shares, and share
/// k + 1 starts once snapshot k is taken (a monitor round trip takes about
/// a second: ungated, the workload would be done before it).
struct Progress {
    total: u64,
    count: u64,
    /// Operations started.
    done: AtomicU64,
    /// Snapshots taken (`u64::MAX` once the snapshots stopped).
    taken: AtomicU64,
    /// A task failed: the others stop, and what failed stays as it is
    /// (the pool and its snapshots are kept) to be looked at.
    stopped: std::sync::atomic::AtomicBool,
}

impl Progress {
    /// Waits until the next operation may start, and counts it; false
    /// once the run is stopped.
    async fn next(&self) -> bool {
        loop {
            if self.stopped.load(Ordering::Acquire) {
                return false;
            }
            let taken = self.taken.load(Ordering::Acquire);
            let gate = match taken {
                t if t >= self.count => u64::MAX,
                t => self.total * (t + 1) / (self.count + 1),
            };
            if self.done.load(Ordering::Relaxed) < gate {
                self.done.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

/// Takes `progress.count` snapshots, one after each share of the
/// operations, removing the oldest beyond [`SNAPS_KEPT`]. The monitors
/// allocate ids in order and this task alone takes them, so the snap
/// context's ids stay newest first.
async fn take_snapshots(
    rados: &Rados,
    io: &IoCtx,
    snaps: &RwLock<Snaps>,
    progress: &Progress,
) -> Result<u64, String> {
    let r = snapshot_shares(rados, io, snaps, progress).await;
    progress.taken.store(u64::MAX, Ordering::Release);
    r
}

async fn snapshot_shares(
    rados: &Rados,
    io: &IoCtx,
    snaps: &RwLock<Snaps>,
    progress: &Progress,
) -> Result<u64, String> {
    let (total, count) = (progress.total, progress.count);
    for k in 1..=count {
        while progress.done.load(Ordering::Relaxed) < total * k / (count + 1) {
            if progress.stopped.load(Ordering::Acquire) {
                return Ok(k - 1);
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let id = rados
            .selfmanaged_snap_create(io)
            .await
            .map_err(|e| format!("snapshot {k}: {e}"))?;
        let old = {
            let mut s = snaps.write().await;
            s.snapc.seq = s.snapc.seq.max(id);
            s.snapc.snaps.insert(0, id);
            // Out of the context before it goes: nobody picks it after.
            (s.snapc.snaps.len() > SNAPS_KEPT).then(|| s.snapc.snaps.pop())
        };
        progress.taken.store(k, Ordering::Release);
        if let Some(Some(old)) = old {
            rados
                .selfmanaged_snap_remove(io, old)
                .await
                .map_err(|e| format!("removing snapshot {old}: {e}"))?;
        }
    }
    Ok(count)
}

/// One object's operations: each answered as the model says, the object
/// read now and then, whole and at snapshots.
async fn object_ops(
    io: IoCtx,
    name: String,
    ops: u64,
    mut rng: Rng,
    snaps: Arc<RwLock<Snaps>>,
    progress: Arc<Progress>,
) -> Result<u64, String> {
    let mut obj = Object::default();
    let mut history = Vec::new();
    let last = |h: &Vec<String>| h[h.len().saturating_sub(8)..].to_vec();
    for i in 0..ops {
        if !progress.next().await {
            return Ok(i);
        }
        let step = choose(&mut rng, &obj.now);
        history.push(describe(&step));
        match step {
            Step::Rollback(back) | Step::CheckSnap(back) => {
                // Held until the answer: the snapshot stays.
                let s = snaps.read().await;
                let Some(id) = pick(&s.snapc, back) else {
                    continue;
                };
                *history.last_mut().expect("pushed") += &format!(" to snap {id}");
                let then = obj.at(id).clone();
                if matches!(step, Step::CheckSnap(_)) {
                    let mut at = io.clone();
                    at.set_read_snap(id);
                    if let Err(e) = check(&at, name.as_bytes(), &then).await {
                        // Whether it lasts: read again a little later.
                        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                        let again = check(&at, name.as_bytes(), &then).await;
                        return Err(format!(
                            "{name} at snap {id} after op {i}: {e} (3 s later: {again:?}); \
                             the object's last ops: {:?}",
                            last(&history)
                        ));
                    }
                    continue;
                }
                obj.sending(&s.snapc);
                let mut w = io.clone();
                w.set_write_snap_context(s.snapc.clone());
                let got = w.selfmanaged_snap_rollback(name.as_bytes(), id).await;
                // Rolling an absent object back to a snapshot it was absent
                // at has nothing to delete: ENOENT or nothing, either will do.
                let nothing = obj.now.is_none() && then.is_none();
                match got {
                    Ok(()) => {}
                    Err(e) if nothing && e.errno() == Some(ENOENT) => {}
                    Err(e) => {
                        return Err(format!(
                            "{name} op {i} rollback to snap {id}: {e}; the object's last ops: {:?}",
                            last(&history)
                        ))
                    }
                }
                obj.now = then;
            }
            step => {
                let snapc = snaps.read().await.snapc.clone();
                obj.sending(&snapc);
                let want = apply(&mut obj.now, &step);
                let mut w = io.clone();
                w.set_write_snap_context(snapc);
                let got = run(&w, name.as_bytes(), &step).await;
                let errno = got.as_ref().err().and_then(RadosError::errno).unwrap_or(0);
                if got.is_err() && errno == 0 || errno != want {
                    return Err(format!(
                        "{name} op {i} {}: answered {got:?}, the model expects errno {want}; \
                         the object's last ops: {:?}",
                        describe(&step),
                        last(&history)
                    ));
                }
                if matches!(step, Step::Check) || rng.below(8) == 0 {
                    check(&io, name.as_bytes(), &obj.now).await.map_err(|e| {
                        format!(
                            "{name} after op {i}: {e}; the object's last ops: {:?}",
                            last(&history)
                        )
                    })?;
                }
            }
        }
    }
    check(&io, name.as_bytes(), &obj.now)
        .await
        .map_err(|e| format!("{name} at the end: {e}"))?;
    let s = snaps.read().await;
    for &id in &s.snapc.snaps {
        let mut at = io.clone();
        at.set_read_snap(id);
        check(&at, name.as_bytes(), obj.at(id))
            .await
            .map_err(|e| format!("{name} at snap {id} at the end: {e}"))?;
    }
    Ok(ops)
}

/// Each object's operations in order against the model, the objects
/// concurrently, snapshots taken and removed under them; every answer and
/// every read as the model says, and every object as the model says at the
/// end, now and at each snapshot kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn random_operations_match_the_model() {
    let seed = env_number("MSGR_TEST_MODEL_SEED", 0x5EED);
    let total = env_number("MSGR_TEST_MODEL_OPS", 2000);
    let objects = env_number("MSGR_TEST_MODEL_OBJECTS", 16).max(1);
    let snapshots = env_number("MSGR_TEST_MODEL_SNAPS", (total / 250).clamp(4, 40));
    println!(
        "model workload: seed {seed}, {total} ops on {objects} objects, {snapshots} snapshots"
    );
    let rados = Arc::new(connect().await);
    let (pool, io) = scratch_pool(&rados, "model").await;
    let prefix = unique("model");
    let snaps = Arc::new(RwLock::new(Snaps::default()));
    let progress = Arc::new(Progress {
        total,
        count: snapshots,
        done: AtomicU64::new(0),
        taken: AtomicU64::new(0),
        stopped: Default::default(),
    });
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..objects {
        let ops = total / objects + u64::from(n < total % objects);
        let rng = Rng(seed ^ n.wrapping_mul(0x100_0000_01B3));
        let name = format!("{prefix}-{n}");
        tasks.spawn(object_ops(
            io.clone(),
            name,
            ops,
            rng,
            snaps.clone(),
            progress.clone(),
        ));
    }
    let snapper = {
        let (rados, io, snaps, progress) =
            (rados.clone(), io.clone(), snaps.clone(), progress.clone());
        tokio::spawn(async move { take_snapshots(&rados, &io, &snaps, &progress).await })
    };
    let mut ops = 0;
    let mut failures = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r.expect("a task") {
            Ok(n) => ops += n,
            Err(e) => {
                progress.stopped.store(true, Ordering::Release);
                failures.push(e)
            }
        }
    }
    // Failed tasks may leave shares undone: the snapshots wait no more.
    snapper.abort();
    if let Ok(Err(e)) = snapper.await {
        failures.push(e);
    }
    assert!(
        failures.is_empty(),
        "seed {seed}, pool {pool} (kept, with its snapshots): {failures:#?}"
    );
    assert_eq!(ops, total);
    let taken = snaps.read().await.snapc.seq;
    assert!(taken > 0 || snapshots == 0, "no snapshot was taken");
    rados
        .pool_delete(&pool)
        .await
        .expect("the model's pool deleted");
    println!(
        "model workload: seed {seed}: {ops} ops, every read as the model says \
         (snapshots up to id {taken})"
    );
    Arc::try_unwrap(rados)
        .ok()
        .expect("the last reference")
        .shutdown()
        .await;
}
