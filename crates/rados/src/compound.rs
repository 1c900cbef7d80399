//! Compound operations, as librados's `ObjectWriteOperation` /
//! `ObjectReadOperation` (`rados_write_op_*`, `rados_read_op_*`): ops on
//! one object built up, then run atomically in one MOSDOp; each op's
//! result (its `rval`) and output read back through the typed [`Handle`]
//! adding it returned. Each op is encoded as `ObjectOperation` in
//! src/osdc/Objecter.h encodes it (the `ceph_osd_op` union member, the
//! input data); outputs are decoded bounded, a malformed one a typed error.
//!
//! ```no_run
//! # async fn f(io: &msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
//! use msgr_rados::compound::{CmpOp, ReadOp, WriteOp};
//! use msgr_rados::Bytes;
//!
//! // Replace the object only if its xattr "state" is still "ready".
//! let mut w = WriteOp::new();
//! w.cmpxattr("state", CmpOp::Eq, b"ready");
//! w.write_full(Bytes::from_static(b"new content"));
//! w.setxattr("state", b"done");
//! io.operate_write(b"obj", &w).await?;
//!
//! // Read its size, its first 4 bytes and its omap header in one go.
//! let mut r = ReadOp::new();
//! let stat = r.stat();
//! let head = r.read(0, 4);
//! let header = r.omap_get_header();
//! let out = io.operate_read(b"obj", &r).await?;
//! println!("{} bytes, {:?}, header {:?}, version {}",
//!     out.get(stat)?.size, out.get(head)?, out.get(header)?, out.version());
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use msgr_encoding::{Encode, UTime};
use msgr_messages::osd_types::OsdOp;

use crate::error::RadosError;
use crate::ioctx::IoCtx;
use crate::objecter::{Object, Request};
use crate::request::{code, flag, Op, Ops, Reply, Stat};
use crate::snap::SNAPDIR;
use msgr_messages::SnapSet;

/// `CEPH_OSD_OP_*` the compound ops add to [`code`].
pub mod opcode {
    /// `CEPH_OSD_OP_SPARSE_READ`.
    pub const SPARSE_READ: u16 = 0x1205;
    /// `CEPH_OSD_OP_ASSERT_VER`.
    pub const ASSERT_VER: u16 = 0x1208;
    /// `CEPH_OSD_OP_LIST_SNAPS`.
    pub const LIST_SNAPS: u16 = 0x120a;
    /// `CEPH_OSD_OP_OMAPGETHEADER`.
    pub const OMAPGETHEADER: u16 = 0x1213;
    /// `CEPH_OSD_OP_OMAPGETVALSBYKEYS`.
    pub const OMAPGETVALSBYKEYS: u16 = 0x1214;
    /// `CEPH_OSD_OP_OMAP_CMP`.
    pub const OMAP_CMP: u16 = 0x1219;
    /// `CEPH_OSD_OP_CHECKSUM`.
    pub const CHECKSUM: u16 = 0x121f;
    /// `CEPH_OSD_OP_CMPEXT`.
    pub const CMPEXT: u16 = 0x1220;
    /// `CEPH_OSD_OP_CMPXATTR`.
    pub const CMPXATTR: u16 = 0x1303;
    /// `CEPH_OSD_OP_OMAPSETHEADER`.
    pub const OMAPSETHEADER: u16 = 0x2216;
    /// `CEPH_OSD_OP_OMAPCLEAR`.
    pub const OMAPCLEAR: u16 = 0x2217;
    /// `CEPH_OSD_OP_WRITESAME`.
    pub const WRITESAME: u16 = 0x2226;
    /// `CEPH_OSD_OP_OMAPRMKEYRANGE`.
    pub const OMAPRMKEYRANGE: u16 = 0x222c;
}

