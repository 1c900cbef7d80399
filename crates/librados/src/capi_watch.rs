//! Watch/notify (`rados_watch*`, `rados_unwatch*`, `rados_notify*`,
//! librados.h of Ceph 16) with the semantics of src/librados/librados_c.cc
//! and IoCtxImpl.cc.
//!
//! A watch's handle is its cookie, what the OSD knows it by (librados's is
//! its linger op's address, which it sends as the cookie): the callbacks
//! get it and `rados_notify_ack` sends it. Each watch has a task on the
//! handle's runtime taking its events; each event becomes a job on the
//! handle's finisher thread, which calls the watch's callback (never a
//! runtime worker or a messenger shard). `rados_unwatch2` stops that:
//! callbacks still queued are not called, and, unless it is called from
//! the finisher thread (a callback unwatching), it returns only once no
//! callback of the watch is running.
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; C strings are NUL-terminated;
//! a `(buf, len)` pair has `len` bytes; outputs are NULL or writable; a
//! callback is NULL or a function of librados.h's type.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use msgr_rados::objecter::linger::notify_ack_op;
use msgr_rados::{IoCtx, Ops, RadosError, Watch, WatchEvent};
use tokio::sync::{mpsc, oneshot};

use crate::aio::{CPtr, Finisher};
use crate::capi::{bytes_of, cluster, io, malloc_copy, set, slice_of, IoctxT, RadosT};
use crate::capi_aio::CompletionT;
use crate::cluster::Io;
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

/// librados.h's `rados_watchcb2_t`: argument, notify id, handle, notifier
/// id, payload, its length.
pub type WatchCb2 = unsafe extern "C" fn(*mut c_void, u64, u64, u64, *mut c_void, usize);
/// librados.h's `rados_watcherrcb_t`: argument, handle, negative errno.
pub type WatchErrCb = unsafe extern "C" fn(*mut c_void, u64, c_int);
/// librados.h's `rados_watchcb_t` (version 1): opcode, version, argument.
pub type WatchCb = unsafe extern "C" fn(u8, u64, *mut c_void);

/// librados's `client_notify_timeout` (seconds): a notify's timeout when
/// `rados_notify2` is given 0.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy)]
enum Callbacks {
    V2 {
        cb: Option<WatchCb2>,
        errcb: Option<WatchErrCb>,
    },
    /// `rados_watch`: the callback, then an empty acknowledgement.
    V1 { cb: Option<WatchCb> },
}

#[derive(Default)]
struct CbState {
    cancelled: bool,
    running: bool,
}

/// A watch's callbacks and whether one is running.
struct WatchCtx {
    callbacks: Callbacks,
    arg: CPtr,
    state: Mutex<CbState>,
    cond: Condvar,
}

