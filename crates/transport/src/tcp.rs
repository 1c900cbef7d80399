//! TCP: nodelay on every stream, optional socket buffer sizes.

use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::Interest;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::{Listener, ReadRoom, Receiver, Stream, Transport};

/// Unsent bytes the kernel takes per socket beyond those in flight
/// (TCP_NOTSENT_LOWAT): the rest of a stream of large messages waits in
/// user space, where a message of higher priority passes it, instead of
/// in a send buffer autotuned to megabytes. Enough to keep a 40 Gbit/s
/// path busy for 200 µs between two wake-ups of the writer: with less, a
/// fast path (loopback's 5 GB/s) wakes the writer for every few hundred
/// KiB and moves less for more CPU; a slow one holds a high-priority
/// message behind up to this much more of the large ones.
pub const UNSENT_LOWAT: usize = 1024 * 1024;

/// Options every stream gets: no Nagle delay (ms_tcp_nodelay), and
/// [`UNSENT_LOWAT`] where the system has it.
pub(crate) fn stream_options(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    // Not every system has it; a stream without it still works.
    let _ = msgr_sys::set_unsent_lowat(s, UNSENT_LOWAT);
    Ok(())
}

/// [`stream_options`] for a socket outside tokio (a completion-based
/// transport's, made on its own loop).
pub fn std_stream_options(s: &std::net::TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    let _ = msgr_sys::set_unsent_lowat(s, UNSENT_LOWAT);
    Ok(())
}

/// TCP options (ms_tcp_nodelay, ms_tcp_rcvbuf / sndbuf).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp {
    /// SO_RCVBUF; `None` leaves the system's autotuning.
    pub recv_buffer: Option<u32>,
    /// SO_SNDBUF; `None` leaves the system's autotuning.
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

    /// A listening socket on `addr`, with SO_REUSEADDR (restarts bind past
    /// TIME_WAIT) and the buffer options, which accepted sockets inherit.
    fn listen(&self, s: TcpSocket, addr: SocketAddr) -> io::Result<TcpAcceptor> {
        s.set_reuseaddr(true)?;
        s.bind(addr)?;
        Ok(TcpAcceptor {
            listener: s.listen(1024)?,
            tcp: *self,
        })
    }
}

/// Sets SO_REUSEPORT where the system has it (Linux spreads incoming
/// connections over the sockets sharing the port); false where it has not.
#[cfg(all(
    unix,
    not(target_os = "solaris"),
    not(target_os = "illumos"),
    not(target_os = "cygwin"),
    not(target_os = "nuttx"),
))]
fn set_reuseport(s: &TcpSocket) -> io::Result<bool> {
    s.set_reuseport(true)?;
    Ok(true)
}

#[cfg(not(all(
    unix,
    not(target_os = "solaris"),
    not(target_os = "illumos"),
    not(target_os = "cygwin"),
    not(target_os = "nuttx"),
)))]
fn set_reuseport(_: &TcpSocket) -> io::Result<bool> {
    Ok(false)
}

/// A TCP connection's receiving half. Reading a large frame's rest, it
/// sets the socket's receive low-water mark to what the frame lacks: the
/// kernel then wakes it once the bytes are there (up to half the largest
/// receive buffer) rather than at every segment, and the sender's writes
/// do not each pay for waking it.
pub struct TcpReader {
    half: OwnedReadHalf,
    lowat: RecvLowat,
}

impl TcpReader {
    fn new(half: OwnedReadHalf) -> TcpReader {
        TcpReader {
            half,
            lowat: RecvLowat::default(),
        }
    }
}

/// A socket's receive low-water mark (SO_RCVLOWAT) as a reader sets it:
/// while a large frame's rest is read, what the frame lacks (which the
/// peer is committed to sending), else 1 byte (the default). The kernel
/// then wakes the reader once the rest is there (up to half the largest
/// receive buffer) rather than at every segment, and the sender's writes
/// do not each pay for waking it. The mark never exceeds what the frame
/// at hand lacks, so no wake-up that reading needs is held back.
#[derive(Debug)]
pub struct RecvLowat {
    /// The mark set on the socket.
    set: usize,
}

impl Default for RecvLowat {
    fn default() -> RecvLowat {
        RecvLowat { set: 1 }
    }
}

