//! Compound operations (`rados_write_op_*`, `rados_read_op_*`,
//! librados.h of Ceph 16) with the semantics of
//! src/librados/librados_c.cc: ops added one by one to an op object,
//! then run atomically on one object by `rados_*_op_operate` (or its aio
//! form). Each op's outputs (its `prval`, a read's bytes, a stat, an
//! iterator, `pmore`) are written when the operation completes, from what
//! the OSD answered for that op, as librados's Objecter demuxes a reply:
//! `prval` gets the op's rval (also when the whole failed), then the
//! op's own output is decoded if its rval is not negative (-EIO into
//! `prval` if it does not decode). The operation's return is the whole's
//! result: 0, or the errno of the op that failed (a cmpext mismatch at
//! offset n: `-MAX_ERRNO - n`, -4095 - n).
//!
//! A run takes the op object's ops, as librados's Objecter moves them
//! out: run again, the op object is empty (the run returns 0 and does
//! nothing) until ops are added anew. The output pointers must stay
//! valid until the run completes (librados's contract); the op object
//! may be released as soon as the run is submitted.
//!
//! Flags: `rados_*_op_set_flags` replaces the flags of the op added last
//! with the `LIBRADOS_OP_FLAG_*` bits (the same bits as
//! `CEPH_OSD_OP_FLAG_*`; unknown bits dropped, as librados's
//! `get_op_flags`); `rados_*_op_operate`'s `LIBRADOS_OPERATION_*` flags
//! become `CEPH_OSD_FLAG_*` as librados's `translate_flags` (unknown bits
//! dropped).
//!
//! A builder given a NULL buffer with a non-zero length (librados would
//! crash) adds nothing and makes the operation fail with -EINVAL when run.
//!
//! # Unsafe code
//! As in `capi`: an op object is NULL or what `rados_create_*_op`
//! returned and not released yet; C strings are NUL-terminated; a
//! `(buf, len)` pair has `len` bytes; output pointers are NULL or
//! writable until the operation completes.
#![allow(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use msgr_rados::compound::{CmpOp, OmapKeys, OmapVals, Output};
use msgr_rados::request::{decode_stat, flag, Op};
use msgr_rados::{Bytes, OpResults, ReadOp, Reply, UTime, WriteOp};

use crate::aio::CPtr;
use crate::capi::{bytes_of, copy_to, io, malloc_copy, set, slice_of, IoctxT};
use crate::capi_aio::{op_ref, CompletionT};
use crate::capi_iter::{hand_out, Iter, IterT};

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// `rados_write_op_t`, `rados_read_op_t`.
pub type OpT = *mut c_void;

/// The `LIBRADOS_OP_FLAG_*` bits librados's `get_op_flags` passes on
/// (EXCL, FAILOK, the FADVISE hints, FUA), the same as the OSD's.
const OP_FLAGS: u32 = 0xff;

/// What one op writes back when the operation completes.
#[derive(Clone)]
enum Out {
    /// Nothing (asserts, plain writes).
    None,
    /// `*prval`.
    Rval(CPtr),
    /// STAT: `*prval`, size and mtime (seconds).
    Stat {
        prval: CPtr,
        size: CPtr,
        mtime: CPtr,
    },
    /// READ (`bytes_read` may be NULL), CHECKSUM (`bytes_read` NULL): the
    /// output into a caller's buffer of `len` bytes (-ERANGE into
    /// `prval` if longer).
    Buf {
        prval: CPtr,
        buf: CPtr,
        len: usize,
        bytes_read: CPtr,
    },
    /// CALL of a read op: the output malloc'd into `*out_buf`, its
    /// length into `*out_len`.
    Exec {
        prval: CPtr,
        out_buf: CPtr,
        out_len: CPtr,
    },
    /// GETXATTRS, OMAPGETVALSBYKEYS: a map into the iterator.
    Map { prval: CPtr, iter: Arc<Iter> },
    /// OMAPGETVALS: a page into the iterator, `*pmore`.
    Vals {
        prval: CPtr,
        pmore: CPtr,
        iter: Arc<Iter>,
    },
    /// OMAPGETKEYS: keys (empty values) into the iterator, `*pmore`.
    Keys {
        prval: CPtr,
        pmore: CPtr,
        iter: Arc<Iter>,
    },
}

/// Sets `*prval` to `r`. Safety: NULL or writable.
unsafe fn rval(prval: CPtr, r: i32) {
    // SAFETY: forwarded contract.
    unsafe { set(prval.get().cast::<c_int>(), r) };
}

impl Out {
    /// Writes this op's outputs from its rval `r` and output `out`.
    ///
    /// Safety: the pointers are NULL or writable (a buffer: `len` bytes).
    unsafe fn deliver(&self, r: i32, out: &Bytes) {
        // SAFETY: per the contract above, for each pointer below.
        unsafe {
            match self {
                Out::None => {}
                Out::Rval(p) => rval(*p, r),
                Out::Stat { prval, size, mtime } => {
                    rval(*prval, r);
                    if r >= 0 {
                        match decode_stat(out) {
                            Ok(st) => {
                                set(size.get().cast::<u64>(), st.size);
                                set(
                                    mtime.get().cast::<libc::time_t>(),
                                    libc::time_t::from(st.mtime.sec),
                                );
                            }
                            Err(_) => rval(*prval, -libc::EIO),
                        }
                    }
                }
                Out::Buf {
                    prval,
                    buf,
                    len,
                    bytes_read,
                } => {
                    if out.len() > *len {
                        rval(*prval, -libc::ERANGE);
                        set(bytes_read.get().cast::<usize>(), 0);
                    } else {
                        rval(*prval, r);
                        set(bytes_read.get().cast::<usize>(), out.len());
                        if !buf.get().is_null() {
                            copy_to(buf.get().cast::<c_char>(), out);
                        }
                    }
                }
                Out::Exec {
                    prval,
                    out_buf,
                    out_len,
                } => {
                    rval(*prval, r);
                    set(out_buf.get().cast::<*mut c_char>(), malloc_copy(out));
                    set(out_len.get().cast::<usize>(), out.len());
                }
                Out::Map { prval, iter } => {
                    rval(*prval, r);
                    match decode::<BTreeMap<String, Bytes>>(r, out) {
                        Some(Ok(m)) => iter.fill(m),
                        Some(Err(())) => {
                            rval(*prval, -libc::EIO);
                            iter.rewind();
                        }
                        None => iter.rewind(),
                    }
                }
                Out::Vals { prval, pmore, iter } => {
                    rval(*prval, r);
                    match decode::<OmapVals>(r, out) {
                        Some(Ok(v)) => {
                            set(pmore.get().cast::<u8>(), u8::from(v.more));
                            iter.fill(v.vals);
                        }
                        Some(Err(())) => {
                            rval(*prval, -libc::EIO);
                            iter.rewind();
                        }
                        None => iter.rewind(),
                    }
                }
                Out::Keys { prval, pmore, iter } => {
                    rval(*prval, r);
                    match decode::<OmapKeys>(r, out) {
                        Some(Ok(k)) => {
                            set(pmore.get().cast::<u8>(), u8::from(k.more));
                            iter.fill(k.keys.into_iter().map(|k| (k, Bytes::new())));
                        }
                        Some(Err(())) => {
                            rval(*prval, -libc::EIO);
                            iter.rewind();
                        }
                        None => iter.rewind(),
                    }
                }
            }
        }
    }
}

