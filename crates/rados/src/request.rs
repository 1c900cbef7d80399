//! What a client asks of one object: a list of ops (`ObjectOperation`),
//! each a `ceph_osd_op` with its input data, and what their replies hold
//! (src/osdc/Objecter.h, src/include/rados.h; docs/research/rados-ops.md).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use msgr_encoding::{Decode, DecodeError, Decoder, Encode, UTime};
use msgr_messages::osd_types::{op, OsdOp};
use msgr_messages::HObject;

/// `CEPH_OSD_OP_*` beyond the data ops the messages crate names.
pub mod code {
    pub use msgr_messages::osd_types::op::*;
    /// `CEPH_OSD_OP_TRUNCATE`.
    pub const TRUNCATE: u16 = 0x2203;
    /// `CEPH_OSD_OP_ZERO`.
    pub const ZERO: u16 = 0x2204;
    /// `CEPH_OSD_OP_APPEND`.
    pub const APPEND: u16 = 0x2206;
    /// `CEPH_OSD_OP_CREATE`.
    pub const CREATE: u16 = 0x220d;
    /// `CEPH_OSD_OP_GETXATTR`.
    pub const GETXATTR: u16 = 0x1301;
    /// `CEPH_OSD_OP_GETXATTRS`.
    pub const GETXATTRS: u16 = 0x1302;
    /// `CEPH_OSD_OP_SETXATTR`.
    pub const SETXATTR: u16 = 0x2301;
    /// `CEPH_OSD_OP_RMXATTR`.
    pub const RMXATTR: u16 = 0x2304;
    /// `CEPH_OSD_OP_OMAPGETKEYS`.
    pub const OMAPGETKEYS: u16 = 0x1211;
    /// `CEPH_OSD_OP_OMAPGETVALS`.
    pub const OMAPGETVALS: u16 = 0x1212;
    /// `CEPH_OSD_OP_OMAPSETVALS`.
    pub const OMAPSETVALS: u16 = 0x2215;
    /// `CEPH_OSD_OP_OMAPRMKEYS`.
    pub const OMAPRMKEYS: u16 = 0x2218;
    /// `CEPH_OSD_OP_PGNLS`.
    pub const PGNLS: u16 = 0x1505;
    /// `CEPH_OSD_OP_SETALLOCHINT`.
    pub const SETALLOCHINT: u16 = 0x2223;
}

/// `CEPH_OSD_OP_FLAG_EXCL`: create fails if the object exists.
pub const OP_FLAG_EXCL: u32 = 1;

/// `CEPH_OSD_FLAG_*` a request carries; those a caller may set on an
/// operation (`WriteOp::set_flags`, `ReadOp::set_flags`), and
/// [`from_librados`](flag::from_librados), librados's `translate_flags`.
pub mod flag {
    /// `CEPH_OSD_FLAG_ONDISK`.
    pub const ONDISK: u32 = 0x4;
    /// `CEPH_OSD_FLAG_READ`.
    pub const READ: u32 = 0x10;
    /// `CEPH_OSD_FLAG_WRITE`.
    pub const WRITE: u32 = 0x20;
    /// `CEPH_OSD_FLAG_PGOP`.
    pub const PGOP: u32 = 0x400;
    /// `CEPH_OSD_FLAG_IGNORE_CACHE`.
    pub const IGNORE_CACHE: u32 = 0x8000;
    /// `CEPH_OSD_FLAG_IGNORE_OVERLAY`.
    pub const IGNORE_OVERLAY: u32 = 0x20000;
    /// `CEPH_OSD_FLAG_REDIRECTED`.
    pub const REDIRECTED: u32 = 0x20_0000;
    /// `CEPH_OSD_FLAG_KNOWN_REDIR`.
    pub const KNOWN_REDIR: u32 = 0x40_0000;
    /// `CEPH_OSD_FLAG_FULL_FORCE`.
    pub const FULL_FORCE: u32 = 0x100_0000;
    /// `BALANCE_READS`: a read goes to a random member of the acting set.
    pub const BALANCE_READS: u32 = 0x100;
    /// `LOCALIZE_READS`: a read goes to the closest replica (the primary
    /// when no CRUSH location is known, as here).
    pub const LOCALIZE_READS: u32 = 0x2000;
    /// `RWORDERED` (`LIBRADOS_OPERATION_ORDER_READS_WRITES`).
    pub const ORDER_READS_WRITES: u32 = 0x4000;
    /// `SKIPRWLOCKS`.
    pub const SKIPRWLOCKS: u32 = 0x1_0000;
    /// `FULL_TRY`: run despite a full pool or cluster (fails with EDQUOT
    /// or ENOSPC only if it adds data).
    pub const FULL_TRY: u32 = 0x80_0000;
    /// `IGNORE_REDIRECT`.
    pub const IGNORE_REDIRECT: u32 = 0x200_0000;
    /// `ORDERSNAP`: EOLDSNAPC if the snap context is older than the
    /// object's.
    pub const ORDERSNAP: u32 = 0x40;
    /// `RETURNVEC`: a write returns each op's rval and output too.
    pub const RETURNVEC: u32 = 0x400_0000;

