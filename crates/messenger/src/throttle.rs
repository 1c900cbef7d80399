//! A throttle on messages and bytes held (Ceph's Throttle, used as the
//! policy throttlers and the dispatch throttle): taking budget waits while
//! the throttle is full, and a connection that waits stops reading its
//! socket, which pushes back on the sender. Taking and releasing are
//! lock-free; only a full throttle involves a wake-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Limits on messages and bytes in flight.
#[derive(Debug)]
pub struct Throttle {
    max_messages: u64,
    max_bytes: u64,
    messages: AtomicU64,
    bytes: AtomicU64,
    waiters: AtomicU64,
    released: Notify,
}

impl Throttle {
    pub fn new(max_messages: u64, max_bytes: u64) -> Arc<Throttle> {
        Arc::new(Throttle {
            max_messages,
            max_bytes,
            messages: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            released: Notify::new(),
        })
    }

    /// What is held now: (messages, bytes).
    pub fn current(&self) -> (u64, u64) {
        (
            self.messages.load(Ordering::Acquire),
            self.bytes.load(Ordering::Acquire),
        )
    }

    fn try_take(&self, bytes: u64) -> bool {
        // Messages first, then bytes; undo the first if the second fails.
        let fits_msgs = self
            .messages
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                (m < self.max_messages).then_some(m + 1)
            })
            .is_ok();
        if !fits_msgs {
            return false;
        }
        // A message larger than the whole budget passes alone, as in Ceph.
        let fits_bytes = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b + bytes <= self.max_bytes || b == 0).then_some(b + bytes)
            })
            .is_ok();
        if !fits_bytes {
            self.messages.fetch_sub(1, Ordering::AcqRel);
        }
        fits_bytes
    }

    /// Takes one message of `bytes`, waiting while the throttle is full.
    pub async fn take(self: &Arc<Self>, bytes: u64) -> Permit {
        if !self.try_take(bytes) {
            self.waiters.fetch_add(1, Ordering::AcqRel);
            loop {
                let notified = self.released.notified();
                if self.try_take(bytes) {
                    break;
                }
                notified.await;
            }
            self.waiters.fetch_sub(1, Ordering::AcqRel);
        }
        Permit {
            throttle: Some(self.clone()),
            bytes,
        }
    }

    fn release(&self, bytes: u64) {
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.messages.fetch_sub(1, Ordering::AcqRel);
        if self.waiters.load(Ordering::Acquire) > 0 {
            self.released.notify_waiters();
        }
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
