//! Cluster and pool usage, asked of the monitors: `MStatfs` (13) and
//! `MStatfsReply` (14) for the cluster's totals (what `rados df` prints
//! last, librados's `rados_cluster_stat`), `MGetPoolStats` (58) and
//! `MGetPoolStatsReply` (59) for each pool's `pool_stat_t`
//! (`rados_ioctx_pool_stat`). Layouts from src/messages/MStatfs.h,
//! MStatfsReply.h, MGetPoolStats.h, MGetPoolStatsReply.h and
//! src/osd/osd_types.{h,cc} (object_stat_sum_t v20, object_stat_collection_t
//! v2, store_statfs_t v1, pool_stat_t v7).
//!
//! The replies come from the monitor's MgrStatMonitor, which has numbers
//! only once a ceph-mgr reported them: without a mgr they are zeros.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use msgr_encoding::{
    decode_versioned, encode_versioned, Decode, DecodeResult, Decoder, Encode, Uuid,
    ENVELOPE_HEADER_LEN,
};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_STATFS`: [`MStatfs`].
pub const MSG_STATFS: u16 = 13;
/// `CEPH_MSG_STATFS_REPLY`: [`MStatfsReply`].
pub const MSG_STATFS_REPLY: u16 = 14;
/// `MSG_GETPOOLSTATS`: [`MGetPoolStats`].
pub const MSG_GETPOOLSTATS: u16 = 58;
/// `MSG_GETPOOLSTATSREPLY`: [`MGetPoolStatsReply`].
pub const MSG_GETPOOLSTATSREPLY: u16 = 59;

/// PaxosServiceMessage's prefix: `u64 version, i16 session_mon, u64
/// session_mon_tid` (the last two deprecated).
fn paxos_encode(out: &mut Vec<u8>) {
    out.put_u64_le(0);
    out.put_i16_le(-1);
    out.put_u64_le(0);
}

fn paxos_decode(d: &mut Decoder<'_>) -> DecodeResult<u64> {
    let version = d.u64("PaxosServiceMessage.version")?;
    d.skip(10, "PaxosServiceMessage.deprecated_session_mon")?;
    Ok(version)
}

fn message(msg_type: u16, tid: u64, front: Vec<u8>, version: u16) -> Message {
    let mut m = Message::new(msg_type, Bytes::from(front));
    m.tid = tid;
    m.version = version;
    m.compat_version = 1;
    m
}

/// `MStatfs` (v2): the cluster's usage, or with `data_pool` one pool's
/// (as CephFS asks); librados asks without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MStatfs {
    /// The request's tid, echoed by the reply.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// One pool's usage instead of the cluster's.
    pub data_pool: Option<i64>,
}

impl TypedMessage for MStatfs {
    const TYPE: u16 = MSG_STATFS;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        paxos_encode(&mut o);
        self.fsid.encode(&mut o);
        match self.data_pool {
            Some(p) => {
                o.put_u8(1);
                o.put_i64_le(p);
            }
            None => o.put_u8(0),
        }
        message(MSG_STATFS, self.tid, o, 2)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_STATFS)?;
        let mut d = Decoder::from_bytes(&msg.front);
        paxos_decode(&mut d)?;
        let fsid = Uuid::decode(&mut d)?;
        let data_pool = match msg.version >= 2 {
            true => match d.u8("MStatfs.data_pool present")? {
                0 => None,
                _ => Some(d.u64("MStatfs.data_pool")? as i64),
            },
            false => None,
        };
        Ok(MStatfs {
            tid: msg.tid,
            fsid,
            data_pool,
        })
    }
}

/// `struct ceph_statfs`: the cluster's capacity and use, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CephStatfs {
    /// Total capacity (KiB).
    pub kb: u64,
    /// Used (KiB).
    pub kb_used: u64,
    /// Available (KiB).
    pub kb_avail: u64,
    /// Objects in the cluster.
    pub num_objects: u64,
}

/// `MStatfsReply`: `struct ceph_mon_statfs_reply` (fsid, version, statfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MStatfsReply {
    /// The tid of the request answered.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The version of the stats (the monitor's map epoch).
    pub version: u64,
    /// The usage.
    pub st: CephStatfs,
}

