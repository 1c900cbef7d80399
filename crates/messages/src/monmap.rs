//! `MonMap` (src/mon/MonMap.cc), as monitors send it to clients that
//! advertise SERVER_NAUTILUS: ENCODE_START(9, 6) from Ceph 16, (10, 6) from
//! Ceph 20 (docs/research/mon-client.md §3.4). Decoding accepts versions 5
//! to 10 and skips fields of newer ones; encoding writes 9 or 10, byte for
//! byte as Ceph does.

use std::collections::{BTreeMap, BTreeSet};

use bytes::BufMut;
use msgr_encoding::{
    decode_versioned, encode_versioned, Decode, DecodeResult, Decoder, Encode, EntityAddrvec,
    UTime, Uuid,
};

/// One monitor (`mon_info_t`, v5 from Ceph 16, v6 from Ceph 20).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MonInfo {
    /// The monitor's name (`a`, `b`, ...).
    pub name: String,
    /// Where clients reach it.
    pub public_addrs: EntityAddrvec,
    /// Its priority in DNS-SRV style selection: lower is preferred.
    pub priority: u16,
    /// Its weight among monitors of equal priority.
    pub weight: u16,
    /// Its CRUSH location (stretch mode), by bucket type.
    pub crush_loc: BTreeMap<String, String>,
    /// v6.
    pub time_added: UTime,
}

/// Ceph 20's cipher policy at the end of a v10 map (names as monmaptool
/// prints them; widths as the captured bytes show).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthCiphers {
    /// The policy's epoch.
    pub auth_epoch: u32,
    /// The cipher of service secrets (`CEPH_CRYPTO_*`).
    pub service_cipher: u32,
    /// The ciphers keys may use.
    pub allowed_ciphers: Vec<u32>,
    /// The cipher new keys get.
    pub preferred_cipher: u32,
}

/// The monitors of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MonMap {
    /// The encoding version this map was read from (or is written as).
    pub struct_v: u8,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The map's epoch.
    pub epoch: u32,
    /// When it last changed.
    pub last_changed: UTime,
    /// When the cluster was created.
    pub created: UTime,
    /// Monitor features every monitor has committed to.
    pub persistent_features: u64,
    /// Monitor features in use but not committed to.
    pub optional_features: u64,
    /// The monitors, by name.
    pub mons: BTreeMap<String, MonInfo>,
    /// Rank i is `ranks[i]`.
    pub ranks: Vec<String>,
    /// `ceph_release_t`: 16 pacific, ..., 20 tentacle.
    pub min_mon_release: u8,
    /// Ranks removed since the last epoch.
    pub removed_ranks: BTreeSet<i32>,
    /// The election strategy (1 classic, 2 disallow, 3 connectivity).
    pub strategy: u8,
    /// Monitors that may not lead.
    pub disallowed_leaders: BTreeSet<String>,
    /// Whether stretch mode is on.
    pub stretch_mode_enabled: bool,
    /// Stretch mode's tiebreaker monitor.
    pub tiebreaker_mon: String,
    /// Monitors marked down by stretch mode.
    pub stretch_marked_down_mons: BTreeSet<String>,
    /// v10.
    pub auth: AuthCiphers,
}

fn mon_feature(d: &mut Decoder<'_>) -> DecodeResult<u64> {
    decode_versioned(d, "mon_feature_t", 1, |d, _| {
        d.u64("mon_feature_t.features")
    })
}

fn put_mon_feature(out: &mut Vec<u8>, f: u64) {
    encode_versioned(out, 1, 1, |o| o.put_u64_le(f));
}

impl MonInfo {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<MonInfo> {
        decode_versioned(d, "mon_info_t", 6, |d, v| {
            let name = String::decode(d)?;
            let public_addrs = match v >= 3 {
                true => EntityAddrvec::decode(d)?,
                false => EntityAddrvec::single(msgr_encoding::EntityAddr::decode(d)?),
            };
            let priority = if v >= 2 {
                d.u16("mon_info_t.priority")?
            } else {
                0
            };
            let weight = if v >= 4 {
                d.u16("mon_info_t.weight")?
            } else {
                0
            };
            let crush_loc = if v >= 5 {
                BTreeMap::decode(d)?
            } else {
                BTreeMap::new()
            };
            let time_added = if v >= 6 {
                UTime::decode(d)?
            } else {
                UTime::default()
            };
            Ok(MonInfo {
                name,
                public_addrs,
                priority,
                weight,
                crush_loc,
                time_added,
            })
        })
    }

    fn encode(&self, out: &mut Vec<u8>, v: u8) {
        encode_versioned(out, v, 1, |o| {
            self.name.encode(o);
            self.public_addrs.encode(o);
            o.put_u16_le(self.priority);
            o.put_u16_le(self.weight);
            self.crush_loc.encode(o);
            if v >= 6 {
                self.time_added.encode(o);
            }
        });
    }
}

impl MonMap {
    /// The newest version this implementation reads.
    pub const MAX_VERSION: u8 = 10;

