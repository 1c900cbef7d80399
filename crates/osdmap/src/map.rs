//! The full OSDMap (`OSDMap::decode`, src/osd/OSDMap.cc) as Ceph 16
//! (client data v9) and Ceph 20 (v10) send it in MOSDMap:
//! docs/research/osdmap.md §2. The client-usable section is kept; the
//! OSD-only section is checked for shape by its envelope and read past, as
//! the kernel client does.

use std::collections::BTreeMap;

use msgr_crush::CrushMap;
use msgr_encoding::crc32c::ceph_crc32c;
use msgr_encoding::{
    decode_versioned, Decode, DecodeError, Decoder, EntityAddr, EntityAddrvec, UTime, Uuid,
};
use msgr_messages::osd_types::PgId;

use crate::error::OsdMapError;
use crate::pool::Pool;

/// The newest client-data section read (Ceph 20's).
const CLIENT_VERSION: u8 = 10;
/// The outer envelope's version; 7 is the oldest with a crc-less
/// ENCODE_START form, anything older is the classic encoding.
const WRAPPER_VERSION: u8 = 8;

/// The most OSDs a map may have here (Ceph's own `mon_max_osd` defaults to
/// 10000): bounds what a peer's `max_osd` makes us allocate.
pub const MAX_OSD: i32 = 1 << 18;

/// `CEPH_OSD_*`: an OSD's state bits.
pub mod state {
    /// `CEPH_OSD_EXISTS`: the id is in use.
    pub const EXISTS: u32 = 1 << 0;
    /// `CEPH_OSD_UP`: the OSD is running and reachable.
    pub const UP: u32 = 1 << 1;
    /// `CEPH_OSD_AUTOOUT`: marked out automatically after being down.
    pub const AUTOOUT: u32 = 1 << 2;
    /// `CEPH_OSD_NEW`: created and not yet booted.
    pub const NEW: u32 = 1 << 3;
    /// `CEPH_OSD_STOP`: told to stop.
    pub const STOP: u32 = 1 << 12;
}

/// `CEPH_OSD_IN`: a full weight (16.16); 0 is out.
pub const WEIGHT_IN: u32 = 0x10000;
/// The default (and highest) primary affinity.
pub const DEFAULT_PRIMARY_AFFINITY: u32 = 0x10000;

/// `CEPH_OSDMAP_*` flags a client acts on.
pub mod flag {
    /// `CEPH_OSDMAP_FULL`: the cluster is full; writes wait.
    pub const FULL: u32 = 1 << 1;
    /// `CEPH_OSDMAP_PAUSERD`: reads are paused.
    pub const PAUSERD: u32 = 1 << 2;
    /// `CEPH_OSDMAP_PAUSEWR`: writes are paused.
    pub const PAUSEWR: u32 = 1 << 3;
}

/// The cluster's OSDs, pools and placement rules at one epoch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OsdMap {
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The map's epoch: each change makes the next.
    pub epoch: u32,
    /// When the cluster's first map was made.
    pub created: UTime,
    /// When this epoch was made.
    pub modified: UTime,
    /// The pools, by pool id.
    pub pools: BTreeMap<i64, Pool>,
    /// The pools' names, by pool id.
    pub pool_names: BTreeMap<i64, String>,
    /// The largest pool id ever given.
    pub pool_max: i32,
    /// `CEPH_OSDMAP_*`.
    pub flags: u32,
    /// One past the highest OSD id: the per-OSD vectors' length.
    pub max_osd: i32,
    /// Per OSD ([`state`] bits), `max_osd` long.
    pub osd_state: Vec<u32>,
    /// Per OSD, 16.16 ([`WEIGHT_IN`]: in, 0: out).
    pub osd_weight: Vec<u32>,
    /// Per OSD, where clients reach it (empty: never up).
    pub osd_addrs: Vec<EntityAddrvec>,
    /// PGs mapped to a temporary OSD set while they recover.
    pub pg_temp: BTreeMap<PgId, Vec<i32>>,
    /// PGs given a temporary primary.
    pub primary_temp: BTreeMap<PgId, i32>,
    /// Per OSD when any is set, else `None` (all the default).
    pub primary_affinity: Option<Vec<u32>>,
    /// The CRUSH map: the hierarchy and the rules placement follows.
    pub crush: CrushMap,
    /// Erasure-code profiles, by name.
    pub erasure_code_profiles: BTreeMap<String, BTreeMap<String, String>>,
    /// PGs with an explicit OSD set (`pg-upmap`).
    pub pg_upmap: BTreeMap<PgId, Vec<i32>>,
    /// PGs with OSD replacements (`pg-upmap-items`: from, to).
    pub pg_upmap_items: BTreeMap<PgId, Vec<(i32, i32)>>,
    /// PGs with an explicit primary (`pg-upmap-primary`).
    pub pg_upmap_primaries: BTreeMap<PgId, i32>,
    /// How many times the CRUSH map changed.
    pub crush_version: u32,
    /// When an OSD was last marked up or down.
    pub last_up_change: UTime,
    /// When an OSD was last marked in or out.
    pub last_in_change: UTime,
}

