//! A shard's ring: one io_uring per thread, shared by every connection
//! made on that thread, with the receive pool and the table of operations
//! in flight.
//!
//! - **Batched submission.** Posting an operation only queues its SQE and
//!   wakes the ring's reaper task, which tokio runs after the tasks
//!   already woken on this thread: a turn of the shard that posts for a
//!   hundred connections enters the kernel once.
//! - **On a ring-driven loop** ([`crate::exec`]) there is no reaper and no
//!   ring of our own: the operations go on the loop's ring, tagged as
//!   ours, the loop submits them with its one system call per turn and
//!   hands us their completions.
//! - **Completions.** The ring's fd is readable when completions wait;
//!   the reaper (a task on the shard's runtime, woken through the
//!   runtime's reactor) takes them, hands each to its operation's slot
//!   and wakes the connection waiting on it.
//! - **Ownership of memory.** Everything an SQE points at (a receive's
//!   buffer, a send's chunks, iovecs and msghdr) is owned by the
//!   operation's entry in the table from the post until its last
//!   completion (for a zero-copy send, the notification that the kernel
//!   let go of the pages), whatever happens to the connection meanwhile.
//!   The ring, when dropped, cancels what is still in flight and waits for
//!   it before that memory goes.
//! - **Ownership of the socket.** The entry holds the socket too, so its
//!   fd stays open until the last completion: the kernel resolves an SQE's
//!   fd when it submits it, after the post, and a socket closed meanwhile
//!   would have its number given to the next socket opened, which the
//!   operation would then read or write.
//! - **Registered files.** The ring has a sparse table of registered
//!   files; a stream takes a slot for its socket when it comes to the
//!   ring ([`File`]) and its operations name the slot, not the fd. The
//!   slot is cleared (an `IORING_OP_FILES_UPDATE` to -1) when nothing
//!   names it any more, and reused only after that completed.
//! - **Abandoned completions.** A completion whose half is gone (dropped
//!   with the operation in flight) is disposed of here: the pool buffer a
//!   receive took goes back to the pool.
//! - **The slot, borrowed.** An entry names its half's slot without a
//!   reference of its own while the half is there to see the operation
//!   end (a half holds its slot): posting and completing then write no
//!   reference count, a line of its own at 1000 connections. A half that
//!   goes with its operation in the table hands the entry a reference
//!   first ([`Ring::adopt`], under the table's lock); so does a zero-copy
//!   send, whose notification comes after the half is done with it.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use atomic_waker::AtomicWaker;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use tokio::io::unix::AsyncFd;

use crate::exec;
use crate::file::{self, File, Files, Slots};
use crate::op::{Done, Keep, Slot};
use crate::pool::{Pool, GROUP};
use crate::Config;

/// The user_data of cancel requests, whose completions say nothing we use
/// (an operation's is `generation << 32 | index`, its index below
/// u32::MAX).
const CANCEL: u64 = exec::UNTAGGED;
/// The user_data of a registered file's release: `slot << 32 | RELEASE`
/// (an index no operation has, and a slot below [`GENERATIONS`], so never
/// [`CANCEL`]).
const RELEASE: u64 = u32::MAX as u64;
/// Generations wrap within 24 bits: the top byte of user_data is the
/// loop's tag ([`exec::TAG_SHIFT`]).
const GENERATIONS: u32 = 0xff_ffff;
/// Reaper turns before it lets the shard's other tasks run.
const TURNS: usize = 16;

pub(crate) struct Ring {
    state: Mutex<State>,
    /// On a ring-driven loop, the tag of our operations there (else 0).
    tag: u64,
    /// SQEs wait for the reaper to submit them.
    flush: AtomicBool,
    reaper: AtomicWaker,
    /// The reaper task runs (its runtime is up).
    alive: AtomicBool,
    /// On a loop, its spawner (to reach its ring from other threads).
    spawner: Option<exec::Spawner>,
}

/// Where operations go: a ring of our own (reaped by a task in tokio's
/// reactor) or the ring of the loop this thread runs.
enum Backend {
    Own(Box<IoUring>),
    Loop { id: u64 },
}

struct State {
    // Declared (so dropped) before the pool: the kernel lets go of the
    // pool's memory when the ring is closed. On a loop, the loop holds
    // the Ring until its ring is closed.
    uring: Backend,
    /// None only once leaked (see `Drop`).
    pool: Option<Pool>,
    table: Table,
    /// Wakers of completed operations, woken once the lock is let go.
    woken: Vec<Waker>,
    /// Files whose last operation completed, dropped once the lock is let
    /// go (the last one's drop releases its slot, which takes the lock).
    gone: Vec<Arc<File>>,
}

