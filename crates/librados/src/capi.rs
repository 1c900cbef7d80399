//! The C functions, with librados.h's signatures (Ceph 16) and the
//! semantics of Ceph's src/librados/librados_c.cc: negative errnos,
//! buffers the caller owns filled up to their length (-ERANGE when too
//! small), buffers we allocate with malloc for `rados_buffer_free`.
//!
//! # Unsafe code
//! Each function takes raw pointers from C. A handle (`rados_t`,
//! `rados_ioctx_t`) is NULL or what `rados_create*` / `rados_ioctx_create*`
//! returned and not yet destroyed (librados's contract; a NULL handle is
//! -EINVAL here rather than a crash). A C string argument is NULL or
//! NUL-terminated; a `(buf, len)` pair is NULL or `len` bytes the caller
//! owns for the call. Those are the only assumptions the blocks below make;
//! each helper states which it relies on.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use msgr_rados::RadosConfig;

use crate::cluster::{Cluster, Io, Level};

/// `rados_t`.
pub type RadosT = *mut c_void;
/// `rados_ioctx_t`.
pub type IoctxT = *mut c_void;

/// librados.h's LIBRADOS_VER_MAJOR / MINOR / EXTRA (Ceph 16: 3.0.0).
pub const VERSION: (c_int, c_int, c_int) = (3, 0, 0);

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// The cluster behind `p`. Safety: `p` is NULL or a live `rados_t`.
pub(crate) unsafe fn cluster<'a>(p: RadosT) -> Result<&'a Cluster, c_int> {
    // SAFETY: a live rados_t is a Box<Cluster> leaked by rados_create*.
    unsafe { (p as *const Cluster).as_ref() }.ok_or(-libc::EINVAL)
}

/// The I/O context behind `p`. Safety: `p` is NULL or a live `rados_ioctx_t`.
pub(crate) unsafe fn io<'a>(p: IoctxT) -> Result<&'a Io, c_int> {
    // SAFETY: a live rados_ioctx_t is a Box<Io> leaked by rados_ioctx_create*.
    unsafe { (p as *const Io).as_ref() }.ok_or(-libc::EINVAL)
}

/// A C string's bytes, -EINVAL if NULL. Safety: `p` is NULL or
/// NUL-terminated, alive for the call.
pub(crate) unsafe fn bytes_of<'a>(p: *const c_char) -> Result<&'a [u8], c_int> {
    if p.is_null() {
        return Err(-libc::EINVAL);
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// A C string as UTF-8 (option names, pool names, xattr names): -EINVAL
/// if NULL or not UTF-8. Safety: as [`bytes_of`].
pub(crate) unsafe fn str_of<'a>(p: *const c_char) -> Result<&'a str, c_int> {
    // SAFETY: forwarded contract.
    std::str::from_utf8(unsafe { bytes_of(p) }?).map_err(|_| -libc::EINVAL)
}

/// A C string, lossily as UTF-8, "" if NULL (a namespace, a locator key:
/// NULL means the default, as librados takes it). Safety: as [`bytes_of`].
pub(crate) unsafe fn string_or_empty(p: *const c_char) -> String {
    // SAFETY: forwarded contract.
    match unsafe { bytes_of(p) } {
        Ok(b) => String::from_utf8_lossy(b).into_owned(),
        Err(_) => String::new(),
    }
}

/// The `len` bytes at `p` (empty if `len` is 0). Safety: `p` points to
/// `len` readable bytes when `len` > 0.
pub(crate) unsafe fn slice_of<'a>(p: *const c_char, len: usize) -> Result<&'a [u8], c_int> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(-libc::EINVAL);
    }
    // SAFETY: non-NULL, `len` readable bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// Copies `data` to `buf`, which has room for it. Safety: `buf` points to
/// at least `data.len()` writable bytes.
pub(crate) unsafe fn copy_to(buf: *mut c_char, data: &[u8]) {
    if !data.is_empty() {
        // SAFETY: room checked by the caller; the regions cannot overlap
        // (data is ours).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.cast::<u8>(), data.len()) };
    }
}

/// Copies `s` and a NUL to `buf` of `maxlen` bytes and returns its length,
/// or -ERANGE if it does not fit (librados's strcpy into a caller's
/// buffer). Safety: `buf` is NULL or has `maxlen` writable bytes.
pub(crate) unsafe fn put_cstr(buf: *mut c_char, maxlen: usize, s: &str) -> c_int {
    if s.len() >= maxlen {
        return -libc::ERANGE;
    }
    if buf.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: s.len() + 1 <= maxlen bytes are writable.
    unsafe {
        copy_to(buf, s.as_bytes());
        buf.add(s.len()).write(0);
    }
    c_int::try_from(s.len()).unwrap_or(c_int::MAX)
}

/// As [`put_cstr`], then NULs to the end of `buf`, as librados's
/// strncpy leaves it (Python's module reads a snapshot's name as the
/// whole buffer). Safety: as [`put_cstr`].
pub(crate) unsafe fn put_cstr_padded(buf: *mut c_char, maxlen: usize, s: &str) -> c_int {
    // SAFETY: forwarded contract.
    let r = unsafe { put_cstr(buf, maxlen, s) };
    if r >= 0 {
        let from = s.len().saturating_add(1);
        if let Some(n) = maxlen.checked_sub(from).filter(|&n| n > 0) {
            // SAFETY: bytes from..maxlen are within the caller's buffer.
            unsafe { std::ptr::write_bytes(buf.add(from), 0, n) };
        }
    }
    r
}

/// Writes `v` to `p` unless NULL. Safety: `p` is NULL or writable.
pub(crate) unsafe fn set<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { p.write(v) };
    }
}

