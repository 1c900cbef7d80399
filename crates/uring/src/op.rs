//! One connection half's operation: the slot its completion lands in, and
//! the memory its SQE points at.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::task::Waker;

use bytes::{Buf, Bytes, BytesMut};
use io_uring::squeue;

/// Where a half's operation stands; shared by the half and the ring's
/// table (which borrows it while the half holds it, and holds it once the
/// half is gone, until the operation's last completion).
///
/// A cache line of its own (aligned, and 64 bytes with its lock: a test
/// holds it), so that posting, completing and looking touch one line of
/// the slot (and not the `Arc`'s counts, the table borrowing): at 1000
/// connections every line a message touches of its connection is a miss.
/// The one completion a slot nearly always holds is inline; more (a
/// multishot receive's, when its half is slow) queue behind it in a
/// buffer of their own.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct Slot(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    /// The half's waker while an operation is posted and the half waits.
    waker: Option<Waker>,
    /// The oldest completion not yet seen by the half.
    first: Option<Done>,
    /// Completions after `first`, in the order they came (a multishot
    /// receive's, one per pool buffer filled). Empty while `first` is.
    /// Boxed: a pointer, not a queue's four words, in the slot's line.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<Done>>>,
    phase: Phase,
    /// The operation posted is a multishot receive: it goes on after a
    /// completion flagged `IORING_CQE_F_MORE`.
    multishot: bool,
    /// A cancel was asked for the multishot receive (too many of its
    /// completions unseen): asked once.
    stopping: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No operation in flight: the half may post one.
    #[default]
    Idle,
    /// Posted; `waker` (when the half waits) is woken on completion.
    Posted,
    /// The half is gone: a completion is the ring's to dispose of (a pool
    /// buffer it names goes back to the pool).
    Abandoned,
}

impl Inner {
    /// Leaves `waker` to be woken by the next completion (kept if the one
    /// there wakes the same task).
    fn wake(&mut self, waker: &Waker) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.waker = Some(waker.clone());
        }
    }

    fn push(&mut self, d: Done) {
        match self.first {
            None => self.first = Some(d),
            Some(_) => self.rest.get_or_insert_default().push_back(d),
        }
    }

    fn pop(&mut self) -> Option<Done> {
        let d = self.first.take()?;
        self.first = self.rest.as_mut().and_then(|r| r.pop_front());
        Some(d)
    }

    fn unseen(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.as_ref().map_or(0, |r| r.len())
    }
}

/// Completions a multishot receive may have waiting unseen (each holds a
/// pool buffer) before it is cancelled: what a connection whose reader
/// does not read (a throttled one) can take of its shard's pool. The
/// half posts it again once it has read them.
pub(crate) const MULTISHOT_UNSEEN: usize = 4;

/// `struct io_uring_sqe`'s `optlen` (include/uapi/linux/io_uring.h: the
/// u32 at byte 44, in a union with `splice_fd_in` and `file_index`). For
/// a multishot receive (Linux 6.17, "io_uring/net: Support multishot
/// receive len cap"): the bytes it receives in all before it ends,
/// completing without `IORING_CQE_F_MORE`; 0, no limit.
const SQE_OPTLEN: std::ops::Range<usize> = 44..48;
const SQE_SIZE: usize = 64;

