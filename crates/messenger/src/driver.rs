//! One connection's task: it owns the socket halves and runs the
//! connection's `Conn` (behind its mutex): reads into the frame decoder's
//! buffer, writes the queued frames with vectored writes, connects when
//! asked, applies the registry's decisions on idents, dispatches, and fires
//! timers. Locks are never held across an await.

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, BytesMut};
use msgr_frames::WireQueue;
use msgr_protocol::registry::{self, Outcome};
use msgr_protocol::{Event, IdentRequest, LinkId};
use msgr_transport::{Stream, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connection::{
    running_task, wall_clock, BoxReader, BoxWriter, Connection, Handoff, IncomingMessage,
};
use crate::messenger::Inner;
use crate::throttle::Permit;

/// Smallest read buffer to ask the socket to fill.
const MIN_READ: usize = 64 * 1024;
/// Queued messages are framed (and encrypted) only while the driver holds
/// fewer unwritten bytes than this (Config::output_window): a frame is
/// built just before the socket takes it, while its bytes are in cache,
/// instead of a whole window of 1 MiB frames being encrypted ahead of the
/// socket and read back from memory. Large enough for a vectored write of
/// many small frames.
pub(crate) const OUTPUT_WINDOW: usize = 512 * 1024;
/// Slices per vectored write.
const MAX_IOV: usize = 256;

type Connecting<S> = Pin<Box<dyn Future<Output = std::io::Result<S>> + Send>>;

struct Socket {
    link: LinkId,
    reader: BoxReader,
    writer: BoxWriter,
}

pub(crate) async fn run<T: Transport>(
    inner: Arc<Inner<T>>,
    conn: Connection,
    first: Option<Handoff>,
) {
    let mut socket: Option<Socket> = None;
    let mut out = WireQueue::new();
    let mut rbuf = BytesMut::new();
    let mut connecting: Option<Connecting<T::Stream>> = None;
    let mut stop = inner.shutdown.subscribe();
    let mut events: Vec<Event> = Vec::new();
    // One timer for the task's life, moved when the deadline changes.
    let far = || tokio::time::Instant::now() + std::time::Duration::from_secs(86400);
    let timer = tokio::time::sleep_until(far());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    let mut policy_throttle: Option<Option<Arc<crate::throttle::Throttle>>> = None;
    // The time of the current step: dispatches and the sends they make use
    // it instead of reading the clock per message. After a wait on a full
    // throttle it is late by that wait, which can only bring earlier the
    // deadlines a send may set (a fault's backoff, a standby reconnect).
    let mut now = crate::now();
    if let Some(h) = first {
        install(&mut socket, &mut out, h);
    }
    loop {
        // A socket an acceptor moved into this connection.
        let handoff = conn
            .shared
            .handoff
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = handoff {
            install(&mut socket, &mut out, h);
        }
        // A test released an interceptor's hold: carried out here, where
        // the input buffer is the connection's.
        #[cfg(feature = "interceptor")]
        {
            let mut c = conn.shared.lock();
            if c.take_unblock_request() {
                c.unblock(crate::now());
            }
        }

        // Events, in order, until handling them (a dispatcher's send, say)
        // makes no more. Sends from inside this task's own dispatcher calls
        // skip the wake-up: this loop and the output check below see them.
        loop {
            {
                let mut c = conn.shared.lock();
                events.extend(std::iter::from_fn(|| c.poll_event()));
            }
            if events.is_empty() {
                break;
            }
            for ev in events.drain(..) {
                match ev {
                    Event::Connect { addr } => {
                        let t = inner.transport.clone();
                        let timeout = inner.config.timeouts.connect;
                        connecting = Some(Box::pin(async move {
                            match tokio::time::timeout(timeout, t.connect(addr)).await {
                                Ok(r) => r,
                                Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
                            }
                        }));
                    }
                    Event::CloseSocket { link } => {
                        if socket.as_ref().is_some_and(|s| s.link == link) {
                            socket = None;
                            out.clear();
                            rbuf.clear();
                        }
                    }
                    Event::ShutdownSocket { link, mut last } => {
                        // An interceptor's STALL or write FAULT: what was
                        // written goes out, then the socket closes.
                        if let Some(s) = socket.take_if(|s| s.link == link) {
                            out.append(&mut last);
                            {
                                let mut c = conn.shared.lock();
                                if c.link_id() == Some(link) {
                                    if let Some(q) = c.output() {
                                        out.append(q);
                                    }
                                }
                            }
                            flush_and_close(s, &mut out).await;
                            rbuf.clear();
                        }
                    }
                    Event::IdentReceived(req) => {
                        if let Some(existing) = decide(&inner, &conn, req) {
                            // Our socket now belongs to the existing connection.
                            if let Some(s) = socket.take() {
                                let link = existing.shared.lock().link_id().unwrap_or(s.link);
                                *existing
                                    .shared
                                    .handoff
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner()) = Some(Handoff {
                                    link,
                                    reader: s.reader,
                                    writer: s.writer,
                                    pending: std::mem::take(&mut out),
                                });
                            }
                            existing.shared.wake.notify_one();
                        }
                    }
                    Event::LearnedAddr(a) => inner.learned(a),
                    Event::Fault(e) => {
                        {
                            let _task = running_task(conn.shared.id, now);
                            inner.dispatcher.ms_handle_fault(&conn, &e);
                        }
                        *conn
                            .shared
                            .last_fault
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(e)
                    }
                    Event::Connected => {
                        store_features(&conn);
                        {
                            let _task = running_task(conn.shared.id, now);
                            inner.dispatcher.ms_handle_connect(&conn)
                        }
                    }
                    Event::Accepted => {
                        store_features(&conn);
                        {
                            let _task = running_task(conn.shared.id, now);
                            inner.dispatcher.ms_handle_accept(&conn)
                        }
                    }
                    Event::Message(msg) => {
                        let len = msg.payload_len() as u64;
                        let dispatch = inner.dispatch_throttle.take(len).await;
                        // The peer's type, and so its policy, is known
                        // by the first message and never changes.
                        let throttle = policy_throttle
                            .get_or_insert_with(|| inner.policy_throttle(conn.peer_type()));
                        let policy = match throttle {
                            Some(t) => t.take(len).await,
                            None => Permit::default(),
                        };
                        let incoming = IncomingMessage {
                            msg,
                            _permits: (dispatch, policy),
                        };
                        {
                            let _task = running_task(conn.shared.id, now);
                            inner.dispatcher.ms_dispatch(&conn, incoming)
                        };
                    }
                    Event::Reset => {
                        let _task = running_task(conn.shared.id, now);
                        inner.dispatcher.ms_handle_reset(&conn)
                    }
                    Event::RemoteReset => {
                        let _task = running_task(conn.shared.id, now);
                        inner.dispatcher.ms_handle_remote_reset(&conn)
                    }
                    Event::Refused => {
                        let _task = running_task(conn.shared.id, now);
                        inner.dispatcher.ms_handle_refused(&conn)
                    }
                    Event::KeepaliveAck(_) => conn.shared.keepalive_acked.notify_waiters(),
                    Event::Closed => {
                        inner.forget(&conn);
                        conn.shared.drained.notify_waiters();
                        // Keepalive waiters learn that no ack will come.
                        conn.shared.keepalive_acked.notify_waiters();
                        return;
                    }
                }
            }
        }

        // Take what the connection has written, and its input buffer.
        let mut raised = false;
        let mut read_limit = usize::MAX;
        let deadline = {
            let mut c = conn.shared.lock();
            if let Some(s) = socket.as_ref() {
                if c.link_id() == Some(s.link) {
                    raised = c.fill_output(&mut out, now);
                    let want = c.want();
                    if let Some(input) = c.input() {
                        rbuf = std::mem::take(input);
                    }
                    read_limit = make_room(&mut rbuf, want);
                } else {
                    // The connection moved on to another socket.
                    socket = None;
                    out.clear();
                }
            }
            if conn
                .shared
                .senders_waiting
                .load(std::sync::atomic::Ordering::Acquire)
                > 0
            {
                let (_, queued) = c.session().queued();
                if queued < conn.shared.max_queued_bytes {
                    conn.shared.drained.notify_waiters();
                }
            }
            (c.poll_timeout(), c.link_held())
        };
        let (deadline, held) = deadline;
        if raised {
            // Framing failed (a fault): its events come before any wait.
            continue;
        }
        // Move the timer only when the deadline gets earlier: one that
        // fires before a later deadline finds nothing due and re-arms.
        let earlier = match (deadline, armed) {
            (Some(d), Some(a)) => d < a,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if earlier {
            armed = deadline;
            timer.as_mut().reset(deadline.map_or_else(far, Into::into));
        }

        out.seal();
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let n_iov = out.slices(&mut iov);
        let (reader, writer) = match socket.as_mut() {
            Some(s) => (Some(&mut s.reader), Some(&mut s.writer)),
            None => (None, None),
        };
        // A socket an interceptor holds is not read (its handshake is frozen).
        let has_reader = reader.is_some() && !held;
        let has_output = writer.is_some() && n_iov > 0;
        let delay = inner.injector.delay_now();

        enum Step<S> {
            Read(std::io::Result<usize>),
            Wrote(std::io::Result<usize>),
            Connected(std::io::Result<S>),
            Woken,
            Timer,
            Stop,
        }
        // Biased, in a fixed order, so a run on a paused single-threaded
        // runtime repeats exactly (tokio's default picks the first branch
        // at random). Writes come before reads: output is bounded by what
        // the user queued, and a socket with room takes it at once.
        let step = tokio::select! {
            biased;
            _ = stop.changed() => Step::Stop,
            w = async {
                if let Some(d) = delay {
                    tokio::time::sleep(d).await;
                }
                writer.expect("guarded").write_vectored(&iov[..n_iov]).await
            }, if has_output => Step::Wrote(w),
            r = async {
                reader.expect("guarded").read_buf(&mut (&mut rbuf).limit(read_limit)).await
            }, if has_reader => Step::Read(r),
            c = async { connecting.as_mut().expect("guarded").await }, if connecting.is_some() => Step::Connected(c),
            _ = &mut timer, if armed.is_some() => Step::Timer,
            _ = conn.shared.wake.notified() => Step::Woken,
        };
        now = crate::now();
        match step {
            Step::Read(r) => {
                let link = socket.as_ref().map(|s| s.link).unwrap_or_default();
                let failed = match r {
                    Ok(0) => Some(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed by peer",
                    )),
                    Ok(_) if inner.injector.fail_now() => Some(injected()),
                    Ok(_) => None,
                    Err(e) => Some(e),
                };
                let mut c = conn.shared.lock();
                match failed {
                    Some(e) => c.socket_closed(link, &e, now),
                    None if c.link_id() == Some(link) => {
                        if let Some(input) = c.input() {
                            *input = std::mem::take(&mut rbuf);
                        }
                        c.handle_input(now);
                        c.flush_acks(now);
                    }
                    None => rbuf.clear(),
                }
            }
            Step::Wrote(r) => {
                let link = socket.as_ref().map(|s| s.link).unwrap_or_default();
                match r {
                    Ok(_) if inner.injector.fail_now() => {
                        conn.shared.lock().socket_closed(link, &injected(), now)
                    }
                    Ok(n) => out.advance(n),
                    Err(e) => conn.shared.lock().socket_closed(link, &e, now),
                }
            }
            Step::Connected(r) => {
                connecting = None;
                let mut c = conn.shared.lock();
                match r {
                    Ok(stream) => {
                        c.socket_connected(stream.local_addr(), now);
                        if let Some(link) = c.link_id() {
                            let (r, w) = stream.into_split();
                            socket = Some(Socket {
                                link,
                                reader: Box::new(r),
                                writer: Box::new(w),
                            });
                            out.clear();
                            rbuf.clear();
                        }
                    }
                    Err(e) => c.socket_failed(&e, now),
                }
            }
            Step::Woken => {}
            Step::Timer => {
                armed = None;
                conn.shared.lock().handle_timeout(now)
            }
            Step::Stop => conn.shared.lock().mark_down(),
        }
        // Give the input buffer back if the read did not take it.
        if !rbuf.is_empty() {
            let mut c = conn.shared.lock();
            if socket.as_ref().is_some_and(|s| c.link_id() == Some(s.link)) {
                if let Some(input) = c.input() {
                    if input.is_empty() {
                        *input = std::mem::take(&mut rbuf);
                    }
                }
            }
            rbuf.clear();
        }
    }
}

