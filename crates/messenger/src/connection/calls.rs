//! Request and reply on a connection (`Connection::call`): a request
//! whose type has a reply (Options::message_types) waits here, by tid,
//! until its reply arrives, its time is up, or the session is reset or
//! closed; the driver hands a matching reply here instead of to the
//! dispatcher.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use msgr_protocol::Message;
use tokio::sync::oneshot;

/// Why a call got no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The request's type has no reply to wait for (none given in
    /// Options::message_types).
    NoReplyType {
        /// The request's type.
        msg_type: u16,
    },
    /// A call with this tid is already waiting on the connection.
    TidInUse {
        /// The request's tid.
        tid: u64,
    },
    /// No reply within the time given.
    Timeout {
        /// The time given.
        after: Duration,
    },
    /// The session was reset (by a fault of a lossy session, or by the
    /// peer): the request may or may not have been handled.
    Reset,
    /// The connection was closed (marked down, or shut down).
    Closed,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NoReplyType { msg_type } => write!(
                f,
                "message type {msg_type} has no reply to wait for (send it instead, or name its reply in Options::message_types)"
            ),
            CallError::TidInUse { tid } => {
                write!(f, "a call with tid {tid} already waits on this connection")
            }
            CallError::Timeout { after } => write!(f, "no reply within {after:?}"),
            CallError::Reset => f.write_str("the session was reset before the reply came"),
            CallError::Closed => f.write_str("the connection closed before the reply came"),
        }
    }
}

impl std::error::Error for CallError {}

type Reply = Result<Message, CallError>;

/// The calls waiting, by tid: the reply type each expects, and its caller.
type Waiting = HashMap<u64, (u16, oneshot::Sender<Reply>)>;

/// The count the driver reads per message is held beside the
/// connection's other per-message fields (Shared: 16 bytes of its first
/// line); the waiting calls and the tids, used only by calls, apart.
#[derive(Default)]
pub(crate) struct Calls {
    /// How many wait: the driver looks no further while none do.
    count: AtomicUsize,
    apart: Box<Apart>,
}

#[derive(Default)]
struct Apart {
    next_tid: AtomicU64,
    waiting: Mutex<Waiting>,
}

impl Calls {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.apart
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A tid for a request that has none.
    pub fn next_tid(&self) -> u64 {
        self.apart
            .next_tid
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// Waits for the reply of type `reply_type` with `tid`.
    pub fn wait(&self, tid: u64, reply_type: u16) -> Result<oneshot::Receiver<Reply>, CallError> {
        let mut w = self.lock();
        if w.contains_key(&tid) {
            return Err(CallError::TidInUse { tid });
        }
        let (tx, rx) = oneshot::channel();
        w.insert(tid, (reply_type, tx));
        self.count.store(w.len(), Ordering::Release);
        Ok(rx)
    }

    /// Gives up waiting for `tid`.
    pub fn forget(&self, tid: u64) {
        let mut w = self.lock();
        w.remove(&tid);
        self.count.store(w.len(), Ordering::Release);
    }

    /// A received message: the reply of a call (taken), or not (given back).
    pub fn answer(&self, msg: Box<Message>) -> Result<(), Box<Message>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Err(msg);
        }
        let mut w = self.lock();
        let matches = w.get(&msg.tid).is_some_and(|(t, _)| *t == msg.msg_type);
        if !matches {
            return Err(msg);
        }
        let waiter = w.remove(&msg.tid);
        self.count.store(w.len(), Ordering::Release);
        drop(w);
        if let Some((_, tx)) = waiter {
            // A caller that gave up meanwhile drops the reply.
            let _ = tx.send(Ok(*msg));
        }
        Ok(())
    }

    /// Ends every call with `e`.
    pub fn fail_all(&self, e: CallError) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut w = self.lock();
        self.count.store(0, Ordering::Release);
        for (_, (_, tx)) in w.drain() {
            let _ = tx.send(Err(e.clone()));
        }
    }
}