/// A malloc'd copy of `data` (NULL if empty), for the caller to release
/// with `rados_buffer_free`, as librados's do_out_buffer.
pub(crate) fn malloc_copy(data: &[u8]) -> *mut c_char {
    if data.is_empty() {
        return std::ptr::null_mut();
    }
    // SAFETY: malloc of a non-zero size; the copy stays within it.
    unsafe {
        let p = libc::malloc(data.len()).cast::<c_char>();
        if !p.is_null() {
            copy_to(p, data);
        }
        p
    }
}

/// Boxes `c` into a `rados_t` at `pcluster`. Safety: `pcluster` writable.
pub(crate) unsafe fn hand_out(pcluster: *mut RadosT, config: RadosConfig) -> c_int {
    if pcluster.is_null() {
        return -libc::EINVAL;
    }
    let c = c_try!(Cluster::new(config));
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { pcluster.write(Box::into_raw(Box::new(c)).cast::<c_void>()) };
    0
}

/// Boxes `io` into a `rados_ioctx_t` at `pio`. Safety: `pio` writable.
unsafe fn hand_out_io(pio: *mut IoctxT, io: Io) -> c_int {
    if pio.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { pio.write(Box::into_raw(Box::new(io)).cast::<c_void>()) };
    0
}

/// `argc` C strings at `argv`. Safety: `argv` has `argc` C strings.
unsafe fn args_of<'a>(argc: c_int, argv: *const *const c_char) -> Result<Vec<&'a [u8]>, c_int> {
    let n = usize::try_from(argc).map_err(|_| -libc::EINVAL)?;
    if n > 0 && argv.is_null() {
        return Err(-libc::EINVAL);
    }
    (0..n)
        // SAFETY: i < argc entries, each a C string.
        .map(|i| unsafe { bytes_of(*argv.add(i)) })
        .collect()
}

/// Takes Ceph's options out of `args` as librados's parse_argv does
/// (options of Ceph's schema, their values checked: -EINVAL for one
/// librados refuses); the others, as their indices in `args`, in order.
fn parse_args(c: &Cluster, args: &[&[u8]], level: Level) -> Result<Vec<usize>, c_int> {
    let strings: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
    let parsed = msgr_config::schema::parse_argv(&refs).map_err(|_| -libc::EINVAL)?;
    for (k, v) in &parsed.set {
        c.set_option(level, k, &normalized(k, v)?);
    }
    Ok(parsed.rest)
}

/// `value` as option `key`'s type prints it (`5m` is `300`), which is what
/// the client reads: -ENOENT for an option Ceph does not have, -EINVAL for
/// a value librados would refuse.
fn normalized(key: &str, value: &str) -> Result<String, c_int> {
    let schema = msgr_config::schema::lookup(key).ok_or(-libc::ENOENT)?;
    schema.kind.normalize(value).map_err(|_| -libc::EINVAL)
}

