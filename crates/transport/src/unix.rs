//! Unix domain sockets. msgr2 identifies peers by IP and port, so each
//! address maps to a socket file `DIR/IP_PORT.sock`; the peer address of an
//! accepted stream is reported as the unspecified address with port 0.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::Interest;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};

use crate::{Listener, ReadRoom, Receiver, Stream, Transport};

/// Unix domain sockets, their files in one directory.
#[derive(Debug, Clone)]
pub struct Unix {
    dir: PathBuf,
    next_port: Arc<AtomicU16>,
}

impl Unix {
    /// Socket files live in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Unix {
        Unix {
            dir: dir.into(),
            next_port: Arc::new(AtomicU16::new(20000)),
        }
    }

    fn path(&self, addr: &SocketAddr) -> PathBuf {
        self.dir.join(format!("{}_{}.sock", addr.ip(), addr.port()))
    }
}

impl Receiver for OwnedReadHalf {
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
        room: ReadRoom,
    ) -> Poll<io::Result<usize>> {
        let s: &UnixStream = (*self).as_ref();
        crate::recv::poll_recv_ready(
            cx,
            buf,
            room,
            |cx| s.poll_read_ready(cx),
            |b| {
                crate::recv::read_once(
                    b,
                    |f| s.try_io(Interest::READABLE, f),
                    |b| s.try_read_buf(b),
                )
            },
        )
    }
}

impl Stream for UnixStream {
    type Reader = OwnedReadHalf;
    type Writer = OwnedWriteHalf;

    fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        UnixStream::into_split(self)
    }

    /// Unix sockets have no IP: msgr2 addresses only name their files.
    fn local_addr(&self) -> Option<SocketAddr> {
        None
    }

    /// Deregisters the socket from its old reactor and registers it with
    /// the current runtime's.
    fn rehome(
        reader: OwnedReadHalf,
        writer: OwnedWriteHalf,
    ) -> io::Result<(OwnedReadHalf, OwnedWriteHalf)> {
        crate::check_in_runtime()?;
        let stream = reader
            .reunite(writer)
            .map_err(|_| crate::not_one_stream())?;
        let stream = UnixStream::from_std(stream.into_std()?)?;
        Ok(UnixStream::into_split(stream))
    }
}

/// A bound Unix socket listener.
pub struct UnixAcceptor {
    listener: UnixListener,
    addr: SocketAddr,
    path: PathBuf,
}

impl Drop for UnixAcceptor {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Listener for UnixAcceptor {
    type Stream = UnixStream;

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }

    async fn accept(&mut self) -> io::Result<(UnixStream, SocketAddr)> {
        let (s, _) = self.listener.accept().await?;
        Ok((s, SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)))
    }
}

impl Transport for Unix {
    type Stream = UnixStream;
    type Listener = UnixAcceptor;

    async fn connect(&self, addr: SocketAddr) -> io::Result<UnixStream> {
        UnixStream::connect(self.path(&addr)).await
    }

    async fn bind(&self, mut addr: SocketAddr) -> io::Result<UnixAcceptor> {
        if addr.port() == 0 {
            addr.set_port(self.next_port.fetch_add(1, Ordering::Relaxed));
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(&addr);
        let _ = std::fs::remove_file(&path);
        Ok(UnixAcceptor {
            listener: UnixListener::bind(&path)?,
            addr,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::testing::{current_thread, rehome_across_runtimes};

    /// A Unix socket made in one runtime carries bytes both ways from
    /// another thread's runtime once rehomed there, with the first runtime
    /// gone.
    #[test]
    fn rehome_moves_socket_to_another_runtime() {
        let rt_a = current_thread();
        let (end, peer) = rt_a.block_on(async { UnixStream::pair() }).unwrap();
        let peer = peer.into_std().unwrap();
        peer.set_nonblocking(false).unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        rehome_across_runtimes(rt_a, end, peer);
    }

    /// Halves of two different streams are refused, not joined.
    #[test]
    fn rehome_refuses_mismatched_halves() {
        let rt = current_thread();
        rt.block_on(async {
            let (x, _x_peer) = UnixStream::pair().unwrap();
            let (y, _y_peer) = UnixStream::pair().unwrap();
            let (xr, _xw) = Stream::into_split(x);
            let (_yr, yw) = Stream::into_split(y);
            let err = UnixStream::rehome(xr, yw).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        });
    }
}
