//! Asynchronous I/O (`rados_aio_*`): completions, the finisher thread that
//! runs their callbacks, and the per-context record of writes in flight
//! that `rados_aio_flush` waits for.
//!
//! An op runs on the handle's runtime; when it ends, its result is stored
//! in the completion (a read's data already copied to the caller's
//! buffer), the completion is marked complete, and its callbacks, if it
//! has any, are queued to the handle's finisher thread, which calls
//! "complete" then "safe", each exactly once (librados's C_AioComplete).
//! No user callback ever runs on a messenger shard or a runtime worker.
//! `rados_aio_wait_for_complete` / `_safe` return once the op is complete
//! and its callbacks have returned (called from a callback, they return
//! at once, the op being complete).

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ffi::c_void;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// librados.h's `rados_callback_t`: `void (*)(rados_completion_t, void *)`.
pub type Callback = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// A pointer the caller gave us, carried to another thread (the callback
/// argument, a read's buffer). Whoever dereferences it relies on the
/// caller's contract (alive until the op completes).
#[derive(Clone, Copy)]
pub(crate) struct CPtr(pub(crate) *mut c_void);

impl CPtr {
    /// The pointer (a method, so that a closure captures the whole
    /// `CPtr`, which is `Send`, not its field).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

// SAFETY: the pointer is only handed back to C or written through on the
// caller's contract, which holds whichever thread does it.
#[allow(unsafe_code)]
unsafe impl Send for CPtr {}
// SAFETY: as above; nothing reads through it from Rust.
#[allow(unsafe_code)]
unsafe impl Sync for CPtr {}

thread_local! {
    /// True on a finisher thread (waiting there for a completion whose
    /// callbacks are running would wait for itself).
    static ON_FINISHER: Cell<bool> = const { Cell::new(false) };
}

struct CState {
    complete: bool,
    rv: i32,
    callbacks_pending: bool,
}

/// What `rados_completion_t` points to (an `Arc`, shared by the caller's
/// reference and the op's, as librados's refcounted AioCompletionImpl).
pub struct Completion {
    state: Mutex<CState>,
    cond: Condvar,
    arg: CPtr,
    on_complete: Option<Callback>,
    on_safe: Option<Callback>,
}

impl Completion {
    /// A completion calling `on_complete` then `on_safe` (each optional)
    /// with `arg` when its op ends.
    pub fn new(arg: *mut c_void, on_complete: Option<Callback>, on_safe: Option<Callback>) -> Self {
        Completion {
            state: Mutex::new(CState {
                complete: false,
                rv: 0,
                callbacks_pending: false,
            }),
            cond: Condvar::new(),
            arg: CPtr(arg),
            on_complete,
            on_safe,
        }
    }

    fn lock(&self) -> MutexGuard<'_, CState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the op has ended.
    pub fn is_complete(&self) -> bool {
        self.lock().complete
    }

    /// Whether the op has ended and its callbacks have returned
    /// (`rados_aio_is_complete_and_cb`).
    pub fn is_complete_and_cb(&self) -> bool {
        let st = self.lock();
        st.complete && !st.callbacks_pending
    }

    /// The op's result: 0 or a length (a read's), or a negative errno;
    /// 0 before it ends.
    pub fn return_value(&self) -> i32 {
        self.lock().rv
    }

