//! The bytes of a connection's current socket: its halves, what was
//! framed for it and not yet written, and the read buffer, sized for the
//! step of reading at hand (make_room); and a live socket's slot against
//! `Options::max_connections`.

use std::io::IoSlice;

use bytes::BytesMut;
use msgr_frames::WireQueue;
use msgr_protocol::{Conn, ConnState, LinkId};
use tokio::io::AsyncWriteExt;

use msgr_transport::{Stream, Transport};

/// A transport's reader and writer halves.
pub(crate) type Reader<T> = <<T as Transport>::Stream as Stream>::Reader;
pub(crate) type Writer<T> = <<T as Transport>::Stream as Stream>::Writer;

/// Smallest read buffer to ask the socket to fill, once a session is
/// READY (many small frames per read).
const MIN_READ: usize = 64 * 1024;
/// The same during a handshake: its frames are small (16 KiB at most) and
/// a connection that has not authenticated should cost little.
const HANDSHAKE_READ: usize = 4 * 1024;
/// Slices per vectored write.
pub(super) const MAX_IOV: usize = 256;

/// A live socket, counted against `Options::max_connections` from when it
/// is accepted or connected until it is dropped (a STANDBY session, which
/// has none, does not count).
pub(crate) struct SocketSlot(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl SocketSlot {
    pub fn new(live: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> SocketSlot {
        live.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        SocketSlot(live.clone())
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

pub(crate) struct Socket<T: Transport> {
    pub link: LinkId,
    pub reader: Reader<T>,
    pub writer: Writer<T>,
    /// Counts this socket against `max_connections` while it lives.
    #[expect(dead_code, reason = "held for its Drop")]
    pub slot: SocketSlot,
}

impl<T: Transport> Socket<T> {
    /// Re-registers the socket with this shard's runtime (it was accepted
    /// or used on another).
    pub fn rehome(self) -> std::io::Result<Socket<T>> {
        let (reader, writer) = T::Stream::rehome(self.reader, self.writer)?;
        Ok(Socket {
            reader,
            writer,
            ..self
        })
    }
}

/// The current socket and its buffers; without a socket, no buffers (an
/// idle or standby session keeps none).
pub(crate) struct SocketIo<T: Transport> {
    pub socket: Option<Socket<T>>,
    /// Framed for the socket, not yet written.
    pub out: WireQueue,
    /// Read from the socket, not yet taken by the connection
    /// (Conn::handle_input takes what is complete).
    pub rbuf: BytesMut,
}

impl<T: Transport> SocketIo<T> {
    pub fn new() -> SocketIo<T> {
        SocketIo {
            socket: None,
            out: WireQueue::new(),
            rbuf: BytesMut::new(),
        }
    }

    pub fn link(&self) -> Option<LinkId> {
        self.socket.as_ref().map(|s| s.link)
    }

    /// A socket given to this connection by another's acceptor, with what
    /// was already framed for it and what was read from it and not taken.
    pub fn install(&mut self, socket: Socket<T>, mut pending: WireQueue, unread: BytesMut) {
        self.use_socket(socket);
        self.out.append(&mut pending);
        self.rbuf = unread;
    }

    /// A socket this connection opened (or was given), with empty buffers.
    pub fn use_socket(&mut self, socket: Socket<T>) {
        self.socket = Some(socket);
        self.out.clear();
        self.rbuf.clear();
    }

    /// The same socket, re-registered on another shard: its buffers stay.
    pub fn use_socket_keeping_buffers(&mut self, socket: Socket<T>) {
        self.socket = Some(socket);
    }

    /// The socket is gone, and so are its buffers.
    pub fn close(&mut self) {
        self.socket = None;
        self.out = WireQueue::new();
        self.rbuf = BytesMut::new();
    }

    /// Makes room in the read buffer for the next step of reading;
    /// returns how much the read may take.
    pub fn prepare_read(&mut self, c: &Conn) -> usize {
        let want = c.want(&self.rbuf);
        let min_read = match c.state() {
            ConnState::Ready => MIN_READ,
            _ => HANDSHAKE_READ,
        };
        make_room(&mut self.rbuf, want, min_read)
    }
}

/// Writes what `out` holds to `socket` (as far as it takes it), then shuts
/// the socket down; `out` is left empty.
pub(super) async fn flush_and_close<T: Transport>(mut socket: Socket<T>, out: &mut WireQueue) {
    out.seal();
    while !out.is_empty() {
        let wrote = {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let n = out.slices(&mut iov);
            socket
                .writer
                .write_vectored(iov.get(..n).unwrap_or_default())
                .await
        };
        match wrote {
            Ok(0) | Err(_) => break,
            Ok(w) => out.advance(w),
        }
    }
    let _ = socket.writer.shutdown().await;
    out.clear();
}

/// Makes room in the read buffer for the `want` bytes that complete the
/// step at hand (a banner, a frame's head, the rest of a frame).
///
/// - Small steps get room for a read of at least [`MIN_READ`] through
///   `BytesMut::reserve`, whose growth (reclaiming space once the frames
///   taken from it are gone, doubling otherwise) lets small frames be read
///   many at a time.
/// - The rest of a large frame is not left to `reserve`: growing the
///   allocation with `realloc` copies all of it, the frames already taken
///   included. Its unread bytes (what the read of the frame's head brought)
///   move to an allocation of the frame's size instead, unless the space is
///   there or can be reclaimed.
/// - A large frame that lacks only a few bytes is completed where it is,
///   rather than moved to make room for a full read.
///
/// With 1 MiB frames this took the receiver's copying from about 25 µs per
/// message (6 % of its CPU) to about 3.
///
/// Returns how much the next read may take: up to the end of a large frame
/// and no further (bytes of the next frame read along would have to move
/// when its own buffer is made); small steps, as much as there is room for.
fn make_room(rbuf: &mut BytesMut, want: usize, min_read: usize) -> usize {
    let large = want > min_read;
    let read_limit = if large { want } else { usize::MAX };
    let spare = rbuf.capacity().saturating_sub(rbuf.len());
    if spare >= want && rbuf.len() >= min_read {
        return read_limit;
    }
    if !large {
        rbuf.reserve(min_read);
    } else if !rbuf.try_reclaim(want) {
        let mut fresh = BytesMut::with_capacity(rbuf.len().saturating_add(want));
        fresh.extend_from_slice(rbuf);
        *rbuf = fresh;
    }
    read_limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_room_keeps_unread_bytes_and_reuses_a_free_allocation() {
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![7u8; (1 << 20) - 3]);
        rbuf.extend_from_slice(b"abc");
        // A frame is taken while it is still in use: the unread bytes move.
        let frame = rbuf.split_to((1 << 20) - 3);
        assert_eq!(make_room(&mut rbuf, 1 << 20, MIN_READ), 1 << 20);
        assert_eq!(&rbuf[..], b"abc");
        assert!(rbuf.capacity() >= 3 + (1 << 20));
        drop(frame);

        // Once the frame is gone its allocation is reused, not copied.
        let start = rbuf.as_ptr() as usize;
        let end = start + rbuf.capacity();
        let frame = rbuf.split_to(3);
        drop(frame);
        make_room(&mut rbuf, 1 << 19, MIN_READ);
        assert!((start..end).contains(&(rbuf.as_ptr() as usize)));
        assert!(rbuf.capacity() >= 1 << 19);

        // A frame that lacks a few bytes stays where it is when its buffer
        // has them, however little more room there is.
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![1u8; (1 << 20) - 100]);
        let at = rbuf.as_ptr();
        assert_eq!(make_room(&mut rbuf, 100, MIN_READ), usize::MAX);
        assert_eq!(rbuf.as_ptr(), at);
    }
}