impl WatchCtx {
    fn new(callbacks: Callbacks, arg: *mut c_void) -> Arc<WatchCtx> {
        Arc::new(WatchCtx {
            callbacks,
            arg: CPtr(arg),
            state: Mutex::new(CbState::default()),
            cond: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CbState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// On the finisher: runs `f` unless the watch was cancelled; false
    /// if it was.
    fn run(&self, f: impl FnOnce()) -> bool {
        {
            let mut st = self.lock();
            if st.cancelled {
                return false;
            }
            st.running = true;
        }
        f();
        self.lock().running = false;
        self.cond.notify_all();
        true
    }

    /// No callback is called from now on; waits for one running on
    /// another thread to return (not on the finisher: that is us).
    fn cancel(&self) {
        let mut st = self.lock();
        st.cancelled = true;
        if Finisher::on_finisher() {
            return;
        }
        while st.running {
            st = self.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

enum Cmd {
    Check(oneshot::Sender<Result<Duration, i32>>),
    Stop(oneshot::Sender<Watch>),
}

/// A registered watch: its callbacks, and its task's commands.
struct Entry {
    ctx: Arc<WatchCtx>,
    cmds: mpsc::UnboundedSender<Cmd>,
    /// Keeps the finisher (the key's address) alive with the entry.
    _finisher: Arc<Finisher>,
}

type Key = (usize, u64);

/// The watches of every handle, by their handle's finisher and cookie.
fn watches() -> MutexGuard<'static, HashMap<Key, Entry>> {
    static WATCHES: OnceLock<Mutex<HashMap<Key, Entry>>> = OnceLock::new();
    WATCHES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn key(finisher: &Arc<Finisher>, cookie: u64) -> Key {
    (Arc::as_ptr(finisher) as usize, cookie)
}

/// Registers `watch` and starts its task (on the runtime of `rt`).
fn start(
    rt: &tokio::runtime::Handle,
    finisher: &Arc<Finisher>,
    watch: Watch,
    ctx: Arc<WatchCtx>,
    ack: IoCtx,
    name: Vec<u8>,
) -> u64 {
    let cookie = watch.cookie();
    let (tx, rx) = mpsc::unbounded_channel();
    watches().insert(
        key(finisher, cookie),
        Entry {
            ctx: Arc::clone(&ctx),
            cmds: tx,
            _finisher: Arc::clone(finisher),
        },
    );
    rt.spawn(pump(
        watch,
        ctx,
        Arc::clone(finisher),
        rx,
        ack,
        name,
        rt.clone(),
    ));
    cookie
}

/// A watch's task: hands its events to the finisher, answers commands.
async fn pump(
    mut watch: Watch,
    ctx: Arc<WatchCtx>,
    finisher: Arc<Finisher>,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ack: IoCtx,
    name: Vec<u8>,
    rt: tokio::runtime::Handle,
) {
    let cookie = watch.cookie();
    let mut events_open = true;
    loop {
        tokio::select! {
            ev = watch.next_event(), if events_open => match ev {
                Some(ev) => deliver(&ctx, &finisher, cookie, ev, &ack, &name, &rt),
                None => events_open = false,
            },
            cmd = cmds.recv() => match cmd {
                Some(Cmd::Check(tx)) => {
                    let _ = tx.send(watch.check().map_err(|e| errno_of(&e)));
                }
                Some(Cmd::Stop(tx)) => {
                    let _ = tx.send(watch);
                    return;
                }
                None => return,
            },
        }
    }
}

/// Queues the callback for `ev` on the finisher.
fn deliver(
    ctx: &Arc<WatchCtx>,
    finisher: &Finisher,
    cookie: u64,
    ev: WatchEvent,
    ack: &IoCtx,
    name: &[u8],
    rt: &tokio::runtime::Handle,
) {
    let ctx = Arc::clone(ctx);
    match ev {
        WatchEvent::Notify {
            notify_id,
            notifier_gid,
            payload,
            ..
        } => {
            let (ack, name, rt) = (ack.clone(), name.to_vec(), rt.clone());
            finisher.queue(move || {
                let arg = ctx.arg;
                let ran = ctx.run(|| match ctx.callbacks {
                    Callbacks::V2 { cb: Some(cb), .. } => {
                        let data = match payload.is_empty() {
                            true => std::ptr::null_mut(),
                            false => payload.as_ptr().cast_mut().cast::<c_void>(),
                        };
                        // SAFETY: a function of librados.h's type, given
                        // the payload for the call (never written).
                        unsafe {
                            cb(
                                arg.get(),
                                notify_id,
                                cookie,
                                notifier_gid,
                                data,
                                payload.len(),
                            )
                        };
                    }
                    Callbacks::V1 { cb: Some(cb) } => {
                        // SAFETY: a function of librados.h's type.
                        unsafe { cb(0, 0, arg.get()) };
                    }
                    _ => {}
                });
                // librados acknowledges for a version 1 watcher.
                if ran && matches!(ctx.callbacks, Callbacks::V1 { .. }) {
                    send_ack(&rt, ack, name, notify_id, cookie, Vec::new());
                }
            });
        }
        WatchEvent::Error { err } => {
            finisher.queue(move || {
                let arg = ctx.arg;
                ctx.run(|| {
                    if let Callbacks::V2 {
                        errcb: Some(errcb), ..
                    } = ctx.callbacks
                    {
                        // SAFETY: a function of librados.h's type.
                        unsafe { errcb(arg.get(), cookie, err) };
                    }
                });
            });
        }
    }
}

/// Sends a NOTIFY_ACK without waiting for its reply (librados's
/// notify_ack), but once it is queued to its OSD: what the caller does next
/// (an unwatch) goes after it, as librados's objecter keeps its order.
fn send_ack(
    rt: &tokio::runtime::Handle,
    io: IoCtx,
    name: Vec<u8>,
    notify_id: u64,
    cookie: u64,
    reply: Vec<u8>,
) {
    let op = notify_ack_op(notify_id, cookie, &reply);
    let (queued, wait) = std::sync::mpsc::sync_channel::<()>(1);
    drop(rt.spawn(async move {
        let mut ack = std::pin::pin!(async move { io.operate(&name, Ops(vec![op])).await });
        let mut queued = Some(queued);
        // The first poll submits the request to the objecter.
        let _ = std::future::poll_fn(|cx| {
            let r = ack.as_mut().poll(cx);
            if let Some(q) = queued.take() {
                let _ = q.send(());
            }
            r
        })
        .await;
    }));
    let _ = wait.recv();
}

/// Takes watch `cookie` of `io`'s handle out of the registry and
/// cancels its callbacks (waiting for a running one, but on the
/// finisher): -ENOTCONN if there is no such watch.
fn take(io: &Io, cookie: u64) -> Result<Entry, c_int> {
    let entry = watches()
        .remove(&key(&io.finisher, cookie))
        .ok_or(-libc::ENOTCONN)?;
    entry.ctx.cancel();
    Ok(entry)
}

/// Stops the watch's task and unregisters it from the OSD.
async fn stop(cmds: mpsc::UnboundedSender<Cmd>) -> Result<(), RadosError> {
    let (tx, rx) = oneshot::channel();
    cmds.send(Cmd::Stop(tx)).map_err(|_| RadosError::Shutdown)?;
    let watch = rx.await.map_err(|_| RadosError::Shutdown)?;
    watch.unwatch().await
}

/// Registers a watch (the synchronous calls): its cookie into `*cookie`.
///
/// Safety: as the C functions' contracts.
unsafe fn watch_sync(
    io: IoctxT,
    o: *const c_char,
    cookie: *mut u64,
    callbacks: Callbacks,
    timeout: u32,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(o)).to_vec()) };
    if cookie.is_null() {
        return -libc::EINVAL;
    }
    let n = name.clone();
    let watch = c_try!(io.run(|ctx| async move { ctx.watch_with_timeout(&n, timeout).await }));
    let ctx = WatchCtx::new(callbacks, arg);
    let handle = start(&io.rt, &io.finisher, watch, ctx, io.ctx(), name);
    // SAFETY: checked non-NULL; writable.
    unsafe { cookie.write(handle) };
    0
}

/// Registers a watch, completing `completion` once it is (the aio calls).
///
/// Safety: as the C functions' contracts; `handle` writable until the
/// op completes.
unsafe fn watch_aio(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    handle: *mut u64,
    callbacks: Callbacks,
    timeout: u32,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: per the contract above.
    let (io, name) = unsafe { (c_try!(self::io(io)), c_try!(bytes_of(o)).to_vec()) };
    if handle.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { crate::capi_aio::op_ref(completion) });
    let ctx = WatchCtx::new(callbacks, arg);
    let (rt, finisher, ack) = (io.rt.clone(), Arc::clone(&io.finisher), io.ctx());
    let out = CPtr(handle.cast::<c_void>());
    let n = name.clone();
    io.aio(
        c,
        false,
        |ctx| async move { ctx.watch_with_timeout(&n, timeout).await },
        move |watch: Watch| {
            let cookie = start(&rt, &finisher, watch, ctx, ack, name);
            // SAFETY: writable until the op completes.
            unsafe { out.get().cast::<u64>().write(cookie) };
            0
        },
    );
    0
}

/// `rados_watch3`: watches object `o`; notifies call `watchcb`, errors
/// `watcherrcb` (each may be NULL), with `arg`, on the handle's finisher
/// thread; the handle goes to `*cookie`. `timeout` in seconds (0: the
/// OSD's `osd_client_watch_timeout`).
///
/// # Safety
/// `io` a live context; `o` a C string; `cookie` writable; the callbacks
/// NULL or of librados.h's types, callable with `arg` until unwatched.
#[no_mangle]
pub unsafe extern "C" fn rados_watch3(
    io: IoctxT,
    o: *const c_char,
    cookie: *mut u64,
    watchcb: Option<WatchCb2>,
    watcherrcb: Option<WatchErrCb>,
    timeout: u32,
    arg: *mut c_void,
) -> c_int {
    let callbacks = Callbacks::V2 {
        cb: watchcb,
        errcb: watcherrcb,
    };
    // SAFETY: forwarded contract.
    unsafe { watch_sync(io, o, cookie, callbacks, timeout, arg) }
}

/// `rados_watch2`: `rados_watch3` with the OSD's default timeout.
///
/// # Safety
/// As `rados_watch3`.
#[no_mangle]
pub unsafe extern "C" fn rados_watch2(
    io: IoctxT,
    o: *const c_char,
    cookie: *mut u64,
    watchcb: Option<WatchCb2>,
    watcherrcb: Option<WatchErrCb>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_watch3(io, o, cookie, watchcb, watcherrcb, 0, arg) }
}

/// `rados_watch` (version 1): `watchcb(0, 0, arg)` for each notify, which
/// is then acknowledged with an empty reply, as librados does; `ver` is
/// unused, as in librados.
///
/// # Safety
/// As `rados_watch3`.
#[no_mangle]
pub unsafe extern "C" fn rados_watch(
    io: IoctxT,
    o: *const c_char,
    _ver: u64,
    cookie: *mut u64,
    watchcb: Option<WatchCb>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { watch_sync(io, o, cookie, Callbacks::V1 { cb: watchcb }, 0, arg) }
}

/// `rados_aio_watch2`: `rados_watch3` as an asynchronous op: the handle
/// is written to `*handle` before `completion` completes.
///
/// # Safety
/// As `rados_watch3`; `completion` live; `handle` writable until the op
/// completes.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_watch2(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    handle: *mut u64,
    watchcb: Option<WatchCb2>,
    watcherrcb: Option<WatchErrCb>,
    timeout: u32,
    arg: *mut c_void,
) -> c_int {
    let callbacks = Callbacks::V2 {
        cb: watchcb,
        errcb: watcherrcb,
    };
    // SAFETY: forwarded contract.
    unsafe { watch_aio(io, o, completion, handle, callbacks, timeout, arg) }
}

