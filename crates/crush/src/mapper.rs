//! The mapper: `crush_do_rule` and what it calls (src/crush/mapper.c),
//! bit-exact with Ceph 16 and 20 for every rule but Squid's MSR ones
//! (docs/research/crush-mapper.md). Arithmetic is C's: `u32` wrapping
//! where C mixes `int` and `unsigned`, arithmetic shifts on `int`.
//!
//! Where C would read past an array, follow a missing bucket or descend
//! round a cycle of buckets for ever (a malformed map: Ceph's own never
//! are), the choice made here is safe and named: a bucket that cannot
//! answer yields [`ITEM_NONE`], which every caller rejects as it rejects
//! an item past `max_devices`, and a descent through more buckets than
//! the map has is given up as one through a missing bucket is.
//!
//! The work of one mapping is bounded here, where Ceph bounds nothing: the
//! tries, replicas and fallback retries a map sets multiply with its
//! bucket sizes (a 16k-device bucket with legacy fallback tries costs
//! hundreds of millions of hashes for one input, seconds of CPU), and the
//! map is a peer's. Every item a bucket draws over, every fallback
//! permutation step and every reweight hash is counted against a budget
//! ([`WORK_BUDGET`] for [`do_rule`]); once it is spent, every further
//! choice yields [`ITEM_NONE`], so the mapping ends at once with what it
//! had (a shorter firstn result, holes in an indep one), as valid as a
//! mapping that found no more usable devices.

use std::cell::Cell;

use crate::hash::{hash2, hash3, hash4};
use crate::ln::crush_ln;
use crate::map::{alg, op, Bucket, Choose, ChooseArg, ChooseArgs, CrushMap};

/// `CRUSH_ITEM_NONE`: no item (a hole in an indep result).
pub const ITEM_NONE: i32 = 0x7fff_ffff;
/// `CRUSH_ITEM_UNDEF`: not decided yet (indep, during the choice).
const ITEM_UNDEF: i32 = 0x7fff_fffe;

/// A device weight meaning fully in (16.16 fixed point 1.0).
pub const WEIGHT_IN: u32 = 0x10000;

/// The work [`do_rule`] allows one mapping, in items drawn over (each one
/// hash, and for straw2 one `crush_ln`): a fifth of a second of CPU at
/// most. A map of 10,000 OSDs under 500 hosts with a third of them out
/// spends at most about 11,000 on a mapping (a test below), and an 8+3 EC
/// rule with `set_choose_tries 100` on it could spend about 570,000 only
/// if every one of its tries failed; what spends the budget is a map
/// whose tries multiply with huge buckets.
pub const WORK_BUDGET: u64 = 1 << 22;

/// What [`do_rule_within`] found, and the work it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The items, as [`do_rule`] returns them.
    pub items: Vec<i32>,
    /// The work spent, in [`WORK_BUDGET`]'s units.
    pub work: u64,
    /// Whether the budget ran out (the items are what was found before).
    pub exhausted: bool,
}

/// `x` (an int in C) as the hash takes it.
fn u(v: i32) -> u32 {
    v as u32
}

/// The slot of bucket `id` (`-1 - id`), if `id` is a bucket's.
fn slot(id: i32) -> Option<usize> {
    usize::try_from((-1i64).checked_sub(i64::from(id))?).ok()
}

/// One `crush_do_rule` call's inputs.
struct Run<'a> {
    map: &'a CrushMap,
    /// Device reweights (16.16; 0x10000 in, 0 out).
    weights: &'a [u32],
    choose_args: Option<&'a ChooseArgs>,
    x: i32,
    /// The work left of the mapping's budget.
    left: Cell<u64>,
    /// The work spent so far.
    spent: Cell<u64>,
    /// Set once a step found the budget spent.
    exhausted: Cell<bool>,
}

/// The parameters of `crush_choose_firstn` that stay the same through
/// its recursion's levels.
#[derive(Clone, Copy)]
struct Firstn {
    tries: u32,
    recurse_tries: u32,
    local_retries: u32,
    local_fallback_retries: u32,
    recurse_to_leaf: bool,
    vary_r: u32,
    stable: u32,
}

impl<'a> Run<'a> {
    /// Takes `work` from the budget: false (and the budget marked spent)
    /// when less than that is left.
    fn spend(&self, work: u64) -> bool {
        let left = self.left.get();
        if self.exhausted.get() || left < work {
            self.exhausted.set(true);
            self.left.set(0);
            return false;
        }
        self.left.set(left - work);
        self.spent.set(self.spent.get().saturating_add(work));
        true
    }

