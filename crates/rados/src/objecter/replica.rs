//! `_calc_target`'s choice of OSD for a read that may go to a replica
//! (src/osdc/Objecter.cc): only reads with BALANCE_READS or
//! LOCALIZE_READS, in a replicated pool, with more than one acting OSD.

use msgr_osdmap::OsdMap;

use crate::request::flag;

/// What decides where a read goes.
pub(super) struct ReadFrom<'a> {
    pub writes: bool,
    pub flags: u32,
    pub tid: u64,
    /// The client's CRUSH location: (type, bucket name) pairs.
    pub location: &'a [(String, String)],
}

impl ReadFrom<'_> {
    /// The target with the OSD the read goes to: with BALANCE_READS a
    /// member of the acting set at random (here a hash of the tid and the
    /// object's, so placing again picks the same: the objecter reads no
    /// randomness); with LOCALIZE_READS the acting OSD sharing the
    /// lowest CRUSH ancestor with the client's location, the primary on
    /// a tie or when none shares one (no location: the primary). Writes
    /// and other reads stay with the primary. `pool`, the object's
    /// `hash`, the PG's `primary` and `acting` set are the target's; the
    /// answer is the OSD to send to.
    pub fn choose(&self, map: &OsdMap, pool: i64, hash: u32, primary: i32, acting: &[i32]) -> i32 {
        let replicated = map.pools.get(&pool).is_some_and(|p| !p.is_erasure());
        let wanted = self.flags & (flag::BALANCE_READS | flag::LOCALIZE_READS);
        if self.writes || !replicated || acting.len() < 2 || wanted == 0 {
            return primary;
        }
        let at = if self.flags & flag::BALANCE_READS != 0 {
            // splitmix64 of the tid and the object's hash.
            let mut z = self.tid ^ (u64::from(hash) << 32);
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            z.checked_rem(acting.len() as u64).unwrap_or(0) as usize
        } else {
            closest(map, primary, acting, self.location)
        };
        match acting.get(at) {
            Some(&osd) if osd >= 0 && map.is_up(osd) => osd,
            _ => primary,
        }
    }
}

/// The position in `acting` of the OSD closest to `location`, as
/// `_calc_target` picks it: the primary (Ceph's rank 0), unless another
/// has a known locality lower than the best so far (or the best so far
/// has none).
fn closest(map: &OsdMap, primary: i32, acting: &[i32], location: &[(String, String)]) -> usize {
    let first = acting.iter().position(|&o| o == primary).unwrap_or(0);
    let order = std::iter::once(first).chain((0..acting.len()).filter(|&i| i != first));
    let mut best = first;
    let mut best_locality: Option<i32> = None;
    for (rank, i) in order.enumerate() {
        let Some(&osd) = acting.get(i) else {
            continue;
        };
        let locality = common_ancestor_distance(map, osd, location);
        let better = match (locality, best_locality) {
            _ if rank == 0 => true,
            (Some(l), Some(b)) => l < b,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if better {
            best = i;
            best_locality = locality;
        }
    }
    best
}

/// `CrushWrapper::get_common_ancestor_distance`: the type id of the
/// lowest bucket type at which `osd`'s location and `location` name the
/// same bucket; `None` if none does (or the item is unknown).
pub(super) fn common_ancestor_distance(
    map: &OsdMap,
    osd: i32,
    location: &[(String, String)],
) -> Option<i32> {
    let crush = &map.crush;
    let full = full_location(map, osd)?;
    crush.type_names.iter().find_map(|(type_id, type_name)| {
        let bucket = full.iter().find(|(t, _)| t == type_name)?;
        location
            .iter()
            .any(|(t, name)| t == type_name && *name == bucket.1)
            .then_some(*type_id)
    })
}

/// `get_full_location`: (type name, bucket name) of each ancestor of
/// `item`, the first (non-shadow) bucket holding it, then that one's, up
/// to a root. Bounded by the number of buckets (a cycle cannot loop).
fn full_location(map: &OsdMap, item: i32) -> Option<Vec<(String, String)>> {
    let crush = &map.crush;
    let exists = item >= 0 && item < crush.max_devices || crush.bucket(item).is_some();
    if !exists {
        return None;
    }
    let mut out = Vec::new();
    let mut at = item;
    for _ in 0..crush.buckets.len() {
        let parent = crush.buckets.iter().flatten().find(|b| {
            b.items.contains(&at) && !crush.names.get(&b.id).is_some_and(|n| n.contains('~'))
        });
        let Some(parent) = parent else {
            break;
        };
        let type_name = crush.type_names.get(&i32::from(parent.type_id));
        let name = crush.names.get(&parent.id);
        if let (Some(t), Some(n)) = (type_name, name) {
            out.push((t.clone(), n.clone()));
        }
        at = parent.id;
    }
    Some(out)
}
