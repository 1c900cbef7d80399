//! Running a handle's work on its runtime from a C caller's thread.

use std::future::Future;

use tokio::runtime::Handle;

/// Runs `fut` on the runtime behind `rt` and waits for it on the calling
/// thread, which may be any thread, even one of another runtime: the
/// future never runs on the caller's thread, so a caller inside a tokio
/// runtime does not make tokio panic (it only blocks that thread, as
/// librados's calls do). Fails with -ENOTCONN if the runtime is gone (a
/// handle used after `rados_shutdown`).
pub fn block_on<F>(rt: &Handle, fut: F) -> Result<F::Output, i32>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| -libc::ENOTCONN)
}
