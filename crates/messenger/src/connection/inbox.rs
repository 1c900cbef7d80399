//! Commands on their way to a connection's driver, in order: the FIFO that
//! keeps a sender's messages in order from any thread. A queue under a
//! lock (commands from the driver's own thread mostly skip it: outbox.rs)
//! that holds no memory while empty (a small buffer goes as the queue
//! empties, a large one when the driver trims it), a flag that
//! lets the driver see it empty without the lock, a waker slot for the
//! driver, and the flag a handle's mark_down sets at once. Once the
//! driver is gone what it is sent is dropped at once,
//! as a closed channel would.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

use super::Command;

/// The flag and waker the driver looks at every turn are held beside the
/// connection's other per-message fields (Shared); the queue, locked only
/// when commands come, apart.
#[derive(Default)]
pub(crate) struct Inbox {
    /// The queue holds commands (set and cleared under its lock): the
    /// driver, which looks at every turn, takes the lock only then.
    queued: AtomicBool,
    /// The driver's timer fired (Inbox::timer_fired): the driver polls its
    /// timer only then (and once after arming it), not every turn.
    timer_due: AtomicBool,
    /// A handle marked the connection down: it is closed for its users at
    /// once, and the driver, which looks every turn, dispatches nothing
    /// more, whatever its queue still holds.
    marked_down: AtomicBool,
    /// The queue, emptied, kept its buffer (a large one: an emptied small
    /// one goes at once, msgr_frames::let_go_if_small), for the driver's
    /// trim timer; cleared by Inbox::trim.
    spare: AtomicBool,
    waker: AtomicWaker,
    queue: Box<Mutex<Queue>>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Command>,
    /// The driver is gone.
    closed: bool,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `c` for the driver; gives it back when the driver is gone
    /// (the caller drops it, outside the lock: a command may own what
    /// sends to this connection when dropped).
    pub fn push(&self, c: Command) -> Result<(), Command> {
        {
            let mut q = self.lock();
            if q.closed {
                return Err(c);
            }
            q.items.push_back(c);
            self.queued.store(true, Ordering::Release);
        }
        self.waker.wake();
        Ok(())
    }

    pub fn try_pop(&self) -> Option<Command> {
        if !self.queued.load(Ordering::Acquire) {
            return None;
        }
        let mut q = self.lock();
        let c = q.items.pop_front();
        if q.items.is_empty() {
            self.queued.store(false, Ordering::Release);
            self.emptied(&mut q.items);
        }
        c
    }

