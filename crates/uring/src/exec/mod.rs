//! A thread's event loop driven by its own io_uring: the executor a
//! ring-driven shard runs its tasks on, where tokio's would wait in
//! epoll.
//!
//! - **One system call per turn.** A turn runs the tasks that were woken,
//!   fires the timers that are due, then enters the kernel once: to submit
//!   what the turn queued on the ring and, when nothing is left to run,
//!   to wait for the next completion or the next timer (the wait's
//!   timeout, `IORING_ENTER_EXT_ARG`; no timer SQEs).
//! - **The ring is this thread's.** `SINGLE_ISSUER` and `DEFER_TASKRUN`:
//!   the kernel runs completions' task work only when this thread enters,
//!   never interrupting it, and `TASKRUN_FLAG` says when such work waits
//!   so that a turn with tasks still to run enters only then.
//! - **Wakes from other threads** (a task spawned, or a waker used, on
//!   another thread) go through a queue under a lock and, only when the
//!   loop waits or is about to, a write to an eventfd whose read is always
//!   posted on the ring. A wake on the loop's own thread is a push on its
//!   local queue.
//! - **Timers** are a heap of deadlines on the loop; a [`Sleep`] is
//!   registered while it waits and forgotten when dropped.
//! - **Operations of others on the ring.** The io_uring transport posts
//!   its receives and sends on the loop's ring (`Completions`: each
//!   user of the ring has a tag in the top byte of its operations'
//!   user_data, and the loop hands it its completions in batches), and
//!   [`Ready`] waits for a socket's readiness (connect, accept) with a
//!   poll on the ring.
//!
//! Tasks are `Send` (they are spawned from other threads, as a
//! messenger's shards are); a task that ends is dropped on the loop, and
//! the tasks left when the executor is dropped are dropped with it. Then
//! the operations still in flight are cancelled and waited for before the
//! ring closes, so the memory they point into outlives the kernel's use.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

mod polls;
mod ready;
mod sleep;
mod timers;

pub use ready::{ready, Ready};
pub use sleep::{sleep_until, Sleep};

use polls::Polls;
use timers::Timers;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The top byte of an operation's user_data names whose it is: 0 the
/// loop's own, n the n-th [`Completions`] attached.
pub(crate) const TAG_SHIFT: u32 = 56;
/// The user_data bits a [`Completions`] has for itself.
pub(crate) const UNTAGGED: u64 = (1 << TAG_SHIFT) - 1;
/// The loop's own operations: the eventfd's read, cancels, and readiness
/// polls (`POLL | id`).
const WAKEUP: u64 = 1;
const CANCEL: u64 = 2;
const POLL: u64 = 1 << 32;
/// Tasks run per turn before the loop looks at the ring again (a task
/// that keeps waking itself cannot starve completions and timers).
const BUDGET: usize = 256;

/// A spawned future and whether it waits in a run queue.
struct Task {
    future: Mutex<Option<BoxFuture>>,
    /// In a run queue (set by a wake, cleared just before a poll): a task
    /// is queued once however often it is woken meanwhile.
    scheduled: AtomicBool,
    home: Arc<Shared>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            self.home.schedule(self.clone());
        }
    }
}

/// What other threads reach: the injection queue and the eventfd.
struct Shared {
    injected: Mutex<Vec<Arc<Task>>>,
    /// The loop waits in the kernel or is about to: a wake from another
    /// thread must write the eventfd.
    parked: AtomicBool,
    /// The executor is gone: what is spawned now is dropped at once.
    closed: AtomicBool,
    eventfd: OwnedFd,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn schedule(self: &Arc<Self>, task: Arc<Task>) {
        let pushed = LOCAL.with(|l| match l.borrow().as_ref() {
            Some(local) if Arc::ptr_eq(&local.shared, self) => {
                local.queue.borrow_mut().push_back(task.clone());
                true
            }
            _ => false,
        });
        if !pushed {
            self.inject(task);
        }
    }

    fn inject(&self, task: Arc<Task>) {
        if self.closed.load(Ordering::Acquire) {
            // Dropped here, not on the loop: the loop is gone.
            drop(lock(&task.future).take());
            return;
        }
        lock(&self.injected).push(task);
        self.unpark();
    }

