//! Where an object lives: object → raw pg → PG → CRUSH → up set, after
//! upmaps and primary affinity → acting set, after temps
//! (`OSDMap::_pg_to_up_acting_osds` and the steps it calls):
//! docs/research/osdmap.md §6.

use msgr_crush::{do_rule, ITEM_NONE};
use msgr_messages::osd_types::PgId;

use crate::map::{OsdMap, DEFAULT_PRIMARY_AFFINITY};
use crate::pool::Pool;

/// A PG's OSDs. `-1` is no primary; EC sets keep [`ITEM_NONE`] holes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpActing {
    /// The OSDs CRUSH and the upmaps choose (the up set).
    pub up: Vec<i32>,
    /// The up set's primary.
    pub up_primary: i32,
    /// The OSDs serving the PG now: the up set, unless pg_temp overrides it.
    pub acting: Vec<i32>,
    /// The acting set's primary, where a client sends its ops.
    pub acting_primary: i32,
}

/// An object's place: its raw pg (the full hash), the PG it falls in, and
/// that PG's OSDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The object's raw PG: its pool and full hash.
    pub raw_pg: PgId,
    /// The PG it falls in (the hash folded to the pool's pg_num).
    pub pg: PgId,
    /// That PG's OSDs.
    pub osds: UpActing,
}

/// `_pick_primary`: the first OSD that is not a hole.
fn pick_primary(osds: &[i32]) -> i32 {
    osds.iter().copied().find(|&o| o != ITEM_NONE).unwrap_or(-1)
}

impl OsdMap {
    /// `object_locator_to_pg`: the raw pg of object `name` (or of locator
    /// `key` when not empty) in `nspace` of pool `pool`.
    pub fn object_to_raw_pg(
        &self,
        pool: i64,
        name: &[u8],
        key: &[u8],
        nspace: &[u8],
    ) -> Option<PgId> {
        let p = self.pools.get(&pool)?;
        let hashed = if key.is_empty() { name } else { key };
        Some(PgId {
            pool: pool as u64,
            seed: p.hash_key(hashed, nspace),
        })
    }

    /// Where object `name` in `nspace` of pool `pool` is: `ceph osd map`.
    pub fn place(&self, pool: i64, name: &[u8], nspace: &[u8]) -> Option<Placement> {
        let raw_pg = self.object_to_raw_pg(pool, name, &[], nspace)?;
        let pg = self.pools.get(&pool)?.raw_pg_to_pg(raw_pg);
        Some(Placement {
            raw_pg,
            pg,
            osds: self.pg_to_up_acting(pg)?,
        })
    }

    /// `pg_to_up_acting_osds` of a PG (or raw pg: it is reduced first).
    pub fn pg_to_up_acting(&self, pg: PgId) -> Option<UpActing> {
        let pool = self.pools.get(&i64::try_from(pg.pool).ok()?)?;
        let pg = pool.raw_pg_to_pg(pg);
        let (temp, temp_primary) = self.temp_osds(pool, pg);
        let (mut raw, pps) = self.pg_to_raw_osds(pool, pg);
        self.apply_upmap(pool, pg, &mut raw);
        let mut up = self.raw_to_up(pool, raw);
        let mut up_primary = pick_primary(&up);
        self.apply_primary_affinity(pps, pool, &mut up, &mut up_primary);
        let (acting, acting_primary) = if temp.is_empty() {
            let primary = if temp_primary == -1 {
                up_primary
            } else {
                temp_primary
            };
            (up.clone(), primary)
        } else {
            (temp, temp_primary)
        };
        Some(UpActing {
            up,
            up_primary,
            acting,
            acting_primary,
        })
    }

    /// `_pg_to_raw_osds`: CRUSH's answer for the PG, without OSDs that do
    /// not exist, and the placement seed it was given. The rule is the
    /// pool's `crush_rule` (Ceph 17 on; Ceph 16 looked it up by ruleset,
    /// type and size, which names the same rule for every pool its
    /// monitors make).
    fn pg_to_raw_osds(&self, pool: &Pool, pg: PgId) -> (Vec<i32>, u32) {
        let pps = pool.raw_pg_to_pps(pg);
        let args = self.crush.choose_args_for(pg.pool as i64);
        let mut raw = do_rule(
            &self.crush,
            usize::from(pool.crush_rule),
            pps as i32,
            usize::from(pool.size),
            &self.osd_weight,
            args,
        );
        if pool.can_shift_osds() {
            raw.retain(|&o| self.exists(o));
        } else {
            for o in &mut raw {
                if !self.exists(*o) {
                    *o = ITEM_NONE;
                }
            }
        }
        (raw, pps)
    }

    /// An OSD an upmap may not send data to: one that is out.
    fn marked_out(&self, osd: i32) -> bool {
        osd != ITEM_NONE && osd >= 0 && osd < self.max_osd && self.weight(osd) == 0
    }