    /// `LIBRADOS_OPERATION_*` bits to `CEPH_OSD_FLAG_*` (librados's
    /// `translate_flags`); unknown bits are dropped.
    pub fn from_librados(flags: u32) -> u32 {
        const MAP: [(u32, u32); 11] = [
            (1, BALANCE_READS),
            (2, LOCALIZE_READS),
            (4, ORDER_READS_WRITES),
            (8, IGNORE_CACHE),
            (16, SKIPRWLOCKS),
            (32, IGNORE_OVERLAY),
            (64, FULL_TRY),
            (128, FULL_FORCE),
            (256, IGNORE_REDIRECT),
            (512, ORDERSNAP),
            (1024, RETURNVEC),
        ];
        MAP.iter()
            .filter(|(l, _)| flags & l != 0)
            .fold(0, |acc, (_, c)| acc | c)
    }

    /// The flags callers may set (others are the objecter's).
    pub(crate) const ALLOWED: u32 = BALANCE_READS
        | LOCALIZE_READS
        | ORDER_READS_WRITES
        | IGNORE_CACHE
        | SKIPRWLOCKS
        | IGNORE_OVERLAY
        | FULL_TRY
        | FULL_FORCE
        | IGNORE_REDIRECT
        | ORDERSNAP
        | RETURNVEC;
}

/// A write's snap context (`SnapContext`): the newest snapshot sequence
/// of the pool or of the application's self-managed snapshots, and the
/// snapshots that exist, newest first. The default (seq 0, none) is what
/// writes to a pool without snapshots carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapContext {
    /// The newest snapshot id the writer knows of.
    pub seq: u64,
    /// The existing snapshot ids, newest first.
    pub snaps: Vec<u64>,
}

/// One op and its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// The op: its code, flags and arguments.
    pub op: OsdOp,
    /// Its input data.
    pub indata: Bytes,
}

impl Op {
    pub(crate) fn new(code: u16) -> Op {
        Op {
            op: OsdOp {
                op: code,
                ..OsdOp::default()
            },
            indata: Bytes::new(),
        }
    }

    pub(crate) fn extent(code: u16, offset: u64, length: u64, indata: Bytes) -> Op {
        Op {
            op: OsdOp::extent(code, offset, length),
            indata,
        }
    }

    /// The `xattr` union member: name and value lengths.
    pub(crate) fn xattr(code: u16, name: &str, value: &[u8]) -> Op {
        let mut o = Op::new(code);
        o.op.args[..4].copy_from_slice(&(name.len() as u32).to_le_bytes());
        o.op.args[4..8].copy_from_slice(&(value.len() as u32).to_le_bytes());
        let mut indata = Vec::with_capacity(name.len().saturating_add(value.len()));
        indata.extend_from_slice(name.as_bytes());
        indata.extend_from_slice(value);
        o.indata = Bytes::from(indata);
        o
    }

    /// Whether the op changes the object (`CEPH_OSD_OP_MODE_WR`).
    pub fn writes(&self) -> bool {
        self.op.op & 0x2000 != 0
    }
}

/// Ops on one object, run by its primary OSD in order, all or nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ops(pub Vec<Op>);

impl Ops {
    /// No ops.
    pub fn new() -> Ops {
        Ops(Vec::new())
    }

    pub(crate) fn push(mut self, op: Op) -> Ops {
        self.0.push(op);
        self
    }

    /// Writes `data` at `offset`.
    pub fn write(self, offset: u64, data: Bytes) -> Ops {
        let len = data.len() as u64;
        self.push(Op::extent(code::WRITE, offset, len, data))
    }

    /// Replaces the object's content with `data`.
    pub fn write_full(self, data: Bytes) -> Ops {
        let len = data.len() as u64;
        self.push(Op::extent(code::WRITEFULL, 0, len, data))
    }