impl TypedMessage for MStatfsReply {
    const TYPE: u16 = MSG_STATFS_REPLY;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.fsid.encode(&mut o);
        o.put_u64_le(self.version);
        for v in [
            self.st.kb,
            self.st.kb_used,
            self.st.kb_avail,
            self.st.num_objects,
        ] {
            o.put_u64_le(v);
        }
        message(MSG_STATFS_REPLY, self.tid, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_STATFS_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MStatfsReply {
            tid: msg.tid,
            fsid: Uuid::decode(&mut d)?,
            version: d.u64("ceph_mon_statfs_reply.version")?,
            st: CephStatfs {
                kb: d.u64("ceph_statfs.kb")?,
                kb_used: d.u64("ceph_statfs.kb_used")?,
                kb_avail: d.u64("ceph_statfs.kb_avail")?,
                num_objects: d.u64("ceph_statfs.num_objects")?,
            },
        })
    }
}

/// `MGetPoolStats`: the stats of the pools named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MGetPoolStats {
    /// The request's tid, echoed by the reply.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The pools' names.
    pub pools: Vec<String>,
}

impl TypedMessage for MGetPoolStats {
    const TYPE: u16 = MSG_GETPOOLSTATS;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        paxos_encode(&mut o);
        self.fsid.encode(&mut o);
        self.pools.encode(&mut o);
        message(MSG_GETPOOLSTATS, self.tid, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_GETPOOLSTATS)?;
        let mut d = Decoder::from_bytes(&msg.front);
        paxos_decode(&mut d)?;
        Ok(MGetPoolStats {
            tid: msg.tid,
            fsid: Uuid::decode(&mut d)?,
            pools: Vec::decode(&mut d)?,
        })
    }
}

/// `object_stat_sum_t` (v14 to v20): the counters librados reports; the
/// others (scrub, recovery, cache tiering) are read past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectStatSum {
    /// Bytes of object data.
    pub num_bytes: i64,
    /// Objects.
    pub num_objects: i64,
    /// Clones (snapshots' objects).
    pub num_object_clones: i64,
    /// Objects times replicas.
    pub num_object_copies: i64,
    /// Objects missing on their primary.
    pub num_objects_missing_on_primary: i64,
    /// Degraded objects.
    pub num_objects_degraded: i64,
    /// Unfound objects.
    pub num_objects_unfound: i64,
    /// Read ops.
    pub num_rd: i64,
    /// KiB read.
    pub num_rd_kb: i64,
    /// Write ops.
    pub num_wr: i64,
    /// KiB written.
    pub num_wr_kb: i64,
    /// Misplaced objects.
    pub num_objects_misplaced: i64,
    /// Bytes of hit set archives (cache tiering).
    pub num_bytes_hit_set_archive: i64,
    /// Bytes of omap data (v19+).
    pub num_omap_bytes: i64,
    /// Omap keys (v19+).
    pub num_omap_keys: i64,
}

impl Encode for ObjectStatSum {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 20, 14, |o| {
            let mut body = [0i64; 28];
            body[0] = self.num_bytes;
            body[1] = self.num_objects;
            body[2] = self.num_object_clones;
            body[3] = self.num_object_copies;
            body[4] = self.num_objects_missing_on_primary;
            body[5] = self.num_objects_degraded;
            body[6] = self.num_objects_unfound;
            body[7] = self.num_rd;
            body[8] = self.num_rd_kb;
            body[9] = self.num_wr;
            body[10] = self.num_wr_kb;
            body[21] = self.num_objects_misplaced;
            body[22] = self.num_bytes_hit_set_archive;
            for v in body {
                o.put_i64_le(v);
            }
            // Four i32 cache modes, then pinned, missing, legacy snapsets,
            // large omap objects, manifest.
            o.put_bytes(0, 4 * 4 + 5 * 8);
            o.put_i64_le(self.num_omap_bytes);
            o.put_i64_le(self.num_omap_keys);
            // num_objects_repaired.
            o.put_i64_le(0);
        });
    }
}

