//! The administrative C functions (librados.h of Ceph 16) with the
//! semantics of src/librados/librados_c.cc and RadosClient.cc: commands to
//! a named monitor, an OSD, a PG's primary and the mgr; pinging a monitor;
//! following the cluster log; pool creation variants, tiers, alignment,
//! `FULL_TRY`; blocklisting; the client's addresses; inconsistent PGs;
//! pool applications and their metadata; service registration.
//!
//! A command's output and status are malloc'd into `*outbuf` / `*outs`
//! (NULL when empty; freed with `rados_buffer_free`), their lengths into
//! `*outbuflen` / `*outslen`, as `rados_mon_command`; each pointer may be
//! NULL.
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; C strings are NUL-terminated;
//! a `(buf, len)` pair has `len` bytes; an output pointer is NULL or
//! writable; a callback is NULL or a function of librados.h's type.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_messages::{MCommand, MCommandReply, TypedMessage};
use msgr_rados::request::flag;

use crate::admin::{addr_string, dict_to_map, pgids_of, sys_info, LogLine, Service};
use crate::aio::CPtr;
use crate::capi::{
    bytes_of, cluster, copy_to, hand_out, io, malloc_copy, set, slice_of, str_of, IoctxT, RadosT,
};
use crate::cluster::{Cluster, CommandOutput};
use crate::errno::{errno_of, mon_errno};

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// librados.h's `rados_config_t`.
pub type ConfigT = *mut c_void;

/// `rados_log_callback_t`.
pub type LogCallback = unsafe extern "C" fn(
    arg: *mut c_void,
    line: *const c_char,
    who: *const c_char,
    sec: u64,
    nsec: u64,
    seq: u64,
    level: *const c_char,
    msg: *const c_char,
);

/// `rados_log_callback2_t`.
pub type LogCallback2 = unsafe extern "C" fn(
    arg: *mut c_void,
    line: *const c_char,
    channel: *const c_char,
    who: *const c_char,
    name: *const c_char,
    sec: u64,
    nsec: u64,
    seq: u64,
    level: *const c_char,
    msg: *const c_char,
);

/// `CEPH_AUTH_UID_DEFAULT`: the only auid librados still takes.
const AUTH_UID_DEFAULT: u64 = u64::MAX;

/// The `cmdlen` parts at `cmd`, joined (a monitor, OSD or mgr joins them
/// so: `cmdmap_from_json`), and the input. Safety: `cmd` has `cmdlen` C
/// strings; `inbuf` has `inbuflen` bytes.
unsafe fn command_args(
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
) -> Result<(Vec<String>, Bytes), c_int> {
    if cmdlen > 0 && cmd.is_null() {
        return Err(-libc::EINVAL);
    }
    let mut parts = Vec::with_capacity(cmdlen.min(64));
    for i in 0..cmdlen {
        // SAFETY: i < cmdlen C strings.
        let part = unsafe { bytes_of(*cmd.add(i)) }?;
        parts.push(String::from_utf8_lossy(part).into_owned());
    }
    // SAFETY: inbuflen bytes.
    let input = Bytes::copy_from_slice(unsafe { slice_of(inbuf, inbuflen) }?);
    Ok((parts, input))
}

/// Hands a command's output and status to the caller (librados's
/// `do_out_buffer`) and returns its result. Safety: outputs NULL or
/// writable.
unsafe fn out(
    o: CommandOutput,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    let status = o.status.into_bytes();
    // SAFETY: NULL or writable.
    unsafe {
        set(outbuf, malloc_copy(&o.out));
        set(outbuflen, o.out.len());
        set(outs, malloc_copy(&status));
        set(outslen, status.len());
    }
    o.r
}

/// A failure before any reply: an errno, and the status librados's
/// objecter gives it (`osd dne`).
fn failed(r: i32, status: &str) -> CommandOutput {
    CommandOutput {
        r,
        out: Vec::new(),
        status: status.to_string(),
    }
}

fn reply(r: msgr_monc::CommandReply) -> CommandOutput {
    CommandOutput {
        r: r.r,
        out: r.output.to_vec(),
        status: r.rs,
    }
}

/// The monitor `name` names in the session's monmap: a rank (a decimal
/// number, as librados's strtol takes it) or a name; with its rank.
fn mon_target(c: &Cluster, name: &str) -> Result<(usize, String), CommandOutput> {
    let rados = c.rados().map_err(|e| failed(e, ""))?;
    let mons = rados.mon().monmap().addrs_by_rank();
    let rank = name
        .parse::<i64>()
        .ok()
        .filter(|r| *r >= 0 && !name.starts_with('+'));
    match rank {
        Some(r) => {
            let r = usize::try_from(r).unwrap_or(usize::MAX);
            match mons.get(r) {
                Some((n, _)) => Ok((r, n.clone())),
                None => Err(failed(-libc::ENOENT, "mon rank dne")),
            }
        }
        None => mons
            .iter()
            .position(|(n, _)| n == name)
            .map(|r| (r, name.to_string()))
            .ok_or_else(|| failed(-libc::ENOENT, "mon dne")),
    }
}

