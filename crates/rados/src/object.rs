//! An object as a file: [`ObjectHandle`] reads, writes and seeks through
//! tokio's `AsyncRead`, `AsyncWrite` and `AsyncSeek`, keeping several
//! requests in flight for large objects (read-ahead and write-behind), as
//! `rados get`/`put` would with aio.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use crate::error::RadosError;
use crate::ioctx::IoCtx;

type Op<T> = Pin<Box<dyn Future<Output = Result<T, RadosError>> + Send>>;

/// A RADOS error as an `io::Error`: its kind from the errno (ENOENT is
/// `NotFound`, EACCES/EPERM `PermissionDenied`, ETIMEDOUT `TimedOut`, ...),
/// the [`RadosError`] inside (`io::Error::get_ref`).
pub fn io_error(e: RadosError) -> io::Error {
    let kind = match e.errno().map(i32::saturating_abs) {
        Some(2) => io::ErrorKind::NotFound,
        Some(1) | Some(13) => io::ErrorKind::PermissionDenied,
        Some(110) => io::ErrorKind::TimedOut,
        Some(17) => io::ErrorKind::AlreadyExists,
        Some(22) => io::ErrorKind::InvalidInput,
        Some(28) | Some(122) => io::ErrorKind::StorageFull,
        Some(95) => io::ErrorKind::Unsupported,
        _ => match e {
            RadosError::BadReply(_) | RadosError::NoProgress { .. } => io::ErrorKind::InvalidData,
            RadosError::Shutdown => io::ErrorKind::NotConnected,
            _ => io::ErrorKind::Other,
        },
    };
    io::Error::new(kind, e)
}

/// One object of an [`IoCtx`] as a file, for `tokio::io::copy` and
/// friends: reads come from the position on (READ, `window` of them of
/// `chunk` bytes in flight ahead of the reader), writes go at the position
/// (WRITE, gathered into `chunk`-sized pieces, `window` in flight; a flush
/// waits for them all), seeks move the position (from the end: a STAT).
///
/// Not atomic: another client may see the object half written, and a
/// reader sees writes made after its read-ahead began only past it. A
/// failed write fails a later write, flush or shutdown. Dropping the
/// handle drops (and so cancels) what is in flight: flush or shut it down
/// first to know that every write landed.
///
/// ```no_run
/// # async fn run(io: msgr_rados::IoCtx) -> std::io::Result<()> {
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
/// let mut image: &[u8] = &[0u8; 64 << 20];
/// let mut object = io.object(b"disk.img");
/// tokio::io::copy(&mut image, &mut object).await?; // 4 MiB writes, 4 in flight
/// object.shutdown().await?; // every write acknowledged
/// object.seek(std::io::SeekFrom::End(-512)).await?;
/// let mut last = Vec::new();
/// object.read_to_end(&mut last).await?;
/// # Ok(()) }
/// ```
pub struct ObjectHandle {
    io: IoCtx,
    name: Bytes,
    /// Where the next read reads or the next write writes.
    pos: u64,
    chunk: usize,
    window: usize,
    /// Reads in flight, by offset, in order from `pos`.
    reads: VecDeque<(u64, Op<Bytes>)>,
    /// The end of the object, once a read came back short.
    eof_at: Option<u64>,
    /// What a finished read returned past what the reader took.
    readable: Bytes,
    /// Bytes written and not yet sent, to go at `pending_at`.
    pending: BytesMut,
    pending_at: u64,
    writes: VecDeque<Op<()>>,
    seek: Seek,
}

enum Seek {
    Idle,
    /// Flushing writes before moving to the position.
    To(io::SeekFrom),
    /// A STAT in flight for a seek from the end by this much.
    Stat(i64, Op<crate::request::Stat>),
}

/// What `chunk` and `window` are unless set: 4 MiB pieces, 4 in flight.
pub const OBJECT_CHUNK: usize = 4 << 20;
/// See [`OBJECT_CHUNK`].
pub const OBJECT_WINDOW: usize = 4;

impl IoCtx {
    /// Object `name` as a file at position 0 ([`ObjectHandle`]).
    pub fn object(&self, name: &[u8]) -> ObjectHandle {
        ObjectHandle {
            io: self.clone(),
            name: Bytes::copy_from_slice(name),
            pos: 0,
            chunk: OBJECT_CHUNK,
            window: OBJECT_WINDOW,
            reads: VecDeque::new(),
            eof_at: None,
            readable: Bytes::new(),
            pending: BytesMut::new(),
            pending_at: 0,
            writes: VecDeque::new(),
            seek: Seek::Idle,
        }
    }
}

impl ObjectHandle {
    /// Requests of `chunk` bytes (at least 1), `window` of them in flight
    /// (at least 1).
    pub fn with_window(mut self, chunk: usize, window: usize) -> ObjectHandle {
        self.chunk = chunk.max(1);
        self.window = window.max(1);
        self
    }

    /// The position the next read or write starts at.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Forgets the read-ahead (after a seek or a write).
    fn drop_reads(&mut self) {
        self.reads.clear();
        self.readable = Bytes::new();
        self.eof_at = None;
    }

    /// Starts reads from the first offset not yet asked for, up to the
    /// window, not past a known end.
    fn fill_reads(&mut self) {
        let mut next = match self.reads.back() {
            Some((at, _)) => at.saturating_add(self.chunk as u64),
            None => self.pos.saturating_add(self.readable.len() as u64),
        };
        while self.reads.len() < self.window && self.eof_at.is_none_or(|end| next < end) {
            let (io, name, len) = (self.io.clone(), self.name.clone(), self.chunk as u64);
            let op: Op<Bytes> = Box::pin(async move { io.read(&name, next, len).await });
            self.reads.push_back((next, op));
            next = next.saturating_add(self.chunk as u64);
        }
    }

