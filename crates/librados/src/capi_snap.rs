//! Snapshots (`rados_ioctx_snap_*`, `rados_ioctx_selfmanaged_snap_*`,
//! librados.h of Ceph 16): pool snapshots, taken and removed through the
//! monitors and read from the pool's entry in the OSD map; self-managed
//! snapshot ids, the context's write snap context, rollbacks and the snap
//! the context reads at.
//!
//! A pool has one kind or the other: the monitors answer -EINVAL to the
//! other kind's calls.
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; C strings are NUL-terminated;
//! arrays have the length their count says; outputs are NULL or writable.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};

use msgr_rados::{SnapContext, NOSNAP};

use crate::capi::{bytes_of, io, put_cstr_padded, set, str_of, IoctxT};
use crate::capi_aio::{op_ref, CompletionT};
use crate::errno::errno_of;

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// librados.h's `rados_snap_t`.
pub type SnapT = u64;

/// Ceph's CEPH_MAXSNAP: the greatest snap id a snap context may hold.
const MAXSNAP: u64 = u64::MAX - 2;

/// `rados_ioctx_snap_create`: takes pool snapshot `snapname` of the
/// context's pool; -EEXIST if it exists, -EINVAL if the pool has
/// self-managed snapshots.
///
/// # Safety
/// `io` a live context; `snapname` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_create(io: IoctxT, snapname: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(str_of(snapname)).to_string()) };
    let (rados, ctx) = (c_try!(io.rados()), io.ctx());
    c_try!(
        c_try!(io.block(async move { rados.snap_create(&ctx, &name).await }))
            .map_err(|e| errno_of(&e))
    );
    0
}

/// `rados_ioctx_snap_remove`: removes pool snapshot `snapname`; -ENOENT
/// if there is none.
///
/// # Safety
/// `io` a live context; `snapname` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_remove(io: IoctxT, snapname: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(str_of(snapname)).to_string()) };
    let (rados, ctx) = (c_try!(io.rados()), io.ctx());
    c_try!(
        c_try!(io.block(async move { rados.snap_remove(&ctx, &name).await }))
            .map_err(|e| errno_of(&e))
    );
    0
}

/// `rados_ioctx_snap_rollback`: object `oid` becomes what it was at pool
/// snapshot `snapname`; -ENOENT if there is no such snapshot.
///
/// # Safety
/// `io` a live context; `oid`, `snapname` C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_rollback(
    io: IoctxT,
    oid: *const c_char,
    snapname: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, name) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(oid)).to_vec(),
            c_try!(str_of(snapname)).to_string(),
        )
    };
    c_try!(io.run(|ctx| async move { ctx.snap_rollback(&obj, &name).await }));
    0
}

/// `rados_rollback`: the old name of `rados_ioctx_snap_rollback`.
///
/// # Safety
/// As `rados_ioctx_snap_rollback`.
#[no_mangle]
pub unsafe extern "C" fn rados_rollback(
    io: IoctxT,
    oid: *const c_char,
    snapname: *const c_char,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_ioctx_snap_rollback(io, oid, snapname) }
}

/// `rados_ioctx_snap_list`: the pool snapshots' ids, oldest first, into
/// `snaps` (room for `maxlen`); their number, or -ERANGE if more.
///
/// # Safety
/// `io` a live context; `snaps` has room for `maxlen` ids.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_list(
    io: IoctxT,
    snaps: *mut SnapT,
    maxlen: c_int,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let ids = c_try!(io.ctx().snap_list().map_err(|e| errno_of(&e)));
    let fits = usize::try_from(maxlen).is_ok_and(|m| ids.len() <= m);
    if !fits {
        return -libc::ERANGE;
    }
    if !ids.is_empty() && snaps.is_null() {
        return -libc::EINVAL;
    }
    for (i, id) in ids.iter().enumerate() {
        // SAFETY: i < ids.len() <= maxlen slots.
        unsafe { snaps.add(i).write(*id) };
    }
    c_int::try_from(ids.len()).unwrap_or(c_int::MAX)
}

/// `rados_ioctx_snap_lookup`: pool snapshot `name`'s id into `*id`;
/// -ENOENT if there is none.
///
/// # Safety
/// `io` a live context; `name` a C string; `id` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_lookup(
    io: IoctxT,
    name: *const c_char,
    id: *mut SnapT,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(str_of(name))) };
    let snap = c_try!(io.ctx().snap_lookup(name).map_err(|e| errno_of(&e)));
    // SAFETY: NULL or writable.
    unsafe { set(id, snap) };
    0
}

/// `rados_ioctx_snap_get_name`: pool snapshot `id`'s name into `name` of
/// `maxlen` bytes; 0, -ERANGE if it does not fit with its NUL, -ENOENT if
/// there is no such snapshot.
///
/// # Safety
/// `io` a live context; `name` has `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_get_name(
    io: IoctxT,
    id: SnapT,
    name: *mut c_char,
    maxlen: c_int,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let s = c_try!(io.ctx().snap_get_name(id).map_err(|e| errno_of(&e)));
    let maxlen = usize::try_from(maxlen).unwrap_or(0);
    // SAFETY: maxlen bytes.
    let r = unsafe { put_cstr_padded(name, maxlen, &s) };
    r.min(0)
}

/// `rados_ioctx_snap_get_stamp`: when pool snapshot `id` was taken
/// (seconds) into `*t`; -ENOENT if there is no such snapshot.
///
/// # Safety
/// `io` a live context; `t` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_get_stamp(
    io: IoctxT,
    id: SnapT,
    t: *mut libc::time_t,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let stamp = c_try!(io.ctx().snap_get_stamp(id).map_err(|e| errno_of(&e)));
    // SAFETY: NULL or writable.
    unsafe { set(t, libc::time_t::from(stamp.sec)) };
    0
}