/// A monitor session of its own with monitor `rank` of the map, as
/// librados's MonClient opens one to the monitor it pings or sends a
/// command to: the handle's identity (name, keyring), that monitor only.
/// Runs `f` on it, then closes it.
fn with_mon<F, Fut, T>(c: &Cluster, rank: usize, f: F) -> Result<T, i32>
where
    F: FnOnce(Arc<msgr_monc::MonClient>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, i32>> + Send + 'static,
    T: Send + 'static,
{
    let rados = c.rados()?;
    let addrs = rados
        .mon()
        .monmap()
        .addrs_by_rank()
        .into_iter()
        .nth(rank)
        .map(|(_, a)| a)
        .ok_or(-libc::ENOENT)?;
    let id = c.config().identity().map_err(|e| errno_of(&e))?;
    let mut cfg = id.mon_client_config();
    cfg.mons = vec![addrs];
    c.block(async move {
        let mon = Arc::new(
            msgr_monc::MonClient::connect(cfg)
                .await
                .map_err(|e| mon_errno(&e))?,
        );
        let r = f(Arc::clone(&mon)).await;
        if let Ok(mon) = Arc::try_unwrap(mon) {
            mon.shutdown().await;
        }
        r
    })?
}

/// A tell to monitor `rank`: MCommand with the cluster's fsid on a
/// session of its own, as MonClient sends a command to a given monitor
/// (since Octopus), which the monitor runs as a command of its admin
/// socket (`version`, `mon_status`, ...).
fn mon_tell(c: &Cluster, rank: usize, parts: Vec<String>, input: Bytes) -> CommandOutput {
    let fsid = match c.rados() {
        Ok(r) => r.mon().monmap().fsid,
        Err(e) => return failed(e, ""),
    };
    let timeout = c.mon_timeout();
    let r = with_mon(c, rank, move |mon| async move {
        let conn = mon.session().ok_or(-libc::ENOTCONN)?;
        let m = MCommand {
            tid: 0,
            fsid,
            cmd: parts,
            input,
        };
        let reply = conn
            .call(m.to_message(conn.features()), timeout)
            .await
            .map_err(|e| match e {
                msgr_messenger::CallError::Timeout { .. } => -libc::ETIMEDOUT,
                _ => -libc::EIO,
            })?;
        MCommandReply::from_message(&reply).map_err(|_| -libc::EIO)
    });
    match r {
        Ok(r) => CommandOutput {
            r: r.r,
            out: r.output.to_vec(),
            status: r.rs,
        },
        Err(e) => failed(e, ""),
    }
}

/// `rados_mon_command`: sends `cmdlen` command parts and `inbuf` to the
/// monitors; the output and status line are malloc'd into `*outbuf` and
/// `*outs` (NULL when empty; free them with `rados_buffer_free`), their
/// lengths into `*outbuflen` and `*outslen`. Returns the monitor's result.
///
/// # Safety
/// `cluster` a live handle; `cmd` has `cmdlen` C strings; `inbuf` has
/// `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_mon_command(
    cluster: RadosT,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let o = c
        .mon_command(parts, input.to_vec())
        .unwrap_or_else(|e| failed(e, ""));
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// `rados_mon_command_target`: a command to the monitor `name` names (a
/// rank, or a name), which runs it as a tell (its admin socket's
/// commands: `version`, `mon_status`; others are -EINVAL): -ENOENT ("mon
/// dne", "mon rank dne") if the monmap has none. Sent, as librados, on a
/// session of its own with that monitor.
///
/// # Safety
/// `cluster` a live handle; `name` a C string; `cmd` has `cmdlen` C
/// strings; `inbuf` has `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_mon_command_target(
    cluster: RadosT,
    name: *const c_char,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, name, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(name)),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let o = match mon_target(c, name) {
        Err(o) => o,
        Ok((rank, _)) => mon_tell(c, rank, parts, input),
    };
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// `rados_osd_command`: a command to `osd.{osdid}` (MCommand, as `ceph
/// tell osd.N`): -EINVAL for a negative id; -ENOENT ("osd dne") if the map
/// has no such OSD, -ENXIO ("osd down") if it is down, as librados's
/// objecter; else the OSD's result.
///
/// # Safety
/// `cluster` a live handle; `cmd` has `cmdlen` C strings; `inbuf` has
/// `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_osd_command(
    cluster: RadosT,
    osdid: c_int,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let rados = c_try!(c.rados());
    let o = if osdid < 0 {
        failed(-libc::EINVAL, "")
    } else {
        let map = rados.osdmap();
        if !map.exists(osdid) {
            failed(-libc::ENOENT, "osd dne")
        } else if !map.is_up(osdid) {
            failed(-libc::ENXIO, "osd down")
        } else {
            let cmd = parts.concat();
            match c.block(async move { rados.osd_command(osdid, &cmd, input).await }) {
                Ok(Ok(r)) => reply(r),
                Ok(Err(e)) => failed(errno_of(&e), ""),
                Err(e) => failed(e, ""),
            }
        }
    };
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// `rados_pg_command`: a command to the primary of PG `pgstr`
/// (`POOL.SEED`): -EINVAL if it does not parse (the outputs untouched, as
/// librados), -ENOENT ("pool dne") if the pool does not exist.
///
/// # Safety
/// `cluster` a live handle; `pgstr` a C string; `cmd` has `cmdlen` C
/// strings; `inbuf` has `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_pg_command(
    cluster: RadosT,
    pgstr: *const c_char,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, pgstr, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(pgstr)),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let Some((pool, seed)) = pgstr.split_once('.') else {
        return -libc::EINVAL;
    };
    let (Ok(pool), Ok(_)) = (pool.parse::<u64>(), u32::from_str_radix(seed, 16)) else {
        return -libc::EINVAL;
    };
    let rados = c_try!(c.rados());
    let exists = i64::try_from(pool)
        .ok()
        .is_some_and(|p| rados.osdmap().pools.contains_key(&p));
    let o = if !exists {
        failed(-libc::ENOENT, "pool dne")
    } else {
        let (pg, cmd) = (pgstr.to_string(), parts.concat());
        match c.block(async move { rados.pg_command(&pg, &cmd, input).await }) {
            Ok(Ok(r)) => reply(r),
            Ok(Err(e)) => failed(errno_of(&e), ""),
            Err(e) => failed(e, ""),
        }
    };
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// A mgr command, to the active mgr or (`target`) a named one, waiting
/// up to `rados_mon_op_timeout` (librados waits as long as it takes
/// without it; here an hour) for an active mgr and its reply.
fn mgr_command(
    c: &Cluster,
    target: Option<String>,
    parts: Vec<String>,
    input: Bytes,
) -> CommandOutput {
    let rados = match c.rados() {
        Ok(r) => r,
        Err(e) => return failed(e, ""),
    };
    let timeout = c.mon_timeout();
    let cmd = parts.concat();
    let r = c.block(async move {
        rados
            .mgr_command_within(target.as_deref(), &cmd, input, timeout)
            .await
    });
    match r {
        Ok(Ok(r)) => reply(r),
        Ok(Err(e)) => failed(errno_of(&e), ""),
        Err(e) => failed(e, ""),
    }
}

