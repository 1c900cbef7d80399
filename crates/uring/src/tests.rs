//! Streams over the ring against plain tokio sockets on loopback.

use std::io;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use msgr_transport::{Listener, Outgoing, ReadRoom, Receiver, Sender, Stream, Transport, MIN_READ};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A stream over the ring (connected with `t`) and a plain socket peer.
async fn pair(t: Uring) -> (UringStream, TcpStream) {
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = plain.local_addr().unwrap();
    let (s, peer) = tokio::join!(t.connect(addr), plain.accept());
    (s.unwrap(), peer.unwrap().0)
}

async fn send_all(w: &mut UringWriter, data: Bytes) -> io::Result<()> {
    let mut left = data;
    while !left.is_empty() {
        let chunks = [left.slice(..left.len() / 2), left.slice(left.len() / 2..)];
        let n = w.send(Outgoing::new((&chunks, &[]))).await?;
        let _ = left.split_to(n);
    }
    Ok(())
}

async fn recv_exact(r: &mut UringReader, buf: &mut BytesMut, n: usize) -> io::Result<Bytes> {
    while buf.len() < n {
        let room = ReadRoom {
            want: n - buf.len(),
            min_read: MIN_READ,
        };
        if r.recv(buf, room).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(buf.split_to(n).freeze())
}

/// Waits (up to 0.5 s) for every operation on `ring` to complete.
async fn settle(ring: &ring::Ring) {
    for _ in 0..100 {
        if ring.in_flight() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(ring.in_flight(), 0);
}

/// A pool receive posted on `r` and given up on: it stays in flight.
/// (Posted, the multishot receive stays in flight until it is stopped.)
async fn post_a_pool_receive(r: &mut UringReader, buf: &mut BytesMut) -> ReadRoom {
    let room = ReadRoom {
        want: 5,
        min_read: MIN_READ,
    };
    let waited = tokio::time::timeout(Duration::from_millis(20), r.recv(buf, room)).await;
    assert!(waited.is_err());
    room
}

fn pattern(n: usize, seed: u8) -> Bytes {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn small_and_large_messages_both_ways() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let (mut r, mut w) = s.into_split();
        let mut buf = BytesMut::new();
        for (i, n) in [1usize, 100, 4096, 16 * 1024 + 1, 1 << 20, 4 << 20, 7]
            .into_iter()
            .enumerate()
        {
            let out = pattern(n, i as u8);
            let (sent, got) = tokio::join!(send_all(&mut w, out.clone()), async {
                let mut v = vec![0; n];
                peer.read_exact(&mut v).await.map(|_| v)
            });
            sent.unwrap();
            assert_eq!(got.unwrap(), out, "to the peer, {n} bytes");

            let back = pattern(n, 100 + i as u8);
            let (wrote, got) = tokio::join!(peer.write_all(&back), recv_exact(&mut r, &mut buf, n));
            wrote.unwrap();
            assert_eq!(got.unwrap(), back, "from the peer, {n} bytes");
        }
        AsyncWriteExt::shutdown(&mut peer).await.unwrap();
        assert_eq!(
            r.recv(
                &mut buf,
                ReadRoom {
                    want: 1,
                    min_read: 0
                }
            )
            .await
            .unwrap(),
            0
        );
        w.shutdown().await.unwrap();
        assert_eq!(peer.read(&mut [0; 8]).await.unwrap(), 0);
    });
}

#[test]
fn a_dropped_receive_loses_nothing() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let ring = s.ring();
        let (mut r, _w) = s.into_split();
        let mut buf = BytesMut::new();
        let room = post_a_pool_receive(&mut r, &mut buf).await;
        assert_eq!(ring.in_flight(), 1);
        peer.write_all(b"hello").await.unwrap();
        assert_eq!(r.recv(&mut buf, room).await.unwrap(), 5);
        assert_eq!(&buf[..], b"hello");
        // The multishot receive goes on: the next bytes need no new post.
        assert_eq!(ring.in_flight(), 1);
        peer.write_all(b" world").await.unwrap();
        assert_eq!(r.recv(&mut buf, room).await.unwrap(), 6);
        assert_eq!(&buf[..], b"hello world");
        assert_eq!(ring.in_flight(), 1);
    });
}

