//! An in-process network of byte pipes, for tests: addresses are bound in a
//! [`MemoryNet`], connects are instant, and a test can refuse connects and
//! break live connections on purpose.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;
use tokio::sync::mpsc;

use crate::{Listener, Stream, Transport};

/// Bytes a pipe holds before its writer waits.
const PIPE_CAPACITY: usize = 256 * 1024;

#[derive(Default)]
struct PipeState {
    buf: VecDeque<u8>,
    writer_closed: bool,
    reader_closed: bool,
    broken: bool,
    read_waker: Option<Waker>,
    write_waker: Option<Waker>,
}

type Pipe = Arc<Mutex<PipeState>>;

fn lock(p: &Pipe) -> std::sync::MutexGuard<'_, PipeState> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn wake(w: &mut Option<Waker>) {
    if let Some(w) = w.take() {
        w.wake();
    }
}

/// The reading end of a pipe.
pub struct PipeReader(Pipe);
/// The writing end of a pipe.
pub struct PipeWriter(Pipe);

impl crate::Receiver for PipeReader {
    fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
        buf: &mut bytes::BytesMut,
        room: crate::ReadRoom,
    ) -> Poll<io::Result<usize>> {
        let mut s = lock(&self.0);
        if s.broken {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        if s.buf.is_empty() {
            if s.writer_closed {
                return Poll::Ready(Ok(0));
            }
            s.read_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        // Bytes are there: only now does `buf` get room.
        let limit = room.make(buf);
        let n = limit.min(s.buf.len());
        let (a, b) = s.buf.as_slices();
        let first = n.min(a.len());
        buf.extend_from_slice(&a[..first]);
        buf.extend_from_slice(&b[..n - first]);
        s.buf.drain(..n);
        wake(&mut s.write_waker);
        Poll::Ready(Ok(n))
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        let mut s = lock(&self.0);
        s.reader_closed = true;
        wake(&mut s.write_waker);
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut s = lock(&self.0);
        if s.broken {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        if s.reader_closed || s.writer_closed {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let room = PIPE_CAPACITY.saturating_sub(s.buf.len());
        if room == 0 {
            s.write_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = room.min(data.len());
        s.buf.extend(&data[..n]);
        wake(&mut s.read_waker);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut s = lock(&self.0);
        s.writer_closed = true;
        wake(&mut s.read_waker);
        Poll::Ready(Ok(()))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        let mut s = lock(&self.0);
        s.writer_closed = true;
        wake(&mut s.read_waker);
    }
}

/// One end of an in-memory connection.
pub struct MemStream {
    reader: PipeReader,
    writer: PipeWriter,
    local: SocketAddr,
}

impl Stream for MemStream {
    type Reader = PipeReader;
    type Writer = PipeWriter;

    fn into_split(self) -> (PipeReader, PipeWriter) {
        (self.reader, self.writer)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        Some(self.local)
    }
}

struct Live {
    ends: (SocketAddr, SocketAddr),
    pipes: [Weak<Mutex<PipeState>>; 2],
}

#[derive(Default)]
struct Inner {
    listeners: HashMap<SocketAddr, mpsc::UnboundedSender<(MemStream, SocketAddr)>>,
    next_port: u16,
    refuse: u32,
    live: Vec<Live>,
}

/// The network: bind and connect through a shared handle.
#[derive(Clone, Default)]
pub struct MemoryNet {
    inner: Arc<Mutex<Inner>>,
}

impl MemoryNet {
    /// A network with nothing bound.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses the next `n` connects.
    pub fn refuse_next(&self, n: u32) {
        self.inner().refuse = n;
    }

    /// Breaks every live connection with an end at `addr`'s IP and port (or
    /// all of them with `None`): both ends see ECONNRESET. Returns how many.
    pub fn break_connections(&self, addr: Option<SocketAddr>) -> usize {
        let mut inner = self.inner();
        let mut n = 0;
        inner.live.retain(|l| {
            let hit = addr.is_none_or(|a| l.ends.0 == a || l.ends.1 == a);
            if hit {
                for p in l.pipes.iter().filter_map(Weak::upgrade) {
                    let mut s = lock(&p);
                    s.broken = true;
                    wake(&mut s.read_waker);
                    wake(&mut s.write_waker);
                }
                n += 1;
            }
            !hit
        });
        n
    }

    /// Live connections (for leak checks).
    pub fn live_connections(&self) -> usize {
        let mut inner = self.inner();
        inner
            .live
            .retain(|l| l.pipes.iter().any(|p| p.strong_count() > 0));
        inner.live.len()
    }
}

/// What listens on an address of a [`MemoryNet`].
pub struct MemListener {
    rx: mpsc::UnboundedReceiver<(MemStream, SocketAddr)>,
    addr: SocketAddr,
    net: MemoryNet,
}

impl Drop for MemListener {
    fn drop(&mut self) {
        self.net.inner().listeners.remove(&self.addr);
    }
}

impl Listener for MemListener {
    type Stream = MemStream;

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }

    async fn accept(&mut self) -> io::Result<(MemStream, SocketAddr)> {
        self.rx
            .recv()
            .await
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "listener closed"))
    }
}

impl Transport for MemoryNet {
    type Stream = MemStream;
    type Listener = MemListener;

    async fn connect(&self, addr: SocketAddr) -> io::Result<MemStream> {
        let mut inner = self.inner();
        if inner.refuse > 0 {
            inner.refuse -= 1;
            return Err(io::ErrorKind::ConnectionRefused.into());
        }
        let Some(tx) = inner.listeners.get(&addr).cloned() else {
            return Err(io::ErrorKind::ConnectionRefused.into());
        };
        inner.next_port = inner.next_port.wrapping_add(1).max(30000);
        let local = SocketAddr::new(local_ip(&addr), inner.next_port);
        let a2b: Pipe = Arc::default();
        let b2a: Pipe = Arc::default();
        inner.live.push(Live {
            ends: (local, addr),
            pipes: [Arc::downgrade(&a2b), Arc::downgrade(&b2a)],
        });
        drop(inner);
        let client = MemStream {
            reader: PipeReader(b2a.clone()),
            writer: PipeWriter(a2b.clone()),
            local,
        };
        let server = MemStream {
            reader: PipeReader(a2b),
            writer: PipeWriter(b2a),
            local: addr,
        };
        tx.send((server, local))
            .map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
        Ok(client)
    }

    async fn bind(&self, mut addr: SocketAddr) -> io::Result<MemListener> {
        let mut inner = self.inner();
        if addr.port() == 0 {
            inner.next_port = inner.next_port.wrapping_add(1).max(30000);
            addr.set_port(inner.next_port);
        }
        if inner.listeners.contains_key(&addr) {
            return Err(io::ErrorKind::AddrInUse.into());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        inner.listeners.insert(addr, tx);
        Ok(MemListener {
            rx,
            addr,
            net: self.clone(),
        })
    }
}

/// The client side of a memory connection gets the same IP as its target.
fn local_ip(target: &SocketAddr) -> IpAddr {
    target.ip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::recv_exact;
    use crate::{ReadRoom, Receiver};
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn connect_send_break() {
        let net = MemoryNet::new();
        let mut l = net.bind("10.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let c = net.connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let (mut cr, mut cw) = c.into_split();
        let (mut sr, mut sw) = s.into_split();
        cw.write_all(b"ping").await.unwrap();
        assert_eq!(&recv_exact(&mut sr, 4).await.unwrap()[..], b"ping");
        sw.write_all(b"pong").await.unwrap();
        assert_eq!(&recv_exact(&mut cr, 4).await.unwrap()[..], b"pong");
        assert_eq!(net.break_connections(Some(addr)), 1);
        let room = ReadRoom {
            want: 4,
            min_read: 0,
        };
        let mut buf = bytes::BytesMut::new();
        assert_eq!(
            cr.recv(&mut buf, room).await.unwrap_err().kind(),
            io::ErrorKind::ConnectionReset
        );
        net.refuse_next(1);
        assert!(net.connect(addr).await.is_err());
        assert!(net.connect(addr).await.is_ok());
        drop(l);
        assert!(net.connect(addr).await.is_err());
    }
}