    /// Waits until the op has ended and its callbacks have returned (on
    /// the finisher thread, until the op has ended).
    pub fn wait(&self) {
        let on_finisher = ON_FINISHER.with(Cell::get);
        let mut st = self.lock();
        while !st.complete || (st.callbacks_pending && !on_finisher) {
            st = self.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Ends the op with `rv`; the callbacks go to `finisher`. With no
    /// finisher left (the handle shut down), the callbacks are not called.
    pub(crate) fn finish(self: Arc<Self>, rv: i32, finisher: &Finisher) {
        let has_callbacks = self.on_complete.is_some() || self.on_safe.is_some();
        {
            let mut st = self.lock();
            st.rv = rv;
            st.complete = true;
            st.callbacks_pending = has_callbacks;
        }
        if !has_callbacks {
            self.cond.notify_all();
            return;
        }
        let c = Arc::clone(&self);
        let job: Job = Box::new(move || c.run_callbacks());
        if finisher.submit(job).is_err() {
            self.lock().callbacks_pending = false;
            self.cond.notify_all();
        }
    }

    /// On the finisher: "complete" then "safe", then wakes the waiters.
    fn run_callbacks(&self) {
        let me = (self as *const Completion).cast_mut().cast::<c_void>();
        for cb in [self.on_complete, self.on_safe].into_iter().flatten() {
            // SAFETY: a C function of librados.h's callback type, given
            // the completion and the argument the caller registered.
            #[allow(unsafe_code)]
            unsafe {
                cb(me, self.arg.get())
            };
        }
        self.lock().callbacks_pending = false;
        self.cond.notify_all();
    }
}

pub(crate) type Job = Box<dyn FnOnce() + Send>;

enum FState {
    Idle,
    Running(Sender<Job>, JoinHandle<()>),
    Closed,
}

/// A handle's finisher: one thread, started at the first asynchronous op,
/// running the completions' callbacks in the order their ops ended.
pub struct Finisher {
    state: Mutex<FState>,
}

impl Default for Finisher {
    fn default() -> Self {
        Finisher {
            state: Mutex::new(FState::Idle),
        }
    }
}

impl Finisher {
    fn lock(&self) -> MutexGuard<'_, FState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job`; gives it back if the finisher is closed (or its
    /// thread could not start).
    pub(crate) fn submit(&self, job: Job) -> Result<(), Job> {
        let mut st = self.lock();
        if matches!(*st, FState::Idle) {
            let (tx, rx) = channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name("msgr-rados-fin".to_string())
                .spawn(move || {
                    ON_FINISHER.with(|f| f.set(true));
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            match spawned {
                Ok(h) => *st = FState::Running(tx, h),
                Err(_) => return Err(job),
            }
        }
        match &*st {
            FState::Running(tx, _) => tx.send(job).map_err(|e| e.0),
            _ => Err(job),
        }
    }

    /// Queues `f` to run on the finisher thread after what is queued
    /// (watch callbacks, `rados_watch_flush`'s marker); false if the
    /// finisher is closed (the handle shut down), `f` then dropped unrun.
    pub(crate) fn queue(&self, f: impl FnOnce() + Send + 'static) -> bool {
        self.submit(Box::new(f)).is_ok()
    }

    /// Whether the calling thread is a finisher thread (waiting there for
    /// what the finisher runs would wait for itself).
    pub(crate) fn on_finisher() -> bool {
        ON_FINISHER.with(Cell::get)
    }

    /// Runs what is queued, then ends the thread (`rados_shutdown`). From
    /// the finisher thread itself (a callback shutting the handle down),
    /// the thread ends after that callback, unjoined.
    pub fn shutdown(&self) {
        let old = std::mem::replace(&mut *self.lock(), FState::Closed);
        if let FState::Running(tx, h) = old {
            drop(tx);
            if !ON_FINISHER.with(Cell::get) {
                let _ = h.join();
            }
        }
    }
}

/// The mutations in flight on one I/O context, by submission number, for
/// `rados_aio_flush` (librados's aio_write_list).
#[derive(Default)]
pub struct Writes {
    state: Mutex<(u64, BTreeSet<u64>)>,
    cond: Condvar,
}

impl Writes {
    fn lock(&self) -> MutexGuard<'_, (u64, BTreeSet<u64>)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn begin(&self) -> u64 {
        let mut st = self.lock();
        let seq = st.0;
        st.0 = seq.wrapping_add(1);
        st.1.insert(seq);
        seq
    }

    pub(crate) fn end(&self, seq: u64) {
        self.lock().1.remove(&seq);
        self.cond.notify_all();
    }

    /// The submission number the next mutation gets (what a later
    /// [`Writes::wait_before`] waits for).
    pub(crate) fn mark(&self) -> u64 {
        self.lock().0
    }

    /// Waits until every mutation numbered below `upto` is complete.
    pub(crate) fn wait_before(&self, upto: u64) {
        let mut st = self.lock();
        while st.1.first().is_some_and(|&s| s < upto) {
            st = self.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits until every mutation submitted before the call is complete.
    pub fn flush(&self) {
        let mut st = self.lock();
        let upto = st.0;
        while st.1.first().is_some_and(|&s| s < upto) {
            st = self.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[allow(unsafe_code)]
    unsafe extern "C" fn count(_c: *mut c_void, arg: *mut c_void) {
        assert!(ON_FINISHER.with(Cell::get), "callback off the finisher");
        assert!(arg as usize == 7);
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn callbacks_once_on_the_finisher_before_wait_returns() {
        let f = Finisher::default();
        let c = Arc::new(Completion::new(7 as *mut c_void, Some(count), Some(count)));
        assert!(!c.is_complete());
        Arc::clone(&c).finish(-5, &f);
        c.wait();
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert!(c.is_complete());
        assert_eq!(c.return_value(), -5);
        f.shutdown();
        // Closed: a later completion is complete, its callbacks not run.
        let c2 = Arc::new(Completion::new(7 as *mut c_void, Some(count), None));
        Arc::clone(&c2).finish(3, &f);
        c2.wait();
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(c2.return_value(), 3);
    }

    #[test]
    fn flush_waits_for_earlier_writes_only() {
        let w = Arc::new(Writes::default());
        let a = w.begin();
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || w2.flush());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!t.is_finished());
        let b = w.begin();
        w.end(a);
        t.join().expect("flush returns once the earlier write ends");
        w.end(b);
        w.flush();
    }
}