/// A peer that streams (bytes keep waiting in the socket) is read
/// straight into the runtime's buffer, as epoll's reads would, not through
/// the pool, even when the reader asks for small steps.
#[test]
fn a_streaming_peer_is_read_straight_into_the_runtimes_buffer() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let (mut r, _w) = s.into_split();
        let data = pattern(32 << 20, 5);
        let sent = data.clone();
        let writer = tokio::spawn(async move { peer.write_all(&sent).await.map(|()| peer) });
        let mut buf = BytesMut::new();
        let mut got = BytesMut::new();
        while got.len() < data.len() {
            let room = ReadRoom {
                want: 1,
                min_read: MIN_READ,
            };
            assert!(r.recv(&mut buf, room).await.unwrap() > 0);
            got.extend_from_slice(&buf.split());
        }
        assert!(got == data, "the bytes arrived in order");
        assert!(
            r.direct_bytes > data.len() / 2,
            "{} of {} bytes received straight into the runtime's buffer",
            r.direct_bytes,
            data.len()
        );
        drop(writer.await.unwrap().unwrap());
    });
}

/// A large frame's rest comes in one receive, however it is segmented and
/// whatever of it is there already: the receive waits for readiness, which
/// the low-water mark holds back until the rest is there (not a
/// completion, a wake-up and a receive per segment).
#[test]
fn a_large_frames_rest_comes_in_one_receive() {
    rt().block_on(async {
        // A receive window open to the whole frame from the start (the
        // kernel wakes a reader below its mark when the window closes).
        let t = Uring {
            tcp: msgr_transport::tcp::Tcp {
                recv_buffer: Some(4 << 20),
                ..Default::default()
            },
            ..Uring::default()
        };
        let (s, mut peer) = pair(t).await;
        let (mut r, _w) = s.into_split();
        let data = pattern(1 << 20, 11);
        peer.write_all(&data[..100 << 10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let rest = data.slice(100 << 10..);
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for piece in rest.chunks(64 << 10) {
                peer.write_all(piece).await.unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            peer
        });
        let mut buf = BytesMut::new();
        let room = ReadRoom {
            want: 1 << 20,
            min_read: MIN_READ,
        };
        let n = r.recv(&mut buf, room).await.unwrap();
        assert_eq!(n, 1 << 20, "the rest came in one receive: {n}");
        assert!(buf == data);
        drop(writer.await.unwrap());
    });
}

/// Waits (up to 1 s) until `f` holds.
async fn until(mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A reader that does not read (a throttled connection) holds at most a
/// few of the shard's pool buffers: its multishot receive is cancelled
/// (TCP's window then holds the peer back) and posted again when it
/// reads, and every byte arrives in order.
#[test]
fn a_reader_that_does_not_read_stops_taking_pool_buffers() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let ring = s.ring();
        let (mut r, _w) = s.into_split();
        let mut buf = BytesMut::new();
        post_a_pool_receive(&mut r, &mut buf).await;
        // More than the whole pool (128 buffers of 64 KiB).
        let data = pattern(16 << 20, 3);
        let sent = data.clone();
        let writer = tokio::spawn(async move { peer.write_all(&sent).await.map(|()| peer) });
        until(|| ring.in_flight() == 0).await;
        assert_eq!(ring.in_flight(), 0, "the multishot receive was stopped");
        let held = ring.lent_out();
        assert!(
            (1..=2 * op::MULTISHOT_UNSEEN as u16).contains(&held),
            "{held} pool buffers held by a reader that does not read"
        );
        let got = recv_exact(&mut r, &mut buf, 16 << 20).await.unwrap();
        assert!(got == data, "the bytes arrived in order");
        drop(writer.await.unwrap().unwrap());
        assert_eq!(ring.lent_out(), 0);
    });
}