    /// Appends `data`.
    pub fn append(self, data: Bytes) -> Ops {
        let len = data.len() as u64;
        self.push(Op::extent(code::APPEND, 0, len, data))
    }

    /// Reads `length` bytes from `offset` (0: to the end).
    pub fn read(self, offset: u64, length: u64) -> Ops {
        self.push(Op::extent(code::READ, offset, length, Bytes::new()))
    }

    /// The object's size and modification time ([`Stat`]).
    pub fn stat(self) -> Ops {
        self.push(Op::new(op::STAT))
    }

    /// Removes the object.
    pub fn remove(self) -> Ops {
        self.push(Op::new(op::DELETE))
    }

    /// Cuts (or extends with zeros) the object to `size` bytes.
    pub fn truncate(self, size: u64) -> Ops {
        self.push(Op::extent(code::TRUNCATE, size, 0, Bytes::new()))
    }

    /// Zeroes `length` bytes from `offset`.
    pub fn zero(self, offset: u64, length: u64) -> Ops {
        self.push(Op::extent(code::ZERO, offset, length, Bytes::new()))
    }

    /// Creates the object; `exclusive`: fail with EEXIST if it exists.
    pub fn create(self, exclusive: bool) -> Ops {
        let mut o = Op::new(code::CREATE);
        if exclusive {
            o.op.flags = OP_FLAG_EXCL;
        }
        self.push(o)
    }

    /// Add SETXATTR: set xattr `name` to `value`.
    pub fn setxattr(self, name: &str, value: &[u8]) -> Ops {
        self.push(Op::xattr(code::SETXATTR, name, value))
    }

    /// Add GETXATTR: read xattr `name`.
    pub fn getxattr(self, name: &str) -> Ops {
        self.push(Op::xattr(code::GETXATTR, name, &[]))
    }

    /// Add RMXATTR: remove xattr `name`.
    pub fn rmxattr(self, name: &str) -> Ops {
        self.push(Op::xattr(code::RMXATTR, name, &[]))
    }

    /// Every xattr ([`decode_xattrs`]).
    pub fn getxattrs(self) -> Ops {
        self.push(Op::new(code::GETXATTRS))
    }

    /// Sets omap keys.
    pub fn omap_set(self, kv: &BTreeMap<String, Bytes>) -> Ops {
        let mut o = Op::new(code::OMAPSETVALS);
        o.indata = kv.to_bytes();
        self.push(o)
    }

    /// Removes omap keys.
    pub fn omap_rm(self, keys: &[String]) -> Ops {
        let mut o = Op::new(code::OMAPRMKEYS);
        let set: std::collections::BTreeSet<&String> = keys.iter().collect();
        let mut v = Vec::new();
        v.put_u32_le(set.len() as u32);
        for k in set {
            k.encode(&mut v);
        }
        o.indata = Bytes::from(v);
        self.push(o)
    }

    /// Up to `max` omap keys after `start_after` ([`decode_omap_keys`]).
    pub fn omap_get_keys(self, start_after: &str, max: u64) -> Ops {
        let mut o = Op::new(code::OMAPGETKEYS);
        let mut v = Vec::new();
        start_after.encode(&mut v);
        v.put_u64_le(max);
        o.indata = Bytes::from(v);
        self.push(o)
    }

    /// Up to `max` omap entries after `start_after` whose keys start with
    /// `prefix` ([`decode_omap_vals`]).
    pub fn omap_get_vals(self, start_after: &str, prefix: &str, max: u64) -> Ops {
        let mut o = Op::new(code::OMAPGETVALS);
        let mut v = Vec::new();
        start_after.encode(&mut v);
        v.put_u64_le(max);
        prefix.encode(&mut v);
        o.indata = Bytes::from(v);
        self.push(o)
    }

    /// PGNLS: up to `count` objects of a PG from `cursor` on
    /// ([`decode_nls`]); `epoch`: the map the listing started in.
    pub fn pg_nls(self, count: u64, cursor: &HObject, epoch: u32) -> Ops {
        let mut o = Op::new(code::PGNLS);
        o.op.args[..8].copy_from_slice(&count.to_le_bytes());
        o.op.args[8..12].copy_from_slice(&epoch.to_le_bytes());
        o.indata = cursor.to_bytes();
        self.push(o)
    }

    /// SETALLOCHINT: how large the object and its writes will be, and how
    /// it is used (`CEPH_OSD_ALLOC_HINT_FLAG_*`).
    pub fn alloc_hint(self, object_size: u64, write_size: u64, flags: u32) -> Ops {
        let mut o = Op::new(code::SETALLOCHINT);
        o.op.args[..8].copy_from_slice(&object_size.to_le_bytes());
        o.op.args[8..16].copy_from_slice(&write_size.to_le_bytes());
        o.op.args[16..20].copy_from_slice(&flags.to_le_bytes());
        self.push(o)
    }