    /// Wakes the loop if it waits (or is about to: it looks at the
    /// injection queue after saying it parks).
    fn unpark(&self) {
        if self.parked.swap(false, Ordering::SeqCst) {
            let one = 1u64.to_ne_bytes();
            // A full counter (never: the loop reads it each wakeup) or a
            // closed fd would only lose a wakeup the loop's next turn finds.
            // SAFETY: writes 8 bytes from a live buffer to our eventfd.
            #[allow(unsafe_code)]
            let _ = unsafe { libc::write(self.eventfd.as_raw_fd(), one.as_ptr().cast(), 8) };
        }
    }
}

/// The loop's own state, reached from its thread's tasks (wakes, timers).
struct Local {
    /// This loop among every loop the process made (a [`Sleep`] knows
    /// which loop holds its registration).
    id: u64,
    shared: Arc<Shared>,
    // Declared before `handlers` (so dropped first): the ring closes
    // before the memory its users' operations point into can go.
    ring: RefCell<IoUring>,
    /// The ring's other users, by tag (index + 1).
    handlers: RefCell<Vec<Arc<dyn Completions>>>,
    polls: RefCell<Polls>,
    queue: RefCell<VecDeque<Arc<Task>>>,
    timers: RefCell<Timers>,
    /// Every task not finished, so that dropping the executor drops them.
    tasks: RefCell<Vec<Weak<Task>>>,
    /// The table's length at which finished tasks are swept out (twice
    /// what was live at the last sweep: amortized, however tasks come and
    /// go).
    sweep_at: std::cell::Cell<usize>,
}

/// Loop ids, never reused.
static LOOPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// The loop this thread runs, while it runs.
    static LOCAL: RefCell<Option<Rc<Local>>> = const { RefCell::new(None) };
}

/// Whether the calling thread runs an [`Executor`] (timers and spawns
/// made here belong to it).
pub fn in_executor() -> bool {
    LOCAL.with(|l| l.borrow().is_some())
}

/// Spawns tasks on an [`Executor`] from any thread.
#[derive(Clone)]
pub struct Spawner {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner").finish_non_exhaustive()
    }
}

impl Spawner {
    /// The spawner of the executor the calling thread runs, if it runs
    /// one (as tokio's `Handle::try_current`).
    pub fn current() -> Option<Spawner> {
        LOCAL.with(|l| {
            l.borrow().as_ref().map(|local| Spawner {
                shared: local.shared.clone(),
            })
        })
    }

    /// Runs `fut` on the executor's thread; dropped unrun if the executor
    /// is gone.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let task = Arc::new(Task {
            future: Mutex::new(Some(Box::pin(fut))),
            scheduled: AtomicBool::new(true),
            home: self.shared.clone(),
        });
        self.shared.schedule(task);
    }
}

/// A single-threaded executor whose thread waits in its io_uring. Made and
/// run on the thread it serves (the ring's single issuer).
pub struct Executor {
    local: Rc<Local>,
    /// The eventfd read's buffer, written by the kernel while posted.
    wakeup_buf: Box<[u8; 8]>,
    wakeup_posted: bool,
    /// Called before the loop waits in the kernel and after it wakes (a
    /// shard's busy time).
    on_park: Option<Box<dyn Fn()>>,
    on_unpark: Option<Box<dyn Fn()>>,
    /// Completions taken this turn, handed out once the ring is let go of.
    done: Vec<(u64, i32, u32)>,
}

impl Executor {
    /// A loop with a ring of `entries` submission entries (completion
    /// entries: four times as many).
    pub fn new(entries: u32) -> io::Result<Executor> {
        Executor::with_completions(entries, entries.saturating_mul(4))
    }

