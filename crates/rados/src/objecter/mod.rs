//! The objecter (src/osdc/Objecter.cc), sans-IO: requests are targeted at
//! the acting primary of their object's PG in the current OSD map, sent,
//! and completed by the reply of the OSD they were last sent to; a new map
//! that moves a request's PG (or a reset of the connection it went on)
//! sends it again, with the next `retry_attempt`. In-flight ops and bytes
//! are bounded (`objecter_inflight_ops`, `objecter_inflight_op_bytes`);
//! requests past the bounds wait their turn. An OSD's backoff holds the
//! requests it covers until the OSD lifts it; a map that pauses reads or
//! writes (PAUSERD, PAUSEWR, FULL, a full pool) holds them until a map
//! lifts it. Requests follow a pool's cache tier overlay, and an OSD's
//! redirect. The driver carries the messages, tells the time, and runs the
//! placements (CRUSH) the objecter queues, outside whatever lock holds it
//! ([`Objecter::take_placements`]): a map's CRUSH is a peer's, and a
//! mapping may cost up to its budget.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use msgr_encoding::UTime;
use msgr_messages::osd_backoff::backoff_op;
use msgr_messages::osd_types::{ObjectLocator, PgId, SpgId, NOSNAP};
use msgr_messages::{HObject, MOSDBackoff, MOSDOp, MOSDOpReply, RequestRedirect};
use msgr_osdmap::OsdMap;

use crate::request::{flag, split_outdata, Ops, Reply, SnapContext};
use mappings::PgMappings;

pub mod linger;
mod mappings;

/// `-EAGAIN`: the OSD asks for the request again.
const EAGAIN: i32 = -11;
/// `-ENOENT`: the pool is gone.
pub const ENOENT: i32 = -2;
/// `-ETIMEDOUT`.
pub const ETIMEDOUT: i32 = -110;
/// `osd_client_op_priority`, the priority librados sends ops at.
const PRIORITY: u16 = 63;
/// The most blocks one OSD can have us hold: past them, its oldest goes
/// (an OSD blocks a few ranges of a PG at a time, not thousands).
pub const MAX_BACKOFFS_PER_OSD: usize = 256;

/// The objecter's bounds on what is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `objecter_inflight_ops`.
    pub ops: usize,
    /// `objecter_inflight_op_bytes`.
    pub bytes: u64,
}

impl Default for Limits {
    /// Ceph's defaults: 1024 ops, 100 MiB.
    fn default() -> Limits {
        Limits {
            ops: 1024,
            bytes: 100 << 20,
        }
    }
}

/// An object: its pool, name, namespace and locator key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Object {
    /// The pool's id.
    pub pool: i64,
    /// The object's name.
    pub name: Bytes,
    /// The object's namespace (empty: the default one).
    pub nspace: String,
    /// Placed by this key instead of the name when not empty.
    pub key: String,
    /// For PG ops (listing): the PG to go to, by its seed, instead of the
    /// object's.
    pub pg: Option<u32>,
}

/// What to do to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The object acted on.
    pub object: Object,
    /// The ops, in order.
    pub ops: Ops,
    /// Writes carry their time.
    pub mtime: UTime,
    /// Completed with [`ETIMEDOUT`] if not answered in this long
    /// (`rados_osd_op_timeout`; `None`: wait).
    pub timeout: Option<Duration>,
    /// The snapshot a read reads ([`NOSNAP`]: the head).
    pub snapid: u64,
    /// The snap context a write carries.
    pub snapc: SnapContext,
    /// `CEPH_OSD_FLAG_*` the request adds to those the objecter sets
    /// (e.g. `BALANCE_READS`, `FULL_TRY`).
    pub flags: u32,
}

impl Request {
    /// Ops on `object` with no timeout, at the head, with an empty snap
    /// context and no extra flags (a write's mtime is the epoch: set it).
    pub fn new(object: Object, ops: Ops) -> Request {
        Request {
            object,
            ops,
            mtime: UTime::default(),
            timeout: None,
            snapid: NOSNAP,
            snapc: SnapContext::default(),
            flags: 0,
        }
    }