/// An op's output decoded if its rval is not negative.
fn decode<T: Output>(r: i32, out: &Bytes) -> Option<Result<T, ()>> {
    (r >= 0).then(|| T::decode_output(&Default::default(), out).map_err(|_| ()))
}

/// Writes every op's outputs from `reply` (the ops it reports; a reply
/// without per-op results writes none, as librados).
///
/// Safety: as [`Out::deliver`] for each.
unsafe fn deliver(outs: &[Out], reply: &Reply) {
    for (o, r) in outs.iter().zip(&reply.ops) {
        // SAFETY: forwarded contract.
        unsafe { o.deliver(r.rval, &r.outdata) };
    }
}

/// A write op object.
#[derive(Default)]
pub struct WriteOpC {
    op: WriteOp,
    outs: Vec<Out>,
    bad: bool,
}

/// A read op object.
#[derive(Default)]
pub struct ReadOpC {
    op: ReadOp,
    outs: Vec<Out>,
    bad: bool,
}

/// The op object behind `p`. Safety: NULL or a live op object of type T.
unsafe fn op_of<'a, T>(p: OpT) -> Option<&'a mut T> {
    // SAFETY: a live op object is a Box<T> leaked by rados_create_*_op,
    // used by one thread at a time (librados's contract).
    unsafe { p.cast::<T>().as_mut() }
}

/// A C string as a (lossy) UTF-8 string; None if NULL. Safety: NULL or a
/// C string.
unsafe fn lossy(p: *const c_char) -> Option<String> {
    // SAFETY: forwarded contract.
    unsafe { bytes_of(p) }
        .ok()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

/// `len` bytes at `p` as a string (lossy). Safety: `p` has `len` bytes.
unsafe fn lossy_n(p: *const c_char, len: usize) -> Option<String> {
    // SAFETY: forwarded contract.
    unsafe { slice_of(p, len) }
        .ok()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

/// `len` bytes at `p`, copied. Safety: `p` has `len` bytes.
unsafe fn data(p: *const c_char, len: usize) -> Option<Bytes> {
    // SAFETY: forwarded contract.
    unsafe { slice_of(p, len) }.ok().map(Bytes::copy_from_slice)
}

/// `num` C strings at `keys`, each of `lens[i]` bytes if `lens` is given.
/// Safety: `keys` has `num` C strings (or `lens[i]`-byte strings).
unsafe fn strings(
    keys: *const *const c_char,
    lens: *const usize,
    num: usize,
) -> Option<Vec<String>> {
    if num > 0 && keys.is_null() {
        return None;
    }
    (0..num)
        .map(|i| {
            // SAFETY: i < num entries.
            unsafe {
                let k = *keys.add(i);
                if lens.is_null() {
                    lossy(k)
                } else {
                    lossy_n(k, *lens.add(i))
                }
            }
        })
        .collect()
}

/// librados's comparison operator as ours; None if it is not one (the
/// op then carries it as is and the OSD refuses it with -EINVAL).
fn cmp_op(op: u8) -> Option<CmpOp> {
    Some(match op {
        1 => CmpOp::Eq,
        2 => CmpOp::Ne,
        3 => CmpOp::Gt,
        4 => CmpOp::Gte,
        5 => CmpOp::Lt,
        6 => CmpOp::Lte,
        _ => return None,
    })
}

/// An OMAP_CMP op of one key, as librados's `rados_c_omap_cmp` builds it
/// (any operator byte).
fn omap_cmp_op(key: String, op: u8, val: Bytes) -> Option<Op> {
    let mut w = WriteOp::new();
    let mut m = BTreeMap::new();
    m.insert(key, (val, cmp_op(op).unwrap_or(CmpOp::Eq)));
    w.omap_cmp(&m);
    let mut o = w.ops().first().cloned()?;
    if cmp_op(op).is_none() {
        // The map's one value ends with the operator, an le32.
        let mut v = o.indata.to_vec();
        let n = v.len();
        if let Some(tail) = v.get_mut(n.saturating_sub(4)..) {
            tail.copy_from_slice(&i32::from(op).to_le_bytes());
        }
        o.indata = Bytes::from(v);
    }
    Some(o)
}

/// A CMPXATTR op (string mode, any operator byte).
fn cmpxattr_op(name: &str, op: u8, value: &[u8]) -> Option<Op> {
    let mut w = WriteOp::new();
    w.cmpxattr(name, cmp_op(op).unwrap_or(CmpOp::Eq), value);
    let mut o = w.ops().first().cloned()?;
    if let Some(b) = o.op.args.get_mut(8) {
        *b = op;
    }
    Some(o)
}

/// A CHECKSUM op of type `kind` seeded with `init` as given.
pub(crate) fn checksum_op(kind: u8, init: Bytes, offset: u64, len: u64, chunk: u32) -> Option<Op> {
    let mut r = ReadOp::new();
    r.checksum(
        msgr_rados::compound::ChecksumType::XxHash32,
        0,
        offset,
        len,
        chunk,
    );
    let mut o = r.ops().first().cloned()?;
    if let Some(b) = o.op.args.get_mut(20) {
        *b = kind;
    }
    o.indata = init;
    Some(o)
}

/// A SETALLOCHINT op.
fn alloc_hint_op(object_size: u64, write_size: u64, flags: u32) -> Option<Op> {
    msgr_rados::Ops::new()
        .alloc_hint(object_size, write_size, flags)
        .0
        .pop()
}

/// Adds to the write op at `$p` (a no-op if NULL): `$add(op)` with the
/// op's output `$out`; `None` from the arguments marks it bad.
macro_rules! wop {
    ($p:expr, $out:expr, |$o:ident| $add:expr) => {{
        // SAFETY: NULL or a live write op (the caller's contract).
        if let Some(w) = unsafe { op_of::<WriteOpC>($p) } {
            let $o = &mut w.op;
            #[allow(clippy::redundant_closure_call)]
            let added: Option<()> = (|| -> Option<()> { $add })();
            match added {
                Some(()) => w.outs.push($out),
                None => w.bad = true,
            }
        }
    }};
}

/// As `wop!` for a read op.
macro_rules! rop {
    ($p:expr, $out:expr, |$o:ident| $add:expr) => {{
        // SAFETY: NULL or a live read op (the caller's contract).
        if let Some(r) = unsafe { op_of::<ReadOpC>($p) } {
            let $o = &mut r.op;
            #[allow(clippy::redundant_closure_call)]
            let added: Option<()> = (|| -> Option<()> { $add })();
            match added {
                Some(()) => r.outs.push($out),
                None => r.bad = true,
            }
        }
    }};
}

/// `rados_create_write_op`: a new, empty write op.
#[no_mangle]
pub extern "C" fn rados_create_write_op() -> OpT {
    Box::into_raw(Box::<WriteOpC>::default()).cast::<c_void>()
}

/// `rados_release_write_op`: frees a write op.
///
/// # Safety
/// `write_op` NULL or a live write op, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_release_write_op(write_op: OpT) {
    if !write_op.is_null() {
        // SAFETY: a Box<WriteOpC> from rados_create_write_op, given back once.
        drop(unsafe { Box::from_raw(write_op.cast::<WriteOpC>()) });
    }
}

/// `rados_write_op_set_flags`: the `LIBRADOS_OP_FLAG_*` flags of the op
/// added last (replacing its flags).
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_set_flags(write_op: OpT, flags: c_int) {
    // SAFETY: NULL or live.
    if let Some(w) = unsafe { op_of::<WriteOpC>(write_op) } {
        w.op.set_last_op_flags(flags as u32 & OP_FLAGS);
    }
}

/// `rados_write_op_assert_exists`: fails the operation with -ENOENT
/// unless the object exists.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_assert_exists(write_op: OpT) {
    wop!(write_op, Out::None, |o| {
        o.assert_exists();
        Some(())
    });
}