    /// A loop with a ring of `entries` submission and `completions`
    /// completion entries. A turn's submissions beyond `entries` are
    /// submitted as the queue fills; completions beyond `completions`
    /// wait in the kernel's overflow list until the loop reaps.
    pub fn with_completions(entries: u32, completions: u32) -> io::Result<Executor> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(completions)
            .build(entries)?;
        // SAFETY: eventfd returns a new descriptor we own, or -1.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just made and nothing else owns it.
        #[allow(unsafe_code)]
        let eventfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let shared = Arc::new(Shared {
            injected: Mutex::new(Vec::new()),
            parked: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            eventfd,
        });
        Ok(Executor {
            local: Rc::new(Local {
                id: LOOPS.fetch_add(1, Ordering::Relaxed),
                shared,
                ring: RefCell::new(ring),
                handlers: RefCell::new(Vec::new()),
                polls: RefCell::new(Polls::default()),
                queue: RefCell::new(VecDeque::new()),
                timers: RefCell::new(Timers::default()),
                tasks: RefCell::new(Vec::new()),
                sweep_at: std::cell::Cell::new(64),
            }),
            wakeup_buf: Box::new([0; 8]),
            wakeup_posted: false,
            on_park: None,
            on_unpark: None,
            done: Vec::new(),
        })
    }

    /// Calls `park` before each wait in the kernel and `unpark` after it.
    pub fn on_park(&mut self, park: impl Fn() + 'static, unpark: impl Fn() + 'static) {
        self.on_park = Some(Box::new(park));
        self.on_unpark = Some(Box::new(unpark));
    }

    /// What spawns on this executor from any thread.
    pub fn spawner(&self) -> Spawner {
        Spawner {
            shared: self.local.shared.clone(),
        }
    }

    /// Runs the loop until `main` is done (the spawned tasks meanwhile).
    /// An error is the ring's: the kernel refused a submission or a wait.
    pub fn block_on<F: Future>(&mut self, main: F) -> io::Result<F::Output> {
        let _entered = Entered::new(self.local.clone())?;
        let mut main = std::pin::pin!(main);
        let main_waker = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            shared: self.local.shared.clone(),
        });
        let waker = Waker::from(main_waker.clone());
        loop {
            if main_waker.woken.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(out) = main.as_mut().poll(&mut Context::from_waker(&waker)) {
                    return Ok(out);
                }
            }
            self.run_tasks();
            let now = Instant::now();
            let due = self.local.timers.borrow_mut().due(now);
            due.into_iter().for_each(Waker::wake);
            self.enter(&main_waker.woken, now)?;
        }
    }

    /// Takes what other threads spawned or woke, then polls up to
    /// [`BUDGET`] tasks.
    fn run_tasks(&mut self) {
        let injected = std::mem::take(&mut *lock(&self.local.shared.injected));
        {
            let mut q = self.local.queue.borrow_mut();
            q.extend(injected);
        }
        for _ in 0..BUDGET {
            let Some(task) = self.local.queue.borrow_mut().pop_front() else {
                break;
            };
            self.adopt(&task);
            task.scheduled.store(false, Ordering::Release);
            let waker = Waker::from(task.clone());
            let mut slot = lock(&task.future);
            let done = match slot.as_mut() {
                Some(fut) => fut
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_ready(),
                None => false,
            };
            if done {
                // Dropped here, on the loop, with the lock let go after.
                let fut = slot.take();
                drop(slot);
                drop(fut);
            }
        }
    }

    /// Keeps a task in the table of live ones the first time it runs here.
    fn adopt(&self, task: &Arc<Task>) {
        // A task the table holds has a weak reference: none, a new one.
        if Arc::weak_count(task) == 0 {
            let mut tasks = self.local.tasks.borrow_mut();
            if tasks.len() >= self.local.sweep_at.get() {
                tasks.retain(|t| t.strong_count() > 0);
                self.local
                    .sweep_at
                    .set(tasks.len().saturating_mul(2).max(64));
            }
            tasks.push(Arc::downgrade(task));
        }
    }

    /// The turn's one system call: submits what is queued and, when
    /// nothing is left to run (no task queued, `main` not woken), waits
    /// for a completion, a wakeup or the next timer. Does not enter at all
    /// when busy with nothing to submit or reap.
    fn enter(&mut self, main: &AtomicBool, now: Instant) -> io::Result<()> {
        let idle = self.local.queue.borrow().is_empty() && !main.load(Ordering::Acquire);
        if !self.wakeup_posted {
            let read = opcode::Read::new(
                types::Fd(self.local.shared.eventfd.as_raw_fd()),
                self.wakeup_buf.as_mut_ptr(),
                8,
            )
            .build()
            .user_data(WAKEUP);
            // SAFETY: the eventfd (in `Shared`, which the executor holds)
            // and `wakeup_buf` (heap memory that does not move) outlive the
            // read: the executor's drop cancels it and waits for its
            // completion (or leaks the buffer) before either goes.
            #[allow(unsafe_code)]
            let pushed = unsafe { self.local.ring.borrow_mut().submission().push(&read) }.is_ok();
            self.wakeup_posted = pushed;
        }
        let shared = &self.local.shared;
        let mut ring = self.local.ring.borrow_mut();
        let result = if idle {
            // Said before looking: a wake from another thread after the
            // look finds `parked` and writes the eventfd.
            shared.parked.store(true, Ordering::SeqCst);
            if !lock(&shared.injected).is_empty() || main.load(Ordering::SeqCst) {
                shared.parked.store(false, Ordering::SeqCst);
                ring.submit().map(drop)
            } else {
                let next = self.local.timers.borrow_mut().next();
                if let Some(f) = &self.on_park {
                    f();
                }
                let r = match next {
                    Some(at) => {
                        let wait = at.saturating_duration_since(now);
                        let ts = types::Timespec::from(wait.max(Duration::from_micros(1)));
                        let args = types::SubmitArgs::new().timespec(&ts);
                        ring.submitter().submit_with_args(1, &args).map(drop)
                    }
                    None => ring.submit_and_wait(1).map(drop),
                };
                if let Some(f) = &self.on_unpark {
                    f();
                }
                shared.parked.store(false, Ordering::SeqCst);
                r
            }
        } else if !ring.submission().is_empty() || ring.submission().taskrun() {
            ring.submit().map(drop)
        } else {
            Ok(())
        };
        drop(ring);
        match result {
            Ok(()) => {}
            // The wait's timeout, or a signal: the next turn looks again.
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        self.reap();
        Ok(())
    }

    /// Cancels the eventfd's read and waits for its completion, so that
    /// the kernel is done with its buffer before the buffer goes; if the
    /// ring cannot say, the buffer is leaked rather than freed under it.
    fn cancel_wakeup(&mut self) {
        if !self.wakeup_posted {
            return;
        }
        let cancel = opcode::AsyncCancel::new(WAKEUP).build().user_data(CANCEL);
        // SAFETY: a cancel points at no memory.
        #[allow(unsafe_code)]
        let pushed = unsafe { self.local.ring.borrow_mut().submission().push(&cancel) }.is_ok();
        for _ in 0..if pushed { 100 } else { 0 } {
            if self.local.ring.borrow_mut().submit_and_wait(1).is_err() {
                break;
            }
            self.reap();
            if !self.wakeup_posted {
                return;
            }
        }
        std::mem::forget(std::mem::replace(&mut self.wakeup_buf, Box::new([0; 8])));
    }

    /// Cancels every operation of the ring's users and waits (bounded)
    /// until none is in flight; what does not complete in time is leaked
    /// with its user rather than freed under the kernel.
    fn drain_users(&mut self) {
        let busy = |l: &Local| l.handlers.borrow().iter().any(|h| h.in_flight() > 0);
        if !busy(&self.local) {
            return;
        }
        let all = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(CANCEL);
        // SAFETY: a cancel points at no memory.
        #[allow(unsafe_code)]
        let _ = unsafe { self.local.ring.borrow_mut().submission().push(&all) };
        let ts = types::Timespec::new().nsec(10_000_000);
        for _ in 0..100 {
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self
                .local
                .ring
                .borrow_mut()
                .submitter()
                .submit_with_args(1, &args);
            self.reap();
            if !busy(&self.local) {
                return;
            }
        }
        for h in self.local.handlers.borrow().iter() {
            std::mem::forget(h.clone());
        }
    }

    /// Takes every completion and hands each to its owner: the loop's own
    /// here, the others' to their [`Completions`] in one batch each.
    fn reap(&mut self) {
        let mut done = std::mem::take(&mut self.done);
        done.extend(
            self.local
                .ring
                .borrow_mut()
                .completion()
                .map(|c: cqueue::Entry| (c.user_data(), c.result(), c.flags())),
        );
        if done.is_empty() {
            self.done = done;
            return;
        }
        // Sorted by tag, each user's in the order they came.
        done.sort_by_key(|&(ud, _, _)| ud >> TAG_SHIFT);
        let mut rest = &mut done[..];
        while let Some(&(ud, _, _)) = rest.first() {
            let tag = ud >> TAG_SHIFT;
            let n = rest.iter().take_while(|c| c.0 >> TAG_SHIFT == tag).count();
            let (batch, after) = rest.split_at_mut(n);
            for c in batch.iter_mut() {
                c.0 &= UNTAGGED;
            }
            if tag == 0 {
                for &(ud, res, _) in batch.iter() {
                    match ud {
                        WAKEUP => self.wakeup_posted = false,
                        ud if ud & POLL != 0 => {
                            let w = self.local.polls.borrow_mut().done(ud & !POLL, res);
                            if let Some(w) = w {
                                w.wake();
                            }
                        }
                        _ => {}
                    }
                }
            } else {
                let h = usize::try_from(tag - 1)
                    .ok()
                    .and_then(|i| self.local.handlers.borrow().get(i).cloned());
                if let Some(h) = h {
                    h.complete(batch);
                }
            }
            rest = after;
        }
        done.clear();
        self.done = done;
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.local.shared.closed.store(true, Ordering::Release);
        self.cancel_wakeup();
        // What was spawned and never ran, then every live task: their
        // futures dropped here (on the loop, so that what they post, a
        // cancel, goes on its ring), whoever still holds a waker.
        let injected = std::mem::take(&mut *lock(&self.local.shared.injected));
        let queued: Vec<_> = self.local.queue.borrow_mut().drain(..).collect();
        let live: Vec<_> = self.local.tasks.borrow_mut().drain(..).collect();
        {
            let _entered = Entered::new(self.local.clone());
            for t in injected.iter().chain(queued.iter()) {
                drop(lock(&t.future).take());
            }
            for t in live.iter().filter_map(Weak::upgrade) {
                drop(lock(&t.future).take());
            }
            self.drain_users();
        }
        for h in self.local.handlers.borrow().iter() {
            h.closed();
        }
    }
}