/// `rados_aio_watch`: `rados_aio_watch2` with the OSD's default timeout.
///
/// # Safety
/// As `rados_aio_watch2`.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_watch(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    handle: *mut u64,
    watchcb: Option<WatchCb2>,
    watcherrcb: Option<WatchErrCb>,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_aio_watch2(io, o, completion, handle, watchcb, watcherrcb, 0, arg) }
}

/// `rados_watch_check`: milliseconds (at least 1) since the OSD last
/// confirmed watch `cookie`, or its error (-ENOTCONN: lost, or no such
/// watch).
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_watch_check(io: IoctxT, cookie: u64) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let cmds = c_try!(watches()
        .get(&key(&io.finisher, cookie))
        .map(|e| e.cmds.clone())
        .ok_or(-libc::ENOTCONN));
    let (tx, rx) = oneshot::channel();
    if cmds.send(Cmd::Check(tx)).is_err() {
        return -libc::ENOTCONN;
    }
    let age = c_try!(c_try!(io.block(rx)).map_err(|_| -libc::ENOTCONN));
    let age = c_try!(age);
    c_int::try_from(age.as_millis().max(1)).unwrap_or(c_int::MAX)
}

/// `rados_unwatch2`: ends watch `handle`: its callbacks are not called
/// any more (one running on another thread has returned when this
/// returns; called from a callback, it does not wait for itself), and the
/// OSD forgets it. -ENOTCONN if there is no such watch.
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_unwatch2(io: IoctxT, handle: u64) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    let entry = c_try!(take(io, handle));
    c_try!(c_try!(io.block(stop(entry.cmds))).map_err(|e| errno_of(&e)));
    0
}

