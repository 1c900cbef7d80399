//! The client's watch and notify tables, kept in the driver's shared state
//! (`shared.rs`) and worked by `watch.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::objecter::linger::{Lingers, WatchEvent};

/// The watches' and notifies' state in the client.
#[derive(Default)]
pub(crate) struct WatchState {
    pub(crate) lingers: Mutex<Lingers>,
    /// Each watch's events.
    pub(crate) watches: Mutex<HashMap<u64, WatchQueue>>,
    /// Each notify's end: its return code and replies.
    pub(crate) notifies: Mutex<HashMap<u64, oneshot::Sender<(i32, Bytes)>>>,
}

/// At most this many events wait for a watch's owner to take them; a
/// notify past that is dropped (its notifier sees this watcher time out)
/// and counted, and an error past it is still what `Watch::check` says.
/// A peer's notifies cannot make the client hold more.
pub const WATCH_EVENT_QUEUE: usize = 1024;

/// Where a watch's events go, and how many were dropped for want of room.
pub(crate) struct WatchQueue {
    pub(crate) tx: mpsc::Sender<WatchEvent>,
    pub(crate) dropped: Arc<AtomicU64>,
}

impl WatchQueue {
    /// Queues `event`, or counts it dropped when the queue is full.
    pub(crate) fn push(&self, event: WatchEvent) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_what_does_not_fit() {
        let (tx, mut rx) = mpsc::channel(WATCH_EVENT_QUEUE);
        let q = WatchQueue {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
        };
        for n in 0..WATCH_EVENT_QUEUE + 5 {
            q.push(WatchEvent::Notify {
                notify_id: n as u64,
                cookie: 1,
                notifier_gid: 2,
                payload: Bytes::new(),
            });
        }
        assert_eq!(q.dropped.load(Ordering::Relaxed), 5);
        let first = rx.try_recv().expect("the first kept");
        assert!(matches!(first, WatchEvent::Notify { notify_id: 0, .. }));
    }
}