/// The loop installed as this thread's while it runs.
struct Entered;

impl Entered {
    fn new(local: Rc<Local>) -> io::Result<Entered> {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            if l.is_some() {
                return Err(io::Error::other(
                    "io_uring executor: this thread already runs one (nested block_on)",
                ));
            }
            *l = Some(local);
            Ok(Entered)
        })
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let local = LOCAL.with(|l| l.borrow_mut().take());
        drop(local);
    }
}

/// `block_on`'s future's waker: a flag, and the loop woken when it is
/// used from another thread.
struct MainWaker {
    woken: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.shared.unpark();
    }
}

/// A user of the loop's ring (the io_uring transport's operations table):
/// it tags its operations' user_data with the tag [`attach`] gave it and
/// takes their completions here.
pub(crate) trait Completions {
    /// Completions of this user's operations, in the order they came, with
    /// the tag cleared from their user_data.
    fn complete(&self, cqes: &[(u64, i32, u32)]);
    /// Operations posted and not completed: the executor, when dropped,
    /// cancels them and waits for none before its ring closes.
    fn in_flight(&self) -> usize;
    /// The executor is gone: nothing can be posted any more.
    fn closed(&self);
}

/// Attaches a user to the calling thread's loop: `make` builds it given
/// its tag (already shifted into the top byte) and the loop's id. Fails
/// off a loop or with 255 users already.
pub(crate) fn attach<T: Completions + 'static>(
    make: impl FnOnce(u64, u64) -> io::Result<Arc<T>>,
) -> io::Result<Arc<T>> {
    let local = LOCAL
        .with(|l| l.borrow().clone())
        .ok_or_else(|| io::Error::other("io_uring: no executor on this thread"))?;
    let n = local.handlers.borrow().len();
    let tag = u64::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(1))
        .filter(|&t| t < 256)
        .ok_or_else(|| io::Error::other("io_uring: the loop has 255 users of its ring"))?;
    let user = make(tag << TAG_SHIFT, local.id)?;
    local.handlers.borrow_mut().push(user.clone());
    Ok(user)
}