/// The operations in flight, and the slots of registered files.
#[derive(Default)]
struct Table {
    ops: Vec<Entry>,
    free: Vec<u32>,
    in_flight: usize,
    generation: u32,
    /// The table of registered files' free slots; None: the ring has no
    /// table (the kernel refused one).
    files: Option<Slots>,
}

/// An operation in the table: its slot, what its SQE points at, and the
/// socket it names (open until the last completion).
enum Entry {
    Free,
    Live {
        generation: u32,
        slot: SlotRef,
        keep: Keep,
        /// Holds the socket open (and its slot of registered files).
        _file: Arc<File>,
    },
}

/// How an operation completes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completes {
    /// Once.
    Once,
    /// Once a pool buffer filled, the last without `IORING_CQE_F_MORE` (a
    /// multishot receive).
    Many,
    /// Once for the half, then once more for the table (a zero-copy send:
    /// the notification that the kernel let go of its pages).
    Notified,
}

/// An entry's slot: borrowed from its half, or a reference of the entry's
/// own.
///
/// Borrowed only while the half holds the slot: an operation whose last
/// completion is the one its half waits for (not [`Completes::Notified`])
/// borrows, and a half dropped with it in flight makes the entry's
/// reference its own ([`Ring::adopt`]) before letting go of the slot. The
/// table's lock orders the two: a completion handled before the adoption
/// finds the half's reference still held.
enum SlotRef {
    Borrowed(NonNull<Slot>),
    Owned(Arc<Slot>),
}

// SAFETY: a `Slot` is `Sync` (its state is behind a lock) and the pointer
// is only read under the table's lock, while the half's `Arc` keeps the
// slot alive (see `SlotRef`), whichever thread holds the table.
#[allow(unsafe_code)]
unsafe impl Send for SlotRef {}

impl SlotRef {
    fn get(&self) -> &Slot {
        match self {
            // SAFETY: a borrowed slot is alive while the entry borrows it
            // (see `SlotRef`).
            #[allow(unsafe_code)]
            SlotRef::Borrowed(p) => unsafe { p.as_ref() },
            SlotRef::Owned(s) => s,
        }
    }
}

thread_local! {
    /// This thread's ring (its reaper runs in this thread's runtime).
    static CURRENT: RefCell<Option<Arc<Ring>>> = const { RefCell::new(None) };
}

