//! The raw request/reply pattern (`msgr serve --raw`: requests of a
//! 12-byte header `u32 len, u64 tid` and `len` bytes, replies a bare
//! header) served by a thread that drives a ring of its own, as a
//! ring-driven shard would: every connection's receive is one multishot
//! receive into the provided-buffer pool, consumed incrementally (a
//! receive takes only the bytes it needs from a buffer), the replies a turn produced are
//! sent in one send per connection, and one `io_uring_enter` per loop turn
//! submits them all and waits for the next completions. The ring is
//! SINGLE_ISSUER and DEFER_TASKRUN: completions are reaped only when this
//! thread asks. It measures what such a shard wins over epoll's read and
//! write per connection turn (`scripts/bench/conns.sh`).
//!
//! Requests come from a peer: their lengths are checked, not trusted; a
//! payload is skipped where it lies in the pool buffer, never copied.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::pool::{Pool, GROUP};

/// Request header: `u32 len, u64 tid`, little-endian.
const HEADER: usize = 12;
/// The header's fields.
const LEN: std::ops::Range<usize> = 0..4;
const TID: std::ops::Range<usize> = 4..12;

/// What a completion is for: the kind in the high 32 bits of its
/// user_data, the connection's slot in the low.
const ACCEPT: u64 = 1;
const RECV: u64 = 2;
const SEND: u64 = 3;

fn user_data(kind: u64, slot: usize) -> u64 {
    (kind << 32) | (slot as u64 & 0xffff_ffff)
}

/// One connection: its socket, where its request stream stands, and its
/// replies (being gathered, and in flight: the kernel reads `sending`
/// until the send completes).
struct Conn {
    sock: std::net::TcpStream,
    header: [u8; HEADER],
    have: usize,
    /// Payload bytes of the current request still to come, and its tid.
    skip: u64,
    tid: Option<u64>,
    out: Vec<u8>,
    sending: Vec<u8>,
    sent: usize,
    recv_armed: bool,
    send_armed: bool,
    /// The socket failed or closed: no more is read or sent.
    dead: bool,
}

impl Conn {
    fn new(sock: std::net::TcpStream) -> Conn {
        Conn {
            sock,
            header: [0; HEADER],
            have: 0,
            skip: 0,
            tid: None,
            out: Vec::new(),
            sending: Vec::new(),
            sent: 0,
            recv_armed: false,
            send_armed: false,
            dead: false,
        }
    }

    /// Takes in received bytes: each complete request is counted and
    /// answered once its payload has come.
    /// The peer's lengths are only counted down: each subtraction and
    /// index here is bounded by the `min` before it (`have` < HEADER,
    /// `n` ≤ `skip`).
    fn feed(&mut self, mut data: &[u8], on_request: &mut impl FnMut(u64)) {
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
                let len = u32::from_le_bytes(self.header[LEN].try_into().unwrap_or_default());
                let tid = u64::from_le_bytes(self.header[TID].try_into().unwrap_or_default());
                on_request(u64::from(len));
                self.skip = u64::from(len);
                self.tid = Some(tid);
            }
            if self.skip == 0 {
                if let Some(tid) = self.tid.take() {
                    self.out.extend_from_slice(&0u32.to_le_bytes());
                    self.out.extend_from_slice(&tid.to_le_bytes());
                }
            }
        }
    }

    fn idle(&self) -> bool {
        !self.recv_armed && !self.send_armed
    }
}

/// Ring and pool sizes: 16 MiB of buffers, large enough for a stream's
/// receives, shared by small ones (measured against 1024 buffers of 16 KiB
/// and of 64 KiB without incremental consumption: BENCHMARKS.md).
const ENTRIES: u32 = 4096;
const POOL_BUFFERS: u16 = 256;
const BUFFER_SIZE: u32 = 64 << 10;
/// Replies a connection may have waiting behind its send in flight: what a
/// peer that does not read can make us hold.
const MAX_UNSENT: usize = 1 << 20;