#[test]
fn a_half_dropped_in_flight_cancels_its_receive() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let ring = s.ring();
        let (mut r, w) = s.into_split();
        let mut buf = BytesMut::new();
        let room = ReadRoom {
            want: 1 << 20,
            min_read: MIN_READ,
        };
        let waited = tokio::time::timeout(Duration::from_millis(20), r.recv(&mut buf, room)).await;
        assert!(waited.is_err());
        assert_eq!(ring.in_flight(), 1);
        drop((r, w));
        settle(&ring).await;
        // The socket is closed once the cancelled receive let go of it.
        assert_eq!(peer.read(&mut [0; 8]).await.unwrap(), 0);
    });
}

#[test]
fn a_dry_pool_falls_back_to_the_runtimes_buffer() {
    rt().block_on(async {
        let t = Uring {
            config: Config {
                pool_buffers: 2,
                buffer_size: 64,
                ..Config::default()
            },
            ..Uring::default()
        };
        let mut conns = Vec::new();
        for _ in 0..4 {
            let (s, peer) = pair(t).await;
            let (r, w) = s.into_split();
            conns.push((r, w, peer, BytesMut::new()));
        }
        // Every connection posts a pool receive before any bytes arrive.
        let room = ReadRoom {
            want: 1,
            min_read: 0,
        };
        for (r, _, _, buf) in &mut conns {
            let _ = tokio::time::timeout(Duration::from_millis(5), r.recv(buf, room)).await;
        }
        for (i, (_, _, peer, _)) in conns.iter_mut().enumerate() {
            peer.write_all(&pattern(1000, i as u8)).await.unwrap();
        }
        let dry = stream::DRY.load(std::sync::atomic::Ordering::Relaxed);
        for (i, (r, _, _, buf)) in conns.iter_mut().enumerate() {
            let got = recv_exact(r, buf, 1000).await.unwrap();
            assert_eq!(got, pattern(1000, i as u8));
        }
        assert!(stream::DRY.load(std::sync::atomic::Ordering::Relaxed) >= dry + 2);
    });
}

#[test]
fn a_stream_moves_to_another_threads_ring() {
    let a = rt();
    let (s, mut peer) = a.block_on(async {
        let (s, peer) = pair(Uring::default()).await;
        (s, peer.into_std().unwrap())
    });
    peer.set_nonblocking(false).unwrap();
    let first = s.ring();
    let (r, w) = s.into_split();
    let moved = std::thread::spawn(move || {
        let b = rt();
        b.block_on(async move {
            let (mut r, mut w) = UringStream::rehome(r, w).unwrap();
            assert!(!Arc::ptr_eq(&r.ring(), &first));
            drop(first);
            send_all(&mut w, Bytes::from_static(b"ping")).await.unwrap();
            let mut buf = BytesMut::new();
            recv_exact(&mut r, &mut buf, 4).await.unwrap()
        })
    });
    drop(a);
    use std::io::{Read, Write};
    let mut got = [0; 4];
    peer.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    peer.write_all(b"pong").unwrap();
    assert_eq!(&moved.join().unwrap()[..], b"pong");
}

/// Counts its wakes.
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A send is taken when it is posted, and its completion wakes nobody: a
/// connection answering one message at a time is woken by its receive
/// alone. The next send finds the completion and goes out after it, and
/// one sent while the last is still in flight waits for it (and is woken
/// by it).
#[test]
fn a_send_is_taken_when_posted_and_its_completion_wakes_nobody() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let (_r, mut w) = s.into_split();
        let wakes = Arc::new(Wakes(Default::default()));
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        for i in 0..3u8 {
            let msg = [pattern(100, i)];
            assert!(matches!(
                w.poll_send(&mut cx, Outgoing::new((&msg, &[]))),
                Poll::Ready(Ok(100))
            ));
            let mut got = vec![0; 100];
            peer.read_exact(&mut got).await.unwrap();
            assert_eq!(&got[..], &msg[0][..]);
            settle(&w.ring()).await;
        }
        assert_eq!(wakes.0.load(std::sync::atomic::Ordering::Relaxed), 0);
        // A peer that does not read: a send waits for room, the next one
        // for it, and its completion wakes the one waiting.
        let big = [pattern(32 << 20, 7)];
        assert!(matches!(
            w.poll_send(&mut cx, Outgoing::new((&big, &[]))),
            Poll::Ready(Ok(n)) if n == 32 << 20
        ));
        let after = [Bytes::from_static(b"after")];
        assert!(w
            .poll_send(&mut cx, Outgoing::new((&after, &[])))
            .is_pending());
        let mut got = vec![0; 32 << 20];
        peer.read_exact(&mut got).await.unwrap();
        assert!(got == big[0], "the large send arrived whole");
        until(|| wakes.0.load(std::sync::atomic::Ordering::Relaxed) > 0).await;
        assert!(matches!(
            w.poll_send(&mut cx, Outgoing::new((&after, &[]))),
            Poll::Ready(Ok(5))
        ));
        let mut got = [0; 5];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"after");
    });
}

