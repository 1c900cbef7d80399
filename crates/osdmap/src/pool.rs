//! `pg_pool_t` (src/osd/osd_types.cc `pg_pool_t::decode`), as Ceph 16
//! (v29, v30 for stretch pools) and Ceph 20 (v32 to a peer with
//! SERVER_TENTACLE, v29 to others) encode it: docs/research/osdmap.md §4.
//! The fields a client acts on are kept; the rest are read past.

use std::collections::BTreeMap;

use msgr_encoding::{decode_versioned, Decode, DecodeError, DecodeResult, Decoder, UTime};
use msgr_messages::osd_types::PgId;

use crate::hash::{stable_mod, str_hash};

/// The newest `pg_pool_t` this decoder reads (Ceph 20's).
const POOL_VERSION: u8 = 32;

/// `pg_pool_t::TYPE_*`.
pub const TYPE_REPLICATED: u8 = 1;
/// `TYPE_ERASURE`: an erasure-coded pool.
pub const TYPE_ERASURE: u8 = 3;

/// `pg_pool_t::FLAG_*` a client looks at.
pub mod flag {
    /// `FLAG_HASHPSPOOL`: the PG seed is hashed with the pool id.
    pub const HASHPSPOOL: u64 = 1 << 0;
    /// `FLAG_FULL`: the pool is full; writes wait.
    pub const FULL: u64 = 1 << 1;
    /// `FLAG_FULL_QUOTA`: the pool reached its quota; writes wait.
    pub const FULL_QUOTA: u64 = 1 << 10;
    /// `FLAG_SELFMANAGED_SNAPS`: the pool uses self-managed snapshots.
    pub const SELFMANAGED_SNAPS: u64 = 1 << 13;
    /// `FLAG_POOL_SNAPS`: the pool has pool snapshots.
    pub const POOL_SNAPS: u64 = 1 << 14;
    /// `FLAG_EC_OVERWRITES`: an EC pool that takes partial overwrites.
    pub const EC_OVERWRITES: u64 = 1 << 12;
    /// `FLAG_EC_OPTIMIZATIONS`: an EC pool with Ceph 20's optimizations (some shards never
    /// primary).
    pub const EC_OPTIMIZATIONS: u64 = 1 << 19;
}

/// A pool, as the OSDMap describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// [`TYPE_REPLICATED`] or [`TYPE_ERASURE`].
    pub pool_type: u8,
    /// How many copies (or shards) each object has.
    pub size: u8,
    /// How many must be up for the PG to take I/O.
    pub min_size: u8,
    /// The CRUSH rule placing its PGs.
    pub crush_rule: u8,
    /// How object names hash ([`crate::hash::STR_HASH_RJENKINS`]).
    pub object_hash: u8,
    /// Its number of PGs.
    pub pg_num: u32,
    /// The number of PGs placement uses (seeds for CRUSH).
    pub pgp_num: u32,
    /// The mask `pg_num` implies (`calc_pg_masks`).
    pub pg_num_mask: u32,
    /// The mask `pgp_num` implies.
    pub pgp_num_mask: u32,
    /// While PGs merge, the pg_num they are going to.
    pub pg_num_pending: u32,
    /// The epoch the pool last changed in.
    pub last_change: u32,
    /// `FLAG_*` ([`flag`]).
    pub flags: u64,
    /// The pool's snapshot sequence.
    pub snap_seq: u64,
    /// Pool snapshots: id → name.
    pub snaps: BTreeMap<u64, String>,
    /// When each pool snapshot was taken (`pool_snap_info_t::stamp`).
    pub snap_stamps: BTreeMap<u64, UTime>,
    /// The base pool this pool is a cache tier of (−1: none).
    pub tier_of: i64,
    /// The cache tier reads and writes go to instead (−1: none).
    pub read_tier: i64,
    /// The cache tier writes go to instead (−1: none).
    pub write_tier: i64,
    /// EC pools: the bytes of one stripe.
    pub stripe_width: u32,
    /// EC pools: the profile's name.
    pub erasure_code_profile: String,
    /// Ops sent before this epoch are resent (`last_force_op_resend`).
    pub last_force_op_resend: u32,
    /// Ceph 20 EC-optimized pools: shards that are never primary, a bit
    /// per shard (`shard_id_set`, 128 bits).
    pub nonprimary_shards: u128,
    /// Per application (`rbd`, `cephfs`, `rgw`, ...), its key/value metadata.
    pub application_metadata: BTreeMap<String, BTreeMap<String, String>>,
}

