//! The OSD types MOSDOp and MOSDOpReply carry (src/osd/osd_types.h,
//! src/include/rados.h; docs/research/messages-osdop.md §1).

use bytes::{BufMut, Bytes};
use msgr_encoding::{
    decode_versioned, encode_versioned, Decode, DecodeError, DecodeResult, Decoder, Encode,
    EntityName,
};

/// `pg_t`: `u8 1, u64 pool, u32 seed, i32 -1` (the retired "preferred").
/// Ordered as Ceph orders it (pool, then seed), the order of the OSDMap's
/// maps keyed by pg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PgId {
    /// The pool id.
    pub pool: u64,
    /// The PG's number in the pool (its placement seed).
    pub seed: u32,
}

impl std::fmt::Display for PgId {
    /// As Ceph prints a pg: `1.aabc5e21` (decimal pool, hex seed).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:x}", self.pool, self.seed)
    }
}

impl Encode for PgId {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(1);
        out.put_u64_le(self.pool);
        out.put_u32_le(self.seed);
        out.put_i32_le(-1);
    }
}
impl Decode for PgId {
    const MIN_ENCODED_LEN: usize = 17;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let v = d.u8("pg_t version")?;
        if v != 1 {
            return Err(DecodeError::InvalidValue {
                what: "pg_t version",
                value: v as u64,
            });
        }
        let pool = d.u64("pg_t.pool")?;
        let seed = d.u32("pg_t.seed")?;
        d.skip(4, "pg_t.preferred")?;
        Ok(PgId { pool, seed })
    }
}

/// `spg_t`: ENCODE_START(1, 1), `pg_t`, `i8 shard` (-1: no shard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpgId {
    /// The PG.
    pub pgid: PgId,
    /// The EC shard (`shard_id_t`; −1, NO_SHARD, for replicated pools).
    pub shard: i8,
}

impl Default for SpgId {
    fn default() -> Self {
        SpgId {
            pgid: PgId::default(),
            shard: -1,
        }
    }
}

impl Encode for SpgId {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 1, 1, |o| {
            self.pgid.encode(o);
            o.put_i8(self.shard);
        });
    }
}
impl Decode for SpgId {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "spg_t", 1, |d, _| {
            Ok(SpgId {
                pgid: PgId::decode(d)?,
                shard: d.u8("spg_t.shard")? as i8,
            })
        })
    }
}

/// `osd_reqid_t`: ENCODE_START(2, 2), `entity_name_t`, `u64 tid`, `i32 inc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReqId {
    /// The client's entity name.
    pub name: EntityName,
    /// The client's transaction id.
    pub tid: u64,
    /// The client's incarnation.
    pub inc: i32,
}

impl Encode for ReqId {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 2, 2, |o| {
            self.name.encode(o);
            o.put_u64_le(self.tid);
            o.put_i32_le(self.inc);
        });
    }
}
impl Decode for ReqId {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "osd_reqid_t", 2, |d, _| {
            Ok(ReqId {
                name: EntityName::decode(d)?,
                tid: d.u64("osd_reqid_t.tid")?,
                inc: d.u32("osd_reqid_t.inc")? as i32,
            })
        })
    }
}

/// `object_locator_t`: ENCODE_START(6, compat), `i64 pool`, `i32 -1`,
/// `string key`, `string nspace`, `i64 hash`; compat is 3 unless a hash is
/// set (then 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectLocator {
    /// The pool id.
    pub pool: i64,
    /// The locator key: hashed in place of the object's name when set.
    pub key: String,
    /// The namespace.
    pub nspace: String,
    /// A hash to place by in place of the name's (−1: none).
    pub hash: i64,
}

impl Default for ObjectLocator {
    fn default() -> Self {
        ObjectLocator {
            pool: -1,
            key: String::new(),
            nspace: String::new(),
            hash: -1,
        }
    }
}

impl Encode for ObjectLocator {
    fn encode(&self, out: &mut Vec<u8>) {
        let compat = if self.hash != -1 { 6 } else { 3 };
        encode_versioned(out, 6, compat, |o| {
            o.put_i64_le(self.pool);
            o.put_i32_le(-1);
            self.key.encode(o);
            self.nspace.encode(o);
            o.put_i64_le(self.hash);
        });
    }
}
impl Decode for ObjectLocator {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "object_locator_t", 6, |d, v| {
            let pool = d.u64("object_locator_t.pool")? as i64;
            d.skip(4, "object_locator_t.preferred")?;
            let key = String::decode(d)?;
            let nspace = if v >= 5 {
                String::decode(d)?
            } else {
                String::new()
            };
            let hash = if v >= 6 {
                d.u64("object_locator_t.hash")? as i64
            } else {
                -1
            };
            Ok(ObjectLocator {
                pool,
                key,
                nspace,
                hash,
            })
        })
    }
}

