//! Timers on the loop a shard runs: tokio's timer wheel, or the ring-driven
//! loop's heap (`msgr_uring::exec`) on a shard that waits in its io_uring.
//! A timer is made on the shard that polls it (a driver makes one per stay
//! on a shard).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use msgr_uring::exec;
use tokio::time::Instant;

/// A deadline on the current shard's loop. One pointer (a driver holds
/// one, and its size is every connection's).
pub(crate) struct Sleep(Box<Kind>);

enum Kind {
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Ring(exec::Sleep),
}

impl Sleep {
    /// Ready at `deadline`, on the calling thread's loop.
    pub fn until(deadline: Instant) -> Sleep {
        Sleep(Box::new(match exec::in_executor() {
            true => Kind::Ring(exec::sleep_until(deadline.into_std())),
            false => Kind::Tokio(Box::pin(tokio::time::sleep_until(deadline))),
        }))
    }

    /// Whether it is the ring-driven loop's.
    #[cfg(test)]
    fn on_ring(&self) -> bool {
        matches!(*self.0, Kind::Ring(_))
    }

    /// Ready after `d`.
    pub fn after(d: Duration) -> Sleep {
        Sleep::until(crate::after(d))
    }

    /// Moves the deadline.
    pub fn reset(&mut self, deadline: Instant) {
        match &mut *self.0 {
            Kind::Tokio(s) => s.as_mut().reset(deadline),
            Kind::Ring(s) => s.reset(deadline.into_std()),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut *self.get_mut().0 {
            Kind::Tokio(s) => s.as_mut().poll(cx),
            Kind::Ring(s) => Pin::new(s).poll(cx),
        }
    }
}

/// The deadline passed first.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// `f`'s output, or [`Elapsed`] if it is not done by `deadline`.
pub(crate) async fn timeout_at<F: Future>(deadline: Instant, f: F) -> Result<F::Output, Elapsed> {
    let mut f = std::pin::pin!(f);
    let mut sleep = Sleep::until(deadline);
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

/// `f`'s output, or [`Elapsed`] if it is not done within `d`.
pub(crate) async fn timeout<F: Future>(d: Duration, f: F) -> Result<F::Output, Elapsed> {
    timeout_at(crate::after(d), f).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
