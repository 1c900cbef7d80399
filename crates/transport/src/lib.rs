//! Transports: how the messenger runtime opens, accepts and moves bytes on
//! connections. The runtime is generic over [`Transport`]; three are here:
//! [`tcp::Tcp`] (nodelay, configurable socket buffers), [`unix::Unix`]
//! (Unix domain sockets, with msgr2 addresses mapped to paths) and
//! [`memory::MemoryNet`] (in-process pipes with fault hooks, for
//! deterministic tests).
//!
//! # A message-oriented transport (RDMA verbs)
//!
//! msgr2 is a byte-stream protocol, and the trait keeps to that: a
//! transport hands the runtime a reader and a writer. An RDMA transport
//! implements them the way Ceph's RDMAStack does, on top of reliable
//! connected queue pairs:
//!
//! - `connect`/`bind`/`accept` exchange queue-pair numbers, LIDs/GIDs and
//!   initial PSNs over a side channel (a TCP socket, or RDMA-CM), then move
//!   the QPs to RTS.
//! - The writer copies (or, for buffers already inside a registered memory
//!   region, posts directly) each `poll_write_vectored` slice into chunks of
//!   a registered send pool, posts them as SEND work requests, and reports
//!   them written; completions return chunks to the pool. Back-pressure is
//!   the pool running dry (`Poll::Pending` until a completion frees a chunk).
//! - The reader keeps a ring of receive buffers posted on a shared receive
//!   queue; `poll_read` copies out of completed receives in order and
//!   re-posts them. A runtime that wants zero copy can read whole frames:
//!   the frame decoder tells how many bytes the next step needs
//!   (`Conn::want`), which maps onto one receive of that size.
//! - Nothing above the transport changes: the protocol core is sans-IO and
//!   only sees bytes in order; framing, crcs and encryption are the same.
// Transports move bytes; they parse none (the protocol crates do, checked).
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]

pub mod memory;
pub mod tcp;
pub mod unix;

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};

/// A connected byte stream, split into halves the runtime drives
/// concurrently.
pub trait Stream: Send + 'static {
    type Reader: AsyncRead + Send + Unpin + 'static;
    type Writer: AsyncWrite + Send + Unpin + 'static;

    fn into_split(self) -> (Self::Reader, Self::Writer);

    /// The local end's address, where the transport has one (a socket
    /// accepted on a wildcard bind is on one of the host's addresses).
    fn local_addr(&self) -> Option<SocketAddr>;
}

/// Accepts incoming streams on a bound address.
pub trait Listener: Send + 'static {
    type Stream: Stream;

    /// The bound address (with the port the system picked for port 0).
    fn local_addr(&self) -> io::Result<SocketAddr>;

    /// The next incoming stream and its peer's address.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Stream, SocketAddr)>> + Send;
}

/// Opens and accepts streams.
pub trait Transport: Clone + Send + Sync + 'static {
    type Stream: Stream;
    type Listener: Listener<Stream = Self::Stream>;

    fn connect(&self, addr: SocketAddr) -> impl Future<Output = io::Result<Self::Stream>> + Send;

    fn bind(&self, addr: SocketAddr) -> impl Future<Output = io::Result<Self::Listener>> + Send;
}
