//! An io_uring transport for the messenger: TCP connections whose bytes
//! move through one io_uring per shard thread instead of readiness and
//! system calls per connection.
//!
//! - **Receives**: one multishot receive per connection, posted once
//!   (not per read) with `IOSQE_BUFFER_SELECT` against the ring's pool of
//!   provided buffers (a buffer ring, registered memory the kernel
//!   fills): a connection waiting for bytes holds no buffer, and the
//!   kernel picks one only when bytes arrive. Its bytes are bounded (a
//!   reader that does not read holds a few buffers). The rest of a large
//!   frame is received straight into the runtime's read buffer, in one
//!   completion (the receive waits for readiness, which the socket's
//!   low-water mark holds back until the rest is there), and so are the
//!   bytes of a peer that streams: neither is copied out of the pool.
//! - **Sends** post the runtime's own reference-counted chunks in one
//!   `IORING_OP_SENDMSG` (`MSG_WAITALL`) per burst, holding clones of them
//!   until the completion, and report them taken when posted: the
//!   completion wakes nobody, the next send finds it. From
//!   [`Config::zero_copy_min`] bytes on, as `IORING_OP_SENDMSG_ZC`,
//!   reported when it completes and holding the chunks until the kernel's
//!   notification that it let go of the pages.
//! - **Registered files**: a connection's socket takes a slot of its
//!   ring's table of registered files ([`Config::fixed_files`]), which its
//!   operations name instead of the fd (no lookup of the fd, and no count
//!   taken on the file, per operation); the slot is cleared once nothing
//!   names it.
//! - **Submission** is batched: a post queues an SQE and wakes the ring's
//!   reaper task, which submits everything queued in one `io_uring_enter`
//!   after the shard's other woken tasks ran, then hands out completions.
//! - Connecting, binding and accepting are the TCP transport's
//!   ([`msgr_transport::tcp::Tcp`]); an established socket then moves to
//!   the ring. On a ring-driven loop ([`exec`]), where there is no tokio
//!   reactor, they are non-blocking system calls that wait for the
//!   socket's readiness with a poll on the loop's ring.
//!
//! Each thread has one ring, made on first use with the [`Config`] of
//! the stream that needed it; a stream moved to another shard
//! ([`msgr_transport::Stream::rehome`]) posts on that shard's ring from
//! then on.
//!
//! # Unsafe code
//! The crate denies unsafe code and allows it block by block: posting
//! SQEs (whose memory the ring's table owns until the last completion),
//! the pool's raw memory and its tail, and the `Send` impls of the
//! structures holding raw pointers. Each says why it is sound.
#![warn(missing_docs)]
#![deny(unsafe_code)]
// The numbers here come from the kernel (completion results, buffer ids
// within the pool we sized) and from the runtime, never from a peer.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

mod either;
pub mod exec;
mod file;
mod op;
mod pool;
pub mod raw;
mod ring;
pub mod rt;
mod stream;

use std::io;
use std::net::SocketAddr;

use msgr_transport::tcp::{Tcp, TcpAcceptor};
use msgr_transport::{Listener, Transport};

pub use either::{EitherListener, EitherReader, EitherStream, EitherWriter, TcpOrUring};
pub use stream::{UringReader, UringStream, UringWriter};

/// The ring and its pool (per thread: the first stream on a thread sets
/// them), and when sends are zero-copy.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Submission queue entries (completion queue: four times as many).
    pub entries: u32,
    /// Buffers in the receive pool: a power of two.
    pub pool_buffers: u16,
    /// Bytes per pool buffer (the TCP transport's smallest read once READY:
    /// many small frames per receive); a frame's rest larger than this is
    /// received straight into the runtime's buffer.
    pub buffer_size: u32,
    /// Sends of at least this many bytes are zero-copy; None: never.
    pub zero_copy_min: Option<usize>,
    /// Slots in the ring's table of registered files: a connection's
    /// operations name its slot (no lookup of the fd per operation); a
    /// connection beyond them names its fd. Fewer if the open-file limit
    /// is lower; 0: no table.
    pub fixed_files: u32,
}

impl Default for Config {
    /// A server shard's: many connections share the pool, so 128 buffers
    /// of 64 KiB (8.5 MiB with the page between buffers that keeps their
    /// starts apart in the caches' sets; resident once the kernel has
    /// written into them).
    fn default() -> Config {
        Config {
            entries: 1024,
            pool_buffers: 128,
            buffer_size: 64 * 1024,
            zero_copy_min: None,
            fixed_files: 16384,
        }
    }
}

impl Config {
    /// A client's: a few connections (its monitor and the OSDs its
    /// requests go to), so 32 buffers of 16 KiB (640 KiB with a page
    /// between buffers). A frame's rest larger than a buffer, and a
    /// receive that finds the pool empty, go straight into the
    /// connection's own buffer, as they do on a server.
    pub fn client() -> Config {
        Config {
            entries: 256,
            pool_buffers: 32,
            buffer_size: 16 * 1024,
            zero_copy_min: None,
            fixed_files: 1024,
        }
    }
}