    /// The queue was emptied: a small buffer goes, a large one is kept
    /// and flagged for the trim.
    fn emptied(&self, items: &mut VecDeque<Command>) {
        msgr_frames::let_go_if_small(items);
        if msgr_frames::holds_spare(items) {
            self.spare.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the emptied queue kept a buffer that Inbox::trim lets go.
    pub fn holds_spare(&self) -> bool {
        self.spare.load(Ordering::Relaxed)
    }

    /// Moves every queued command to the end of `into`, under one lock: a
    /// driver takes a burst from another thread at once rather than
    /// contending for the lock per command. When `into` is empty its
    /// allocation and the queue's trade places; the emptied queue then
    /// lets go of a small buffer (msgr_frames::let_go_if_small).
    pub fn take_all(&self, into: &mut VecDeque<Command>) {
        if !self.queued.load(Ordering::Acquire) {
            return;
        }
        let mut q = self.lock();
        self.queued.store(false, Ordering::Release);
        if into.is_empty() {
            std::mem::swap(&mut q.items, into);
        } else {
            into.append(&mut q.items);
        }
        self.emptied(&mut q.items);
    }

    /// The next command, or `cx` woken when one comes (one driver waits
    /// at a time). A wake-up that finds the queue empty (its command was
    /// taken by `try_pop`) waits again.
    pub fn poll_pop(&self, cx: &mut Context<'_>) -> Poll<Command> {
        if let Some(c) = self.try_pop() {
            return Poll::Ready(c);
        }
        self.waker.register(cx.waker());
        // A push between the first look and the registration set the flag
        // before it woke: look again.
        match self.try_pop() {
            Some(c) => Poll::Ready(c),
            None => Poll::Pending,
        }
    }

    /// Marks the connection down (the command that follows wakes the
    /// driver).
    pub fn mark_down(&self) {
        self.marked_down.store(true, Ordering::Release);
    }

    pub fn marked_down(&self) -> bool {
        self.marked_down.load(Ordering::Acquire)
    }

    /// The driver's timer fired: the driver wakes and looks at it.
    pub fn timer_fired(&self) {
        self.timer_due.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Whether the driver's timer fired and was not looked at yet.
    pub fn timer_due(&self) -> bool {
        self.timer_due.load(Ordering::Acquire)
    }

    /// Whether the driver's timer fired since the last look.
    pub fn take_timer_due(&self) -> bool {
        let due = self.timer_due.load(Ordering::Acquire);
        if due {
            self.timer_due.store(false, Ordering::Release);
        }
        due
    }

    #[cfg(test)]
    async fn pop(&self) -> Command {
        std::future::poll_fn(|cx| self.poll_pop(cx)).await
    }

    /// Lets go of an empty queue's capacity (an idle connection's).
    pub fn trim(&self) {
        let mut q = self.lock();
        if q.items.is_empty() {
            q.items = VecDeque::new();
        }
        self.spare.store(false, Ordering::Relaxed);
    }

    /// The driver is gone: what is queued, and what comes later, is
    /// dropped.
    pub fn close(&self) {
        let dropped = {
            let mut q = self.lock();
            q.closed = true;
            self.queued.store(false, Ordering::Release);
            std::mem::take(&mut q.items)
        };
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commands_come_out_in_order_and_none_after_close() {
        let inbox = Inbox::default();
        assert!(inbox.push(Command::MarkDisposable).is_ok());
        assert!(inbox.push(Command::MarkDown).is_ok());
        assert!(matches!(inbox.pop().await, Command::MarkDisposable));
        assert!(matches!(inbox.try_pop(), Some(Command::MarkDown)));
        assert!(inbox.try_pop().is_none());
        let mut taken = VecDeque::new();
        assert!(inbox.push(Command::MarkDown).is_ok());
        // A few at a time: the emptied inbox keeps no buffer.
        inbox.take_all(&mut taken);
        assert!(inbox.push(Command::Evict).is_ok());
        inbox.take_all(&mut taken);
        assert_eq!(inbox.lock().items.capacity(), 0);
        assert!(!inbox.holds_spare());
        assert!(matches!(
            taken.make_contiguous(),
            [Command::MarkDown, Command::Evict]
        ));
        assert!(inbox.try_pop().is_none());
        inbox.trim();
        assert_eq!(inbox.lock().items.capacity(), 0);
        assert!(inbox.push(Command::Evict).is_ok());
        inbox.close();
        assert!(inbox.try_pop().is_none());
        assert!(inbox.push(Command::Evict).is_err());
    }

    #[test]
    fn a_burst_leaves_the_inbox_a_buffer_that_trim_lets_go() {
        let inbox = Inbox::default();
        let mut taken = VecDeque::new();
        assert!(inbox.push(Command::MarkDown).is_ok());
        inbox.take_all(&mut taken);
        assert!(!inbox.holds_spare());
        // Taken into a list not yet handled: the inbox's grown buffer stays.
        for _ in 0..40 {
            assert!(inbox.push(Command::Evict).is_ok());
        }
        inbox.take_all(&mut taken);
        assert!(inbox.holds_spare());
        assert_eq!(taken.len(), 41);
        inbox.trim();
        assert!(!inbox.holds_spare());
        assert_eq!(inbox.lock().items.capacity(), 0);
        // Popped one at a time, as the driver's wait does: the same.
        for _ in 0..3 {
            assert!(inbox.push(Command::Evict).is_ok());
        }
        while inbox.try_pop().is_some() {}
        assert_eq!(inbox.lock().items.capacity(), 0);
        for _ in 0..40 {
            assert!(inbox.push(Command::Evict).is_ok());
        }
        while inbox.try_pop().is_some() {}
        assert!(inbox.holds_spare());
        inbox.trim();
        // Queued commands keep theirs through a trim.
        assert!(inbox.push(Command::Evict).is_ok());
        inbox.trim();
        assert!(inbox.lock().items.capacity() > 0);
    }

    #[test]
    fn a_fired_timer_wakes_the_waiting_driver_and_is_seen_once() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Arc;
        struct Count(AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let inbox = Inbox::default();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = std::task::Waker::from(count.clone());
        // The driver waits: its waker is the inbox's.
        assert!(inbox
            .poll_pop(&mut Context::from_waker(&waker))
            .is_pending());
        assert!(!inbox.take_timer_due());
        inbox.timer_fired();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(inbox.timer_due());
        assert!(inbox.take_timer_due());
        assert!(!inbox.timer_due());
        assert!(!inbox.take_timer_due());
        // Nothing queued came of it.
        assert!(inbox.try_pop().is_none());
    }

    #[tokio::test]
    async fn a_wait_ends_with_a_push_from_another_thread() {
        let inbox = std::sync::Arc::new(Inbox::default());
        let other = inbox.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            other.push(Command::MarkDown).map_err(drop).unwrap();
        });
        let c = tokio::time::timeout(std::time::Duration::from_secs(10), inbox.pop()).await;
        assert!(matches!(c, Ok(Command::MarkDown)));
        t.join().unwrap();
    }
}