/// `cbits(v) `: the bits needed to hold `v`.
fn cbits(v: u32) -> u32 {
    u32::BITS.saturating_sub(v.leading_zeros())
}

/// `calc_pg_masks`' mask for `n` PGs: all ones up to `n - 1`'s top bit.
fn pg_mask(n: u32) -> u32 {
    let bits = cbits(n.saturating_sub(1));
    1u32.checked_shl(bits)
        .map_or(u32::MAX, |b| b.wrapping_sub(1))
}

impl Pool {
    /// `can_shift_osds`: a replicated pool's acting set may close up its
    /// holes; an EC pool's positions are its shards.
    pub fn can_shift_osds(&self) -> bool {
        self.pool_type == TYPE_REPLICATED
    }

    /// Whether the pool is erasure-coded.
    pub fn is_erasure(&self) -> bool {
        self.pool_type == TYPE_ERASURE
    }

    /// `requires_aligned_append`: an EC pool without overwrites takes
    /// appends only at a multiple of [`Pool::required_alignment`] (and no
    /// partial overwrites).
    pub fn requires_aligned_append(&self) -> bool {
        self.is_erasure() && self.flags & flag::EC_OVERWRITES == 0
    }

    /// `required_alignment`: the stripe width, what appends to such a pool
    /// are multiples of.
    pub fn required_alignment(&self) -> u64 {
        u64::from(self.stripe_width)
    }

    /// `hash_key(key, ns)`: the raw pg seed of an object name (or locator
    /// key) in a namespace (`ns \x1f key`).
    pub fn hash_key(&self, key: &[u8], nspace: &[u8]) -> u32 {
        if nspace.is_empty() {
            return str_hash(self.object_hash, key);
        }
        let mut joined =
            Vec::with_capacity(nspace.len().saturating_add(key.len()).saturating_add(1));
        joined.extend_from_slice(nspace);
        joined.push(0x1f);
        joined.extend_from_slice(key);
        str_hash(self.object_hash, &joined)
    }

    /// `raw_pg_to_pg`: the PG a raw pg (a full 32-bit hash) falls in.
    pub fn raw_pg_to_pg(&self, pg: PgId) -> PgId {
        PgId {
            pool: pg.pool,
            seed: stable_mod(pg.seed, self.pg_num, self.pg_num_mask),
        }
    }

    /// `raw_pg_to_pps`: the placement seed CRUSH is given.
    pub fn raw_pg_to_pps(&self, pg: PgId) -> u32 {
        let ps = stable_mod(pg.seed, self.pgp_num, self.pgp_num_mask);
        // The pool id goes in as a u32, as Ceph casts it.
        let pool = pg.pool as u32;
        if self.flags & flag::HASHPSPOOL != 0 {
            msgr_crush::hash2(0, ps, pool)
        } else {
            ps.wrapping_add(pool)
        }
    }

    /// The shard order of pg_temp vectors in Ceph 20's EC-optimized pools
    /// (`pgtemp_primaryfirst`): shards that may be primary first, then the
    /// others, each ascending. `None` for any other pool.
    pub fn primaryfirst_order(&self) -> Option<Vec<usize>> {
        if !self.is_erasure() || self.flags & flag::EC_OPTIMIZATIONS == 0 {
            return None;
        }
        let nonprimary = |s: usize| s < 128 && self.nonprimary_shards >> s & 1 == 1;
        let size = usize::from(self.size);
        let first = (0..size).filter(|&s| !nonprimary(s));
        Some(first.chain((0..size).filter(|&s| nonprimary(s))).collect())
    }
}

/// `snap_interval_set_t`, read past.
fn skip_interval_set(d: &mut Decoder<'_>) -> DecodeResult<()> {
    let n = d.length("interval_set", 16)?;
    d.skip(n.saturating_mul(16), "interval_set")
}

