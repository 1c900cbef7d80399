//! Object calls beside the basic ones (`rados_exec`, `rados_cmpext`,
//! `rados_writesame`, `rados_get_last_version`), their aio forms, the aio
//! xattr calls and the `_and_cb` completion checks, with the semantics of
//! src/librados/librados_c.cc and IoCtxImpl.cc (see `capi_aio` for how an
//! aio op runs and completes).
//!
//! # Unsafe code
//! As in `capi` and `capi_aio`: handles and completions are NULL or live;
//! C strings are NUL-terminated; a `(buf, len)` pair has `len` bytes; an
//! aio op's output buffers stay valid until it completes.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use msgr_rados::request::Op;
use msgr_rados::{Bytes, OpResults, ReadOp, WriteOp};

use crate::aio::CPtr;
use crate::capi::{bytes_of, copy_to, io, slice_of, write_args, IoctxT};
use crate::capi_aio::{completion, op_ref, CompletionT};
use crate::capi_iter::{hand_out, IterT};
use crate::cluster::Io;

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// librados refuses buffers longer than UINT_MAX/2 bytes.
const MAX_LEN: usize = (u32::MAX / 2) as usize;

/// The context and object name of a call. Safety: `io` NULL or live,
/// `oid` NULL or a C string.
unsafe fn target<'a>(io: IoctxT, oid: *const c_char) -> Result<(&'a Io, Vec<u8>), c_int> {
    // SAFETY: forwarded contract.
    unsafe { Ok((self::io(io)?, bytes_of(oid)?.to_vec())) }
}

/// A string argument, lossily UTF-8 (class, method and xattr names).
/// Safety: NULL or a C string.
unsafe fn name_of(p: *const c_char) -> Result<String, c_int> {
    // SAFETY: forwarded contract.
    Ok(String::from_utf8_lossy(unsafe { bytes_of(p) }?).into_owned())
}

/// A read op of one class call.
fn call_op(cls: &str, method: &str, input: &[u8]) -> Result<ReadOp, c_int> {
    let mut op = ReadOp::new();
    op.add_op::<Bytes>(Op::call(cls, method, input).map_err(|e| crate::errno::errno_of(&e))?);
    Ok(op)
}

/// A call's result as librados's `rados_exec` makes it: the whole's
/// result, or, when the method returned output, its length (-ERANGE if it
/// is longer than `out_len`), the output copied to `out`.
///
/// Safety: `out` has `out_len` writable bytes.
unsafe fn exec_result(res: &OpResults, out: *mut c_char, out_len: usize) -> c_int {
    let r = res.reply().result;
    if r < 0 {
        return r;
    }
    let data = res
        .reply()
        .ops
        .first()
        .map(|o| o.outdata.clone())
        .unwrap_or_default();
    if data.is_empty() {
        return r;
    }
    if data.len() > out_len || out.is_null() {
        return -libc::ERANGE;
    }
    // SAFETY: data.len() <= out_len writable bytes.
    unsafe { copy_to(out, &data) };
    c_int::try_from(data.len()).unwrap_or(-libc::ERANGE)
}

/// `rados_exec`: runs method `method` of class `cls` on the object with
/// `in_len` bytes of input; the length of its output, copied to `buf`
/// (-ERANGE if longer than `out_len`), or its result when it has none.
///
/// # Safety
/// `io` a live context; `oid`, `cls`, `method` C strings; `inbuf` has
/// `in_len` bytes; `buf` has `out_len` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_exec(
    io: IoctxT,
    oid: *const c_char,
    cls: *const c_char,
    method: *const c_char,
    inbuf: *const c_char,
    in_len: usize,
    buf: *mut c_char,
    out_len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, cls, method, input) = unsafe {
        let (io, name) = c_try!(target(io, oid));
        (
            io,
            name,
            c_try!(name_of(cls)),
            c_try!(name_of(method)),
            c_try!(slice_of(inbuf, in_len)),
        )
    };
    let op = c_try!(call_op(&cls, &method, input));
    let res = c_try!(io.run(|ctx| async move { ctx.operate_read_results(&name, &op).await }));
    // SAFETY: out_len bytes.
    unsafe { exec_result(&res, buf, out_len) }
}

