//! A connection's socket as its ring's operations name it: by its slot in
//! the ring's table of registered files when it has one, else by its fd.
//!
//! An operation naming a registered file (`IOSQE_FIXED_FILE`) finds it in
//! the ring's table: no `fget`/`fput` (an atomic on the file's count, and
//! the walk from fd to socket) per operation. The table holds a reference
//! to the socket, so the slot is cleared when the last holder lets go:
//! the connection's halves and the ring's table of operations in flight,
//! each of which holds a [`File`]. Until then no SQE naming the slot can
//! be queued or in flight, and only then does the slot go back to the
//! ring, so a slot given to a new socket is never named by an older
//! operation (as a socket's fd number is not, the entry holding the fd
//! open).

use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Weak};

use io_uring::{opcode, squeue, types, IoUring};

/// What a cleared slot is set to: no file.
static NO_FILE: [RawFd; 1] = [-1];
/// The most slots a ring's table of registered files has (the kernel's
/// limit, 2^20; below the ring's 24-bit field its releases carry them in).
const MAX_FILES: u32 = 1 << 20;

/// A ring's table of registered files, as its files use it.
pub(crate) trait Files: Send + Sync {
    /// A slot with `fd` in it, registered now (None: none is free, or this
    /// thread may not register on the ring).
    fn register(&self, fd: RawFd) -> Option<u32>;
    /// Clears `slot`, which nothing names any more; the table may give it
    /// out again once that completed.
    fn release(self: Arc<Self>, slot: u32);
}

pub(crate) struct File {
    sock: Arc<TcpStream>,
    /// The slot in `table`, if it has one (a ring without a table, or with
    /// every slot taken, names the fd).
    fixed: Option<u32>,
    /// The ring's table the slot is in (weak: the ring's table of
    /// operations holds files).
    table: Weak<dyn Files>,
}

impl File {
    /// `sock` on the ring `table` is of, in a slot of it if one is free
    /// (registered now, on the calling thread, which is the ring's).
    pub fn new<T: Files + 'static>(table: &Arc<T>, sock: Arc<TcpStream>) -> File {
        let weak: Weak<T> = Arc::downgrade(table);
        File {
            fixed: table.register(sock.as_raw_fd()),
            sock,
            table: weak as Weak<dyn Files>,
        }
    }

    pub fn sock(&self) -> &Arc<TcpStream> {
        &self.sock
    }

    /// What an SQE's fd field holds: the slot, or the fd.
    pub fn fd(&self) -> types::Fd {
        match self.fixed {
            Some(slot) => types::Fd(slot as i32),
            None => types::Fd(self.sock.as_raw_fd()),
        }
    }

    /// The slot, if the socket has one in `table`; an error if it has one
    /// in another ring's (an operation posted on this one would name
    /// whatever that slot holds here).
    pub fn fixed_on<T: Files>(&self, table: &T) -> std::io::Result<Option<u32>> {
        let theirs = (table as *const T).cast::<()>();
        match self.fixed {
            Some(_) if !std::ptr::eq(self.table.as_ptr().cast::<()>(), theirs) => {
                Err(std::io::Error::other(
                    "io_uring: a registered file posted on a ring other than its own",
                ))
            }
            fixed => Ok(fixed),
        }
    }

    #[cfg(test)]
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }
}

impl Drop for File {
    /// Clears the slot: nothing names it any more. A ring already gone
    /// took its table with it.
    fn drop(&mut self) {
        if let (Some(slot), Some(table)) = (self.fixed, self.table.upgrade()) {
            table.release(slot);
        }
    }
}

/// The slots of a ring's table of registered files: those never given out
/// (from `next` to `len`) and those cleared since.
pub(crate) struct Slots {
    free: Vec<u32>,
    next: u32,
    len: u32,
}

impl Slots {
    pub fn take(&mut self) -> Option<u32> {
        self.free.pop().or_else(|| {
            let slot = self.next;
            (slot < self.len).then(|| {
                self.next += 1;
                slot
            })
        })
    }

    /// `slot` is free again (cleared, or never filled).
    pub fn put(&mut self, slot: u32) {
        self.free.push(slot);
    }

    #[cfg(test)]
    pub fn free(&self) -> u32 {
        self.len - self.next + self.free.len() as u32
    }
}

/// Registers a sparse table of `want` registered files on `uring` (fewer
/// if the kernel refuses that many: it allows no more than the process's
/// open-file limit); None if it refuses any.
pub(crate) fn register_table(uring: &IoUring, want: u32) -> Option<Slots> {
    let mut len = want.min(MAX_FILES);
    while len > 0 {
        match uring.submitter().register_files_sparse(len) {
            Ok(()) => {
                return Some(Slots {
                    free: Vec::new(),
                    next: 0,
                    len,
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => len /= 2,
            Err(_) => return None,
        }
    }
    None
}

/// The SQE that clears `slot` (an `IORING_OP_FILES_UPDATE` to -1); it
/// points at static memory only.
pub(crate) fn clear(slot: u32) -> squeue::Entry {
    opcode::FilesUpdate::new(NO_FILE.as_ptr(), 1)
        .offset(slot as i32)
        .build()
}