/// Per-op flags (`CEPH_OSD_OP_FLAG_*`, the same bits as
/// `LIBRADOS_OP_FLAG_*`), set on the last op added with
/// [`WriteOp::set_op_flags`] / [`ReadOp::set_op_flags`].
pub mod op_flag {
    /// `EXCL`: create fails if the object exists.
    pub const EXCL: u32 = 0x1;
    /// `FAILOK`: the op's failure does not fail the whole.
    pub const FAILOK: u32 = 0x2;
    /// `FADVISE_RANDOM`.
    pub const FADVISE_RANDOM: u32 = 0x4;
    /// `FADVISE_SEQUENTIAL`.
    pub const FADVISE_SEQUENTIAL: u32 = 0x8;
    /// `FADVISE_WILLNEED`.
    pub const FADVISE_WILLNEED: u32 = 0x10;
    /// `FADVISE_DONTNEED`.
    pub const FADVISE_DONTNEED: u32 = 0x20;
    /// `FADVISE_NOCACHE`.
    pub const FADVISE_NOCACHE: u32 = 0x40;
}

/// `MAX_ERRNO`: a CMPEXT mismatch at offset `n` is the result
/// `-MAX_ERRNO - n`.
pub const MAX_ERRNO: i64 = 4095;

/// The offset of the first differing byte a CMPEXT result says, if it is
/// a mismatch (`-MAX_ERRNO - offset`).
///
/// ```
/// use msgr_rados::compound::cmpext_mismatch;
/// assert_eq!(cmpext_mismatch(-4095 - 7), Some(7));
/// assert_eq!(cmpext_mismatch(-2), None, "ENOENT is not a mismatch");
/// ```
pub fn cmpext_mismatch(rval: i32) -> Option<u64> {
    let r = i64::from(rval);
    (r <= -MAX_ERRNO).then(|| (-MAX_ERRNO).abs_diff(r))
}

/// How CMPXATTR and OMAP_CMP compare (`CEPH_OSD_CMPXATTR_OP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CmpOp {
    /// Equal.
    Eq = 1,
    /// Not equal.
    Ne = 2,
    /// The stored value is greater.
    Gt = 3,
    /// Greater or equal.
    Gte = 4,
    /// The stored value is less.
    Lt = 5,
    /// Less or equal.
    Lte = 6,
}

/// What CMPXATTR compares as (`CEPH_OSD_CMPXATTR_MODE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CmpMode {
    /// Bytes, as strings.
    String = 1,
    /// Decimal numbers (the OSD parses both as u64).
    U64 = 2,
}

/// An op added to a [`WriteOp`] or [`ReadOp`]: where its rval and
/// output are in the [`OpResults`], and what its output decodes to.
pub struct Handle<T> {
    index: usize,
    _out: PhantomData<fn() -> T>,
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> std::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle({})", self.index)
    }
}

impl<T> Handle<T> {
    fn new(index: usize) -> Handle<T> {
        Handle {
            index,
            _out: PhantomData,
        }
    }

    /// The op's position in its operation.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// The ops both kinds of operation share: the list, the flags.
#[derive(Debug, Clone, Default)]
struct Builder {
    ops: Vec<Op>,
    flags: u32,
}

impl Builder {
    fn push<T>(&mut self, op: Op) -> Handle<T> {
        self.ops.push(op);
        Handle::new(self.ops.len().saturating_sub(1))
    }

    /// `add_data`: the extent member, `indata` its input.
    fn data<T>(&mut self, code: u16, off: u64, len: u64, indata: Bytes) -> Handle<T> {
        self.push(Op::extent(code, off, len, indata))
    }

    /// `add_data` with `len` the input's length (omap ops, CMPEXT).
    fn sized<T>(&mut self, code: u16, indata: Bytes) -> Handle<T> {
        let len = indata.len() as u64;
        self.data(code, 0, len, indata)
    }

    fn set_op_flags(&mut self, flags: u32) {
        if let Some(o) = self.ops.last_mut() {
            o.op.flags |= flags;
        }
    }

    fn cmpext(&mut self, offset: u64, cmp: Bytes) -> Handle<()> {
        let len = cmp.len() as u64;
        self.data(opcode::CMPEXT, offset, len, cmp)
    }

    fn cmpxattr(&mut self, name: &str, op: CmpOp, mode: CmpMode, value: &[u8]) -> Handle<()> {
        let mut o = Op::xattr(opcode::CMPXATTR, name, value);
        o.op.args[8] = op as u8;
        o.op.args[9] = mode as u8;
        self.push(o)
    }