impl Decode for ObjectStatSum {
    const MIN_ENCODED_LEN: usize = ENVELOPE_HEADER_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "object_stat_sum_t", 20, |d, v| {
            let mut i64s = [0i64; 28];
            for x in &mut i64s {
                *x = d.u64("object_stat_sum_t")? as i64;
            }
            // num_flush_mode_high .. num_evict_mode_full (i32), then
            // num_objects_pinned, num_objects_missing.
            d.skip(4 * 4 + 2 * 8, "object_stat_sum_t cache modes")?;
            // v16 num_legacy_snapsets, v17 num_large_omap_objects, v18
            // num_objects_manifest.
            for since in [16, 17, 18] {
                if v >= since {
                    d.skip(8, "object_stat_sum_t")?;
                }
            }
            let (num_omap_bytes, num_omap_keys) = match v >= 19 {
                true => (
                    d.u64("num_omap_bytes")? as i64,
                    d.u64("num_omap_keys")? as i64,
                ),
                false => (0, 0),
            };
            Ok(ObjectStatSum {
                num_bytes: i64s[0],
                num_objects: i64s[1],
                num_object_clones: i64s[2],
                num_object_copies: i64s[3],
                num_objects_missing_on_primary: i64s[4],
                num_objects_degraded: i64s[5],
                num_objects_unfound: i64s[6],
                num_rd: i64s[7],
                num_rd_kb: i64s[8],
                num_wr: i64s[9],
                num_wr_kb: i64s[10],
                num_objects_misplaced: i64s[21],
                num_bytes_hit_set_archive: i64s[22],
                num_omap_bytes,
                num_omap_keys,
            })
        })
    }
}

/// `store_statfs_t` (v1): what the pool's objects take in the OSDs' stores
/// (reported per pool since Nautilus's BlueStore).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStatfs {
    /// Total bytes.
    pub total: u64,
    /// Available bytes.
    pub available: u64,
    /// Bytes reserved by the store.
    pub internally_reserved: u64,
    /// Bytes allocated.
    pub allocated: i64,
    /// Bytes of data stored.
    pub data_stored: i64,
    /// Bytes compressed data takes.
    pub data_compressed: i64,
    /// Bytes allocated to compressed data.
    pub data_compressed_allocated: i64,
    /// Bytes of data before it was compressed.
    pub data_compressed_original: i64,
    /// Bytes allocated to omap.
    pub omap_allocated: i64,
    /// Bytes of internal metadata.
    pub internal_metadata: i64,
}

impl Encode for StoreStatfs {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 1, 1, |o| {
            o.put_u64_le(self.total);
            o.put_u64_le(self.available);
            o.put_u64_le(self.internally_reserved);
            for v in [
                self.allocated,
                self.data_stored,
                self.data_compressed,
                self.data_compressed_allocated,
                self.data_compressed_original,
                self.omap_allocated,
                self.internal_metadata,
            ] {
                o.put_i64_le(v);
            }
        });
    }
}

impl Decode for StoreStatfs {
    const MIN_ENCODED_LEN: usize = ENVELOPE_HEADER_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "store_statfs_t", 1, |d, _| {
            let mut v = [0u64; 10];
            for x in &mut v {
                *x = d.u64("store_statfs_t")?;
            }
            Ok(StoreStatfs {
                total: v[0],
                available: v[1],
                internally_reserved: v[2],
                allocated: v[3] as i64,
                data_stored: v[4] as i64,
                data_compressed: v[5] as i64,
                data_compressed_allocated: v[6] as i64,
                data_compressed_original: v[7] as i64,
                omap_allocated: v[8] as i64,
                internal_metadata: v[9] as i64,
            })
        })
    }
}

/// `pool_stat_t` (v5 to v7): a pool's object counters and, from v7, its
/// store usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStat {
    /// The counters (`stats.sum`; the collection's per-category map is
    /// always empty).
    pub sum: ObjectStatSum,
    /// PG log entries.
    pub log_size: i64,
    /// PG log entries on disk.
    pub ondisk_log_size: i64,
    /// OSDs in the pool's PGs' up sets (v6+).
    pub up: i32,
    /// OSDs in the pool's PGs' acting sets (v6+).
    pub acting: i32,
    /// The store's usage of the pool (v7+).
    pub store_stats: StoreStatfs,
    /// How many OSD reports the store stats sum (v7+; an int32_t).
    pub num_store_stats: i32,
}

impl PoolStat {
    /// `get_allocated_data_bytes + get_allocated_omap_bytes`: what
    /// librados reports as the pool's `num_bytes`.
    pub fn allocated_bytes(&self, per_pool: bool) -> u64 {
        match per_pool {
            true => (self.store_stats.allocated as u64)
                .wrapping_add(self.store_stats.omap_allocated as u64),
            false => (self.sum.num_bytes as u64)
                .wrapping_add(self.sum.num_bytes_hit_set_archive as u64)
                .wrapping_add(self.sum.num_omap_bytes as u64),
        }
    }
}

