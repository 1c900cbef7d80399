//! A throttle on messages and bytes held (Ceph's Throttle, used as the
//! policy throttlers and the dispatch throttle): taking budget waits while
//! the throttle is full, and a connection that waits stops reading its
//! socket, which pushes back on the sender. Taking and releasing are
//! lock-free; only a full throttle involves a wake-up.
//!
//! Per shard (crimson keeps its throttles per shard for the same reason):
//! a messenger's shards take budget from the shared count a chunk at a
//! time into a lease of their own, a cache line no other shard writes, and
//! serve their messages from it; a message's release goes back into the
//! lease it was taken through. A message thus writes only its shard's
//! line, and the shared count moves once per chunk. The bound stays exact:
//! budget in a lease counts as held. A lease keeps at most two chunks and
//! gives the rest back. When the throttle is full, a waiter takes back
//! every lease's unused budget; while anybody waits, releases go straight
//! back to the shared count and no lease takes a new chunk.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, SeqCst};
use std::sync::Arc;

use tokio::sync::Notify;

/// Messages held are counted in the top bits of one atomic word, bytes in
/// the low [`BYTE_BITS`]: taking is one compare-and-swap, releasing one
/// addition or subtraction, for both counts at once.
const BYTE_BITS: u32 = 44;
const BYTE_MASK: u64 = (1 << BYTE_BITS) - 1;
/// The most messages a throttle can count (2^20 - 2); a larger limit is
/// this one.
pub const MAX_COUNTED_MESSAGES: u64 = (u64::MAX >> BYTE_BITS) - 1;
/// The most bytes a throttle can count (16 TiB); a larger limit is this one,
/// and a message's size is capped at it.
pub const MAX_COUNTED_BYTES: u64 = BYTE_MASK;
/// A lease's chunk is this share of the limits divided by the shards: a
/// quarter of the budget at most sits unused in leases.
const LEASE_SHARE: u64 = 4;

fn pack(messages: u64, bytes: u64) -> u64 {
    (messages << BYTE_BITS) | bytes
}

fn unpack(word: u64) -> (u64, u64) {
    (word >> BYTE_BITS, word & BYTE_MASK)
}

/// One atomic word on a cache line of its own (128 bytes: adjacent-line
/// prefetch pairs 64-byte lines), so that writers of different words never
/// share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Line(AtomicU64);

/// Limits on messages and bytes in flight.
#[derive(Debug)]
pub struct Throttle {
    max_messages: u64,
    max_bytes: u64,
    /// What a lease takes from the shared count at once: (messages, bytes).
    chunk: (u64, u64),
    /// Messages held (high bits) and bytes held (low bits), budget in
    /// leases included.
    held: Line,
    /// Tasks waiting for budget.
    waiters: Line,
    released: Notify,
    /// One per shard: budget taken from `held` and not handed out yet.
    leases: Box<[Line]>,
}

impl Throttle {
    /// A throttle of at most `max_messages` messages and `max_bytes`
    /// bytes held at once, without leases: every message takes from the
    /// shared count.
    pub fn new(max_messages: u64, max_bytes: u64) -> Arc<Throttle> {
        Throttle::with_shards(max_messages, max_bytes, 0)
    }

    /// A throttle as [`Throttle::new`], with a lease for each of `shards`
    /// shards ([`Throttle::taker`]). Limits too small to share out (fewer
    /// than two messages or no bytes per chunk) get no leases.
    pub fn with_shards(max_messages: u64, max_bytes: u64, shards: usize) -> Arc<Throttle> {
        let (max_messages, max_bytes) = (
            max_messages.min(MAX_COUNTED_MESSAGES),
            max_bytes.min(MAX_COUNTED_BYTES),
        );
        let parts = LEASE_SHARE.saturating_mul(shards as u64).max(1);
        let chunk = (
            max_messages.checked_div(parts).unwrap_or(0),
            max_bytes.checked_div(parts).unwrap_or(0),
        );
        let shards = if chunk.0 >= 2 && chunk.1 > 0 {
            shards
        } else {
            0
        };
        Arc::new(Throttle {
            max_messages,
            max_bytes,
            chunk,
            held: Line::default(),
            waiters: Line::default(),
            released: Notify::new(),
            leases: (0..shards).map(|_| Line::default()).collect(),
        })
    }

