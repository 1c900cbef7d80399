//! A connection over the ring: its receiving and sending halves.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use io_uring::{cqueue, opcode, squeue, types};
use msgr_transport::{Outgoing, ReadRoom, Receiver, Sender, Stream, MAX_IOV};

use crate::op::{Done, Keep, Seen, SendBufs, Slot};
use crate::pool::GROUP;
use crate::ring::Ring;
use crate::Config;

/// A connected TCP socket whose I/O goes through the thread's ring. The
/// socket is in blocking mode: nothing reads or writes it but the ring
/// (which never blocks on it).
pub struct UringStream {
    sock: Arc<TcpStream>,
    ring: Arc<Ring>,
    config: Config,
}

impl UringStream {
    pub(crate) fn new(sock: TcpStream, config: Config) -> io::Result<UringStream> {
        sock.set_nonblocking(false)?;
        sock.set_nodelay(true)?;
        Ok(UringStream {
            sock: Arc::new(sock),
            ring: Ring::current(&config)?,
            config,
        })
    }
}

impl Stream for UringStream {
    type Reader = UringReader;
    type Writer = UringWriter;

    fn into_split(self) -> (UringReader, UringWriter) {
        let r = UringReader {
            half: Half::new(&self),
            held: None,
            direct_next: false,
        };
        let w = UringWriter {
            half: Half::new(&self),
            bufs: None,
        };
        (r, w)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    /// Later operations go to the current thread's ring; one in flight
    /// completes on the ring it was posted on, whose thread wakes this one.
    fn rehome(r: UringReader, w: UringWriter) -> io::Result<(UringReader, UringWriter)> {
        if !Arc::ptr_eq(&r.half.sock, &w.half.sock) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "rehome: reader and writer are halves of different streams",
            ));
        }
        let (mut r, mut w) = (r, w);
        let ring = Ring::current(&r.half.config)?;
        r.half.ring = ring.clone();
        w.half.ring = ring;
        Ok((r, w))
    }
}

/// What both halves have: the socket, the ring to post on, the slot of
/// their one operation, and where that operation was posted (to cancel it
/// if the half is dropped first).
struct Half {
    sock: Arc<TcpStream>,
    ring: Arc<Ring>,
    slot: Arc<Slot>,
    posted: Option<(Arc<Ring>, u64)>,
    config: Config,
}

impl Half {
    fn new(s: &UringStream) -> Half {
        Half {
            sock: s.sock.clone(),
            ring: s.ring.clone(),
            slot: Arc::new(Slot::default()),
            posted: None,
            config: s.config,
        }
    }

    fn fd(&self) -> types::Fd {
        types::Fd(self.sock.as_raw_fd())
    }

    /// Posts `sqe` on this half's socket, whose memory `keep` owns (the
    /// table keeps both until the last completion; a half dropped with the
    /// operation in flight cancels it).
    ///
    /// # Safety
    /// As [`Ring::post`], with this half's socket the only fd `sqe` names.
    #[allow(unsafe_code)]
    unsafe fn post(&mut self, keep: Keep, sqe: squeue::Entry, cx: &Context<'_>) -> io::Result<()> {
        // SAFETY: as the caller vouches.
        let ud = unsafe {
            self.ring
                .post(&self.slot, keep, &self.sock, sqe, cx.waker())?
        };
        self.posted = Some((self.ring.clone(), ud));
        Ok(())
    }

    /// The completion of the operation posted, with the ring it was on.
    fn look(&mut self, cx: &Context<'_>) -> Option<Option<(Done, Arc<Ring>)>> {
        match self.slot.look(cx.waker()) {
            Seen::Idle => Some(None),
            Seen::Waiting => None,
            Seen::Done(d) => {
                let ring = self
                    .posted
                    .take()
                    .map_or_else(|| self.ring.clone(), |(r, _)| r);
                Some(Some((d, ring)))
            }
        }
    }
}

impl Drop for Half {
    /// Cancels an operation in flight (its completion, when it comes, is
    /// the ring's to dispose of), or gives back the pool buffer of one
    /// that completed unseen.
    fn drop(&mut self) {
        let ring = self.posted.take();
        match self.slot.abandon() {
            Seen::Waiting => {
                if let Some((ring, ud)) = ring {
                    ring.cancel(ud);
                }
            }
            Seen::Done(d) => {
                if let Some(bid) = d.pool_buffer() {
                    ring.as_ref().map_or(&self.ring, |(r, _)| r).give_back(bid);
                }
            }
            Seen::Idle => {}
        }
    }
}