/// `rados_mgr_command`: a command to the active mgr (MMgrCommand): its
/// result; -ETIMEDOUT when no mgr answers within `rados_mon_op_timeout`.
///
/// # Safety
/// `cluster` a live handle; `cmd` has `cmdlen` C strings; `inbuf` has
/// `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_mgr_command(
    cluster: RadosT,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let o = mgr_command(c, None, parts, input);
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// `rados_mgr_command_target`: a command to mgr `name` (a tell: MCommand
/// with the cluster's fsid). -ENXIO at once if `name` is not the active
/// mgr (librados waits for a map naming it active, then -ENXIO, or its
/// timeout).
///
/// # Safety
/// `cluster` a live handle; `name` a C string; `cmd` has `cmdlen` C
/// strings; `inbuf` has `inbuflen` bytes; the outputs NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_mgr_command_target(
    cluster: RadosT,
    name: *const c_char,
    cmd: *const *const c_char,
    cmdlen: usize,
    inbuf: *const c_char,
    inbuflen: usize,
    outbuf: *mut *mut c_char,
    outbuflen: *mut usize,
    outs: *mut *mut c_char,
    outslen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, name, (parts, input)) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(name)).to_string(),
            c_try!(command_args(cmd, cmdlen, inbuf, inbuflen)),
        )
    };
    let o = mgr_command(c, Some(name), parts, input);
    // SAFETY: NULL or writable.
    unsafe { out(o, outbuf, outbuflen, outs, outslen) }
}