/// A send that went out in part (here: posted without `MSG_WAITALL`, to
/// a peer that does not read) was reported taken whole: its rest is sent
/// from the chunks it holds, before anything newer, and the peer reads
/// every byte in order.
#[test]
fn a_short_sends_rest_goes_before_anything_newer() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let (_r, mut w) = s.into_split();
        w.waitall = false;
        let n = 32 << 20;
        let big = [pattern(n / 2, 1), pattern(n / 2, 2)];
        let after = [Bytes::from_static(b"after")];
        let sender = async {
            assert_eq!(w.send(Outgoing::new((&big, &[]))).await.unwrap(), n);
            assert_eq!(w.send(Outgoing::new((&after, &[]))).await.unwrap(), 5);
            w.shutdown().await.unwrap();
        };
        let reader = async {
            // Not reading at first: the send goes out in part.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut got = Vec::new();
            peer.read_to_end(&mut got).await.map(|_| got)
        };
        let ((), got) = tokio::join!(sender, reader);
        let got = got.unwrap();
        assert_eq!(got.len(), n + 5);
        assert!(got[..n / 2] == big[0] && got[n / 2..n] == big[1]);
        assert_eq!(&got[n..], b"after");
        assert!(w.rests > 0, "no send went out in part");
    });
}

#[test]
fn zero_copy_sends_arrive_whole() {
    rt().block_on(async {
        let t = Uring {
            config: Config {
                zero_copy_min: Some(64 * 1024),
                ..Config::default()
            },
            ..Uring::default()
        };
        let (s, mut peer) = pair(t).await;
        let (_r, mut w) = s.into_split();
        for n in [100usize, 1 << 20] {
            let out = pattern(n, 9);
            let (sent, got) = tokio::join!(send_all(&mut w, out.clone()), async {
                let mut v = vec![0; n];
                peer.read_exact(&mut v).await.map(|_| v)
            });
            sent.unwrap();
            assert_eq!(got.unwrap(), out);
        }
    });
}

#[test]
fn a_listener_hands_out_ring_streams() {
    rt().block_on(async {
        let t = Uring::default();
        let mut l = t.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let (c, a) = tokio::join!(t.connect(addr), l.accept());
        let (mut cr, mut cw) = c.unwrap().into_split();
        let (mut ar, mut aw) = a.unwrap().0.into_split();
        let (mut cb, mut ab) = (BytesMut::new(), BytesMut::new());
        send_all(&mut cw, Bytes::from_static(b"hello"))
            .await
            .unwrap();
        assert_eq!(
            &recv_exact(&mut ar, &mut ab, 5).await.unwrap()[..],
            b"hello"
        );
        send_all(&mut aw, Bytes::from_static(b"world"))
            .await
            .unwrap();
        assert_eq!(
            &recv_exact(&mut cr, &mut cb, 5).await.unwrap()[..],
            b"world"
        );
    });
}