/// `rados_unwatch` (version 1): `rados_unwatch2`; `o` is unused, as in
/// librados.
///
/// # Safety
/// `io` a live context.
#[no_mangle]
pub unsafe extern "C" fn rados_unwatch(io: IoctxT, _o: *const c_char, handle: u64) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { rados_unwatch2(io, handle) }
}

/// `rados_aio_unwatch`: `rados_unwatch2` as an asynchronous op (no
/// callback of the watch is called once it is submitted; one running is
/// not waited for).
///
/// # Safety
/// `io` a live context; `completion` live.
#[no_mangle]
pub unsafe extern "C" fn rados_aio_unwatch(
    io: IoctxT,
    handle: u64,
    completion: CompletionT,
) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { crate::capi_aio::op_ref(completion) });
    let entry = c_try!(watches()
        .remove(&key(&io.finisher, handle))
        .ok_or(-libc::ENOTCONN));
    entry.ctx.lock().cancelled = true;
    let cmds = entry.cmds;
    io.aio(c, false, move |_| stop(cmds), |()| 0);
    0
}

/// `rados_watch_flush`: waits until every watch callback queued so far
/// has returned (at once from a callback); -ENOTCONN before connecting.
///
/// # Safety
/// `cluster` a live handle.
#[no_mangle]
pub unsafe extern "C" fn rados_watch_flush(cluster: RadosT) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    c_try!(c.rados());
    if Finisher::on_finisher() {
        return 0;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    if c.finisher().queue(move || {
        let _ = tx.send(());
    }) {
        let _ = rx.recv();
    }
    0
}