/// `rados_write_op_assert_version`: fails the operation unless the
/// object's version is `ver` (-ERANGE if newer, -EOVERFLOW if older).
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_assert_version(write_op: OpT, ver: u64) {
    wop!(write_op, Out::None, |o| {
        o.assert_version(ver);
        Some(())
    });
}

/// `rados_write_op_cmpext`: fails the operation unless the object's
/// bytes at `off` equal `cmp_buf`; `*prval`: 0 or `-4095 - offset` of the
/// first difference.
///
/// # Safety
/// `write_op` NULL or live; `cmp_buf` has `cmp_len` bytes; `prval` NULL
/// or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_cmpext(
    write_op: OpT,
    cmp_buf: *const c_char,
    cmp_len: usize,
    off: u64,
    prval: *mut c_int,
) {
    wop!(write_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: cmp_len bytes.
        let cmp = unsafe { data(cmp_buf, cmp_len) }?;
        o.cmpext(off, cmp);
        Some(())
    });
}

/// `rados_write_op_cmpxattr`: fails the operation with -ECANCELED unless
/// xattr `name` compares to `value` as `comparison_operator` says.
///
/// # Safety
/// `write_op` NULL or live; `name` a C string; `value` has `value_len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_cmpxattr(
    write_op: OpT,
    name: *const c_char,
    comparison_operator: u8,
    value: *const c_char,
    value_len: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: a C string; value_len bytes.
        let (name, value) = unsafe { (lossy(name)?, data(value, value_len)?) };
        o.add_op::<()>(cmpxattr_op(&name, comparison_operator, &value)?);
        Some(())
    });
}

/// `rados_write_op_omap_cmp`: fails the operation with -ECANCELED unless
/// omap key `key`'s value compares to `val` as `comparison_operator`
/// says; `*prval` the op's result.
///
/// # Safety
/// `write_op` NULL or live; `key` a C string; `val` has `val_len` bytes;
/// `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_cmp(
    write_op: OpT,
    key: *const c_char,
    comparison_operator: u8,
    val: *const c_char,
    val_len: usize,
    prval: *mut c_int,
) {
    wop!(write_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: a C string; val_len bytes.
        let (key, val) = unsafe { (lossy(key)?, data(val, val_len)?) };
        o.add_op::<()>(omap_cmp_op(key, comparison_operator, val)?);
        Some(())
    });
}

/// `rados_write_op_omap_cmp2`: `rados_write_op_omap_cmp` with the key's
/// length given.
///
/// # Safety
/// `write_op` NULL or live; `key` has `key_len` bytes, `val` `val_len`;
/// `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_cmp2(
    write_op: OpT,
    key: *const c_char,
    comparison_operator: u8,
    val: *const c_char,
    key_len: usize,
    val_len: usize,
    prval: *mut c_int,
) {
    wop!(write_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: the lengths given.
        let (key, val) = unsafe { (lossy_n(key, key_len)?, data(val, val_len)?) };
        o.add_op::<()>(omap_cmp_op(key, comparison_operator, val)?);
        Some(())
    });
}

/// `rados_write_op_setxattr`: sets xattr `name` to `value_len` bytes.
///
/// # Safety
/// `write_op` NULL or live; `name` a C string; `value` has `value_len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_setxattr(
    write_op: OpT,
    name: *const c_char,
    value: *const c_char,
    value_len: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: a C string; value_len bytes.
        let (name, value) = unsafe { (lossy(name)?, data(value, value_len)?) };
        o.setxattr(&name, &value);
        Some(())
    });
}

/// `rados_write_op_rmxattr`: removes xattr `name`.
///
/// # Safety
/// `write_op` NULL or live; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_rmxattr(write_op: OpT, name: *const c_char) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: a C string.
        let name = unsafe { lossy(name) }?;
        o.rmxattr(&name);
        Some(())
    });
}

/// `rados_write_op_create`: creates the object; with `exclusive`
/// (`LIBRADOS_CREATE_EXCLUSIVE`) the operation fails with -EEXIST if it
/// exists. `category` is unused, as in librados.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_create(
    write_op: OpT,
    exclusive: c_int,
    _category: *const c_char,
) {
    wop!(write_op, Out::None, |o| {
        o.create(exclusive != 0);
        Some(())
    });
}

