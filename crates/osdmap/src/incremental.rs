//! `OSDMap::Incremental`: what changed from one epoch to the next, as
//! Ceph 16 (client data v8) and Ceph 20 (v9) encode it, and
//! `apply_incremental`'s client-visible part: docs/research/osdmap.md §3.
//! Applying checks the whole incremental first, so a bad one leaves the
//! map as it was.

use std::collections::{BTreeMap, BTreeSet};

use msgr_crush::CrushMap;
use msgr_encoding::{
    decode_versioned, Decode, DecodeError, Decoder, EntityAddr, EntityAddrvec, UTime, Uuid,
};
use msgr_messages::osd_types::PgId;

use crate::error::OsdMapError;
use crate::map::{
    check_crc, decode_crush, skip_snap_map, state, wrapper, OsdMap, DEFAULT_PRIMARY_AFFINITY,
    MAX_OSD,
};
use crate::pool::Pool;

/// The newest client-data section read (Ceph 20's).
const CLIENT_VERSION: u8 = 9;

/// One epoch's changes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incremental {
    /// The cluster's fsid; it must be the map's.
    pub fsid: Uuid,
    /// The epoch this incremental makes: the map's plus one.
    pub epoch: u32,
    /// When the monitors made it.
    pub modified: UTime,
    /// −1: unchanged.
    pub new_pool_max: i64,
    /// −1: unchanged.
    pub new_flags: i32,
    /// A whole map that replaces the old one (the first epoch carries one).
    pub fullmap: Option<Box<OsdMap>>,
    /// A new CRUSH map.
    pub crush: Option<CrushMap>,
    /// −1: unchanged.
    pub new_max_osd: i32,
    /// Pools added or changed, by pool id.
    pub new_pools: BTreeMap<i64, Pool>,
    /// Names of pools added or renamed, by pool id.
    pub new_pool_names: BTreeMap<i64, String>,
    /// Pools removed.
    pub old_pools: BTreeSet<i64>,
    /// OSDs marked up, with their client-facing addresses.
    pub new_up_client: BTreeMap<i32, EntityAddrvec>,
    /// State bits to flip (0 means "mark down", as in Ceph).
    pub new_state: BTreeMap<i32, u32>,
    /// New in/out weights by OSD (0x10000 in, 0 out).
    pub new_weight: BTreeMap<i32, u32>,
    /// An empty vector removes the PG's entry.
    pub new_pg_temp: BTreeMap<PgId, Vec<i32>>,
    /// −1 removes the PG's entry.
    pub new_primary_temp: BTreeMap<PgId, i32>,
    /// New primary affinities by OSD (0x10000 the default).
    pub new_primary_affinity: BTreeMap<i32, u32>,
    /// Erasure-code profiles added or changed, by name.
    pub new_erasure_code_profiles: BTreeMap<String, BTreeMap<String, String>>,
    /// Erasure-code profiles removed.
    pub old_erasure_code_profiles: Vec<String>,
    /// PGs given an explicit OSD set (`pg-upmap`).
    pub new_pg_upmap: BTreeMap<PgId, Vec<i32>>,
    /// PGs whose `pg-upmap` is removed.
    pub old_pg_upmap: BTreeSet<PgId>,
    /// PGs given OSD replacements (`pg-upmap-items`: from, to).
    pub new_pg_upmap_items: BTreeMap<PgId, Vec<(i32, i32)>>,
    /// PGs whose `pg-upmap-items` are removed.
    pub old_pg_upmap_items: BTreeSet<PgId>,
    /// Zero: unchanged.
    pub new_last_up_change: UTime,
    /// When an OSD was last marked in or out; zero: unchanged.
    pub new_last_in_change: UTime,
    /// PGs given an explicit primary (`pg-upmap-primary`).
    pub new_pg_upmap_primary: BTreeMap<PgId, i32>,
    /// PGs whose `pg-upmap-primary` is removed.
    pub old_pg_upmap_primary: BTreeSet<PgId>,
}

/// Bytes that are absent when empty (`fullmap`, `crush`).
fn optional_blob(d: &mut Decoder<'_>) -> Result<Option<Vec<u8>>, DecodeError> {
    let b = bytes::Bytes::decode(d)?;
    Ok((!b.is_empty()).then(|| b.to_vec()))
}