    /// Whether the request is a write: one of its ops writes, or it was
    /// marked one with [`flag::WRITE`] in `flags`, as librados's
    /// `ObjectWriteOperation` marks class calls and asserts (a write then
    /// carries its mtime and snap context, and waits out full pools and
    /// PAUSEWR).
    pub fn writes(&self) -> bool {
        self.ops.writes() || self.flags & flag::WRITE != 0
    }
}

/// Where a request goes: the PG and its acting primary, and what of the
/// PG's mapping decides whether a new map makes it go again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The PG's acting primary, where the request goes.
    pub osd: i32,
    /// The PG, with its shard.
    pub pgid: SpgId,
    /// The object's full hash (the raw pg's seed).
    pub hash: u32,
    up: Vec<i32>,
    acting: Vec<i32>,
    up_primary: i32,
    pg_num: u32,
    size: u8,
    min_size: u8,
}

/// A message for an OSD (reached at its address in [`Objecter::map`]).
#[derive(Debug, Clone)]
pub struct Transmit {
    /// The OSD to send to.
    pub osd: i32,
    /// The op message.
    pub msg: MOSDOp,
}

/// Requests whose targets are to be computed, against the map they were
/// taken with: [`Placements::run`] computes them (without the objecter)
/// and [`Objecter::finish_placements`] takes the result.
pub struct Placements {
    map: Arc<OsdMap>,
    items: Vec<ToPlace>,
    /// The PGs already mapped in `map` (lent by the objecter).
    mappings: PgMappings,
    /// Where this client is in the CRUSH hierarchy (localized reads).
    location: Arc<Vec<(String, String)>>,
}

/// One request to place, as it stood when it was taken.
struct ToPlace {
    tid: u64,
    /// Send it even if its target did not move.
    force: bool,
    object: Object,
    ignores_overlay: bool,
    writes: bool,
    /// The request's flags (a read may go to a replica).
    flags: u32,
}

/// What [`Placements::run`] computed.
pub struct Placed {
    map: Arc<OsdMap>,
    items: Vec<(ToPlace, Result<Option<Target>, i32>)>,
    mappings: PgMappings,
}

impl Placements {
    /// How many requests are to be placed.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no request is to be placed.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Computes each request's target in the map they were taken with.
    pub fn run(self) -> Placed {
        let mut mappings = self.mappings;
        let items = self
            .items
            .into_iter()
            .map(|p| {
                let up_acting = |pg| mappings.up_acting(&self.map, pg);
                let read = ReadFrom {
                    writes: p.writes,
                    flags: p.flags,
                    tid: p.tid,
                    location: &self.location,
                };
                let t = target_of(&self.map, up_acting, &p.object, p.ignores_overlay, &read);
                (p, t)
            })
            .collect();
        Placed {
            map: self.map,
            items,
            mappings,
        }
    }
}

/// A request's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The request's tid, as [`Objecter::submit`] returned it.
    pub tid: u64,
    /// The OSD's reply, or the objecter's own errno (pool gone, timed out).
    pub result: Result<Reply, i32>,
}

struct InFlight {
    req: Request,
    budget: u64,
    target: Option<Target>,
    /// Sends so far (the next one's `retry_attempt`).
    attempts: i32,
    deadline: Option<Instant>,
    /// The map holds it (`op_target_t::paused`): not sent until a map
    /// lifts the pause.
    paused: bool,
    /// An OSD redirected it (`req.object` is where it was sent to): it
    /// skips tiers from then on.
    redirected: bool,
}

impl InFlight {
    /// CEPH_OSD_FLAG_IGNORE_OVERLAY: PG ops and redirected requests go to
    /// the pool they name, not its cache tier.
    fn ignores_overlay(&self) -> bool {
        self.redirected || self.req.object.pg.is_some()
    }
}

