//! The raw request/reply pattern of `msgr serve --raw` (requests of a
//! 12-byte header `u32 len, u64 tid` and `len` bytes, replies a bare
//! header) served on one thread by an existing thread-per-core io_uring
//! runtime: monoio, compio, tokio-uring or glommio (issue 38 §2: evaluate
//! them against our own loop, `msgr serve --raw --transport uring`, on the
//! same workloads). Each connection is a task that receives into a buffer
//! of its own (64 KiB, reused), skips payloads where they lie, and answers
//! every request a receive completed in one send: the pattern of
//! `msgr_uring::raw` and of the tokio server over epoll, on each runtime's
//! own TCP API as its users would write it.
//!
//! It takes the arguments `scripts/bench/conns.sh` gives a server and
//! prints the same statistics line once a second, so the script measures
//! it beside `msgr serve`:
//!
//! ```text
//! uring-raw serve --bind v2:127.0.0.1:PORT --stats 1 --raw --runtime monoio
//! ```

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Requests answered and connections accepted, read by the statistics
/// thread.
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

const HEADER: usize = 12;
const BUFFER: usize = 64 << 10;
/// Submission queue entries, as `msgr_uring::raw`'s ring.
const ENTRIES: u32 = 4096;

/// Where a connection's request stream stands: the header so far, payload
/// bytes still to skip, and the request being received.
#[derive(Default)]
struct Stream {
    header: [u8; HEADER],
    have: usize,
    skip: u64,
    tid: Option<u64>,
}

impl Stream {
    /// Takes in received bytes, appending a reply to `out` for each
    /// request whose payload has all come (the parser of
    /// `msgr_uring::raw`).
    fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) {
        while !data.is_empty() {
            if self.skip > 0 {
                let n = usize::try_from(self.skip)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                data = &data[n..];
                self.skip -= n as u64;
            } else {
                let n = (HEADER - self.have).min(data.len());
                self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
                self.have += n;
                data = &data[n..];
                if self.have < HEADER {
                    break;
                }
                self.have = 0;
                let len = u32::from_le_bytes(self.header[0..4].try_into().unwrap());
                let tid = u64::from_le_bytes(self.header[4..12].try_into().unwrap());
                REQUESTS.fetch_add(1, Ordering::Relaxed);
                BYTES.fetch_add(u64::from(len), Ordering::Relaxed);
                self.skip = u64::from(len);
                self.tid = Some(tid);
            }
            if self.skip == 0 {
                if let Some(tid) = self.tid.take() {
                    out.extend_from_slice(&0u32.to_le_bytes());
                    out.extend_from_slice(&tid.to_le_bytes());
                }
            }
        }
    }
}

/// An accepted connection, or none when the accept failed (said, and the
/// server goes on accepting, as a server should).
fn accepted<T, E: std::fmt::Display>(r: Result<T, E>) -> Option<T> {
    r.map_err(|e| eprintln!("uring-raw: accept: {e}")).ok()
}

fn set_nodelay(fd: std::os::fd::RawFd) {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is an open socket of the caller's; the option value is
    // a c_int that lives across the call.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A listener as tokio's `TcpListener::bind` makes one (`SO_REUSEADDR`,
/// so that a port whose last connections are in TIME_WAIT can be bound
/// again), with the largest backlog the kernel allows, so that 10000
/// connections arriving at once wait for a slow accept loop rather than
/// being reset.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(libc::SOMAXCONN)?;
    Ok(s.into())
}

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The statistics line of `msgr serve --stats`, which `conns.sh` parses.
fn report(every: Duration) {
    let start = Instant::now();
    let cpu0 = cpu_seconds();
    let (mut last_n, mut last_b, mut last_t) = (0u64, 0u64, Instant::now());
    loop {
        std::thread::sleep(every);
        let (n, b) = (
            REQUESTS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        );
        let dt = last_t.elapsed().as_secs_f64().max(1e-9);
        eprintln!(
            "[serve {:6.1}s] {:9.0} msgs/s {:9.1} MB/s in  total {} msgs, {} conns, 0 pings, cpu {:.2}s",
            start.elapsed().as_secs_f64(),
            (n - last_n) as f64 / dt,
            (b - last_b) as f64 / dt / 1e6,
            n,
            CONNECTIONS.load(Ordering::Relaxed),
            cpu_seconds() - cpu0,
        );
        (last_n, last_b, last_t) = (n, b, Instant::now());
    }
}

/// A connection's loop on a runtime whose reads and writes take their
/// buffer and give it back (monoio, compio, tokio-uring): `$read` receives
/// into `$buf` and `$write` sends `$out`, each giving back
/// `(io::Result<_>, Vec<u8>)`. Every receive is fed whole, so the buffer
/// is emptied before the next.
macro_rules! owned_buffer_loop {
    ($buf:ident => $read:expr, $out:ident => $write:expr) => {{
        let mut st = Stream::default();
        let mut $buf: Vec<u8> = Vec::with_capacity(BUFFER);
        let mut $out: Vec<u8> = Vec::with_capacity(4 * HEADER);
        loop {
            $buf.clear();
            let (r, b) = $read;
            $buf = b;
            match r {
                Ok(0) => return,
                Ok(_) => st.feed(&$buf, &mut $out),
                Err(e) => return eprintln!("uring-raw: receive: {e}"),
            }
            if !$out.is_empty() {
                let (r, o) = $write;
                $out = o;
                if let Err(e) = r {
                    return eprintln!("uring-raw: send: {e}");
                }
                $out.clear();
            }
        }
    }};
}