    fn bucket(&self, id: i32) -> Option<&'a Bucket> {
        self.map.bucket(id)
    }

    /// The type of `item`: a bucket's, 0 for a device; None for a bucket
    /// that is not there.
    fn item_type(&self, item: i32) -> Option<i32> {
        match item < 0 {
            true => self.bucket(item).map(|b| i32::from(b.type_id)),
            false => Some(0),
        }
    }

    /// The bucket a choice descends into from `item` (a bucket of another
    /// type than wanted): None for a device, a missing bucket, or a
    /// descent through more buckets than the map has (a cycle, on which C
    /// would never end).
    fn descend(&self, item: i32, depth: &mut usize) -> Option<&'a Bucket> {
        *depth = depth.saturating_add(1);
        if item >= 0 || *depth > self.map.buckets.len() {
            return None;
        }
        self.bucket(item)
    }

    fn arg(&self, b: &Bucket) -> Option<&'a ChooseArg> {
        self.choose_args?.get(&slot(b.id)?)
    }

    /// `is_out`: whether device `item` is out for this input, by its
    /// reweight (partially out devices are out for some inputs).
    fn is_out(&self, item: i32) -> bool {
        let Some(&w) = usize::try_from(item).ok().and_then(|i| self.weights.get(i)) else {
            return true;
        };
        if w >= WEIGHT_IN {
            return false;
        }
        if w == 0 {
            return true;
        }
        // Out once the budget is spent: the mapping ends without it.
        if !self.spend(1) {
            return true;
        }
        (hash2(0, u(self.x), u(item)) & 0xffff) >= w
    }

    /// [`perm_choose`], counted: its permutation is as long as the bucket.
    fn perm(&self, b: &Bucket, r: i32) -> i32 {
        match self.spend(b.items.len() as u64) {
            true => perm_choose(b, self.x, r),
            false => ITEM_NONE,
        }
    }

    /// `crush_bucket_choose`: an item of `b` for replica `r`; `position`
    /// picks the straw2 weight set among choose_args'.
    fn bucket_choose(&self, b: &Bucket, r: i32, position: u32) -> i32 {
        let x = self.x;
        let item = |i: usize| b.items.get(i).copied().unwrap_or(ITEM_NONE);
        let size = b.items.len();
        if size == 0 {
            return ITEM_NONE;
        }
        // A tree is descended, one hash a level (at most 32); the others
        // draw over every item.
        let work = match &b.choose {
            Choose::Tree { .. } => 32,
            _ => size as u64,
        };
        if !self.spend(work) {
            return ITEM_NONE;
        }
        match &b.choose {
            Choose::Uniform { .. } => perm_choose(b, x, r),
            Choose::List {
                item_weights,
                sum_weights,
            } => {
                for i in (0..size).rev() {
                    let h = hash4(b.hash, u(x), u(item(i)), u(r), u(b.id)) & 0xffff;
                    let sum = sum_weights.get(i).copied().unwrap_or(0);
                    let w = (u64::from(h) * u64::from(sum)) >> 16;
                    if w < u64::from(item_weights.get(i).copied().unwrap_or(0)) {
                        return item(i);
                    }
                }
                item(0)
            }
            Choose::Tree { node_weights } => tree_choose(b, node_weights, x, r),
            Choose::Straw { straws, .. } => {
                let mut high = 0;
                let mut high_draw = 0u64;
                for i in 0..size {
                    let h = hash3(b.hash, u(x), u(item(i)), u(r)) & 0xffff;
                    let draw = u64::from(h) * u64::from(straws.get(i).copied().unwrap_or(0));
                    if i == 0 || draw > high_draw {
                        high = i;
                        high_draw = draw;
                    }
                }
                item(high)
            }
            Choose::Straw2 { item_weights } => {
                let arg = self.arg(b);
                // The weight set of this position (the last one past it),
                // and the ids to hash, where choose_args give them.
                let weights = match arg.filter(|a| !a.weight_set.is_empty()) {
                    Some(a) => {
                        let last = a.weight_set.len().saturating_sub(1);
                        let pos = usize::try_from(position).unwrap_or(last).min(last);
                        a.weight_set.get(pos).map_or(item_weights, |w| w)
                    }
                    None => item_weights,
                };
                let ids = arg
                    .filter(|a| !a.ids.is_empty())
                    .map_or(&b.items, |a| &a.ids);
                let mut high = 0;
                let mut high_draw = 0i64;
                for i in 0..size {
                    let w = weights.get(i).copied().unwrap_or(0);
                    let draw = match w {
                        0 => i64::MIN,
                        w => {
                            let id = ids.get(i).copied().unwrap_or(ITEM_NONE);
                            straw2_draw(b.hash, x, id, r, w)
                        }
                    };
                    if i == 0 || draw > high_draw {
                        high = i;
                        high_draw = draw;
                    }
                }
                item(high)
            }
        }
    }

    /// `crush_choose_firstn`: up to `numrep` distinct items of `type_`
    /// under `bucket`, packed into `out` from `outpos` (at most
    /// `out_size`); with `recurse_to_leaf`, a device under each into `out2`.
    /// Returns the new `outpos`.
    #[allow(clippy::too_many_arguments)]
    fn choose_firstn(
        &self,
        bucket: &'a Bucket,
        numrep: i32,
        type_: i32,
        out: &mut [i32],
        mut outpos: usize,
        out_size: i32,
        p: Firstn,
        mut out2: Option<&mut [i32]>,
        parent_r: i32,
    ) -> usize {
        let mut count = out_size;
        let start = if p.stable != 0 { 0 } else { outpos };
        let mut rep = start;
        while i64::try_from(rep).unwrap_or(i64::MAX) < i64::from(numrep) && count > 0 {
            let mut ftotal: u32 = 0;
            let mut skip_rep = false;
            let mut item = 0;
            'descent: loop {
                let mut in_b = bucket;
                let mut flocal: u32 = 0;
                let mut depth = 0usize;
                loop {
                    let mut collide = false;
                    let r = (rep as u32).wrapping_add(u(parent_r)).wrapping_add(ftotal) as i32;
                    let size = in_b.items.len() as u32;
                    let mut reject;
                    // An empty bucket draws nothing but is retried: each
                    // step counts.
                    if !self.spend(1) {
                        skip_rep = true;
                        break 'descent;
                    }
                    if size == 0 {
                        reject = true;
                    } else {
                        item = if p.local_fallback_retries > 0
                            && flocal >= (size >> 1)
                            && flocal > p.local_fallback_retries
                        {
                            self.perm(in_b, r)
                        } else {
                            self.bucket_choose(in_b, r, outpos as u32)
                        };
                        if item >= self.map.max_devices {
                            skip_rep = true;
                            break 'descent;
                        }
                        let Some(itemtype) = self.item_type(item) else {
                            skip_rep = true;
                            break 'descent;
                        };
                        if itemtype != type_ {
                            match self.descend(item, &mut depth) {
                                Some(b) => {
                                    in_b = b;
                                    continue;
                                }
                                None => {
                                    skip_rep = true;
                                    break 'descent;
                                }
                            }
                        }
                        collide = out.get(..outpos).is_some_and(|o| o.contains(&item));
                        reject = false;
                        if !collide && p.recurse_to_leaf {
                            if item < 0 {
                                let sub_r = match p.vary_r {
                                    0 => 0,
                                    v => r.checked_shr(v - 1).unwrap_or(r >> 31),
                                };
                                let leaf = Firstn {
                                    tries: p.recurse_tries,
                                    recurse_tries: 0,
                                    recurse_to_leaf: false,
                                    ..p
                                };
                                let inner_numrep = match p.stable {
                                    0 => {
                                        i32::try_from(outpos).unwrap_or(i32::MAX).saturating_add(1)
                                    }
                                    _ => 1,
                                };
                                let got = match (out2.as_deref_mut(), self.bucket(item)) {
                                    (Some(o2), Some(b)) => self.choose_firstn(
                                        b,
                                        inner_numrep,
                                        0,
                                        o2,
                                        outpos,
                                        count,
                                        leaf,
                                        None,
                                        sub_r,
                                    ),
                                    _ => outpos,
                                };
                                if got <= outpos {
                                    reject = true;
                                }
                            } else if let Some(slot) =
                                out2.as_deref_mut().and_then(|o| o.get_mut(outpos))
                            {
                                *slot = item;
                            }
                        }
                        if !reject && !collide && itemtype == 0 {
                            reject = self.is_out(item);
                        }
                    }
                    if !(reject || collide) {
                        break 'descent;
                    }
                    ftotal = ftotal.wrapping_add(1);
                    flocal = flocal.wrapping_add(1);
                    if (collide && flocal <= p.local_retries)
                        || (p.local_fallback_retries > 0
                            && flocal <= size.wrapping_add(p.local_fallback_retries))
                    {
                        continue; // retry in this bucket
                    }
                    if ftotal < p.tries {
                        continue 'descent; // from the top
                    }
                    skip_rep = true;
                    break 'descent;
                }
            }
            rep = rep.wrapping_add(1);
            if skip_rep {
                continue;
            }
            if let Some(o) = out.get_mut(outpos) {
                *o = item;
            }
            outpos = outpos.wrapping_add(1);
            count = count.wrapping_sub(1);
        }
        outpos
    }

    /// `crush_choose_indep`: `left` items of `type_` under `bucket` into
    /// `out[outpos..outpos + left]`, each slot kept in place (a failure is
    /// a hole, [`ITEM_NONE`]); with `recurse_to_leaf`, a device under each
    /// into `out2`.
    #[allow(clippy::too_many_arguments)]
    fn choose_indep(
        &self,
        bucket: &'a Bucket,
        left: i32,
        numrep: i32,
        type_: i32,
        out: &mut [i32],
        outpos: usize,
        tries: u32,
        recurse_tries: u32,
        recurse_to_leaf: bool,
        mut out2: Option<&mut [i32]>,
        parent_r: i32,
    ) {
        let endpos = outpos.saturating_add(usize::try_from(left).unwrap_or(0));
        let mut left = left;
        let set = |o: &mut [i32], i: usize, v: i32| {
            if let Some(s) = o.get_mut(i) {
                *s = v;
            }
        };
        for rep in outpos..endpos {
            set(out, rep, ITEM_UNDEF);
            if let Some(o2) = out2.as_deref_mut() {
                set(o2, rep, ITEM_UNDEF);
            }
        }
        let mut ftotal: u32 = 0;
        while left > 0 && ftotal < tries {
            for rep in outpos..endpos {
                if out.get(rep).copied() != Some(ITEM_UNDEF) {
                    continue;
                }
                let mut in_b = bucket;
                let mut depth = 0usize;
                loop {
                    let base = (rep as u32).wrapping_add(u(parent_r));
                    let size = in_b.items.len() as u32;
                    let n = u(numrep);
                    let r = match in_b.alg() == alg::UNIFORM && n != 0 && size % n == 0 {
                        true => base.wrapping_add(n.wrapping_add(1).wrapping_mul(ftotal)),
                        false => base.wrapping_add(n.wrapping_mul(ftotal)),
                    } as i32;
                    if size == 0 {
                        break;
                    }
                    let item = self.bucket_choose(in_b, r, outpos as u32);
                    let itemtype = match item >= self.map.max_devices {
                        true => None,
                        false => self.item_type(item),
                    };
                    // A bad item, or a bucket that cannot be descended
                    // into: a hole, not retried.
                    let itemtype = match itemtype {
                        Some(t) if t == type_ => Some(t),
                        Some(_) => match self.descend(item, &mut depth) {
                            Some(b) => {
                                in_b = b;
                                continue;
                            }
                            None => None,
                        },
                        None => None,
                    };
                    let Some(itemtype) = itemtype else {
                        set(out, rep, ITEM_NONE);
                        if let Some(o2) = out2.as_deref_mut() {
                            set(o2, rep, ITEM_NONE);
                        }
                        left = left.wrapping_sub(1);
                        break;
                    };
                    if out.get(outpos..endpos).is_some_and(|o| o.contains(&item)) {
                        break;
                    }
                    if recurse_to_leaf {
                        if item < 0 {
                            if let (Some(o2), Some(b)) = (out2.as_deref_mut(), self.bucket(item)) {
                                self.choose_indep(
                                    b,
                                    1,
                                    numrep,
                                    0,
                                    o2,
                                    rep,
                                    recurse_tries,
                                    0,
                                    false,
                                    None,
                                    r,
                                );
                            }
                            if out2.as_deref().and_then(|o| o.get(rep)).copied() == Some(ITEM_NONE)
                            {
                                break;
                            }
                        } else if let Some(o2) = out2.as_deref_mut() {
                            set(o2, rep, item);
                        }
                    }
                    if itemtype == 0 && self.is_out(item) {
                        break;
                    }
                    set(out, rep, item);
                    left = left.wrapping_sub(1);
                    break;
                }
            }
            ftotal = ftotal.wrapping_add(1);
        }
        for rep in outpos..endpos {
            if out.get(rep).copied() == Some(ITEM_UNDEF) {
                set(out, rep, ITEM_NONE);
            }
            if let Some(o2) = out2.as_deref_mut() {
                if o2.get(rep).copied() == Some(ITEM_UNDEF) {
                    set(o2, rep, ITEM_NONE);
                }
            }
        }
    }
}