impl Encode for PoolStat {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 7, 5, |o| {
            // object_stat_collection_t v2: the sum, and an empty map.
            encode_versioned(o, 2, 2, |o| {
                self.sum.encode(o);
                o.put_u32_le(0);
            });
            o.put_i64_le(self.log_size);
            o.put_i64_le(self.ondisk_log_size);
            o.put_i32_le(self.up);
            o.put_i32_le(self.acting);
            self.store_stats.encode(o);
            o.put_i32_le(self.num_store_stats);
        });
    }
}

impl Decode for PoolStat {
    const MIN_ENCODED_LEN: usize = ENVELOPE_HEADER_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "pool_stat_t", 7, |d, v| {
            if v < 5 {
                return Err(msgr_encoding::DecodeError::InvalidValue {
                    what: "pool_stat_t version (5 or newer expected)",
                    value: v.into(),
                });
            }
            let sum = decode_versioned(d, "object_stat_collection_t", 2, |d, _| {
                // The per-category sums (always empty since Luminous) are
                // read past with the rest of the envelope.
                ObjectStatSum::decode(d)
            })?;
            let log_size = d.u64("pool_stat_t.log_size")? as i64;
            let ondisk_log_size = d.u64("pool_stat_t.ondisk_log_size")? as i64;
            let (up, acting) = match v >= 6 {
                true => (
                    d.u32("pool_stat_t.up")? as i32,
                    d.u32("pool_stat_t.acting")? as i32,
                ),
                false => (0, 0),
            };
            let (store_stats, num_store_stats) = match v >= 7 {
                true => (
                    StoreStatfs::decode(d)?,
                    d.u32("pool_stat_t.num_store_stats")? as i32,
                ),
                false => (StoreStatfs::default(), 0),
            };
            Ok(PoolStat {
                sum,
                log_size,
                ondisk_log_size,
                up,
                acting,
                store_stats,
                num_store_stats,
            })
        })
    }
}

/// `MGetPoolStatsReply` (v2): each pool's stats, by name, and whether
/// they are per-pool store stats (all OSDs report them) or legacy sums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MGetPoolStatsReply {
    /// The tid of the request answered.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The stats, by pool name (pools that do not exist are left out).
    pub pool_stats: BTreeMap<String, PoolStat>,
    /// Whether the store stats are per pool (v2+).
    pub per_pool: bool,
}

