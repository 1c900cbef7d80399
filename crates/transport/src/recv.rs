//! Receiving: a connection's reader appends what arrived to the runtime's
//! read buffer, which it gives room only once bytes are there. An idle
//! connection then holds no read buffer at all; only connections with
//! bytes in flight do (and a shard's in-flight reads are few at a time).
//!
//! A small read buffer a connection lets go of is kept for the next
//! connection of its thread (its shard) that has bytes to read: one buffer
//! a thread, at most `MIN_READ` of room. With many connections each
//! sending a message at a time, each message would otherwise allocate a
//! 64 KiB buffer and free it again (and pay for making it shareable when
//! its frame is split off); instead they take turns with the same one,
//! reused in place once the frames taken from it are gone.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::task::{Context, Poll};

use bytes::{BufMut, BytesMut};

/// The receiving half of a connection.
pub trait Receiver: Send + Unpin + 'static {
    /// Polls for bytes: once the peer has sent some (or closed), appends
    /// what is there to `buf`, as much as `room` allows; `Ok(0)`: the
    /// peer closed. `Pending` registers `cx`'s waker for when bytes come.
    ///
    /// Nothing is set aside for this connection while it waits: `buf`,
    /// which the runtime empties and lets go between reads, is given room
    /// ([`ReadRoom::make`]) only once bytes are there. A readiness-based
    /// socket waits for readability, then reads; a completion-based
    /// transport receives into memory of its own (a pool its connections
    /// share) and moves what arrived into `buf`.
    ///
    /// Poll-based, so that a runtime's driver polls its sources in one
    /// step of its own rather than building a future per source and turn.
    /// A `Pending` poll has taken nothing; the next poll may pass another
    /// `room` (and the same `buf`).
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
        room: ReadRoom,
    ) -> Poll<io::Result<usize>>;

    /// What the transport knows of the path to the peer (for TCP, from
    /// TCP_INFO); `None` where it cannot tell (pipes, which lose nothing).
    fn path(&self) -> Option<crate::PathInfo> {
        None
    }

    /// [`Receiver::poll_recv`] as a future (cancel-safe: dropped before it
    /// is ready, it has taken nothing).
    fn recv<'a>(
        &'a mut self,
        buf: &'a mut BytesMut,
        room: ReadRoom,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a {
        std::future::poll_fn(move |cx| self.poll_recv(cx, buf, room))
    }
}

/// Smallest read once a session is READY (many small frames per read).
pub const MIN_READ: usize = 64 * 1024;
/// The same during a handshake: its frames are small (16 KiB at most) and
/// a connection that has not authenticated should cost little.
pub const HANDSHAKE_READ: usize = 4 * 1024;

thread_local! {
    /// The small read buffer this thread's last reader let go of.
    static SPARE: Cell<Option<BytesMut>> = const { Cell::new(None) };
}

/// This thread's spare read buffer, if there is one.
fn take_spare() -> Option<BytesMut> {
    SPARE.try_with(Cell::take).ok().flatten()
}

/// Lets an emptied read buffer go (what the frames taken from it still use
/// stays with them), so that a connection waiting for its peer holds none:
/// a small one is kept for this thread's next reader, in place of the
/// spare kept before; a large frame's (its room used up, its allocation
/// maybe big) is dropped. A buffer still holding bytes is left as it is.
pub fn let_go(buf: &mut BytesMut) {
    if !buf.is_empty() {
        return;
    }
    let buf = std::mem::take(buf);
    if (HANDSHAKE_READ..=MIN_READ).contains(&buf.capacity()) {
        let _ = SPARE.try_with(|s| s.set(Some(buf)));
    }
}

/// What the next read is for: the bytes that complete the step of reading
/// at hand (`want`: a banner, a frame's head, the rest of a frame), and the
/// smallest read worth making room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRoom {
    /// The bytes that complete the step at hand.
    pub want: usize,
    /// The smallest read worth making room for.
    pub min_read: usize,
}