    fn assert_version(&mut self, version: u64) -> Handle<()> {
        let mut o = Op::new(opcode::ASSERT_VER);
        o.op.args[8..16].copy_from_slice(&version.to_le_bytes());
        self.push(o)
    }

    fn omap_cmp(&mut self, assertions: &BTreeMap<String, (Bytes, CmpOp)>) -> Handle<()> {
        let m: BTreeMap<&String, (&Bytes, i32)> = assertions
            .iter()
            .map(|(k, (v, op))| (k, (v, *op as i32)))
            .collect();
        self.sized(opcode::OMAP_CMP, m.to_bytes())
    }
}

/// Ops that change one object, run atomically: all apply or none
/// (`ObjectWriteOperation`, `rados_write_op_t`). Run with
/// [`IoCtx::operate_write`].
///
/// ```no_run
/// use msgr_rados::compound::CmpOp;
/// use msgr_rados::{Bytes, WriteOp};
/// # async fn f(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
/// // Bump a version xattr only if it still says "1"; write the new body
/// // and an index entry with it, or nothing at all.
/// let mut op = WriteOp::new();
/// op.cmpxattr("version", CmpOp::Eq, b"1");
/// op.write_full(Bytes::from_static(b"body v2"));
/// op.setxattr("version", b"2");
/// op.omap_set(&[("v2".to_string(), Bytes::from_static(b"ok"))].into());
/// match io.operate_write(b"doc", &op).await {
///     Ok(_) => println!("now at object version {}", io.last_version()),
///     // ECANCELED: the xattr compare failed, nothing was written.
///     Err(e) if e.errno() == Some(-125) => println!("someone else wrote first"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteOp {
    b: Builder,
    mtime: Option<UTime>,
}

impl WriteOp {
    /// No ops yet; each builder call adds one, in order, and returns the
    /// handle its result is read by.
    ///
    /// ```
    /// use msgr_rados::{Bytes, WriteOp};
    ///
    /// let mut op = WriteOp::new();
    /// let created = op.create(true);
    /// op.write_full(Bytes::from_static(b"body"));
    /// op.setxattr("owner", b"me");
    /// assert_eq!((op.len(), created.index()), (3, 0));
    /// // CEPH_OSD_OP_CREATE, WRITEFULL, SETXATTR, as the OSD reads them.
    /// let codes: Vec<u16> = op.ops().iter().map(|o| o.op.op).collect();
    /// assert_eq!(codes, [0x220d, 0x2202, 0x2301]);
    /// ```
    pub fn new() -> WriteOp {
        WriteOp::default()
    }

    /// How many ops it holds.
    pub fn len(&self) -> usize {
        self.b.ops.len()
    }

    /// Whether it holds no ops (running it does nothing, as librados).
    pub fn is_empty(&self) -> bool {
        self.b.ops.is_empty()
    }

    /// The ops, as they go on the wire.
    pub fn ops(&self) -> &[Op] {
        &self.b.ops
    }

    /// Request flags ([`flag`]); replaces earlier ones.
    pub fn set_flags(&mut self, flags: u32) {
        self.b.flags = flags & flag::ALLOWED;
    }

    /// Per-op flags ([`op_flag`]) on the op added last
    /// (`rados_write_op_set_flags`).
    pub fn set_op_flags(&mut self, flags: u32) {
        self.b.set_op_flags(flags);
    }

    /// Replaces the per-op flags of the op added last with `flags`
    /// (librados's `set_last_op_flags`, which `rados_write_op_set_flags`
    /// calls: an assignment, where [`WriteOp::set_op_flags`] adds bits).
    pub fn set_last_op_flags(&mut self, flags: u32) {
        if let Some(o) = self.b.ops.last_mut() {
            o.op.flags = flags;
        }
    }

    /// Adds `op` as it is (a class call, [`Op::call`]; an op built
    /// elsewhere); its output is read as `T`.
    pub fn add_op<T>(&mut self, op: Op) -> Handle<T> {
        self.b.push(op)
    }

    /// The modification time the write records (default: now).
    pub fn set_mtime(&mut self, mtime: UTime) {
        self.mtime = Some(mtime);
    }