/// `rados_ping_monitor`: pings monitor `mon_id` (its name, or
/// `noname-ID` as librados looks it up) and returns its reply (its health
/// and status as JSON), malloc'd into `*outstr`. -EINVAL for a NULL or
/// empty id, -ENOENT if the monmap has no such monitor, -ETIMEDOUT
/// without a reply in `mon_client_ping_timeout` (30 s). The ping goes, as
/// librados's, on a session of its own with that monitor.
///
/// # Safety
/// `cluster` a live handle; `mon_id` NULL or a C string; the outputs NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ping_monitor(
    cluster: RadosT,
    mon_id: *const c_char,
    outstr: *mut *mut c_char,
    outstrlen: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, id) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(mon_id))) };
    let rados = c_try!(c.rados());
    let mons = rados.mon().monmap().addrs_by_rank();
    let noname = format!("noname-{id}");
    let id = if mons.iter().any(|(n, _)| *n == noname) {
        noname
    } else {
        id.to_string()
    };
    if id.is_empty() {
        return -libc::EINVAL;
    }
    let Some(rank) = mons.iter().position(|(n, _)| *n == id) else {
        return -libc::ENOENT;
    };
    drop(rados);
    let s = c_try!(with_mon(c, rank, |mon| async move {
        mon.ping(Duration::from_secs(30))
            .await
            .map_err(|e| mon_errno(&e))
    }));
    // SAFETY: NULL or writable.
    unsafe {
        set(outstr, malloc_copy(s.as_bytes()));
        set(outstrlen, s.len());
    }
    0
}

/// Which callback a log watch calls.
#[derive(Clone, Copy)]
enum LogCb {
    V1(LogCallback),
    V2(LogCallback2),
}

/// Calls `cb` with `l`'s fields as C strings (on the finisher thread).
fn deliver(cb: LogCb, arg: CPtr, l: &LogLine) {
    let cs = |s: &str| CString::new(s.replace('\0', "")).unwrap_or_default();
    let (line, channel, who, name, level, msg) = (
        cs(&l.line),
        cs(&l.channel),
        cs(&l.who),
        cs(&l.name),
        cs(&l.level),
        cs(&l.msg),
    );
    // SAFETY: a function of librados.h's callback type, given C strings
    // alive for the call and the caller's argument.
    unsafe {
        match cb {
            LogCb::V1(f) => f(
                arg.get(),
                line.as_ptr(),
                who.as_ptr(),
                l.sec,
                l.nsec,
                l.seq,
                level.as_ptr(),
                msg.as_ptr(),
            ),
            LogCb::V2(f) => f(
                arg.get(),
                line.as_ptr(),
                channel.as_ptr(),
                who.as_ptr(),
                name.as_ptr(),
                l.sec,
                l.nsec,
                l.seq,
                level.as_ptr(),
                msg.as_ptr(),
            ),
        }
    }
}

/// librados's `monitor_log`: a NULL callback stops the watch (the level
/// is not looked at); else -EINVAL for a level it does not know, and the
/// watch (re)starts at `level`.
fn monitor_log(c: &Cluster, level: *const c_char, cb: Option<LogCb>, arg: *mut c_void) -> c_int {
    let rados = c_try!(c.rados());
    let rt = c.runtime();
    let Some(cb) = cb else {
        c.admin.set_log_task(&rt, None);
        return 0;
    };
    // SAFETY: NULL or a C string (the caller's contract).
    let level = c_try!(unsafe { str_of(level) });
    if msgr_monc::core::log::log_subscription(level).is_none() {
        return -libc::EINVAL;
    }
    c_try!(rados.monitor_log(level).map_err(|e| errno_of(&e)));
    let weak = Arc::downgrade(&rados);
    drop(rados);
    let finisher = c.finisher();
    let arg = CPtr(arg);
    let task = rt.spawn(async move {
        loop {
            // Holds the client only while waiting a little, so that
            // shutdown finds it free once this task is stopped.
            let Some(rados) = weak.upgrade() else {
                return;
            };
            let got = rados.log_entries(Duration::from_millis(500)).await;
            drop(rados);
            let Ok((entries, _dropped)) = got else {
                return;
            };
            for e in entries {
                let l = LogLine::of(&e);
                if finisher
                    .submit(Box::new(move || deliver(cb, arg, &l)))
                    .is_err()
                {
                    return;
                }
            }
        }
    });
    c.admin.set_log_task(&rt, Some(task));
    0
}

/// `rados_monitor_log`: calls `cb` for each cluster log entry from
/// `level` up (`debug`, `info`, `warn`/`warning`, `err`/`error`, `sec`;
/// -EINVAL for another) on the handle's finisher thread; a NULL `cb` stops
/// it. -ENOTCONN before connecting.
///
/// # Safety
/// `cluster` a live handle; `level` NULL or a C string; `cb` NULL or a
/// function of librados.h's type, callable with `arg` from another thread
/// until stopped or the handle shut down.
#[no_mangle]
pub unsafe extern "C" fn rados_monitor_log(
    cluster: RadosT,
    level: *const c_char,
    cb: Option<LogCallback>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    monitor_log(c, level, cb.map(LogCb::V1), arg)
}

/// `rados_monitor_log2`: as `rados_monitor_log`, with the channel and the
/// sender's name.
///
/// # Safety
/// As `rados_monitor_log`.
#[no_mangle]
pub unsafe extern "C" fn rados_monitor_log2(
    cluster: RadosT,
    level: *const c_char,
    cb: Option<LogCallback2>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    monitor_log(c, level, cb.map(LogCb::V2), arg)
}