impl ReadRoom {
    /// Makes room in `buf` for the bytes that complete the step at hand.
    ///
    /// - Small steps get room for a read of at least `min_read` through
    ///   `BytesMut::reserve`, whose growth (reclaiming space once the
    ///   frames taken from it are gone, doubling otherwise) lets small
    ///   frames be read many at a time; unless half of that is there
    ///   already. A reader with no buffer takes its thread's spare first.
    /// - The rest of a large frame is not left to `reserve`: growing the
    ///   allocation with `realloc` copies all of it, the frames already
    ///   taken included. Its unread bytes (what the read of the frame's
    ///   head brought) move to an allocation of the frame's size instead,
    ///   unless the space is there or can be reclaimed.
    /// - A large frame that lacks only a few bytes is completed where it
    ///   is, rather than moved to make room for a full read.
    ///
    /// Returns how much the read may take: up to the end of a large frame
    /// and no further (bytes of the next frame read along would have to
    /// move when its own buffer is made); small steps, as much as there is
    /// room for.
    pub fn make(&self, buf: &mut BytesMut) -> usize {
        let (want, min_read) = (self.want, self.min_read);
        let large = want > min_read;
        let read_limit = if large { want } else { usize::MAX };
        let spare = buf.capacity().saturating_sub(buf.len());
        if spare >= want && (buf.len() >= min_read || (!large && spare >= min_read / 2)) {
            return read_limit;
        }
        if !large {
            if buf.capacity() == 0 {
                if let Some(kept) = take_spare() {
                    *buf = kept;
                }
            }
            buf.reserve(min_read);
        } else if !buf.try_reclaim(want) {
            let mut fresh = BytesMut::with_capacity(buf.len().saturating_add(want));
            fresh.extend_from_slice(buf);
            *buf = fresh;
        }
        read_limit
    }
}