    /// Creates the object; `exclusive`: fail with EEXIST if it exists.
    pub fn create(&mut self, exclusive: bool) -> Handle<()> {
        let h = self.b.push(Op::new(code::CREATE));
        if exclusive {
            self.b.set_op_flags(op_flag::EXCL);
        }
        h
    }

    /// Fails with ENOENT unless the object exists (a STAT, as librados's
    /// `assert_exists`).
    pub fn assert_exists(&mut self) -> Handle<()> {
        self.b.push(Op::new(code::STAT))
    }

    /// Fails unless the object's version is `version`: ERANGE if it is
    /// newer, EOVERFLOW if older.
    pub fn assert_version(&mut self, version: u64) -> Handle<()> {
        self.b.assert_version(version)
    }

    /// Fails with ECANCELED unless xattr `name` compares to `value` as
    /// `op` says (as strings; `rados_write_op_cmpxattr`).
    pub fn cmpxattr(&mut self, name: &str, op: CmpOp, value: &[u8]) -> Handle<()> {
        self.b.cmpxattr(name, op, CmpMode::String, value)
    }

    /// [`WriteOp::cmpxattr`] with a comparison `mode` (numbers: [`CmpMode::U64`]).
    pub fn cmpxattr_mode(
        &mut self,
        name: &str,
        op: CmpOp,
        mode: CmpMode,
        value: &[u8],
    ) -> Handle<()> {
        self.b.cmpxattr(name, op, mode, value)
    }

    /// Fails unless the object's bytes from `offset` equal `cmp`; a
    /// mismatch's rval is `-MAX_ERRNO - offset of the first difference`
    /// ([`cmpext_mismatch`]).
    pub fn cmpext(&mut self, offset: u64, cmp: Bytes) -> Handle<()> {
        self.b.cmpext(offset, cmp)
    }

    /// Fails with ECANCELED unless each omap key's value compares to the
    /// given one as its [`CmpOp`] says (`omap_cmp`).
    pub fn omap_cmp(&mut self, assertions: &BTreeMap<String, (Bytes, CmpOp)>) -> Handle<()> {
        self.b.omap_cmp(assertions)
    }

    /// Writes `data` at `offset`.
    pub fn write(&mut self, offset: u64, data: Bytes) -> Handle<()> {
        let len = data.len() as u64;
        self.b.data(code::WRITE, offset, len, data)
    }

    /// Replaces the object's data with `data`.
    pub fn write_full(&mut self, data: Bytes) -> Handle<()> {
        self.b.sized(code::WRITEFULL, data)
    }

    /// Writes `data` repeated over `length` bytes from `offset`.
    pub fn writesame(&mut self, offset: u64, length: u64, data: Bytes) -> Handle<()> {
        let mut o = Op::new(opcode::WRITESAME);
        o.op.args[..8].copy_from_slice(&offset.to_le_bytes());
        o.op.args[8..16].copy_from_slice(&length.to_le_bytes());
        o.op.args[16..24].copy_from_slice(&(data.len() as u64).to_le_bytes());
        o.indata = data;
        self.b.push(o)
    }

    /// Appends `data`.
    pub fn append(&mut self, data: Bytes) -> Handle<()> {
        self.b.sized(code::APPEND, data)
    }

    /// Cuts (or extends with zeros) the object to `size` bytes.
    pub fn truncate(&mut self, size: u64) -> Handle<()> {
        self.b.data(code::TRUNCATE, size, 0, Bytes::new())
    }

    /// Zeroes `length` bytes from `offset` (`length` 0 is refused when
    /// run, with EINVAL: it aborts a Ceph 16 OSD).
    pub fn zero(&mut self, offset: u64, length: u64) -> Handle<()> {
        self.b.data(code::ZERO, offset, length, Bytes::new())
    }

    /// Removes the object.
    pub fn remove(&mut self) -> Handle<()> {
        self.b.data(code::DELETE, 0, 0, Bytes::new())
    }

    /// Sets xattr `name` to `value`.
    pub fn setxattr(&mut self, name: &str, value: &[u8]) -> Handle<()> {
        self.b.push(Op::xattr(code::SETXATTR, name, value))
    }

