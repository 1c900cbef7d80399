//! A throttle on messages and bytes held (Ceph's Throttle, used as the
//! policy throttlers and the dispatch throttle): taking budget waits while
//! the throttle is full, and a connection that waits stops reading its
//! socket, which pushes back on the sender.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Debug)]
struct State {
    messages: u64,
    bytes: u64,
}

/// Limits on messages and bytes in flight.
#[derive(Debug)]
pub struct Throttle {
    max_messages: u64,
    max_bytes: u64,
    state: Mutex<State>,
    released: Notify,
}

impl Throttle {
    pub fn new(max_messages: u64, max_bytes: u64) -> Arc<Throttle> {
        Arc::new(Throttle {
            max_messages,
            max_bytes,
            state: Mutex::new(State {
                messages: 0,
                bytes: 0,
            }),
            released: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is held now: (messages, bytes).
    pub fn current(&self) -> (u64, u64) {
        let s = self.state();
        (s.messages, s.bytes)
    }

    fn try_take(&self, bytes: u64) -> bool {
        let mut s = self.state();
        // A message larger than the whole budget passes alone, as in Ceph.
        let fits =
            s.messages < self.max_messages && (s.bytes + bytes <= self.max_bytes || s.bytes == 0);
        if fits {
            s.messages += 1;
            s.bytes += bytes;
        }
        fits
    }

    /// Takes one message of `bytes`, waiting while the throttle is full.
    pub async fn take(self: &Arc<Self>, bytes: u64) -> Permit {
        loop {
            let notified = self.released.notified();
            if self.try_take(bytes) {
                return Permit {
                    throttle: Some(self.clone()),
                    bytes,
                };
            }
            notified.await;
        }
    }

    fn release(&self, bytes: u64) {
        {
            let mut s = self.state();
            s.messages -= 1;
            s.bytes -= bytes;
        }
        self.released.notify_waiters();
    }
}

/// Budget held until dropped.
#[derive(Debug, Default)]
pub struct Permit {
    throttle: Option<Arc<Throttle>>,
    bytes: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(t) = self.throttle.take() {
            t.release(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn waits_until_released() {
        let t = Throttle::new(2, 100);
        let a = t.take(60).await;
        let _b = t.take(30).await;
        assert_eq!(t.current(), (2, 90));
        let t2 = t.clone();
        let waiter = tokio::spawn(async move { t2.take(10).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "two messages already held");
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(t.current(), (2, 40));
        drop(c);
        // Oversized messages pass alone.
        drop(_b);
        let big = t.take(1000).await;
        assert_eq!(t.current(), (1, 1000));
        drop(big);
    }
}