    /// `_apply_upmap`: an explicit mapping (unless it names an OSD that
    /// is out), then item swaps in order, then Ceph 18's primary choice.
    fn apply_upmap(&self, _pool: &Pool, pg: PgId, raw: &mut Vec<i32>) {
        if let Some(explicit) = self.pg_upmap.get(&pg) {
            if !explicit.iter().any(|&o| self.marked_out(o)) {
                raw.clone_from(explicit);
            }
        }
        for &(from, to) in self.pg_upmap_items.get(&pg).into_iter().flatten() {
            if raw.contains(&to) {
                continue;
            }
            let pos = raw.iter().position(|&o| o == from);
            if let Some(slot) = pos.and_then(|i| raw.get_mut(i)) {
                if !self.marked_out(to) {
                    *slot = to;
                }
            }
        }
        if let Some(&p) = self.pg_upmap_primaries.get(&pg) {
            let usable = p != ITEM_NONE && p >= 0 && p < self.max_osd && self.weight(p) != 0;
            let idx = raw.iter().skip(1).position(|&o| o == p);
            if let (true, Some(i)) = (usable, idx) {
                raw.swap(0, i.saturating_add(1));
            }
        }
    }

    /// `_raw_to_up_osds`: without the OSDs that are down (closed up in a
    /// replicated pool, holes in an EC one).
    fn raw_to_up(&self, pool: &Pool, raw: Vec<i32>) -> Vec<i32> {
        if pool.can_shift_osds() {
            raw.into_iter().filter(|&o| self.is_up(o)).collect()
        } else {
            raw.into_iter()
                .map(|o| if self.is_up(o) { o } else { ITEM_NONE })
                .collect()
        }
    }

    /// `_apply_primary_affinity`: an OSD of affinity `a` stays primary
    /// with probability `a / 0x10000` (by the PG's hash); a replicated
    /// pool moves the chosen one to the front.
    fn apply_primary_affinity(&self, pps: u32, pool: &Pool, up: &mut Vec<i32>, primary: &mut i32) {
        let Some(affinity) = &self.primary_affinity else {
            return;
        };
        let of = |o: i32| {
            usize::try_from(o)
                .ok()
                .and_then(|i| affinity.get(i))
                .copied()
                .unwrap_or(DEFAULT_PRIMARY_AFFINITY)
        };
        if !up
            .iter()
            .any(|&o| o != ITEM_NONE && of(o) != DEFAULT_PRIMARY_AFFINITY)
        {
            return;
        }
        let mut pos = None;
        for (i, &o) in up.iter().enumerate() {
            if o == ITEM_NONE {
                continue;
            }
            let a = of(o);
            if a < DEFAULT_PRIMARY_AFFINITY && msgr_crush::hash2(0, pps, o as u32) >> 16 >= a {
                // Passed over, but the first such is the fallback.
                pos.get_or_insert(i);
            } else {
                pos = Some(i);
                break;
            }
        }
        let Some(pos) = pos else {
            return;
        };
        *primary = up.get(pos).copied().unwrap_or(-1);
        if pool.can_shift_osds() && pos > 0 {
            up.remove(pos);
            up.insert(0, *primary);
        }
    }

    /// `_get_temp_osds`: the PG's pg_temp (without OSDs that are down) and
    /// primary_temp. Ceph 20's EC-optimized pools keep pg_temp primary
    /// shards first; it is put back in shard order here. One of another
    /// length than the pool's size (which Ceph asserts against) is passed
    /// over.
    fn temp_osds(&self, pool: &Pool, pg: PgId) -> (Vec<i32>, i32) {
        let mut temp = Vec::new();
        let mut first_up = None;
        if let Some(stored) = self.pg_temp.get(&pg) {
            let order = pool.primaryfirst_order();
            let usable = order.as_ref().is_none_or(|o| o.len() == stored.len());
            if usable {
                let mut shards = vec![ITEM_NONE; stored.len()];
                for (i, &o) in stored.iter().enumerate() {
                    let up = self.is_up(o);
                    if up && first_up.is_none() {
                        first_up = Some(o);
                    }
                    let o = if up { o } else { ITEM_NONE };
                    let shard = order
                        .as_ref()
                        .and_then(|ord| ord.get(i))
                        .copied()
                        .unwrap_or(i);
                    if let Some(slot) = shards.get_mut(shard) {
                        *slot = o;
                    }
                }
                temp = if pool.can_shift_osds() {
                    shards.into_iter().filter(|&o| o != ITEM_NONE).collect()
                } else {
                    shards
                };
            }
        }
        let primary = match self.primary_temp.get(&pg) {
            Some(&p) => p,
            None if !temp.is_empty() => first_up.unwrap_or(-1),
            None => -1,
        };
        (temp, primary)
    }
}

/// `pg_vector_string`: `[2,0,1]`, with `NONE` for a hole.
fn osd_list(osds: &[i32]) -> String {
    let items: Vec<String> = osds
        .iter()
        .map(|&o| {
            if o == ITEM_NONE {
                "NONE".to_string()
            } else {
                o.to_string()
            }
        })
        .collect();
    format!("[{}]", items.join(","))
}

impl Placement {
    /// The line `ceph osd map POOL OBJ [NSPACE]` prints, without its
    /// newline: `osdmap e16 pool 'test' (1) object 'obj' -> pg 1.aabc5e21
    /// (1.1) -> up ([2,0,1], p2) acting ([2,0,1], p2)`.
    pub fn ceph_line(&self, epoch: u32, pool: &str, name: &str, nspace: &str) -> String {
        let object = if nspace.is_empty() {
            name.to_string()
        } else {
            format!("{nspace}/{name}")
        };
        let o = &self.osds;
        format!(
            "osdmap e{epoch} pool '{pool}' ({}) object '{object}' -> pg {} ({}) -> up ({}, p{}) acting ({}, p{})",
            self.pg.pool,
            self.raw_pg,
            self.pg,
            osd_list(&o.up),
            o.up_primary,
            osd_list(&o.acting),
            o.acting_primary
        )
    }
}