/// A CMPEXT op. Safety: `cmp_buf` has `cmp_len` bytes.
unsafe fn cmpext_op(cmp_buf: *const c_char, cmp_len: usize, off: u64) -> Result<ReadOp, c_int> {
    if cmp_len > MAX_LEN {
        return Err(-libc::E2BIG);
    }
    // SAFETY: forwarded contract.
    let cmp = Bytes::copy_from_slice(unsafe { slice_of(cmp_buf, cmp_len) }?);
    let mut op = ReadOp::new();
    op.cmpext(off, cmp);
    Ok(op)
}

/// `rados_cmpext`: 0 if the object's bytes at `off` equal `cmp_buf`,
/// else `-4095 - offset` of the first difference (-E2BIG past
/// UINT_MAX/2 bytes).
///
/// # Safety
/// `io` a live context; `o` a C string; `cmp_buf` has `cmp_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_cmpext(
    io: IoctxT,
    o: *const c_char,
    cmp_buf: *const c_char,
    cmp_len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = c_try!(unsafe { target(io, o) });
    // SAFETY: cmp_len bytes.
    let op = c_try!(unsafe { cmpext_op(cmp_buf, cmp_len, off) });
    let res = c_try!(io.run(|ctx| async move { ctx.operate_read_results(&name, &op).await }));
    res.reply().result
}

/// A WRITESAME op: -E2BIG past UINT_MAX/2 bytes, -EINVAL for no data or
/// a length not a multiple of it. Safety: `buf` has `data_len` bytes.
unsafe fn writesame_op(
    buf: *const c_char,
    data_len: usize,
    write_len: usize,
    off: u64,
) -> Result<WriteOp, c_int> {
    if data_len > MAX_LEN || write_len > MAX_LEN {
        return Err(-libc::E2BIG);
    }
    if write_len.checked_rem(data_len) != Some(0) {
        return Err(-libc::EINVAL);
    }
    // SAFETY: forwarded contract.
    let data = Bytes::copy_from_slice(unsafe { slice_of(buf, data_len) }?);
    let mut op = WriteOp::new();
    op.writesame(off, write_len as u64, data);
    Ok(op)
}

/// `rados_writesame`: writes `data_len` bytes repeated over `write_len`
/// bytes from `off`; -EINVAL unless `write_len` is a non-zero multiple of
/// `data_len`.
///
/// # Safety
/// `io` a live context; `o` a C string; `buf` has `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_writesame(
    io: IoctxT,
    o: *const c_char,
    buf: *const c_char,
    data_len: usize,
    write_len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = c_try!(unsafe { target(io, o) });
    // SAFETY: data_len bytes.
    let op = c_try!(unsafe { writesame_op(buf, data_len, write_len, off) });
    let res = c_try!(io.run(|ctx| async move { ctx.operate_write_results(&name, &op).await }));
    res.reply().result
}