/// The io_uring transport: TCP options for connecting and listening, and
/// the ring's configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uring {
    /// The TCP options sockets are opened with (the epoll transport's).
    pub tcp: Tcp,
    /// Each shard's ring: its size and its pool of provided buffers.
    pub config: Config,
}

impl Uring {
    /// A client's transport: the epoll transport's TCP options and a
    /// client-sized ring ([`Config::client`]).
    pub fn client() -> Uring {
        Uring {
            tcp: Tcp::default(),
            config: Config::client(),
        }
    }

    /// Whether this system lets a process set up an io_uring (a kernel
    /// without it, or one where `kernel.io_uring_disabled` forbids it).
    pub fn available() -> bool {
        io_uring::IoUring::new(2).is_ok()
    }

    fn stream(&self, s: tokio::net::TcpStream) -> io::Result<UringStream> {
        UringStream::new(s.into_std()?, self.config)
    }

    /// A socket for `addr` with the TCP options, non-blocking.
    fn socket_for(&self, addr: &SocketAddr) -> io::Result<socket2::Socket> {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(*addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        s.set_nonblocking(true)?;
        if let Some(n) = self.tcp.recv_buffer {
            s.set_recv_buffer_size(n as usize)?;
        }
        if let Some(n) = self.tcp.send_buffer {
            s.set_send_buffer_size(n as usize)?;
        }
        Ok(s)
    }

    /// Connects on a ring-driven loop: a non-blocking connect, then a
    /// poll on the loop's ring until the socket is writable.
    async fn connect_on_loop(&self, addr: SocketAddr) -> io::Result<UringStream> {
        let s = self.socket_for(&addr)?;
        match s.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                exec::ready(&s, libc::POLLOUT).await?;
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
        let s = std::net::TcpStream::from(s);
        msgr_transport::tcp::std_stream_options(&s)?;
        UringStream::new(s, self.config)
    }

    /// Listens on a ring-driven loop (SO_REUSEPORT when `shared`).
    fn bind_on_loop(&self, addr: SocketAddr, shared: bool) -> io::Result<UringListener> {
        let s = self.socket_for(&addr)?;
        s.set_reuse_address(true)?;
        if shared {
            s.set_reuse_port(true)?;
        }
        s.bind(&addr.into())?;
        s.listen(1024)?;
        Ok(UringListener {
            inner: Accept::Loop(std::net::TcpListener::from(s)),
            uring: *self,
        })
    }
}

/// A listening socket whose accepted streams run on io_uring.
pub struct UringListener {
    inner: Accept,
    uring: Uring,
}

/// Where a listener accepts: tokio's reactor, or a ring-driven loop.
enum Accept {
    Tokio(TcpAcceptor),
    Loop(std::net::TcpListener),
}

impl Listener for UringListener {
    type Stream = UringStream;

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Accept::Tokio(t) => t.local_addr(),
            Accept::Loop(l) => l.local_addr(),
        }
    }

    async fn accept(&mut self) -> io::Result<(UringStream, SocketAddr)> {
        match &mut self.inner {
            Accept::Tokio(t) => {
                let (s, peer) = t.accept().await?;
                Ok((self.uring.stream(s)?, peer))
            }
            Accept::Loop(l) => loop {
                match l.accept() {
                    Ok((s, peer)) => {
                        s.set_nonblocking(true)?;
                        msgr_transport::tcp::std_stream_options(&s)?;
                        return Ok((UringStream::new(s, self.uring.config)?, peer));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        exec::ready(l, libc::POLLIN).await?;
                    }
                    Err(e) => return Err(e),
                }
            },
        }
    }
}

impl Transport for Uring {
    type Stream = UringStream;
    type Listener = UringListener;

    async fn connect(&self, addr: SocketAddr) -> io::Result<UringStream> {
        if exec::in_executor() {
            return self.connect_on_loop(addr).await;
        }
        let s = self.tcp.connect(addr).await?;
        self.stream(s)
    }

    async fn bind(&self, addr: SocketAddr) -> io::Result<UringListener> {
        if exec::in_executor() {
            return self.bind_on_loop(addr, false);
        }
        let tcp = self.tcp.bind(addr).await?;
        Ok(UringListener {
            inner: Accept::Tokio(tcp),
            uring: *self,
        })
    }

    fn runs_on_ring_loop(&self) -> bool {
        true
    }

    async fn bind_shared(&self, addr: SocketAddr) -> io::Result<Option<UringListener>> {
        if exec::in_executor() {
            return self.bind_on_loop(addr, true).map(Some);
        }
        let tcp = self.tcp.bind_shared(addr).await?;
        Ok(tcp.map(|tcp| UringListener {
            inner: Accept::Tokio(tcp),
            uring: *self,
        }))
    }
}

#[cfg(test)]
mod tests;
