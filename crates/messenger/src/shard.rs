//! Shards: where connections run. Each shard is one thread with its own
//! single-threaded tokio runtime, pinned to a core where the OS allows (as
//! crimson's seastar reactors are); a connection's socket, session and
//! dispatch live on one shard, and it reaches another shard only by being
//! moved there whole. A messenger of one shard runs in its caller's
//! runtime instead; so do the logical shards of a messenger built with
//! `Options::shard_threads` false, which tests use to run cross-shard
//! hand-offs deterministically on one paused runtime. Ring shards
//! (`Options::ring_shards`) run their tasks on an executor that waits in
//! the shard's own io_uring (`msgr_uring::exec`) instead of tokio's epoll:
//! one system call per turn submits every connection's sends and receives
//! and waits for the next completions.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

thread_local! {
    /// The shard whose thread this is (None: not a shard's thread).
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Where a shard's tasks are spawned.
enum ShardHandle {
    Tokio(Handle),
    Ring(msgr_uring::exec::Spawner),
}

/// Submission entries of a ring shard's ring. Few: an entry is a cache
/// line, and the queue is written in turn from one end to the other, so
/// with many connections (whose state evicts everything between two
/// messages of one) each line of a long queue is a miss by the time it
/// is written again; a short one stays in cache. A turn that posts more
/// submits as the queue fills.
const RING_ENTRIES: u32 = 256;
/// Completion entries (16 bytes each): room for a turn's completions at
/// 10000 connections, which would otherwise wait in the kernel's
/// overflow list.
const RING_COMPLETIONS: u32 = 16384;

pub(crate) struct Shards {
    /// Each shard's runtime; empty: every shard is the caller's runtime
    /// (tokio's, or the ring-driven loop it runs: `msgr_uring::rt`).
    handles: Vec<ShardHandle>,
    /// How many shards (also when they share the caller's runtime).
    n: usize,
    /// Each shard thread runs until its sender is dropped (`stop`).
    stops: Mutex<Vec<oneshot::Sender<()>>>,
    /// Whether each shard has its own thread.
    threads: bool,
    next: AtomicUsize,
}

impl Shards {
    /// `n` logical shards, all in the runtime the messenger is used in.
    pub fn inline(n: usize) -> Shards {
        Shards {
            handles: Vec::new(),
            n: n.max(1),
            stops: Mutex::new(Vec::new()),
            threads: false,
            next: AtomicUsize::new(0),
        }
    }

    /// `n` shards, each a thread with its own current-thread runtime,
    /// pinned round-robin to the cores this process may use; each counts
    /// the time it is not parked waiting for events in its logger's
    /// `msgr_running_total_time` (as Ceph's workers count theirs after
    /// epoll_wait returns).
    pub fn threads(
        n: usize,
        name: &str,
        counters: &crate::counters::Counters,
    ) -> io::Result<Shards> {
        Shards::start(
            n,
            name,
            counters,
            |_, (parked, unparked), stopped, started| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .on_thread_park(parked)
                    .on_thread_unpark(unparked)
                    .build();
                match rt {
                    Ok(rt) => {
                        started(Ok(ShardHandle::Tokio(rt.handle().clone())));
                        rt.block_on(async {
                            let _ = stopped.await;
                        });
                    }
                    Err(e) => started(Err(e)),
                }
            },
        )
    }

    /// `n` shards as [`Shards::threads`] makes them, each running an
    /// executor that waits in its own io_uring instead of a tokio runtime.
    /// Fails where the system refuses an io_uring.
    pub fn ring_threads(
        n: usize,
        name: &str,
        counters: &crate::counters::Counters,
    ) -> io::Result<Shards> {
        Shards::start(
            n,
            name,
            counters,
            |i, (parked, unparked), stopped, started| {
                // Made on this thread: the ring's one issuer.
                let mut ex = match msgr_uring::exec::Executor::with_completions(
                    RING_ENTRIES,
                    RING_COMPLETIONS,
                ) {
                    Ok(ex) => ex,
                    Err(e) => return started(Err(e)),
                };
                ex.on_park(parked, unparked);
                started(Ok(ShardHandle::Ring(ex.spawner())));
                let run = ex.block_on(async {
                    let _ = stopped.await;
                });
                if let Err(e) = run {
                    tracing::error!(
                        "shard {i}: its io_uring failed ({e}); its connections are dropped"
                    );
                }
            },
        )
    }

    /// Starts `n` shard threads, pinned round-robin to the cores this
    /// process may use, each running `run(index, busy-time hooks, stop,
    /// started)` until `stop` resolves; `run` reports its handle (or why
    /// it could not start) through `started`.
    fn start<R>(
        n: usize,
        name: &str,
        counters: &crate::counters::Counters,
        run: R,
    ) -> io::Result<Shards>
    where
        R: Fn(usize, BusyHooks, oneshot::Receiver<()>, &dyn Fn(io::Result<ShardHandle>))
            + Clone
            + Send
            + 'static,
    {
        let cpus = msgr_sys::allowed_cpus();
        let mut handles = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        for i in 0..n.max(1) {
            let cpu = cpus.get(i.checked_rem(cpus.len()).unwrap_or(0)).copied();
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop, stopped) = oneshot::channel::<()>();
            let hooks = busy_time(counters.shard(i).clone());
            let run = run.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    // Pinned where the OS allows; unpinned it still runs.
                    if let Some(cpu) = cpu {
                        let _ = msgr_sys::pin_current_thread(cpu);
                    }
                    CURRENT.with(|c| c.set(Some(i)));
                    run(i, hooks, stopped, &|h| drop(handle_tx.send(h)));
                })?;
            let handle = handle_rx
                .recv()
                .map_err(|_| io::Error::other("shard thread died at start"))??;
            handles.push(handle);
            stops.push(stop);
        }
        Ok(Shards {
            n: handles.len(),
            handles,
            stops: Mutex::new(stops),
            threads: true,
            next: AtomicUsize::new(0),
        })
    }

    pub fn len(&self) -> usize {
        self.n
    }

    /// `shard` as an index (any number names a shard, modulo their count).
    pub fn index(&self, shard: usize) -> usize {
        shard.checked_rem(self.len()).unwrap_or(0)
    }

    /// Runs `fut` on `shard`.
    pub fn spawn(&self, shard: usize, fut: impl Future<Output = ()> + Send + 'static) {
        match self.handles.get(self.index(shard)) {
            Some(ShardHandle::Tokio(h)) => drop(h.spawn(fut)),
            Some(ShardHandle::Ring(s)) => s.spawn(fut),
            None => drop(msgr_uring::rt::spawn(fut)),
        }
    }

    /// The shard for a connection nobody placed: the caller's, if it runs
    /// on one of ours, else the next in turn.
    pub fn pick(&self) -> usize {
        match CURRENT.with(|c| c.get()) {
            Some(s) if self.threads && s < self.len() => s,
            _ => self.next(),
        }
    }

    /// The next shard in turn.
    pub fn next(&self) -> usize {
        self.index(self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Lets every shard thread end (their runtimes drop what they still
    /// run).
    pub fn stop(&self) {
        self.stops.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// A shard's park and unpark hooks ([`busy_time`]).
type BusyHooks = (
    Box<dyn Fn() + Send + Sync + 'static>,
    Box<dyn Fn() + Send + Sync + 'static>,
);

/// The park and unpark hooks of a shard's runtime that add its busy spells
/// (from unpark to park) to `logger`'s msgr_running_total_time.
fn busy_time(logger: std::sync::Arc<msgr_admin::perf::Logger>) -> BusyHooks {
    thread_local! {
        static WOKE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
    }
    let parked = move || {
        if let Some(woke) = WOKE.with(|w| w.take()) {
            logger.tinc(crate::counters::RUNNING_TOTAL_TIME, woke.elapsed());
        }
    };
    let unparked = || WOKE.with(|w| w.set(Some(std::time::Instant::now())));
    (Box::new(parked), Box::new(unparked))
}