/// `rados_ioctx_snap_set_read`: reads from now on see snapshot `snap`
/// (`LIBRADOS_SNAP_HEAD`, or 0: the objects as they are).
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_snap_set_read(io: IoctxT, snap: SnapT) {
    // SAFETY: a live context.
    if let Ok(io) = unsafe { self::io(io) } {
        let snap = if snap == 0 { NOSNAP } else { snap };
        io.update(|ctx| ctx.set_read_snap(snap));
    }
}

/// `rados_ioctx_selfmanaged_snap_create`: allocates a self-managed
/// snapshot id of the pool into `*snapid`; -EINVAL if the pool has pool
/// snapshots.
///
/// # Safety
/// `io` a live context; `snapid` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_selfmanaged_snap_create(
    io: IoctxT,
    snapid: *mut SnapT,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let (rados, ctx) = (c_try!(io.rados()), io.ctx());
    let id = c_try!(
        c_try!(io.block(async move { rados.selfmanaged_snap_create(&ctx).await }))
            .map_err(|e| errno_of(&e))
    );
    // SAFETY: NULL or writable.
    unsafe { set(snapid, id) };
    0
}

/// `rados_ioctx_selfmanaged_snap_remove`: removes self-managed snapshot
/// `snapid` (the OSDs trim its clones).
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_selfmanaged_snap_remove(io: IoctxT, snapid: SnapT) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let (rados, ctx) = (c_try!(io.rados()), io.ctx());
    c_try!(
        c_try!(io.block(async move { rados.selfmanaged_snap_remove(&ctx, snapid).await }))
            .map_err(|e| errno_of(&e))
    );
    0
}

/// `rados_aio_ioctx_selfmanaged_snap_create`: as
/// `rados_ioctx_selfmanaged_snap_create`, asynchronously: `*snapid` is
/// written before `completion` completes.
///
/// # Safety
/// `io` a live context; `completion` live; `snapid` NULL or writable
/// until the op completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_ioctx_selfmanaged_snap_create(
    io: IoctxT,
    snapid: *mut SnapT,
    completion: CompletionT,
) {
    // SAFETY: a live context; NULL or a live completion.
    let (Ok(io), Ok(c)) = (unsafe { self::io(io) }, unsafe { op_ref(completion) }) else {
        return;
    };
    let Ok(rados) = io.rados() else {
        c.finish(-libc::ENOTCONN, &io.finisher);
        return;
    };
    let out = crate::aio::CPtr(snapid.cast());
    io.aio(
        c,
        false,
        move |ctx| async move { rados.selfmanaged_snap_create(&ctx).await },
        move |id: u64| {
            // SAFETY: NULL or writable until the op completes.
            unsafe { set(out.get().cast::<SnapT>(), id) };
            0
        },
    );
}

/// `rados_aio_ioctx_selfmanaged_snap_remove`: as
/// `rados_ioctx_selfmanaged_snap_remove`, asynchronously.
///
/// # Safety
/// `io` a live context; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_ioctx_selfmanaged_snap_remove(
    io: IoctxT,
    snapid: SnapT,
    completion: CompletionT,
) {
    // SAFETY: a live context; NULL or a live completion.
    let (Ok(io), Ok(c)) = (unsafe { self::io(io) }, unsafe { op_ref(completion) }) else {
        return;
    };
    let Ok(rados) = io.rados() else {
        c.finish(-libc::ENOTCONN, &io.finisher);
        return;
    };
    io.aio(
        c,
        false,
        move |ctx| async move { rados.selfmanaged_snap_remove(&ctx, snapid).await },
        |()| 0,
    );
}

/// `rados_ioctx_selfmanaged_snap_rollback`: object `oid` becomes what it
/// was at self-managed snapshot `snapid`.
///
/// # Safety
/// `io` a live context; `oid` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_selfmanaged_snap_rollback(
    io: IoctxT,
    oid: *const c_char,
    snapid: SnapT,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    c_try!(io.run(|ctx| async move { ctx.selfmanaged_snap_rollback(&obj, snapid).await }));
    0
}

/// `rados_ioctx_selfmanaged_snap_set_write_ctx`: the context's writes
/// carry snap context `seq`, `snaps` (`num_snaps` ids, newest first) from
/// now on; -EINVAL if it is not valid (`seq` past CEPH_MAXSNAP, below
/// `snaps[0]`, or `snaps` not strictly descending).
///
/// # Safety
/// `io` a live context; `snaps` has `num_snaps` ids.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_selfmanaged_snap_set_write_ctx(
    io: IoctxT,
    seq: SnapT,
    snaps: *mut SnapT,
    num_snaps: c_int,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let n = c_try!(usize::try_from(num_snaps).map_err(|_| -libc::EINVAL));
    if n > 0 && snaps.is_null() {
        return -libc::EINVAL;
    }
    let ids: Vec<u64> = match n {
        0 => Vec::new(),
        // SAFETY: n ids at snaps.
        n => unsafe { std::slice::from_raw_parts(snaps, n) }.to_vec(),
    };
    // SnapContext::is_valid.
    let descending = ids.windows(2).all(|w| match w {
        [a, b] => b < a,
        _ => true,
    });
    let valid = seq <= MAXSNAP && ids.first().is_none_or(|&f| f <= seq) && descending;
    if !valid {
        return -libc::EINVAL;
    }
    io.update(|ctx| ctx.set_write_snap_context(SnapContext { seq, snaps: ids }));
    0
}