/// `rados_checksum`: checksums of `len` bytes from `off` (`chunk_size`
/// bytes each; 0: one) of `type`, seeded with `init_value`; the OSD's
/// output (a le32 count, then the sums) copied to `pchecksum` (-ERANGE
/// if longer than `checksum_len`). 0, or the errno.
///
/// # Safety
/// `io` a live context; `o` a C string; `init_value` has
/// `init_value_len` bytes; `pchecksum` has `checksum_len` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_checksum(
    io: IoctxT,
    o: *const c_char,
    kind: c_int,
    init_value: *const c_char,
    init_value_len: usize,
    len: usize,
    off: u64,
    chunk_size: usize,
    pchecksum: *mut c_char,
    checksum_len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = c_try!(unsafe { target(io, o) });
    // SAFETY: init_value_len bytes.
    let init = Bytes::copy_from_slice(c_try!(unsafe { slice_of(init_value, init_value_len) }));
    let chunk = c_try!(u32::try_from(chunk_size).map_err(|_| -libc::EINVAL));
    let Some(sum) = crate::capi_op::checksum_op(kind as u8, init, off, len as u64, chunk) else {
        return -libc::EINVAL;
    };
    let mut op = ReadOp::new();
    op.add_op::<Bytes>(sum);
    let res = c_try!(io.run(|ctx| async move { ctx.operate_read_results(&name, &op).await }));
    let r = res.reply().result;
    if r < 0 {
        return r;
    }
    let Some(out) = res.reply().ops.first() else {
        return r;
    };
    if out.rval < 0 {
        return out.rval;
    }
    if out.outdata.len() > checksum_len || (pchecksum.is_null() && !out.outdata.is_empty()) {
        return -libc::ERANGE;
    }
    // SAFETY: outdata.len() <= checksum_len writable bytes.
    unsafe { copy_to(pchecksum, &out.outdata) };
    out.rval
}

/// `rados_aio_flush_async`: completes `completion` (result 0) once every
/// write, append and remove submitted on `io` before the call has
/// completed; 0.
///
/// # Safety
/// `io` a live context; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_flush_async(io: IoctxT, completion: CompletionT) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    c_try!(io.flush_async(c));
    0
}

/// `rados_get_last_version`: the version of the object the context's
/// last op read or wrote (0 for NULL).
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_get_last_version(io: IoctxT) -> u64 {
    // SAFETY: a live context or NULL.
    match unsafe { self::io(io) } {
        Ok(io) => io.ctx().last_version(),
        Err(_) => 0,
    }
}

/// `rados_aio_cmpext`: `rados_cmpext` as an aio op.
///
/// # Safety
/// As `rados_cmpext`; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_cmpext(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    cmp_buf: *const c_char,
    cmp_len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = c_try!(unsafe { target(io, o) });
    // SAFETY: cmp_len bytes.
    let op = c_try!(unsafe { cmpext_op(cmp_buf, cmp_len, off) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        false,
        |ctx| async move { ctx.operate_read_results(&name, &op).await },
        |res: OpResults| res.reply().result,
    );
    0
}

/// `rados_aio_writesame`: `rados_writesame` as an aio op.
///
/// # Safety
/// As `rados_writesame`; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_writesame(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    buf: *const c_char,
    data_len: usize,
    write_len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = c_try!(unsafe { target(io, o) });
    // SAFETY: data_len bytes.
    let op = c_try!(unsafe { writesame_op(buf, data_len, write_len, off) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.operate_write_results(&name, &op).await },
        |res: OpResults| res.reply().result,
    );
    0
}

/// `rados_aio_exec`: `rados_exec` as an aio op: the output is copied to
/// `buf` before the op completes; its result is the output's length (or
/// the method's result when there is none, -ERANGE if longer than
/// `out_len`).
///
/// # Safety
/// As `rados_exec`; `completion` live; `buf` valid until the op
/// completes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_aio_exec(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    cls: *const c_char,
    method: *const c_char,
    inbuf: *const c_char,
    in_len: usize,
    buf: *mut c_char,
    out_len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, cls, method, input) = unsafe {
        let (io, name) = c_try!(target(io, o));
        (
            io,
            name,
            c_try!(name_of(cls)),
            c_try!(name_of(method)),
            c_try!(slice_of(inbuf, in_len)),
        )
    };
    let op = c_try!(call_op(&cls, &method, input));
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    let out = CPtr(buf.cast::<c_void>());
    io.aio(
        c,
        false,
        |ctx| async move { ctx.operate_read_results(&name, &op).await },
        // SAFETY: out_len bytes, writable until completion.
        move |res: OpResults| unsafe { exec_result(&res, out.get().cast::<c_char>(), out_len) },
    );
    0
}