/// `rados_version`: librados's version (3.0.0, Ceph 16's).
///
/// # Safety
/// Each pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_version(major: *mut c_int, minor: *mut c_int, extra: *mut c_int) {
    // SAFETY: each NULL or writable.
    unsafe {
        set(major, VERSION.0);
        set(minor, VERSION.1);
        set(extra, VERSION.2);
    }
}

/// `rados_create`: a handle for `client.ID` (`client.admin` if `id` is
/// NULL).
///
/// # Safety
/// `pcluster` writable; `id` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_create(pcluster: *mut RadosT, id: *const c_char) -> c_int {
    let config = if id.is_null() {
        RadosConfig::new()
    } else {
        // SAFETY: a C string.
        RadosConfig::with_id(&unsafe { string_or_empty(id) })
    };
    // SAFETY: writable.
    unsafe { hand_out(pcluster, config) }
}

/// `rados_create2`: a handle for entity `name` (`TYPE.ID`) of cluster
/// `clustername` (NULL: `ceph`); -EINVAL if `name` is NULL or not an
/// entity name. `flags` is unused, as in librados.
///
/// # Safety
/// `pcluster` writable; the strings NULL or C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_create2(
    pcluster: *mut RadosT,
    clustername: *const c_char,
    name: *const c_char,
    _flags: u64,
) -> c_int {
    // SAFETY: C strings or NULL.
    let name = c_try!(unsafe { str_of(name) });
    let mut config = c_try!(RadosConfig::with_name(name).map_err(|_| -libc::EINVAL));
    if !clustername.is_null() {
        // SAFETY: a C string.
        // "" too, as librados (Python's module passes "" by default):
        // `$cluster` then expands to nothing.
        let cluster = c_try!(unsafe { str_of(clustername) });
        config = c_try!(config
            .conf_parse_args(["--cluster", cluster])
            .map(|(c, _)| c)
            .map_err(|_| -libc::EINVAL));
    }
    // SAFETY: writable.
    unsafe { hand_out(pcluster, config) }
}

/// `rados_conf_read_file`: the first file of `path_list` (paths separated
/// by `,`, `;` or spaces) that exists, or with NULL the file `CEPH_CONF`
/// names or the first of Ceph's defaults (`/etc/ceph/$cluster.conf`,
/// `~/.ceph/$cluster.conf`, `$cluster.conf`); -ENOENT if there is none,
/// -EINVAL if it does not parse.
///
/// # Safety
/// `cluster` a live handle; `path_list` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_read_file(cluster: RadosT, path_list: *const c_char) -> c_int {
    // SAFETY: a live handle or NULL.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let candidates: Vec<String> = if path_list.is_null() {
        match std::env::var("CEPH_CONF").ok().filter(|s| !s.is_empty()) {
            Some(p) => vec![p],
            None => {
                let home = std::env::var("HOME").unwrap_or_default();
                vec![
                    "/etc/ceph/ceph.conf".to_string(),
                    format!("{home}/.ceph/ceph.conf"),
                    "ceph.conf".to_string(),
                ]
            }
        }
    } else {
        // SAFETY: a C string.
        let list = c_try!(unsafe { str_of(path_list) });
        list.split([',', ';', ' ', '\t'])
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let Some(path) = candidates
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
    else {
        // As librados: once a file has been read, a list naming none
        // that exists leaves it in place.
        return if c.has_conf_file() { 0 } else { -libc::ENOENT };
    };
    c_try!(c.configure(|config| config.conf_read_file(&path).map_err(|_| -libc::EINVAL)));
    0
}

/// `rados_conf_set`: sets `option` over what the file says; -ENOENT if
/// Ceph has no such option, -EINVAL if librados would not take the value
/// for its type (an integer, a boolean, a size, seconds...).
///
/// # Safety
/// `cluster` a live handle; the strings C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_set(
    cluster: RadosT,
    option: *const c_char,
    value: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, option, value) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(option)),
            c_try!(str_of(value)),
        )
    };
    let value = c_try!(normalized(option, value));
    c.set_option(Level::Override, option, &value);
    0
}