/// A send posted and not yet submitted (submission waits for the reaper)
/// when its stream is dropped must not reach the socket that is given the
/// stream's fd number next: the ring resolves an fd when it submits, so
/// the table keeps the socket open until the operation completes.
#[test]
fn a_dropped_streams_queued_send_reaches_no_later_socket() {
    rt().block_on(async {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        for _ in 0..20 {
            let a = std::net::TcpStream::connect(addr).unwrap();
            let (a_peer, _) = listener.accept().unwrap();
            let (ar, mut aw) = UringStream::new(a, Config::default()).unwrap().into_split();
            let stale = [Bytes::from_static(b"STALE")];
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            // Posted, and taken: queued for the reaper, which has not run.
            assert!(matches!(
                aw.poll_send(&mut cx, Outgoing::new((&stale, &[]))),
                Poll::Ready(Ok(5))
            ));
            drop((ar, aw));
            // Without the ring holding the socket, this takes its fd.
            let b = std::net::TcpStream::connect(addr).unwrap();
            let (b_peer, _) = listener.accept().unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
            b_peer.set_nonblocking(true).unwrap();
            let mut got = [0; 8];
            let read = std::io::Read::read(&mut &b_peer, &mut got);
            assert!(
                matches!(&read, Err(e) if e.kind() == io::ErrorKind::WouldBlock),
                "the new socket received {read:?}: {:?}",
                &got[..]
            );
            drop((a_peer, b, b_peer));
        }
    });
}

/// A pool receive that completed after its reader stopped looking (the
/// reader dropped with the completion unseen, or before it came) gives its
/// buffer back to the pool.
#[test]
fn an_abandoned_receive_gives_its_pool_buffer_back() {
    rt().block_on(async {
        let (s, mut peer) = pair(Uring::default()).await;
        let ring = s.ring();
        let (mut r, _w) = s.into_split();
        let mut buf = BytesMut::new();
        post_a_pool_receive(&mut r, &mut buf).await;
        peer.write_all(b"hello").await.unwrap();
        until(|| ring.lent_out() == 1).await;
        assert_eq!(ring.lent_out(), 1, "the completion holds a pool buffer");
        drop(r);
        assert_eq!(ring.lent_out(), 0, "the dropped reader gave it back");
        // Its multishot receive, still posted, was cancelled.
        settle(&ring).await;
    });
}

/// A reader dropped with its multishot receive in flight: the table, which
/// borrowed the reader's slot for the receive, takes a reference of its
/// own and holds the slot until the receive's last completion.
#[test]
fn a_dropped_halfs_slot_lives_until_its_last_completion() {
    rt().block_on(async {
        let (s, _peer) = pair(Uring::default()).await;
        let ring = s.ring();
        let (mut r, _w) = s.into_split();
        let mut buf = BytesMut::new();
        post_a_pool_receive(&mut r, &mut buf).await;
        let slot = r.slot();
        assert_eq!(slot.strong_count(), 1, "the table borrows the slot");
        drop(r);
        // The receive's cancel is queued, not yet submitted.
        assert_eq!(ring.in_flight(), 1);
        assert_eq!(slot.strong_count(), 1, "the table holds the slot");
        settle(&ring).await;
        assert_eq!(slot.strong_count(), 0, "and let go of it at the end");
    });
}

/// On a ring-driven loop (`exec`), with no tokio runtime: a listener binds
/// and accepts, a stream connects, and both carry a large and a small
/// message each way; the operations go on the loop's own ring, and what
/// is in flight when the executor is dropped is cancelled and waited for.
#[test]
fn streams_run_on_a_ring_driven_loop() {
    let mut ex = exec::Executor::new(64).unwrap();
    let spawner = ex.spawner();
    let big = pattern(3 << 20, 7);
    let small = pattern(100, 9);
    let (b2, s2) = (big.clone(), small.clone());
    let got = ex
        .block_on(async move {
            let t = Uring::default();
            let mut l = t.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
            let addr = l.local_addr().unwrap();
            // The accepting side echoes what it reads, on a task of its own.
            spawner.spawn(async move {
                let (s, _) = l.accept().await.unwrap();
                let (mut r, mut w) = s.into_split();
                let mut buf = BytesMut::new();
                let msg = recv_exact(&mut r, &mut buf, (3 << 20) + 100).await.unwrap();
                send_all(&mut w, msg).await.unwrap();
                // Left waiting: dropped with the executor.
                let _ = recv_exact(&mut r, &mut buf, 1).await;
            });
            let s = t.connect(addr).await.unwrap();
            let ring = s.ring();
            let (mut r, mut w) = s.into_split();
            let mut out = BytesMut::from(&b2[..]);
            out.extend_from_slice(&s2);
            send_all(&mut w, out.freeze()).await.unwrap();
            let mut buf = BytesMut::new();
            let back = recv_exact(&mut r, &mut buf, (3 << 20) + 100).await.unwrap();
            // Neither half nor the pool leaks: the receive left posted
            // above is the peer's, and ours are done.
            assert_eq!(ring.lent_out(), 0);
            back
        })
        .unwrap();
    drop(ex);
    assert_eq!(&got[..3 << 20], &big[..]);
    assert_eq!(&got[3 << 20..], &small[..]);
}