/// What an injected socket failure looks like to the connection.
fn injected() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "injected socket failure",
    )
}

/// Writes what `out` holds to `socket` (as far as it takes it), then shuts
/// the socket down; `out` is left empty.
async fn flush_and_close(mut socket: Socket, out: &mut WireQueue) {
    out.seal();
    while !out.is_empty() {
        let wrote = {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let n = out.slices(&mut iov);
            socket.writer.write_vectored(&iov[..n]).await
        };
        match wrote {
            Ok(0) | Err(_) => break,
            Ok(w) => out.advance(w),
        }
    }
    let _ = socket.writer.shutdown().await;
    out.clear();
}

fn store_features(conn: &Connection) {
    let f = conn.shared.lock().peer().features;
    conn.shared
        .features
        .store(f, std::sync::atomic::Ordering::Relaxed);
}

fn install(socket: &mut Option<Socket>, out: &mut WireQueue, h: Handoff) {
    *socket = Some(Socket {
        link: h.link,
        reader: h.reader,
        writer: h.writer,
    });
    let mut pending = h.pending;
    out.clear();
    out.append(&mut pending);
}

/// The registry's decision on an accepted ident, carried out on both
/// connections (lock order: registry, then the accepting connection, then
/// the existing one). Returns the existing connection when our socket moved
/// into it.
fn decide<T: Transport>(
    inner: &Arc<Inner<T>>,
    conn: &Connection,
    req: IdentRequest,
) -> Option<Connection> {
    let now = crate::now();
    let stamp = wall_clock();
    let mut reg = inner.registry();
    let mut a = conn.shared.lock();
    let key = registry::lookup_key(&a, &req);
    let existing = key.and_then(|k| reg.get(&k).cloned()).filter(|e| e != conn);
    match existing {
        Some(ex) => {
            let mut e = ex.shared.lock();
            let decision = registry::decide(&a, Some(&e), &req);
            let outcome = registry::apply(decision, &mut a, Some(&mut e), stamp, now);
            drop(e);
            ex.shared.wake.notify_one();
            match outcome {
                Outcome::RegisterAccepting => {
                    if let Some(k) = key {
                        reg.insert(k, conn.clone());
                    }
                    None
                }
                Outcome::MovedToExisting => {
                    #[cfg(feature = "interceptor")]
                    if let Some(i) = inner.config.interceptor.as_ref() {
                        i.replaced(conn.shared.id);
                    }
                    Some(ex)
                }
                Outcome::Nothing => None,
            }
        }
        None => {
            let decision = registry::decide(&a, None, &req);
            if registry::apply(decision, &mut a, None, stamp, now) == Outcome::RegisterAccepting {
                if let Some(k) = key {
                    reg.insert(k, conn.clone());
                }
            }
            None
        }
    }
}