impl RecvLowat {
    /// Sets the mark for a read of `room` on `sock` (a system call only
    /// when it changes). Best effort: where it cannot be set the reader
    /// wakes per segment, as without it.
    pub fn update(&mut self, sock: &impl std::os::fd::AsFd, room: ReadRoom) {
        let want = match room.want > room.min_read {
            true => room.want,
            false => 1,
        };
        if want != self.set && msgr_sys::set_recv_lowat(sock, want).is_ok() {
            self.set = want;
        }
    }
}

impl Receiver for TcpReader {
    fn path(&self) -> Option<crate::PathInfo> {
        let stream: &TcpStream = self.half.as_ref();
        crate::PathInfo::of_tcp(stream)
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
        room: ReadRoom,
    ) -> Poll<io::Result<usize>> {
        let s: &TcpStream = self.half.as_ref();
        self.lowat.update(s, room);
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

impl Stream for TcpStream {
    type Reader = TcpReader;
    type Writer = OwnedWriteHalf;

    fn into_split(self) -> (TcpReader, OwnedWriteHalf) {
        let (r, w) = TcpStream::into_split(self);
        (TcpReader::new(r), w)
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        TcpStream::local_addr(self).ok()
    }

    /// Deregisters the socket from its old reactor and registers it with
    /// the current runtime's. Socket options (nodelay, buffers) are the
    /// socket's own and stay.
    fn rehome(
        reader: TcpReader,
        writer: OwnedWriteHalf,
    ) -> io::Result<(TcpReader, OwnedWriteHalf)> {
        crate::check_in_runtime()?;
        let lowat = reader.lowat;
        let stream = reader
            .half
            .reunite(writer)
            .map_err(|_| crate::not_one_stream())?;
        let stream = TcpStream::from_std(stream.into_std()?)?;
        let (r, w) = TcpStream::into_split(stream);
        Ok((TcpReader { half: r, lowat }, w))
    }
}

/// A bound TCP listener.
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
        stream_options(&s)?;
        let _ = self.tcp;
        Ok((s, peer))
    }
}

impl Transport for Tcp {
    type Stream = TcpStream;
    type Listener = TcpAcceptor;

