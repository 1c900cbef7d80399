//! A throttle on messages and bytes held (Ceph's Throttle, used as the
//! policy throttlers and the dispatch throttle): taking budget waits while
//! the throttle is full, and a connection that waits stops reading its
//! socket, which pushes back on the sender. Taking and releasing are
//! lock-free; only a full throttle involves a wake-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Messages held are counted in the top bits of one atomic word, bytes in
/// the low [`BYTE_BITS`]: taking is one compare-and-swap, releasing one
/// subtraction, for both counts at once.
const BYTE_BITS: u32 = 44;
const BYTE_MASK: u64 = (1 << BYTE_BITS) - 1;
const ONE_MESSAGE: u64 = 1 << BYTE_BITS;
/// The most messages a throttle can count (2^20 - 2); a larger limit is
/// this one.
pub const MAX_COUNTED_MESSAGES: u64 = (u64::MAX >> BYTE_BITS) - 1;
/// The most bytes a throttle can count (16 TiB); a larger limit is this one,
/// and a message's size is capped at it.
pub const MAX_COUNTED_BYTES: u64 = BYTE_MASK;

/// Limits on messages and bytes in flight.
#[derive(Debug)]
pub struct Throttle {
    max_messages: u64,
    max_bytes: u64,
    /// Messages held (high bits) and bytes held (low bits).
    held: AtomicU64,
    waiters: AtomicU64,
    released: Notify,
}

impl Throttle {
    /// A throttle of at most `max_messages` messages and `max_bytes`
    /// bytes held at once.
    pub fn new(max_messages: u64, max_bytes: u64) -> Arc<Throttle> {
        Arc::new(Throttle {
            max_messages: max_messages.min(MAX_COUNTED_MESSAGES),
            max_bytes: max_bytes.min(MAX_COUNTED_BYTES),
            held: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            released: Notify::new(),
        })
    }

    /// The most bytes it lets be held.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// What is held now: (messages, bytes).
    pub fn current(&self) -> (u64, u64) {
        let h = self.held.load(Ordering::Acquire);
        (h >> BYTE_BITS, h & BYTE_MASK)
    }

    fn try_take(&self, bytes: u64) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                let (m, b) = (h >> BYTE_BITS, h & BYTE_MASK);
                // A message larger than the whole budget passes alone, as
                // in Ceph.
                // Both counts stay in their bits: messages below
                // max_messages (< 2^20 - 1), bytes within max_bytes or, for
                // a message alone, its own capped size (< 2^44).
                let fits =
                    m < self.max_messages && (b.saturating_add(bytes) <= self.max_bytes || b == 0);
                fits.then(|| h.checked_add(ONE_MESSAGE)?.checked_add(bytes))
                    .flatten()
            })
            .is_ok()
    }

    /// Takes one message of `bytes` if there is room now.
    pub fn try_take_permit(self: &Arc<Self>, bytes: u64) -> Option<Permit> {
        let bytes = bytes.min(MAX_COUNTED_BYTES);
        self.try_take(bytes).then(|| Permit {
            throttle: Some(self.clone()),
            bytes,
        })
    }

    /// Takes one message of `bytes`, waiting while the throttle is full.
    pub async fn take(self: &Arc<Self>, bytes: u64) -> Permit {
        let bytes = bytes.min(MAX_COUNTED_BYTES);
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
        // What take() added: one message and at most MAX_COUNTED_BYTES.
        self.held
            .fetch_sub(ONE_MESSAGE.saturating_add(bytes), Ordering::AcqRel);
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

    #[tokio::test]
    async fn counts_share_one_word_without_overflow() {
        // Unlimited in the caller's terms: capped at what the word counts.
        let t = Throttle::new(u64::MAX, u64::MAX);
        let a = t.take(MAX_COUNTED_BYTES - 10).await;
        let b = t.take(10).await;
        assert_eq!(t.current(), (2, MAX_COUNTED_BYTES));
        drop((a, b));
        assert_eq!(t.current(), (0, 0));
        // A message larger than the countable bytes counts as that many.
        let huge = t.take(u64::MAX).await;
        assert_eq!(t.current(), (1, MAX_COUNTED_BYTES));
        drop(huge);
        // Messages fill up to the cap without spilling into the bytes.
        let t = Throttle::new(3, 1000);
        let held: Vec<_> = [t.take(1).await, t.take(2).await, t.take(3).await].into();
        assert_eq!(t.current(), (3, 6));
        assert!(!t.try_take(0), "the fourth message waits");
        drop(held);
        assert_eq!(t.current(), (0, 0));
    }
}
