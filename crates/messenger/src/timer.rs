//! Timers on the loop a shard runs (tokio's timer wheel, or the
//! ring-driven loop's heap: `msgr_uring::rt` chooses), in the messenger's
//! instants (tokio's, so a test's paused time holds). A timer is made on
//! the shard that polls it (a driver makes one per stay on a shard).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use msgr_uring::rt;
use tokio::time::Instant;

pub(crate) use msgr_uring::rt::Elapsed;

/// A deadline on the current shard's loop. One pointer (a driver holds
/// one, and its size is every connection's).
pub(crate) struct Sleep(Box<rt::Sleep>);

impl Sleep {
    /// Ready at `deadline`, on the calling thread's loop.
    pub fn until(deadline: Instant) -> Sleep {
        Sleep(Box::new(rt::sleep_until(deadline.into_std())))
    }

    /// Whether it is the ring-driven loop's.
    #[cfg(test)]
    fn on_ring(&self) -> bool {
        self.0.on_ring()
    }

    /// Ready after `d`.
    pub fn after(d: Duration) -> Sleep {
        Sleep::until(crate::after(d))
    }

    /// Moves the deadline.
    pub fn reset(&mut self, deadline: Instant) {
        self.0.reset(deadline.into_std());
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut *self.get_mut().0).poll(cx)
    }
}

/// `f`'s output, or [`Elapsed`] if it is not done by `deadline`.
pub(crate) async fn timeout_at<F: Future>(deadline: Instant, f: F) -> Result<F::Output, Elapsed> {
    rt::timeout_at(deadline.into_std(), f).await
}

/// `f`'s output, or [`Elapsed`] if it is not done within `d`.
pub(crate) async fn timeout<F: Future>(d: Duration, f: F) -> Result<F::Output, Elapsed> {
    timeout_at(crate::after(d), f).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_uring::exec;

    /// On a ring-driven loop the timers are the loop's: a timeout fires
    /// there, and a sleep moved earlier fires at its new deadline.
    #[test]
    fn timers_run_on_a_ring_driven_loop() {
        let mut ex = exec::Executor::new(8).expect("an io_uring");
        let (timed_out, slept) = ex
            .block_on(async {
                let start = std::time::Instant::now();
                let never = std::future::pending::<()>();
                let r = timeout(Duration::from_millis(10), never).await;
                let mut s = Sleep::after(Duration::from_secs(3600));
                assert!(s.on_ring());
                s.reset(crate::after(Duration::from_millis(5)));
                s.await;
                (r, start.elapsed())
            })
            .expect("the loop ran");
        assert_eq!(timed_out, Err(Elapsed));
        assert!(slept >= Duration::from_millis(15), "{slept:?}");
        assert!(slept < Duration::from_secs(3600));
    }
}
