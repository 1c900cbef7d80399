//! Transports: how the messenger runtime opens, accepts and moves bytes on
//! connections. The runtime is generic over [`Transport`]; three are here:
//! [`tcp::Tcp`] (nodelay, configurable socket buffers), [`unix::Unix`]
//! (Unix domain sockets, with msgr2 addresses mapped to paths) and
//! [`memory::MemoryNet`] (in-process pipes with fault hooks, for
//! deterministic tests).
//!
//! # Receiving and sending
//!
//! A connection's halves are a [`Receiver`] and a [`Sender`], shaped for
//! completion-based transports as much as for readiness-based sockets.
//! Both are polled (`poll_recv`, `poll_send`), so that a runtime's driver
//! polls a connection's sources in one step of its own; `recv` and `send`
//! are the same as futures.
//!
//! - [`Receiver::poll_recv`] appends what arrived to the runtime's read buffer,
//!   which gets room ([`ReadRoom`]) only once bytes are there: nothing is
//!   set aside for a connection while it waits. A socket waits for
//!   readability and then reads; a completion-based transport receives
//!   into memory of its own, shared by its connections, and moves what
//!   arrived into the buffer.
//! - [`Sender::poll_send`] is given the runtime's queue of reference-counted
//!   chunks ([`Outgoing`]) and reports how many bytes from its front it
//!   took. A completion-based transport keeps the chunks it posted (a
//!   clone of each `Bytes`) until the completion, however the runtime's
//!   wait on it ends, and reports them then.
//!
//! The `msgr-uring` crate is such a completion-based transport: io_uring
//! receives into a per-shard ring of provided buffers, and sends that hold
//! the posted chunks until their completions.
//!
//! # A message-oriented transport (RDMA verbs)
//!
//! msgr2 is a byte-stream protocol, and the traits keep to that. An RDMA
//! transport implements them the way Ceph's RDMAStack does, on top of
//! reliable connected queue pairs:
//!
//! - `connect`/`bind`/`accept` exchange queue-pair numbers, LIDs/GIDs and
//!   initial PSNs over a side channel (a TCP socket, or RDMA-CM), then move
//!   the QPs to RTS.
//! - The sender posts each chunk of `Outgoing` as a SEND work request:
//!   chunks already inside a registered memory region are posted as they
//!   are (zero copy; the runtime's buffers would come from such a region),
//!   others are copied into a registered send pool. It holds the chunks
//!   until their completions and reports them sent then. Back-pressure is
//!   the pool or the send queue running dry (`Pending` until a completion
//!   frees room).
//! - The receiver keeps a ring of registered receive buffers posted on a
//!   shared receive queue (memory per shard, not per connection, as the
//!   receiver's contract asks); `poll_recv` moves the bytes of completed
//!   receives, in order, into the read buffer and re-posts the buffers.
//!   The `ReadRoom` tells how many bytes complete the frame at hand, which
//!   a transport can use to receive a large frame's payload straight into
//!   its own buffer.
//! - Nothing above the transport changes: the protocol core is sans-IO and
//!   only sees bytes in order; framing, crcs and encryption are the same.
// Transports move bytes; they parse none (the protocol crates do, checked).
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod memory;
mod recv;
mod send;
pub mod tcp;
pub mod unix;

pub use recv::{let_go, ReadRoom, Receiver, HANDSHAKE_READ, MIN_READ};
pub use send::{Outgoing, Sender, MAX_IOV};

/// What a transport knows of the path to a connection's peer: whether
/// bytes are in flight, retransmissions (or zero-window probes) in a row
/// unanswered, and how long since the peer's host acknowledged anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathInfo {
    /// Bytes sent and not yet acknowledged by the peer's host, or held by
    /// its zero window (and probed).
    pub in_flight: bool,
    /// Retransmissions or zero-window probes in a row unanswered.
    pub unanswered: u8,
    /// Since the peer's host last acknowledged anything.
    pub since_ack: std::time::Duration,
}

impl PathInfo {
    /// A TCP socket's, from TCP_INFO (`None` if the system cannot tell).
    pub fn of_tcp(fd: &impl std::os::fd::AsFd) -> Option<PathInfo> {
        let p = msgr_sys::tcp_path(fd).ok()?;
        Some(PathInfo {
            in_flight: p.unacked > 0 || p.probes > 0,
            unanswered: p.retransmits.max(p.probes),
            since_ack: p.since_ack,
        })
    }
}

use std::future::Future;
use std::io;
use std::net::SocketAddr;

/// A connected byte stream, split into halves the runtime drives
/// concurrently.
pub trait Stream: Send + 'static {
    /// The half that reads.
    type Reader: Receiver;
    /// The half that writes.
    type Writer: Sender;

    /// The stream's halves.
    fn into_split(self) -> (Self::Reader, Self::Writer);

    /// The local end's address, where the transport has one (a socket
    /// accepted on a wildcard bind is on one of the host's addresses).
    fn local_addr(&self) -> Option<SocketAddr>;

    /// Re-registers a split stream with the reactor of the runtime this is
    /// called in (a connection moving to another shard's thread). Must be
    /// called from inside the target runtime. Transports without a reactor
    /// (in-memory pipes) return the halves unchanged.
    ///
    /// A socket is registered with the reactor of the runtime it was made
    /// in; left there, it would be polled by the old shard's thread (and
    /// fail once that runtime is gone). On error the stream is lost (it is
    /// closed): the connection faults as on any socket error.
    fn rehome(
        reader: Self::Reader,
        writer: Self::Writer,
    ) -> io::Result<(Self::Reader, Self::Writer)> {
        Ok((reader, writer))
    }
}