/// `bucket_perm_choose`: the `r`-th item of a permutation of the bucket
/// that `x` picks (Fisher-Yates, each step hashed). Ceph caches the
/// permutation's prefix per call; recomputing it gives the same item.
fn perm_choose(b: &Bucket, x: i32, r: i32) -> i32 {
    let size = b.items.len() as u32;
    if size == 0 {
        return ITEM_NONE;
    }
    let pr = u(r) % size;
    let mut perm: Vec<u32> = (0..size).collect();
    for p in 0..=pr {
        if p < size - 1 {
            let i = hash3(b.hash, u(x), u(b.id), p) % (size - p);
            if i != 0 {
                perm.swap(p as usize, (p + i) as usize);
            }
        }
    }
    perm.get(pr as usize)
        .and_then(|s| b.items.get(*s as usize))
        .copied()
        .unwrap_or(ITEM_NONE)
}

/// `bucket_tree_choose`: down the weight tree from its root to a leaf.
fn tree_choose(b: &Bucket, node_weights: &[u32], x: i32, r: i32) -> i32 {
    fn height(n: u32) -> u32 {
        n.trailing_zeros()
    }
    let weight = |n: u32| node_weights.get(n as usize).copied().unwrap_or(0);
    let mut n = (node_weights.len() as u32) >> 1;
    // A tree without nodes (C would not return): its first item.
    if n == 0 {
        return b.items.first().copied().unwrap_or(ITEM_NONE);
    }
    while n & 1 == 0 {
        let h = height(n);
        let t = (u64::from(hash4(b.hash, u(x), n, u(r), u(b.id))) * u64::from(weight(n))) >> 32;
        let step = 1u32 << (h - 1);
        let l = n - step;
        n = match t < u64::from(weight(l)) {
            true => l,
            false => n.wrapping_add(step),
        };
    }
    b.items.get((n >> 1) as usize).copied().unwrap_or(ITEM_NONE)
}