    /// Decodes the map a MMonMap carries.
    pub fn decode(d: &mut Decoder<'_>) -> DecodeResult<MonMap> {
        decode_versioned(d, "MonMap", Self::MAX_VERSION, |d, v| {
            if v < 5 {
                return Err(msgr_encoding::DecodeError::VersionTooOld {
                    what: "MonMap",
                    version: v,
                    oldest: 5,
                });
            }
            let mut m = MonMap {
                struct_v: v,
                fsid: Uuid::decode(d)?,
                epoch: d.u32("MonMap.epoch")?,
                last_changed: UTime::decode(d)?,
                created: UTime::decode(d)?,
                persistent_features: mon_feature(d)?,
                optional_features: mon_feature(d)?,
                ..Default::default()
            };
            let n = d.length("MonMap.mon_info", 10)?;
            for _ in 0..n {
                let key = String::decode(d)?;
                m.mons.insert(key, MonInfo::decode(d)?);
            }
            if v >= 6 {
                m.ranks = Vec::decode(d)?;
            } else {
                m.ranks = m.mons.keys().cloned().collect();
            }
            if v >= 7 {
                m.min_mon_release = d.u8("MonMap.min_mon_release")?;
            }
            if v >= 8 {
                m.removed_ranks = BTreeSet::decode(d)?;
                m.strategy = d.u8("MonMap.strategy")?;
                m.disallowed_leaders = BTreeSet::decode(d)?;
            }
            if v >= 9 {
                m.stretch_mode_enabled = bool::decode(d)?;
                m.tiebreaker_mon = String::decode(d)?;
                m.stretch_marked_down_mons = BTreeSet::decode(d)?;
            }
            if v >= 10 {
                m.auth = AuthCiphers {
                    auth_epoch: d.u32("MonMap.auth_epoch")?,
                    service_cipher: d.u32("MonMap.auth_service_cipher")?,
                    allowed_ciphers: Vec::decode(d)?,
                    preferred_cipher: d.u32("MonMap.auth_preferred_cipher")?,
                };
            }
            Ok(m)
        })
    }

    /// Encodes as version `struct_v` (9 or 10).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let v = self.struct_v.clamp(9, 10);
        encode_versioned(out, v, 6, |o| {
            self.fsid.encode(o);
            o.put_u32_le(self.epoch);
            self.last_changed.encode(o);
            self.created.encode(o);
            put_mon_feature(o, self.persistent_features);
            put_mon_feature(o, self.optional_features);
            o.put_u32_le(self.mons.len() as u32);
            for (k, info) in &self.mons {
                k.encode(o);
                info.encode(o, if v >= 10 { 6 } else { 5 });
            }
            self.ranks.encode(o);
            o.put_u8(self.min_mon_release);
            self.removed_ranks.encode(o);
            o.put_u8(self.strategy);
            self.disallowed_leaders.encode(o);
            self.stretch_mode_enabled.encode(o);
            self.tiebreaker_mon.encode(o);
            self.stretch_marked_down_mons.encode(o);
            if v >= 10 {
                o.put_u32_le(self.auth.auth_epoch);
                o.put_u32_le(self.auth.service_cipher);
                self.auth.allowed_ciphers.encode(o);
                o.put_u32_le(self.auth.preferred_cipher);
            }
        });
    }

    /// The monitors' address vectors in rank order.
    pub fn addrs_by_rank(&self) -> Vec<(String, EntityAddrvec)> {
        self.ranks
            .iter()
            .filter_map(|r| {
                self.mons
                    .get(r)
                    .map(|i| (r.clone(), i.public_addrs.clone()))
            })
            .collect()
    }

    /// `ceph_release_name`.
    pub fn release_name(release: u8) -> &'static str {
        match release {
            12 => "luminous",
            13 => "mimic",
            14 => "nautilus",
            15 => "octopus",
            16 => "pacific",
            17 => "quincy",
            18 => "reef",
            19 => "squid",
            20 => "tentacle",
            _ => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MonMap of testdata/captures/pacific-ceph-s.pcap (the MMonMap
    /// front after its u32 length; docs/research/mon-client.md §3.4.4).
    const PACIFIC: &str = concat!(
        "0906c30000007af4f06b1dac47d29f07f6112203f3ce010000008732026bb113a8348732026bb113a834010108000000",
        "ff0000000000000001010800000000000000000000000100000001000000610501580000000100000061020200000001",
        "01011c00000002000000000000001000000002000ce47f00000100000000000000000101011c00000001000000000000",
        "001000000002001a857f0000010000000000000000000000000000000001000000010000006110000000000100000000",
        "000000000000000000",
    );

    #[test]
    fn pacific_monmap_decodes_and_reencodes() {
        let raw = msgr_encoding::hex::decode(PACIFIC).unwrap();
        assert_eq!(raw.len(), 201);
        let m = MonMap::decode(&mut Decoder::new(&raw)).unwrap();
        assert_eq!(m.struct_v, 9);
        assert_eq!(m.fsid.to_string(), "7af4f06b-1dac-47d2-9f07-f6112203f3ce");
        assert_eq!(m.epoch, 1);
        assert_eq!(m.persistent_features, 0xff);
        assert_eq!(m.min_mon_release, 16);
        assert_eq!(m.ranks, ["a"]);
        assert_eq!(
            m.mons["a"].public_addrs.to_string(),
            "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]"
        );
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(out, raw);
    }
}