/// `rados_write_op_write`: writes `len` bytes at `offset`.
///
/// # Safety
/// `write_op` NULL or live; `buffer` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_write(
    write_op: OpT,
    buffer: *const c_char,
    len: usize,
    offset: u64,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: len bytes.
        o.write(offset, unsafe { data(buffer, len) }?);
        Some(())
    });
}

/// `rados_write_op_write_full`: replaces the object's data.
///
/// # Safety
/// `write_op` NULL or live; `buffer` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_write_full(
    write_op: OpT,
    buffer: *const c_char,
    len: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: len bytes.
        o.write_full(unsafe { data(buffer, len) }?);
        Some(())
    });
}

/// `rados_write_op_writesame`: writes `data_len` bytes repeated over
/// `write_len` bytes from `offset`.
///
/// # Safety
/// `write_op` NULL or live; `buffer` has `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_writesame(
    write_op: OpT,
    buffer: *const c_char,
    data_len: usize,
    write_len: usize,
    offset: u64,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: data_len bytes.
        o.writesame(offset, write_len as u64, unsafe { data(buffer, data_len) }?);
        Some(())
    });
}

/// `rados_write_op_append`: appends `len` bytes.
///
/// # Safety
/// `write_op` NULL or live; `buffer` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_append(write_op: OpT, buffer: *const c_char, len: usize) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: len bytes.
        o.append(unsafe { data(buffer, len) }?);
        Some(())
    });
}

/// `rados_write_op_remove`: removes the object.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_remove(write_op: OpT) {
    wop!(write_op, Out::None, |o| {
        o.remove();
        Some(())
    });
}

/// `rados_write_op_truncate`: cuts (or extends) the object to `offset`
/// bytes.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_truncate(write_op: OpT, offset: u64) {
    wop!(write_op, Out::None, |o| {
        o.truncate(offset);
        Some(())
    });
}

/// `rados_write_op_zero`: zeroes `len` bytes from `offset` (a length of
/// 0 fails the operation with -EINVAL: it aborts a Ceph 16 OSD).
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_zero(write_op: OpT, offset: u64, len: u64) {
    wop!(write_op, Out::None, |o| {
        o.zero(offset, len);
        Some(())
    });
}

/// `rados_write_op_exec`: runs method `method` of class `cls` with
/// `in_len` bytes of input as part of the write; `*prval` its result.
///
/// # Safety
/// `write_op` NULL or live; `cls`, `method` C strings; `in_buf` has
/// `in_len` bytes; `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_exec(
    write_op: OpT,
    cls: *const c_char,
    method: *const c_char,
    in_buf: *const c_char,
    in_len: usize,
    prval: *mut c_int,
) {
    wop!(write_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: C strings; in_len bytes.
        let (cls, method, input) =
            unsafe { (lossy(cls)?, lossy(method)?, slice_of(in_buf, in_len).ok()?) };
        o.add_op::<()>(Op::call(&cls, &method, input).ok()?);
        Some(())
    });
}

/// The entries of `rados_write_op_omap_set*`. Safety: `keys`, `vals`
/// have `num` entries of the lengths given.
unsafe fn omap_entries(
    keys: *const *const c_char,
    vals: *const *const c_char,
    key_lens: *const usize,
    val_lens: *const usize,
    num: usize,
) -> Option<BTreeMap<String, Bytes>> {
    // SAFETY: forwarded contract.
    let keys = unsafe { strings(keys, key_lens, num) }?;
    if num > 0 && (vals.is_null() || val_lens.is_null()) {
        return None;
    }
    let mut m = BTreeMap::new();
    for (i, k) in keys.into_iter().enumerate() {
        // SAFETY: i < num entries, each val_lens[i] bytes.
        let v = unsafe { data(*vals.add(i), *val_lens.add(i)) }?;
        m.insert(k, v);
    }
    Some(m)
}

/// `rados_write_op_omap_set`: sets `num` omap entries (keys C strings,
/// values of `lens[i]` bytes).
///
/// # Safety
/// `write_op` NULL or live; `keys`, `vals`, `lens` have `num` entries.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_set(
    write_op: OpT,
    keys: *const *const c_char,
    vals: *const *const c_char,
    lens: *const usize,
    num: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: num entries.
        let m = unsafe { omap_entries(keys, vals, std::ptr::null(), lens, num) }?;
        o.omap_set(&m);
        Some(())
    });
}

/// `rados_write_op_omap_set2`: as `rados_write_op_omap_set` with each
/// key's length given.
///
/// # Safety
/// `write_op` NULL or live; the arrays have `num` entries.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_set2(
    write_op: OpT,
    keys: *const *const c_char,
    vals: *const *const c_char,
    key_lens: *const usize,
    val_lens: *const usize,
    num: usize,
) {
    wop!(write_op, Out::None, |o| {
        if num > 0 && key_lens.is_null() {
            return None;
        }
        // SAFETY: num entries.
        let m = unsafe { omap_entries(keys, vals, key_lens, val_lens, num) }?;
        o.omap_set(&m);
        Some(())
    });
}

/// `rados_write_op_omap_rm_keys`: removes `keys_len` omap keys.
///
/// # Safety
/// `write_op` NULL or live; `keys` has `keys_len` C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_rm_keys(
    write_op: OpT,
    keys: *const *const c_char,
    keys_len: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: keys_len C strings.
        let keys: BTreeSet<String> = unsafe { strings(keys, std::ptr::null(), keys_len) }?
            .into_iter()
            .collect();
        o.omap_rm_keys(&keys);
        Some(())
    });
}

/// `rados_write_op_omap_rm_keys2`: as `rados_write_op_omap_rm_keys` with
/// each key's length given.
///
/// # Safety
/// `write_op` NULL or live; `keys`, `key_lens` have `keys_len` entries.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_rm_keys2(
    write_op: OpT,
    keys: *const *const c_char,
    key_lens: *const usize,
    keys_len: usize,
) {
    wop!(write_op, Out::None, |o| {
        if keys_len > 0 && key_lens.is_null() {
            return None;
        }
        // SAFETY: keys_len entries.
        let keys: BTreeSet<String> = unsafe { strings(keys, key_lens, keys_len) }?
            .into_iter()
            .collect();
        o.omap_rm_keys(&keys);
        Some(())
    });
}

