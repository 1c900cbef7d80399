//! Commands a connection's own dispatch gives it (the common case of a
//! server replying from `ms_dispatch`), kept on the thread rather than sent
//! through the connection's queue: no atomic operation and no wake-up of
//! the driver, which is the one dispatching and takes them when the
//! dispatcher returns.
//!
//! Order is kept: the driver opens the outbox only when it has emptied its
//! queue, so nothing this thread queued earlier is still waiting there;
//! while it is open, every command this thread gives the connection goes
//! into it, in order; the driver handles them as soon as dispatching ends,
//! before it takes its queue again. Commands from other threads go through
//! the queue, as always.

use std::cell::RefCell;

use super::Command;

thread_local! {
    /// The connection dispatching on this thread (its `Shared`'s address:
    /// unique among live connections of every messenger), and what its
    /// handles gave it meanwhile: one buffer for every connection of the
    /// thread, warm, rather than one per connection.
    static OPEN: RefCell<Slot> = const { RefCell::new(Slot { conn: None, given: Vec::new() }) };
}

struct Slot {
    conn: Option<usize>,
    given: Vec<Command>,
}

/// Offers `c` to the outbox of connection `conn`: `Some(c)` back when that
/// connection is not dispatching on this thread.
pub(crate) fn offer(conn: usize, c: Command) -> Option<Command> {
    OPEN.with(|open| match open.try_borrow_mut() {
        Ok(mut slot) if slot.conn == Some(conn) => {
            slot.given.push(c);
            None
        }
        _ => Some(c),
    })
}

/// Gives the thread back the buffer `close` returned, once its commands
/// are handled (empty), for the next connection to dispatch here.
pub(crate) fn recycle(mut given: Vec<Command>) {
    given.clear();
    OPEN.with(|open| {
        if let Ok(mut slot) = open.try_borrow_mut() {
            if slot.given.capacity() == 0 {
                slot.given = given;
            }
        }
    })
}

/// The outbox of one connection while its driver dispatches; closed (and
/// the thread's slot cleared) when dropped, even by a panicking dispatcher.
pub(crate) struct Outbox {
    open: bool,
}

impl Outbox {
    /// Opens the outbox of `conn`.
    pub fn open(conn: usize) -> Outbox {
        OPEN.with(|open| open.borrow_mut().conn = Some(conn));
        Outbox { open: true }
    }

    /// A closed outbox, for a driver that may not open one now.
    pub fn closed() -> Outbox {
        Outbox { open: false }
    }

    /// Closes it: what was given, in order (the thread's buffer: `recycle`
    /// it once handled).
    pub fn close(mut self) -> Vec<Command> {
        self.take()
    }

    fn take(&mut self) -> Vec<Command> {
        if !std::mem::take(&mut self.open) {
            return Vec::new();
        }
        OPEN.with(|open| {
            let mut slot = open.borrow_mut();
            slot.conn = None;
            std::mem::take(&mut slot.given)
        })
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dispatching_connection_takes_commands_on_this_thread() {
        assert!(offer(1, Command::Evict).is_some());
        let outbox = Outbox::open(1);
        assert!(offer(1, Command::Evict).is_none());
        assert!(offer(1, Command::MarkDown).is_none());
        assert!(offer(2, Command::Evict).is_some());
        // Another thread's commands go to the queue.
        let other = std::thread::spawn(|| offer(1, Command::Evict).is_some());
        assert!(other.join().unwrap());
        let got = outbox.close();
        assert!(matches!(got[..], [Command::Evict, Command::MarkDown]));
        assert!(offer(1, Command::Evict).is_some());
        // The buffer goes back to the thread, for the next connection.
        let cap = got.capacity();
        recycle(got);
        let next = Outbox::open(2);
        assert!(offer(2, Command::Evict).is_none());
        let got = next.close();
        assert_eq!((got.len(), got.capacity()), (1, cap));
    }

    #[test]
    fn dropping_it_closes_it() {
        drop(Outbox::open(3));
        assert!(offer(3, Command::Evict).is_some());
    }
}