impl TypedMessage for MGetPoolStatsReply {
    const TYPE: u16 = MSG_GETPOOLSTATSREPLY;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        paxos_encode(&mut o);
        self.fsid.encode(&mut o);
        self.pool_stats.encode(&mut o);
        o.put_u8(self.per_pool.into());
        message(MSG_GETPOOLSTATSREPLY, self.tid, o, 2)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_GETPOOLSTATSREPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        paxos_decode(&mut d)?;
        let fsid = Uuid::decode(&mut d)?;
        let pool_stats = BTreeMap::decode(&mut d)?;
        let per_pool = msg.version >= 2 && d.u8("MGetPoolStatsReply.per_pool")? != 0;
        Ok(MGetPoolStatsReply {
            tid: msg.tid,
            fsid,
            pool_stats,
            per_pool,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sum's encoded length at v20 (36 i64s and 4 i32s, after the
    /// envelope).
    const STAT_SUM_V20_LEN: usize = 36 * 8 + 4 * 4;

    fn sample() -> PoolStat {
        PoolStat {
            sum: ObjectStatSum {
                num_bytes: 4096,
                num_objects: 3,
                num_object_copies: 6,
                num_rd: 9,
                num_rd_kb: 10,
                num_wr: 11,
                num_wr_kb: 12,
                num_objects_misplaced: 2,
                num_omap_bytes: 20000,
                num_omap_keys: 200,
                ..Default::default()
            },
            log_size: 99,
            ondisk_log_size: 88,
            up: 2,
            acting: 2,
            store_stats: StoreStatfs {
                allocated: 8192,
                data_stored: 4096,
                omap_allocated: 100,
                data_compressed_original: 13,
                ..Default::default()
            },
            num_store_stats: 2,
        }
    }

    #[test]
    fn a_pool_stat_reply_round_trips() {
        let r = MGetPoolStatsReply {
            tid: 7,
            fsid: Uuid([3; 16]),
            pool_stats: BTreeMap::from([("test".to_string(), sample())]),
            per_pool: true,
        };
        let m = r.to_message(0);
        assert_eq!(MGetPoolStatsReply::from_message(&m).unwrap(), r);
    }

    /// The sum at v20 is 304 bytes after its envelope, as Ceph's memcpy of
    /// the struct writes it.
    #[test]
    fn the_stat_sum_is_as_long_as_cephs_struct() {
        let mut o = Vec::new();
        sample().sum.encode(&mut o);
        assert_eq!(o.len(), ENVELOPE_HEADER_LEN + STAT_SUM_V20_LEN);
        assert_eq!(&o[..2], &[20, 14]);
    }

    /// An older sum (v14: no legacy snapsets, large omap, manifest, omap
    /// bytes) decodes, the fields it lacks at zero; a newer one's extra
    /// fields are read past.
    #[test]
    fn older_and_newer_sums_decode() {
        let mut body = Vec::new();
        for i in 0..28i64 {
            body.put_i64_le(i + 1);
        }
        body.put_bytes(0, 16 + 16);
        let mut old = vec![14, 14];
        old.put_u32_le(body.len() as u32);
        old.extend_from_slice(&body);
        let s = ObjectStatSum::decode(&mut Decoder::new(&old)).unwrap();
        assert_eq!(
            (s.num_bytes, s.num_wr_kb, s.num_objects_misplaced),
            (1, 11, 22)
        );
        assert_eq!(s.num_omap_bytes, 0);

        let mut newer = Vec::new();
        sample().sum.encode(&mut newer);
        newer[0] = 21;
        newer.extend_from_slice(&[0xee; 8]);
        let len = u32::from_le_bytes(newer[2..6].try_into().unwrap()) + 8;
        newer[2..6].copy_from_slice(&len.to_le_bytes());
        let mut d = Decoder::new(&newer);
        assert_eq!(ObjectStatSum::decode(&mut d).unwrap(), sample().sum);
        assert!(d.is_empty());
    }

    #[test]
    fn truncated_or_overlong_stats_are_errors() {
        let m = MGetPoolStatsReply {
            tid: 1,
            fsid: Uuid([0; 16]),
            pool_stats: BTreeMap::from([("p".to_string(), sample())]),
            per_pool: false,
        }
        .to_message(0);
        for cut in 0..m.front.len() - 1 {
            let mut short = m.clone();
            short.front = m.front.slice(..cut);
            assert!(
                MGetPoolStatsReply::from_message(&short).is_err(),
                "cut {cut}"
            );
        }
        // A map claiming more pools than bytes: refused before allocating.
        let mut o = Vec::new();
        paxos_encode(&mut o);
        o.extend_from_slice(&[0; 16]);
        o.put_u32_le(u32::MAX);
        let mut huge = m.clone();
        huge.front = Bytes::from(o);
        assert!(MGetPoolStatsReply::from_message(&huge).is_err());
    }

    #[test]
    fn librados_counts_allocated_bytes_per_pool_or_from_the_sums() {
        let s = sample();
        assert_eq!(s.allocated_bytes(true), 8192 + 100);
        assert_eq!(s.allocated_bytes(false), 4096 + 20000);
    }

    #[test]
    fn statfs_round_trips() {
        let q = MStatfs {
            tid: 3,
            fsid: Uuid([1; 16]),
            data_pool: Some(5),
        };
        assert_eq!(MStatfs::from_message(&q.to_message(0)).unwrap(), q);
        let q = MStatfs {
            data_pool: None,
            ..q
        };
        assert_eq!(MStatfs::from_message(&q.to_message(0)).unwrap(), q);
        let r = MStatfsReply {
            tid: 3,
            fsid: Uuid([1; 16]),
            version: 12,
            st: CephStatfs {
                kb: 100,
                kb_used: 40,
                kb_avail: 60,
                num_objects: 7,
            },
        };
        let m = r.to_message(0);
        assert_eq!(m.front.len(), 56);
        assert_eq!(MStatfsReply::from_message(&m).unwrap(), r);
        let q = MGetPoolStats {
            tid: 4,
            fsid: Uuid([2; 16]),
            pools: vec!["a".into(), "b".into()],
        };
        assert_eq!(MGetPoolStats::from_message(&q.to_message(0)).unwrap(), q);
    }
}
