//! TCP through the reactor (epoll) or through io_uring, chosen at run
//! time: one messenger type whichever a program's flags pick.

use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::BytesMut;
use msgr_transport::tcp::{Tcp, TcpAcceptor, TcpReader};
use msgr_transport::{Listener, Outgoing, ReadRoom, Receiver, Sender, Stream, Transport};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;

use crate::{Uring, UringListener, UringReader, UringStream, UringWriter};

/// TCP over epoll ([`Tcp`]) or over io_uring ([`Uring`]).
#[derive(Debug, Clone, Copy)]
pub enum TcpOrUring {
    /// Plain TCP, driven by tokio's epoll reactor.
    Epoll(Tcp),
    /// TCP on the shard's io_uring.
    Uring(Uring),
}

impl Default for TcpOrUring {
    fn default() -> TcpOrUring {
        TcpOrUring::Epoll(Tcp::default())
    }
}

/// Generates an enum over the two transports' types, and a `match` that
/// runs the same expression on either.
macro_rules! either {
    ($(#[$m:meta])* $name:ident, $epoll:ty, $uring:ty) => {
        $(#[$m])*
        pub enum $name {
            /// The epoll transport's.
            Epoll($epoll),
            /// The io_uring transport's.
            Uring($uring),
        }
    };
}

macro_rules! on_either {
    ($value:expr, $name:ident, |$x:ident| $body:expr) => {
        match $value {
            $name::Epoll($x) => $body,
            $name::Uring($x) => $body,
        }
    };
}

either!(
    /// A stream of either transport.
    EitherStream, TcpStream, UringStream
);
either!(
    /// A listener of either transport.
    EitherListener, TcpAcceptor, UringListener
);
// The io_uring halves are boxed: a connection's driver holds its socket's
// halves inline, and an epoll one's are a pointer and a word each; inline,
// io_uring's would make every connection's socket three cache lines long
// (the lines a message touches, and a connection's memory).
either!(
    /// A receiving half of either transport.
    EitherReader, TcpReader, Box<UringReader>
);
either!(
    /// A sending half of either transport.
    EitherWriter, OwnedWriteHalf, Box<UringWriter>
);

impl Stream for EitherStream {
    type Reader = EitherReader;
    type Writer = EitherWriter;

    fn into_split(self) -> (EitherReader, EitherWriter) {
        match self {
            EitherStream::Epoll(s) => {
                let (r, w) = Stream::into_split(s);
                (EitherReader::Epoll(r), EitherWriter::Epoll(w))
            }
            EitherStream::Uring(s) => {
                let (r, w) = s.into_split();
                (
                    EitherReader::Uring(Box::new(r)),
                    EitherWriter::Uring(Box::new(w)),
                )
            }
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        on_either!(self, EitherStream, |s| Stream::local_addr(s))
    }

    fn rehome(r: EitherReader, w: EitherWriter) -> io::Result<(EitherReader, EitherWriter)> {
        match (r, w) {
            (EitherReader::Epoll(r), EitherWriter::Epoll(w)) => {
                let (r, w) = TcpStream::rehome(r, w)?;
                Ok((EitherReader::Epoll(r), EitherWriter::Epoll(w)))
            }
            (EitherReader::Uring(r), EitherWriter::Uring(w)) => {
                let (r, w) = UringStream::rehome(*r, *w)?;
                Ok((
                    EitherReader::Uring(Box::new(r)),
                    EitherWriter::Uring(Box::new(w)),
                ))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "rehome: reader and writer are halves of different streams",
            )),
        }
    }
}

impl Receiver for EitherReader {
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
        room: ReadRoom,
    ) -> Poll<io::Result<usize>> {
        on_either!(self, EitherReader, |r| r.poll_recv(cx, buf, room))
    }

    fn path(&self) -> Option<msgr_transport::PathInfo> {
        on_either!(self, EitherReader, |r| r.path())
    }
}

impl Sender for EitherWriter {
    fn poll_send(&mut self, cx: &mut Context<'_>, out: Outgoing<'_>) -> Poll<io::Result<usize>> {
        on_either!(self, EitherWriter, |w| w.poll_send(cx, out))
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            EitherWriter::Epoll(w) => Sender::shutdown(w).await,
            EitherWriter::Uring(w) => Sender::shutdown(&mut **w).await,
        }
    }
}

impl Listener for EitherListener {
    type Stream = EitherStream;

    fn local_addr(&self) -> io::Result<SocketAddr> {
        on_either!(self, EitherListener, |l| l.local_addr())
    }

    async fn accept(&mut self) -> io::Result<(EitherStream, SocketAddr)> {
        Ok(match self {
            EitherListener::Epoll(l) => {
                let (s, a) = l.accept().await?;
                (EitherStream::Epoll(s), a)
            }
            EitherListener::Uring(l) => {
                let (s, a) = l.accept().await?;
                (EitherStream::Uring(s), a)
            }
        })
    }
}

impl Transport for TcpOrUring {
    type Stream = EitherStream;
    type Listener = EitherListener;

    async fn connect(&self, addr: SocketAddr) -> io::Result<EitherStream> {
        Ok(match self {
            TcpOrUring::Epoll(t) => EitherStream::Epoll(t.connect(addr).await?),
            TcpOrUring::Uring(t) => EitherStream::Uring(t.connect(addr).await?),
        })
    }

    async fn bind(&self, addr: SocketAddr) -> io::Result<EitherListener> {
        Ok(match self {
            TcpOrUring::Epoll(t) => EitherListener::Epoll(t.bind(addr).await?),
            TcpOrUring::Uring(t) => EitherListener::Uring(t.bind(addr).await?),
        })
    }

    fn runs_on_ring_loop(&self) -> bool {
        matches!(self, TcpOrUring::Uring(_))
    }

    async fn bind_shared(&self, addr: SocketAddr) -> io::Result<Option<EitherListener>> {
        Ok(match self {
            TcpOrUring::Epoll(t) => t.bind_shared(addr).await?.map(EitherListener::Epoll),
            TcpOrUring::Uring(t) => t.bind_shared(addr).await?.map(EitherListener::Uring),
        })
    }
}
