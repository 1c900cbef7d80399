//! Object listing (`rados_nobjects_list_*`, librados.h of Ceph 16): a
//! pool's objects in the context's namespace at the time of
//! `rados_nobjects_list_open` (or in every namespace with
//! `LIBRADOS_ALL_NSPACES`), PG by PG, a page fetched at a time.
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; a `rados_list_ctx_t` is NULL or
//! what `rados_nobjects_list_open` returned and not closed yet; outputs
//! are NULL or writable.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use msgr_rados::{HObject, Listed, ObjectList};
use tokio::runtime::Handle;

use crate::capi::{io, set, IoctxT};
use crate::errno::errno_of;
use crate::runtime::block_on;

/// librados.h's `rados_list_ctx_t`.
pub type ListCtxT = *mut c_void;

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// What a `rados_list_ctx_t` points to: the listing and the strings of
/// the entry last returned (valid until the next call on the context).
struct ListCtx {
    rt: Handle,
    /// None once the handle's runtime is gone mid-call.
    list: Option<ObjectList>,
    entry: Vec<u8>,
    key: Vec<u8>,
    nspace: Vec<u8>,
    has_key: bool,
    /// The entry last returned (librados keeps it at the front of its
    /// list until the next call: `rados_nobjects_list_get_cursor` names
    /// it); None before the first, after the end and after a seek.
    current: Option<Listed>,
}

/// librados.h's `rados_object_list_cursor`: a position in a pool's
/// listing (Ceph's `hobject_t *`), here a `Box<HObject>`.
pub type ObjectListCursorT = *mut c_void;

/// The listing behind `p`. Safety: NULL or a live list context.
unsafe fn list_ctx<'a>(p: ListCtxT) -> Result<&'a mut ListCtx, c_int> {
    // SAFETY: a live list context is a Box<ListCtx> from list_open, used
    // by one thread at a time (librados's contract).
    unsafe { p.cast::<ListCtx>().as_mut() }.ok_or(-libc::EINVAL)
}

fn with_nul(b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(b.len().saturating_add(1));
    v.extend_from_slice(b);
    v.push(0);
    v
}

/// `rados_nobjects_list_open`: a listing of `io`'s pool in its namespace
/// (as it is now) into `*ctx`.
///
/// # Safety
/// `io` a live context; `ctx` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_open(io: IoctxT, ctx: *mut ListCtxT) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    if ctx.is_null() {
        return -libc::EINVAL;
    }
    c_try!(io.rados());
    let l = ListCtx {
        rt: io.rt.clone(),
        list: Some(io.ctx().list_objects()),
        entry: vec![0],
        key: vec![0],
        nspace: vec![0],
        has_key: false,
        current: None,
    };
    // SAFETY: checked non-NULL; writable.
    unsafe { ctx.write(Box::into_raw(Box::new(l)).cast::<c_void>()) };
    0
}

/// Takes the next entry into `l`'s strings: -ENOENT at the end.
fn advance(l: &mut ListCtx) -> Result<(), c_int> {
    l.current = None;
    let mut list = l.list.take().ok_or(-libc::ENOTCONN)?;
    let (list, item) = block_on(&l.rt, async move {
        let item = list.next().await;
        (list, item)
    })?;
    l.list = Some(list);
    let e = item.ok_or(-libc::ENOENT)?.map_err(|e| errno_of(&e))?;
    l.entry = with_nul(&e.name);
    l.key = with_nul(e.locator.as_bytes());
    l.nspace = with_nul(e.nspace.as_bytes());
    l.has_key = !e.locator.is_empty();
    l.current = Some(e);
    Ok(())
}

/// `rados_nobjects_list_next2`: the next object's name, locator key (NULL
/// if it has none) and namespace, strings valid until the next call on
/// `ctx`, and their lengths (each output but `entry` may be NULL);
/// -ENOENT at the end.
///
/// # Safety
/// `ctx` a live list context; the outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_next2(
    ctx: ListCtxT,
    entry: *mut *const c_char,
    key: *mut *const c_char,
    nspace: *mut *const c_char,
    entry_size: *mut usize,
    key_size: *mut usize,
    nspace_size: *mut usize,
) -> c_int {
    // SAFETY: a live list context.
    let l = c_try!(unsafe { list_ctx(ctx) });
    if entry.is_null() {
        return -libc::EINVAL;
    }
    c_try!(advance(l));
    let len = |v: &Vec<u8>| v.len().saturating_sub(1);
    // SAFETY: NULL or writable; the strings live in `l` until the next
    // call.
    unsafe {
        entry.write(l.entry.as_ptr().cast::<c_char>());
        let k = match l.has_key {
            true => l.key.as_ptr().cast::<c_char>(),
            false => std::ptr::null(),
        };
        set(key, k);
        set(nspace, l.nspace.as_ptr().cast::<c_char>());
        set(entry_size, len(&l.entry));
        set(key_size, len(&l.key));
        set(nspace_size, len(&l.nspace));
    }
    0
}