/// `sqe` with its `optlen` set (the io-uring crate has no setter for a
/// receive's).
pub(crate) fn with_optlen(sqe: squeue::Entry, optlen: u32) -> squeue::Entry {
    // SAFETY: `squeue::Entry` is `#[repr(C)]` over `struct io_uring_sqe`,
    // 64 bytes of integers and unions of integers: it is plain bytes both
    // ways, every pattern valid (the transmutes check the sizes).
    #[allow(unsafe_code)]
    let mut raw: [u8; SQE_SIZE] = unsafe { std::mem::transmute(sqe) };
    raw[SQE_OPTLEN].copy_from_slice(&optlen.to_ne_bytes());
    #[allow(unsafe_code)]
    unsafe {
        std::mem::transmute::<[u8; SQE_SIZE], squeue::Entry>(raw)
    }
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

/// What the table does after a completion went to its slot.
pub(crate) struct Completed {
    /// The half's waker, to wake.
    pub waker: Option<Waker>,
    /// Cancel the multishot receive: its half leaves too much unseen.
    pub stop: bool,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the oldest completion not seen, or leaves `waker` to be woken
    /// by the next one.
    pub fn look(&self, waker: &Waker) -> Seen {
        let mut st = self.lock();
        if let Some(d) = st.pop() {
            return Seen::Done(d);
        }
        match st.phase {
            Phase::Idle | Phase::Abandoned => Seen::Idle,
            Phase::Posted => {
                st.wake(waker);
                Seen::Waiting
            }
        }
    }

    /// An operation was posted (a multishot receive, if `multishot`).
    pub(crate) fn posted(&self, waker: &Waker, multishot: bool) {
        let mut st = self.lock();
        st.phase = Phase::Posted;
        st.wake(waker);
        st.multishot = multishot;
        st.stopping = false;
    }

    /// Stores a completion; says whom to wake and whether to cancel a
    /// multishot receive. Returns the completion back if the half is gone.
    pub(crate) fn complete(&self, done: Done) -> Result<Completed, Done> {
        let mut st = self.lock();
        if st.phase == Phase::Abandoned {
            return Err(done);
        }
        // A single-shot operation ends with its first completion as the
        // half sees it (a zero-copy send's notification is the table's);
        // a multishot receive, with its first not flagged MORE.
        let ends = !st.multishot || !io_uring::cqueue::more(done.flags);
        st.push(done);
        let waker = match st.phase {
            Phase::Posted if ends => {
                st.phase = Phase::Idle;
                st.waker.take()
            }
            Phase::Posted => st.waker.take(),
            _ => None,
        };
        let stop = !ends && !st.stopping && st.unseen() >= MULTISHOT_UNSEEN;
        st.stopping |= stop;
        Ok(Completed { waker, stop })
    }

    /// The half lets go: from now on a completion comes back from
    /// `complete`. Returns whether an operation is still in flight (to
    /// cancel), and the completions the half never saw.
    pub fn abandon(&self) -> (bool, Vec<Done>) {
        let mut st = self.lock();
        let posted = st.phase == Phase::Posted;
        st.phase = Phase::Abandoned;
        st.waker = None;
        (posted, std::iter::from_fn(|| st.pop()).collect())
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
    /// A receive into this buffer's spare capacity (boxed: a completion
    /// then fits in its slot's line; these receives are a large frame's
    /// rest and handshakes, not every message).
    Recv(Box<BytesMut>),
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
        self.chunks
            .extend(chunks.filter(|c| !c.is_empty()).take(max).cloned());
        self.name_chunks()
    }

    /// Drops the first `n` bytes (what a short send sent), keeping the
    /// rest in order; returns their length and the msghdr naming them, as
    /// [`SendBufs::fill`].
    pub fn advance(&mut self, mut n: usize) -> (usize, *const libc::msghdr) {
        let whole = self
            .chunks
            .iter()
            .take_while(|c| {
                let gone = c.len() <= n;
                if gone {
                    n -= c.len();
                }
                gone
            })
            .count();
        self.chunks.drain(..whole);
        if let Some(c) = self.chunks.first_mut() {
            c.advance(n.min(c.len()));
        }
        self.name_chunks()
    }

    /// Points the iovecs and the msghdr at the chunks.
    fn name_chunks(&mut self) -> (usize, *const libc::msghdr) {
        self.iov.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot and its lock in one cache line (`Arc`'s counts in the line
    /// before it), and a completion small enough to sit in it.
    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(align_of::<Slot>(), 64);
        assert_eq!(size_of::<Slot>(), 64);
        assert_eq!(size_of::<Option<Done>>(), 24);
    }

    /// Completions come out in the order they went in, whether one waits
    /// or several (a multishot receive's); the half that lets go gets the
    /// ones it never saw, and a completion after that comes back.
    #[test]
    fn a_slots_completions_come_out_oldest_first() {
        // IORING_CQE_F_MORE (include/uapi/linux/io_uring.h): more to come.
        const MORE: u32 = 1 << 1;
        assert!(io_uring::cqueue::more(MORE));
        let done = |res| Done {
            res,
            flags: MORE,
            keep: Keep::Nothing,
        };
        let waker = Waker::noop();
        let slot = Slot::default();
        assert!(matches!(slot.look(waker), Seen::Idle));
        slot.posted(waker, true);
        assert!(matches!(slot.look(waker), Seen::Waiting));
        assert!(slot.complete(done(1)).is_ok());
        assert!(matches!(slot.look(waker), Seen::Done(d) if d.res == 1));
        let stops: Vec<bool> = (2..=6)
            .map(|res| slot.complete(done(res)).map(|c| c.stop).unwrap_or(false))
            .collect();
        // The fourth unseen asks for the receive to stop, once.
        assert_eq!(stops, [false, false, false, true, false]);
        assert!(matches!(slot.look(waker), Seen::Done(d) if d.res == 2));
        assert!(slot.complete(done(7)).is_ok());
        let (in_flight, unseen) = slot.abandon();
        assert!(in_flight);
        assert_eq!(
            unseen.iter().map(|d| d.res).collect::<Vec<_>>(),
            [3, 4, 5, 6, 7]
        );
        assert!(slot.complete(done(8)).is_err());
    }

    /// What a short send left: the rest of the chunks, in order, the first
    /// cut where the send stopped, and the iovecs naming exactly that.
    #[test]
    fn a_short_sends_rest_is_what_it_did_not_send() {
        let all = [
            Bytes::from_static(b"abc"),
            Bytes::from_static(b"de"),
            Bytes::from_static(b"fgh"),
        ];
        for sent in 0..=8 {
            let mut b = SendBufs::new();
            assert_eq!(b.fill(all.iter(), usize::MAX).0, 8);
            let (left, msg) = b.advance(sent);
            // SAFETY: `msg` and its iovecs point into `b`, alive here.
            #[allow(unsafe_code)]
            let rest: Vec<u8> = unsafe {
                let msg = &*msg;
                (0..msg.msg_iovlen as usize)
                    .flat_map(|i| {
                        let v = &*msg.msg_iov.add(i);
                        std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len).to_vec()
                    })
                    .collect()
            };
            assert_eq!(left, 8 - sent, "after {sent}");
            assert_eq!(&rest[..], &b"abcdefgh"[sent..], "after {sent}");
            assert!(b.iov.iter().all(|v| v.iov_len > 0), "after {sent}");
        }
    }

    /// `optlen` is where the kernel reads it: the crate's own setter for
    /// a setsockopt writes the same bytes.
    #[test]
    fn optlen_is_at_its_offset_in_the_sqe() {
        let fd = io_uring::types::Fd(3);
        let reference =
            io_uring::opcode::SetSockOpt::new(fd, 1, 2, std::ptr::null(), 0x1122_3344).build();
        let ours = with_optlen(
            io_uring::opcode::SetSockOpt::new(fd, 1, 2, std::ptr::null(), 0).build(),
            0x1122_3344,
        );
        // SAFETY: as in `with_optlen`.
        #[allow(unsafe_code)]
        let (a, b): ([u8; SQE_SIZE], [u8; SQE_SIZE]) =
            unsafe { (std::mem::transmute(reference), std::mem::transmute(ours)) };
        assert_eq!(a, b);
        assert_eq!(b[SQE_OPTLEN], 0x1122_3344u32.to_ne_bytes());
    }
}
