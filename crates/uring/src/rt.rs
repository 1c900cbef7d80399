//! Where a task, a timer or blocking work runs: on the calling thread's
//! ring-driven loop ([`exec`]) when it runs one, else in tokio's runtime.
//! Code that runs on either (a messenger's shard, a monitor client, a
//! RADOS client) spawns, sleeps and times out through here, so that on a
//! ring loop nothing waits in tokio's reactor or hops to its threads.
//!
//! The choice is made per call from the calling thread: a thread inside
//! [`Handle::enter`] uses that handle, a thread running an [`exec`] loop
//! uses it, and any other thread uses tokio's current runtime (tokio's
//! own functions then, with their panics outside a runtime).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;
use tokio::sync::oneshot;

use crate::exec;

thread_local! {
    /// The handle [`Handle::enter`] set on this thread, while it holds.
    static ENTERED: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

/// A runtime to spawn on: tokio's, or a ring-driven loop's.
#[derive(Clone, Debug)]
pub enum Handle {
    /// A tokio runtime.
    Tokio(tokio::runtime::Handle),
    /// A ring-driven loop ([`exec::Executor`]).
    Ring(exec::Spawner),
}

impl Handle {
    /// The calling thread's: the one it entered, the loop it runs, or
    /// tokio's current runtime; None outside all three.
    pub fn try_current() -> Option<Handle> {
        if let Some(h) = ENTERED.with(|e| e.borrow().clone()) {
            return Some(h);
        }
        if let Some(s) = exec::Spawner::current() {
            return Some(Handle::Ring(s));
        }
        tokio::runtime::Handle::try_current()
            .ok()
            .map(Handle::Tokio)
    }

    /// Runs `fut` on this runtime; its output comes through the handle
    /// (dropping the handle lets the task run on, as tokio's does).
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Handle::Tokio(h) => JoinHandle(Join::Tokio(h.spawn(fut))),
            Handle::Ring(s) => {
                let (tx, rx) = oneshot::channel();
                let abort = Arc::new(Abort::default());
                let flag = abort.clone();
                let finished = Finished(abort.clone());
                s.spawn(async move {
                    let _finished = finished;
                    let mut fut = std::pin::pin!(fut);
                    let out = std::future::poll_fn(|cx| {
                        if flag.is_set(cx) {
                            return Poll::Ready(None);
                        }
                        fut.as_mut().poll(cx).map(Some)
                    })
                    .await;
                    if let Some(out) = out {
                        let _ = tx.send(out);
                    }
                });
                JoinHandle(Join::Ring { rx, abort })
            }
        }
    }

    /// Runs `f` where it may block: tokio's blocking pool, or, for a ring
    /// loop, a thread of its own (blocking work is rare here: placing
    /// requests on a large map). `f` runs inside this handle (its spawns
    /// come back here).
    pub fn spawn_blocking<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self {
            Handle::Tokio(h) => JoinHandle(Join::Tokio(h.spawn_blocking(f))),
            Handle::Ring(_) => {
                let (tx, rx) = oneshot::channel();
                let home = self.clone();
                let abort = Arc::new(Abort::default());
                let finished = Finished(abort.clone());
                let spawned = std::thread::Builder::new()
                    .name("msgr-blocking".into())
                    .spawn(move || {
                        let _finished = finished;
                        let _entered = home.enter();
                        let _ = tx.send(f());
                    });
                // No thread (the system's limit): `tx` is gone with the
                // closure, and the handle says the work did not finish.
                drop(spawned);
                JoinHandle(Join::Ring { rx, abort })
            }
        }
    }

    /// Makes this the calling thread's handle for this module's functions
    /// until the guard drops (tokio's own keep tokio's current runtime).
    pub fn enter(&self) -> EnterGuard {
        let before = ENTERED.with(|e| e.borrow_mut().replace(self.clone()));
        EnterGuard { before }
    }
}