/// A notify's timeout as librados takes `timeout_ms`: whole seconds, 0
/// the client's default (10 s; under a second: the OSD's default).
fn notify_timeout(timeout_ms: u64) -> Duration {
    match timeout_ms {
        0 => NOTIFY_TIMEOUT,
        ms => Duration::from_secs(ms / 1000),
    }
}

/// Writes a notify's replies to the caller's outputs.
///
/// Safety: each output NULL or writable.
unsafe fn put_reply(data: &Bytes, buf: *mut *mut c_char, len: *mut usize) {
    if !buf.is_null() {
        // SAFETY: non-NULL, writable.
        unsafe { buf.write(malloc_copy(data)) };
    }
    // SAFETY: NULL or writable.
    unsafe { set(len, data.len()) };
}

/// `rados_notify2`: notifies the watchers of `o` with `buf` and waits for
/// their acknowledgements up to `timeout_ms` (whole seconds; 0: 10 s);
/// their replies, encoded as the OSD sent them (see
/// `rados_decode_notify_response`), are malloc'd into `*reply_buffer`
/// (free with `rados_buffer_free`) and their length into
/// `*reply_buffer_len` (each may be NULL). 0, or -ETIMEDOUT (replies
/// given too) if a watcher did not acknowledge in time.
///
/// # Safety
/// `io` a live context; `o` a C string; `buf` has `buf_len` bytes; the
/// outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_notify2(
    io: IoctxT,
    o: *const c_char,
    buf: *const c_char,
    buf_len: c_int,
    timeout_ms: u64,
    reply_buffer: *mut *mut c_char,
    reply_buffer_len: *mut usize,
) -> c_int {
    let len = c_try!(usize::try_from(buf_len).map_err(|_| -libc::EINVAL));
    // SAFETY: per the contract above.
    let (io, name, payload) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(o)).to_vec(),
            c_try!(slice_of(buf, len)).to_vec(),
        )
    };
    let timeout = notify_timeout(timeout_ms);
    let (code, data) =
        c_try!(io.run(|ctx| async move { ctx.notify_raw(&name, &payload, timeout).await }));
    // SAFETY: NULL or writable.
    unsafe { put_reply(&data, reply_buffer, reply_buffer_len) };
    code
}