/// `rados_conf_get`: option `option`'s value into `buf` of `len` bytes;
/// -ENAMETOOLONG if it does not fit with its NUL (what fits is written,
/// as librados's snprintf), -ENOENT if Ceph has no such option. An option
/// nothing sets has librados's default.
///
/// # Safety
/// `cluster` a live handle; `option` a C string; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_get(
    cluster: RadosT,
    option: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, option) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(option))) };
    let value = c_try!(c.conf_get(option));
    if len == 0 || buf.is_null() {
        return -libc::ENAMETOOLONG;
    }
    let n = value.len().min(len.saturating_sub(1));
    // SAFETY: n + 1 <= len bytes.
    unsafe {
        copy_to(buf, value.as_bytes().get(..n).unwrap_or_default());
        buf.add(n).write(0);
    }
    if value.len() >= len {
        -libc::ENAMETOOLONG
    } else {
        0
    }
}

/// `rados_conf_parse_argv`: takes Ceph's options out of `argv` (after
/// `argv[0]`, the program's name, as librados skips it).
///
/// # Safety
/// `cluster` a live handle; `argv` has `argc` C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_parse_argv(
    cluster: RadosT,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, args) = unsafe { (c_try!(self::cluster(cluster)), c_try!(args_of(argc, argv))) };
    c_try!(parse_args(
        c,
        args.get(1..).unwrap_or_default(),
        Level::Cmdline
    ));
    0
}

/// `rados_conf_parse_argv_remainder`: as `rados_conf_parse_argv` over all
/// of `argv`; `remargv` (room for `argc` pointers) gets the arguments
/// that are not Ceph's, pointers into `argv`, then NULLs.
///
/// # Safety
/// `cluster` a live handle; `argv` has `argc` C strings; `remargv` room
/// for `argc` pointers.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_parse_argv_remainder(
    cluster: RadosT,
    argc: c_int,
    argv: *const *const c_char,
    remargv: *mut *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, args) = unsafe { (c_try!(self::cluster(cluster)), c_try!(args_of(argc, argv))) };
    let rest = c_try!(parse_args(c, &args, Level::Cmdline));
    if args.is_empty() {
        return 0;
    }
    if remargv.is_null() {
        return -libc::EINVAL;
    }
    for i in 0..args.len() {
        let p = match rest.get(i) {
            // SAFETY: each index is < argc.
            Some(&at) => unsafe { *argv.add(at) },
            None => std::ptr::null(),
        };
        // SAFETY: i < argc slots.
        unsafe { remargv.add(i).write(p) };
    }
    0
}

/// `rados_conf_parse_env`: Ceph's options from environment variable `env`
/// (NULL: `CEPH_ARGS`); what is not an option is ignored, as librados.
///
/// # Safety
/// `cluster` a live handle; `env` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_conf_parse_env(cluster: RadosT, env: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let var = if env.is_null() {
        "CEPH_ARGS".to_string()
    } else {
        // SAFETY: a C string.
        unsafe { string_or_empty(env) }
    };
    let Ok(text) = std::env::var(&var) else {
        return 0;
    };
    let args: Vec<&[u8]> = text.split_whitespace().map(str::as_bytes).collect();
    c_try!(parse_args(c, &args, Level::Env));
    0
}

/// `rados_connect`: connects to the monitors and takes the OSD map;
/// -EISCONN if connected, -ETIMEDOUT after `client_mount_timeout`,
/// -EACCES if the monitors refuse the credentials.
///
/// # Safety
/// `cluster` a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_connect(cluster: RadosT) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    c_try!(c.connect());
    // A service daemon registered before connecting (capi_admin.rs).
    c.start_service();
    0
}

/// `rados_shutdown`: closes the sessions, stops the handle's threads and
/// frees it.
///
/// # Safety
/// `cluster` a live handle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_shutdown(cluster: RadosT) {
    if cluster.is_null() {
        return;
    }
    // SAFETY: a Box<Cluster> from hand_out, given back once.
    let c = unsafe { Box::from_raw(cluster.cast::<Cluster>()) };
    c.shutdown();
}

/// `rados_get_instance_id`: the global id of the monitor session (0
/// before connecting).
///
/// # Safety
/// `cluster` a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_get_instance_id(cluster: RadosT) -> u64 {
    // SAFETY: a live handle.
    match unsafe { self::cluster(cluster) } {
        Ok(c) => c.instance_id(),
        Err(_) => 0,
    }
}

/// `rados_cluster_fsid`: the cluster's fsid into `buf`; its length, or
/// -ERANGE if `len` has no room for it and its NUL.
///
/// # Safety
/// `cluster` a live handle; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_cluster_fsid(
    cluster: RadosT,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    unsafe {
        let c = c_try!(self::cluster(cluster));
        put_cstr(buf, len, &c.fsid())
    }
}