/// [`Receiver::recv`] on a readiness-based socket: waits for readability
/// (`ready`) holding no buffer, then gives `buf` room and reads into it
/// without blocking (`read`). Once the socket is drained, an empty buffer
/// goes (to the thread's spare) and the reader waits anew.
pub(crate) fn poll_recv_ready(
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
    room: ReadRoom,
    mut ready: impl FnMut(&mut Context<'_>) -> Poll<io::Result<()>>,
    mut read: impl FnMut(&mut bytes::buf::Limit<&mut BytesMut>) -> io::Result<usize>,
) -> Poll<io::Result<usize>> {
    loop {
        if let Err(e) = std::task::ready!(ready(cx)) {
            return Poll::Ready(Err(e));
        }
        let limit = room.make(buf);
        match read(&mut buf.limit(limit)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => let_go(buf),
            r => return Poll::Ready(r),
        }
    }
}

/// One non-blocking read into `b` (`read`: a tokio socket's
/// `try_read_buf`) inside that socket's `try_io` (`io`), which clears the
/// socket's readiness when its closure says `WouldBlock`.
///
/// A read that fills less than the room it was given has drained the
/// socket, and epoll (edge-triggered) raises a new edge for bytes that
/// come after: that clears the readiness too, as tokio's own `poll_read`
/// does. The next poll then waits for that edge instead of making a `recv`
/// that returns EAGAIN: a system call per message, which at thousands of
/// connections also touches the socket's cold lines in the kernel. The
/// clear applies to the readiness `io` saw before the read: tokio drops a
/// clear whose tick its reactor has since moved past, so an edge raised
/// after the read is not lost.
pub(crate) fn read_once<B: BufMut>(
    b: &mut B,
    io: impl FnOnce(&mut dyn FnMut() -> io::Result<usize>) -> io::Result<usize>,
    mut read: impl FnMut(&mut B) -> io::Result<usize>,
) -> io::Result<usize> {
    let room = b.chunk_mut().len();
    let mut short = None;
    let r = io(&mut || match read(b)? {
        n if 0 < n && n < room => {
            short = Some(n);
            Err(io::ErrorKind::WouldBlock.into())
        }
        n => Ok(n),
    });
    match short {
        Some(n) => Ok(n),
        None => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(want: usize) -> ReadRoom {
        ReadRoom {
            want,
            min_read: MIN_READ,
        }
    }

    #[test]
    fn make_keeps_unread_bytes_and_reuses_a_free_allocation() {
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![7u8; (1 << 20) - 3]);
        rbuf.extend_from_slice(b"abc");
        // A frame is taken while it is still in use: the unread bytes move.
        let frame = rbuf.split_to((1 << 20) - 3);
        assert_eq!(room(1 << 20).make(&mut rbuf), 1 << 20);
        assert_eq!(&rbuf[..], b"abc");
        assert!(rbuf.capacity() >= 3 + (1 << 20));
        drop(frame);

        // Once the frame is gone its allocation is reused, not copied.
        let start = rbuf.as_ptr() as usize;
        let end = start + rbuf.capacity();
        let frame = rbuf.split_to(3);
        drop(frame);
        room(1 << 19).make(&mut rbuf);
        assert!((start..end).contains(&(rbuf.as_ptr() as usize)));
        assert!(rbuf.capacity() >= 1 << 19);

        // A frame that lacks a few bytes stays where it is when its buffer
        // has them, however little more room there is.
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![1u8; (1 << 20) - 100]);
        let at = rbuf.as_ptr();
        assert_eq!(room(100).make(&mut rbuf), usize::MAX);
        assert_eq!(rbuf.as_ptr(), at);
    }

    /// The allocation behind `buf`'s first byte lies in `range`.
    fn within(buf: &BytesMut, range: &std::ops::Range<usize>) -> bool {
        range.contains(&(buf.as_ptr() as usize))
    }

    #[test]
    fn a_buffer_let_go_serves_the_threads_next_reader_in_place() {
        // One connection reads a frame, takes it, lets the buffer go.
        let mut a = BytesMut::new();
        room(10).make(&mut a);
        assert!(a.capacity() >= MIN_READ);
        let start = a.as_ptr() as usize;
        let range = start..start + a.capacity();
        a.put_slice(b"frame");
        let frame = a.split_to(5);
        let_go(&mut a);
        assert_eq!(a.capacity(), 0, "a waiting connection holds no buffer");
        drop(frame);

        // The next reader on this thread reads into the same memory.
        let mut b = BytesMut::new();
        room(10).make(&mut b);
        assert!(within(&b, &range) && b.capacity() >= MIN_READ);
        assert_eq!(b.as_ptr() as usize, start, "from its start again");

        // While a frame taken from it is alive, the next reader gets
        // memory of its own and the frame keeps its bytes.
        b.put_slice(b"kept!");
        let alive = b.split_to(5);
        let_go(&mut b);
        let mut c = BytesMut::new();
        room(10).make(&mut c);
        assert!(!within(&c, &range));
        assert_eq!(&alive[..], b"kept!");

        // A buffer with bytes stays; a large frame's is not kept.
        c.put_slice(b"x");
        let_go(&mut c);
        assert_eq!(&c[..], b"x");
        let mut big = BytesMut::with_capacity(4 * MIN_READ);
        let_go(&mut big);
        assert!(take_spare().is_none());
    }

    /// What `read_once` tells the socket's `try_io` (which clears the
    /// readiness on `WouldBlock`) and returns, for each kind of read.
    #[test]
    fn read_once_clears_readiness_on_a_short_read_only() {
        let run = |result: io::Result<usize>| {
            let mut cleared = false;
            let buf = BytesMut::with_capacity(64);
            let room = buf.capacity();
            let r = read_once(
                &mut buf.limit(room),
                |f| {
                    let r = f();
                    cleared = matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock);
                    r
                },
                |_| match &result {
                    Ok(n) => Ok(*n),
                    Err(e) => Err(e.kind().into()),
                },
            );
            (r.map_err(|e| e.kind()), cleared)
        };
        assert_eq!(run(Ok(10)), (Ok(10), true));
        assert_eq!(run(Ok(64)), (Ok(64), false));
        assert_eq!(run(Ok(0)), (Ok(0), false));
        assert_eq!(
            run(Err(io::ErrorKind::WouldBlock.into())),
            (Err(io::ErrorKind::WouldBlock), true)
        );
        assert_eq!(
            run(Err(io::ErrorKind::ConnectionReset.into())),
            (Err(io::ErrorKind::ConnectionReset), false)
        );
    }

    #[test]
    fn a_stale_wakeup_lets_the_empty_buffer_go() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut buf = BytesMut::new();
        let mut readies = 0;
        let r = poll_recv_ready(
            &mut cx,
            &mut buf,
            room(10),
            |_| {
                readies += 1;
                match readies {
                    1 => Poll::Ready(Ok(())),
                    _ => Poll::Pending,
                }
            },
            |_| Err(io::ErrorKind::WouldBlock.into()),
        );
        assert!(r.is_pending());
        assert_eq!(buf.capacity(), 0);

        let r = poll_recv_ready(
            &mut cx,
            &mut buf,
            room(10),
            |_| Poll::Ready(Ok(())),
            |b| {
                b.put_slice(b"hello");
                Ok(5)
            },
        );
        assert!(matches!(r, Poll::Ready(Ok(5))));
        assert_eq!(&buf[..], b"hello");
    }
}