/// Queues `sqe` on loop `loop_id`'s ring, which must be the calling
/// thread's (the ring has one issuer), submitting first if the queue is
/// full. The loop submits it at the end of its turn.
///
/// # Safety
/// Every pointer in `sqe` stays valid until its last completion, and its
/// user_data carries the caller's tag.
#[allow(unsafe_code)]
pub(crate) unsafe fn push(loop_id: u64, sqe: &squeue::Entry) -> io::Result<()> {
    LOCAL.with(|l| {
        let l = l.borrow();
        let local = l.as_ref().filter(|l| l.id == loop_id).ok_or_else(|| {
            io::Error::other("io_uring: posted from a thread other than its ring's loop")
        })?;
        let mut ring = local.ring.borrow_mut();
        if ring.submission().is_full() {
            ring.submit()?;
        }
        // SAFETY: as the caller vouches.
        let pushed = unsafe { ring.submission().push(sqe) };
        pushed.map_err(|_| io::Error::other("io_uring: submission queue full"))
    })
}

/// Runs `f` with loop `loop_id`'s ring (to register buffers or files on
/// it); None unless the calling thread runs that loop (the ring's one
/// issuer).
pub(crate) fn with_ring<R>(loop_id: u64, f: impl FnOnce(&mut IoUring) -> R) -> Option<R> {
    LOCAL.with(|l| {
        l.borrow()
            .as_ref()
            .filter(|local| local.id == loop_id)
            .map(|local| f(&mut local.ring.borrow_mut()))
    })
}

#[cfg(test)]
mod tests;