/// A `ENCODE_START` section read past whole.
fn skip_versioned(d: &mut Decoder<'_>, what: &'static str) -> DecodeResult<()> {
    decode_versioned(d, what, u8::MAX, |_, _| Ok(()))
}

/// `pool_opts_t`: checked for shape, not kept.
fn skip_pool_opts(d: &mut Decoder<'_>) -> DecodeResult<()> {
    decode_versioned(d, "pool_opts_t", 2, |d, v| {
        let n = d.length("pool_opts_t", 8)?;
        for _ in 0..n {
            let _key = d.u32("pool_opts_t key")?;
            match d.u32("pool_opts_t type")? {
                0 => drop(String::decode(d)?),
                1 if v >= 2 => d.skip(8, "pool_opts_t int")?,
                1 => d.skip(4, "pool_opts_t int")?,
                2 => d.skip(8, "pool_opts_t double")?,
                t => {
                    return Err(DecodeError::InvalidValue {
                        what: "pool_opts_t value type",
                        value: u64::from(t),
                    })
                }
            }
        }
        Ok(())
    })
}

/// `denc_varint` of a u64 (7 bits a byte, low groups first).
fn varint(d: &mut Decoder<'_>) -> DecodeResult<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = d.u8("varint")?;
        v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError::InvalidValue {
        what: "varint longer than 64 bits",
        value: v,
    })
}

impl Decode for Pool {
    const MIN_ENCODED_LEN: usize = 6;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Pool> {
        decode_versioned(d, "pg_pool_t", POOL_VERSION, decode_pool)
    }
}

fn decode_pool(d: &mut Decoder<'_>, v: u8) -> DecodeResult<Pool> {
    if v < 5 {
        return Err(DecodeError::VersionTooOld {
            what: "pg_pool_t",
            version: v,
            oldest: 5,
        });
    }
    let pool_type = d.u8("pool type")?;
    let size = d.u8("pool size")?;
    let crush_rule = d.u8("pool crush_rule")?;
    let object_hash = d.u8("pool object_hash")?;
    let pg_num = d.u32("pool pg_num")?;
    let pgp_num = d.u32("pool pgp_num")?;
    d.skip(8, "pool lpg_num, lpgp_num")?;
    let last_change = d.u32("pool last_change")?;
    let snap_seq = d.u64("pool snap_seq")?;
    let _snap_epoch = d.u32("pool snap_epoch")?;
    let (snaps, snap_stamps) = decode_snaps(d)?;
    skip_interval_set(d)?; // removed_snaps
    let _auid = d.u64("pool auid")?;
    let flags = d.u64("pool flags")?;
    let _crash_replay_interval = d.u32("pool crash_replay_interval")?;
    let min_size = if v >= 7 {
        d.u8("pool min_size")?
    } else {
        size.saturating_sub(size / 2)
    };
    let mut p = Pool {
        pool_type,
        size,
        min_size,
        crush_rule,
        object_hash,
        pg_num,
        pgp_num,
        pg_num_mask: pg_mask(pg_num),
        pgp_num_mask: pg_mask(pgp_num),
        pg_num_pending: pg_num,
        last_change,
        flags,
        snap_seq,
        snaps,
        snap_stamps,
        tier_of: -1,
        read_tier: -1,
        write_tier: -1,
        stripe_width: 0,
        erasure_code_profile: String::new(),
        last_force_op_resend: 0,
        nonprimary_shards: 0,
        application_metadata: BTreeMap::new(),
    };
    decode_tail(d, v, &mut p)?;
    Ok(p)
}

/// Pool snapshots' names and stamps, by id.
type Snaps = (BTreeMap<u64, String>, BTreeMap<u64, UTime>);

/// `snaps`: `map<snapid, pool_snap_info_t>`: each snapshot's name and
/// stamp.
fn decode_snaps(d: &mut Decoder<'_>) -> DecodeResult<Snaps> {
    let n = d.length("pool snaps", 14)?;
    let mut snaps = BTreeMap::new();
    let mut stamps = BTreeMap::new();
    for _ in 0..n {
        let id = d.u64("pool snap id")?;
        let (stamp, name) = decode_versioned(d, "pool_snap_info_t", 2, |d, _| {
            let _snapid = d.u64("pool_snap_info_t snapid")?;
            let stamp = UTime::decode(d)?;
            Ok((stamp, String::decode(d)?))
        })?;
        snaps.insert(id, name);
        stamps.insert(id, stamp);
    }
    Ok((snaps, stamps))
}

