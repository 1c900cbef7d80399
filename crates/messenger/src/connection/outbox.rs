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
    /// handles gave it meanwhile.
    static OPEN: RefCell<Option<(usize, Vec<Command>)>> = const { RefCell::new(None) };
}

/// Offers `c` to the outbox of connection `conn`: `Some(c)` back when that
/// connection is not dispatching on this thread.
pub(crate) fn offer(conn: usize, c: Command) -> Option<Command> {
    OPEN.with(|open| match open.try_borrow_mut() {
        Ok(mut open) => match open.as_mut() {
            Some((at, cmds)) if *at == conn => {
                cmds.push(c);
                None
            }
            _ => Some(c),
        },
        Err(_) => Some(c),
    })
}

/// The outbox of one connection while its driver dispatches; closed (and
/// the thread's slot cleared) when dropped, even by a panicking dispatcher.
pub(crate) struct Outbox {
    open: bool,
}

impl Outbox {
    /// Opens the outbox of `conn`, lending it `buf` (empty) to fill.
    pub fn open(conn: usize, buf: Vec<Command>) -> Outbox {
        OPEN.with(|open| *open.borrow_mut() = Some((conn, buf)));
        Outbox { open: true }
    }

    /// A closed outbox, for a driver that may not open one now.
    pub fn closed() -> Outbox {
        Outbox { open: false }
    }

    /// Closes it: what was given, in order.
    pub fn close(mut self) -> Vec<Command> {
        self.take()
    }

    fn take(&mut self) -> Vec<Command> {
        if !std::mem::take(&mut self.open) {
            return Vec::new();
        }
        OPEN.with(|open| open.borrow_mut().take().map(|(_, v)| v).unwrap_or_default())
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
        let outbox = Outbox::open(1, Vec::new());
        assert!(offer(1, Command::Evict).is_none());
        assert!(offer(1, Command::MarkDown).is_none());
        assert!(offer(2, Command::Evict).is_some());
        // Another thread's commands go to the queue.
        let other = std::thread::spawn(|| offer(1, Command::Evict).is_some());
        assert!(other.join().unwrap());
        let got = outbox.close();
        assert!(matches!(got[..], [Command::Evict, Command::MarkDown]));
        assert!(offer(1, Command::Evict).is_some());
    }

    #[test]
    fn dropping_it_closes_it() {
        drop(Outbox::open(3, Vec::new()));
        assert!(offer(3, Command::Evict).is_some());
    }
}