/// Creates pool `name` with CRUSH rule `rule` (None: the default).
fn pool_create(c: &Cluster, name: &str, rule: Option<u8>) -> c_int {
    let rados = c_try!(c.rados());
    let name = name.to_string();
    let r = c_try!(c.block(async move { rados.pool_create(&name, rule).await }));
    c_try!(r.map_err(|e| errno_of(&e)));
    0
}

/// `rados_pool_create_with_auid`: -EINVAL unless `auid` is
/// `CEPH_AUTH_UID_DEFAULT` (librados no longer takes auids), then as
/// `rados_pool_create`.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_create_with_auid(
    cluster: RadosT,
    name: *const c_char,
    auid: u64,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, name) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(name))) };
    if auid != AUTH_UID_DEFAULT {
        return -libc::EINVAL;
    }
    pool_create(c, name, None)
}

/// `rados_pool_create_with_crush_rule`: a replicated pool with rule
/// `crush_rule_num`.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_create_with_crush_rule(
    cluster: RadosT,
    name: *const c_char,
    crush_rule_num: u8,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, name) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(name))) };
    pool_create(c, name, Some(crush_rule_num))
}

/// `rados_pool_create_with_all`: -EINVAL unless `auid` is
/// `CEPH_AUTH_UID_DEFAULT`, then as `rados_pool_create_with_crush_rule`.
///
/// # Safety
/// `cluster` a live handle; `name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_create_with_all(
    cluster: RadosT,
    name: *const c_char,
    auid: u64,
    crush_rule_num: u8,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, name) = unsafe { (c_try!(self::cluster(cluster)), c_try!(str_of(name))) };
    if auid != AUTH_UID_DEFAULT {
        return -libc::EINVAL;
    }
    pool_create(c, name, Some(crush_rule_num))
}

/// `rados_pool_get_base_tier`: the pool `pool` is a cache tier of, or
/// `pool` itself; -ENOENT if there is no such pool.
///
/// # Safety
/// `cluster` a live handle; `base_tier` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_pool_get_base_tier(
    cluster: RadosT,
    pool: i64,
    base_tier: *mut i64,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let rados = c_try!(c.rados());
    let tier = c_try!(rados.pool_get_base_tier(pool).map_err(|e| errno_of(&e)));
    // SAFETY: NULL or writable.
    unsafe { set(base_tier, tier) };
    0
}

/// `rados_ioctx_pool_requires_alignment2`: whether appends to the pool
/// must be aligned (1 or 0 into `*req`).
///
/// # Safety
/// `io` a live context; `req` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_pool_requires_alignment2(
    io: IoctxT,
    req: *mut c_int,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let r = c_try!(io.ctx().requires_alignment().map_err(|e| errno_of(&e)));
    // SAFETY: NULL or writable.
    unsafe { set(req, c_int::from(r)) };
    0
}

/// `rados_ioctx_pool_required_alignment2`: the alignment appends keep
/// (0 for a pool that needs none).
///
/// # Safety
/// `io` a live context; `alignment` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_pool_required_alignment2(
    io: IoctxT,
    alignment: *mut u64,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let a = c_try!(io.ctx().required_alignment().map_err(|e| errno_of(&e)));
    // SAFETY: NULL or writable.
    unsafe { set(alignment, a) };
    0
}

/// `rados_set_pool_full_try`: the context's ops carry `FULL_TRY` from now
/// on: writes go to the OSDs while the pool or cluster is full (which
/// answer -EDQUOT or -ENOSPC) rather than waiting.
///
/// # Safety
/// `io` NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_set_pool_full_try(io: IoctxT) {
    // SAFETY: NULL or a live context.
    if let Ok(io) = unsafe { self::io(io) } {
        io.update(|ctx| {
            let f = ctx.extra_flags() | flag::FULL_TRY;
            ctx.set_extra_flags(f);
        });
    }
}

/// `rados_unset_pool_full_try`: ops wait again while the pool is full.
///
/// # Safety
/// `io` NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_unset_pool_full_try(io: IoctxT) {
    // SAFETY: NULL or a live context.
    if let Ok(io) = unsafe { self::io(io) } {
        io.update(|ctx| {
            let f = ctx.extra_flags() & !flag::FULL_TRY;
            ctx.set_extra_flags(f);
        });
    }
}

/// `rados_blocklist_add`: blocklists `client_address` (`IP:PORT/NONCE`)
/// for `expire_seconds` (0: the monitors' default); -EINVAL if it is not
/// an address; then waits for the map that has it.
///
/// # Safety
/// `cluster` a live handle; `client_address` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_blocklist_add(
    cluster: RadosT,
    client_address: *mut c_char,
    expire_seconds: u32,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, addr) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(client_address)).to_string(),
        )
    };
    let rados = c_try!(c.rados());
    let r = c_try!(c.block(async move { rados.blocklist_add(&addr, expire_seconds).await }));
    c_try!(r.map_err(|e| errno_of(&e)));
    0
}