/// `rados_wait_for_latest_osdmap`: waits for the monitors' newest OSD map.
///
/// # Safety
/// `cluster` a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_wait_for_latest_osdmap(cluster: RadosT) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let rados = c_try!(c.rados());
    let r = c_try!(c.block(async move { rados.wait_for_latest_osdmap().await }));
    c_try!(r.map_err(|e| crate::errno::errno_of(&e)));
    0
}

/// `rados_pool_lookup`: pool `name`'s id, -ENOENT if none.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_lookup(cluster: RadosT, name: *const c_char) -> i64 {
    // SAFETY: per the contract above.
    let (c, name) = match unsafe { (self::cluster(cluster), str_of(name)) } {
        (Ok(c), Ok(n)) => (c, n),
        (Err(e), _) | (_, Err(e)) => return i64::from(e),
    };
    match c.rados() {
        Ok(r) => r.pool_lookup(name).unwrap_or(i64::from(-libc::ENOENT)),
        Err(e) => i64::from(e),
    }
}

/// `rados_pool_reverse_lookup`: pool `id`'s name into `buf`; its length,
/// -ENOENT if no such pool, -ERANGE if `maxlen` is too small.
///
/// # Safety
/// `cluster` a live handle; `buf` has `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_reverse_lookup(
    cluster: RadosT,
    id: i64,
    buf: *mut c_char,
    maxlen: usize,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let rados = c_try!(c.rados());
    let name = c_try!(rados.pool_reverse_lookup(id).ok_or(-libc::ENOENT));
    // SAFETY: maxlen bytes.
    unsafe { put_cstr_padded(buf, maxlen, &name) }
}

/// `rados_pool_list`: the pools' names, each NUL-terminated, then a NUL,
/// into `buf` of `len` bytes (the buffer is zeroed; names that do not fit
/// are left out); returns the length the whole list needs.
///
/// # Safety
/// `cluster` a live handle; `buf` NULL or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_list(cluster: RadosT, buf: *mut c_char, len: usize) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let rados = c_try!(c.rados());
    if len > 0 && buf.is_null() {
        return -libc::EINVAL;
    }
    if !buf.is_null() {
        // SAFETY: len bytes.
        unsafe { std::ptr::write_bytes(buf, 0, len) };
    }
    let mut left = len;
    let mut at = 0usize;
    let mut needed = 0usize;
    let mut fitting = true;
    for (_, name) in rados.pool_list() {
        let rl = name.len().saturating_add(1);
        if fitting && left >= rl {
            if !buf.is_null() {
                // SAFETY: at + rl <= len (left counts what remains).
                unsafe { copy_to(buf.add(at), name.as_bytes()) };
            }
            at = at.saturating_add(rl);
            left = left.saturating_sub(rl);
        } else {
            // librados stops filling at the first name that does not fit.
            fitting = false;
        }
        needed = needed.saturating_add(rl);
    }
    c_int::try_from(needed.saturating_add(1)).unwrap_or(c_int::MAX)
}

/// `rados_pool_create`: creates a replicated pool with the default rule;
/// -EEXIST if it exists.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_create(cluster: RadosT, name: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (c, name) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(name))) };
    let rados = c_try!(c.rados());
    let name = name.to_string();
    let r = c_try!(c.block(async move { rados.pool_create(&name, None).await }));
    c_try!(r.map_err(|e| crate::errno::errno_of(&e)));
    0
}

/// `rados_pool_delete`: deletes a pool and its objects; -ENOENT if none.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_delete(cluster: RadosT, name: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (c, name) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(name))) };
    let rados = c_try!(c.rados());
    let name = name.to_string();
    let r = c_try!(c.block(async move { rados.pool_delete(&name).await }));
    c_try!(r.map_err(|e| crate::errno::errno_of(&e)));
    0
}

/// `rados_ioctx_create`: an I/O context on pool `name`; -ENOENT if none,
/// -ENOTCONN before connecting.
///
/// # Safety
/// `cluster` a live handle; `name` a C string; `pio` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_create(
    cluster: RadosT,
    name: *const c_char,
    pio: *mut IoctxT,
) -> c_int {
    // SAFETY: per the contract above.
    unsafe {
        let (c, name) = (c_try!(self::cluster(cluster)), c_try!(str_of(name)));
        hand_out_io(pio, c_try!(c.ioctx(name)))
    }
}

