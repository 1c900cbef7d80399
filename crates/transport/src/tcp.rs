//! TCP: nodelay on every stream, optional socket buffer sizes.

use std::io;
use std::net::SocketAddr;

use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::{Listener, Stream, Transport};

/// TCP options (ms_tcp_nodelay, ms_tcp_rcvbuf / sndbuf).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp {
    /// SO_RCVBUF / SO_SNDBUF; `None` leaves the system's autotuning.
    pub recv_buffer: Option<u32>,
    pub send_buffer: Option<u32>,
}

impl Tcp {
    fn socket_for(&self, addr: &SocketAddr) -> io::Result<TcpSocket> {
        let s = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(n) = self.recv_buffer {
            s.set_recv_buffer_size(n)?;
        }
        if let Some(n) = self.send_buffer {
            s.set_send_buffer_size(n)?;
        }
        Ok(s)
    }
}

impl Stream for TcpStream {
    type Reader = OwnedReadHalf;
    type Writer = OwnedWriteHalf;

    fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        TcpStream::into_split(self)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        TcpStream::local_addr(self).ok()
    }
}

pub struct TcpAcceptor {
    listener: TcpListener,
    tcp: Tcp,
}

impl Listener for TcpAcceptor {
    type Stream = TcpStream;

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    async fn accept(&mut self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, peer) = self.listener.accept().await?;
        s.set_nodelay(true)?;
        let _ = self.tcp;
        Ok((s, peer))
    }
}

impl Transport for Tcp {
    type Stream = TcpStream;
    type Listener = TcpAcceptor;

    async fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let s = self.socket_for(&addr)?.connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(s)
    }

    async fn bind(&self, addr: SocketAddr) -> io::Result<TcpAcceptor> {
        let s = self.socket_for(&addr)?;
        s.set_reuseaddr(true)?;
        s.bind(addr)?;
        Ok(TcpAcceptor {
            listener: s.listen(1024)?,
            tcp: *self,
        })
    }
}