fn serve_monoio(l: TcpListener) -> std::io::Result<()> {
    use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
    use std::os::fd::AsRawFd;
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(ENTRIES)
        .build()?;
    rt.block_on(async move {
        let l = monoio::net::TcpListener::from_std(l)?;
        loop {
            let Some((mut s, _)) = accepted(l.accept().await) else {
                continue;
            };
            set_nodelay(s.as_raw_fd());
            CONNECTIONS.fetch_add(1, Ordering::Relaxed);
            monoio::spawn(async move {
                owned_buffer_loop!(buf => s.read(buf).await, out => s.write_all(out).await)
            });
        }
    })
}

fn serve_compio(l: TcpListener) -> std::io::Result<()> {
    use compio::io::{AsyncRead, AsyncWriteExt};
    let rt = compio::runtime::RuntimeBuilder::new().build()?;
    rt.block_on(async move {
        let l = compio::net::TcpListener::from_std(l)?;
        loop {
            let Some((mut s, _)) = accepted(l.accept().await) else {
                continue;
            };
            let _ = s.set_nodelay(true);
            CONNECTIONS.fetch_add(1, Ordering::Relaxed);
            compio::runtime::spawn(async move {
                owned_buffer_loop!(
                    buf => s.read(buf).await.into(),
                    out => s.write_all(out).await.into()
                )
            })
            .detach();
        }
    })
}

fn serve_tokio_uring(l: TcpListener) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    tokio_uring::builder().entries(ENTRIES).start(async move {
        let l = tokio_uring::net::TcpListener::from_std(l);
        loop {
            let Some((s, _)) = accepted(l.accept().await) else {
                continue;
            };
            set_nodelay(s.as_raw_fd());
            CONNECTIONS.fetch_add(1, Ordering::Relaxed);
            tokio_uring::spawn(async move {
                owned_buffer_loop!(buf => s.read(buf).await, out => s.write_all(out).await)
            });
        }
    })
}

fn serve_glommio(l: TcpListener) -> std::io::Result<()> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use std::os::fd::AsRawFd;
    // glommio binds its own listener; take the address and let the std one
    // go.
    let addr = l.local_addr()?;
    drop(l);
    let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .ring_depth(ENTRIES as usize)
        .make()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    ex.run(async move {
        let l = glommio::net::TcpListener::bind(addr)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        loop {
            let Some(mut s) = accepted(l.accept().await) else {
                continue;
            };
            set_nodelay(s.as_raw_fd());
            CONNECTIONS.fetch_add(1, Ordering::Relaxed);
            glommio::spawn_local(async move {
                let mut st = Stream::default();
                let mut buf = vec![0u8; BUFFER];
                let mut out = Vec::with_capacity(4 * HEADER);
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) => return,
                        Ok(n) => st.feed(&buf[..n], &mut out),
                        Err(e) => return eprintln!("uring-raw: receive: {e}"),
                    }
                    if !out.is_empty() {
                        if let Err(e) = s.write_all(&out).await {
                            return eprintln!("uring-raw: send: {e}");
                        }
                        out.clear();
                    }
                }
            })
            .detach();
        }
    })
}

fn usage() -> ! {
    eprintln!(
        "usage: uring-raw serve --bind [v2:]ADDR:PORT [--stats SECS] [--raw] \
         --runtime monoio|compio|tokio-uring|glommio"
    );
    std::process::exit(2)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut bind, mut stats, mut runtime) = (None::<SocketAddr>, None, None);
    let mut it = args.iter().map(String::as_str);
    while let Some(a) = it.next() {
        match a {
            "serve" | "--raw" => {}
            "--bind" => {
                let v = it.next().unwrap_or_else(|| usage());
                let v = v.strip_prefix("v2:").unwrap_or(v);
                let v = v.split('/').next().unwrap_or(v);
                bind = Some(v.parse().unwrap_or_else(|_| usage()));
            }
            "--stats" => {
                let v = it.next().unwrap_or_else(|| usage());
                stats = Some(Duration::from_secs_f64(
                    v.parse().unwrap_or_else(|_| usage()),
                ));
            }
            "--runtime" => runtime = it.next().map(str::to_owned),
            _ => usage(),
        }
    }
    let l = listen(bind.unwrap_or_else(|| usage()))?;
    let every = stats.unwrap_or(Duration::from_secs(1));
    std::thread::spawn(move || report(every));
    eprintln!("uring-raw: {:?} on {}", runtime, l.local_addr()?);
    match runtime.as_deref() {
        Some("monoio") => serve_monoio(l),
        Some("compio") => serve_compio(l),
        Some("tokio-uring") => serve_tokio_uring(l),
        Some("glommio") => serve_glommio(l),
        _ => usage(),
    }
}