/// Off any executor and outside tokio, the loop's readiness poll says so
/// rather than waiting forever.
#[test]
fn a_readiness_poll_off_a_loop_fails() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut ready = std::pin::pin!(exec::ready(&l, libc::POLLIN));
    let waker = std::task::Waker::noop();
    let polled =
        std::future::Future::poll(ready.as_mut(), &mut std::task::Context::from_waker(waker));
    assert!(matches!(polled, std::task::Poll::Ready(Err(_))));
}

/// A loop on a thread of its own: `setup` runs on it with a stream over
/// its ring and the stream's plain peer, and what it returns comes back
/// here. The loop then turns (running the tasks other threads send it)
/// until the sender returned is used or dropped.
fn on_another_loop<T: Send + 'static>(
    setup: impl AsyncFnOnce(UringStream, std::net::TcpStream) -> T + Send + 'static,
) -> (T, std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (to_us, from_it) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let a = std::thread::spawn(move || {
        let mut ex = exec::Executor::new(64).unwrap();
        ex.block_on(async move {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let s = Uring::default().connect(addr).await.unwrap();
            let (peer, _) = l.accept().unwrap();
            to_us.send(setup(s, peer).await).unwrap();
            while matches!(
                done_rx.try_recv(),
                Err(std::sync::mpsc::TryRecvError::Empty)
            ) {
                exec::sleep_until(std::time::Instant::now() + Duration::from_millis(1)).await;
            }
        })
        .unwrap()
    });
    (from_it.recv().unwrap(), done_tx, a)
}

/// A stream moved from one loop to another with its multishot receive
/// posted: the receive is cancelled on the first loop's ring (from the
/// second loop's thread, through the first loop) and posted again on the
/// second's, and the bytes arrive there.
#[test]
fn a_multishot_receive_moves_with_its_stream_between_loops() {
    // The cancel goes to the first loop as a task.
    let ((r, w, mut peer, first), done, a) = on_another_loop(async |s, peer| {
        let ring = s.ring();
        let (mut r, w) = s.into_split();
        let mut buf = BytesMut::new();
        let room = ReadRoom {
            want: 5,
            min_read: MIN_READ,
        };
        // Posted, and left waiting.
        let polled = std::future::poll_fn(|cx| Poll::Ready(r.poll_recv(cx, &mut buf, room))).await;
        assert!(polled.is_pending());
        assert_eq!(ring.in_flight(), 1);
        (r, w, peer, ring)
    });
    let mut ex = exec::Executor::new(64).unwrap();
    let got = ex
        .block_on(async move {
            let (mut r, _w) = UringStream::rehome(r, w).unwrap();
            let second = r.ring();
            assert!(!Arc::ptr_eq(&second, &first));
            for _ in 0..1000 {
                if first.in_flight() == 0 {
                    break;
                }
                exec::sleep_until(std::time::Instant::now() + Duration::from_millis(1)).await;
            }
            assert_eq!(first.in_flight(), 0, "cancelled on the first loop");
            use std::io::Write;
            peer.write_all(b"moved").unwrap();
            let mut buf = BytesMut::new();
            let got = recv_exact(&mut r, &mut buf, 5).await.unwrap();
            assert_eq!(second.in_flight(), 1, "posted again on the second");
            assert_eq!(first.lent_out() + second.lent_out(), 0);
            got
        })
        .unwrap();
    done.send(()).unwrap();
    a.join().unwrap();
    assert_eq!(&got[..], b"moved");
}