impl Incremental {
    /// Reads an incremental from exactly its bytes (a value of MOSDMap's
    /// `incremental_maps`), checking its crc.
    pub fn decode(data: &[u8]) -> Result<Incremental, OsdMapError> {
        let mut d = wrapper(data, "OSDMap::Incremental")?;
        let (mut inc, full, crush) = decode_versioned(
            &mut d,
            "OSDMap::Incremental client data",
            CLIENT_VERSION,
            decode_client,
        )?;
        decode_versioned(
            &mut d,
            "OSDMap::Incremental osd-only data",
            u8::MAX,
            |_, _| Ok(()),
        )?;
        check_crc(data, d.position(), "OSDMap::Incremental")?;
        if let Some(full) = full {
            inc.fullmap = Some(Box::new(OsdMap::decode(&full)?));
        }
        if let Some(crush) = crush {
            inc.crush = Some(decode_crush(&crush)?);
        }
        Ok(inc)
    }
}

type Client = (Incremental, Option<Vec<u8>>, Option<Vec<u8>>);

fn decode_client(d: &mut Decoder<'_>, v: u8) -> Result<Client, DecodeError> {
    let mut i = Incremental {
        fsid: Uuid::decode(d)?,
        epoch: d.u32("epoch")?,
        modified: UTime::decode(d)?,
        new_pool_max: i64::decode(d)?,
        new_flags: i32::decode(d)?,
        ..Incremental::default()
    };
    let full = optional_blob(d)?;
    let crush = optional_blob(d)?;
    i.new_max_osd = i32::decode(d)?;
    i.new_pools = BTreeMap::decode(d).map_err(|e| e.context("new pools"))?;
    i.new_pool_names = BTreeMap::decode(d)?;
    i.old_pools = BTreeSet::decode(d)?;
    i.new_up_client = if v >= 7 {
        BTreeMap::decode(d)?
    } else {
        BTreeMap::<i32, EntityAddr>::decode(d)?
            .into_iter()
            .map(|(o, a)| (o, EntityAddrvec::single(a)))
            .collect()
    };
    i.new_state = if v >= 5 {
        BTreeMap::decode(d)?
    } else {
        BTreeMap::<i32, u8>::decode(d)?
            .into_iter()
            .map(|(o, s)| (o, u32::from(s)))
            .collect()
    };
    i.new_weight = BTreeMap::decode(d)?;
    i.new_pg_temp = BTreeMap::decode(d)?;
    i.new_primary_temp = BTreeMap::decode(d)?;
    if v >= 2 {
        i.new_primary_affinity = BTreeMap::decode(d)?;
    }
    if v >= 3 {
        i.new_erasure_code_profiles = BTreeMap::decode(d)?;
        i.old_erasure_code_profiles = Vec::decode(d)?;
    }
    if v >= 4 {
        i.new_pg_upmap = BTreeMap::decode(d)?;
        i.old_pg_upmap = BTreeSet::decode(d)?;
        i.new_pg_upmap_items = BTreeMap::decode(d)?;
        i.old_pg_upmap_items = BTreeSet::decode(d)?;
    }
    if v >= 6 {
        skip_snap_map(d)?; // new_removed_snaps
        skip_snap_map(d)?; // new_purged_snaps
    }
    if v >= 8 {
        i.new_last_up_change = UTime::decode(d)?;
        i.new_last_in_change = UTime::decode(d)?;
    }
    if v >= 9 {
        i.new_pg_upmap_primary = BTreeMap::decode(d)?;
        i.old_pg_upmap_primary = BTreeSet::decode(d)?;
    }
    Ok((i, full, crush))
}

impl Incremental {
    /// Whether this incremental can be applied to `map`: the next epoch of
    /// the same cluster, naming only OSDs the map will have.
    fn check(&self, map: &OsdMap) -> Result<(), OsdMapError> {
        // Nothing follows epoch u32::MAX.
        if map.epoch.checked_add(1) != Some(self.epoch) {
            return Err(OsdMapError::NotNext {
                epoch: map.epoch,
                got: self.epoch,
            });
        }
        if self.epoch != 1 && self.fsid != map.fsid {
            return Err(OsdMapError::WrongFsid);
        }
        if let Some(full) = &self.fullmap {
            if full.epoch != self.epoch {
                return Err(OsdMapError::EpochMismatch {
                    what: "an incremental's full map",
                    sent_as: self.epoch,
                    encoded: full.epoch,
                });
            }
            return Ok(());
        }
        if self.new_max_osd > MAX_OSD || self.new_max_osd < -1 {
            return Err(OsdMapError::TooLarge {
                what: "new max_osd",
                got: self.new_max_osd.into(),
                max: MAX_OSD.into(),
            });
        }
        let max_osd = if self.new_max_osd >= 0 {
            self.new_max_osd
        } else {
            map.max_osd
        };
        let named = [
            ("new_weight", self.new_weight.keys().collect::<Vec<_>>()),
            (
                "new_primary_affinity",
                self.new_primary_affinity.keys().collect(),
            ),
            ("new_state", self.new_state.keys().collect()),
            ("new_up_client", self.new_up_client.keys().collect()),
        ];
        for (what, osds) in named {
            if let Some(&&osd) = osds.iter().find(|&&&o| !(0..max_osd).contains(&o)) {
                return Err(OsdMapError::NoSuchOsd { what, osd, max_osd });
            }
        }
        Ok(())
    }
}