/// `rados_aio_notify`: `rados_notify2` as an asynchronous op: the replies
/// are written before `completion` completes; its result is 0 or
/// -ETIMEDOUT.
///
/// # Safety
/// As `rados_notify2`; `completion` live; the outputs writable until the
/// op completes.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // librados.h's signature
pub unsafe extern "C" fn rados_aio_notify(
    io: IoctxT,
    o: *const c_char,
    completion: CompletionT,
    buf: *const c_char,
    buf_len: c_int,
    timeout_ms: u64,
    reply_buffer: *mut *mut c_char,
    reply_buffer_len: *mut usize,
) -> c_int {
    let len = c_try!(usize::try_from(buf_len).map_err(|_| -libc::EINVAL));
    // SAFETY: per the contract above.
    let (io, name, payload) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(o)).to_vec(),
            c_try!(slice_of(buf, len)).to_vec(),
        )
    };
    // SAFETY: NULL or live.
    let c = c_try!(unsafe { crate::capi_aio::op_ref(completion) });
    let timeout = notify_timeout(timeout_ms);
    let (rb, rl) = (CPtr(reply_buffer.cast()), CPtr(reply_buffer_len.cast()));
    io.aio(
        c,
        false,
        |ctx| async move { ctx.notify_raw(&name, &payload, timeout).await },
        move |(code, data): (i32, Bytes)| {
            // SAFETY: NULL or writable until the op completes.
            unsafe { put_reply(&data, rb.get().cast(), rl.get().cast()) };
            code
        },
    );
    0
}

/// `rados_notify_ack`: acknowledges notify `notify_id` to watch `cookie`
/// with `buf` (may be empty); sent without waiting for the OSD, as
/// librados: 0.
///
/// # Safety
/// `io` a live context; `o` a C string; `buf` has `buf_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rados_notify_ack(
    io: IoctxT,
    o: *const c_char,
    notify_id: u64,
    cookie: u64,
    buf: *const c_char,
    buf_len: c_int,
) -> c_int {
    let len = c_try!(usize::try_from(buf_len).map_err(|_| -libc::EINVAL));
    // SAFETY: per the contract above.
    let (io, name, reply) = unsafe {
        (
            c_try!(self::io(io)),
            c_try!(bytes_of(o)).to_vec(),
            c_try!(slice_of(buf, len)).to_vec(),
        )
    };
    c_try!(io.rados());
    send_ack(&io.rt, io.ctx(), name, notify_id, cookie, reply);
    0
}

/// librados.h's `struct notify_ack_t` (rados_types.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NotifyAckT {
    /// The acknowledging client's id.
    pub notifier_id: u64,
    /// Its watch's handle.
    pub cookie: u64,
    /// Its reply (malloc'd; NULL if empty).
    pub payload: *mut c_char,
    /// The reply's length.
    pub payload_len: u64,
}

/// librados.h's `struct notify_timeout_t` (rados_types.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotifyTimeoutT {
    /// The client that did not acknowledge.
    pub notifier_id: u64,
    /// Its watch's handle.
    pub cookie: u64,
}

type Acks = Vec<(u64, u64, Vec<u8>)>;

/// A notify's encoded replies: `map<pair<u64,u64>,bufferlist>` then
/// `set<pair<u64,u64>>`; None if they do not decode.
pub fn decode_notify_reply(b: &[u8]) -> Option<(Acks, Vec<(u64, u64)>)> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (h, t) = (b.get(..n)?, b.get(n..)?);
        *b = t;
        Some(h)
    }
    fn u32_of(b: &mut &[u8]) -> Option<u32> {
        Some(u32::from_le_bytes(take(b, 4)?.try_into().ok()?))
    }
    fn u64_of(b: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(b, 8)?.try_into().ok()?))
    }
    let mut b = b;
    let n = u32_of(&mut b)?;
    let mut acks = Vec::new();
    for _ in 0..n {
        let (gid, cookie) = (u64_of(&mut b)?, u64_of(&mut b)?);
        let len = usize::try_from(u32_of(&mut b)?).ok()?;
        acks.push((gid, cookie, take(&mut b, len)?.to_vec()));
    }
    let m = u32_of(&mut b)?;
    let mut timeouts = Vec::new();
    for _ in 0..m {
        timeouts.push((u64_of(&mut b)?, u64_of(&mut b)?));
    }
    Some((acks, timeouts))
}