/// `rados_nobjects_list_next`: `rados_nobjects_list_next2` without the
/// lengths.
///
/// # Safety
/// As `rados_nobjects_list_next2`.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_next(
    ctx: ListCtxT,
    entry: *mut *const c_char,
    key: *mut *const c_char,
    nspace: *mut *const c_char,
) -> c_int {
    let null = std::ptr::null_mut();
    // SAFETY: forwarded contract.
    unsafe { rados_nobjects_list_next2(ctx, entry, key, nspace, null, null, null) }
}

/// `rados_nobjects_list_close`: frees the listing.
///
/// # Safety
/// `ctx` NULL or a live list context, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_close(ctx: ListCtxT) {
    if !ctx.is_null() {
        // SAFETY: a Box<ListCtx> from list_open, given back once.
        drop(unsafe { Box::from_raw(ctx.cast::<ListCtx>()) });
    }
}

/// `rados_nobjects_list_get_pg_hash_position`: the hash the listing's
/// cursor is at (where its next page starts: 0 at the start and at the
/// end, `pos` after a seek to `pos`), as librados 16 answers.
///
/// # Safety
/// `ctx` a live list context.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_get_pg_hash_position(ctx: ListCtxT) -> u32 {
    // SAFETY: a live list context.
    match unsafe { list_ctx(ctx) } {
        Ok(l) => l.list.as_ref().map_or(0, ObjectList::hash_position),
        Err(_) => 0,
    }
}

/// `rados_nobjects_list_seek`: goes on from hash position `pos` (0: from
/// the start; what was fetched and not returned is dropped); returns
/// `pos`.
///
/// # Safety
/// `ctx` a live list context.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_seek(ctx: ListCtxT, pos: u32) -> u32 {
    // SAFETY: a live list context.
    if let Ok(l) = unsafe { list_ctx(ctx) } {
        l.current = None;
        if let Some(list) = l.list.as_mut() {
            list.seek(pos);
        }
    }
    pos
}

/// `rados_nobjects_list_get_cursor`: a new cursor at the entry last
/// returned (before the first: the start; after the end: the end), to
/// free with `rados_object_list_cursor_free`; 0.
///
/// # Safety
/// `ctx` a live list context; `cursor` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_get_cursor(
    ctx: ListCtxT,
    cursor: *mut ObjectListCursorT,
) -> c_int {
    // SAFETY: a live list context.
    let l = c_try!(unsafe { list_ctx(ctx) });
    if cursor.is_null() {
        return -libc::EINVAL;
    }
    let Some(list) = l.list.as_ref() else {
        return -libc::ENOTCONN;
    };
    let at = l
        .current
        .as_ref()
        .and_then(|e| list.position_of(e))
        .unwrap_or_else(|| list.cursor());
    // SAFETY: checked non-NULL; writable.
    unsafe { cursor.write(Box::into_raw(Box::new(at)).cast::<c_void>()) };
    0
}

/// `rados_nobjects_list_seek_cursor`: goes on from `cursor` (the object
/// there is returned next); returns the placement group it falls in (its
/// seed).
///
/// # Safety
/// `ctx` a live list context; `cursor` a live cursor of this library.
#[no_mangle]
pub unsafe extern "C" fn rados_nobjects_list_seek_cursor(
    ctx: ListCtxT,
    cursor: ObjectListCursorT,
) -> u32 {
    // SAFETY: a live list context; a live cursor (a Box<HObject>) or NULL.
    let (Ok(l), Some(at)) = (unsafe { list_ctx(ctx) }, unsafe {
        cursor.cast::<HObject>().as_ref()
    }) else {
        return 0;
    };
    l.current = None;
    l.list
        .as_mut()
        .map_or(0, |list| list.seek_cursor(at.clone()))
}

/// `rados_object_list_cursor_free`: frees a cursor; `io` is unused, as in
/// librados.
///
/// # Safety
/// `cursor` NULL or a cursor of this library, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_object_list_cursor_free(_io: IoctxT, cursor: ObjectListCursorT) {
    if !cursor.is_null() {
        // SAFETY: a Box<HObject> from get_cursor, given back once.
        drop(unsafe { Box::from_raw(cursor.cast::<HObject>()) });
    }
}
