//! One connection half's operation: the slot its completion lands in, and
//! the memory its SQE points at.

use std::sync::Mutex;
use std::task::Waker;

use bytes::{Bytes, BytesMut};

/// Where a half's operation stands; shared by the half and the ring's
/// table (which holds it until the operation's last completion).
#[derive(Default)]
pub(crate) struct Slot(Mutex<State>);

#[derive(Default)]
enum State {
    /// No operation: the half may post one.
    #[default]
    Idle,
    /// Posted; its waker is woken on completion.
    Posted(Option<Waker>),
    /// Completed, not yet seen by the half.
    Done(Done),
    /// The half is gone: a completion is the ring's to dispose of (a pool
    /// buffer it names goes back to the pool).
    Abandoned,
}

/// A completion: the result (bytes, or -errno), its flags (the buffer a
/// pool receive used) and the memory the operation owned.
pub(crate) struct Done {
    pub res: i32,
    pub flags: u32,
    pub keep: Keep,
}

/// What the half finds in its slot.
pub(crate) enum Seen {
    Idle,
    Waiting,
    Done(Done),
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a completion, or leaves `waker` to be woken by one.
    pub fn look(&self, waker: &Waker) -> Seen {
        let mut st = self.lock();
        match &mut *st {
            State::Idle | State::Abandoned => Seen::Idle,
            State::Posted(w) => {
                if !w.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    *w = Some(waker.clone());
                }
                Seen::Waiting
            }
            State::Done(_) => match std::mem::take(&mut *st) {
                State::Done(d) => Seen::Done(d),
                _ => Seen::Idle,
            },
        }
    }

    /// Whether an operation is posted and not complete.
    pub fn posted_now(&self) -> bool {
        matches!(*self.lock(), State::Posted(_))
    }

    pub(crate) fn posted(&self, waker: &Waker) {
        *self.lock() = State::Posted(Some(waker.clone()));
    }

    /// Stores a completion; returns the waker to wake, or the completion
    /// back if the half is gone.
    pub(crate) fn complete(&self, done: Done) -> Result<Option<Waker>, Done> {
        let mut st = self.lock();
        if matches!(*st, State::Abandoned) {
            return Err(done);
        }
        match std::mem::replace(&mut *st, State::Done(done)) {
            State::Posted(w) => Ok(w),
            _ => Ok(None),
        }
    }

    /// The half lets go: from now on a completion comes back from
    /// `complete`. Returns what was there: an operation still in flight
    /// (to cancel), or a completion the half never saw.
    pub fn abandon(&self) -> Seen {
        match std::mem::replace(&mut *self.lock(), State::Abandoned) {
            State::Idle | State::Abandoned => Seen::Idle,
            State::Posted(_) => Seen::Waiting,
            State::Done(d) => Seen::Done(d),
        }
    }
}

impl Done {
    /// The pool buffer this completion holds (a pool receive's), which
    /// whoever takes the completion must give back.
    pub fn pool_buffer(&self) -> Option<u16> {
        io_uring::cqueue::buffer_select(self.flags)
    }
}

/// The memory an operation's SQE points at, owned by the ring's table
/// while the operation is in flight.
#[derive(Default)]
pub(crate) enum Keep {
    #[default]
    Nothing,
    /// A receive into this buffer's spare capacity.
    Recv(BytesMut),
    Send(Box<SendBufs>),
}

/// A vectored send: the chunks (clones of the runtime's), their iovecs and
/// the msghdr naming them. Kept by the writer between sends, so a send
/// allocates nothing once the vectors have grown.
pub(crate) struct SendBufs {
    chunks: Vec<Bytes>,
    iov: Vec<libc::iovec>,
    msg: libc::msghdr,
}

// SAFETY: the raw pointers in `iov` and `msg` point into `chunks` (Bytes,
// which are Send and Sync) and into `iov`'s own heap memory; nothing here
// is tied to a thread.
#[allow(unsafe_code)]
unsafe impl Send for SendBufs {}

impl SendBufs {
    pub fn new() -> Box<SendBufs> {
        // SAFETY: msghdr is a C struct of integers and pointers, for which
        // all-zero is a valid (empty) value.
        #[allow(unsafe_code)]
        let msg = unsafe { std::mem::zeroed::<libc::msghdr>() };
        Box::new(SendBufs {
            chunks: Vec::new(),
            iov: Vec::new(),
            msg,
        })
    }

    /// Fills in the chunks of `out` (up to `max` of them); returns their
    /// total length and the msghdr to post (valid while `self` is neither
    /// changed nor dropped; `self` is boxed, so it may move).
    pub fn fill<'a>(
        &mut self,
        chunks: impl Iterator<Item = &'a Bytes>,
        max: usize,
    ) -> (usize, *const libc::msghdr) {
        self.chunks.clear();
        self.iov.clear();
        self.chunks
            .extend(chunks.filter(|c| !c.is_empty()).take(max).cloned());
        let mut total = 0usize;
        for c in &self.chunks {
            total = total.saturating_add(c.len());
            self.iov.push(libc::iovec {
                iov_base: c.as_ptr() as *mut libc::c_void,
                iov_len: c.len(),
            });
        }
        self.msg.msg_iov = self.iov.as_mut_ptr();
        self.msg.msg_iovlen = self.iov.len() as _;
        (total, &self.msg)
    }

    /// Lets go of the chunks (the runtime's memory), keeping the vectors.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.iov.clear();
        self.msg.msg_iov = std::ptr::null_mut();
        self.msg.msg_iovlen = 0;
    }
}