/// Accepts incoming streams on a bound address.
pub trait Listener: Send + 'static {
    /// What it accepts.
    type Stream: Stream;

    /// The bound address (with the port the system picked for port 0).
    fn local_addr(&self) -> io::Result<SocketAddr>;

    /// The next incoming stream and its peer's address.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Stream, SocketAddr)>> + Send;
}

/// Opens and accepts streams.
pub trait Transport: Clone + Send + Sync + 'static {
    /// A connected stream.
    type Stream: Stream;
    /// A bound listener, accepting streams.
    type Listener: Listener<Stream = Self::Stream>;

    /// Connects to `addr`.
    fn connect(&self, addr: SocketAddr) -> impl Future<Output = io::Result<Self::Stream>> + Send;

    /// Binds `addr` (port 0: one the system picks) and listens.
    fn bind(&self, addr: SocketAddr) -> impl Future<Output = io::Result<Self::Listener>> + Send;

    /// Binds `addr` so that other listeners may bind the same address
    /// (SO_REUSEPORT: the kernel spreads incoming connections over them);
    /// `None` where the transport cannot share a port (then one listener
    /// hands its streams out).
    ///
    /// Lets each shard accept on its own thread without a hand-off: the
    /// first shard binds (port 0 picks one), the others bind the port it
    /// got.
    fn bind_shared(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<Option<Self::Listener>>> + Send {
        let _ = addr;
        async { Ok(None) }
    }

    /// Whether its streams, connects and listeners also work on a
    /// ring-driven loop (`msgr_uring::exec`), which has no tokio reactor:
    /// a messenger gives ring shards only to such a transport.
    fn runs_on_ring_loop(&self) -> bool {
        false
    }
}

/// `rehome` registers with the current runtime's reactor, which tokio
/// requires to exist (it panics otherwise): an error instead.
fn check_in_runtime() -> io::Result<()> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(io::Error::other)
}

/// `rehome` was given the reader of one stream and the writer of another.
fn not_one_stream() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "rehome: reader and writer are halves of different streams",
    )
}

#[cfg(test)]
mod testing {
    use std::io::{self, Read, Write};
    use std::sync::mpsc;
    use std::time::Duration;

    use bytes::{Buf, Bytes, BytesMut};
    use tokio::runtime::{Builder, Runtime};

    use crate::{Outgoing, ReadRoom, Receiver, Sender, Stream};

    /// Sends all of `data`.
    pub(crate) async fn send_all(w: &mut impl Sender, data: &'static [u8]) -> io::Result<()> {
        let mut left = Bytes::from_static(data);
        while !left.is_empty() {
            let chunks = [left.clone()];
            let n = w.send(Outgoing::new((&chunks, &[]))).await?;
            left.advance(n);
        }
        Ok(())
    }

    /// Receives exactly `n` bytes.
    pub(crate) async fn recv_exact(r: &mut impl Receiver, n: usize) -> io::Result<BytesMut> {
        let mut buf = BytesMut::new();
        while buf.len() < n {
            let room = ReadRoom {
                want: n - buf.len(),
                min_read: 0,
            };
            if r.recv(&mut buf, room).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(buf)
    }

    /// A shard's runtime: current-thread, with IO and timers.
    pub(crate) fn current_thread() -> Runtime {
        Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// Moves `end` (made in `rt_a`) to a thread running another runtime,
    /// rehomes it there, drops `rt_a` (so only the new runtime's reactor
    /// can drive the socket), then exchanges bytes both ways with `peer`,
    /// a blocking socket (with a read timeout) at the other end.
    pub(crate) fn rehome_across_runtimes<S: Stream>(
        rt_a: Runtime,
        end: S,
        mut peer: impl Read + Write,
    ) {
        let (r, w) = end.into_split();
        let (rehomed_tx, rehomed_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let shard_b = std::thread::spawn(move || -> io::Result<()> {
            let rt_b = current_thread();
            let (mut r, mut w) = {
                let _in_b = rt_b.enter();
                S::rehome(r, w)?
            };
            rehomed_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            rt_b.block_on(async move {
                let limit = Duration::from_secs(10);
                tokio::time::timeout(limit, send_all(&mut w, b"from b")).await??;
                let buf = tokio::time::timeout(limit, recv_exact(&mut r, 4)).await??;
                assert_eq!(&buf[..], b"to b");
                Ok(())
            })
        });
        // If B failed before rehoming, its halves are closed: the peer's
        // read below fails, and B's error is what the test reports.
        if rehomed_rx.recv().is_ok() {
            drop(rt_a);
            go_tx.send(()).unwrap();
        }
        let mut buf = [0u8; 6];
        let exchanged = peer
            .read_exact(&mut buf)
            .and_then(|()| peer.write_all(b"to b"));
        shard_b.join().unwrap().unwrap();
        exchanged.unwrap();
        assert_eq!(&buf, b"from b");
    }
}
