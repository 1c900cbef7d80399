//! The physical baseline of `msgr bench --raw`: the same request/reply
//! pattern over plain TCP with minimal framing (a 12-byte header `u32 len,
//! u64 tid`, then the payload; replies are a bare header), batched the way
//! a good server batches: every complete request in a read is answered in
//! one write.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use msgr_frames::WireQueue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::Latencies;
use crate::workload::{Progress, ServeStats};

const HEADER: usize = 12;

/// Starts a raw echo server on loopback; returns its address.
pub async fn start_server() -> std::io::Result<SocketAddr> {
    start_server_on("127.0.0.1:0".parse().expect("literal"), Default::default()).await
}

/// Starts a raw echo server on `addr` (`msgr serve --raw`), counting
/// requests and connections in `stats`; returns the bound address.
pub async fn start_server_on(
    addr: SocketAddr,
    stats: Arc<ServeStats>,
) -> std::io::Result<SocketAddr> {
    let l = TcpListener::bind(addr).await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            stats.connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve_conn(s, stats.clone()));
        }
    });
    Ok(addr)
}

/// A raw echo server on its own thread (one core).
pub fn server_thread() -> std::io::Result<crate::common::ServerThread<SocketAddr>> {
    crate::common::ServerThread::spawn(|| async {
        let addr = start_server().await?;
        Ok((addr, async {}))
    })
}

async fn serve_conn(mut s: TcpStream, stats: Arc<ServeStats>) {
    let _ = s.set_nodelay(true);
    let mut buf = BytesMut::new();
    let mut out = BytesMut::new();
    loop {
        // Room for many small requests per read (a large one reserves its
        // size below).
        buf.reserve(64 * 1024);
        match s.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // Answer every complete request.
        loop {
            if buf.len() < HEADER {
                break;
            }
            let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() < HEADER + len {
                buf.reserve(HEADER + len - buf.len());
                break;
            }
            let tid = (&buf[4..12]).get_u64_le();
            buf.advance(HEADER + len);
            stats.op(0, len as u64);
            out.put_u32_le(0);
            out.put_u64_le(tid);
        }
        if !out.is_empty() && s.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
    }
}

/// What one raw connection achieved.
#[derive(Debug, Default)]
pub struct RawResult {
    pub completed: u64,
    pub latencies: Latencies,
}

/// Runs `depth` requests in flight of `size` bytes against `addr` until
/// `stop` says so.
pub(crate) async fn run_client(
    addr: SocketAddr,
    size: usize,
    depth: usize,
    count: Option<u64>,
    until: Option<Instant>,
    progress: Arc<Progress>,
) -> std::io::Result<RawResult> {
    let s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let (mut r, mut w) = s.into_split();
    let payload = Bytes::from(vec![7u8; size]);
    let mut res = RawResult::default();
    let mut sent = 0u64;
    let mut inflight: std::collections::VecDeque<(u64, Instant)> = Default::default();
    let mut rbuf = BytesMut::with_capacity(64 * 1024);
    let more =
        |sent: u64| count.is_none_or(|c| sent < c) && until.is_none_or(|t| Instant::now() < t);
    loop {
        // Fill the window, all new requests in vectored writes.
        let mut q = WireQueue::new();
        while inflight.len() < depth && more(sent) {
            sent += 1;
            let mut h = [0u8; HEADER];
            h[..4].copy_from_slice(&(size as u32).to_le_bytes());
            h[4..].copy_from_slice(&sent.to_le_bytes());
            q.put_slice(&h);
            q.put_bytes(payload.clone());
            inflight.push_back((sent, Instant::now()));
        }
        while !q.is_empty() {
            let mut iov = [std::io::IoSlice::new(&[]); 64];
            let n = q.io_slices(&mut iov);
            let wrote = w.write_vectored(&iov[..n]).await?;
            q.advance(wrote);
        }
        if inflight.is_empty() {
            break;
        }
        // Take replies.
        if r.read_buf(&mut rbuf).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        while rbuf.len() >= HEADER {
            let tid = (&rbuf[4..12]).get_u64_le();
            rbuf.advance(HEADER);
            if let Some((t, at)) = inflight.pop_front() {
                debug_assert_eq!(t, tid);
                res.latencies.record(at.elapsed());
                res.completed += 1;
                progress.completed.fetch_add(1, Ordering::Relaxed);
                if res.completed == 1 {
                    progress.up.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    Ok(res)
}