/// `rados_ioctx_create2`: an I/O context on pool `pool_id`.
///
/// # Safety
/// `cluster` a live handle; `pio` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_create2(
    cluster: RadosT,
    pool_id: i64,
    pio: *mut IoctxT,
) -> c_int {
    // SAFETY: per the contract above.
    unsafe {
        let c = c_try!(self::cluster(cluster));
        hand_out_io(pio, c_try!(c.ioctx_by_id(pool_id)))
    }
}

/// `rados_ioctx_destroy`: frees an I/O context.
///
/// # Safety
/// `io` a live context, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_destroy(io: IoctxT) {
    if !io.is_null() {
        // SAFETY: a Box<Io> from hand_out_io, given back once.
        drop(unsafe { Box::from_raw(io.cast::<Io>()) });
    }
}

/// `rados_ioctx_get_id`: the context's pool id.
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_get_id(io: IoctxT) -> i64 {
    // SAFETY: a live context.
    match unsafe { self::io(io) } {
        Ok(io) => io.pool(),
        Err(e) => i64::from(e),
    }
}

/// `rados_ioctx_get_pool_name`: the pool's name into `buf`; its length,
/// or -ERANGE.
///
/// # Safety
/// `io` a live context; `buf` has `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_get_pool_name(
    io: IoctxT,
    buf: *mut c_char,
    maxlen: c_uint,
) -> c_int {
    // SAFETY: per the contract above.
    unsafe {
        let io = c_try!(self::io(io));
        let name = c_try!(io.pool_name());
        put_cstr(buf, usize::try_from(maxlen).unwrap_or(usize::MAX), &name)
    }
}

/// `rados_ioctx_set_namespace`: objects in namespace `nspace` from now on
/// (NULL or "": the default namespace).
///
/// # Safety
/// `io` a live context; `nspace` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_set_namespace(io: IoctxT, nspace: *const c_char) {
    // SAFETY: per the contract above.
    if let Ok(io) = unsafe { self::io(io) } {
        // SAFETY: NULL or a C string.
        let ns = unsafe { string_or_empty(nspace) };
        io.update(|ctx| ctx.set_namespace(&ns));
    }
}

/// `rados_ioctx_locator_set_key`: objects placed by locator `key` from now
/// on (NULL or "": by their names).
///
/// # Safety
/// `io` a live context; `key` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_locator_set_key(io: IoctxT, key: *const c_char) {
    // SAFETY: per the contract above.
    if let Ok(io) = unsafe { self::io(io) } {
        // SAFETY: NULL or a C string.
        let key = unsafe { string_or_empty(key) };
        io.update(|ctx| ctx.set_locator_key(&key));
    }
}

/// librados refuses writes longer than UINT_MAX/2 bytes.
const MAX_WRITE: usize = (u32::MAX / 2) as usize;

/// The context, the object's name and the data of a write.
///
/// Safety: as the C functions' contracts.
pub(crate) unsafe fn write_args<'a>(
    io: IoctxT,
    oid: *const c_char,
    buf: *const c_char,
    len: usize,
) -> Result<(&'a Io, Vec<u8>, bytes::Bytes), c_int> {
    if len > MAX_WRITE {
        return Err(-libc::E2BIG);
    }
    // SAFETY: forwarded contract.
    unsafe {
        let io = self::io(io)?;
        let name = bytes_of(oid)?.to_vec();
        let data = bytes::Bytes::copy_from_slice(slice_of(buf, len)?);
        Ok((io, name, data))
    }
}

/// `rados_write`: writes `len` bytes at `off`; -E2BIG past UINT_MAX/2.
///
/// # Safety
/// `io` a live context; `oid` a C string; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write(
    io: IoctxT,
    oid: *const c_char,
    buf: *const c_char,
    len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    c_try!(io.run(|ctx| async move { ctx.write(&name, off, data).await }));
    0
}

/// `rados_write_full`: replaces the object's data with `len` bytes.
///
/// # Safety
/// `io` a live context; `oid` a C string; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_write_full(
    io: IoctxT,
    oid: *const c_char,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    c_try!(io.run(|ctx| async move { ctx.write_full(&name, data).await }));
    0
}