/// Makes room in the read buffer for the `want` bytes that complete the
/// step at hand (a banner, a frame's head, the rest of a frame).
///
/// - Small steps get room for a read of at least [`MIN_READ`] through
///   `BytesMut::reserve`, whose growth (reclaiming space once the frames
///   taken from it are gone, doubling otherwise) lets small frames be read
///   many at a time.
/// - The rest of a large frame is not left to `reserve`: growing the
///   allocation with `realloc` copies all of it, the frames already taken
///   included. Its unread bytes (what the read of the frame's head brought)
///   move to an allocation of the frame's size instead, unless the space is
///   there or can be reclaimed.
/// - A large frame that lacks only a few bytes is completed where it is,
///   rather than moved to make room for a full read.
///
/// With 1 MiB frames this took the receiver's copying from about 25 µs per
/// message (6 % of its CPU) to about 3.
///
/// Returns how much the next read may take: up to the end of a large frame
/// and no further (bytes of the next frame read along would have to move
/// when its own buffer is made); small steps, as much as there is room for.
fn make_room(rbuf: &mut BytesMut, want: usize) -> usize {
    let large = want > MIN_READ;
    let read_limit = if large { want } else { usize::MAX };
    let spare = rbuf.capacity() - rbuf.len();
    if spare >= want && rbuf.len() >= MIN_READ {
        return read_limit;
    }
    if !large {
        rbuf.reserve(MIN_READ);
    } else if !rbuf.try_reclaim(want) {
        let mut fresh = BytesMut::with_capacity(rbuf.len() + want);
        fresh.extend_from_slice(rbuf);
        *rbuf = fresh;
    }
    read_limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_room_keeps_unread_bytes_and_reuses_a_free_allocation() {
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![7u8; (1 << 20) - 3]);
        rbuf.extend_from_slice(b"abc");
        // A frame is taken while it is still in use: the unread bytes move.
        let frame = rbuf.split_to((1 << 20) - 3);
        assert_eq!(make_room(&mut rbuf, 1 << 20), 1 << 20);
        assert_eq!(&rbuf[..], b"abc");
        assert!(rbuf.capacity() >= 3 + (1 << 20));
        drop(frame);

        // Once the frame is gone its allocation is reused, not copied.
        let start = rbuf.as_ptr() as usize;
        let end = start + rbuf.capacity();
        let frame = rbuf.split_to(3);
        drop(frame);
        make_room(&mut rbuf, 1 << 19);
        assert!((start..end).contains(&(rbuf.as_ptr() as usize)));
        assert!(rbuf.capacity() >= 1 << 19);

        // A frame that lacks a few bytes stays where it is when its buffer
        // has them, however little more room there is.
        let mut rbuf = BytesMut::with_capacity(1 << 20);
        rbuf.extend_from_slice(&vec![1u8; (1 << 20) - 100]);
        let at = rbuf.as_ptr();
        assert_eq!(make_room(&mut rbuf, 100), usize::MAX);
        assert_eq!(rbuf.as_ptr(), at);
    }
}