/// `rados_getaddrs`: the client's address as librados prints it
/// (`IP:0/NONCE`), malloc'd into `*addrs` (free with `rados_buffer_free`).
///
/// # Safety
/// `cluster` a live handle; `addrs` writable.
#[no_mangle]
pub unsafe extern "C" fn rados_getaddrs(cluster: RadosT, addrs: *mut *mut c_char) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let rados = c_try!(c.rados());
    let v = rados.addrs();
    let s = match v.0.as_slice() {
        [one] => addr_string(one),
        all => format!(
            "[{}]",
            all.iter().map(addr_string).collect::<Vec<_>>().join(",")
        ),
    };
    if addrs.is_null() {
        return -libc::EINVAL;
    }
    let mut z = s.into_bytes();
    z.push(0);
    // SAFETY: writable.
    unsafe { addrs.write(malloc_copy(&z)) };
    0
}

/// `rados_inconsistent_pg_list`: the PGs of pool `pool` in state
/// `inconsistent` (the mgr's `pg ls`), each NUL-terminated, into `buf` of
/// `len` bytes (zeroed first; those that do not fit are left out);
/// returns the length the whole list needs plus one.
///
/// # Safety
/// `cluster` a live handle; `buf` NULL or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_inconsistent_pg_list(
    cluster: RadosT,
    pool: i64,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    let cmd = format!(
        "{{\"prefix\": \"pg ls\",\"pool\": {pool},\"states\": [\"inconsistent\"],\"format\": \"json\"}}"
    );
    let o = mgr_command(c, None, vec![cmd], Bytes::new());
    if o.r != 0 {
        return o.r;
    }
    let pgs = if o.out.is_empty() {
        Vec::new()
    } else {
        c_try!(pgids_of(&String::from_utf8_lossy(&o.out)).ok_or(-libc::EINVAL))
    };
    if len > 0 && buf.is_null() {
        return -libc::EINVAL;
    }
    if !buf.is_null() {
        // SAFETY: len bytes.
        unsafe { std::ptr::write_bytes(buf, 0, len) };
    }
    let (mut at, mut left, mut needed) = (0usize, len, 0usize);
    for pg in &pgs {
        let rl = pg.len().saturating_add(1);
        if !buf.is_null() && left >= rl {
            // SAFETY: at + rl <= len.
            unsafe { copy_to(buf.add(at), pg.as_bytes()) };
            at = at.saturating_add(rl);
            left = left.saturating_sub(rl);
        }
        needed = needed.saturating_add(rl);
    }
    c_int::try_from(needed.saturating_add(1)).unwrap_or(c_int::MAX)
}

/// `rados_ioctx_get_cluster`: the handle the context was made from (not
/// to be shut down through this reference).
///
/// # Safety
/// `io` NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_ioctx_get_cluster(io: IoctxT) -> RadosT {
    // SAFETY: NULL or a live context.
    match unsafe { self::io(io) } {
        Ok(io) => io.owner as RadosT,
        Err(_) => std::ptr::null_mut(),
    }
}

/// `rados_cct`: the handle's configuration, as a `rados_config_t` (valid
/// as long as the handle), for `rados_create_with_context`.
///
/// # Safety
/// `cluster` NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_cct(cluster: RadosT) -> ConfigT {
    cluster
}

/// `rados_create_with_context`: a new handle with the configuration of
/// the handle `cct` came from (a copy of it as it stands: later changes to
/// either are not seen by the other, where librados shares one context).
///
/// # Safety
/// `pcluster` writable; `cct` NULL or from `rados_cct` of a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_create_with_context(pcluster: *mut RadosT, cct: ConfigT) -> c_int {
    // SAFETY: a config_t is a live rados_t.
    let from = c_try!(unsafe { self::cluster(cct) });
    // SAFETY: writable.
    unsafe { hand_out(pcluster, from.config()) }
}

/// `rados_application_enable`: enables application `app_name` on the
/// context's pool (`force` != 0: even if another is enabled); then waits
/// for the map that has it.
///
/// # Safety
/// `io` a live context; `app_name` a C string.
#[no_mangle]
pub unsafe extern "C" fn rados_application_enable(
    io: IoctxT,
    app_name: *const c_char,
    force: c_int,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, app) = unsafe { (c_try!(self::io(io)), c_try!(str_of(app_name)).to_string()) };
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let r =
        c_try!(io.block(async move { rados.application_enable(&pool, &app, force != 0).await }));
    c_try!(r.map_err(|e| errno_of(&e)));
    0
}