impl Ring {
    /// The calling thread's ring, made (with `config`'s pool) on first use
    /// in a runtime, or again if the runtime that ran its reaper is gone.
    pub fn current(config: &Config) -> io::Result<Arc<Ring>> {
        CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(r) = c.as_ref().filter(|r| r.alive.load(Ordering::Acquire)) {
                return Ok(r.clone());
            }
            let r = Ring::start(config)?;
            *c = Some(r.clone());
            Ok(r)
        })
    }

    fn start(config: &Config) -> io::Result<Arc<Ring>> {
        if exec::in_executor() {
            return Ring::start_on_loop(config);
        }
        let rt = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        // COOP_TASKRUN: a completion's task work (a receive's copy into a
        // pool buffer) waits for this thread's next system call instead of
        // interrupting it (with TASKRUN_FLAG telling `submit` to collect
        // it). DEFER_TASKRUN would go further, but its deferred work does
        // not wake a poller of the ring's fd, which is how the reaper
        // waits (measured: the bench stalls).
        let uring = IoUring::builder()
            .setup_cqsize(config.entries.saturating_mul(4))
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(config.entries)?;
        let pool = Pool::new(config.pool_buffers, config.buffer_size)?;
        let (addr, count) = pool.ring();
        // SAFETY: the descriptor ring is `count` entries of page-aligned
        // memory owned by `pool`, which lives in the same State as `uring`
        // and is dropped after it (the ring's close unregisters it).
        #[allow(unsafe_code)]
        unsafe {
            uring
                .submitter()
                .register_buf_ring_with_flags(addr, count, GROUP, 0)?
        };
        let files = file::register_table(&uring, config.fixed_files);
        let fd = uring.as_raw_fd();
        let ring = Arc::new(Ring::new(0, Backend::Own(Box::new(uring)), pool, files));
        let ring_fd = RingFd {
            fd,
            _ring: ring.clone(),
        };
        // SAFETY: `ring_fd` holds the ring, whose IoUring owns the fd and
        // closes it only when the ring is dropped: the fd stays open, and
        // the same, for the AsyncFd's whole life.
        #[allow(unsafe_code)]
        let ready =
            unsafe { AsyncFd::register_with_interest(ring_fd, tokio::io::Interest::READABLE) }
                .map_err(io::Error::from)?;
        let alive = Alive(ring.clone());
        rt.spawn(async move {
            let alive = alive;
            std::future::poll_fn(|cx| alive.0.poll_reap(cx, &ready)).await;
        });
        Ok(ring)
    }

    /// The ring on this thread's loop: the pool registered on the loop's
    /// ring, our completions handed to us by the loop.
    fn start_on_loop(config: &Config) -> io::Result<Arc<Ring>> {
        exec::attach(|tag, id| {
            let pool = Pool::new(config.pool_buffers, config.buffer_size)?;
            let (addr, count) = pool.ring();
            // SAFETY: the descriptor ring is `count` entries of page-aligned
            // memory owned by `pool`, which lives in this Ring; the loop
            // holds the Ring (attached) until its ring is closed.
            #[allow(unsafe_code)]
            exec::with_ring(id, |r| unsafe {
                r.submitter()
                    .register_buf_ring_with_flags(addr, count, GROUP, 0)
            })
            .ok_or_else(|| io::Error::other("io_uring: no loop on this thread"))??;
            let files =
                exec::with_ring(id, |r| file::register_table(r, config.fixed_files)).flatten();
            let mut ring = Ring::new(tag, Backend::Loop { id }, pool, files);
            ring.spawner = exec::Spawner::current();
            Ok(Arc::new(ring))
        })
    }

    /// A ring with nothing in flight, posting through `uring` with `tag`.
    fn new(tag: u64, uring: Backend, pool: Pool, files: Option<Slots>) -> Ring {
        Ring {
            tag,
            state: Mutex::new(State {
                uring,
                pool: Some(pool),
                table: Table {
                    files,
                    ..Table::default()
                },
                woken: Vec::new(),
                gone: Vec::new(),
            }),
            flush: AtomicBool::new(false),
            reaper: AtomicWaker::new(),
            alive: AtomicBool::new(true),
            spawner: None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts `sqe`, whose memory `keep` owns, on `file` for `slot`;
    /// returns its user_data (to cancel it). The slot must be idle; it is
    /// `Posted` with `waker` after this. The table holds `file` until the
    /// last completion.
    ///
    /// # Safety
    /// Every pointer in `sqe` points into memory that `keep` owns (heap
    /// memory, which does not move with `keep`) or into the ring's pool,
    /// and the only fd it names is [`File::fd`] of `file`. Unless the
    /// operation [`Completes::Notified`], the table borrows `slot`: the
    /// caller holds it until the operation's last completion was handed
    /// to it, or calls [`Ring::adopt`] before letting go.
    #[allow(unsafe_code)]
    pub unsafe fn post(
        &self,
        slot: &Arc<Slot>,
        keep: Keep,
        file: &Arc<File>,
        sqe: squeue::Entry,
        waker: &Waker,
        completes: Completes,
    ) -> io::Result<u64> {
        if !self.alive.load(Ordering::Acquire) {
            return Err(io::Error::other("io_uring: the ring's runtime is gone"));
        }
        let sqe = match file.fixed_on(self)? {
            Some(_) => sqe.flags(squeue::Flags::FIXED_FILE),
            None => sqe,
        };
        let mut st = self.lock();
        let t = &mut st.table;
        t.generation = t.generation.wrapping_add(1) & GENERATIONS;
        let generation = t.generation;
        let idx = match t.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(t.ops.len())
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .ok_or_else(|| io::Error::other("io_uring: too many operations"))?;
                t.ops.push(Entry::Free);
                i
            }
        };
        let user_data = self.tag | (u64::from(generation) << 32) | u64::from(idx);
        // SAFETY: the caller vouches for the SQE's pointers, and `keep`
        // now lives in the table until the last completion.
        unsafe { st.push(&sqe.user_data(user_data))? };
        slot.posted(waker, completes == Completes::Many);
        let slot = match completes {
            Completes::Notified => SlotRef::Owned(slot.clone()),
            Completes::Once | Completes::Many => SlotRef::Borrowed(NonNull::from(&**slot)),
        };
        if let Some(e) = st.table.ops.get_mut(idx as usize) {
            *e = Entry::Live {
                generation,
                slot,
                keep,
                _file: file.clone(),
            };
        }
        st.table.in_flight += 1;
        drop(st);
        self.wake_reaper();
        Ok(user_data)
    }

    /// The half holding `slot` is letting go of it, and its operation
    /// `user_data` may still be in the table: if the entry there borrows
    /// the slot, it takes a reference of its own.
    pub fn adopt(&self, user_data: u64, slot: &Arc<Slot>) {
        let mut st = self.lock();
        let (idx, generation) = (user_data as u32, (user_data >> 32) as u32 & GENERATIONS);
        if let Some(Entry::Live {
            generation: g,
            slot: s @ SlotRef::Borrowed(_),
            ..
        }) = st.table.ops.get_mut(idx as usize)
        {
            if *g == generation && std::ptr::eq(s.get(), &**slot) {
                *s = SlotRef::Owned(slot.clone());
            }
        }
    }

    /// Asks the kernel to cancel operation `user_data` (it completes with
    /// ECANCELED, or as it would have if it was done already).
    /// A loop's ring takes SQEs only from its own thread: from another
    /// (a stream moved to another shard), the cancel goes to the loop as
    /// a task.
    pub fn cancel(self: &Arc<Self>, user_data: u64) {
        self.push_control(cancel(self.tag, user_data));
    }

    /// Queues `sqe`, which points at no memory but static memory and whose
    /// completion is the table's (a cancel, a release). A loop's ring
    /// takes SQEs only from its own thread: from another (a stream moved
    /// to another shard), it goes to the loop as a task.
    fn push_control(self: &Arc<Self>, sqe: squeue::Entry) {
        // SAFETY: as this function's contract says.
        #[allow(unsafe_code)]
        let pushed = unsafe { self.lock().push(&sqe) };
        match pushed {
            Ok(()) => self.wake_reaper(),
            Err(_) => {
                if let Some(spawner) = &self.spawner {
                    let ring = self.clone();
                    spawner.spawn(async move {
                        // SAFETY: as above.
                        #[allow(unsafe_code)]
                        let _ = unsafe { ring.lock().push(&sqe) };
                    });
                }
            }
        }
    }

    /// Runs `f` on bytes `off..off + len` of pool buffer `bid`, then gives
    /// the buffer back if `done`.
    pub fn with_buffer<R>(
        &self,
        bid: u16,
        off: u32,
        len: u32,
        done: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> io::Result<R> {
        let mut st = self.lock();
        let pool = st.pool.as_mut();
        let r = pool.as_ref().and_then(|p| p.bytes(bid, off, len)).map(f);
        if done {
            if let Some(p) = pool {
                p.give_back(bid);
            }
        }
        r.ok_or_else(|| io::Error::other(format!("io_uring: buffer {bid} out of the pool")))
    }

    pub fn give_back(&self, bid: u16) {
        if let Some(p) = self.lock().pool.as_mut() {
            p.give_back(bid);
        }
    }

    /// Our own ring's reaper submits what was posted; a loop submits at
    /// the end of its turn by itself.
    fn wake_reaper(&self) {
        if self.tag == 0 && !self.flush.swap(true, Ordering::AcqRel) {
            self.reaper.wake();
        }
    }

    /// The reaper's work: submit what was posted, hand out completions,
    /// and wait for more of either.
    fn poll_reap(&self, cx: &mut Context<'_>, ready: &AsyncFd<RingFd>) -> Poll<()> {
        for _ in 0..TURNS {
            self.reaper.register(cx.waker());
            self.flush.store(false, Ordering::Release);
            let (woken, gone) = self.turn();
            self.after(woken, gone);
            match ready.poll_read_ready(cx) {
                Poll::Ready(Ok(mut g)) => g.clear_ready(),
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending if !self.flush.load(Ordering::Acquire) => return Poll::Pending,
                Poll::Pending => {}
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Submits and takes every completion; returns the wakers to wake
    /// and the files the table let go of.
    fn turn(&self) -> (Vec<Waker>, Vec<Arc<File>>) {
        let mut st = self.lock();
        let State {
            uring: Backend::Own(uring),
            pool,
            table,
            woken,
            gone,
        } = &mut *st
        else {
            return (Vec::new(), Vec::new());
        };
        // EBUSY/EAGAIN (completions overflowing): the SQEs stay queued and
        // go next turn, after these completions are taken.
        let _ = uring.submit();
        let (mut woken, mut gone) = (std::mem::take(woken), std::mem::take(gone));
        let mut stops = Vec::new();
        for cqe in uring.completion() {
            let cqe = (cqe.user_data(), cqe.result(), cqe.flags());
            if let Some(w) = table.complete(pool.as_mut(), &mut stops, &mut gone, cqe) {
                woken.push(w);
            }
        }
        if !stops.is_empty() {
            for ud in stops {
                let _ = st.push_cancel(self.tag, ud);
            }
            self.wake_reaper();
        }
        (woken, gone)
    }

    /// With the lock let go: wakes the wakers of completed operations and
    /// drops the files the table let go of (the last holder of one
    /// releases its slot, which takes the lock); then keeps both vectors
    /// for the next turn.
    fn after(&self, woken: Vec<Waker>, mut gone: Vec<Arc<File>>) {
        woken.iter().for_each(Waker::wake_by_ref);
        gone.clear();
        let mut st = self.lock();
        st.woken = recycle(woken);
        st.gone = gone;
    }
}

/// A cancel of operation `user_data` (tagged with `tag` if it is not),
/// whose own completion says nothing we use.
fn cancel(tag: u64, user_data: u64) -> squeue::Entry {
    opcode::AsyncCancel::new(tag | user_data)
        .build()
        .user_data(tag | CANCEL)
}

fn recycle<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

impl Table {
    /// Hands `cqe` to its operation: the result to the slot (with the memory
    /// it owned, unless a zero-copy notification is still to come), and the
    /// entry back to the free list on its last completion, its file into
    /// `gone` (to drop once the lock is let go). A completion whose half is
    /// gone gives back the pool buffer it took. A multishot receive whose
    /// half leaves too much unseen goes in `stops`, to cancel. A released
    /// slot of registered files is free again.
    fn complete(
        &mut self,
        mut pool: Option<&mut Pool>,
        stops: &mut Vec<u64>,
        gone: &mut Vec<Arc<File>>,
        (user_data, res, flags): (u64, i32, u32),
    ) -> Option<Waker> {
        if user_data == CANCEL {
            return None;
        }
        let idx = user_data as u32;
        let generation = (user_data >> 32) as u32 & GENERATIONS;
        if u64::from(idx) == RELEASE {
            // A slot the kernel failed to clear still holds its file: it is
            // not used again (nor can it be named: no File has it).
            if let (Some(files), true) = (self.files.as_mut(), res >= 0) {
                files.put(generation);
            }
            return None;
        }
        let entry = self.ops.get_mut(idx as usize)?;
        if !matches!(entry, Entry::Live { generation: g, .. } if *g == generation) {
            return None;
        }
        let last = !cqueue::more(flags);
        let notif = cqueue::notif(flags);
        let waker = if notif {
            None
        } else {
            let Entry::Live { slot, keep, .. } = entry else {
                return None;
            };
            let keep = if last {
                std::mem::take(keep)
            } else {
                Keep::Nothing
            };
            let done = Done { res, flags, keep };
            let bid = done.pool_buffer();
            if let (Some(p), Some(bid)) = (pool.as_deref_mut(), bid) {
                p.taken(bid);
            }
            match slot.get().complete(done) {
                Ok(c) => {
                    if c.stop {
                        stops.push(user_data);
                    }
                    c.waker
                }
                Err(_abandoned) => {
                    if let (Some(p), Some(bid)) = (pool, bid) {
                        p.give_back(bid);
                    }
                    None
                }
            }
        };
        if last {
            if let Entry::Live { _file, .. } = std::mem::replace(entry, Entry::Free) {
                gone.push(_file);
            }
            self.free.push(idx);
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        waker
    }
}

impl State {
    /// Queues a cancel of operation `user_data` (tagged with `tag` if it
    /// is not).
    fn push_cancel(&mut self, tag: u64, user_data: u64) -> io::Result<()> {
        // SAFETY: a cancel points at no memory.
        #[allow(unsafe_code)]
        unsafe {
            self.push(&cancel(tag, user_data))
        }
    }

    /// Queues `sqe`, submitting first if the queue is full.
    ///
    /// # Safety
    /// As [`Ring::post`].
    #[allow(unsafe_code)]
    unsafe fn push(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        match &mut self.uring {
            Backend::Own(uring) => {
                if uring.submission().is_full() {
                    uring.submit()?;
                }
                // SAFETY: as the caller vouches.
                unsafe { uring.submission().push(sqe) }
                    .map_err(|_| io::Error::other("io_uring: submission queue full"))
            }
            // SAFETY: as the caller vouches; the user_data carries our tag.
            Backend::Loop { id } => unsafe { exec::push(*id, sqe) },
        }
    }
}

impl Drop for State {
    /// Cancels what is in flight and waits for it (a bounded wait), so the
    /// memory the operations own outlives the kernel's use of it. What
    /// does not complete in time is leaked rather than freed under the
    /// kernel. On a loop, the loop did the waiting before its ring closed
    /// (it holds us until then); what is still in flight is leaked.
    fn drop(&mut self) {
        if let (Backend::Own(_), true) = (&self.uring, self.table.in_flight > 0) {
            let all = opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(CANCEL);
            // SAFETY: a cancel points at no memory.
            #[allow(unsafe_code)]
            let _ = unsafe { self.push(&all) };
            let ts = types::Timespec::new().nsec(10_000_000);
            let args = types::SubmitArgs::new().timespec(&ts);
            for _ in 0..100 {
                let State {
                    uring: Backend::Own(uring),
                    pool,
                    table,
                    ..
                } = self
                else {
                    break;
                };
                if table.in_flight == 0 {
                    break;
                }
                let _ = uring.submitter().submit_with_args(1, &args);
                for cqe in uring.completion() {
                    let cqe = (cqe.user_data(), cqe.result(), cqe.flags());
                    // The ring is going: its files' slots go with it.
                    let (stops, gone) = (&mut Vec::new(), &mut Vec::new());
                    if let Some(w) = table.complete(pool.as_mut(), stops, gone, cqe) {
                        w.wake();
                    }
                }
            }
        }
        if self.table.in_flight > 0 {
            std::mem::forget(std::mem::take(&mut self.table.ops));
            std::mem::forget(self.pool.take());
        }
    }
}

impl Files for Ring {
    /// A slot of the table of registered files with `fd` in it (None: the
    /// ring has no table, every slot is taken, or this is not the ring's
    /// thread, which on a loop is the only one that may register).
    fn register(&self, fd: RawFd) -> Option<u32> {
        let mut st = self.lock();
        let slot = st.table.files.as_mut()?.take()?;
        let registered = match &st.uring {
            Backend::Own(uring) => uring.submitter().register_files_update(slot, &[fd]).ok(),
            Backend::Loop { id } => exec::with_ring(*id, |r| {
                r.submitter().register_files_update(slot, &[fd]).ok()
            })
            .flatten(),
        };
        if registered != Some(1) {
            st.table.files.as_mut()?.put(slot);
            return None;
        }
        Some(slot)
    }

    /// Clears `slot` (an `IORING_OP_FILES_UPDATE` to -1, on the ring's own
    /// thread); it is free again once that completed.
    fn release(self: Arc<Self>, slot: u32) {
        let sqe = file::clear(slot).user_data(self.tag | u64::from(slot) << 32 | RELEASE);
        self.push_control(sqe);
    }
}

impl exec::Completions for Ring {
    fn complete(&self, cqes: &[(u64, i32, u32)]) {
        let mut st = self.lock();
        let State {
            pool,
            table,
            woken,
            gone,
            ..
        } = &mut *st;
        let (mut woken, mut gone) = (std::mem::take(woken), std::mem::take(gone));
        let mut stops = Vec::new();
        for &cqe in cqes {
            if let Some(w) = table.complete(pool.as_mut(), &mut stops, &mut gone, cqe) {
                woken.push(w);
            }
        }
        for ud in stops {
            let _ = st.push_cancel(self.tag, ud);
        }
        drop(st);
        self.after(woken, gone);
    }

    fn in_flight(&self) -> usize {
        self.lock().table.in_flight
    }

    fn closed(&self) {
        self.alive.store(false, Ordering::Release);
    }
}

/// Marks the ring dead when its reaper task ends (its runtime dropped it).
struct Alive(Arc<Ring>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::Release);
    }
}

/// The ring's fd, for the reactor; holding the ring keeps it open (the
/// IoUring owns and closes it).
struct RingFd {
    fd: RawFd,
    _ring: Arc<Ring>,
}

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

#[cfg(test)]
impl Ring {
    /// Operations posted and not completed.
    pub fn in_flight(&self) -> usize {
        self.lock().table.in_flight
    }

    /// Free slots of the table of registered files (None: no table).
    pub fn files_free(&self) -> Option<u32> {
        self.lock().table.files.as_ref().map(Slots::free)
    }

    /// Pool buffers completions handed out and not given back.
    pub fn lent_out(&self) -> u16 {
        self.lock().pool.as_ref().map_or(0, Pool::lent_out)
    }
}
