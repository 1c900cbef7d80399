//! An I/O context's asynchronous ops (`Io::aio`, `Io::flush`): an op
//! started on the handle's runtime and ended, exactly once, into its
//! completion (see `aio.rs` for completions and the finisher).

use std::future::Future;
use std::sync::Arc;

use msgr_rados::RadosError;

use crate::aio::{Completion, Finisher, Writes};
use crate::cluster::Io;
use crate::errno::errno_of;

/// Ends an op exactly once: with its result, or, if its task is dropped
/// unfinished (the handle shut down), with -ENOTCONN.
struct Done {
    c: Option<Arc<Completion>>,
    finisher: Arc<Finisher>,
    writes: Option<(Arc<Writes>, u64)>,
    rv: i32,
}

impl Drop for Done {
    fn drop(&mut self) {
        // Complete first: what rados_aio_flush waited for is complete
        // when it returns.
        if let Some(c) = self.c.take() {
            c.finish(self.rv, &self.finisher);
        }
        if let Some((w, seq)) = self.writes.take() {
            w.end(seq);
        }
    }
}

impl Io {
    /// Starts op `f` of a copy of this context on the handle's runtime;
    /// when it ends, `deliver` makes its result the completion's return
    /// value (copying outputs to the caller's memory first). A mutation
    /// (`write`) is waited for by [`Io::flush`].
    ///
    /// What `rados_aio_write_full` then `rados_aio_wait_for_complete` do:
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use rados::{Cluster, Completion};
    ///
    /// # fn f(cluster: &Cluster) -> Result<(), i32> {
    /// let io = cluster.ioctx("test")?;
    /// let c = Arc::new(Completion::new(std::ptr::null_mut(), None, None));
    /// io.aio(
    ///     Arc::clone(&c),
    ///     true,
    ///     |ctx| async move { ctx.write_full(b"greeting", "hello".into()).await },
    ///     |()| 0,
    /// );
    /// c.wait();
    /// assert_eq!(c.return_value(), 0);
    /// # Ok(()) }
    /// ```
    pub fn aio<F, Fut, T, D>(&self, c: Arc<Completion>, write: bool, f: F, deliver: D)
    where
        F: FnOnce(msgr_rados::IoCtx) -> Fut,
        Fut: Future<Output = Result<T, RadosError>> + Send + 'static,
        T: Send + 'static,
        D: FnOnce(T) -> i32 + Send + 'static,
    {
        let writes = write.then(|| {
            let w = Arc::clone(&self.writes);
            let seq = w.begin();
            (w, seq)
        });
        let mut done = Done {
            c: Some(c),
            finisher: Arc::clone(&self.finisher),
            writes,
            rv: -libc::ENOTCONN,
        };
        let fut = f(self.ctx());
        // A runtime shut down drops the task, and `done` with it.
        let task = self.rt.spawn(async move {
            done.rv = match fut.await {
                Ok(v) => deliver(v),
                Err(e) => errno_of(&e),
            };
            drop(done);
        });
        drop(task);
    }

    /// Completes `c` (result 0) once the mutations submitted on this
    /// context so far are complete (`rados_aio_flush_async`), waiting on
    /// a thread of its own (neither a runtime worker nor the finisher);
    /// -EAGAIN if that thread cannot start.
    pub fn flush_async(&self, c: Arc<Completion>) -> Result<(), i32> {
        let (writes, finisher) = (Arc::clone(&self.writes), Arc::clone(&self.finisher));
        let upto = writes.mark();
        std::thread::Builder::new()
            .name("msgr-rados-flush".to_string())
            .spawn(move || {
                writes.wait_before(upto);
                c.finish(0, &finisher);
            })
            .map(drop)
            .map_err(|_| -libc::EAGAIN)
    }

    /// Waits for the mutations submitted on this context so far
    /// (`rados_aio_flush`).
    pub fn flush(&self) {
        self.writes.flush();
    }
}