/// Reads the outer `ENCODE_START(8, 7)` of a full map or an incremental,
/// which must span the input exactly, and returns the decoder at its body.
pub(crate) fn wrapper<'a>(data: &'a [u8], what: &'static str) -> Result<Decoder<'a>, OsdMapError> {
    let mut d = Decoder::new(data);
    let version = d.u8(what)?;
    if version < 7 {
        return Err(OsdMapError::ClassicEncoding { version });
    }
    let compat = d.u8(what)?;
    if compat > WRAPPER_VERSION {
        return Err(DecodeError::IncompatibleVersion {
            what,
            compat,
            supported: WRAPPER_VERSION,
        }
        .into());
    }
    let len = d.u32(what)?;
    if len as usize != d.remaining() {
        return Err(OsdMapError::Inconsistent {
            what: "envelope length against the bytes given",
            got: u64::from(len),
            expected: d.remaining() as u64,
        });
    }
    Ok(d)
}

/// The crc a full map or an incremental carries at `at`: crc32c (seed −1)
/// of every byte before it, continued over every byte after it.
pub(crate) fn check_crc(data: &[u8], at: usize, what: &'static str) -> Result<(), OsdMapError> {
    let (front, rest) = data.split_at(at.min(data.len()));
    let (carried, tail) = rest
        .split_first_chunk::<4>()
        .ok_or(DecodeError::Truncated {
            what,
            needed: 4,
            remaining: rest.len(),
        })?;
    let carried = u32::from_le_bytes(*carried);
    let computed = ceph_crc32c(ceph_crc32c(u32::MAX, front), tail);
    if carried != computed {
        return Err(OsdMapError::BadCrc {
            what,
            carried,
            computed,
        });
    }
    Ok(())
}

/// The CRUSH map as a peer sent it: well formed, and cheap enough to map
/// with.
pub(crate) fn decode_crush(bytes: &[u8]) -> Result<CrushMap, OsdMapError> {
    let crush = CrushMap::decode(bytes)?;
    crush.check_work()?;
    Ok(crush)
}

/// A per-OSD vector must be `max_osd` long.
fn per_osd<T>(v: &[T], what: &'static str, max_osd: i32) -> Result<(), OsdMapError> {
    if v.len() as u64 != max_osd as u64 {
        return Err(OsdMapError::Inconsistent {
            what,
            got: v.len() as u64,
            expected: max_osd as u64,
        });
    }
    Ok(())
}

impl OsdMap {
    /// Reads a full map from exactly its bytes (a value of MOSDMap's
    /// `maps`, `ceph osd getmap`'s file), checking its crc.
    pub fn decode(data: &[u8]) -> Result<OsdMap, OsdMapError> {
        let mut d = wrapper(data, "OSDMap")?;
        let (mut map, crush) =
            decode_versioned(&mut d, "OSDMap client data", CLIENT_VERSION, decode_client)?;
        // The OSD-only section: what OSDs need of each other.
        decode_versioned(&mut d, "OSDMap osd-only data", u8::MAX, |_, _| Ok(()))?;
        check_crc(data, d.position(), "OSDMap")?;
        map.check()?;
        map.crush = decode_crush(&crush)?;
        Ok(map)
    }

    /// What the decoded fields must satisfy for the map to be used.
    fn check(&self) -> Result<(), OsdMapError> {
        if !(0..=MAX_OSD).contains(&self.max_osd) {
            return Err(OsdMapError::TooLarge {
                what: "max_osd",
                got: self.max_osd.into(),
                max: MAX_OSD.into(),
            });
        }
        per_osd(&self.osd_state, "osd_state's length", self.max_osd)?;
        per_osd(&self.osd_weight, "osd_weight's length", self.max_osd)?;
        per_osd(&self.osd_addrs, "client_addrs' length", self.max_osd)?;
        if let Some(a) = &self.primary_affinity {
            per_osd(a, "osd_primary_affinity's length", self.max_osd)?;
        }
        Ok(())
    }