/// The objecter's state.
pub struct Objecter {
    map: Arc<OsdMap>,
    limits: Limits,
    /// This client's CRUSH location (`crush_location`), for localized
    /// reads.
    location: Arc<Vec<(String, String)>>,
    last_tid: u64,
    /// Requests holding budget: sent, or waiting for a target. Boxed: a
    /// request is large, and a node's entries shift on every insert and
    /// remove.
    inflight: BTreeMap<u64, Box<InFlight>>,
    /// Requests waiting for budget, in order.
    throttled: VecDeque<(u64, Request, Option<Instant>)>,
    used_ops: usize,
    used_bytes: u64,
    transmit: VecDeque<Transmit>,
    completed: VecDeque<Completion>,
    /// The blocks OSDs put on ranges of their PGs' objects.
    backoffs: Vec<Backoff>,
    /// Requests whose target is to be computed (in tid order, so that
    /// they go in the order they came), and whether each must be sent
    /// even if its target did not move.
    to_place: BTreeMap<u64, bool>,
    /// A batch of placements is out with the driver: no other is handed
    /// out until it comes back (so that results are never overtaken).
    placing: bool,
    /// The PGs mapped in the current map, lent to each batch.
    mappings: PgMappings,
}

/// A BLOCK from an OSD, until its UNBLOCK or the connection's reset.
#[derive(Debug, Clone)]
struct Backoff {
    osd: i32,
    block: MOSDBackoff,
}

/// The object a request is about, as its PG orders objects.
fn hobject_of(req: &Request, hash: u32) -> HObject {
    let o = &req.object;
    HObject::head(
        o.pool,
        o.name.clone(),
        Bytes::copy_from_slice(o.key.as_bytes()),
        Bytes::copy_from_slice(o.nspace.as_bytes()),
        hash,
    )
}

impl Objecter {
    /// An objecter over `map`, within `limits`.
    pub fn new(map: Arc<OsdMap>, limits: Limits) -> Objecter {
        Objecter {
            map,
            limits,
            location: Arc::default(),
            last_tid: 0,
            inflight: BTreeMap::new(),
            throttled: VecDeque::new(),
            used_ops: 0,
            used_bytes: 0,
            transmit: VecDeque::new(),
            completed: VecDeque::new(),
            backoffs: Vec::new(),
            to_place: BTreeMap::new(),
            placing: false,
            mappings: PgMappings::default(),
        }
    }

    /// Where this client is in the CRUSH hierarchy (`crush_location`:
    /// type and bucket name pairs, e.g. `host=node1 root=default`): a
    /// read with LOCALIZE_READS goes to the acting OSD closest to it.
    pub fn set_crush_location(&mut self, location: Vec<(String, String)>) {
        self.location = Arc::new(location);
    }

    /// The OSD map the objecter targets with.
    pub fn map(&self) -> &Arc<OsdMap> {
        &self.map
    }

    /// Requests not yet completed.
    pub fn pending(&self) -> usize {
        self.inflight.len().saturating_add(self.throttled.len())
    }

    /// Takes a request; its completion comes with the returned tid.
    pub fn submit(&mut self, req: Request, now: Instant) -> u64 {
        self.last_tid = self.last_tid.wrapping_add(1);
        let tid = self.last_tid;
        let deadline = req.timeout.and_then(|t| now.checked_add(t));
        self.throttled.push_back((tid, req, deadline));
        self.admit();
        tid
    }

    /// Moves throttled requests in flight while the budget allows (one
    /// larger than the whole budget goes alone).
    fn admit(&mut self) {
        while let Some((_, req, _)) = self.throttled.front() {
            let bytes = req.ops.budget_bytes();
            let idle = self.used_ops == 0;
            let fits = self.used_ops < self.limits.ops
                && self.used_bytes.saturating_add(bytes) <= self.limits.bytes;
            if !(fits || idle) {
                return;
            }
            let Some((tid, req, deadline)) = self.throttled.pop_front() else {
                return;
            };
            self.used_ops = self.used_ops.saturating_add(1);
            self.used_bytes = self.used_bytes.saturating_add(bytes);
            self.inflight.insert(
                tid,
                Box::new(InFlight {
                    req,
                    budget: bytes,
                    target: None,
                    attempts: 0,
                    deadline,
                    paused: false,
                    redirected: false,
                }),
            );
            match self.known_target(tid) {
                Some(target) => self.apply_target(tid, true, Ok(target)),
                None => self.retarget(tid, true),
            }
        }
    }