    /// Takes budget through shard `shard`'s lease (a shard the throttle has
    /// no lease for takes from the shared count).
    pub fn taker(self: &Arc<Self>, shard: usize) -> Taker {
        Taker(Arc::new(TakerOf {
            throttle: self.clone(),
            lease: (shard < self.leases.len()).then_some(shard),
        }))
    }

    /// The most bytes it lets be held.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// What is held now: (messages, bytes), budget idle in leases not
    /// counted. Reads every lease: for reports, not the message path.
    pub fn current(&self) -> (u64, u64) {
        let (mut m, mut b) = unpack(self.held.0.load(Acquire));
        for l in self.leases.iter() {
            let (lm, lb) = unpack(l.0.load(Acquire));
            (m, b) = (m.saturating_sub(lm), b.saturating_sub(lb));
        }
        (m, b)
    }

    fn waited_for(&self) -> bool {
        self.waiters.0.load(SeqCst) > 0
    }

    /// Takes `messages` and `bytes` from the shared count if they fit. A
    /// message larger than the whole budget passes alone, as in Ceph.
    fn take_shared(&self, messages: u64, bytes: u64) -> bool {
        self.held
            .0
            .fetch_update(SeqCst, SeqCst, |h| {
                let (m, b) = unpack(h);
                // Both counts stay in their bits: messages within
                // max_messages (< 2^20 - 1), bytes within max_bytes or, for
                // a message alone, its own capped size (< 2^44).
                let fits = m.saturating_add(messages) <= self.max_messages
                    && (b.saturating_add(bytes) <= self.max_bytes || (b == 0 && messages == 1));
                fits.then(|| h.checked_add(pack(messages, bytes))).flatten()
            })
            .is_ok()
    }

    fn give_shared(&self, word: u64) {
        if word != 0 {
            self.held.0.fetch_sub(word, SeqCst);
            if self.waited_for() {
                self.released.notify_waiters();
            }
        }
    }

    /// Takes what lease `l` has above (`messages`, `bytes`) back into the
    /// shared count.
    fn trim_lease(&self, l: &Line, messages: u64, bytes: u64) {
        let mut excess = 0;
        let _ = l.0.fetch_update(SeqCst, SeqCst, |a| {
            let (m, b) = unpack(a);
            let keep = pack(m.min(messages), b.min(bytes));
            // Each count of `keep` is at most a's: no borrow between them.
            excess = a.saturating_sub(keep);
            Some(keep)
        });
        self.give_shared(excess);
    }

    /// Takes one message of `bytes`: from lease `lease` if it has the
    /// budget, else a chunk for it from the shared count (none while
    /// anybody waits), else the message alone from the shared count.
    fn try_take(&self, lease: Option<usize>, bytes: u64) -> bool {
        let need = pack(1, bytes);
        if let Some(l) = lease.and_then(|i| self.leases.get(i)) {
            let own = l.0.fetch_update(SeqCst, SeqCst, |a| {
                let (m, b) = unpack(a);
                (m >= 1 && b >= bytes).then(|| a.saturating_sub(need))
            });
            if own.is_ok() {
                return true;
            }
            let chunk = (self.chunk.0, self.chunk.1.max(bytes));
            if !self.waited_for() && self.take_shared(chunk.0, chunk.1) {
                // The chunk holds at least two messages and `bytes`.
                l.0.fetch_add(pack(chunk.0, chunk.1).saturating_sub(need), SeqCst);
                // A waiter that came meanwhile may have looked at the
                // lease before it was filled: it goes back.
                if self.waited_for() {
                    self.trim_lease(l, 0, 0);
                }
                return true;
            }
        }
        self.take_shared(1, bytes)
    }