/// `rados_write_op_omap_rm_range2`: removes the omap keys from
/// `key_begin` (included) to `key_end` (excluded).
///
/// # Safety
/// `write_op` NULL or live; the keys have the lengths given.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_rm_range2(
    write_op: OpT,
    key_begin: *const c_char,
    key_begin_len: usize,
    key_end: *const c_char,
    key_end_len: usize,
) {
    wop!(write_op, Out::None, |o| {
        // SAFETY: the lengths given.
        let (b, e) = unsafe {
            (
                lossy_n(key_begin, key_begin_len)?,
                lossy_n(key_end, key_end_len)?,
            )
        };
        o.omap_rm_range(&b, &e);
        Some(())
    });
}

/// `rados_write_op_omap_clear`: removes every omap entry.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_omap_clear(write_op: OpT) {
    wop!(write_op, Out::None, |o| {
        o.omap_clear();
        Some(())
    });
}

/// `rados_write_op_set_alloc_hint`: the object's expected size and write
/// size.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_set_alloc_hint(
    write_op: OpT,
    expected_object_size: u64,
    expected_write_size: u64,
) {
    // SAFETY: forwarded contract.
    unsafe {
        rados_write_op_set_alloc_hint2(write_op, expected_object_size, expected_write_size, 0)
    }
}

/// `rados_write_op_set_alloc_hint2`: as `rados_write_op_set_alloc_hint`
/// with `LIBRADOS_ALLOC_HINT_FLAG_*` flags.
///
/// # Safety
/// `write_op` NULL or a live write op.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_set_alloc_hint2(
    write_op: OpT,
    expected_object_size: u64,
    expected_write_size: u64,
    flags: u32,
) {
    wop!(write_op, Out::None, |o| {
        o.add_op::<()>(alloc_hint_op(
            expected_object_size,
            expected_write_size,
            flags,
        )?);
        Some(())
    });
}

/// What a write op run needs: a copy of its ops with the run's flags and
/// mtime, and its outputs. Safety: `write_op` NULL or live.
unsafe fn write_run(
    write_op: OpT,
    mtime: Option<UTime>,
    flags: c_int,
) -> Result<(WriteOp, Vec<Out>), c_int> {
    // SAFETY: NULL or live.
    let w = unsafe { op_of::<WriteOpC>(write_op) }.ok_or(-libc::EINVAL)?;
    // The run takes the ops (librados's Objecter moves them out): run
    // again, the op object is empty and does nothing.
    let WriteOpC { mut op, outs, bad } = std::mem::take(w);
    if bad {
        return Err(-libc::EINVAL);
    }
    op.set_flags(flag::from_librados(flags as u32));
    if let Some(t) = mtime {
        op.set_mtime(t);
    }
    Ok((op, outs))
}

/// A `time_t` mtime (NULL: none, the time of the run). Safety: NULL or
/// readable.
unsafe fn mtime_of(mtime: *const libc::time_t) -> Option<UTime> {
    // SAFETY: NULL or readable.
    let t = unsafe { mtime.as_ref() }?;
    Some(UTime {
        sec: u32::try_from(*t).unwrap_or(0),
        nsec: 0,
    })
}

/// The operation's result, its outputs written. Safety: the outputs'
/// pointers are NULL or writable.
unsafe fn finish(outs: &[Out], res: &OpResults) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { deliver(outs, res.reply()) };
    res.reply().result
}

/// `rados_write_op_operate`: runs the write op on object `oid`
/// atomically; `mtime` (NULL: now) the modification time; `flags`
/// `LIBRADOS_OPERATION_*`. 0, or the errno of the op that failed
/// (nothing applied). An empty op does nothing and returns 0.
///
/// # Safety
/// `write_op` a live write op; `io` a live context; `oid` a C string;
/// `mtime` NULL or readable; the op's output pointers writable.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_operate(
    write_op: OpT,
    io: IoctxT,
    oid: *const c_char,
    mtime: *mut libc::time_t,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: per the contract above.
    let (op, outs) = c_try!(unsafe { write_run(write_op, mtime_of(mtime), flags) });
    let res = c_try!(io.run(|ctx| async move { ctx.operate_write_results(&name, &op).await }));
    // SAFETY: the outputs' pointers, per the contract above.
    unsafe { finish(&outs, &res) }
}

/// `rados_write_op_operate2`: `rados_write_op_operate` with the mtime as
/// a `struct timespec` (NULL: now).
///
/// # Safety
/// As `rados_write_op_operate`; `ts` NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn rados_write_op_operate2(
    write_op: OpT,
    io: IoctxT,
    oid: *const c_char,
    ts: *mut libc::timespec,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: NULL or readable.
    let mtime = unsafe { ts.as_ref() }.map(|t| UTime {
        sec: u32::try_from(t.tv_sec).unwrap_or(0),
        nsec: u32::try_from(t.tv_nsec).unwrap_or(0),
    });
    // SAFETY: per the contract above.
    let (op, outs) = c_try!(unsafe { write_run(write_op, mtime, flags) });
    let res = c_try!(io.run(|ctx| async move { ctx.operate_write_results(&name, &op).await }));
    // SAFETY: the outputs' pointers, per the contract above.
    unsafe { finish(&outs, &res) }
}

/// `rados_aio_write_op_operate`: `rados_write_op_operate` as an aio op:
/// 0 once submitted; the completion's return value is the operation's
/// result, the outputs written before it completes.
///
/// # Safety
/// As `rados_write_op_operate`; `completion` live; the op's output
/// pointers writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_write_op_operate(
    write_op: OpT,
    io: IoctxT,
    completion: CompletionT,
    oid: *const c_char,
    mtime: *mut libc::time_t,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: per the contract above.
    let (op, outs) = c_try!(unsafe { write_run(write_op, mtime_of(mtime), flags) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.operate_write_results(&name, &op).await },
        // SAFETY: the outputs stay writable until completion.
        move |res: OpResults| unsafe { finish(&outs, &res) },
    );
    0
}

/// `rados_create_read_op`: a new, empty read op.
#[no_mangle]
pub extern "C" fn rados_create_read_op() -> OpT {
    Box::into_raw(Box::<ReadOpC>::default()).cast::<c_void>()
}

/// `rados_release_read_op`: frees a read op (its iterators live on until
/// ended).
///
/// # Safety
/// `read_op` NULL or a live read op, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_release_read_op(read_op: OpT) {
    if !read_op.is_null() {
        // SAFETY: a Box<ReadOpC> from rados_create_read_op, given back once.
        drop(unsafe { Box::from_raw(read_op.cast::<ReadOpC>()) });
    }
}

