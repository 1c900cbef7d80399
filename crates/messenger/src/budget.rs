//! A connection's receive budget: the messenger's dispatch throttle and
//! its peer type's policy throttle, taken together for each message (its
//! payload and a message's fixed overhead, msgr_protocol::Session::cost,
//! which the driver passes as `bytes`) when the message's preamble
//! announces its size, before its bytes are read (as Ceph's ProtocolV2
//! takes its throttles in throttle_message/throttle_bytes). A connection
//! without budget stops reading, and only reading: it still writes,
//! acknowledges, answers keepalives and runs its timers while it waits.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::throttle::{Permit, Taker, Throttle};

/// Budget held for one message, in both throttles.
pub(crate) type Permits = (Permit, Permit);

/// A wait for budget: resolves to the permits for `bytes`, and how long
/// the dispatch throttle made it wait, if it did.
pub(crate) type Wait = Pin<Box<dyn Future<Output = Granted> + Send>>;

/// What a wait for budget got.
pub(crate) struct Granted {
    pub bytes: u64,
    pub permits: Permits,
    pub dispatch_wait: Option<std::time::Duration>,
}

/// The two throttles a connection's messages take budget from, each
/// through the lease of the shard the connection runs on.
pub(crate) struct Budget {
    dispatch: Taker,
    /// The policy throttle of the peer's type (None: the policy has none);
    /// known once the peer said HELLO, which comes before any message.
    policy: Option<Option<Taker>>,
    /// Taken for the message being read (or the one waiting to be
    /// dispatched): its size, and the permits.
    reserved: Option<(u64, Permits)>,
    /// A wait in progress.
    wait: Option<Wait>,
}

impl Budget {
    /// Takes from `dispatch` through shard `shard`'s lease.
    pub fn new(dispatch: &Arc<Throttle>, shard: usize) -> Budget {
        Budget {
            dispatch: dispatch.taker(shard),
            policy: None,
            reserved: None,
            wait: None,
        }
    }

    /// Sets the policy throttle, once the peer's type is known, taken
    /// through shard `shard`'s lease.
    pub fn policy(&mut self, shard: usize, throttle: impl FnOnce() -> Option<Arc<Throttle>>) {
        if self.policy.is_none() {
            self.policy = Some(throttle().map(|t| t.taker(shard)));
        }
    }

    /// The connection moved to `shard`: budget is taken through its
    /// leases from now on (what is held goes back where it was taken).
    pub fn rehome(&mut self, shard: usize) {
        self.dispatch = self.dispatch.throttle().taker(shard);
        if let Some(Some(p)) = &mut self.policy {
            *p = p.throttle().taker(shard);
        }
    }

    fn policy_throttle(&self) -> Option<&Taker> {
        self.policy.as_ref().and_then(Option::as_ref)
    }

    /// Both permits for `bytes` if both throttles have room now.
    fn try_take(&self, bytes: u64) -> Option<Permits> {
        let dispatch = self.dispatch.try_take_permit(bytes)?;
        let policy = match self.policy_throttle() {
            Some(t) => t.try_take_permit(bytes)?,
            None => Permit::default(),
        };
        Some((dispatch, policy))
    }

    /// Whether budget is being waited for (the connection does not read).
    pub fn waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// Whether budget is reserved for a message of `bytes`.
    pub fn reserved_for(&self, bytes: u64) -> bool {
        self.reserved.as_ref().is_some_and(|(b, _)| *b == bytes)
    }

    /// Reserves budget for a message of `bytes` about to be read: at once
    /// if there is room (returns true), else a wait starts.
    pub fn reserve(&mut self, bytes: u64) -> bool {
        if self.wait.is_some() {
            return false;
        }
        if self.reserved_for(bytes) {
            return true;
        }
        // A reservation of another size is stale (its frame was dropped as
        // a duplicate): given back before this one is taken.
        self.reserved = None;
        match self.try_take(bytes) {
            Some(p) => {
                self.reserved = Some((bytes, p));
                true
            }
            None => {
                self.start_wait(bytes);
                false
            }
        }
    }

    /// The permits for a received message of `bytes`: what was reserved
    /// for it, or budget taken now. `None`: a wait started (or goes on);
    /// the message waits for it.
    #[inline]
    pub fn take(&mut self, bytes: u64) -> Option<Permits> {
        match self.reserved.take() {
            // Reserved by its preamble (a compressed message's size once
            // decompressed differs: its reservation is taken again).
            Some((b, p)) if b == bytes => return Some(p),
            Some(_) | None => {}
        }
        if self.wait.is_some() {
            return None;
        }
        let p = self.try_take(bytes);
        if p.is_none() {
            self.start_wait(bytes);
        }
        p
    }

    fn start_wait(&mut self, bytes: u64) {
        let dispatch = self.dispatch.clone();
        let policy = self.policy_throttle().cloned();
        self.wait = Some(Box::pin(async move {
            // The dispatch throttle's wait is timed when there is one (the
            // slow path: a clock read per wait, none per message).
            let (d, dispatch_wait) = match dispatch.try_take_permit(bytes) {
                Some(d) => (d, None),
                None => {
                    let started = std::time::Instant::now();
                    let d = dispatch.take(bytes).await;
                    (d, Some(started.elapsed()))
                }
            };
            let p = match policy {
                Some(t) => t.take(bytes).await,
                None => Permit::default(),
            };
            Granted {
                bytes,
                permits: (d, p),
                dispatch_wait,
            }
        }));
    }

    /// The wait in progress, to poll.
    pub fn wait_mut(&mut self) -> Option<&mut Wait> {
        self.wait.as_mut()
    }

    /// The wait ended with `permits` for `bytes`: they are reserved.
    pub fn granted(&mut self, bytes: u64, permits: Permits) {
        self.wait = None;
        self.reserved = Some((bytes, permits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reservation_serves_its_message_and_a_full_budget_waits() {
        let dispatch = Throttle::new(10, 1000);
        let mut b = Budget::new(&dispatch, 0);
        b.policy(0, || Some(Throttle::new(10, 600)));
        assert!(b.reserve(500));
        assert!(b.reserved_for(500));
        let first = b.take(500).expect("reserved");
        assert_eq!(dispatch.current(), (1, 500));
        // The policy throttle (600) has no room for another 500: a wait.
        assert!(b.take(500).is_none());
        assert!(b.waiting());
        assert!(b.take(500).is_none(), "one wait at a time");
        drop(first);
        let g = b.wait_mut().unwrap().await;
        b.granted(g.bytes, g.permits);
        assert!(!b.waiting());
        assert!(b.take(500).is_some(), "the granted budget serves it");
        // A message whose size differs from its reservation (compressed
        // on the wire) gives the reservation back and takes its own.
        assert!(b.reserve(100));
        let p = b.take(120).unwrap();
        assert_eq!(dispatch.current(), (1, 120));
        drop(p);
    }
}
