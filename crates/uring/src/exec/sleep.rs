//! A deadline on the loop that polls it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::LOCAL;

/// A future that is ready at its deadline, on the executor of the thread
/// that polls it. Polled on a thread without one, it is ready at once: an
/// early wake-up, which a timer's user checks against its own deadlines
/// anyway (a timer belongs to the loop it was made for).
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    /// The loop holding its registration and its id there.
    registered: Option<(u64, u64)>,
}

/// A [`Sleep`] until `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        registered: None,
    }
}

impl Sleep {
    /// When it is ready.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline (earlier or later); the next poll registers it.
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// Lets go of its registration, if this thread's loop holds it.
    fn forget(&mut self) {
        if let Some((at, id)) = self.registered.take() {
            LOCAL.with(|l| {
                if let Some(local) = l.borrow().as_ref().filter(|l| l.id == at) {
                    local.timers.borrow_mut().cancel(id);
                }
            });
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if Instant::now() >= this.deadline {
            this.forget();
            return Poll::Ready(());
        }
        let deadline = this.deadline;
        let registered = this.registered;
        let now_registered = LOCAL.with(|l| {
            l.borrow().as_ref().map(|local| {
                let mine = registered.filter(|(at, _)| *at == local.id).map(|r| r.1);
                let id = local.timers.borrow_mut().set(mine, deadline, cx.waker());
                (local.id, id)
            })
        });
        match now_registered {
            Some(r) => {
                this.registered = Some(r);
                Poll::Pending
            }
            None => {
                this.registered = None;
                Poll::Ready(())
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.forget();
    }
}