/// What [`Handle::enter`] returns: the thread's handle until dropped.
pub struct EnterGuard {
    before: Option<Handle>,
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let before = self.before.take();
        ENTERED.with(|e| *e.borrow_mut() = before);
    }
}

/// Runs `fut` on the calling thread's runtime ([`Handle::try_current`]).
///
/// # Panics
/// Outside any runtime, as `tokio::spawn` does.
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Handle::try_current() {
        Some(h) => h.spawn(fut),
        None => JoinHandle(Join::Tokio(tokio::spawn(fut))),
    }
}

/// Runs `f` where it may block ([`Handle::spawn_blocking`]) for the
/// calling thread's runtime.
///
/// # Panics
/// Outside any runtime, as `tokio::task::spawn_blocking` does.
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match Handle::try_current() {
        Some(h) => h.spawn_blocking(f),
        None => JoinHandle(Join::Tokio(tokio::task::spawn_blocking(f))),
    }
}

/// A spawned task's output, or why there is none.
pub struct JoinHandle<T>(Join<T>);

enum Join<T> {
    Tokio(tokio::task::JoinHandle<T>),
    Ring {
        rx: oneshot::Receiver<T>,
        abort: Arc<Abort>,
    },
}

impl<T> JoinHandle<T> {
    /// Stops the task: it is dropped at its next turn (not while it runs).
    pub fn abort(&self) {
        match &self.0 {
            Join::Tokio(h) => h.abort(),
            Join::Ring { abort, .. } => abort.set(),
        }
    }
}

impl<T> JoinHandle<T> {
    /// Whether the task is done (finished, aborted or gone).
    pub fn is_finished(&self) -> bool {
        match &self.0 {
            Join::Tokio(h) => h.is_finished(),
            Join::Ring { abort, .. } => abort.finished.load(Ordering::Acquire),
        }
    }
}

/// Marks a ring task finished when dropped (with its future, however it
/// ends).
struct Finished(Arc<Abort>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.finished.store(true, Ordering::Release);
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle").finish_non_exhaustive()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Join::Tokio(h) => Pin::new(h).poll(cx).map(|r| {
                r.map_err(|e| JoinError {
                    cancelled: e.is_cancelled(),
                })
            }),
            Join::Ring { rx, abort } => Pin::new(rx).poll(cx).map(|r| {
                r.map_err(|_| JoinError {
                    cancelled: abort.aborted.load(Ordering::Acquire),
                })
            }),
        }
    }
}

/// A task that did not finish: aborted, or it panicked (or its loop
/// ended first).
#[derive(Debug)]
pub struct JoinError {
    cancelled: bool,
}

impl JoinError {
    /// Whether it was aborted.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cancelled {
            true => f.write_str("the task was aborted"),
            false => f.write_str("the task panicked or its runtime ended before it finished"),
        }
    }
}

impl std::error::Error for JoinError {}

/// Tasks spawned on the caller's runtime whose outputs come in the order
/// they finish (as tokio's `JoinSet`); the tasks still running when it
/// drops are aborted.
pub struct JoinSet<T> {
    handles: Vec<JoinHandle<()>>,
    tx: tokio::sync::mpsc::UnboundedSender<Option<T>>,
    rx: tokio::sync::mpsc::UnboundedReceiver<Option<T>>,
    running: usize,
}