/// `rados_aio_setxattr`: sets xattr `name` to `len` bytes (copied now).
///
/// # Safety
/// `io` a live context; `o`, `name` C strings; `completion` live; `buf`
/// has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_setxattr(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    name: *const c_char,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, value) = c_try!(unsafe { write_args(io, o, buf, len) });
    // SAFETY: NULL or a C string.
    let key = c_try!(unsafe { name_of(name) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.setxattr(&obj, &key, &value).await },
        |()| 0,
    );
    0
}

/// `rados_aio_rmxattr`: removes xattr `name`.
///
/// # Safety
/// `io` a live context; `o`, `name` C strings; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_rmxattr(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    name: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj) = c_try!(unsafe { target(io, o) });
    // SAFETY: NULL or a C string.
    let key = c_try!(unsafe { name_of(name) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.rmxattr(&obj, &key).await },
        |()| 0,
    );
    0
}

/// `rados_aio_getxattr`: xattr `name` copied to `buf` before the op
/// completes; its result is the value's length (-ERANGE if longer than
/// `len`, -ENODATA if there is no such xattr).
///
/// # Safety
/// `io` a live context; `o`, `name` C strings; `completion` live; `buf`
/// has `len` writable bytes until the op completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_getxattr(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    name: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj) = c_try!(unsafe { target(io, o) });
    // SAFETY: NULL or a C string.
    let key = c_try!(unsafe { name_of(name) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    let out = CPtr(buf.cast::<c_void>());
    io.aio(
        c,
        false,
        |ctx| async move { ctx.getxattr(&obj, &key).await },
        move |value: Bytes| {
            if value.len() > len || (out.get().is_null() && !value.is_empty()) {
                return -libc::ERANGE;
            }
            // SAFETY: value.len() <= len bytes, writable until completion.
            unsafe { copy_to(out.get().cast::<c_char>(), &value) };
            c_int::try_from(value.len()).unwrap_or(-libc::ERANGE)
        },
    );
    0
}

/// `rados_aio_getxattrs`: an iterator over the object's xattrs written to
/// `*iter` before the op completes, if it succeeds (result 0; -ENOENT if
/// there is no object, `*iter` untouched).
///
/// # Safety
/// `io` a live context; `oid` a C string; `completion` live; `iter`
/// writable until the op completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_getxattrs(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    iter: *mut IterT,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj) = c_try!(unsafe { target(io, oid) });
    if iter.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    let out = CPtr(iter.cast::<c_void>());
    io.aio(
        c,
        false,
        |ctx| async move { ctx.getxattrs(&obj).await },
        move |attrs| {
            let (p, it) = hand_out();
            it.fill(attrs);
            // SAFETY: writable until completion.
            unsafe { out.get().cast::<IterT>().write(p) };
            0
        },
    );
    0
}

/// `rados_aio_wait_for_complete_and_cb`: waits until the op has ended
/// and its callbacks have returned; 0.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_wait_for_complete_and_cb(c: CompletionT) -> c_int {
    // SAFETY: a live completion.
    c_try!(unsafe { completion(c) }).wait();
    0
}

/// `rados_aio_wait_for_safe_and_cb`: as
/// `rados_aio_wait_for_complete_and_cb`.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_wait_for_safe_and_cb(c: CompletionT) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_aio_wait_for_complete_and_cb(c) }
}

/// `rados_aio_is_complete_and_cb`: 1 once the op has ended and its
/// callbacks have returned, else 0.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_is_complete_and_cb(c: CompletionT) -> c_int {
    // SAFETY: a live completion.
    c_int::from(c_try!(unsafe { completion(c) }).is_complete_and_cb())
}

/// `rados_aio_is_safe_and_cb`: as `rados_aio_is_complete_and_cb`.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_is_safe_and_cb(c: CompletionT) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_aio_is_complete_and_cb(c) }
}
