//! Advisory locks (`rados_lock_*`, `rados_unlock`, `rados_break_lock`,
//! `rados_list_lockers`, librados.h of Ceph 16): the OSD's class `lock`,
//! called as librados's `rados::cls::lock` does.
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; C strings are NUL-terminated;
//! a buffer has the length its length argument says; outputs are NULL or
//! writable.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::time::Duration;

use msgr_rados::lock::{Lock, LockType};

use crate::capi::{bytes_of, copy_to, io, set, string_or_empty, IoctxT};

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// A C string argument as UTF-8 (lossily), -EINVAL if NULL (librados
/// builds a std::string of it, which a NULL crashes).
///
/// Safety: NULL or a C string.
unsafe fn text(p: *const c_char) -> Result<String, c_int> {
    // SAFETY: forwarded contract.
    Ok(String::from_utf8_lossy(unsafe { bytes_of(p) }?).into_owned())
}

/// Takes a lock (both kinds).
///
/// Safety: as the C functions' contracts.
#[allow(clippy::too_many_arguments)]
unsafe fn lock(
    io: IoctxT,
    oid: *const c_char,
    name: *const c_char,
    cookie: *const c_char,
    tag: *const c_char,
    desc: *const c_char,
    duration: *const libc::timeval,
    flags: u8,
    kind: LockType,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, mut lock) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(oid)).to_vec(),
            Lock::new(&c_try!(text(name)), kind)
                .cookie(&c_try!(text(cookie)))
                .tag(&string_or_empty(tag))
                .description(&string_or_empty(desc)),
        )
    };
    // SAFETY: NULL or a timeval.
    if let Some(tv) = unsafe { duration.as_ref() } {
        let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
        let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
        lock =
            lock.duration(Duration::from_secs(secs).saturating_add(Duration::from_micros(micros)));
    }
    // LIBRADOS_LOCK_FLAG_RENEW / MUST_RENEW are cls_lock's flags.
    lock.flags = flags;
    c_try!(io.run(|ctx| async move { ctx.lock(&obj, &lock).await }));
    0
}

/// `rados_lock_exclusive`: takes exclusive lock `name` of object `oid`
/// (creating it) with `cookie` and description `desc`, for `duration`
/// (NULL: until unlocked); `flags` LIBRADOS_LOCK_FLAG_RENEW (or
/// MAY_RENEW) renews our hold, MUST_RENEW only renews it (-ENOENT if we
/// hold none). -EBUSY if another holds it, -EEXIST if we hold it with
/// this cookie already (without a renew flag).
///
/// # Safety
/// `io` a live context; the strings C strings (`desc` may be NULL);
/// `duration` NULL or a timeval.
#[no_mangle]
pub unsafe extern "C" fn rados_lock_exclusive(
    io: IoctxT,
    oid: *const c_char,
    name: *const c_char,
    cookie: *const c_char,
    desc: *const c_char,
    duration: *mut libc::timeval,
    flags: u8,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        lock(
            io,
            oid,
            name,
            cookie,
            std::ptr::null(),
            desc,
            duration,
            flags,
            LockType::Exclusive,
        )
    }
}

/// `rados_lock_shared`: takes shared lock `name` with `cookie` and `tag`
/// (every holder's must match: -EBUSY otherwise, or if it is held
/// exclusively); as `rados_lock_exclusive` otherwise.
///
/// # Safety
/// As `rados_lock_exclusive`; `tag` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_lock_shared(
    io: IoctxT,
    o: *const c_char,
    name: *const c_char,
    cookie: *const c_char,
    tag: *const c_char,
    desc: *const c_char,
    duration: *mut libc::timeval,
    flags: u8,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        lock(
            io,
            o,
            name,
            cookie,
            tag,
            desc,
            duration,
            flags,
            LockType::Shared,
        )
    }
}

/// `rados_unlock`: releases our hold of lock `name` with `cookie`;
/// -ENOENT if we hold none.
///
/// # Safety
/// `io` a live context; the strings C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_unlock(
    io: IoctxT,
    o: *const c_char,
    name: *const c_char,
    cookie: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, name, cookie) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(o)).to_vec(),
            c_try!(text(name)),
            c_try!(text(cookie)),
        )
    };
    c_try!(io.run(|ctx| async move { ctx.unlock(&obj, &name, &cookie).await }));
    0
}

