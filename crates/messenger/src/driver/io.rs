//! The bytes of a connection's current socket: its halves, what was
//! framed for it and not yet written, and the read buffer (empty and
//! without memory between reads; the reader gives it room for the step of
//! reading at hand, `ReadRoom`); and a live socket's slot against
//! `Options::max_connections`.

use bytes::BytesMut;
use msgr_frames::WireQueue;
use msgr_protocol::{Conn, ConnState, LinkId};

use msgr_transport::{Outgoing, ReadRoom, Sender, Stream, Transport, HANDSHAKE_READ, MIN_READ};

/// A transport's reader and writer halves.
pub(crate) type Reader<T> = <<T as Transport>::Stream as Stream>::Reader;
pub(crate) type Writer<T> = <<T as Transport>::Stream as Stream>::Writer;

/// A live socket, counted against `Options::max_connections` from when it
/// is accepted or connected until it is dropped (a STANDBY session, which
/// has none, does not count).
pub(crate) struct SocketSlot(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl SocketSlot {
    pub fn new(live: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> SocketSlot {
        live.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        SocketSlot(live.clone())
    }

    /// A slot if fewer than `max` sockets live, taken in one atomic step:
    /// shards accepting at once (each has its own listener) cannot all see
    /// room for one more and go past the limit together.
    pub fn within(
        live: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
        max: usize,
    ) -> Option<SocketSlot> {
        use std::sync::atomic::Ordering;
        live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            if n < max {
                n.checked_add(1)
            } else {
                None
            }
        })
        .ok()?;
        Some(SocketSlot(live.clone()))
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

    /// What the next read is for: the reader gives the read buffer room
    /// for it once bytes are there.
    pub fn read_room(&self, c: &Conn) -> ReadRoom {
        ReadRoom {
            want: c.want(&self.rbuf),
            min_read: match c.state() {
                ConnState::Ready => MIN_READ,
                _ => HANDSHAKE_READ,
            },
        }
    }
}

/// Writes what each socket's queue holds to it (as far as it takes it),
/// then shuts it down.
pub(super) async fn flush_and_close<T: Transport>(closing: Vec<(Socket<T>, WireQueue)>) {
    for (mut socket, mut out) in closing {
        out.seal();
        while !out.is_empty() {
            match socket.writer.send(Outgoing::new(out.as_slices())).await {
                Ok(0) | Err(_) => break,
                Ok(w) => out.advance(w),
            }
        }
        let _ = socket.writer.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::SocketSlot;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    #[test]
    fn threads_racing_for_slots_take_no_more_than_the_limit() {
        let live = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (live, barrier) = (live.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..1000)
                        .filter_map(|_| SocketSlot::within(&live, 10))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let held: Vec<SocketSlot> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(held.len(), 10);
        assert_eq!(live.load(Ordering::Acquire), 10);
        drop(held);
        assert_eq!(live.load(Ordering::Acquire), 0);
        assert!(SocketSlot::within(&live, 0).is_none());
    }
}