/// A connection's socket takes a slot of its ring's registered files
/// while one is free (one beyond them names its fd and works as well).
/// Once it is closed the slot is cleared, so the table does not hold the
/// socket open (the peer sees the end), and the slot serves the next.
#[test]
fn a_closed_streams_registered_slot_is_cleared_and_used_again() {
    rt().block_on(async {
        let t = Uring {
            config: Config {
                fixed_files: 2,
                ..Config::default()
            },
            ..Uring::default()
        };
        let (a, mut a_peer) = pair(t).await;
        let (b, mut b_peer) = pair(t).await;
        let (c, mut c_peer) = pair(t).await;
        let ring = a.ring();
        assert!(a.fixed() && b.fixed());
        assert!(!c.fixed(), "the table has two slots");
        assert_eq!(ring.files_free(), Some(0));
        for (s, peer) in [(b, &mut b_peer), (c, &mut c_peer)] {
            echo_once(s, peer).await;
        }
        drop(a);
        let end = tokio::time::timeout(Duration::from_secs(2), a_peer.read(&mut [0; 8])).await;
        assert!(
            matches!(end, Ok(Ok(0))),
            "the closed socket is let go: {end:?}"
        );
        until(|| ring.files_free() == Some(2)).await;
        assert_eq!(ring.files_free(), Some(2), "b's and a's slots are free");
        let (d, mut d_peer) = pair(t).await;
        assert!(d.fixed());
        echo_once(d, &mut d_peer).await;
    });
}

/// A read of the non-blocking `peer` that lets the loop turn while it
/// would block (up to a second).
async fn read_on_loop(peer: &mut std::net::TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    for _ in 0..1000 {
        match std::io::Read::read(peer, buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                exec::sleep_until(std::time::Instant::now() + Duration::from_millis(1)).await;
            }
            r => return r,
        }
    }
    Err(io::ErrorKind::TimedOut.into())
}

/// One message each way between `s` and `peer`, then `s` is dropped.
async fn echo_once(s: UringStream, peer: &mut TcpStream) {
    let (mut r, mut w) = s.into_split();
    send_all(&mut w, Bytes::from_static(b"ping")).await.unwrap();
    let mut got = [0; 4];
    peer.read_exact(&mut got).await.unwrap();
    peer.write_all(&got).await.unwrap();
    let mut buf = BytesMut::new();
    assert_eq!(&recv_exact(&mut r, &mut buf, 4).await.unwrap()[..], b"ping");
}

/// A stream made on one loop and moved to another with nothing in flight:
/// it takes a slot of the second ring's registered files, and its slot on
/// the first is cleared there (the release goes to the first loop as a
/// task: only its thread may post on its ring). Closed on the second, the
/// socket is let go by both tables.
#[test]
fn a_moved_streams_slot_is_cleared_on_the_loop_it_left() {
    // The release goes to the first loop as a task.
    let ((r, w, mut peer, first, free), done, a) = on_another_loop(async |s, peer| {
        let ring = s.ring();
        assert!(s.fixed());
        let free = ring.files_free();
        let (r, w) = s.into_split();
        (r, w, peer, ring, free)
    });
    let mut ex = exec::Executor::new(64).unwrap();
    ex.block_on(async move {
        let (r, mut w) = UringStream::rehome(r, w).unwrap();
        assert!(r.fixed(), "a slot on the second ring");
        let second = r.ring();
        for _ in 0..1000 {
            if first.files_free() > free {
                break;
            }
            exec::sleep_until(std::time::Instant::now() + Duration::from_millis(1)).await;
        }
        assert_eq!(
            first.files_free(),
            free.map(|n| n + 1),
            "cleared on the first"
        );
        send_all(&mut w, Bytes::from_static(b"moved"))
            .await
            .unwrap();
        peer.set_nonblocking(true).unwrap();
        let mut got = [0; 8];
        assert!(matches!(read_on_loop(&mut peer, &mut got).await, Ok(5)));
        assert_eq!(&got[..5], b"moved");
        let free = second.files_free();
        drop((r, w));
        let end = read_on_loop(&mut peer, &mut got).await;
        assert!(matches!(end, Ok(0)), "the closed socket is let go: {end:?}");
        assert_eq!(second.files_free(), free.map(|n| n + 1));
    })
    .unwrap();
    done.send(()).unwrap();
    a.join().unwrap();
}