    /// Removes xattr `name`.
    pub fn rmxattr(&mut self, name: &str) -> Handle<()> {
        self.b.push(Op::xattr(code::RMXATTR, name, &[]))
    }

    /// Sets omap entries.
    pub fn omap_set(&mut self, kv: &BTreeMap<String, Bytes>) -> Handle<()> {
        self.b.sized(code::OMAPSETVALS, kv.to_bytes())
    }

    /// Removes omap keys.
    pub fn omap_rm_keys(&mut self, keys: &BTreeSet<String>) -> Handle<()> {
        self.b.sized(code::OMAPRMKEYS, keys.to_bytes())
    }

    /// Removes the omap keys from `begin` (included) to `end` (excluded).
    pub fn omap_rm_range(&mut self, begin: &str, end: &str) -> Handle<()> {
        let mut v = Vec::new();
        begin.encode(&mut v);
        end.encode(&mut v);
        self.b.sized(opcode::OMAPRMKEYRANGE, Bytes::from(v))
    }

    /// Removes every omap entry (not the header).
    pub fn omap_clear(&mut self) -> Handle<()> {
        self.b.push(Op::new(opcode::OMAPCLEAR))
    }

    /// Sets the omap header.
    pub fn omap_set_header(&mut self, header: Bytes) -> Handle<()> {
        self.b.sized(opcode::OMAPSETHEADER, header)
    }
}

/// Ops that read one object, run together (`ObjectReadOperation`,
/// `rados_read_op_t`); each adder returns the [`Handle`] its output is
/// read with. Run with [`IoCtx::operate_read`].
///
/// ```no_run
/// use msgr_rados::ReadOp;
/// # async fn f(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
/// let mut op = ReadOp::new();
/// let stat = op.stat();
/// let head = op.read(0, 4096);
/// let attrs = op.getxattrs();
/// let r = io.operate_read(b"doc", &op).await?;
/// println!(
///     "{} bytes, first {} read, {} xattrs",
///     r.get(stat)?.size,
///     r.get(head)?.len(),
///     r.get(attrs)?.len()
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReadOp {
    b: Builder,
    /// A LIST_SNAPS is in: the request reads the snap dir.
    snapdir: bool,
}

impl ReadOp {
    /// No ops yet.
    pub fn new() -> ReadOp {
        ReadOp::default()
    }

    /// How many ops it holds.
    pub fn len(&self) -> usize {
        self.b.ops.len()
    }

    /// Whether it holds no ops.
    pub fn is_empty(&self) -> bool {
        self.b.ops.is_empty()
    }

    /// The ops, as they go on the wire.
    pub fn ops(&self) -> &[Op] {
        &self.b.ops
    }

    /// Request flags ([`flag`], e.g. `BALANCE_READS`); replaces
    /// earlier ones.
    pub fn set_flags(&mut self, flags: u32) {
        self.b.flags = flags & flag::ALLOWED;
    }

    /// Per-op flags ([`op_flag`]) on the op added last.
    pub fn set_op_flags(&mut self, flags: u32) {
        self.b.set_op_flags(flags);
    }

    /// Replaces the per-op flags of the op added last with `flags`
    /// (`rados_read_op_set_flags`).
    pub fn set_last_op_flags(&mut self, flags: u32) {
        if let Some(o) = self.b.ops.last_mut() {
            o.op.flags = flags;
        }
    }

    /// Adds `op` as it is (a class call, [`Op::call`]); its output is
    /// read as `T`.
    pub fn add_op<T>(&mut self, op: Op) -> Handle<T> {
        self.b.push(op)
    }

    /// Fails with ENOENT unless the object exists.
    pub fn assert_exists(&mut self) -> Handle<()> {
        self.b.push(Op::new(code::STAT))
    }

    /// Fails unless the object's version is `version` (ERANGE: newer,
    /// EOVERFLOW: older).
    pub fn assert_version(&mut self, version: u64) -> Handle<()> {
        self.b.assert_version(version)
    }