    /// A new request's target when it costs no CRUSH: its PG already
    /// mapped in the current map, nothing older waiting to be placed (it
    /// must not overtake them) and no batch out with the driver, and no
    /// walk of the CRUSH hierarchy to choose its OSD (LOCALIZE_READS).
    /// `None` sends it the way of every placement (and an error too, which
    /// that way ends it).
    fn known_target(&self, tid: u64) -> Option<Option<Target>> {
        if self.placing || !self.to_place.is_empty() {
            return None;
        }
        let f = self.inflight.get(&tid)?;
        if f.req.flags & flag::LOCALIZE_READS != 0 {
            return None;
        }
        let read = ReadFrom {
            writes: f.req.writes(),
            flags: f.req.flags,
            tid,
            location: &self.location,
        };
        let at = pg_of(&self.map, &f.req.object, f.ignores_overlay(), read.writes).ok()?;
        let ua = self.mappings.known(&self.map, at.pg)?;
        Some(ua.and_then(|ua| target_in(&self.map, &at, ua, &read)))
    }

    /// The next message to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmit.pop_front()
    }

    /// The next finished request.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completed.pop_front()
    }

    /// The earliest time [`Objecter::handle_timeout`] has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        let inflight = self.inflight.values().filter_map(|f| f.deadline);
        let throttled = self.throttled.iter().filter_map(|t| t.2);
        inflight.chain(throttled).min()
    }

    /// Forgets request `tid` (its caller went away): it is not sent (again)
    /// and no completion comes for it; a reply still on its way is dropped
    /// as stale. What it held of the budget goes to the requests waiting.
    /// A request already sent may still be carried out by its OSD (as with
    /// librados's `aio_cancel`). Whether it was still pending.
    pub fn cancel(&mut self, tid: u64) -> bool {
        self.to_place.remove(&tid);
        if let Some(f) = self.inflight.remove(&tid) {
            self.used_ops = self.used_ops.saturating_sub(1);
            self.used_bytes = self.used_bytes.saturating_sub(f.budget);
            self.admit();
            return true;
        }
        let before = self.throttled.len();
        self.throttled.retain(|t| t.0 != tid);
        before != self.throttled.len()
    }

    fn complete(&mut self, tid: u64, result: Result<Reply, i32>) {
        if let Some(f) = self.inflight.remove(&tid) {
            self.used_ops = self.used_ops.saturating_sub(1);
            self.used_bytes = self.used_bytes.saturating_sub(f.budget);
        }
        self.completed.push_back(Completion { tid, result });
        self.admit();
    }

    /// Queues a request's target to be computed again (sent then when
    /// `force`, or as [`Objecter::apply_target`] says).
    fn retarget(&mut self, tid: u64, force: bool) {
        if self.inflight.contains_key(&tid) {
            let f = self.to_place.entry(tid).or_insert(false);
            *f = *f || force;
        }
    }

    /// Whether requests wait for their targets to be computed.
    pub fn placements_waiting(&self) -> bool {
        !self.to_place.is_empty()
    }

    /// The requests whose targets are to be computed, with the current
    /// map, for the driver to run outside any lock that holds the
    /// objecter; `None` when there are none, or while the last batch
    /// taken has not come back ([`Objecter::finish_placements`]).
    pub fn take_placements(&mut self) -> Option<Placements> {
        if self.placing {
            return None;
        }
        let mut items = Vec::new();
        for (tid, force) in std::mem::take(&mut self.to_place) {
            if let Some(f) = self.inflight.get(&tid) {
                items.push(ToPlace {
                    tid,
                    force,
                    object: f.req.object.clone(),
                    ignores_overlay: f.ignores_overlay(),
                    writes: f.req.writes(),
                    flags: f.req.flags,
                });
            }
        }
        if items.is_empty() {
            return None;
        }
        self.placing = true;
        Some(Placements {
            map: self.map.clone(),
            items,
            mappings: std::mem::take(&mut self.mappings),
            location: self.location.clone(),
        })
    }

    /// Takes computed targets: each request is sent, paused or ended as
    /// they say. One computed against an older map, or for a request an
    /// OSD redirected meanwhile, is queued again.
    pub fn finish_placements(&mut self, placed: Placed) {
        self.placing = false;
        self.mappings = placed.mappings;
        let current = Arc::ptr_eq(&placed.map, &self.map);
        for (p, target) in placed.items {
            let Some(f) = self.inflight.get(&p.tid) else {
                continue;
            };
            if !current || f.req.object != p.object || f.ignores_overlay() != p.ignores_overlay {
                self.retarget(p.tid, p.force);
                continue;
            }
            self.apply_target(p.tid, p.force, target);
        }
    }

    /// Computes the queued placements here, under whatever holds the
    /// objecter (tests, and drivers with nothing else to serve meanwhile).
    pub fn place_now(&mut self) {
        while let Some(p) = self.take_placements() {
            let placed = p.run();
            self.finish_placements(placed);
        }
    }

    /// A request's new target: sent when `force`, when the target moved
    /// (another PG, primary, up or acting set, pg_num, size: Ceph's new
    /// interval), or when the map lifted its pause; ended when its pool
    /// is gone.
    fn apply_target(&mut self, tid: u64, force: bool, target: Result<Option<Target>, i32>) {
        let Some(f) = self.inflight.get(&tid) else {
            return;
        };
        match target {
            Err(errno) => self.complete(tid, Err(errno)),
            Ok(target) => {
                let moved = target != f.target;
                let forced = target.as_ref().is_some_and(|t| self.forced_resend(f, t));
                let paused = self.should_pause(f);
                let unpaused = f.paused && !paused;
                if let Some(f) = self.inflight.get_mut(&tid) {
                    f.target = target;
                    f.paused = paused;
                }
                if force || moved || forced || unpaused {
                    self.send(tid);
                }
            }
        }
    }

    /// `target_should_be_paused`: reads while the map says PAUSERD;
    /// writes while it says PAUSEWR, or FULL or the pool is full (Ceph's
    /// objecter holds them, as librados does by default, rather than
    /// failing them), but for removes, which free space (`FULL_FORCE`).
    fn should_pause(&self, f: &InFlight) -> bool {
        use msgr_osdmap::flag::{FULL, PAUSERD, PAUSEWR};
        let map_flags = self.map.flags;
        if !f.req.writes() {
            return map_flags & PAUSERD != 0;
        }
        if map_flags & PAUSEWR != 0 {
            return true;
        }
        if f.req.ops.only_removes() {
            return false;
        }
        // FULL_TRY / FULL_FORCE go to the OSDs despite a full pool or
        // cluster (Ceph's `respects_full`), which answer or refuse them.
        if f.req.flags & (crate::request::flag::FULL_TRY | crate::request::flag::FULL_FORCE) != 0 {
            return false;
        }
        let pool_full = self
            .map
            .pools
            .get(&f.req.object.pool)
            .is_some_and(|p| p.flags & msgr_osdmap::pool::flag::FULL != 0);
        map_flags & FULL != 0 || pool_full
    }

    /// `last_force_op_resend`: the pool asks every op to go again at this
    /// epoch.
    fn forced_resend(&self, _f: &InFlight, t: &Target) -> bool {
        self.map
            .pools
            .get(&(t.pgid.pgid.pool as i64))
            .is_some_and(|p| p.last_force_op_resend == self.map.epoch)
    }

    /// Queues the request's MOSDOp for its target (if it has one).
    fn send(&mut self, tid: u64) {
        let epoch = self.map.epoch;
        let Some(f) = self.inflight.get_mut(&tid) else {
            return;
        };
        let Some(t) = f.target.as_ref() else {
            return;
        };
        if f.paused || self.map.osd_addrs(t.osd).is_none() {
            return;
        }
        let held = |b: &Backoff| b.osd == t.osd && b.block.pgid == t.pgid;
        if self
            .backoffs
            .iter()
            .any(|b| held(b) && b.block.covers(&hobject_of(&f.req, t.hash)))
        {
            // Held: it goes when the OSD lifts the block.
            return;
        }
        let attempt = f.attempts;
        let (osd, msg) = (t.osd, build_op(tid, f, t, epoch, attempt));
        f.attempts = attempt.saturating_add(1);
        self.transmit.push_back(Transmit { osd, msg });
    }

    /// A new OSD map: requests whose PG moved go again; requests of a pool
    /// that is gone end with ENOENT; requests without a target get one.
    pub fn handle_map(&mut self, map: Arc<OsdMap>) {
        if map.epoch <= self.map.epoch {
            return;
        }
        self.map = map;
        let tids: Vec<u64> = self.inflight.keys().copied().collect();
        for tid in tids {
            self.retarget(tid, false);
        }
    }

    /// An OSD's backoff (`handle_osd_backoff`): a BLOCK holds the requests
    /// it covers and is acknowledged (the returned message, for the
    /// connection it came on); an UNBLOCK sends what it covered.
    pub fn handle_backoff(&mut self, osd: i32, m: MOSDBackoff) -> Option<MOSDBackoff> {
        match m.op {
            backoff_op::BLOCK => {
                let ack = m.ack();
                // A block of an id already held replaces it.
                self.backoffs
                    .retain(|b| !(b.osd == osd && b.block.id == m.id));
                let held = self.backoffs.iter().filter(|b| b.osd == osd).count();
                if held >= MAX_BACKOFFS_PER_OSD {
                    if let Some(oldest) = self.backoffs.iter().position(|b| b.osd == osd) {
                        self.backoffs.remove(oldest);
                    }
                }
                self.backoffs.push(Backoff { osd, block: m });
                Some(ack)
            }
            backoff_op::UNBLOCK => {
                self.backoffs
                    .retain(|b| !(b.osd == osd && b.block.id == m.id));
                // The message's range, not the block's: the PG may have
                // split since.
                let tids: Vec<u64> = self
                    .inflight
                    .iter()
                    .filter(|(_, f)| {
                        f.target.as_ref().is_some_and(|t| {
                            t.osd == osd
                                && t.pgid == m.pgid
                                && m.covers(&hobject_of(&f.req, t.hash))
                        })
                    })
                    .map(|(t, _)| *t)
                    .collect();
                for tid in tids {
                    self.send(tid);
                }
                None
            }
            _ => None,
        }
    }

    /// The connection to `osd` was reset: what was sent on it may be lost,
    /// so it goes again (and the OSD's blocks went with the connection).
    pub fn handle_reset(&mut self, osd: i32) {
        self.backoffs.retain(|b| b.osd != osd);
        let tids: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, f)| f.target.as_ref().is_some_and(|t| t.osd == osd))
            .map(|(t, _)| *t)
            .collect();
        for tid in tids {
            self.retarget(tid, true);
        }
    }

    /// An OSD's reply. One from an OSD the request is no longer at, or to
    /// an earlier send of it, is stale and dropped, as Ceph's objecter
    /// drops them; EAGAIN sends the request again.
    pub fn handle_reply(&mut self, osd: i32, reply: MOSDOpReply) {
        let tid = reply.tid;
        let Some(f) = self.inflight.get(&tid) else {
            return;
        };
        let at = f.target.as_ref().map(|t| t.osd);
        let last_attempt = f.attempts.saturating_sub(1);
        if at != Some(osd) || (reply.retry_attempt >= 0 && reply.retry_attempt != last_attempt) {
            return;
        }
        if let Some(r) = reply.redirect {
            self.redirect(tid, r);
            return;
        }
        if reply.result == EAGAIN {
            // A replica that cannot serve the read: the primary will
            // (`handle_osd_op_reply` drops BALANCE/LOCALIZE_READS).
            if let Some(f) = self.inflight.get_mut(&tid) {
                f.req.flags &= !(flag::BALANCE_READS | flag::LOCALIZE_READS);
            }
            self.retarget(tid, true);
            return;
        }
        let result = match split_outdata(&reply.ops, &reply.data) {
            Some(ops) => Ok(Reply {
                result: reply.result,
                ops,
                version: reply.user_version,
                osd,
            }),
            // The OSD's op lengths claim more than its data: EIO, as the
            // reply cannot be read.
            None => Err(-5),
        };
        self.complete(tid, result);
    }

    /// `do_redirect`: the request goes where the OSD says (its locator,
    /// and its name unless empty: `combine_with_locator`), past any tier.
    fn redirect(&mut self, tid: u64, r: RequestRedirect) {
        let Some(f) = self.inflight.get_mut(&tid) else {
            return;
        };
        let o = &mut f.req.object;
        o.pool = r.locator.pool;
        o.key = r.locator.key;
        o.nspace = r.locator.nspace;
        if !r.object.is_empty() {
            o.name = r.object;
        }
        f.redirected = true;
        f.target = None;
        self.retarget(tid, true);
    }

    /// Ends the requests whose time is up with [`ETIMEDOUT`].
    pub fn handle_timeout(&mut self, now: Instant) {
        let late = |d: &Option<Instant>| d.is_some_and(|d| d <= now);
        let expired: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, f)| late(&f.deadline))
            .map(|(t, _)| *t)
            .collect();
        for tid in expired {
            self.complete(tid, Err(ETIMEDOUT));
        }
        let (gone, kept): (Vec<_>, Vec<_>) = self.throttled.drain(..).partition(|t| late(&t.2));
        self.throttled = kept.into();
        for (tid, _, _) in gone {
            self.completed.push_back(Completion {
                tid,
                result: Err(ETIMEDOUT),
            });
        }
    }
}