    /// Whether any op writes (the request is a write).
    pub fn writes(&self) -> bool {
        self.0.iter().any(Op::writes)
    }

    /// Only removes the object: it goes even to a full pool (librados
    /// sends removes with `FULL_FORCE`, so space can be freed).
    pub fn only_removes(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|o| o.op.op == op::DELETE)
    }

    /// The bytes the request moves: its input data, or what its reads ask
    /// for (the objecter's in-flight byte budget).
    pub fn budget_bytes(&self) -> u64 {
        self.0
            .iter()
            .map(|o| match o.op.op {
                code::READ => o.op.extent_range().1,
                _ => o.indata.len() as u64,
            })
            .fold(0, u64::saturating_add)
    }
}

/// A finished request: the result of the whole, each op's result and
/// output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// 0, or a negative errno.
    pub result: i32,
    /// Each op's result, in order.
    pub ops: Vec<OpReply>,
    /// The object's version after a write (`user_version`).
    pub version: u64,
    /// The OSD that answered.
    pub osd: i32,
}

/// One op's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpReply {
    /// 0, or the op's negative errno.
    pub rval: i32,
    /// The op's output data.
    pub outdata: Bytes,
}

/// What a STAT returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The object's size in bytes.
    pub size: u64,
    /// The object's modification time.
    pub mtime: UTime,
}

/// STAT's output: `u64 size`, then the mtime as a `utime_t`.
pub fn decode_stat(out: &[u8]) -> Result<Stat, DecodeError> {
    let mut d = Decoder::new(out);
    Ok(Stat {
        size: d.u64("stat size")?,
        mtime: UTime::decode(&mut d)?,
    })
}

/// GETXATTRS' output: `map<string, bufferlist>`.
pub fn decode_xattrs(out: &[u8]) -> Result<BTreeMap<String, Bytes>, DecodeError> {
    BTreeMap::decode(&mut Decoder::new(out))
}

/// OMAPGETKEYS' output: the keys, then (when present) whether more follow.
pub fn decode_omap_keys(out: &[u8]) -> Result<(Vec<String>, bool), DecodeError> {
    let mut d = Decoder::new(out);
    let keys = std::collections::BTreeSet::<String>::decode(&mut d)?;
    let more = if d.is_empty() {
        false
    } else {
        bool::decode(&mut d)?
    };
    Ok((keys.into_iter().collect(), more))
}

/// OMAPGETVALS' output: the entries, then whether more follow.
pub fn decode_omap_vals(out: &[u8]) -> Result<(BTreeMap<String, Bytes>, bool), DecodeError> {
    let mut d = Decoder::new(out);
    let vals = BTreeMap::decode(&mut d)?;
    let more = if d.is_empty() {
        false
    } else {
        bool::decode(&mut d)?
    };
    Ok((vals, more))
}

/// Splits a reply's data segment into each op's output by the lengths the
/// ops carry (`split_osd_op_vector_out_data`); `None` if they claim more
/// than there is.
pub fn split_outdata(ops: &[OsdOp], data: &Bytes) -> Option<Vec<OpReply>> {
    let mut at = 0usize;
    ops.iter()
        .map(|o| {
            let end = at.checked_add(o.payload_len as usize)?;
            let out = data.get(at..end).map(|_| data.slice(at..end))?;
            at = end;
            Some(OpReply {
                rval: o.rval,
                outdata: out,
            })
        })
        .collect()
}

/// One object a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The object's namespace.
    pub nspace: String,
    /// The object's name.
    pub name: Bytes,
    /// The object's locator key (empty: none).
    pub locator: String,
}

/// PGNLS' output (`pg_nls_response_t`): where to go on, and what was
/// found.
pub fn decode_nls(out: &[u8]) -> Result<(HObject, Vec<Listed>), DecodeError> {
    let mut d = Decoder::new(out);
    msgr_encoding::decode_versioned(&mut d, "pg_nls_response_t", 1, |d, _| {
        let handle = HObject::decode(d)?;
        let n = d.length("pg_nls_response_t entries", 12)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(Listed {
                nspace: String::decode(d)?,
                name: Bytes::decode(d)?,
                locator: String::decode(d)?,
            });
        }
        Ok((handle, entries))
    })
}