    /// Fails with ECANCELED unless xattr `name` compares to `value` as
    /// `op` says (as strings).
    pub fn cmpxattr(&mut self, name: &str, op: CmpOp, value: &[u8]) -> Handle<()> {
        self.b.cmpxattr(name, op, CmpMode::String, value)
    }

    /// Fails unless the object's bytes from `offset` equal `cmp`
    /// ([`cmpext_mismatch`] reads a mismatch's rval).
    pub fn cmpext(&mut self, offset: u64, cmp: Bytes) -> Handle<()> {
        self.b.cmpext(offset, cmp)
    }

    /// Fails with ECANCELED unless each omap key compares as asked.
    pub fn omap_cmp(&mut self, assertions: &BTreeMap<String, (Bytes, CmpOp)>) -> Handle<()> {
        self.b.omap_cmp(assertions)
    }

    /// The object's size and mtime.
    pub fn stat(&mut self) -> Handle<Stat> {
        self.b.push(Op::new(code::STAT))
    }

    /// `length` bytes from `offset` (0: to the end).
    pub fn read(&mut self, offset: u64, length: u64) -> Handle<Bytes> {
        self.b.data(code::READ, offset, length, Bytes::new())
    }

    /// The extents holding data within `length` bytes from `offset`, and
    /// their data.
    pub fn sparse_read(&mut self, offset: u64, length: u64) -> Handle<SparseRead> {
        self.b
            .data(opcode::SPARSE_READ, offset, length, Bytes::new())
    }

    /// Checksums of `length` bytes from `offset` (0: to the end), one per
    /// `chunk_size` bytes (0: one for all), seeded with `seed` (its low
    /// [`ChecksumType::width`] bytes, little-endian).
    pub fn checksum(
        &mut self,
        kind: ChecksumType,
        seed: u64,
        offset: u64,
        length: u64,
        chunk_size: u32,
    ) -> Handle<Checksums> {
        let mut o = Op::new(opcode::CHECKSUM);
        o.op.args[..8].copy_from_slice(&offset.to_le_bytes());
        o.op.args[8..16].copy_from_slice(&length.to_le_bytes());
        o.op.args[16..20].copy_from_slice(&chunk_size.to_le_bytes());
        o.op.args[20] = kind as u8;
        o.indata = match kind {
            ChecksumType::XxHash64 => Bytes::copy_from_slice(&seed.to_le_bytes()),
            _ => Bytes::copy_from_slice(&(seed as u32).to_le_bytes()),
        };
        self.b.push(o)
    }

    /// Xattr `name`'s value.
    pub fn getxattr(&mut self, name: &str) -> Handle<Bytes> {
        self.b.push(Op::xattr(code::GETXATTR, name, &[]))
    }

    /// Every xattr.
    pub fn getxattrs(&mut self) -> Handle<BTreeMap<String, Bytes>> {
        self.b.push(Op::new(code::GETXATTRS))
    }

    /// Up to `max` omap keys after `start_after` (page on with the last
    /// key while [`OmapKeys::more`]).
    pub fn omap_get_keys(&mut self, start_after: &str, max: u64) -> Handle<OmapKeys> {
        let mut v = Vec::new();
        start_after.encode(&mut v);
        v.extend_from_slice(&max.to_le_bytes());
        self.b.sized(code::OMAPGETKEYS, Bytes::from(v))
    }

    /// Up to `max` omap entries after `start_after` whose keys start
    /// with `prefix`.
    pub fn omap_get_vals(&mut self, start_after: &str, prefix: &str, max: u64) -> Handle<OmapVals> {
        let mut v = Vec::new();
        start_after.encode(&mut v);
        v.extend_from_slice(&max.to_le_bytes());
        prefix.encode(&mut v);
        self.b.sized(code::OMAPGETVALS, Bytes::from(v))
    }

    /// The omap entries of `keys` that exist.
    pub fn omap_get_vals_by_keys(
        &mut self,
        keys: &BTreeSet<String>,
    ) -> Handle<BTreeMap<String, Bytes>> {
        self.b.sized(opcode::OMAPGETVALSBYKEYS, keys.to_bytes())
    }

    /// The omap header (empty if none).
    pub fn omap_get_header(&mut self) -> Handle<Bytes> {
        self.b.push(Op::new(opcode::OMAPGETHEADER))
    }