/// The fields from version 8 on, each present from the version the table
/// in docs/research/osdmap.md §4.2 gives.
fn decode_tail(d: &mut Decoder<'_>, v: u8, p: &mut Pool) -> DecodeResult<()> {
    if v >= 8 {
        d.skip(16, "pool quotas")?;
    }
    if v >= 9 {
        let n = d.length("pool tiers", 8)?;
        d.skip(n.saturating_mul(8), "pool tiers")?;
        p.tier_of = i64::decode(d)?;
        let _cache_mode = d.u8("pool cache_mode")?;
        p.read_tier = i64::decode(d)?;
        p.write_tier = i64::decode(d)?;
    }
    if v >= 10 {
        drop(BTreeMap::<String, String>::decode(d)?); // properties
    }
    if v >= 11 {
        skip_versioned(d, "HitSet::Params")?;
        d.skip(8, "pool hit_set_period, hit_set_count")?;
    }
    if v >= 12 {
        p.stripe_width = d.u32("pool stripe_width")?;
    }
    if v >= 13 {
        d.skip(32, "pool cache targets and ages")?;
    }
    if v >= 14 {
        p.erasure_code_profile = String::decode(d)?;
    }
    if v >= 15 {
        p.last_force_op_resend = d.u32("pool last_force_op_resend_preluminous")?;
    }
    if v >= 16 {
        d.skip(4, "pool min_read_recency_for_promote")?;
    }
    if v >= 17 {
        d.skip(8, "pool expected_num_objects")?;
    }
    if v >= 19 {
        d.skip(4, "pool cache_target_dirty_high_ratio_micro")?;
    }
    if v >= 20 {
        d.skip(4, "pool min_write_recency_for_promote")?;
    }
    if v >= 21 {
        d.skip(1, "pool use_gmt_hitset")?;
    }
    if v >= 22 {
        d.skip(1, "pool fast_read")?;
    }
    if v >= 23 {
        d.skip(8, "pool hit_set grade decay, search last n")?;
    }
    if v >= 24 {
        skip_pool_opts(d)?;
    }
    if v >= 25 {
        p.last_force_op_resend = d.u32("pool last_force_op_resend_prenautilus")?;
    }
    if v >= 26 {
        p.application_metadata = BTreeMap::decode(d)?;
    }
    if v >= 27 {
        d.skip(8, "pool create_time")?;
    }
    if v >= 28 {
        d.skip(8, "pool pg_num_target, pgp_num_target")?;
        p.pg_num_pending = d.u32("pool pg_num_pending")?;
        d.skip(8, "pool old merge epochs")?;
        p.last_force_op_resend = d.u32("pool last_force_op_resend")?;
        d.skip(1, "pool pg_autoscale_mode")?;
    }
    if v >= 29 {
        skip_versioned(d, "pg_merge_meta_t")?;
    }
    if v == 30 {
        d.skip(16, "pool peering_crush (stretch)")?;
    }
    if v >= 31 && d.u8("pool peering_crush present")? != 0 {
        d.skip(16, "pool peering_crush (stretch)")?;
    }
    if v >= 32 {
        let lo = varint(d)?;
        let hi = varint(d)?;
        p.nonprimary_shards = u128::from(lo) | u128::from(hi) << 64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_as_calc_pg_masks() {
        for (n, m) in [(1, 0), (8, 7), (12, 15), (100, 127), (128, 127), (0, 0)] {
            assert_eq!(pg_mask(n), m, "pg_num {n}");
        }
    }

    #[test]
    fn varint_groups() {
        assert_eq!(varint(&mut Decoder::new(&[0x02])).unwrap(), 2);
        assert_eq!(varint(&mut Decoder::new(&[0x80, 0x01])).unwrap(), 128);
        let long = [0xffu8; 11];
        assert!(varint(&mut Decoder::new(&long)).is_err());
    }
}