/// `eversion_t`: `u64 version, u32 epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Eversion {
    /// The version within the epoch (the PG log's sequence).
    pub version: u64,
    /// The OSD map epoch.
    pub epoch: u32,
}

impl Encode for Eversion {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.version);
        out.put_u32_le(self.epoch);
    }
}
impl Decode for Eversion {
    const MIN_ENCODED_LEN: usize = 12;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(Eversion {
            version: d.u64("eversion_t.version")?,
            epoch: d.u32("eversion_t.epoch")?,
        })
    }
}

/// `CEPH_OSD_OP_*` codes used here.
pub mod op {
    /// `CEPH_OSD_OP_READ`: read an extent.
    pub const READ: u16 = 0x1201;
    /// `CEPH_OSD_OP_STAT`: the object's size and mtime.
    pub const STAT: u16 = 0x1202;
    /// `CEPH_OSD_OP_WRITE`: write an extent.
    pub const WRITE: u16 = 0x2201;
    /// `CEPH_OSD_OP_WRITEFULL`: replace the whole object.
    pub const WRITEFULL: u16 = 0x2202;
    /// `CEPH_OSD_OP_DELETE`: remove the object.
    pub const DELETE: u16 = 0x2205;
}

/// `CEPH_NOSNAP`: the head object.
pub const NOSNAP: u64 = 0xffff_ffff_ffff_fffe;

/// One op of a request or reply, as Ceph's `OSDOp` holds it: the wire
/// `struct ceph_osd_op` (38 packed bytes: op, flags, a 28-byte union (the
/// extent member for data ops), payload_len (this op's share of the
/// message's data segment)) and the op's result `rval`, which
/// MOSDOpReply carries after the ops and `ceph_osd_op` does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OsdOp {
    /// The opcode (`CEPH_OSD_OP_*`, [`op`]).
    pub op: u16,
    /// `CEPH_OSD_OP_FLAG_*`.
    pub flags: u32,
    /// The op's arguments: the 28-byte union (for data ops, offset, length, truncate_size,
    /// truncate_seq).
    pub args: [u8; 28],
    /// This op's share of the message's data segment.
    pub payload_len: u32,
    /// The op's result in a reply (0 in requests; not part of the 38 bytes).
    pub rval: i32,
}

impl OsdOp {
    /// The wire op's length (`ceph_osd_op`).
    pub const LEN: usize = 38;

    /// An extent op (READ, WRITE, ...) over `offset..offset+length`.
    pub fn extent(op: u16, offset: u64, length: u64) -> OsdOp {
        let mut args = [0u8; 28];
        args[..8].copy_from_slice(&offset.to_le_bytes());
        args[8..16].copy_from_slice(&length.to_le_bytes());
        OsdOp {
            op,
            flags: 0,
            args,
            payload_len: 0,
            rval: 0,
        }
    }

    /// The extent's (offset, length), for extent ops.
    pub fn extent_range(&self) -> (u64, u64) {
        let mut o = [0u8; 8];
        let mut l = [0u8; 8];
        o.copy_from_slice(&self.args[..8]);
        l.copy_from_slice(&self.args[8..16]);
        (u64::from_le_bytes(o), u64::from_le_bytes(l))
    }
}

impl Encode for OsdOp {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16_le(self.op);
        out.put_u32_le(self.flags);
        out.put_slice(&self.args);
        out.put_u32_le(self.payload_len);
    }
}
impl Decode for OsdOp {
    const MIN_ENCODED_LEN: usize = OsdOp::LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(OsdOp {
            op: d.u16("ceph_osd_op.op")?,
            flags: d.u32("ceph_osd_op.flags")?,
            args: d.array("ceph_osd_op union")?,
            payload_len: d.u32("ceph_osd_op.payload_len")?,
            rval: 0,
        })
    }
}

/// The 24-byte blkin trace (`blkin_trace_info`), zeros when untraced.
pub type BlkinTrace = [u8; 24];

/// An OpenTelemetry span context (`jspan_context`, MOSDOp v9): kept as its
/// whole versioned envelope so that it re-encodes exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelTrace(pub Bytes);

impl Default for OtelTrace {
    /// Untraced: ENCODE_START(1, 1), `is_valid = false`.
    fn default() -> Self {
        OtelTrace(Bytes::from_static(&[1, 1, 1, 0, 0, 0, 0]))
    }
}

impl Encode for OtelTrace {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_slice(&self.0);
    }
}
impl Decode for OtelTrace {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let start = d.clone();
        decode_versioned(d, "jspan_context", u8::MAX, |_, _| Ok(()))?;
        // `d` only moved forward from `start`: this cannot fail.
        let Some(len) = d.position().checked_sub(start.position()) else {
            return Err(DecodeError::EnvelopeOverrun {
                what: "jspan_context",
            });
        };
        let mut copy = start;
        Ok(OtelTrace(copy.take_bytes(len, "jspan_context")?))
    }
}
