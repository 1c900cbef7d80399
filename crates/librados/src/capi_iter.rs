//! The omap and xattr iterators (`rados_omap_iter_t`,
//! `rados_xattrs_iter_t`) and the calls that walk them, with the
//! semantics of src/librados/librados_c.cc: an iterator a read op
//! returns exists (empty) from the moment the op is built and is filled
//! when the op completes; the keys, values and names it hands out belong
//! to it and stay valid until `rados_omap_get_end` /
//! `rados_getxattrs_end` (librados: until the end, a value of
//! `rados_getxattrs_next` until the next call). A NULL iterator is
//! -EINVAL (librados would crash).
//!
//! # Unsafe code
//! As in `capi`: an iterator is NULL or what this library handed out and
//! not ended yet; output pointers are NULL or writable.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use msgr_rados::Bytes;

use crate::capi::{bytes_of, io, set, IoctxT};

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// `rados_omap_iter_t`: `rados_xattrs_iter_t`.
pub type IterT = *mut c_void;

#[derive(Default)]
struct Entries {
    /// Each key (NUL-terminated) and value.
    items: Vec<(Vec<u8>, Vec<u8>)>,
    /// The next to hand out.
    pos: usize,
}

/// What an omap or xattr iterator points to: shared by the caller and
/// the op that fills it (an `Arc`).
#[derive(Default)]
pub struct Iter {
    entries: Mutex<Entries>,
}

impl Iter {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the entries and rewinds (an op completed; librados's
    /// `C_OmapIter` / `C_XattrsIter`).
    pub(crate) fn fill<I: IntoIterator<Item = (String, Bytes)>>(&self, entries: I) {
        let items = entries
            .into_iter()
            .map(|(k, v)| {
                let mut key = k.into_bytes();
                key.push(0);
                (key, v.to_vec())
            })
            .collect();
        *self.lock() = Entries { items, pos: 0 };
    }

    /// Rewinds over what it holds.
    pub(crate) fn rewind(&self) {
        self.lock().pos = 0;
    }

    /// The next key (a C string) and value, with their lengths; NULLs
    /// and 0 at the end. The pointers stay valid until the iterator is
    /// filled again or ended.
    fn next(&self) -> (*mut c_char, *mut c_char, usize, usize) {
        let mut st = self.lock();
        let pos = st.pos;
        let Some((k, v)) = st.items.get(pos) else {
            return (std::ptr::null_mut(), std::ptr::null_mut(), 0, 0);
        };
        let key = k.as_ptr().cast_mut().cast::<c_char>();
        // An empty value is NULL, as librados's bufferlist::c_str().
        let val = if v.is_empty() {
            std::ptr::null_mut()
        } else {
            v.as_ptr().cast_mut().cast::<c_char>()
        };
        let lens = (k.len().saturating_sub(1), v.len());
        st.pos = pos.saturating_add(1);
        (key, val, lens.0, lens.1)
    }

    fn len(&self) -> usize {
        self.lock().items.len()
    }
}

/// A new iterator for the caller (its reference) and the op (the `Arc`).
pub(crate) fn hand_out() -> (IterT, Arc<Iter>) {
    let it = Arc::new(Iter::default());
    let p = Arc::into_raw(Arc::clone(&it)).cast_mut().cast::<c_void>();
    (p, it)
}

/// The iterator behind `p`. Safety: `p` is NULL or a live iterator.
unsafe fn iter<'a>(p: IterT) -> Result<&'a Iter, c_int> {
    // SAFETY: a live iterator is an Arc<Iter> from Arc::into_raw.
    unsafe { (p as *const Iter).as_ref() }.ok_or(-libc::EINVAL)
}

/// Drops the caller's reference. Safety: `p` NULL or a live iterator,
/// not used afterwards.
unsafe fn end(p: IterT) {
    if !p.is_null() {
        // SAFETY: the caller's reference, from Arc::into_raw, given back once.
        drop(unsafe { Arc::from_raw(p as *const Iter) });
    }
}

/// `rados_omap_get_next2`: the next key and value and their lengths
/// (each output may be NULL); at the end, NULLs and 0. 0.
///
/// # Safety
/// `iter` a live omap iterator; the outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_omap_get_next2(
    iter: IterT,
    key: *mut *mut c_char,
    val: *mut *mut c_char,
    key_len: *mut usize,
    val_len: *mut usize,
) -> c_int {
    // SAFETY: a live iterator.
    let it = c_try!(unsafe { self::iter(iter) });
    let (k, v, kl, vl) = it.next();
    // SAFETY: NULL or writable.
    unsafe {
        set(key, k);
        set(val, v);
        set(key_len, kl);
        set(val_len, vl);
    }
    0
}

/// `rados_omap_get_next`: the next key (a C string) and value and the
/// value's length; at the end, NULLs and 0. 0.
///
/// # Safety
/// As `rados_omap_get_next2`.
#[no_mangle]
pub unsafe extern "C" fn rados_omap_get_next(
    iter: IterT,
    key: *mut *mut c_char,
    val: *mut *mut c_char,
    len: *mut usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_omap_get_next2(iter, key, val, std::ptr::null_mut(), len) }
}

/// `rados_omap_iter_size`: how many entries the iterator holds (0 for
/// NULL).
///
/// # Safety
/// `iter` a live omap iterator.
#[no_mangle]
pub unsafe extern "C" fn rados_omap_iter_size(iter: IterT) -> c_uint {
    // SAFETY: a live iterator or NULL.
    match unsafe { self::iter(iter) } {
        Ok(it) => c_uint::try_from(it.len()).unwrap_or(c_uint::MAX),
        Err(_) => 0,
    }
}

/// `rados_omap_get_end`: frees the iterator (and what it handed out).
///
/// # Safety
/// `iter` NULL or a live omap iterator, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_omap_get_end(iter: IterT) {
    // SAFETY: forwarded contract.
    unsafe { end(iter) }
}

/// `rados_getxattrs`: an iterator over the object's xattrs into `*iter`;
/// 0, or the errno (-ENOENT if there is no object; `*iter` untouched).
///
/// # Safety
/// `io` a live context; `oid` a C string; `iter` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_getxattrs(
    io: IoctxT,
    oid: *const c_char,
    iter: *mut IterT,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    if iter.is_null() {
        return -libc::EINVAL;
    }
    let attrs: BTreeMap<String, Bytes> =
        c_try!(io.run(|ctx| async move { ctx.getxattrs(&name).await }));
    let (p, it) = hand_out();
    it.fill(attrs);
    // SAFETY: checked non-NULL; writable.
    unsafe { iter.write(p) };
    0
}

/// `rados_getxattrs_next`: the next xattr's name (a C string), value and
/// length; at the end, NULLs and 0. 0.
///
/// # Safety
/// `iter` a live xattr iterator; the outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_getxattrs_next(
    iter: IterT,
    name: *mut *const c_char,
    val: *mut *const c_char,
    len: *mut usize,
) -> c_int {
    // SAFETY: a live iterator.
    let it = c_try!(unsafe { self::iter(iter) });
    let (k, v, _, vl) = it.next();
    // SAFETY: NULL or writable.
    unsafe {
        set(name, k.cast_const());
        set(val, v.cast_const());
        set(len, vl);
    }
    0
}

/// `rados_getxattrs_end`: frees the iterator.
///
/// # Safety
/// `iter` NULL or a live xattr iterator, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_getxattrs_end(iter: IterT) {
    // SAFETY: forwarded contract.
    unsafe { end(iter) }
}