/// Copies `items`, each with a NUL, to `buf` and a NUL after them if
/// there is room (librados writes it past `*len` when the list fills the
/// buffer exactly; not here). Safety: `buf` has `len` bytes, `len` >= the
/// items' total.
unsafe fn put_list<'a>(buf: *mut c_char, len: usize, items: impl Iterator<Item = &'a str>) {
    let mut at = 0usize;
    for s in items {
        // SAFETY: the items fit (checked by the caller).
        unsafe {
            copy_to(buf.add(at), s.as_bytes());
            buf.add(at.saturating_add(s.len())).write(0);
        }
        at = at.saturating_add(s.len()).saturating_add(1);
    }
    if at < len {
        // SAFETY: at < len.
        unsafe { buf.add(at).write(0) };
    }
}

/// `rados_application_list`: the pool's applications, each followed by a
/// NUL, into `values`; `*values_len` becomes their total length; -ERANGE
/// (with the length needed) if it is shorter.
///
/// # Safety
/// `io` a live context; `values_len` writable; `values` has
/// `*values_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_application_list(
    io: IoctxT,
    values: *mut c_char,
    values_len: *mut usize,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let apps = c_try!(rados.application_list(&pool).map_err(|e| errno_of(&e)));
    if values_len.is_null() {
        return -libc::EINVAL;
    }
    let total = apps
        .iter()
        .map(|a| a.len().saturating_add(1))
        .sum::<usize>();
    // SAFETY: writable.
    let have = unsafe { *values_len };
    if have < total {
        // SAFETY: writable.
        unsafe { values_len.write(total) };
        return -libc::ERANGE;
    }
    if values.is_null() && have > 0 {
        return -libc::EINVAL;
    }
    // SAFETY: `have` >= total bytes.
    unsafe {
        if !values.is_null() {
            put_list(values, have, apps.iter().map(String::as_str));
        }
        values_len.write(total);
    }
    0
}

/// `rados_application_metadata_get`: the value of `key` of application
/// `app_name`'s metadata, with its NUL, into `value`; `*value_len` becomes
/// its length with the NUL; -ERANGE (with that length) if shorter,
/// -ENOENT if there is no such application or key.
///
/// # Safety
/// `io` a live context; the names C strings; `value_len` writable;
/// `value` has `*value_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_application_metadata_get(
    io: IoctxT,
    app_name: *const c_char,
    key: *const c_char,
    value: *mut c_char,
    value_len: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, app, key) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(str_of(app_name)),
            c_try!(str_of(key)),
        )
    };
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let v = c_try!(rados
        .application_metadata_get(&pool, app, key)
        .map_err(|e| errno_of(&e)));
    if value_len.is_null() {
        return -libc::EINVAL;
    }
    let len = v.len().saturating_add(1);
    // SAFETY: writable.
    if unsafe { *value_len } < len {
        // SAFETY: writable.
        unsafe { value_len.write(len) };
        return -libc::ERANGE;
    }
    if value.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: len <= *value_len bytes.
    unsafe {
        copy_to(value, v.as_bytes());
        value.add(v.len()).write(0);
        value_len.write(len);
    }
    0
}

/// `rados_application_metadata_set`: sets `key` to `value` in application
/// `app_name`'s metadata; then waits for the map.
///
/// # Safety
/// `io` a live context; the strings C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_application_metadata_set(
    io: IoctxT,
    app_name: *const c_char,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, app, key, value) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(str_of(app_name)).to_string(),
            c_try!(str_of(key)).to_string(),
            c_try!(str_of(value)).to_string(),
        )
    };
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let r = c_try!(io.block(async move {
        rados
            .application_metadata_set(&pool, &app, &key, &value)
            .await
    }));
    c_try!(r.map_err(|e| errno_of(&e)));
    0
}

/// `rados_application_metadata_remove`: removes `key` from application
/// `app_name`'s metadata; then waits for the map.
///
/// # Safety
/// `io` a live context; the strings C strings.
#[no_mangle]
pub unsafe extern "C" fn rados_application_metadata_remove(
    io: IoctxT,
    app_name: *const c_char,
    key: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, app, key) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(str_of(app_name)).to_string(),
            c_try!(str_of(key)).to_string(),
        )
    };
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let r =
        c_try!(io.block(async move { rados.application_metadata_remove(&pool, &app, &key).await }));
    c_try!(r.map_err(|e| errno_of(&e)));
    0
}