    /// Sends what is gathered as one WRITE (once the window has room).
    fn poll_send_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending.is_empty() {
            return Poll::Ready(Ok(()));
        }
        while self.writes.len() >= self.window {
            ready!(self.poll_oldest_write(cx))?;
        }
        let data = self.pending.split().freeze();
        let (io, name, at) = (self.io.clone(), self.name.clone(), self.pending_at);
        self.pending_at = at.saturating_add(data.len() as u64);
        self.writes
            .push_back(Box::pin(async move { io.write(&name, at, data).await }));
        Poll::Ready(Ok(()))
    }

    /// Waits for the oldest write in flight.
    fn poll_oldest_write(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(w) = self.writes.front_mut() else {
            return Poll::Ready(Ok(()));
        };
        let r = ready!(w.as_mut().poll(cx));
        self.writes.pop_front();
        Poll::Ready(r.map_err(io_error))
    }

    /// Sends what is gathered and waits for every write in flight.
    fn poll_writes_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send_pending(cx))?;
        while !self.writes.is_empty() {
            ready!(self.poll_oldest_write(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for ObjectHandle {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Writes first: a read sees what this handle wrote.
        if !this.pending.is_empty() || !this.writes.is_empty() {
            ready!(this.poll_writes_done(cx))?;
            this.drop_reads();
        }
        loop {
            if !this.readable.is_empty() {
                let n = this.readable.len().min(buf.remaining());
                buf.put_slice(&this.readable.split_to(n));
                this.pos = this.pos.saturating_add(n as u64);
                return Poll::Ready(Ok(()));
            }
            if this.eof_at.is_some_and(|end| this.pos >= end) {
                return Poll::Ready(Ok(()));
            }
            this.fill_reads();
            let Some((at, op)) = this.reads.front_mut() else {
                return Poll::Ready(Ok(()));
            };
            let at = *at;
            let got = ready!(op.as_mut().poll(cx));
            this.reads.pop_front();
            let data = match got {
                Ok(d) => d,
                // ENOENT (no such object) and the rest end the read.
                Err(e) => {
                    this.drop_reads();
                    return Poll::Ready(Err(io_error(e)));
                }
            };
            if data.len() < this.chunk {
                let end = at.saturating_add(data.len() as u64);
                this.eof_at = Some(end);
                this.reads.retain(|(a, _)| *a < end);
            }
            this.readable = data;
        }
    }
}

impl AsyncWrite for ObjectHandle {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            // A write moves the position past what was read ahead.
            this.drop_reads();
            this.pending_at = this.pos;
        }
        if this.pending.len() >= this.chunk {
            ready!(this.poll_send_pending(cx))?;
            this.pending_at = this.pos;
        }
        // Reap writes that finished, so an error shows early.
        while let Some(w) = this.writes.front_mut() {
            match w.as_mut().poll(cx) {
                Poll::Ready(r) => {
                    this.writes.pop_front();
                    r.map_err(io_error)?;
                }
                Poll::Pending => break,
            }
        }
        let room = this.chunk.saturating_sub(this.pending.len());
        let take = buf.get(..buf.len().min(room)).unwrap_or_default();
        this.pending.extend_from_slice(take);
        let n = take.len();
        this.pos = this.pos.saturating_add(n as u64);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_writes_done(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_writes_done(cx)
    }
}

impl AsyncSeek for ObjectHandle {
    fn start_seek(self: Pin<&mut Self>, position: io::SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        if !matches!(this.seek, Seek::Idle) {
            return Err(io::Error::other("a seek is already in progress"));
        }
        this.seek = Seek::To(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        loop {
            match &mut this.seek {
                Seek::Idle => return Poll::Ready(Ok(this.pos)),
                Seek::To(to) => {
                    let to = *to;
                    if let Err(e) = ready!(this.poll_writes_done(cx)) {
                        this.seek = Seek::Idle;
                        return Poll::Ready(Err(e));
                    }
                    let (base, by) = match to {
                        io::SeekFrom::Start(at) => {
                            this.seek = Seek::Idle;
                            return Poll::Ready(this.move_to(Some(at)));
                        }
                        io::SeekFrom::Current(by) => (this.pos, by),
                        io::SeekFrom::End(by) => {
                            let (io, name) = (this.io.clone(), this.name.clone());
                            this.seek =
                                Seek::Stat(by, Box::pin(async move { io.stat(&name).await }));
                            continue;
                        }
                    };
                    this.seek = Seek::Idle;
                    return Poll::Ready(this.move_to(base.checked_add_signed(by)));
                }
                Seek::Stat(by, op) => {
                    let by = *by;
                    let r = ready!(op.as_mut().poll(cx));
                    this.seek = Seek::Idle;
                    let size = r.map_err(io_error)?.size;
                    return Poll::Ready(this.move_to(size.checked_add_signed(by)));
                }
            }
        }
    }
}

impl ObjectHandle {
    fn move_to(&mut self, at: Option<u64>) -> io::Result<u64> {
        let at = at.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the start of the object (or past 2^64)",
            )
        })?;
        if at != self.pos {
            self.drop_reads();
            self.pos = at;
        }
        Ok(at)
    }
}