    /// The object's clones and snapshots; the request then reads the
    /// snap dir (`CEPH_SNAPDIR`), as librados requires of it.
    pub fn list_snaps(&mut self) -> Handle<SnapSet> {
        self.snapdir = true;
        self.b.push(Op::new(opcode::LIST_SNAPS))
    }
}

/// What an operation returned: the whole's result, each op's rval and
/// output, the object's version.
#[derive(Debug, Clone)]
pub struct OpResults {
    ops: Vec<OsdOp>,
    pub(crate) reply: Reply,
}

impl OpResults {
    /// The op's result: 0 (or positive), or its negative errno; 0 for an
    /// op the OSD did not report (a write without `RETURNVEC`).
    pub fn rval<T>(&self, h: Handle<T>) -> i32 {
        self.reply.ops.get(h.index).map_or(0, |o| o.rval)
    }

    /// The op's raw output.
    pub fn outdata<T>(&self, h: Handle<T>) -> Bytes {
        self.reply
            .ops
            .get(h.index)
            .map(|o| o.outdata.clone())
            .unwrap_or_default()
    }

    /// The op's output, decoded; its errno as an error if it failed.
    pub fn get<T: Output>(&self, h: Handle<T>) -> Result<T, RadosError> {
        let name = op_name(self.ops.get(h.index).map_or(0, |o| o.op));
        let rval = self.rval(h);
        if rval < 0 {
            return Err(RadosError::Os {
                errno: rval,
                what: format!("op {} ({name})", h.index),
            });
        }
        let op = self.ops.get(h.index).copied().unwrap_or_default();
        T::decode_output(&op, &self.outdata(h)).map_err(|e| {
            RadosError::BadReply(format!(
                "the output of op {} ({name}): {e}; expected its Ceph encoding",
                h.index
            ))
        })
    }

    /// The object's version after the operation (`user_version`; what
    /// `rados_get_last_version` says after it).
    pub fn version(&self) -> u64 {
        self.reply.version
    }

    /// The whole reply.
    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// The first op that failed, and its errno.
    pub fn failed(&self) -> Option<(usize, i32)> {
        self.reply
            .ops
            .iter()
            .enumerate()
            .find(|(_, o)| o.rval < 0)
            .map(|(i, o)| (i, o.rval))
    }
}

/// An op's name, as Ceph's `ceph_osd_op_name` says it.
pub fn op_name(op: u16) -> &'static str {
    match op {
        code::READ => "read",
        code::STAT => "stat",
        code::WRITE => "write",
        code::WRITEFULL => "writefull",
        code::TRUNCATE => "truncate",
        code::ZERO => "zero",
        code::DELETE => "delete",
        code::APPEND => "append",
        code::CREATE => "create",
        code::GETXATTR => "getxattr",
        code::GETXATTRS => "getxattrs",
        code::SETXATTR => "setxattr",
        code::RMXATTR => "rmxattr",
        code::OMAPGETKEYS => "omap-get-keys",
        code::OMAPGETVALS => "omap-get-vals",
        code::OMAPSETVALS => "omap-set-vals",
        code::OMAPRMKEYS => "omap-rm-keys",
        opcode::SPARSE_READ => "sparse-read",
        opcode::ASSERT_VER => "assert-version",
        opcode::LIST_SNAPS => "list-snaps",
        opcode::OMAPGETHEADER => "omap-get-header",
        opcode::OMAPGETVALSBYKEYS => "omap-get-vals-by-keys",
        opcode::OMAP_CMP => "omap-cmp",
        opcode::CHECKSUM => "checksum",
        opcode::CMPEXT => "cmpext",
        opcode::CMPXATTR => "cmpxattr",
        opcode::OMAPSETHEADER => "omap-set-header",
        opcode::OMAPCLEAR => "omap-clear",
        opcode::WRITESAME => "write-same",
        opcode::OMAPRMKEYRANGE => "omap-rm-key-range",
        _ => "op",
    }
}

