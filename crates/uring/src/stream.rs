//! A connection over the ring: its receiving and sending halves.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use io_uring::{cqueue, opcode, squeue, types};
use msgr_transport::tcp::RecvLowat;
use msgr_transport::{Outgoing, ReadRoom, Receiver, Sender, Stream, MAX_IOV};

use crate::file::File;
use crate::op::{self, Done, Keep, Seen, SendBufs, Slot, MULTISHOT_UNSEEN};
use crate::pool::GROUP;
use crate::ring::{Completes, Ring};
use crate::Config;

/// A connected TCP socket whose I/O goes through the thread's ring (a
/// registered file of it, when it has a slot free). The socket is in
/// blocking mode: nothing reads or writes it but the ring (which never
/// blocks on it).
pub struct UringStream {
    file: Arc<File>,
    ring: Arc<Ring>,
    config: Config,
}

impl UringStream {
    pub(crate) fn new(sock: TcpStream, config: Config) -> io::Result<UringStream> {
        sock.set_nonblocking(false)?;
        sock.set_nodelay(true)?;
        let ring = Ring::current(&config)?;
        Ok(UringStream {
            file: Arc::new(File::new(&ring, Arc::new(sock))),
            ring,
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
            stopping: false,
            limited: false,
            streaming: false,
            lowat: RecvLowat::default(),
            #[cfg(test)]
            direct_bytes: 0,
        };
        let w = UringWriter {
            half: Half::new(&self),
            bufs: None,
            owed: 0,
            #[cfg(test)]
            waitall: true,
            #[cfg(test)]
            rests: 0,
        };
        (r, w)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.file.sock().local_addr().ok()
    }

    /// Later operations go to the current thread's ring (the socket in a
    /// slot of its registered files); one in flight completes on the ring
    /// it was posted on, whose thread wakes this one.
    fn rehome(r: UringReader, w: UringWriter) -> io::Result<(UringReader, UringWriter)> {
        if !Arc::ptr_eq(r.half.file.sock(), w.half.file.sock()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "rehome: reader and writer are halves of different streams",
            ));
        }
        let (mut r, mut w) = (r, w);
        let ring = Ring::current(&r.half.config)?;
        // A multishot receive goes on receiving on the ring it was posted
        // on: it is cancelled, and posted again here once it ended.
        r.stop_multishot();
        if !Arc::ptr_eq(&ring, &r.half.ring) {
            let file = Arc::new(File::new(&ring, r.half.file.sock().clone()));
            r.half.file = file.clone();
            w.half.file = file;
        }
        r.half.ring = ring.clone();
        w.half.ring = ring;
        Ok((r, w))
    }
}

/// What both halves have: the socket (as the ring to post on names it),
/// that ring, the slot of their one operation, and where that operation
/// was posted (to cancel it if the half is dropped first).
struct Half {
    file: Arc<File>,
    ring: Arc<Ring>,
    slot: Arc<Slot>,
    posted: Option<Posted>,
    config: Config,
}

/// The operation in flight: the ring it is on, its user_data there, and
/// whether it is a multishot receive (which goes on after a completion).
struct Posted {
    ring: Arc<Ring>,
    user_data: u64,
    multishot: bool,
}

impl Half {
    fn new(s: &UringStream) -> Half {
        Half {
            file: s.file.clone(),
            ring: s.ring.clone(),
            slot: Arc::new(Slot::default()),
            posted: None,
            config: s.config,
        }
    }

    fn fd(&self) -> types::Fd {
        self.file.fd()
    }

    /// Posts `sqe` on this half's socket, whose memory `keep` owns (the
    /// table keeps both until the last completion; a half dropped with the
    /// operation in flight cancels it). Its completion wakes `waker` (a
    /// half that looks for it later leaves its own then).
    ///
    /// # Safety
    /// As [`Ring::post`], with [`Half::fd`] the only fd `sqe` names. (The
    /// half holds its slot until its drop, which lets the table adopt it.)
    #[allow(unsafe_code)]
    unsafe fn post(
        &mut self,
        keep: Keep,
        sqe: squeue::Entry,
        waker: &Waker,
        completes: Completes,
    ) -> io::Result<()> {
        // SAFETY: as the caller vouches.
        let user_data = unsafe {
            self.ring
                .post(&self.slot, keep, &self.file, sqe, waker, completes)?
        };
        self.posted = Some(Posted {
            ring: self.ring.clone(),
            user_data,
            multishot: completes == Completes::Many,
        });
        Ok(())
    }