/// `rados_read_op_set_flags`: the `LIBRADOS_OP_FLAG_*` flags of the op
/// added last (replacing its flags).
///
/// # Safety
/// `read_op` NULL or a live read op.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_set_flags(read_op: OpT, flags: c_int) {
    // SAFETY: NULL or live.
    if let Some(r) = unsafe { op_of::<ReadOpC>(read_op) } {
        r.op.set_last_op_flags(flags as u32 & OP_FLAGS);
    }
}

/// `rados_read_op_assert_exists`: fails the operation with -ENOENT
/// unless the object exists.
///
/// # Safety
/// `read_op` NULL or a live read op.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_assert_exists(read_op: OpT) {
    rop!(read_op, Out::None, |o| {
        o.assert_exists();
        Some(())
    });
}

/// `rados_read_op_assert_version`: fails the operation unless the
/// object's version is `ver` (-ERANGE if newer, -EOVERFLOW if older).
///
/// # Safety
/// `read_op` NULL or a live read op.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_assert_version(read_op: OpT, ver: u64) {
    rop!(read_op, Out::None, |o| {
        o.assert_version(ver);
        Some(())
    });
}

/// `rados_read_op_cmpext`: as `rados_write_op_cmpext`.
///
/// # Safety
/// `read_op` NULL or live; `cmp_buf` has `cmp_len` bytes; `prval` NULL or
/// writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_cmpext(
    read_op: OpT,
    cmp_buf: *const c_char,
    cmp_len: usize,
    off: u64,
    prval: *mut c_int,
) {
    rop!(read_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: cmp_len bytes.
        let cmp = unsafe { data(cmp_buf, cmp_len) }?;
        o.cmpext(off, cmp);
        Some(())
    });
}

/// `rados_read_op_cmpxattr`: as `rados_write_op_cmpxattr`.
///
/// # Safety
/// `read_op` NULL or live; `name` a C string; `value` has `value_len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_cmpxattr(
    read_op: OpT,
    name: *const c_char,
    comparison_operator: u8,
    value: *const c_char,
    value_len: usize,
) {
    rop!(read_op, Out::None, |o| {
        // SAFETY: a C string; value_len bytes.
        let (name, value) = unsafe { (lossy(name)?, data(value, value_len)?) };
        o.add_op::<()>(cmpxattr_op(&name, comparison_operator, &value)?);
        Some(())
    });
}

/// `rados_read_op_omap_cmp`: as `rados_write_op_omap_cmp`.
///
/// # Safety
/// `read_op` NULL or live; `key` a C string; `val` has `val_len` bytes;
/// `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_cmp(
    read_op: OpT,
    key: *const c_char,
    comparison_operator: u8,
    val: *const c_char,
    val_len: usize,
    prval: *mut c_int,
) {
    rop!(read_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: a C string; val_len bytes.
        let (key, val) = unsafe { (lossy(key)?, data(val, val_len)?) };
        o.add_op::<()>(omap_cmp_op(key, comparison_operator, val)?);
        Some(())
    });
}

/// `rados_read_op_omap_cmp2`: `rados_read_op_omap_cmp` with the key's
/// length given.
///
/// # Safety
/// `read_op` NULL or live; `key` has `key_len` bytes, `val` `val_len`;
/// `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_cmp2(
    read_op: OpT,
    key: *const c_char,
    comparison_operator: u8,
    val: *const c_char,
    key_len: usize,
    val_len: usize,
    prval: *mut c_int,
) {
    rop!(read_op, Out::Rval(CPtr(prval.cast())), |o| {
        // SAFETY: the lengths given.
        let (key, val) = unsafe { (lossy_n(key, key_len)?, data(val, val_len)?) };
        o.add_op::<()>(omap_cmp_op(key, comparison_operator, val)?);
        Some(())
    });
}

/// `rados_read_op_stat`: the object's size and mtime (seconds), each
/// output NULL or written when the operation completes.
///
/// # Safety
/// `read_op` NULL or live; the outputs NULL or writable until the
/// operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_stat(
    read_op: OpT,
    psize: *mut u64,
    pmtime: *mut libc::time_t,
    prval: *mut c_int,
) {
    let out = Out::Stat {
        prval: CPtr(prval.cast()),
        size: CPtr(psize.cast()),
        mtime: CPtr(pmtime.cast()),
    };
    rop!(read_op, out, |o| {
        o.stat();
        Some(())
    });
}

/// `rados_read_op_read`: up to `len` bytes from `offset` into `buffer`;
/// `*bytes_read` the number read (0 and `*prval` -ERANGE if more came).
///
/// # Safety
/// `read_op` NULL or live; `buffer` has `len` writable bytes and the
/// outputs are NULL or writable, until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_read(
    read_op: OpT,
    offset: u64,
    len: usize,
    buffer: *mut c_char,
    bytes_read: *mut usize,
    prval: *mut c_int,
) {
    let out = Out::Buf {
        prval: CPtr(prval.cast()),
        buf: CPtr(buffer.cast()),
        len: if buffer.is_null() { 0 } else { len },
        bytes_read: CPtr(bytes_read.cast()),
    };
    rop!(read_op, out, |o| {
        o.read(offset, len as u64);
        Some(())
    });
}

/// `rados_read_op_checksum`: checksums of `len` bytes from `offset`
/// (`chunk_size` bytes each; 0: one) of `type`, seeded with
/// `init_value`; the OSD's output (a le32 count, then the sums) into
/// `pchecksum` of `checksum_len` bytes (`*prval` -ERANGE if longer).
///
/// # Safety
/// `read_op` NULL or live; `init_value` has `init_value_len` bytes;
/// `pchecksum` NULL or `checksum_len` writable bytes and `prval` NULL or
/// writable, until the operation completes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_read_op_checksum(
    read_op: OpT,
    kind: c_int,
    init_value: *const c_char,
    init_value_len: usize,
    offset: u64,
    len: usize,
    chunk_size: usize,
    pchecksum: *mut c_char,
    checksum_len: usize,
    prval: *mut c_int,
) {
    let out = if pchecksum.is_null() {
        Out::Rval(CPtr(prval.cast()))
    } else {
        Out::Buf {
            prval: CPtr(prval.cast()),
            buf: CPtr(pchecksum.cast()),
            len: checksum_len,
            bytes_read: CPtr(std::ptr::null_mut()),
        }
    };
    rop!(read_op, out, |o| {
        // SAFETY: init_value_len bytes.
        let init = unsafe { data(init_value, init_value_len) }?;
        let chunk = u32::try_from(chunk_size).ok()?;
        o.add_op::<()>(checksum_op(kind as u8, init, offset, len as u64, chunk)?);
        Some(())
    });
}