/// straw2's draw for one item (`generate_exponential_distribution`): the
/// weight goes through a C `int`, so one of 0x80000000 or more divides by
/// a negative number, as Ceph 14 and later do.
fn straw2_draw(hash: u8, x: i32, id: i32, r: i32, weight: u32) -> i64 {
    let h = hash3(hash, u(x), u(id), u(r)) & 0xffff;
    // crush_ln < 2^48: the difference stays within i64.
    let ln = (crush_ln(h) as i64).wrapping_sub(0x1_0000_0000_0000);
    ln.checked_div(i64::from(weight as i32)).unwrap_or(i64::MIN)
}

/// `crush_do_rule` (non-MSR): the items rule `rule` maps input `x` to, at
/// most `result_max`, given the devices' reweights (`weights[device]`,
/// 16.16; a device past the end is out) and the choose_args to use (the
/// pool's, or the compat set: see [`CrushMap::choose_args_for`]).
/// Indep rules leave holes as [`ITEM_NONE`]. A rule that is not there, or
/// one of Squid's MSR rules (types 4 and 5, not mapped here), maps to
/// nothing. The work is bounded by [`WORK_BUDGET`] (the module's
/// documentation says how).
pub fn do_rule(
    map: &CrushMap,
    rule: usize,
    x: i32,
    result_max: usize,
    weights: &[u32],
    choose_args: Option<&ChooseArgs>,
) -> Vec<i32> {
    do_rule_within(map, rule, x, result_max, weights, choose_args, WORK_BUDGET).items
}