    /// A completion of the operation posted, with the ring it was on
    /// (the operation's last: it is no longer in flight; or a multishot
    /// receive's, which goes on).
    fn look(&mut self, cx: &Context<'_>) -> Option<Option<(Done, Arc<Ring>)>> {
        match self.slot.look(cx.waker()) {
            Seen::Idle => Some(None),
            Seen::Waiting => None,
            Seen::Done(d) => {
                let goes_on = self
                    .posted
                    .as_ref()
                    .is_some_and(|p| p.multishot && cqueue::more(d.flags));
                let ring = match goes_on {
                    true => self.posted.as_ref().map(|p| p.ring.clone()),
                    false => self.posted.take().map(|p| p.ring),
                };
                Some(Some((d, ring.unwrap_or_else(|| self.ring.clone()))))
            }
        }
    }

    /// The multishot receive in flight, if one is.
    fn multishot(&self) -> Option<&Posted> {
        self.posted.as_ref().filter(|p| p.multishot)
    }
}

impl Drop for Half {
    /// Cancels an operation in flight (its completion, when it comes, is
    /// the ring's to dispose of), and gives back the pool buffers of
    /// completions never seen. The table, which borrowed the slot for
    /// the operation, takes a reference of its own first.
    fn drop(&mut self) {
        let posted = self.posted.take();
        let (in_flight, unseen) = self.slot.abandon();
        if let Some(p) = &posted {
            p.ring.adopt(p.user_data, &self.slot);
        }
        let ring = posted.as_ref().map_or(&self.ring, |p| &p.ring);
        for bid in unseen.iter().filter_map(Done::pool_buffer) {
            ring.give_back(bid);
        }
        if let (true, Some(p)) = (in_flight, &posted) {
            p.ring.cancel(p.user_data);
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

/// A stream's receiving half. One multishot receive stays posted while
/// the connection reads small steps: each time bytes arrive, the kernel
/// puts them in a buffer of the shard's pool and completes, with no
/// receive to post again and no readiness poll to arm per message. The
/// rest of a large frame, and the bytes of a peer that streams (a
/// completion saying more wait in the socket), are received straight into
/// the runtime's buffer instead, one receive at a time, each of which
/// completes at once (the multishot receive cancelled first, so the bytes
/// stay in order); the multishot receive is posted again once a receive
/// empties the socket.
pub struct UringReader {
    half: Half,
    held: Option<Held>,
    /// The pool ran dry: the next receive goes into the runtime's buffer.
    direct_next: bool,
    /// The multishot receive in flight was asked to stop.
    stopping: bool,
    /// The multishot receive posted has a limit.
    limited: bool,
    /// The last receive left bytes in the socket or brought many: the
    /// peer streams, and the next receive goes straight into the
    /// runtime's buffer, where it mostly completes at once (as epoll's
    /// read would) rather than through the pool (two copies, the first
    /// into a buffer the cache has lost).
    streaming: bool,
    /// The socket's receive low-water mark.
    lowat: RecvLowat,
    /// Bytes received straight into the runtime's buffer (tests look).
    #[cfg(test)]
    pub(crate) direct_bytes: usize,
}

/// `IORING_RECVSEND_POLL_FIRST` (include/uapi/linux/io_uring.h): a
/// receive's `ioprio` flag to arm the readiness poll before trying.
const RECVSEND_POLL_FIRST: u16 = 1;

/// Multishot receives are posted with a limit of bytes, after which they
/// end and are posted again once those are read: that bounds what a
/// connection whose reader does not read takes of the shard's pool before
/// the table sees its completions (cancelling the receive after
/// [`MULTISHOT_UNSEEN`] unseen completions bounds it when bytes trickle
/// in). Cleared if the kernel refuses the limit.
static LIMITS: AtomicBool = AtomicBool::new(true);

impl Receiver for UringReader {
    fn path(&self) -> Option<msgr_transport::PathInfo> {
        msgr_transport::PathInfo::of_tcp(&**self.half.file.sock())
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
                None => {
                    if self.direct(room) {
                        self.stop_multishot();
                    }
                    return Poll::Pending;
                }
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
    /// Whether the next receive goes straight into the runtime's buffer:
    /// a large frame's rest, bytes already waiting in the socket, or the
    /// pool ran dry.
    fn direct(&self, room: ReadRoom) -> bool {
        self.direct_next || self.streaming || room.want > self.half.config.buffer_size as usize
    }

    /// Whether a receive of `n` bytes completing with `flags` says the
    /// peer streams: bytes still wait in the socket, or it brought at
    /// least half a pool buffer.
    fn streams(&self, n: usize, flags: u32) -> bool {
        n > 0 && (cqueue::sock_nonempty(flags) || n >= self.half.config.buffer_size as usize / 2)
    }

    /// Asks the multishot receive in flight, if any, to end (once); its
    /// last completion comes as any other.
    fn stop_multishot(&mut self) {
        if let (Some(p), false) = (self.half.multishot(), self.stopping) {
            p.ring.cancel(p.user_data);
            self.stopping = true;
        }
    }

    /// Posts a receive: of a large frame's rest (or when the pool ran
    /// dry), straight into `buf`, which the operation owns until it
    /// completes; otherwise a multishot receive into pool buffers the
    /// kernel picks when bytes arrive.
    fn post(&mut self, cx: &Context<'_>, buf: &mut BytesMut, room: ReadRoom) -> io::Result<()> {
        let fd = self.half.fd();
        self.stopping = false;
        self.lowat.update(&**self.half.file.sock(), room);
        if !self.direct(room) {
            let limit = match LIMITS.load(Ordering::Relaxed) {
                true => MULTISHOT_UNSEEN as u32 * self.half.config.buffer_size,
                false => 0,
            };
            self.limited = limit > 0;
            let sqe = op::with_optlen(
                opcode::RecvMulti::new(fd, GROUP)
                    .build()
                    .flags(squeue::Flags::BUFFER_SELECT),
                limit,
            );
            // SAFETY: the receive points at no memory of ours (the kernel
            // picks pool buffers, which the ring owns).
            #[allow(unsafe_code)]
            return unsafe {
                self.half
                    .post(Keep::Nothing, sqe, cx.waker(), Completes::Many)
            };
        }
        self.direct_next = false;
        let limit = room.make(buf);
        let mut owned = std::mem::take(buf);
        if owned.capacity() == owned.len() {
            // A receive of 0 bytes would read as the end of the stream.
            owned.reserve(msgr_transport::HANDSHAKE_READ);
        }
        let spare = owned.spare_capacity_mut();
        // A large frame's rest: the receive waits for the socket's
        // readiness first, which the low-water mark holds back until the
        // rest is there, then takes it whole. (Not MSG_WAITALL, which
        // takes what is there at once and is retried, the thread woken,
        // for every segment after.)
        let ioprio = match room.want > self.half.config.buffer_size as usize {
            true => RECVSEND_POLL_FIRST,
            false => 0,
        };
        let len = spare.len().min(limit).min(u32::MAX as usize) as u32;
        let at = spare.as_mut_ptr().cast::<u8>();
        let sqe = opcode::Recv::new(fd, at, len).ioprio(ioprio).build();
        // SAFETY: `at..at + len` is spare capacity of `owned`'s heap
        // allocation, which moves into the table with `owned` (a BytesMut
        // moved keeps its allocation) and is not touched until completion.
        #[allow(unsafe_code)]
        unsafe {
            self.half.post(
                Keep::Recv(Box::new(owned)),
                sqe,
                cx.waker(),
                Completes::Once,
            )
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
        if let Keep::Recv(owned) = keep {
            let mut owned = *owned;
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
            self.streaming = self.streams(n, flags);
            #[cfg(test)]
            {
                self.direct_bytes += n;
            }
            return Some(if res < 0 { Err(os_error(res)) } else { Ok(n) });
        }
        if res == -libc::ENOBUFS {
            #[cfg(test)]
            DRY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.direct_next = true;
            return None;
        }
        // A multishot receive we stopped (for a large frame, a move to
        // another ring, or too much left unseen) ends cancelled: post
        // again.
        if res == -libc::ECANCELED {
            return None;
        }
        // A kernel before 6.17 knows no limit to a multishot receive: it
        // is posted without one from then on.
        if res == -libc::EINVAL && std::mem::take(&mut self.limited) {
            LIMITS.store(false, Ordering::Relaxed);
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
        if self.streams(res as usize, flags) {
            self.streaming = true;
            self.stop_multishot();
        }
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
///
/// A send's bytes are reported taken as soon as it is posted: the send
/// holds clones of its chunks, and with `MSG_WAITALL` the kernel sends
/// them all before it completes (or fails the socket). Its completion then
/// wakes nobody; the next send, or the shutdown, finds it (and waits for
/// it if it has not come: one send at a time keeps the stream's bytes in
/// order). A connection answering one message at a time is woken once per
/// message, by its receive, as over epoll, and not again by the send. An
/// error surfaces at the next send or the shutdown (the reader sees the
/// socket fail too). A short send (an interrupted one) is finished from
/// the clones before anything newer is posted. A zero-copy send is
/// reported when it completes: its chunks are the table's until the
/// kernel's notification.
pub struct UringWriter {
    half: Half,
    /// The vectors of the last send, reused.
    bufs: Option<Box<SendBufs>>,
    /// Bytes of the send in flight already reported taken (0 for a
    /// zero-copy one, reported at its completion).
    owed: usize,
    /// Sends ask for every byte (tests clear it to have short sends).
    #[cfg(test)]
    pub(crate) waitall: bool,
    /// Rests of short sends posted (tests look).
    #[cfg(test)]
    pub(crate) rests: usize,
}

impl Sender for UringWriter {
    fn poll_send(&mut self, cx: &mut Context<'_>, out: Outgoing<'_>) -> Poll<io::Result<usize>> {
        loop {
            match self.half.look(cx) {
                None => return Poll::Pending,
                Some(Some((done, _))) => match self.on_done(done) {
                    // A zero-copy send's bytes, reported now.
                    Ok(Some(n)) => return Poll::Ready(Ok(n)),
                    // Bytes reported when posted (or their rest posted).
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Err(e)),
                },
                Some(None) => match self.post(out) {
                    Ok(Some(n)) => return Poll::Ready(Ok(n)),
                    // Zero-copy: wait for the completion (the loop's look
                    // leaves this task's waker).
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Err(e)),
                },
            }
        }
    }

    /// Waits for the send in flight (and the rest of a short one), then
    /// shuts the socket's sending side.
    fn shutdown(&mut self) -> impl std::future::Future<Output = io::Result<()>> + Send + '_ {
        std::future::poll_fn(move |cx| {
            loop {
                match self.half.look(cx) {
                    None => return Poll::Pending,
                    Some(Some((done, _))) => {
                        // A failed send does not keep the socket open.
                        if self.on_done(done).is_err() {
                            break;
                        }
                    }
                    Some(None) => break,
                }
            }
            Poll::Ready(match self.half.file.sock().shutdown(Shutdown::Write) {
                Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
                r => r,
            })
        })
    }
}

impl UringWriter {
    /// Posts a vectored send of the first chunks of `out`; zero-copy when
    /// they are large enough and the configuration asks for it. Returns
    /// the bytes taken, or None for a zero-copy send (reported when it
    /// completes).
    fn post(&mut self, out: Outgoing<'_>) -> io::Result<Option<usize>> {
        let mut bufs = self.bufs.take().unwrap_or_else(SendBufs::new);
        let (total, msg) = bufs.fill(out.chunks(), MAX_IOV);
        if total == 0 {
            self.bufs = Some(bufs);
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "send: nothing to send",
            ));
        }
        let zero_copy = self
            .half
            .config
            .zero_copy_min
            .is_some_and(|min| total >= min);
        self.post_bufs(bufs, msg, total, zero_copy)?;
        Ok((!zero_copy).then_some(total))
    }

    /// Posts the send `msg` names (in `bufs`) of `total` bytes; its
    /// completion wakes nobody (whoever waits for it looks).
    fn post_bufs(
        &mut self,
        bufs: Box<SendBufs>,
        msg: *const libc::msghdr,
        total: usize,
        zero_copy: bool,
    ) -> io::Result<()> {
        let fd = self.half.fd();
        let flags = libc::MSG_NOSIGNAL as u32 | self.waitall_flag();
        let (sqe, completes) = match zero_copy {
            true => (
                opcode::SendMsgZc::new(fd, msg).flags(flags).build(),
                Completes::Notified,
            ),
            false => (
                opcode::SendMsg::new(fd, msg).flags(flags).build(),
                Completes::Once,
            ),
        };
        // SAFETY: the msghdr, its iovecs and the chunks they point at are
        // in `bufs`'s heap memory, which moves into the table with it and
        // stays there until the last completion (for a zero-copy send, the
        // notification that the kernel let go of the pages).
        #[allow(unsafe_code)]
        unsafe {
            self.half
                .post(Keep::Send(bufs), sqe, Waker::noop(), completes)?
        };
        self.owed = if zero_copy { 0 } else { total };
        Ok(())
    }

    /// MSG_WAITALL: the ring sends every byte before it completes,
    /// waiting for room as often as it must (tests may leave it out).
    fn waitall_flag(&self) -> u32 {
        #[cfg(test)]
        if !self.waitall {
            return 0;
        }
        libc::MSG_WAITALL as u32
    }

    /// A send's completion: a zero-copy send's bytes (Some); for one
    /// reported when posted, None once all of it went (the rest of a short
    /// one is posted again first).
    fn on_done(&mut self, done: Done) -> io::Result<Option<usize>> {
        let owed = std::mem::take(&mut self.owed);
        let sent = match usize::try_from(done.res) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(_) => return Err(os_error(done.res)),
        };
        let bufs = match done.keep {
            Keep::Send(b) => Some(b),
            _ => None,
        };
        if owed == 0 {
            // A zero-copy send, reported now; its chunks are the table's
            // until the kernel's notification (unless none is to come).
            if let Some(mut b) = bufs {
                b.clear();
                self.bufs = Some(b);
            }
            return Ok(Some(sent));
        }
        let Some(mut bufs) = bufs else {
            return Err(io::Error::other(
                "io_uring: a send completed without its chunks",
            ));
        };
        if sent < owed {
            #[cfg(test)]
            {
                self.rests += 1;
            }
            let (left, msg) = bufs.advance(sent);
            self.post_bufs(bufs, msg, left, false)?;
            return Ok(None);
        }
        bufs.clear();
        self.bufs = Some(bufs);
        Ok(None)
    }
}

#[cfg(test)]
impl UringStream {
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.ring.clone()
    }

    /// Its socket is in a slot of the ring's registered files.
    pub(crate) fn fixed(&self) -> bool {
        self.file.is_fixed()
    }
}

#[cfg(test)]
impl UringWriter {
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.half.ring.clone()
    }
}

#[cfg(test)]
impl UringReader {
    pub(crate) fn ring(&self) -> Arc<Ring> {
        self.half.ring.clone()
    }

    /// Its half's slot, not held.
    pub(crate) fn slot(&self) -> std::sync::Weak<Slot> {
        Arc::downgrade(&self.half.slot)
    }

    /// Its socket is in a slot of the ring's registered files.
    pub(crate) fn fixed(&self) -> bool {
        self.half.file.is_fixed()
    }
}

/// Pool receives that found the pool dry (tests look).
#[cfg(test)]
pub(crate) static DRY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