    /// Every lease's unused budget back into the shared count.
    fn reclaim(&self) {
        for l in self.leases.iter() {
            let a = l.0.swap(0, SeqCst);
            if a != 0 {
                self.held.0.fetch_sub(a, SeqCst);
            }
        }
    }

    /// Gives back one message of `bytes` taken through lease `lease`.
    fn release(&self, lease: Option<usize>, bytes: u64) {
        let give = pack(1, bytes);
        let Some(l) = lease.and_then(|i| self.leases.get(i)) else {
            self.give_shared(give);
            return;
        };
        // Within the bounds: what a lease holds is part of `held`, which
        // stays within its bits.
        let (m, b) = unpack(l.0.fetch_add(give, SeqCst).wrapping_add(give));
        if self.waited_for() {
            self.trim_lease(l, 0, 0);
        } else if m > self.chunk.0.saturating_mul(2) || b > self.chunk.1.saturating_mul(2) {
            self.trim_lease(l, self.chunk.0, self.chunk.1);
        }
    }

    /// Waits until one message of `bytes` fits, taking back the leases'
    /// unused budget each time it looks.
    async fn wait_take(&self, bytes: u64) {
        // Counted until it returns or is dropped (a connection that closes
        // while it waits): a waiter counted forever would keep every lease
        // empty.
        let _waiting = Waiting::new(&self.waiters.0);
        loop {
            // Made before looking: a release after the look wakes it.
            let notified = self.released.notified();
            self.reclaim();
            if self.take_shared(1, bytes) {
                break;
            }
            notified.await;
        }
    }
}