/// `rados_break_lock`: breaks the hold of `client` (`client.N`) with
/// `cookie` on lock `name`; -EINVAL if `client` is not an entity name,
/// -ENOENT if it holds none.
///
/// # Safety
/// `io` a live context; the strings C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_break_lock(
    io: IoctxT,
    o: *const c_char,
    name: *const c_char,
    client: *const c_char,
    cookie: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, name, client, cookie) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(o)).to_vec(),
            c_try!(text(name)),
            c_try!(text(client)),
            c_try!(text(cookie)),
        )
    };
    let locker = c_try!(client.parse().map_err(|_| -libc::EINVAL));
    c_try!(io.run(|ctx| async move { ctx.break_lock(&obj, &name, &locker, &cookie).await }));
    0
}

/// Copies NUL-terminated `items` one after the other to `buf`.
///
/// Safety: `buf` has room for them all.
unsafe fn put_all<'a>(buf: *mut c_char, items: impl Iterator<Item = &'a str>) {
    let mut at = buf;
    for s in items {
        // SAFETY: room checked by the caller.
        unsafe {
            copy_to(at, s.as_bytes());
            at.add(s.len()).write(0);
            at = at.add(s.len()).add(1);
        }
    }
}

/// `rados_list_lockers`: who holds lock `name` of `o`: returns their
/// number; `*exclusive` 1 if held exclusively, else 0; the tag into `tag`,
/// and each holder's client (`client.N`), cookie and address into
/// `clients`, `cookies` and `addrs`, NUL-terminated one after the other.
/// Each `*..._len` gets the length needed; -ERANGE if any buffer is too
/// short (nothing else written). -ENOENT if the object does not exist.
///
/// # Safety
/// `io` a live context; `o`, `name` C strings; each buffer has the length
/// its length pointer holds; the length pointers and `exclusive` writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_list_lockers(
    io: IoctxT,
    o: *const c_char,
    name: *const c_char,
    exclusive: *mut c_int,
    tag: *mut c_char,
    tag_len: *mut usize,
    clients: *mut c_char,
    clients_len: *mut usize,
    cookies: *mut c_char,
    cookies_len: *mut usize,
    addrs: *mut c_char,
    addrs_len: *mut usize,
) -> isize {
    let r = |e: c_int| isize::try_from(e).unwrap_or(isize::MIN);
    // SAFETY: per the contract above.
    let (io, obj, name) = match unsafe { (self::io(io), bytes_of(o), text(name)) } {
        (Ok(io), Ok(obj), Ok(name)) => (io, obj.to_vec(), name),
        _ => return r(-libc::EINVAL),
    };
    if tag_len.is_null() || clients_len.is_null() || cookies_len.is_null() || addrs_len.is_null() {
        return r(-libc::EINVAL);
    }
    let info = match io.run(|ctx| async move { ctx.lock_info(&obj, &name).await }) {
        Ok(i) => i,
        Err(e) => return r(e),
    };
    let held: Vec<(String, String, String)> = info
        .lockers
        .iter()
        .map(|l| {
            let a = l.addr.to_string();
            // Ceph prints an address without its type when it is "any".
            let addr = match a.strip_prefix("any:") {
                Some(s) => s.to_string(),
                None => a,
            };
            (l.locker.to_string(), l.cookie.clone(), addr)
        })
        .collect();
    let total = |f: fn(&(String, String, String)) -> usize| -> usize {
        held.iter()
            .map(|h| f(h).saturating_add(1))
            .fold(0usize, usize::saturating_add)
    };
    let (cl, ck, ad) = (
        total(|h| h.0.len()),
        total(|h| h.1.len()),
        total(|h| h.2.len()),
    );
    let tl = info.tag.len().saturating_add(1);
    // SAFETY: the length pointers are non-NULL and readable.
    let too_short =
        unsafe { cl > *clients_len || ck > *cookies_len || ad > *addrs_len || tl > *tag_len };
    // SAFETY: non-NULL and writable.
    unsafe {
        clients_len.write(cl);
        cookies_len.write(ck);
        addrs_len.write(ad);
        tag_len.write(tl);
    }
    if too_short {
        return r(-libc::ERANGE);
    }
    if tag.is_null()
        || (!held.is_empty() && (clients.is_null() || cookies.is_null() || addrs.is_null()))
    {
        return r(-libc::EINVAL);
    }
    // SAFETY: each buffer has room for what it gets (checked above).
    unsafe {
        put_all(tag, std::iter::once(info.tag.as_str()));
        put_all(clients, held.iter().map(|h| h.0.as_str()));
        put_all(cookies, held.iter().map(|h| h.1.as_str()));
        put_all(addrs, held.iter().map(|h| h.2.as_str()));
        set(exclusive, c_int::from(info.kind == LockType::Exclusive));
    }
    isize::try_from(held.len()).unwrap_or(isize::MAX)
}
