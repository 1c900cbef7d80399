//! The asynchronous C functions (`rados_aio_*`, librados.h of Ceph 16)
//! with the semantics of src/librados/librados_c.cc: an op returns 0 once
//! submitted (or an errno if it cannot be: -EINVAL for a NULL argument,
//! -E2BIG for a write past UINT_MAX/2 bytes), its result is the
//! completion's return value. A write's data is copied at submission; a
//! read's buffer and a stat's outputs are written before the op completes
//! and must stay valid until then (librados's contract).
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; a `rados_completion_t` is NULL
//! or what `rados_aio_create_completion*` returned and not released yet;
//! C strings are NUL-terminated; a `(buf, len)` pair has `len` bytes.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use crate::aio::{CPtr, Callback, Completion};
use crate::capi::{bytes_of, copy_to, io, set, write_args, IoctxT};

/// librados.h's `rados_completion_t`.
pub type CompletionT = *mut c_void;

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// The completion behind `p`. Safety: `p` is NULL or a live completion.
unsafe fn completion<'a>(p: CompletionT) -> Result<&'a Completion, c_int> {
    // SAFETY: a live completion is an Arc<Completion> from into_raw.
    unsafe { (p as *const Completion).as_ref() }.ok_or(-libc::EINVAL)
}

/// A new reference to the completion behind `p`, for an op. Safety: as
/// [`completion`].
pub(crate) unsafe fn op_ref(p: CompletionT) -> Result<Arc<Completion>, c_int> {
    if p.is_null() {
        return Err(-libc::EINVAL);
    }
    let p = p as *const Completion;
    // SAFETY: from Arc::into_raw and still counted by the caller's
    // reference; the new count is the op's, dropped when it ends.
    unsafe {
        Arc::increment_strong_count(p);
        Ok(Arc::from_raw(p))
    }
}

/// Boxes a completion into `*pc`. Safety: `pc` NULL or writable.
unsafe fn hand_out(pc: *mut CompletionT, c: Completion) -> c_int {
    if pc.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { pc.write(Arc::into_raw(Arc::new(c)).cast_mut().cast::<c_void>()) };
    0
}

/// `rados_aio_create_completion`: a completion calling `cb_complete` then
/// `cb_safe` (each may be NULL) with `cb_arg`, on the handle's finisher
/// thread, when its op ends.
///
/// # Safety
/// `pc` writable; the callbacks NULL or functions of librados.h's type.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_create_completion(
    cb_arg: *mut c_void,
    cb_complete: Option<Callback>,
    cb_safe: Option<Callback>,
    pc: *mut CompletionT,
) -> c_int {
    // SAFETY: writable.
    unsafe { hand_out(pc, Completion::new(cb_arg, cb_complete, cb_safe)) }
}

/// `rados_aio_create_completion2`: a completion calling `cb_complete`
/// (may be NULL) with `cb_arg` when its op ends.
///
/// # Safety
/// `pc` writable; the callback NULL or a function of librados.h's type.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_create_completion2(
    cb_arg: *mut c_void,
    cb_complete: Option<Callback>,
    pc: *mut CompletionT,
) -> c_int {
    // SAFETY: writable.
    unsafe { hand_out(pc, Completion::new(cb_arg, cb_complete, None)) }
}

/// `rados_aio_release`: drops the caller's reference (an op in flight
/// keeps its own until its callbacks have returned).
///
/// # Safety
/// `c` NULL or a live completion, not used by the caller afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_release(c: CompletionT) {
    if !c.is_null() {
        // SAFETY: the caller's reference, from Arc::into_raw, given back once.
        drop(unsafe { Arc::from_raw(c as *const Completion) });
    }
}

/// `rados_aio_wait_for_complete`: waits until the op has ended and its
/// callbacks have returned; 0.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_wait_for_complete(c: CompletionT) -> c_int {
    // SAFETY: a live completion.
    c_try!(unsafe { completion(c) }).wait();
    0
}

/// `rados_aio_wait_for_safe`: as `rados_aio_wait_for_complete` (librados
/// no longer tells the two apart).
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_wait_for_safe(c: CompletionT) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_aio_wait_for_complete(c) }
}