/// Index of an OSD already checked to be below max_osd.
fn at(osd: i32) -> usize {
    usize::try_from(osd).unwrap_or(usize::MAX)
}

/// `v[i] = value` for an index checked to be in range.
fn set<T>(v: &mut [T], i: usize, value: T) {
    if let Some(slot) = v.get_mut(i) {
        *slot = value;
    }
}

impl OsdMap {
    /// `set_max_osd`: new OSDs do not exist, are out, unreachable, and of
    /// the default primary affinity.
    fn set_max_osd(&mut self, n: i32) {
        let len = at(n);
        self.max_osd = n;
        self.osd_state.resize(len, 0);
        self.osd_weight.resize(len, 0);
        self.osd_addrs.resize(len, EntityAddrvec::default());
        if let Some(a) = &mut self.primary_affinity {
            a.resize(len, DEFAULT_PRIMARY_AFFINITY);
        }
    }

    fn affinity_mut(&mut self) -> &mut Vec<u32> {
        let n = at(self.max_osd);
        self.primary_affinity
            .get_or_insert_with(|| vec![DEFAULT_PRIMARY_AFFINITY; n])
    }

    /// `apply_incremental`, the part a client sees: the map becomes the
    /// next epoch's. An incremental that does not apply (another epoch,
    /// another cluster, an OSD out of range) is an error and changes
    /// nothing.
    pub fn apply(&mut self, inc: Incremental) -> Result<(), OsdMapError> {
        inc.check(self)?;
        if let Some(full) = inc.fullmap {
            *self = *full;
            return Ok(());
        }
        self.epoch = inc.epoch;
        self.modified = inc.modified;
        if inc.epoch == 1 {
            self.fsid = inc.fsid;
        }
        if inc.new_flags >= 0 {
            self.flags = inc.new_flags as u32;
        }
        if inc.new_max_osd >= 0 {
            self.set_max_osd(inc.new_max_osd);
        }
        if inc.new_pool_max != -1 {
            self.pool_max = inc.new_pool_max as i32;
        }
        for (id, mut pool) in inc.new_pools {
            pool.last_change = inc.epoch;
            self.pools.insert(id, pool);
        }
        if inc.new_last_up_change != UTime::default() {
            self.last_up_change = inc.new_last_up_change;
        }
        if inc.new_last_in_change != UTime::default() {
            self.last_in_change = inc.new_last_in_change;
        }
        self.pool_names.extend(inc.new_pool_names);
        for id in inc.old_pools {
            self.pools.remove(&id);
            self.pool_names.remove(&id);
        }
        self.apply_osds(
            &inc.new_weight,
            &inc.new_primary_affinity,
            &inc.new_state,
            inc.new_up_client,
        );
        for name in inc.old_erasure_code_profiles {
            self.erasure_code_profiles.remove(&name);
        }
        self.erasure_code_profiles
            .extend(inc.new_erasure_code_profiles);
        apply_pg_map(&mut self.pg_temp, inc.new_pg_temp, |v| v.is_empty());
        apply_pg_map(&mut self.primary_temp, inc.new_primary_temp, |o| *o == -1);
        apply_pg_map(&mut self.pg_upmap, inc.new_pg_upmap, |_| false);
        remove_all(&mut self.pg_upmap, inc.old_pg_upmap);
        apply_pg_map(&mut self.pg_upmap_items, inc.new_pg_upmap_items, |_| false);
        remove_all(&mut self.pg_upmap_items, inc.old_pg_upmap_items);
        apply_pg_map(
            &mut self.pg_upmap_primaries,
            inc.new_pg_upmap_primary,
            |_| false,
        );
        remove_all(&mut self.pg_upmap_primaries, inc.old_pg_upmap_primary);
        // The new CRUSH map comes last, after OSDs went up and down.
        if let Some(crush) = inc.crush {
            self.crush = crush;
            // Every cluster that sends these encodings requires an OSD
            // release from luminous on, when the crush version counts.
            self.crush_version = self.crush_version.wrapping_add(1);
        }
        Ok(())
    }