/// `rados_application_metadata_list`: application `app_name`'s keys and
/// values, each followed by a NUL, into `keys` and `values`; `*keys_len`
/// and `*vals_len` become their totals; -ERANGE (with both totals) if
/// either is shorter; -ENOENT if the application is not enabled.
///
/// # Safety
/// `io` a live context; `app_name` a C string; the lengths writable; the
/// buffers have as many bytes as they say.
#[no_mangle]
pub unsafe extern "C" fn rados_application_metadata_list(
    io: IoctxT,
    app_name: *const c_char,
    keys: *mut c_char,
    keys_len: *mut usize,
    values: *mut c_char,
    vals_len: *mut usize,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, app) = unsafe { (c_try!(self::io(io)), c_try!(str_of(app_name))) };
    let (rados, pool) = (c_try!(io.rados()), c_try!(io.pool_name()));
    let m = c_try!(rados
        .application_metadata_list(&pool, app)
        .map_err(|e| errno_of(&e)));
    if keys_len.is_null() || vals_len.is_null() {
        return -libc::EINVAL;
    }
    let total_k = m.keys().map(|k| k.len().saturating_add(1)).sum::<usize>();
    let total_v = m.values().map(|v| v.len().saturating_add(1)).sum::<usize>();
    // SAFETY: writable.
    let (have_k, have_v) = unsafe { (*keys_len, *vals_len) };
    if have_k < total_k || have_v < total_v {
        // SAFETY: writable.
        unsafe {
            keys_len.write(total_k);
            vals_len.write(total_v);
        }
        return -libc::ERANGE;
    }
    if (keys.is_null() && have_k > 0) || (values.is_null() && have_v > 0) {
        return -libc::EINVAL;
    }
    // SAFETY: each buffer has at least its total.
    unsafe {
        if !keys.is_null() {
            put_list(keys, have_k, m.keys().map(String::as_str));
        }
        if !values.is_null() {
            put_list(values, have_v, m.values().map(String::as_str));
        }
        keys_len.write(total_k);
        vals_len.write(total_v);
    }
    0
}

/// The strings of a `key\0value\0...\0\0` dict. Safety: `p` is such a
/// dict (or NULL: empty).
unsafe fn dict_strings<'a>(p: *const c_char) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    if p.is_null() {
        return out;
    }
    let mut at = p;
    loop {
        // SAFETY: within the dict: each string NUL-terminated, an empty
        // key ends it.
        let key = unsafe { std::ffi::CStr::from_ptr(at) }.to_bytes();
        if key.is_empty() {
            break;
        }
        // SAFETY: past the key's NUL, the value.
        let vp = unsafe { at.add(key.len().saturating_add(1)) };
        // SAFETY: as above.
        let value = unsafe { std::ffi::CStr::from_ptr(vp) }.to_bytes();
        out.push(key);
        out.push(value);
        // SAFETY: past the value's NUL, the next key.
        at = unsafe { vp.add(value.len().saturating_add(1)) };
    }
    out
}

/// `rados_service_register`: registers the handle as daemon `daemon` of
/// service `service` with the mgr, as librados: -EINVAL for an empty
/// service or daemon name or one of Ceph's own daemon types, -EEXIST
/// registering twice; the metadata (with this host's name, kernel and
/// architecture added, as librados adds its system information) goes in
/// an MMgrOpen to the active mgr, and a beacon (MMgrReport) every 5 s
/// keeps the daemon in the service map (`ceph service dump`, `ceph -s`).
/// Registered before `rados_connect`, it starts there.
///
/// # Safety
/// `cluster` a live handle; `service`, `daemon` C strings;
/// `metadata_dict` NULL or a `key\0value\0...\0\0` dict.
#[no_mangle]
pub unsafe extern "C" fn rados_service_register(
    cluster: RadosT,
    service: *const c_char,
    daemon: *const c_char,
    metadata_dict: *const c_char,
) -> c_int {
    // SAFETY: per the contract above.
    let (c, service, daemon, metadata) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            c_try!(str_of(service)).to_string(),
            c_try!(str_of(daemon)).to_string(),
            dict_to_map(&dict_strings(metadata_dict)),
        )
    };
    if c.admin.service().is_some() {
        return -libc::EEXIST;
    }
    if ["osd", "mds", "client", "mon", "mgr"].contains(&service.as_str())
        || service.is_empty()
        || daemon.is_empty()
    {
        return -libc::EINVAL;
    }
    let mut all = sys_info();
    all.extend(metadata);
    c_try!(c.admin.register(Service {
        service,
        daemon,
        metadata: all,
    }));
    c.start_service();
    0
}

/// `rados_service_update_status`: the registered daemon's status from
/// now on (sent with its next beacon); -ENOTCONN before connecting, as
/// librados (0 when not registered: nothing is sent).
///
/// # Safety
/// `cluster` a live handle; `status_dict` NULL or a dict.
#[no_mangle]
pub unsafe extern "C" fn rados_service_update_status(
    cluster: RadosT,
    status_dict: *const c_char,
) -> c_int {
    // SAFETY: a live handle; a dict or NULL.
    let (c, status) = unsafe {
        (
            c_try!(self::cluster(cluster)),
            dict_to_map(&dict_strings(status_dict)),
        )
    };
    c_try!(c.rados());
    *c.admin.status.lock().unwrap_or_else(|p| p.into_inner()) = (status, true);
    0
}