/// [`do_rule`] within a budget of `budget` units of work, saying how much
/// it took and whether it ran out.
pub fn do_rule_within(
    map: &CrushMap,
    rule: usize,
    x: i32,
    result_max: usize,
    weights: &[u32],
    choose_args: Option<&ChooseArgs>,
    budget: u64,
) -> Mapped {
    let run = Run {
        map,
        weights,
        choose_args,
        x,
        left: Cell::new(budget),
        spent: Cell::new(0),
        exhausted: Cell::new(false),
    };
    let items = steps(&run, rule, result_max);
    Mapped {
        items,
        work: run.spent.get(),
        exhausted: run.exhausted.get(),
    }
}

/// `crush_do_rule`'s steps.
fn steps(run: &Run<'_>, rule: usize, result_max: usize) -> Vec<i32> {
    let map = run.map;
    let Some(rule) = map.rule(rule) else {
        return Vec::new();
    };
    if rule.rule_type == 4 || rule.rule_type == 5 {
        return Vec::new();
    }
    let rmax = i32::try_from(result_max).unwrap_or(i32::MAX);
    let t = &map.tunables;
    let mut choose_tries = t.choose_total_tries.wrapping_add(1);
    let mut choose_leaf_tries: u32 = 0;
    let mut local_retries = t.choose_local_tries;
    let mut local_fallback_retries = t.choose_local_fallback_tries;
    let mut vary_r = u32::from(t.chooseleaf_vary_r);
    let mut stable = u32::from(t.chooseleaf_stable);
    let mut w: Vec<i32> = vec![0; result_max];
    let mut o: Vec<i32> = vec![0; result_max];
    let mut c: Vec<i32> = vec![0; result_max];
    let mut wsize = 0usize;
    let mut result = Vec::with_capacity(result_max);
    for step in &rule.steps {
        let arg1 = step.arg1;
        match step.op {
            op::TAKE => {
                let device = arg1 >= 0 && arg1 < map.max_devices;
                if device || map.bucket(arg1).is_some() {
                    if let Some(first) = w.first_mut() {
                        *first = arg1;
                        wsize = 1;
                    }
                }
            }
            op::SET_CHOOSE_TRIES if arg1 > 0 => choose_tries = arg1 as u32,
            op::SET_CHOOSELEAF_TRIES if arg1 > 0 => choose_leaf_tries = arg1 as u32,
            op::SET_CHOOSE_LOCAL_TRIES if arg1 >= 0 => local_retries = arg1 as u32,
            op::SET_CHOOSE_LOCAL_FALLBACK_TRIES if arg1 >= 0 => {
                local_fallback_retries = arg1 as u32
            }
            op::SET_CHOOSELEAF_VARY_R if arg1 >= 0 => vary_r = arg1 as u32,
            op::SET_CHOOSELEAF_STABLE if arg1 >= 0 => stable = arg1 as u32,
            op::CHOOSE_FIRSTN | op::CHOOSELEAF_FIRSTN | op::CHOOSE_INDEP | op::CHOOSELEAF_INDEP => {
                if wsize == 0 {
                    continue;
                }
                let firstn = matches!(step.op, op::CHOOSE_FIRSTN | op::CHOOSELEAF_FIRSTN);
                let recurse_to_leaf =
                    matches!(step.op, op::CHOOSELEAF_FIRSTN | op::CHOOSELEAF_INDEP);
                let mut osize = 0usize;
                for i in 0..wsize {
                    let mut numrep = arg1;
                    if numrep <= 0 {
                        numrep = numrep.wrapping_add(rmax);
                        if numrep <= 0 {
                            continue;
                        }
                    }
                    let Some(bucket) = w.get(i).and_then(|&id| run.bucket(id)) else {
                        continue;
                    };
                    let room = result_max.saturating_sub(osize);
                    let (Some(out), Some(out2)) = (o.get_mut(osize..), c.get_mut(osize..)) else {
                        continue;
                    };
                    if firstn {
                        let recurse_tries = match (choose_leaf_tries, t.chooseleaf_descend_once) {
                            (n, _) if n != 0 => n,
                            (_, 0) => choose_tries,
                            _ => 1,
                        };
                        let p = Firstn {
                            tries: choose_tries,
                            recurse_tries,
                            local_retries,
                            local_fallback_retries,
                            recurse_to_leaf,
                            vary_r,
                            stable,
                        };
                        let room = i32::try_from(room).unwrap_or(i32::MAX);
                        osize = osize.saturating_add(run.choose_firstn(
                            bucket,
                            numrep,
                            step.arg2,
                            out,
                            0,
                            room,
                            p,
                            Some(out2),
                            0,
                        ));
                    } else {
                        let out_size = usize::try_from(numrep).unwrap_or(0).min(room);
                        run.choose_indep(
                            bucket,
                            i32::try_from(out_size).unwrap_or(i32::MAX),
                            numrep,
                            step.arg2,
                            out,
                            0,
                            choose_tries,
                            if choose_leaf_tries != 0 {
                                choose_leaf_tries
                            } else {
                                1
                            },
                            recurse_to_leaf,
                            Some(out2),
                            0,
                        );
                        osize = osize.saturating_add(out_size);
                    }
                }
                if recurse_to_leaf {
                    if let (Some(dst), Some(src)) = (o.get_mut(..osize), c.get(..osize)) {
                        dst.copy_from_slice(src);
                    }
                }
                std::mem::swap(&mut o, &mut w);
                wsize = osize;
            }
            op::EMIT => {
                for &item in w.iter().take(wsize) {
                    if result.len() >= result_max {
                        break;
                    }
                    result.push(item);
                }
                wsize = 0;
            }
            _ => {}
        }
    }
    result
}