    async fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let s = self.socket_for(&addr)?.connect(addr).await?;
        stream_options(&s)?;
        Ok(s)
    }

    async fn bind(&self, addr: SocketAddr) -> io::Result<TcpAcceptor> {
        self.listen(self.socket_for(&addr)?, addr)
    }

    async fn bind_shared(&self, addr: SocketAddr) -> io::Result<Option<TcpAcceptor>> {
        let s = self.socket_for(&addr)?;
        if !set_reuseport(&s)? {
            return Ok(None);
        }
        self.listen(s, addr).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::testing::{current_thread, rehome_across_runtimes};

    /// A TCP connection made in one runtime carries bytes both ways from
    /// another thread's runtime once rehomed there, with the first runtime
    /// gone.
    #[test]
    fn rehome_moves_socket_to_another_runtime() {
        let rt_a = current_thread();
        let tcp = Tcp::default();
        let (end, peer) = rt_a.block_on(async {
            let mut l = tcp.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
            let c = tcp.connect(l.local_addr().unwrap()).await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            (c, s.into_std().unwrap())
        });
        peer.set_nonblocking(false).unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        rehome_across_runtimes(rt_a, end, peer);
    }

    /// Two listeners bound shared on one port both get connections: the
    /// kernel spreads them by the connection's hash, so a few connects
    /// reach both (the bound only keeps a broken setup from looping).
    #[tokio::test]
    async fn bind_shared_spreads_connections() {
        let tcp = Tcp::default();
        let mut a = tcp
            .bind_shared("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap()
            .expect("SO_REUSEPORT on this system");
        let addr = a.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let mut b = tcp.bind_shared(addr).await.unwrap().unwrap();
        assert_eq!(b.local_addr().unwrap(), addr);
        // A port bound shared is still taken for a plain bind.
        assert!(tcp.bind(addr).await.is_err());

        let (mut to_a, mut to_b) = (0u32, 0u32);
        for _ in 0..1000 {
            let c = tcp.connect(addr).await.unwrap();
            // The handshake is done: the connection waits in exactly one
            // listener's queue (accept is cancel-safe, so the other's
            // accept is dropped without losing anything).
            let first = tokio::time::timeout(Duration::from_secs(10), async {
                tokio::select! {
                    r = a.accept() => { r.unwrap(); true }
                    r = b.accept() => { r.unwrap(); false }
                }
            })
            .await
            .expect("no listener accepted the connection");
            if first {
                to_a += 1;
            } else {
                to_b += 1;
            }
            drop(c);
            if to_a > 0 && to_b > 0 {
                break;
            }
        }
        assert!(to_a > 0 && to_b > 0, "a got {to_a}, b got {to_b}");
    }

    /// A connected pair: the connecting end, and the accepted end's halves.
    async fn connected() -> (TcpStream, TcpReader, OwnedWriteHalf) {
        let tcp = Tcp::default();
        let mut l = tcp.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let w = tcp.connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let (r, accepted_w) = Stream::into_split(s);
        (w, r, accepted_w)
    }

    /// Reading a large frame's rest, a waiting reader is not woken by part
    /// of it (the low-water mark) and takes it in one read once it is all
    /// there; the next frame's few bytes wake it again (the mark is back
    /// at 1). Without the mark, the first half would wake it during the
    /// writer's pause and that read would return 100 000 bytes.
    #[tokio::test]
    async fn a_large_frames_rest_wakes_the_reader_once() {
        use tokio::io::AsyncWriteExt;
        let (mut w, mut r, _w) = connected().await;
        let room = |want| ReadRoom {
            want,
            min_read: crate::MIN_READ,
        };
        let mut buf = BytesMut::new();
        // The frame's head: read, and the socket found empty after it.
        w.write_all(&[1; 32]).await.unwrap();
        assert_eq!(r.recv(&mut buf, room(32)).await.unwrap(), 32);
        buf.clear();
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            w.write_all(&[2; 100_000]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            w.write_all(&[3; 100_000]).await.unwrap();
            w
        });
        let n = tokio::time::timeout(Duration::from_secs(10), r.recv(&mut buf, room(200_000)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((n, buf.len()), (200_000, 200_000));
        let mut w = writer.await.unwrap();
        buf.clear();
        w.write_all(&[4; 10]).await.unwrap();
        let n = tokio::time::timeout(Duration::from_secs(10), r.recv(&mut buf, room(32)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 10);
    }

    /// A read that comes short leaves the socket not ready (the next poll
    /// waits instead of making a `recv` that finds nothing), and bytes
    /// sent after it wake the reader: no edge is lost. A read that fills
    /// its room leaves the socket ready (more may be there).
    #[tokio::test]
    async fn a_short_read_waits_for_the_next_edge() {
        use tokio::io::AsyncWriteExt;
        let (mut w, mut r, _w) = connected().await;
        let room = ReadRoom {
            want: 1,
            min_read: crate::HANDSHAKE_READ,
        };
        let ready = |r: &TcpReader| {
            let s: &TcpStream = r.half.as_ref();
            s.try_io(Interest::READABLE, || Ok(())).is_ok()
        };
        let mut buf = BytesMut::new();
        for round in 0..3u8 {
            w.write_all(&[round; 10]).await.unwrap();
            let n = tokio::time::timeout(Duration::from_secs(10), r.recv(&mut buf, room))
                .await
                .expect("bytes sent after a short read wake the reader")
                .unwrap();
            assert_eq!((n, &buf[..]), (10, &[round; 10][..]));
            assert!(!ready(&r), "a short read leaves the socket ready");
            buf.clear();
        }
        // Exactly the room's worth: the socket may hold more, it stays
        // ready (the next read finds out).
        let full = BytesMut::with_capacity(crate::HANDSHAKE_READ).capacity();
        w.write_all(&vec![9; full + 5]).await.unwrap();
        let mut buf = BytesMut::with_capacity(full);
        let mut got = 0;
        while got < full + 5 {
            let n = tokio::time::timeout(Duration::from_secs(10), r.recv(&mut buf, room))
                .await
                .unwrap()
                .unwrap();
            if got == 0 && n == buf.capacity() {
                assert!(ready(&r), "a full read cleared the readiness");
            }
            got += n;
        }
        assert_eq!(got, full + 5);
    }

    /// Without a runtime to move to, rehome fails instead of panicking.
    #[test]
    fn rehome_outside_runtime_is_an_error() {
        let rt = current_thread();
        let tcp = Tcp::default();
        let (end, _peer) = rt.block_on(async {
            let mut l = tcp.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
            let c = tcp.connect(l.local_addr().unwrap()).await.unwrap();
            (c, l.accept().await.unwrap())
        });
        let (r, w) = Stream::into_split(end);
        assert!(TcpStream::rehome(r, w).is_err());
    }
}