    /// Weights, then primary affinities, then state flips, then OSDs that
    /// came up, in Ceph's order: an incremental may mark an OSD's EXISTS
    /// and bring it up at once.
    fn apply_osds(
        &mut self,
        weights: &BTreeMap<i32, u32>,
        affinities: &BTreeMap<i32, u32>,
        states: &BTreeMap<i32, u32>,
        up_client: BTreeMap<i32, EntityAddrvec>,
    ) {
        for (&o, &w) in weights {
            set(&mut self.osd_weight, at(o), w);
            if w != 0 {
                if let Some(s) = self.osd_state.get_mut(at(o)) {
                    *s = (*s | state::EXISTS) & !(state::AUTOOUT | state::NEW);
                }
            }
        }
        for (&o, &a) in affinities {
            set(self.affinity_mut(), at(o), a);
        }
        for (&o, &flip) in states {
            // A flip of 0 is the legacy "mark down".
            let flip = if flip == 0 { state::UP } else { flip };
            let old = self.osd_state.get(at(o)).copied().unwrap_or(0);
            if old & state::EXISTS != 0 && flip & state::EXISTS != 0 {
                // The OSD is destroyed: all of it is forgotten.
                set(self.affinity_mut(), at(o), DEFAULT_PRIMARY_AFFINITY);
                set(&mut self.osd_addrs, at(o), EntityAddrvec::default());
                set(&mut self.osd_state, at(o), 0);
            } else {
                set(&mut self.osd_state, at(o), old ^ flip);
            }
        }
        for (o, addrs) in up_client {
            if let Some(s) = self.osd_state.get_mut(at(o)) {
                *s = (*s | state::EXISTS | state::UP) & !state::STOP;
            }
            set(&mut self.osd_addrs, at(o), addrs);
        }
    }
}

/// Sets each PG's entry, or removes it where `removes` says so.
fn apply_pg_map<V>(
    map: &mut BTreeMap<PgId, V>,
    changes: BTreeMap<PgId, V>,
    removes: impl Fn(&V) -> bool,
) {
    for (pg, v) in changes {
        if removes(&v) {
            map.remove(&pg);
        } else {
            map.insert(pg, v);
        }
    }
}

fn remove_all<V>(map: &mut BTreeMap<PgId, V>, gone: BTreeSet<PgId>) {
    for pg in gone {
        map.remove(&pg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(epoch: u32) -> Incremental {
        let path = format!(
            "{}/../../testdata/osdmaps/pacific/inc-{epoch}.bin",
            env!("CARGO_MANIFEST_DIR")
        );
        Incremental::decode(&std::fs::read(path).expect("testdata")).expect("incremental")
    }

    /// The first epoch's incremental carries the whole map, which must be
    /// of that epoch: another would move the map to any epoch it claims.
    #[test]
    fn an_incrementals_full_map_must_be_of_its_epoch() {
        let mut first = inc(1);
        assert_eq!(first.fullmap.as_ref().map(|m| m.epoch), Some(1));
        let mut map = OsdMap::default();
        map.clone().apply(first.clone()).expect("applies");
        if let Some(full) = first.fullmap.as_mut() {
            full.epoch = u32::MAX;
        }
        assert_eq!(
            map.apply(first),
            Err(OsdMapError::EpochMismatch {
                what: "an incremental's full map",
                sent_as: 1,
                encoded: u32::MAX
            })
        );
        assert_eq!(map.epoch, 0);
    }

    /// Nothing follows epoch u32::MAX (an incremental of epoch 0 would
    /// have taken the map back to 0).
    #[test]
    fn nothing_follows_the_last_epoch() {
        let mut next = inc(2);
        let mut map = OsdMap {
            epoch: u32::MAX,
            fsid: next.fsid,
            ..OsdMap::default()
        };
        next.epoch = 0;
        // Naming no OSD, it would apply but for its epoch.
        next.new_weight.clear();
        next.new_state.clear();
        next.new_up_client.clear();
        next.new_primary_affinity.clear();
        assert_eq!(
            map.apply(next),
            Err(OsdMapError::NotNext {
                epoch: u32::MAX,
                got: 0
            })
        );
        assert_eq!(map.epoch, u32::MAX);
    }
}