/// `rados_append`: appends `len` bytes.
///
/// # Safety
/// `io` a live context; `oid` a C string; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_append(
    io: IoctxT,
    oid: *const c_char,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name, data) = c_try!(unsafe { write_args(io, oid, buf, len) });
    c_try!(io.run(|ctx| async move { ctx.append(&name, data).await }));
    0
}

/// `rados_read`: up to `len` bytes from `off` into `buf`; the number read.
///
/// # Safety
/// `io` a live context; `oid` a C string; `buf` has `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_read(
    io: IoctxT,
    oid: *const c_char,
    buf: *mut c_char,
    len: usize,
    off: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    let want = c_try!(u64::try_from(len).map_err(|_| -libc::EINVAL));
    let data = c_try!(io.run(|ctx| async move { ctx.read(&name, off, want).await }));
    if data.len() > len {
        return -libc::ERANGE;
    }
    if !data.is_empty() && buf.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: data.len() <= len writable bytes.
    unsafe { copy_to(buf, &data) };
    c_int::try_from(data.len()).unwrap_or(-libc::ERANGE)
}

/// `rados_remove`: deletes the object; -ENOENT if it does not exist.
///
/// # Safety
/// `io` a live context; `oid` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_remove(io: IoctxT, oid: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    c_try!(io.run(|ctx| async move { ctx.remove(&name).await }));
    0
}

/// `rados_trunc`: resizes the object to `size` bytes.
///
/// # Safety
/// `io` a live context; `oid` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_trunc(io: IoctxT, oid: *const c_char, size: u64) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    c_try!(io.run(|ctx| async move { ctx.truncate(&name, size).await }));
    0
}

/// `rados_stat`: the object's size and modification time (seconds); each
/// output may be NULL.
///
/// # Safety
/// `io` a live context; `oid` a C string; outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_stat(
    io: IoctxT,
    oid: *const c_char,
    psize: *mut u64,
    pmtime: *mut libc::time_t,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(oid)).to_vec()) };
    let st = c_try!(io.run(|ctx| async move { ctx.stat(&name).await }));
    // SAFETY: NULL or writable.
    unsafe {
        set(psize, st.size);
        set(pmtime, libc::time_t::from(st.mtime.sec));
    }
    0
}

/// `rados_getxattr`: attribute `name` into `buf`; its length, -ERANGE if
/// longer than `len`, -ENODATA if the object has no such attribute.
///
/// # Safety
/// `io` a live context; `oid`, `name` C strings; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_getxattr(
    io: IoctxT,
    oid: *const c_char,
    name: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, key) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(oid)).to_vec(),
            c_try!(str_of(name)).to_string(),
        )
    };
    let value = c_try!(io.run(|ctx| async move { ctx.getxattr(&obj, &key).await }));
    if value.len() > len {
        return -libc::ERANGE;
    }
    if !value.is_empty() && buf.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: value.len() <= len bytes.
    unsafe { copy_to(buf, &value) };
    c_int::try_from(value.len()).unwrap_or(-libc::ERANGE)
}

/// `rados_setxattr`: sets attribute `name` to `len` bytes.
///
/// # Safety
/// `io` a live context; `oid`, `name` C strings; `buf` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_setxattr(
    io: IoctxT,
    oid: *const c_char,
    name: *const c_char,
    buf: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, key, value) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(oid)).to_vec(),
            c_try!(str_of(name)).to_string(),
            c_try!(slice_of(buf, len)).to_vec(),
        )
    };
    c_try!(io.run(|ctx| async move { ctx.setxattr(&obj, &key, &value).await }));
    0
}

/// `rados_rmxattr`: removes attribute `name`.
///
/// # Safety
/// `io` a live context; `oid`, `name` C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_rmxattr(
    io: IoctxT,
    oid: *const c_char,
    name: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, obj, key) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(oid)).to_vec(),
            c_try!(str_of(name)).to_string(),
        )
    };
    c_try!(io.run(|ctx| async move { ctx.rmxattr(&obj, &key).await }));
    0
}

/// `rados_buffer_free`: frees a buffer this library allocated.
///
/// # Safety
/// `buf` NULL or a buffer from this library, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn rados_buffer_free(buf: *mut c_char) {
    if !buf.is_null() {
        // SAFETY: malloc'd by malloc_copy, freed once.
        unsafe { libc::free(buf.cast::<c_void>()) };
    }
}