/// `_calc_target`: the request's pool (its own, or the cache tier
/// its pool's overlay sends reads or writes to), PG and acting primary
/// in `map`, whose PGs `up_acting` maps, and the OSD `read` picks among
/// the acting set. `Err(ENOENT)` when the pool is gone; `Ok(None)` when
/// the PG has no usable primary yet.
fn target_of(
    map: &OsdMap,
    mut up_acting: impl FnMut(PgId) -> Option<msgr_osdmap::UpActing>,
    object: &Object,
    ignores_overlay: bool,
    read: &ReadFrom,
) -> Result<Option<Target>, i32> {
    let at = pg_of(map, object, ignores_overlay, read.writes)?;
    Ok(up_acting(at.pg).and_then(|ua| target_in(map, &at, ua, read)))
}

/// Where a request's object hashes: the pool it goes to, its raw pg and
/// its PG.
struct PgOf {
    pool: i64,
    raw: PgId,
    pg: PgId,
}

/// The first half of `_calc_target`, without CRUSH: the pool (overlay
/// followed) and the PG. `Err(ENOENT)` when a pool is gone.
fn pg_of(map: &OsdMap, object: &Object, ignores_overlay: bool, writes: bool) -> Result<PgOf, i32> {
    let base = map.pools.get(&object.pool).ok_or(ENOENT)?;
    let tier = match (ignores_overlay, writes) {
        (true, _) => -1,
        (false, true) => base.write_tier,
        (false, false) => base.read_tier,
    };
    let pool_id = if tier >= 0 { tier } else { object.pool };
    let pool = map.pools.get(&pool_id).ok_or(ENOENT)?;
    let raw = match object.pg {
        Some(seed) => PgId {
            pool: object.pool as u64,
            seed,
        },
        None => map
            .object_to_raw_pg(
                pool_id,
                &object.name,
                object.key.as_bytes(),
                object.nspace.as_bytes(),
            )
            .ok_or(ENOENT)?,
    };
    Ok(PgOf {
        pool: pool_id,
        raw,
        pg: pool.raw_pg_to_pg(raw),
    })
}