/// `rados_read_op_exec`: runs method `method` of class `cls`; its output
/// malloc'd into `*out_buf` (NULL if empty; free it with
/// `rados_buffer_free`), its length into `*out_len`, its result into
/// `*prval`.
///
/// # Safety
/// `read_op` NULL or live; `cls`, `method` C strings; `in_buf` has
/// `in_len` bytes; the outputs NULL or writable until the operation
/// completes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_read_op_exec(
    read_op: OpT,
    cls: *const c_char,
    method: *const c_char,
    in_buf: *const c_char,
    in_len: usize,
    out_buf: *mut *mut c_char,
    out_len: *mut usize,
    prval: *mut c_int,
) {
    let out = Out::Exec {
        prval: CPtr(prval.cast()),
        out_buf: CPtr(out_buf.cast()),
        out_len: CPtr(out_len.cast()),
    };
    rop!(read_op, out, |o| {
        // SAFETY: C strings; in_len bytes.
        let (cls, method, input) =
            unsafe { (lossy(cls)?, lossy(method)?, slice_of(in_buf, in_len).ok()?) };
        o.add_op::<Bytes>(Op::call(&cls, &method, input).ok()?);
        Some(())
    });
}

/// `rados_read_op_exec_user_buf`: as `rados_read_op_exec`, the output
/// copied to `out_buf` of `out_len` bytes (`*prval` -ERANGE and
/// `*used_len` 0 if it is longer), its length into `*used_len`.
///
/// # Safety
/// `read_op` NULL or live; `cls`, `method` C strings; `in_buf` has
/// `in_len` bytes; `out_buf` NULL or `out_len` writable bytes and the
/// outputs NULL or writable, until the operation completes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_read_op_exec_user_buf(
    read_op: OpT,
    cls: *const c_char,
    method: *const c_char,
    in_buf: *const c_char,
    in_len: usize,
    out_buf: *mut c_char,
    out_len: usize,
    used_len: *mut usize,
    prval: *mut c_int,
) {
    let out = Out::Buf {
        prval: CPtr(prval.cast()),
        buf: CPtr(out_buf.cast()),
        len: if out_buf.is_null() { 0 } else { out_len },
        bytes_read: CPtr(used_len.cast()),
    };
    rop!(read_op, out, |o| {
        // SAFETY: C strings; in_len bytes.
        let (cls, method, input) =
            unsafe { (lossy(cls)?, lossy(method)?, slice_of(in_buf, in_len).ok()?) };
        o.add_op::<Bytes>(Op::call(&cls, &method, input).ok()?);
        Some(())
    });
}

/// Writes a new iterator to `*iter` (unless NULL) and returns the op's
/// reference to it. Safety: `iter` NULL or writable.
unsafe fn new_iter(iter: *mut IterT) -> Arc<Iter> {
    let (p, it) = hand_out();
    if iter.is_null() {
        // Nobody will end it: drop the caller's reference now.
        // SAFETY: p is the reference hand_out made for the caller.
        drop(unsafe { Arc::from_raw(p as *const Iter) });
    } else {
        // SAFETY: writable.
        unsafe { iter.write(p) };
    }
    it
}

/// `rados_read_op_getxattrs`: the object's xattrs, through an iterator
/// written to `*iter` now and filled when the operation completes.
///
/// # Safety
/// `read_op` NULL or live; `iter` writable; `prval` NULL or writable
/// until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_getxattrs(
    read_op: OpT,
    iter: *mut IterT,
    prval: *mut c_int,
) {
    // SAFETY: NULL or live.
    if unsafe { op_of::<ReadOpC>(read_op) }.is_none() {
        return;
    }
    // SAFETY: writable.
    let it = unsafe { new_iter(iter) };
    rop!(
        read_op,
        Out::Map {
            prval: CPtr(prval.cast()),
            iter: it
        },
        |o| {
            o.getxattrs();
            Some(())
        }
    );
}

/// The omap keys or entries ops. Safety: as the C functions'.
unsafe fn omap_get(
    read_op: OpT,
    start_after: *const c_char,
    filter_prefix: Option<*const c_char>,
    max_return: u64,
    iter: *mut IterT,
    pmore: *mut u8,
    prval: *mut c_int,
) {
    // SAFETY: NULL or live.
    if unsafe { op_of::<ReadOpC>(read_op) }.is_none() {
        return;
    }
    // SAFETY: NULL or C strings; iter writable.
    let (start, it) = unsafe { (lossy(start_after).unwrap_or_default(), new_iter(iter)) };
    // librados clears `*pmore` now (its decoder's constructor); the op
    // sets it if it succeeds.
    // SAFETY: NULL or writable.
    unsafe { set(pmore, 0) };
    let (prval, pmore) = (CPtr(prval.cast()), CPtr(pmore.cast()));
    match filter_prefix {
        Some(prefix) => {
            // SAFETY: NULL or a C string.
            let prefix = unsafe { lossy(prefix) }.unwrap_or_default();
            rop!(
                read_op,
                Out::Vals {
                    prval,
                    pmore,
                    iter: it
                },
                |o| {
                    o.omap_get_vals(&start, &prefix, max_return);
                    Some(())
                }
            );
        }
        None => rop!(
            read_op,
            Out::Keys {
                prval,
                pmore,
                iter: it
            },
            |o| {
                o.omap_get_keys(&start, max_return);
                Some(())
            }
        ),
    }
}

/// `rados_read_op_omap_get_vals2`: up to `max_return` omap entries after
/// `start_after` (NULL: from the first) whose keys start with
/// `filter_prefix` (NULL: all), through an iterator written to `*iter`
/// now and filled when the operation completes; `*pmore` whether more
/// follow.
///
/// # Safety
/// `read_op` NULL or live; the strings NULL or C strings; `iter`
/// writable; `pmore`, `prval` NULL or writable until the operation
/// completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_vals2(
    read_op: OpT,
    start_after: *const c_char,
    filter_prefix: *const c_char,
    max_return: u64,
    iter: *mut IterT,
    pmore: *mut u8,
    prval: *mut c_int,
) {
    // SAFETY: forwarded contract.
    unsafe {
        omap_get(
            read_op,
            start_after,
            Some(filter_prefix),
            max_return,
            iter,
            pmore,
            prval,
        )
    }
}