/// A malloc'd array of `items` (NULL if empty).
fn malloc_array<T: Copy>(items: &[T]) -> Result<*mut T, c_int> {
    if items.is_empty() {
        return Ok(std::ptr::null_mut());
    }
    // SAFETY: calloc of items.len() elements of T; the copy stays within.
    unsafe {
        let p = libc::calloc(items.len(), std::mem::size_of::<T>()).cast::<T>();
        if p.is_null() {
            return Err(-libc::ENOMEM);
        }
        std::ptr::copy_nonoverlapping(items.as_ptr(), p, items.len());
        Ok(p)
    }
}

/// `rados_decode_notify_response`: a notify's reply buffer as arrays of
/// acks (each payload malloc'd, NULL if empty) and timeouts (each NULL if
/// empty), to free with `rados_free_notify_response`; -EINVAL for a NULL
/// or empty buffer or one that does not decode.
///
/// # Safety
/// `reply_buffer` has `reply_buffer_len` bytes; the outputs writable.
#[no_mangle]
pub unsafe extern "C" fn rados_decode_notify_response(
    reply_buffer: *mut c_char,
    reply_buffer_len: usize,
    acks: *mut *mut NotifyAckT,
    nr_acks: *mut usize,
    timeouts: *mut *mut NotifyTimeoutT,
    nr_timeouts: *mut usize,
) -> c_int {
    if reply_buffer.is_null() || reply_buffer_len == 0 {
        return -libc::EINVAL;
    }
    if acks.is_null() || nr_acks.is_null() || timeouts.is_null() || nr_timeouts.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: reply_buffer_len bytes.
    let data = c_try!(unsafe { slice_of(reply_buffer, reply_buffer_len) });
    let (a, t) = c_try!(decode_notify_reply(data).ok_or(-libc::EINVAL));
    let a: Vec<NotifyAckT> = a
        .iter()
        .map(|(gid, cookie, payload)| NotifyAckT {
            notifier_id: *gid,
            cookie: *cookie,
            payload: malloc_copy(payload),
            payload_len: payload.len() as u64,
        })
        .collect();
    let t: Vec<NotifyTimeoutT> = t
        .iter()
        .map(|&(notifier_id, cookie)| NotifyTimeoutT {
            notifier_id,
            cookie,
        })
        .collect();
    let pa = c_try!(malloc_array(&a));
    let pt = c_try!(malloc_array(&t));
    // SAFETY: checked non-NULL; writable.
    unsafe {
        acks.write(pa);
        nr_acks.write(a.len());
        timeouts.write(pt);
        nr_timeouts.write(t.len());
    }
    0
}

/// `rados_free_notify_response`: frees what `rados_decode_notify_response`
/// allocated.
///
/// # Safety
/// `acks` NULL or from `rados_decode_notify_response` with `nr_acks`
/// entries; `timeouts` NULL or from it; neither freed yet.
#[no_mangle]
pub unsafe extern "C" fn rados_free_notify_response(
    acks: *mut NotifyAckT,
    nr_acks: usize,
    timeouts: *mut NotifyTimeoutT,
) {
    if !acks.is_null() {
        for i in 0..nr_acks {
            // SAFETY: i < nr_acks entries; each payload malloc'd or NULL.
            unsafe { libc::free((*acks.add(i)).payload.cast::<c_void>()) };
        }
        // SAFETY: calloc'd by malloc_array.
        unsafe { libc::free(acks.cast::<c_void>()) };
    }
    if !timeouts.is_null() {
        // SAFETY: calloc'd by malloc_array.
        unsafe { libc::free(timeouts.cast::<c_void>()) };
    }
}