fn os_error(res: i32) -> io::Error {
    io::Error::from_raw_os_error(res.saturating_neg())
}

/// Bytes of a pool buffer not yet moved into the runtime's buffer (a read
/// limit stopped short of them).
struct Held {
    ring: Arc<Ring>,
    bid: u16,
    off: u32,
    len: u32,
}

/// A stream's receiving half: completions land in the shard's provided
/// buffers, which the runtime takes without copying.
pub struct UringReader {
    half: Half,
    held: Option<Held>,
    /// The pool ran dry: the next receive goes into the runtime's buffer.
    direct_next: bool,
}

impl Receiver for UringReader {
    fn path(&self) -> Option<msgr_transport::PathInfo> {
        msgr_transport::PathInfo::of_tcp(&*self.half.sock)
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
        room: ReadRoom,
    ) -> Poll<io::Result<usize>> {
        loop {
            if self.held.is_some() {
                return Poll::Ready(self.take_held(buf, room));
            }
            match self.half.look(cx) {
                None => return Poll::Pending,
                Some(Some((done, ring))) => {
                    if let Some(r) = self.on_done(done, ring, buf) {
                        return Poll::Ready(r);
                    }
                }
                Some(None) => {
                    if let Err(e) = self.post(cx, buf, room) {
                        return Poll::Ready(Err(e));
                    }
                }
            }
        }
    }
}

impl UringReader {
    /// Posts a receive: of a large frame's rest (or when the pool ran
    /// dry), straight into `buf`, which the operation owns until it
    /// completes; otherwise into a pool buffer the kernel picks when bytes
    /// arrive.
    fn post(&mut self, cx: &Context<'_>, buf: &mut BytesMut, room: ReadRoom) -> io::Result<()> {
        let fd = self.half.fd();
        let direct = self.direct_next || room.want > self.half.config.buffer_size as usize;
        if !direct {
            let sqe = opcode::Recv::new(fd, std::ptr::null_mut(), self.half.config.buffer_size)
                .buf_group(GROUP)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT);
            // SAFETY: the receive points at no memory of ours (the kernel
            // picks a pool buffer, which the ring owns).
            #[allow(unsafe_code)]
            return unsafe { self.half.post(Keep::Nothing, sqe, cx) };
        }
        self.direct_next = false;
        let limit = room.make(buf);
        let mut owned = std::mem::take(buf);
        if owned.capacity() == owned.len() {
            // A receive of 0 bytes would read as the end of the stream.
            owned.reserve(msgr_transport::HANDSHAKE_READ);
        }
        let spare = owned.spare_capacity_mut();
        // A large frame's rest is asked for whole (MSG_WAITALL: one
        // completion per frame, not one per segment), and no more.
        let whole = room.want > self.half.config.buffer_size as usize && spare.len() >= room.want;
        let (len, flags) = match whole {
            true => (room.want, libc::MSG_WAITALL),
            false => (spare.len().min(limit), 0),
        };
        let len = len.min(u32::MAX as usize) as u32;
        let at = spare.as_mut_ptr().cast::<u8>();
        let sqe = opcode::Recv::new(fd, at, len).flags(flags).build();
        // SAFETY: `at..at + len` is spare capacity of `owned`'s heap
        // allocation, which moves into the table with `owned` (a BytesMut
        // moved keeps its allocation) and is not touched until completion.
        #[allow(unsafe_code)]
        unsafe {
            self.half.post(Keep::Recv(owned), sqe, cx)
        }
    }

    /// A receive completed; None: post again.
    fn on_done(
        &mut self,
        done: Done,
        ring: Arc<Ring>,
        buf: &mut BytesMut,
    ) -> Option<io::Result<usize>> {
        let Done { res, flags, keep } = done;
        if let Keep::Recv(mut owned) = keep {
            let n = usize::try_from(res).unwrap_or(0);
            // SAFETY: the kernel wrote `res` bytes at the start of the
            // spare capacity it was given (at most that much).
            #[allow(unsafe_code)]
            unsafe {
                owned.set_len(owned.len() + n.min(owned.capacity() - owned.len()))
            };
            // `buf` was emptied when the receive was posted, and only this
            // reader fills it: the bytes go back in order.
            if buf.is_empty() {
                *buf = owned;
            } else {
                buf.extend_from_slice(&owned);
            }
            return Some(if res < 0 { Err(os_error(res)) } else { Ok(n) });
        }
        if res == -libc::ENOBUFS {
            #[cfg(test)]
            DRY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.direct_next = true;
            return None;
        }
        if res <= 0 {
            return Some(if res < 0 { Err(os_error(res)) } else { Ok(0) });
        }
        let Some(bid) = cqueue::buffer_select(flags) else {
            return Some(Err(io::Error::other(
                "io_uring: a pool receive named no buffer",
            )));
        };
        self.held = Some(Held {
            ring,
            bid,
            off: 0,
            len: res as u32,
        });
        None
    }

    /// Moves held pool bytes into `buf`, up to the read's limit.
    fn take_held(&mut self, buf: &mut BytesMut, room: ReadRoom) -> io::Result<usize> {
        let Some(h) = self.held.as_mut() else {
            return Ok(0);
        };
        let limit = room.make(buf);
        let n = (h.len as usize).min(limit) as u32;
        let done = n == h.len;
        let r = h
            .ring
            .with_buffer(h.bid, h.off, n, done, |b| buf.extend_from_slice(b));
        h.off += n;
        h.len -= n;
        if done {
            self.held = None;
        }
        r.map(|()| n as usize)
    }
}