/// `rados_read_op_omap_get_vals`: `rados_read_op_omap_get_vals2` without
/// `pmore`.
///
/// # Safety
/// As `rados_read_op_omap_get_vals2`.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_vals(
    read_op: OpT,
    start_after: *const c_char,
    filter_prefix: *const c_char,
    max_return: u64,
    iter: *mut IterT,
    prval: *mut c_int,
) {
    // SAFETY: forwarded contract.
    unsafe {
        omap_get(
            read_op,
            start_after,
            Some(filter_prefix),
            max_return,
            iter,
            std::ptr::null_mut(),
            prval,
        )
    }
}

/// `rados_read_op_omap_get_keys2`: up to `max_return` omap keys after
/// `start_after` (their values empty: NULL), as
/// `rados_read_op_omap_get_vals2`.
///
/// # Safety
/// As `rados_read_op_omap_get_vals2`.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_keys2(
    read_op: OpT,
    start_after: *const c_char,
    max_return: u64,
    iter: *mut IterT,
    pmore: *mut u8,
    prval: *mut c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { omap_get(read_op, start_after, None, max_return, iter, pmore, prval) }
}

/// `rados_read_op_omap_get_keys`: `rados_read_op_omap_get_keys2`
/// without `pmore`.
///
/// # Safety
/// As `rados_read_op_omap_get_vals2`.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_keys(
    read_op: OpT,
    start_after: *const c_char,
    max_return: u64,
    iter: *mut IterT,
    prval: *mut c_int,
) {
    // SAFETY: forwarded contract.
    unsafe {
        omap_get(
            read_op,
            start_after,
            None,
            max_return,
            iter,
            std::ptr::null_mut(),
            prval,
        )
    }
}

/// `rados_read_op_omap_get_vals_by_keys`: the omap entries of the
/// `keys_len` keys that exist, through an iterator as
/// `rados_read_op_omap_get_vals2`.
///
/// # Safety
/// `read_op` NULL or live; `keys` has `keys_len` C strings; `iter`
/// writable; `prval` NULL or writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_vals_by_keys(
    read_op: OpT,
    keys: *const *const c_char,
    keys_len: usize,
    iter: *mut IterT,
    prval: *mut c_int,
) {
    // SAFETY: NULL or live.
    if unsafe { op_of::<ReadOpC>(read_op) }.is_none() {
        return;
    }
    // SAFETY: writable.
    let it = unsafe { new_iter(iter) };
    rop!(
        read_op,
        Out::Map {
            prval: CPtr(prval.cast()),
            iter: it
        },
        |o| {
            // SAFETY: keys_len C strings.
            let keys: BTreeSet<String> = unsafe { strings(keys, std::ptr::null(), keys_len) }?
                .into_iter()
                .collect();
            o.omap_get_vals_by_keys(&keys);
            Some(())
        }
    );
}

/// `rados_read_op_omap_get_vals_by_keys2`: as
/// `rados_read_op_omap_get_vals_by_keys` with each key's length given.
///
/// # Safety
/// `read_op` NULL or live; `keys`, `key_lens` have `num_keys` entries;
/// `iter` writable; `prval` NULL or writable until the operation
/// completes.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_omap_get_vals_by_keys2(
    read_op: OpT,
    keys: *const *const c_char,
    num_keys: usize,
    key_lens: *const usize,
    iter: *mut IterT,
    prval: *mut c_int,
) {
    // SAFETY: NULL or live.
    if unsafe { op_of::<ReadOpC>(read_op) }.is_none() {
        return;
    }
    // SAFETY: writable.
    let it = unsafe { new_iter(iter) };
    rop!(
        read_op,
        Out::Map {
            prval: CPtr(prval.cast()),
            iter: it
        },
        |o| {
            if num_keys > 0 && key_lens.is_null() {
                return None;
            }
            // SAFETY: num_keys entries.
            let keys: BTreeSet<String> = unsafe { strings(keys, key_lens, num_keys) }?
                .into_iter()
                .collect();
            o.omap_get_vals_by_keys(&keys);
            Some(())
        }
    );
}

/// What a read op run needs. Safety: `read_op` NULL or live.
unsafe fn read_run(read_op: OpT, flags: c_int) -> Result<(ReadOp, Vec<Out>), c_int> {
    // SAFETY: NULL or live.
    let r = unsafe { op_of::<ReadOpC>(read_op) }.ok_or(-libc::EINVAL)?;
    // The run takes the ops, as for a write op.
    let ReadOpC { mut op, outs, bad } = std::mem::take(r);
    if bad {
        return Err(-libc::EINVAL);
    }
    op.set_flags(flag::from_librados(flags as u32));
    Ok((op, outs))
}

/// `rados_read_op_operate`: runs the read op on object `oid`; `flags`
/// `LIBRADOS_OPERATION_*`. 0, or the errno of the op that failed (the
/// outputs of every op the OSD answered for are written either way).
///
/// # Safety
/// `read_op` a live read op; `io` a live context; `oid` a C string; the
/// op's output pointers writable.
#[no_mangle]
pub unsafe extern "C" fn rados_read_op_operate(
    read_op: OpT,
    io: IoctxT,
    oid: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: per the contract above.
    let (op, outs) = c_try!(unsafe { read_run(read_op, flags) });
    let res = c_try!(io.run(|ctx| async move { ctx.operate_read_results(&name, &op).await }));
    // SAFETY: the outputs' pointers, per the contract above.
    unsafe { finish(&outs, &res) }
}

/// `rados_aio_read_op_operate`: `rados_read_op_operate` as an aio op: 0
/// once submitted; the completion's return value is the operation's
/// result, the outputs written before it completes.
///
/// # Safety
/// As `rados_read_op_operate`; `completion` live; the op's output
/// pointers writable until the operation completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_read_op_operate(
    read_op: OpT,
    io: IoctxT,
    completion: CompletionT,
    oid: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: per the contract above.
    let (op, outs) = c_try!(unsafe { read_run(read_op, flags) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        false,
        |ctx| async move { ctx.operate_read_results(&name, &op).await },
        // SAFETY: the outputs stay writable until completion.
        move |res: OpResults| unsafe { finish(&outs, &res) },
    );
    0
}