impl IoCtx {
    /// Runs the write operation `op` on object `name` atomically (one
    /// MOSDOp, sent as a write whatever its ops): every op applies, or
    /// none. An op that fails fails the whole with its errno, as
    /// [`RadosError::Os`] naming the op (its index and name, and for a
    /// CMPEXT mismatch the offset); [`IoCtx::operate_write_results`]
    /// returns every op's rval instead. An empty operation does nothing.
    pub async fn operate_write(&self, name: &[u8], op: &WriteOp) -> Result<OpResults, RadosError> {
        let r = self.operate_write_results(name, op).await?;
        into_result(name, r)
    }

    /// Runs the read operation `op` on object `name` (one MOSDOp); fails
    /// as [`IoCtx::operate_write`] does.
    pub async fn operate_read(&self, name: &[u8], op: &ReadOp) -> Result<OpResults, RadosError> {
        let r = self.operate_read_results(name, op).await?;
        into_result(name, r)
    }

    /// [`IoCtx::operate_write`], returning what the OSD answered even
    /// when an op failed (`reply().result` < 0, [`OpResults::failed`]
    /// says which): as librados fills each op's `prval`.
    pub async fn operate_write_results(
        &self,
        name: &[u8],
        op: &WriteOp,
    ) -> Result<OpResults, RadosError> {
        let mtime = op.mtime.unwrap_or_else(now);
        let flags = op.b.flags | flag::WRITE;
        self.operate_compound(name, &op.b.ops, flags, mtime, self.read_snap)
            .await
    }

    /// [`IoCtx::operate_read`], returning what the OSD answered even when
    /// an op failed.
    pub async fn operate_read_results(
        &self,
        name: &[u8],
        op: &ReadOp,
    ) -> Result<OpResults, RadosError> {
        let snap = if op.snapdir { SNAPDIR } else { self.read_snap };
        self.operate_compound(name, &op.b.ops, op.b.flags, UTime::default(), snap)
            .await
    }

    pub(crate) async fn operate_compound(
        &self,
        name: &[u8],
        ops: &[Op],
        flags: u32,
        mtime: UTime,
        snapid: u64,
    ) -> Result<OpResults, RadosError> {
        let wire: Vec<OsdOp> = ops.iter().map(|o| o.op).collect();
        if ops.is_empty() {
            return Ok(OpResults {
                ops: wire,
                reply: Reply {
                    result: 0,
                    ops: Vec::new(),
                    version: self.last_version(),
                    osd: -1,
                },
            });
        }
        let object = Object {
            pool: self.pool,
            name: Bytes::copy_from_slice(name),
            nspace: self.nspace.clone(),
            key: self.key.clone(),
            pg: None,
        };
        let req = Request {
            mtime,
            timeout: self.timeout,
            snapid,
            snapc: self.snapc.clone(),
            flags,
            ..Request::new(object, Ops(ops.to_vec()))
        };
        let reply = self.run_reply(req).await?;
        Ok(OpResults { ops: wire, reply })
    }

    /// The version of the object the last request through this context
    /// (or a clone of it) read or wrote (`rados_get_last_version`).
    pub fn last_version(&self) -> u64 {
        self.last_version.load(Ordering::Relaxed)
    }
}

pub(crate) fn now() -> UTime {
    UTime::from_duration(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// A failed whole as an error naming the object and the op that failed.
pub(crate) fn into_result(name: &[u8], r: OpResults) -> Result<OpResults, RadosError> {
    let result = r.reply.result;
    if result >= 0 {
        return Ok(r);
    }
    let obj = String::from_utf8_lossy(name);
    let what = match r.failed() {
        Some((i, rval)) => {
            let op = op_name(r.ops.get(i).map_or(0, |o| o.op));
            match cmpext_mismatch(rval) {
                Some(at) => format!("{obj}: op {i} ({op}): mismatch at offset {at}"),
                None => format!("{obj}: op {i} ({op})"),
            }
        }
        None => obj.into_owned(),
    };
    Err(RadosError::Os {
        errno: result,
        what,
    })
}

mod output;
pub use output::{
    decode_checksums, decode_sparse_read, ChecksumType, Checksums, OmapKeys, OmapVals, Output,
    SparseRead,
};

#[cfg(test)]
mod tests;