/// `rados_aio_is_complete`: 1 once the op has ended, else 0.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_is_complete(c: CompletionT) -> c_int {
    // SAFETY: a live completion.
    c_int::from(c_try!(unsafe { completion(c) }).is_complete())
}

/// `rados_aio_is_safe`: as `rados_aio_is_complete`.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_is_safe(c: CompletionT) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_aio_is_complete(c) }
}

/// `rados_aio_get_return_value`: the op's result (0, a read's length, or
/// a negative errno); 0 before it ends.
///
/// # Safety
/// `c` a live completion.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_get_return_value(c: CompletionT) -> c_int {
    // SAFETY: a live completion.
    c_try!(unsafe { completion(c) }).return_value()
}

/// `rados_aio_write`: writes `len` bytes at `off` (copied now); result 0.
///
/// # Safety
/// `io` a live context; `oid` a C string; `completion` live; `buf` has
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_write(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    buf: *const c_char,
    len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.write(&name, off, data).await },
        |()| 0,
    );
    0
}

/// `rados_aio_write_full`: replaces the object's data with `len` bytes.
///
/// # Safety
/// As `rados_aio_write`.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_write_full(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.write_full(&name, data).await },
        |()| 0,
    );
    0
}

/// `rados_aio_append`: appends `len` bytes.
///
/// # Safety
/// As `rados_aio_write`.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_append(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.append(&name, data).await },
        |()| 0,
    );
    0
}

/// `rados_aio_remove`: deletes the object; result -ENOENT if it does not
/// exist.
///
/// # Safety
/// `io` a live context; `oid` a C string; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_remove(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    io.aio(
        c,
        true,
        |ctx| async move { ctx.remove(&name).await },
        |()| 0,
    );
    0
}

/// `rados_aio_read`: up to `len` bytes from `off` into `buf`, written
/// before the op completes; result the number read.
///
/// # Safety
/// `io` a live context; `oid` a C string; `completion` live; `buf` has
/// `len` writable bytes until the op completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_read(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    buf: *mut c_char,
    len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    if len > 0 && buf.is_null() {
        return -libc::EINVAL;
    }
    let want = c_try!(u64::try_from(len).map_err(|_| -libc::EINVAL));
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    let out = CPtr(buf.cast::<c_void>());
    io.aio(
        c,
        false,
        |ctx| async move { ctx.read(&name, off, want).await },
        move |data: bytes::Bytes| {
            if data.len() > len {
                return -libc::ERANGE;
            }
            // SAFETY: data.len() <= len bytes, writable until completion.
            unsafe { copy_to(out.get().cast::<c_char>(), &data) };
            c_int::try_from(data.len()).unwrap_or(-libc::ERANGE)
        },
    );
    0
}

/// `rados_aio_stat`: the object's size and modification time (seconds),
/// written before the op completes (each output may be NULL); result
/// -ENOENT if it does not exist.
///
/// # Safety
/// `io` a live context; `oid` a C string; `completion` live; the outputs
/// NULL or writable until the op completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_stat(
    io: IoctxT,
    oid: *const c_char,
    completion: CompletionT,
    psize: *mut u64,
    pmtime: *mut libc::time_t,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { op_ref(completion) });
    let (size_out, mtime_out) = (CPtr(psize.cast()), CPtr(pmtime.cast()));
    io.aio(
        c,
        false,
        |ctx| async move { ctx.stat(&name).await },
        move |st: msgr_rados::Stat| {
            // SAFETY: NULL or writable until completion.
            unsafe {
                set(size_out.get().cast::<u64>(), st.size);
                set(
                    mtime_out.get().cast::<libc::time_t>(),
                    libc::time_t::from(st.mtime.sec),
                );
            }
            0
        },
    );
    0
}

/// `rados_aio_flush`: waits until every write, append and remove
/// submitted on `io` before the call has completed; 0.
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_flush(io: IoctxT) -> c_int {
    // SAFETY: a live context.
    c_try!(unsafe { self::io(io) }).flush();
    0
}