impl<T: Send + 'static> Default for JoinSet<T> {
    fn default() -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        JoinSet {
            handles: Vec::new(),
            tx,
            rx,
            running: 0,
        }
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `fut` on the calling thread's runtime ([`spawn`]).
    pub fn spawn(&mut self, fut: impl Future<Output = T> + Send + 'static) {
        /// Reports the task's end: its output, or None if it never came
        /// (the task unwound or was dropped).
        struct Report<T>(tokio::sync::mpsc::UnboundedSender<Option<T>>, Option<T>);
        impl<T> Drop for Report<T> {
            fn drop(&mut self) {
                let _ = self.0.send(self.1.take());
            }
        }
        let tx = self.tx.clone();
        self.handles.retain(|h| !h.is_finished());
        self.handles.push(spawn(async move {
            let mut report = Report(tx, None);
            report.1 = Some(fut.await);
        }));
        self.running = self.running.saturating_add(1);
    }

    /// How many have not finished.
    pub fn len(&self) -> usize {
        self.running
    }

    /// Whether every task finished.
    pub fn is_empty(&self) -> bool {
        self.running == 0
    }

    /// The next task's output as it finishes; None once all have.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        if self.running == 0 {
            return None;
        }
        // The set holds a sender itself: the channel never closes here.
        let out = self.rx.recv().await?;
        self.running = self.running.saturating_sub(1);
        Some(out.ok_or(JoinError { cancelled: false }))
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        for h in &self.handles {
            h.abort();
        }
    }
}

/// A ring task's abort: a flag and the task's waker.
#[derive(Default)]
struct Abort {
    aborted: AtomicBool,
    waker: AtomicWaker,
    /// The task's future was dropped (it ended, one way or another).
    finished: AtomicBool,
}

impl Abort {
    fn set(&self) {
        self.aborted.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Whether it was aborted; registers `cx` to hear when it is.
    fn is_set(&self, cx: &Context<'_>) -> bool {
        if self.aborted.load(Ordering::Acquire) {
            return true;
        }
        self.waker.register(cx.waker());
        self.aborted.load(Ordering::Acquire)
    }
}

/// A deadline on the calling thread's loop: tokio's timer wheel, or the
/// ring-driven loop's heap. Made on the thread that polls it.
pub enum Sleep {
    /// In tokio's runtime.
    Tokio(Pin<Box<tokio::time::Sleep>>),
    /// On a ring-driven loop.
    Ring(exec::Sleep),
}

impl Sleep {
    /// Whether it is the ring-driven loop's.
    pub fn on_ring(&self) -> bool {
        matches!(self, Sleep::Ring(_))
    }

    /// Moves the deadline.
    pub fn reset(&mut self, deadline: Instant) {
        match self {
            Sleep::Tokio(s) => s.as_mut().reset(deadline.into()),
            Sleep::Ring(s) => s.reset(deadline),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Sleep::Tokio(s) => s.as_mut().poll(cx),
            Sleep::Ring(s) => Pin::new(s).poll(cx),
        }
    }
}

/// Ready at `deadline`, on the calling thread's loop.
pub fn sleep_until(deadline: Instant) -> Sleep {
    match exec::in_executor() {
        true => Sleep::Ring(exec::sleep_until(deadline)),
        false => Sleep::Tokio(Box::pin(tokio::time::sleep_until(deadline.into()))),
    }
}

/// Ready after `d`, on the calling thread's loop (tokio's clock when in
/// tokio, so a test's paused time holds).
pub fn sleep(d: Duration) -> Sleep {
    match exec::in_executor() {
        true => Sleep::Ring(exec::sleep_until(msgr_protocol::later(Instant::now(), d))),
        false => Sleep::Tokio(Box::pin(tokio::time::sleep(d))),
    }
}

/// The deadline passed first.
#[derive(Debug, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline passed")
    }
}

impl std::error::Error for Elapsed {}

/// `f`'s output, or [`Elapsed`] if it is not done by `deadline`.
pub async fn timeout_at<F: Future>(deadline: Instant, f: F) -> Result<F::Output, Elapsed> {
    race(f, sleep_until(deadline)).await
}

/// `f`'s output, or [`Elapsed`] if it is not done within `d`.
pub async fn timeout<F: Future>(d: Duration, f: F) -> Result<F::Output, Elapsed> {
    race(f, sleep(d)).await
}

/// `f`'s output unless `sleep` is ready first (`f` is polled first).
async fn race<F: Future>(f: F, mut sleep: Sleep) -> Result<F::Output, Elapsed> {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = f.as_mut().poll(cx) {
            return Poll::Ready(Ok(r));
        }
        match Pin::new(&mut sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests;