    /// The id of the pool named `name`.
    pub fn pool_id(&self, name: &str) -> Option<i64> {
        self.pool_names
            .iter()
            .find(|(id, n)| *n == name && self.pools.contains_key(id))
            .map(|(id, _)| *id)
    }

    fn state_of(&self, osd: i32) -> u32 {
        usize::try_from(osd)
            .ok()
            .and_then(|o| self.osd_state.get(o))
            .copied()
            .unwrap_or(0)
    }

    /// `exists(osd)`.
    pub fn exists(&self, osd: i32) -> bool {
        self.state_of(osd) & state::EXISTS != 0
    }

    /// `is_up(osd)`: it exists and is up.
    pub fn is_up(&self, osd: i32) -> bool {
        self.exists(osd) && self.state_of(osd) & state::UP != 0
    }

    /// `is_out(osd)`: gone, or weighted 0.
    pub fn is_out(&self, osd: i32) -> bool {
        !self.exists(osd) || self.weight(osd) == 0
    }

    /// An OSD's weight (0 for one the map does not have).
    pub fn weight(&self, osd: i32) -> u32 {
        usize::try_from(osd)
            .ok()
            .and_then(|o| self.osd_weight.get(o))
            .copied()
            .unwrap_or(0)
    }

    /// Where clients reach an up OSD.
    pub fn osd_addrs(&self, osd: i32) -> Option<&EntityAddrvec> {
        if !self.is_up(osd) {
            return None;
        }
        self.osd_addrs.get(usize::try_from(osd).ok()?)
    }
}

/// The client-usable section, in its order (§2.2); the CRUSH map is
/// returned as bytes and decoded by the caller.
fn decode_client(d: &mut Decoder<'_>, v: u8) -> Result<(OsdMap, Vec<u8>), DecodeError> {
    let mut m = OsdMap {
        fsid: Uuid::decode(d)?,
        epoch: d.u32("epoch")?,
        created: UTime::decode(d)?,
        modified: UTime::decode(d)?,
        pools: BTreeMap::decode(d).map_err(|e| e.context("pools"))?,
        pool_names: BTreeMap::decode(d).map_err(|e| e.context("pool names"))?,
        pool_max: i32::decode(d)?,
        flags: d.u32("flags")?,
        max_osd: i32::decode(d)?,
        ..OsdMap::default()
    };
    m.osd_state = if v >= 5 {
        Vec::decode(d)?
    } else {
        Vec::<u8>::decode(d)?.into_iter().map(u32::from).collect()
    };
    m.osd_weight = Vec::decode(d)?;
    m.osd_addrs = if v >= 8 {
        Vec::decode(d)?
    } else {
        Vec::<EntityAddr>::decode(d)?
            .into_iter()
            .map(EntityAddrvec::single)
            .collect()
    };
    m.pg_temp = BTreeMap::decode(d)?;
    m.primary_temp = BTreeMap::decode(d)?;
    let affinity = Vec::<u32>::decode(d)?;
    m.primary_affinity = (!affinity.is_empty()).then_some(affinity);
    let crush = bytes::Bytes::decode(d)?.to_vec();
    if v >= 3 {
        m.erasure_code_profiles = BTreeMap::decode(d)?;
    }
    if v >= 4 {
        m.pg_upmap = BTreeMap::decode(d)?;
        m.pg_upmap_items = BTreeMap::decode(d)?;
    }
    if v >= 6 {
        m.crush_version = d.u32("crush_version")?;
    }
    if v >= 7 {
        skip_snap_map(d)?; // new_removed_snaps
        skip_snap_map(d)?; // new_purged_snaps
    }
    if v >= 9 {
        m.last_up_change = UTime::decode(d)?;
        m.last_in_change = UTime::decode(d)?;
    }
    if v >= 10 {
        m.pg_upmap_primaries = BTreeMap::decode(d)?;
    }
    Ok((m, crush))
}

/// `map<int64, snap_interval_set_t>`, read past.
pub(crate) fn skip_snap_map(d: &mut Decoder<'_>) -> Result<(), DecodeError> {
    let n = d.length("snap map", 12)?;
    for _ in 0..n {
        d.skip(8, "snap map pool")?;
        let k = d.length("interval_set", 16)?;
        d.skip(k.saturating_mul(16), "interval_set")?;
    }
    Ok(())
}