/// The second half: the target in the PG's up and acting sets `ua` (the
/// acting primary, or the replica `read` picks), or `None` when it has no
/// usable primary.
fn target_in(
    map: &OsdMap,
    at: &PgOf,
    ua: msgr_osdmap::UpActing,
    read: &ReadFrom,
) -> Option<Target> {
    let pool = map.pools.get(&at.pool)?;
    let osd = ua.acting_primary;
    if osd < 0 || !map.is_up(osd) {
        return None;
    }
    // An EC PG's shard is the primary's position in the acting set.
    let shard = match pool.is_erasure() {
        true => ua
            .acting
            .iter()
            .position(|&o| o == osd)
            .and_then(|i| i8::try_from(i).ok())
            .unwrap_or(-1),
        false => -1,
    };
    Some(Target {
        osd: read.choose(map, at.pg.pool as i64, at.raw.seed, osd, &ua.acting),
        pgid: SpgId { pgid: at.pg, shard },
        hash: at.raw.seed,
        up: ua.up,
        acting: ua.acting,
        up_primary: ua.up_primary,
        pg_num: pool.pg_num,
        size: pool.size,
        min_size: pool.min_size,
    })
}

/// The MOSDOp of one send of a request, as librados builds it.
fn build_op(tid: u64, f: &InFlight, t: &Target, epoch: u32, attempt: i32) -> MOSDOp {
    let req = &f.req;
    let writes = req.writes();
    let mut ops = Vec::with_capacity(req.ops.0.len());
    let mut inputs: Vec<&Bytes> = Vec::new();
    for o in &req.ops.0 {
        let mut op = o.op;
        op.payload_len = o.indata.len() as u32;
        ops.push(op);
        if !o.indata.is_empty() {
            inputs.push(&o.indata);
        }
    }
    // One input goes as it is; several are joined.
    let data = match inputs.as_slice() {
        [] => Bytes::new(),
        [one] => Bytes::clone(one),
        many => {
            let mut joined = BytesMut::new();
            for b in many {
                joined.extend_from_slice(b);
            }
            joined.freeze()
        }
    };
    let mut flags = match writes {
        true => flag::WRITE,
        false => flag::READ,
    } | flag::ONDISK
        | flag::KNOWN_REDIR
        | req.flags;
    // PG ops (`prepare_pg_read_op`) and redirected requests skip tiers; a
    // redirected one says so (`handle_osd_op_reply`).
    if f.ignores_overlay() {
        flags |= flag::IGNORE_OVERLAY;
    }
    if f.redirected {
        flags |= flag::REDIRECTED | flag::IGNORE_CACHE;
    }
    if req.ops.only_removes() {
        flags |= flag::FULL_FORCE;
    }
    MOSDOp {
        tid,
        priority: PRIORITY,
        pgid: t.pgid,
        hash: t.hash,
        osdmap_epoch: epoch,
        flags,
        reqid: Default::default(),
        trace: [0; 24],
        otel: Default::default(),
        client_inc: 0,
        mtime: if writes { req.mtime } else { UTime::default() },
        // The pool it goes to: a tier's when the overlay sent it there.
        oloc: ObjectLocator {
            pool: t.pgid.pgid.pool as i64,
            key: req.object.key.clone(),
            nspace: req.object.nspace.clone(),
            hash: -1,
        },
        oid: req.object.name.clone(),
        ops,
        snapid: req.snapid,
        snap_seq: req.snapc.seq,
        snaps: req.snapc.snaps.clone(),
        retry_attempt: attempt,
        features: 0,
        data,
    }
}

/// The PG of a request's target, for tests and logs.
impl Target {
    /// The target's PG (without the shard).
    pub fn pg(&self) -> PgId {
        self.pgid.pgid
    }
}

mod replica;
use replica::ReadFrom;

#[cfg(test)]
mod tests;