impl Drop for UringReader {
    fn drop(&mut self) {
        if let Some(h) = self.held.take() {
            h.ring.give_back(h.bid);
        }
    }
}

/// A stream's sending half: vectored sends from the runtime's own chunks
/// (zero-copy for large ones).
pub struct UringWriter {
    half: Half,
    /// The vectors of the last send, reused.
    bufs: Option<Box<SendBufs>>,
}

impl Sender for UringWriter {
    fn poll_send(&mut self, cx: &mut Context<'_>, out: Outgoing<'_>) -> Poll<io::Result<usize>> {
        loop {
            match self.half.look(cx) {
                None => return Poll::Pending,
                Some(Some((done, _))) => return Poll::Ready(self.on_done(done)),
                Some(None) => {
                    if let Err(e) = self.post(cx, out) {
                        return Poll::Ready(Err(e));
                    }
                }
            }
        }
    }

    /// Waits for a send in flight, then shuts the socket's sending side.
    fn shutdown(&mut self) -> impl std::future::Future<Output = io::Result<()>> + Send + '_ {
        std::future::poll_fn(move |cx| {
            if let Some(Some((done, _))) = self.half.look(cx) {
                let _ = self.on_done(done);
            } else if self.half.slot.posted_now() {
                return Poll::Pending;
            }
            Poll::Ready(match self.half.sock.shutdown(Shutdown::Write) {
                Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
                r => r,
            })
        })
    }
}

impl UringWriter {
    /// Posts a vectored send of the first chunks of `out`; zero-copy when
    /// they are large enough and the configuration asks for it.
    fn post(&mut self, cx: &Context<'_>, out: Outgoing<'_>) -> io::Result<()> {
        let mut bufs = self.bufs.take().unwrap_or_else(SendBufs::new);
        let (total, msg) = bufs.fill(out.chunks(), MAX_IOV);
        if total == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "send: nothing to send",
            ));
        }
        let fd = self.half.fd();
        let flags = libc::MSG_NOSIGNAL as u32;
        let sqe = match self.half.config.zero_copy_min {
            Some(min) if total >= min => opcode::SendMsgZc::new(fd, msg).flags(flags).build(),
            _ => opcode::SendMsg::new(fd, msg).flags(flags).build(),
        };
        // SAFETY: the msghdr, its iovecs and the chunks they point at are
        // in `bufs`'s heap memory, which moves into the table with it and
        // stays there until the last completion (for a zero-copy send, the
        // notification that the kernel let go of the pages).
        #[allow(unsafe_code)]
        unsafe {
            self.half.post(Keep::Send(bufs), sqe, cx)
        }
    }

    fn on_done(&mut self, done: Done) -> io::Result<usize> {
        if let Keep::Send(mut b) = done.keep {
            b.clear();
            self.bufs = Some(b);
        }
        match usize::try_from(done.res) {
            Ok(0) => Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => Ok(n),
            Err(_) => Err(os_error(done.res)),
        }
    }
}

#[cfg(test)]
impl UringStream {
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.ring.clone()
    }
}

#[cfg(test)]
impl UringReader {
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.half.ring.clone()
    }
}

/// Pool receives that found the pool dry (tests look).
#[cfg(test)]
pub(crate) static DRY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