impl CrushMap {
    /// The choose_args a pool's mappings use: its own set, else the compat
    /// set (`choose_args_get_with_fallback`), else none.
    pub fn choose_args_for(&self, pool: i64) -> Option<&ChooseArgs> {
        self.choose_args
            .get(&pool)
            .or_else(|| self.choose_args.get(&crate::map::DEFAULT_CHOOSE_ARGS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::map::{Rule, Step, Tunables};

    /// Two buckets that hold each other, and a rule looking for a type
    /// neither has: C would descend for ever.
    #[test]
    fn a_cycle_of_buckets_ends() {
        let bucket = |id: i32, other: i32| Bucket {
            id,
            type_id: 1,
            hash: 0,
            weight: 0x20000,
            items: vec![other, 0],
            choose: Choose::Straw2 {
                item_weights: vec![0x10000, 0],
            },
        };
        let rule = |choose: u32| Rule {
            ruleset: 0,
            rule_type: 1,
            min_size: 1,
            max_size: 10,
            steps: vec![
                Step {
                    op: op::TAKE,
                    arg1: -1,
                    arg2: 0,
                },
                Step {
                    op: choose,
                    arg1: 2,
                    arg2: 2,
                },
                Step {
                    op: op::EMIT,
                    arg1: 0,
                    arg2: 0,
                },
            ],
        };
        let map = CrushMap {
            buckets: vec![Some(bucket(-1, -2)), Some(bucket(-2, -1))],
            rules: vec![Some(rule(op::CHOOSE_FIRSTN)), Some(rule(op::CHOOSE_INDEP))],
            max_devices: 1,
            type_names: Default::default(),
            names: Default::default(),
            rule_names: Default::default(),
            tunables: Tunables::LEGACY,
            class_of: Default::default(),
            class_names: Default::default(),
            class_buckets: Default::default(),
            choose_args: Default::default(),
        };
        assert_eq!(
            do_rule(&map, 0, 7, 3, &[WEIGHT_IN], None),
            Vec::<i32>::new()
        );
        assert_eq!(
            do_rule(&map, 1, 7, 3, &[WEIGHT_IN], None),
            vec![ITEM_NONE; 2]
        );
    }

    fn step(op: u32, arg1: i32, arg2: i32) -> Step {
        Step { op, arg1, arg2 }
    }

    fn straw2(id: i32, type_id: u16, items: Vec<i32>, weights: Vec<u32>) -> Bucket {
        Bucket {
            id,
            type_id,
            hash: 0,
            weight: weights.iter().fold(0u32, |a, w| a.wrapping_add(*w)),
            items,
            choose: Choose::Straw2 {
                item_weights: weights,
            },
        }
    }

    /// One rule per entry, each with these steps.
    /// Two rules from bucket -1: `ops.0` (firstn) and `ops.1` (indep),
    /// each with `n` and `type_id`, then EMIT.
    fn firstn_and_indep(ops: (u32, u32), n: i32, type_id: i32) -> Vec<Vec<Step>> {
        [ops.0, ops.1]
            .into_iter()
            .map(|o| {
                vec![
                    step(op::TAKE, -1, 0),
                    step(o, n, type_id),
                    step(op::EMIT, 0, 0),
                ]
            })
            .collect()
    }

    fn map_of(buckets: Vec<Bucket>, rules: Vec<Vec<Step>>, max_devices: i32) -> CrushMap {
        let rules = rules
            .into_iter()
            .map(|steps| {
                Some(Rule {
                    ruleset: 0,
                    rule_type: 1,
                    min_size: 1,
                    max_size: 20,
                    steps,
                })
            })
            .collect();
        CrushMap {
            buckets: buckets.into_iter().map(Some).collect(),
            rules,
            max_devices,
            ..CrushMap::default()
        }
    }

    /// A valid mapping: at most `max` items, each a device of the map or
    /// a hole.
    fn assert_valid(items: &[i32], max: usize, max_devices: i32) {
        assert!(items.len() <= max, "{items:?}");
        for &i in items {
            assert!(i == ITEM_NONE || (0..max_devices).contains(&i), "{i}");
        }
    }

    /// A peer's map of 128 KiB: one straw2 bucket of 16384 devices, every
    /// one out, legacy tunables (local fallback tries: each failed draw
    /// is retried in the bucket as many times as it has items, each retry
    /// a draw over all of them). Unbounded, one mapping takes tens of
    /// seconds; the budget ends it, with a valid (empty) mapping.
    #[test]
    fn a_huge_bucket_with_fallback_tries_ends_within_the_budget() {
        const N: i32 = 16384;
        let map = map_of(
            vec![straw2(-1, 1, (0..N).collect(), vec![0x10000; N as usize])],
            firstn_and_indep((op::CHOOSE_FIRSTN, op::CHOOSE_INDEP), 3, 0),
            N,
        );
        assert_eq!(map.tunables, Tunables::LEGACY);
        let map = std::sync::Arc::new(map);
        // Every device out: no draw is ever accepted.
        let out = vec![0u32; N as usize];
        let (tx, rx) = std::sync::mpsc::channel();
        let m = map.clone();
        std::thread::spawn(move || {
            let _ = tx.send((
                do_rule(&m, 0, 1, 3, &out, None),
                do_rule(&m, 1, 1, 3, &out, None),
            ));
        });
        let (firstn, indep) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("two mappings of a hostile map end within 10 s");
        assert_valid(&firstn, 3, N);
        assert_valid(&indep, 3, N);
        assert_eq!(firstn, Vec::<i32>::new());
        assert_eq!(indep, vec![ITEM_NONE; 3]);
        let m = do_rule_within(&map, 0, 1, 3, &[0; N as usize], None, WORK_BUDGET);
        assert!(m.exhausted);
        assert!(m.work <= WORK_BUDGET);
    }

    /// Spent midway, a mapping keeps what it found: a firstn result is
    /// shorter, an indep one has holes, and neither names anything but
    /// devices.
    #[test]
    fn a_spent_budget_ends_the_mapping_with_what_it_found() {
        // 4 hosts of 4 devices, all in.
        let mut buckets = vec![straw2(-1, 2, (-5..=-2).rev().collect(), vec![0x40000; 4])];
        for h in 0..4 {
            let devices: Vec<i32> = (h * 4..h * 4 + 4).collect();
            buckets.push(straw2(-2 - h, 1, devices, vec![0x10000; 4]));
        }
        let map = map_of(
            buckets,
            firstn_and_indep((op::CHOOSELEAF_FIRSTN, op::CHOOSELEAF_INDEP), 0, 1),
            16,
        );
        let weights = vec![WEIGHT_IN; 16];
        for rule in 0..2 {
            for x in 0..50 {
                let whole = do_rule_within(&map, rule, x, 4, &weights, None, u64::MAX);
                assert!(!whole.exhausted);
                assert_eq!(whole.items, do_rule(&map, rule, x, 4, &weights, None));
                // Every smaller budget: a prefix of the mapping (firstn)
                // or the mapping with holes (indep).
                for budget in 0..whole.work {
                    let part = do_rule_within(&map, rule, x, 4, &weights, None, budget);
                    assert!(part.exhausted, "budget {budget} of {}", whole.work);
                    assert!(part.work <= budget);
                    assert_valid(&part.items, 4, 16);
                    if rule == 0 {
                        assert!(whole.items.starts_with(&part.items), "{part:?} {whole:?}");
                    } else {
                        assert_eq!(part.items.len(), 4);
                        for (p, w) in part.items.iter().zip(&whole.items) {
                            assert!(*p == ITEM_NONE || p == w, "{part:?} {whole:?}");
                        }
                    }
                }
            }
        }
    }

    /// A large cluster as Ceph lays it out (10,000 OSDs, 20 under each of
    /// 500 hosts, straw2, Jewel's tunables) with a third of its OSDs out:
    /// replicated and 8+3 EC rules map as they do without a budget, and
    /// spend a small part of it.
    #[test]
    fn a_large_real_map_is_far_within_the_budget() {
        const HOSTS: i32 = 500;
        const PER: i32 = 20;
        let mut buckets = vec![straw2(
            -1,
            10,
            (0..HOSTS).map(|h| -2 - h).collect(),
            vec![0x10000 * PER as u32; HOSTS as usize],
        )];
        for h in 0..HOSTS {
            buckets.push(straw2(
                -2 - h,
                1,
                (h * PER..h * PER + PER).collect(),
                vec![0x10000; PER as usize],
            ));
        }
        let mut map = map_of(
            buckets,
            vec![
                vec![
                    step(op::TAKE, -1, 0),
                    step(op::CHOOSELEAF_FIRSTN, 0, 1),
                    step(op::EMIT, 0, 0),
                ],
                vec![
                    step(op::SET_CHOOSELEAF_TRIES, 5, 0),
                    step(op::SET_CHOOSE_TRIES, 100, 0),
                    step(op::TAKE, -1, 0),
                    step(op::CHOOSELEAF_INDEP, 0, 1),
                    step(op::EMIT, 0, 0),
                ],
            ],
            HOSTS * PER,
        );
        map.tunables = Tunables {
            choose_local_tries: 0,
            choose_local_fallback_tries: 0,
            choose_total_tries: 50,
            chooseleaf_descend_once: 1,
            chooseleaf_vary_r: 1,
            chooseleaf_stable: 1,
            straw_calc_version: 1,
            allowed_bucket_algs: 54,
            ..Tunables::LEGACY
        };
        let weights: Vec<u32> = (0..HOSTS * PER)
            .map(|d| if d % 3 == 0 { 0 } else { WEIGHT_IN })
            .collect();
        let mut most = 0;
        for (rule, size) in [(0, 3), (1, 11)] {
            for x in 0..200 {
                let m = do_rule_within(&map, rule, x, size, &weights, None, u64::MAX);
                assert_eq!(m.items, do_rule(&map, rule, x, size, &weights, None));
                assert_eq!(m.items.len(), size);
                most = most.max(m.work);
            }
        }
        assert!(most * 100 < WORK_BUDGET, "{most} of {WORK_BUDGET}");
    }

    #[test]
    fn a_straw2_draw_as_ceph_computes_it() {
        // docs/research/crush-mapper.md §15.
        assert_eq!(straw2_draw(0, 1, 0, 0, 0x10000), -321894610);
    }
}