/// Serves the raw pattern on `listener` from this thread, forever (or
/// until the ring fails), calling `on_connection` for each accepted
/// connection and `on_request` with each request's payload length.
pub fn serve_raw(
    listener: TcpListener,
    mut on_connection: impl FnMut(),
    mut on_request: impl FnMut(u64),
) -> io::Result<()> {
    // Made before the ring, so dropped after it: the kernel has let go of
    // its memory by then.
    let mut pool = Pool::new(POOL_BUFFERS, BUFFER_SIZE)?;
    let mut ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(ENTRIES.saturating_mul(4))
        .build(ENTRIES)?;
    let (addr, count) = pool.ring();
    // Incremental consumption (IOU_PBUF_RING_INC, Linux 6.12): a receive
    // takes only the bytes it needs from a buffer, so small receives of
    // many connections share buffers (few lines touched) while a stream
    // still gets large ones. A completion without BUF_MORE retires its
    // buffer.
    // SAFETY: the descriptor ring is `count` entries of page-aligned memory
    // owned by `pool`, which outlives `ring` (dropped after it).
    #[allow(unsafe_code)]
    unsafe {
        ring.submitter().register_buf_ring_with_flags(
            addr,
            count,
            GROUP,
            types::IOU_PBUF_RING_INC as u16,
        )?
    };
    // Where each buffer's next bytes start.
    let mut offsets = vec![0u32; usize::from(count)];
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut queue: Vec<squeue::Entry> = Vec::new();
    let mut done: Vec<(u64, i32, u32)> = Vec::new();
    let mut dirty: Vec<usize> = Vec::new();
    let lfd = types::Fd(listener.as_raw_fd());
    queue.push(
        opcode::AcceptMulti::new(lfd)
            .build()
            .user_data(user_data(ACCEPT, 0)),
    );
    loop {
        for e in queue.drain(..) {
            loop {
                // SAFETY: every entry names a live socket (the listener, or
                // a connection kept in `conns` until its last completion)
                // and, for a send, `sending` of that connection, which is
                // not touched until the send completes.
                #[allow(unsafe_code)]
                let pushed = unsafe { ring.submission().push(&e) }.is_ok();
                if pushed {
                    break;
                }
                ring.submit()?;
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        done.extend(
            ring.completion()
                .map(|c: cqueue::Entry| (c.user_data(), c.result(), c.flags())),
        );
        for (ud, res, flags) in done.drain(..) {
            let (kind, slot) = (ud >> 32, (ud & 0xffff_ffff) as usize);
            match kind {
                ACCEPT => {
                    if res >= 0 {
                        // SAFETY: the kernel just made this descriptor for us
                        // and nothing else holds it.
                        #[allow(unsafe_code)]
                        let fd = unsafe { OwnedFd::from_raw_fd(res) };
                        let sock = std::net::TcpStream::from(fd);
                        let _ = sock.set_nodelay(true);
                        on_connection();
                        let mut c = Conn::new(sock);
                        c.recv_armed = true;
                        let fd = types::Fd(c.sock.as_raw_fd());
                        let at = match free.pop() {
                            Some(at) => {
                                conns[at] = Some(c);
                                at
                            }
                            None => {
                                conns.push(Some(c));
                                conns.len() - 1
                            }
                        };
                        queue.push(recv(fd, at));
                    }
                    if !cqueue::more(flags) {
                        queue.push(opcode::AcceptMulti::new(lfd).build().user_data(ud));
                    }
                }
                RECV => {
                    let Some(Some(c)) = conns.get_mut(slot) else {
                        continue;
                    };
                    if res > 0 {
                        if let Some(bid) = cqueue::buffer_select(flags) {
                            let len = res as u32;
                            if let Some(off) = offsets.get_mut(usize::from(bid)) {
                                if let Some(bytes) = pool.bytes(bid, *off, len) {
                                    c.feed(bytes, &mut on_request);
                                }
                                *off = off.saturating_add(len);
                                if !cqueue::buffer_more(flags) {
                                    *off = 0;
                                    pool.taken(bid);
                                    pool.give_back(bid);
                                }
                            }
                        }
                        if c.out.len() > MAX_UNSENT {
                            // A peer that sends without reading its replies
                            // is cut off, not buffered for.
                            c.dead = true;
                            let _ = c.sock.shutdown(std::net::Shutdown::Both);
                        } else if !c.out.is_empty() {
                            dirty.push(slot);
                        }
                    } else if res != -libc::ENOBUFS {
                        // The peer closed (0) or the socket failed.
                        c.dead = true;
                    }
                    if !cqueue::more(flags) {
                        c.recv_armed = false;
                        if c.dead {
                            let _ = c.sock.shutdown(std::net::Shutdown::Both);
                        } else {
                            // Out of pool buffers: the receive goes again
                            // once this turn gave its buffers back.
                            c.recv_armed = true;
                            queue.push(recv(types::Fd(c.sock.as_raw_fd()), slot));
                        }
                    }
                }
                SEND => {
                    let Some(Some(c)) = conns.get_mut(slot) else {
                        continue;
                    };
                    c.send_armed = false;
                    match usize::try_from(res) {
                        Ok(n) if n > 0 => {
                            c.sent = c.sent.saturating_add(n).min(c.sending.len());
                            dirty.push(slot);
                        }
                        _ => {
                            c.dead = true;
                            let _ = c.sock.shutdown(std::net::Shutdown::Both);
                        }
                    }
                }
                _ => {}
            }
            if let Some(Some(c)) = conns.get(slot) {
                if kind != ACCEPT && c.dead && c.idle() {
                    conns[slot] = None;
                    free.push(slot);
                }
            }
        }
        // One send per connection that has replies and none in flight.
        for slot in dirty.drain(..) {
            let Some(Some(c)) = conns.get_mut(slot) else {
                continue;
            };
            if c.send_armed || c.dead {
                continue;
            }
            if c.sent == c.sending.len() {
                if c.out.is_empty() {
                    continue;
                }
                c.sending.clear();
                c.sent = 0;
                std::mem::swap(&mut c.sending, &mut c.out);
            }
            let rest = &c.sending[c.sent..];
            let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
            let fd = types::Fd(c.sock.as_raw_fd());
            queue.push(
                opcode::Send::new(fd, rest.as_ptr(), len)
                    .build()
                    .user_data(user_data(SEND, slot)),
            );
            c.send_armed = true;
        }
    }
}

/// A multishot receive into the pool for the connection in `slot`.
fn recv(fd: types::Fd, slot: usize) -> squeue::Entry {
    opcode::RecvMulti::new(fd, GROUP)
        .build()
        .user_data(user_data(RECV, slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Conn {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        Conn::new(std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap())
    }

    fn request(len: u32, tid: u64) -> Vec<u8> {
        let mut v = len.to_le_bytes().to_vec();
        v.extend_from_slice(&tid.to_le_bytes());
        v.extend(std::iter::repeat_n(7u8, len as usize));
        v
    }

    #[test]
    fn requests_split_anywhere_are_answered_once_whole() {
        let mut stream = request(5, 1);
        stream.extend(request(0, 2));
        stream.extend(request(3000, 3));
        for cut in [1, 5, 12, 13, 17, 29, 1000] {
            let mut c = conn();
            let mut lens = Vec::new();
            for part in stream.chunks(cut) {
                c.feed(part, &mut |l| lens.push(l));
            }
            assert_eq!(lens, [5, 0, 3000], "cut every {cut}");
            let tids: Vec<u64> = c
                .out
                .chunks(HEADER)
                .map(|h| u64::from_le_bytes(h[TID].try_into().unwrap()))
                .collect();
            assert_eq!(tids, [1, 2, 3], "cut every {cut}");
        }
        // Half a payload: counted, not answered yet.
        let mut c = conn();
        c.feed(&request(100, 9)[..50], &mut |_| {});
        assert!(c.out.is_empty());
        assert_eq!(c.skip, 62);
    }

    #[test]
    fn a_ring_thread_answers_the_raw_pattern() {
        use std::io::{Read, Write};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || serve_raw(l, || {}, move |len| tx.send(len).unwrap()));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        for tid in 0..50u64 {
            let mut batch = Vec::new();
            for k in 0..4 {
                batch.extend(request(4096 + k, tid * 4 + u64::from(k)));
            }
            s.write_all(&batch).unwrap();
            let mut replies = [0u8; 4 * HEADER];
            s.read_exact(&mut replies).unwrap();
            for (k, h) in replies.chunks(HEADER).enumerate() {
                assert_eq!(
                    u64::from_le_bytes(h[TID].try_into().unwrap()),
                    tid * 4 + k as u64
                );
            }
        }
        let lens: Vec<u64> = rx.try_iter().collect();
        assert_eq!(lens.len(), 200);
        assert!(lens.iter().all(|&l| (4096..4100).contains(&l)));
    }

    /// A peer that sends requests and never reads the replies is cut off
    /// once more than MAX_UNSENT of them wait: its writes then fail.
    #[test]
    fn a_peer_that_never_reads_its_replies_is_cut_off() {
        use std::io::Write;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || serve_raw(l, || {}, |_| {}));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // 64 MiB of empty requests: 64 MiB of replies, more than the
        // kernel's buffers and MAX_UNSENT together.
        let batch: Vec<u8> = (0..1u64 << 16).flat_map(|tid| request(0, tid)).collect();
        let cut = (0..85).any(|_| s.write_all(&batch).is_err());
        assert!(cut, "64 MiB of replies never read, and still connected");
    }
}