/// One waiter counted while it lives.
struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    fn new(waiters: &'a AtomicU64) -> Waiting<'a> {
        waiters.fetch_add(1, SeqCst);
        Waiting(waiters)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// Takes budget from a throttle through one shard's lease: a connection
/// has one for the shard it runs on. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Taker(Arc<TakerOf>);

#[derive(Debug)]
struct TakerOf {
    throttle: Arc<Throttle>,
    lease: Option<usize>,
}

impl Taker {
    /// The throttle it takes from.
    pub fn throttle(&self) -> &Arc<Throttle> {
        &self.0.throttle
    }

    /// Takes one message of `bytes` if there is room now.
    pub fn try_take_permit(&self, bytes: u64) -> Option<Permit> {
        let bytes = bytes.min(MAX_COUNTED_BYTES);
        self.0
            .throttle
            .try_take(self.0.lease, bytes)
            .then(|| Permit {
                taker: Some(self.clone()),
                bytes,
            })
    }

    /// Takes one message of `bytes`, waiting while the throttle is full.
    pub async fn take(&self, bytes: u64) -> Permit {
        let bytes = bytes.min(MAX_COUNTED_BYTES);
        let t = &self.0.throttle;
        if !t.try_take(self.0.lease, bytes) {
            t.wait_take(bytes).await;
        }
        Permit {
            taker: Some(self.clone()),
            bytes,
        }
    }
}

/// Budget held until dropped.
#[derive(Debug, Default)]
pub struct Permit {
    taker: Option<Taker>,
    bytes: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(t) = self.taker.take() {
            t.0.throttle.release(t.0.lease, self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    impl Throttle {
        /// The shared count, leases included.
        fn shared(&self) -> (u64, u64) {
            unpack(self.held.0.load(SeqCst))
        }
    }

    #[tokio::test]
    async fn waits_until_released() {
        let t = Throttle::new(2, 100).taker(0);
        let a = t.take(60).await;
        let _b = t.take(30).await;
        assert_eq!(t.throttle().current(), (2, 90));
        let t2 = t.clone();
        let waiter = tokio::spawn(async move { t2.take(10).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "two messages already held");
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(t.throttle().current(), (2, 40));
        drop(c);
        // Oversized messages pass alone.
        drop(_b);
        let big = t.take(1000).await;
        assert_eq!(t.throttle().current(), (1, 1000));
        drop(big);
    }

    #[tokio::test]
    async fn counts_share_one_word_without_overflow() {
        // Unlimited in the caller's terms: capped at what the word counts.
        let t = Throttle::new(u64::MAX, u64::MAX).taker(0);
        let a = t.take(MAX_COUNTED_BYTES - 10).await;
        let b = t.take(10).await;
        assert_eq!(t.throttle().current(), (2, MAX_COUNTED_BYTES));
        drop((a, b));
        assert_eq!(t.throttle().current(), (0, 0));
        // A message larger than the countable bytes counts as that many.
        let huge = t.take(u64::MAX).await;
        assert_eq!(t.throttle().current(), (1, MAX_COUNTED_BYTES));
        drop(huge);
        // Messages fill up to the cap without spilling into the bytes.
        let t = Throttle::new(3, 1000).taker(0);
        let held: Vec<_> = [t.take(1).await, t.take(2).await, t.take(3).await].into();
        assert_eq!(t.throttle().current(), (3, 6));
        assert!(t.try_take_permit(0).is_none(), "the fourth message waits");
        drop(held);
        assert_eq!(t.throttle().current(), (0, 0));
    }

    #[test]
    fn a_lease_serves_its_shard_and_the_shared_count_moves_per_chunk() {
        // 2 shards: chunks of (1000 / 8, 80000 / 8) = (125, 10000).
        let t = Throttle::with_shards(1000, 80_000, 2);
        let (s0, s1) = (t.taker(0), t.taker(1));
        let a = s0.try_take_permit(100).unwrap();
        assert_eq!(t.shared(), (125, 10_000), "one chunk taken");
        assert_eq!(t.current(), (1, 100));
        let more: Vec<_> = (0..50).map(|_| s0.try_take_permit(100).unwrap()).collect();
        assert_eq!(t.shared(), (125, 10_000), "served from the lease");
        assert_eq!(t.current(), (51, 5100));
        let b = s1.try_take_permit(20_000).unwrap();
        assert_eq!(t.shared(), (250, 30_000), "a chunk as large as the message");
        drop((a, more, b));
        assert_eq!(t.current(), (0, 0));
        // Each lease keeps at most two chunks; what shard 1 took for its
        // large message went back.
        assert_eq!(t.shared(), (250, 30_000));
        let lots: Vec<_> = (0..200).map(|_| s0.try_take_permit(10).unwrap()).collect();
        drop(lots);
        let (m, b) = t.shared();
        assert!(m <= 4 * 125 && b <= 4 * 10_000, "leases trimmed: {m} {b}");
        assert_eq!(t.current(), (0, 0));
    }

    #[tokio::test]
    async fn the_bound_stays_exact_and_a_waiter_takes_back_idle_leases() {
        // Chunks of (2, 200).
        let t = Throttle::with_shards(16, 1600, 2);
        let (s0, s1) = (t.taker(0), t.taker(1));
        let mut held = Vec::new();
        for i in 0..16 {
            let s = if i % 2 == 0 { &s0 } else { &s1 };
            let p = tokio::time::timeout(Duration::from_secs(1), s.take(100)).await;
            held.push(p.expect("within the limits: it does not wait"));
        }
        assert_eq!(t.current(), (16, 1600));
        assert!(s0.try_take_permit(0).is_none() && s1.try_take_permit(0).is_none());
        let s = s1.clone();
        let waiter = tokio::spawn(async move { s.take(100).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "the 17th message waits");
        drop(held.pop());
        let p = tokio::time::timeout(Duration::from_secs(1), waiter).await;
        let p = p.expect("a release wakes it").unwrap();
        assert_eq!(t.current(), (16, 1600));
        drop((held, p));
        assert_eq!(t.current(), (0, 0));
        // Shard 0's lease holds budget nobody uses; shard 1's message of
        // 1500 does not fit beside it, and takes it back.
        drop(s0.try_take_permit(100).unwrap());
        assert_ne!(t.shared(), (0, 0), "shard 0's lease is not empty");
        let p = tokio::time::timeout(Duration::from_secs(1), s1.take(1500)).await;
        let p = p.expect("idle leases do not block it");
        assert_eq!(p.bytes, 1500);
        // A message larger than the whole budget passes alone.
        drop(p);
        drop(s0.try_take_permit(100).unwrap());
        let p = tokio::time::timeout(Duration::from_secs(1), s1.take(5000)).await;
        let p = p.expect("it passes alone");
        assert_eq!(t.current(), (1, 5000));
        drop(p);
    }

    #[tokio::test]
    async fn a_waiter_dropped_while_it_waits_is_no_longer_counted() {
        // Chunks of (2, 200).
        let t = Throttle::with_shards(16, 1600, 2);
        let s0 = t.taker(0);
        let all = s0.take(1600).await;
        let mut wait = Box::pin(s0.take(100));
        let polled = futures_poll(&mut wait);
        assert!(polled.is_none() && t.waited_for(), "it waits");
        drop(wait);
        assert!(!t.waited_for(), "a dropped wait is not a waiter");
        drop(all);
        // Leases work again: the shared count moves per chunk.
        let mut held: Vec<_> = (0..2).map(|_| s0.try_take_permit(10).unwrap()).collect();
        let before = t.shared();
        held.push(s0.try_take_permit(10).unwrap());
        assert_eq!(t.shared(), before, "served from the lease");
        drop(held);
        assert_eq!(t.current(), (0, 0));
    }

    /// Polls a future once.
    fn futures_poll<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::Pin::new(f).poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }

    /// A permit the test counts while it is held.
    struct Counted {
        _permit: Permit,
        bytes: u64,
        inside: Arc<(AtomicU64, AtomicU64)>,
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            // Uncounted before it is released: the count never exceeds
            // what the throttle holds.
            self.inside.0.fetch_sub(1, SeqCst);
            self.inside.1.fetch_sub(self.bytes, SeqCst);
        }
    }

    /// Two shards taking and releasing at once, some permits dropped on
    /// another thread: never more held than the limits, and nothing held
    /// at the end.
    #[test]
    fn shards_at_once_never_exceed_the_limits() {
        let t = Throttle::with_shards(64, 64 * 1000, 2);
        let inside = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let (tx, rx) = std::sync::mpsc::channel::<Counted>();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let workers: Vec<_> = (0..2)
            .map(|shard| {
                let (taker, inside, tx) = (t.taker(shard), inside.clone(), tx.clone());
                rt.spawn(async move {
                    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ shard as u64;
                    let mut mine = Vec::new();
                    for _ in 0..20_000 {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let bytes = seed % 3000;
                        let p = taker.take(bytes).await;
                        let m = inside.0.fetch_add(1, SeqCst) + 1;
                        let b = inside.1.fetch_add(bytes, SeqCst) + bytes;
                        assert!(m <= 64 && b <= 64 * 1000, "held {m} messages, {b} bytes");
                        let p = Counted {
                            _permit: p,
                            bytes,
                            inside: inside.clone(),
                        };
                        match seed % 7 {
                            0 => tx.send(p).unwrap(),
                            1..=3 => mine.push(p),
                            _ => drop(p),
                        }
                        // At most 5 each: the two never wait for each other
                        // with their own permits held past the limits.
                        if mine.len() > 5 {
                            mine.clear();
                        }
                        if seed % 61 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let dropper = std::thread::spawn(move || {
            for p in rx {
                drop(p);
            }
        });
        rt.block_on(async {
            for w in workers {
                w.await.unwrap();
            }
        });
        dropper.join().unwrap();
        assert_eq!(t.current(), (0, 0));
        let leases: u64 = t.leases.iter().map(|l| l.0.load(SeqCst)).sum();
        assert_eq!(
            t.held.0.load(SeqCst),
            leases,
            "the shared count is what the leases hold"
        );
    }
}
