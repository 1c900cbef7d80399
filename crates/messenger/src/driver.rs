//! One connection's task: it owns the socket halves and runs the
//! connection's `Conn` (behind its mutex): reads into the frame decoder's
//! buffer, writes the queued frames with vectored writes, connects when
//! asked, applies the registry's decisions on idents, dispatches, and fires
//! timers. Locks are never held across an await.

use std::collections::VecDeque;
use std::future::Future;
use std::io::IoSlice;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::BufMut;
use msgr_frames::WireQueue;
use msgr_protocol::registry::{self, Outcome};
use msgr_protocol::{Event, IdentRequest};
use msgr_transport::{Stream, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::budget::Budget;
use crate::connection::{
    running_task, wall_clock, Connection, Handoff, IncomingMessage, SocketSlot,
};
use crate::messenger::Inner;

mod io;

use io::{flush_and_close, Socket, SocketIo, MAX_IOV};

/// Queued messages are framed (and encrypted) only while the driver holds
/// fewer unwritten bytes than this (Config::output_window): a frame is
/// built just before the socket takes it, while its bytes are in cache,
/// instead of a whole window of 1 MiB frames being encrypted ahead of the
/// socket and read back from memory. Large enough for a vectored write of
/// many small frames.
pub(crate) const OUTPUT_WINDOW: usize = 512 * 1024;

type Connecting<S> = Pin<Box<dyn Future<Output = std::io::Result<S>> + Send>>;

pub(crate) async fn run<T: Transport>(
    inner: Arc<Inner<T>>,
    conn: Connection,
    first: Option<Handoff>,
) {
    let mut stop = inner.shutdown.subscribe();
    let mut d = Driver::new(inner, conn);
    if let Some(h) = first {
        d.install(h);
    }
    // The steps are plain methods; the waits are here, in one body, so no
    // step's future is built and moved per turn of the loop.
    loop {
        d.take_handoff();
        #[cfg(feature = "interceptor")]
        d.unblock_if_asked();
        let flow = d.handle_events();
        // Sockets to shut down after what was written to them (a refusal
        // the peer should read; an interceptor's STALL or write FAULT).
        for (socket, mut out) in d.closing.drain(..) {
            flush_and_close(socket, &mut out).await;
        }
        if flow.is_break() {
            return;
        }
        let Some(io) = d.prepare() else {
            // Framing failed (a fault): its events come before any wait.
            continue;
        };
        d.io.out.seal();
        let mut iov = [IoSlice::new(&[]); MAX_IOV];
        let n_iov = d.io.out.slices(&mut iov);
        let (reader, writer) = match d.io.socket.as_mut() {
            Some(s) => (Some(&mut s.reader), Some(&mut s.writer)),
            None => (None, None),
        };
        let has_reader = reader.is_some() && io.read;
        let has_output = writer.is_some() && n_iov > 0;
        let delay = d.inner.injector.delay_now();
        let budget = d.budget.wait_mut();
        let waiting = budget.is_some();
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
                let slices = iov.get(..n_iov).unwrap_or_default();
                writer.expect("guarded").write_vectored(slices).await
            }, if has_output => Step::Wrote(w),
            r = async {
                reader.expect("guarded").read_buf(&mut (&mut d.io.rbuf).limit(io.read_limit)).await
            }, if has_reader => Step::Read(r),
            c = async { d.connecting.as_mut().expect("guarded").await }, if d.connecting.is_some() => Step::Connected(c),
            (b, p) = async { budget.expect("guarded").await }, if waiting => Step::Budget(b, p),
            _ = d.timer.as_mut(), if d.armed.is_some() => Step::Timer,
            _ = d.conn.shared.wake.notified() => Step::Woken,
        };
        d.now = crate::now();
        d.on_step(step);
        if !d.io.rbuf.is_empty() {
            let mut c = d.conn.shared.lock();
            d.io.give_back_input(&mut c);
        }
    }
}

/// One connection's task: the socket, the bytes in flight each way, the
/// events not yet handled and the receive budget.
struct Driver<T: Transport> {
    inner: Arc<Inner<T>>,
    conn: Connection,
    io: SocketIo,
    connecting: Option<Connecting<T::Stream>>,
    /// Events taken from the connection, not yet handled: a message waiting
    /// for receive budget holds up the events after it.
    pending: VecDeque<Event>,
    budget: Budget,
    /// We stopped reading (receive budget, the queue limit): the frame
    /// being read gets its full time again when we resume.
    paused: bool,
    /// Sockets to flush and shut down (Event::ShutdownSocket).
    closing: Vec<(Socket, WireQueue)>,
    /// One timer for the task's life, moved when the deadline changes.
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Instant>,
    /// The time of the current step: dispatches and the sends they make
    /// use it instead of reading the clock per message.
    now: Instant,
}

/// How the next wait may use the socket.
struct Io {
    read: bool,
    read_limit: usize,
}

enum Step<S> {
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
    Connected(std::io::Result<S>),
    Budget(u64, crate::budget::Permits),
    Woken,
    Timer,
    Stop,
}

fn far() -> tokio::time::Instant {
    crate::after(std::time::Duration::from_secs(86400))
}

impl<T: Transport> Driver<T> {
    fn new(inner: Arc<Inner<T>>, conn: Connection) -> Driver<T> {
        let budget = Budget::new(inner.dispatch_throttle.clone());
        Driver {
            inner,
            conn,
            io: SocketIo::new(),
            connecting: None,
            pending: VecDeque::new(),
            budget,
            paused: false,
            closing: Vec::new(),
            timer: Box::pin(tokio::time::sleep_until(far())),
            armed: None,
            now: crate::now(),
        }
    }

    fn install(&mut self, h: Handoff) {
        self.io.install(h);
    }

    /// A socket an acceptor moved into this connection.
    fn take_handoff(&mut self) {
        let handoff = self
            .conn
            .shared
            .handoff
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = handoff {
            self.install(h);
        }
    }

    /// A test released an interceptor's hold: carried out here, where the
    /// input buffer is the connection's.
    #[cfg(feature = "interceptor")]
    fn unblock_if_asked(&mut self) {
        let mut c = self.conn.shared.lock();
        if c.take_unblock_request() {
            c.unblock(crate::now());
        }
    }

    /// Events, in order, until handling them (a dispatcher's send, say)
    /// makes no more, or a message waits for receive budget. Sends from
    /// inside this task's own dispatcher calls skip the wake-up: this loop
    /// and `prepare` see them. Breaks when the connection closed.
    fn handle_events(&mut self) -> ControlFlow<()> {
        loop {
            {
                let mut c = self.conn.shared.lock();
                self.pending.extend(std::iter::from_fn(|| c.poll_event()));
            }
            if self.pending.is_empty() {
                return ControlFlow::Continue(());
            }
            while let Some(ev) = self.pending.pop_front() {
                match ev {
                    // Dispatched here, with its receive budget, or put back
                    // to wait for it (the message moves once, into
                    // IncomingMessage).
                    Event::Message(msg) => match self.budget.take(msg.payload_len() as u64) {
                        Some(permits) => self.dispatch(IncomingMessage {
                            msg,
                            _permits: permits,
                        }),
                        None => {
                            self.pending.push_front(Event::Message(msg));
                            return ControlFlow::Continue(());
                        }
                    },
                    ev => self.on_event(ev)?,
                }
            }
        }
    }

    fn dispatch(&self, incoming: IncomingMessage) {
        let _task = running_task(self.conn.shared.id, self.now);
        self.inner.dispatcher.ms_dispatch(&self.conn, incoming);
    }

    fn on_event(&mut self, ev: Event) -> ControlFlow<()> {
        let (inner, conn, now) = (&self.inner, &self.conn, self.now);
        let user = || running_task(conn.shared.id, now);
        match ev {
            Event::Connect { addr } => {
                let t = inner.transport.clone();
                let timeout = inner.config.timeouts.connect;
                self.connecting = Some(Box::pin(async move {
                    match tokio::time::timeout(timeout, t.connect(addr)).await {
                        Ok(r) => r,
                        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
                    }
                }));
            }
            Event::CloseSocket { link } => {
                if self.io.link() == Some(link) {
                    self.io.close();
                }
            }
            Event::ShutdownSocket { link, mut last } => {
                // What was written goes out, then the socket closes (a
                // refusal the peer should read; an interceptor's STALL or
                // write FAULT): flushed by `run` before anything waits.
                if let Some(s) = self.io.socket.take_if(|s| s.link == link) {
                    let mut out = std::mem::take(&mut self.io.out);
                    out.append(&mut last);
                    {
                        let mut c = conn.shared.lock();
                        if c.link_id() == Some(link) {
                            if let Some(q) = c.output() {
                                out.append(q);
                            }
                        }
                    }
                    self.closing.push((s, out));
                    self.io.close();
                }
            }
            Event::IdentReceived(req) => {
                if let Some(existing) = decide(inner, conn, req) {
                    // Our socket now belongs to the existing connection.
                    if let Some(s) = self.io.socket.take() {
                        let link = existing.shared.lock().link_id().unwrap_or(s.link);
                        *existing
                            .shared
                            .handoff
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(Handoff {
                            link,
                            reader: s.reader,
                            writer: s.writer,
                            pending: std::mem::take(&mut self.io.out),
                            slot: s.slot,
                        });
                    }
                    existing.shared.wake.notify_one();
                }
            }
            Event::LearnedAddr(a) => inner.learned(a),
            Event::Fault(e) => {
                {
                    let _task = user();
                    inner.dispatcher.ms_handle_fault(conn, &e);
                }
                *conn
                    .shared
                    .last_fault
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(e)
            }
            Event::Connected => {
                store_features(conn);
                let _task = user();
                inner.dispatcher.ms_handle_connect(conn)
            }
            Event::Accepted => {
                store_features(conn);
                let _task = user();
                inner.dispatcher.ms_handle_accept(conn)
            }
            Event::Message(_) => unreachable!("dispatched by handle_events"),
            Event::Reset => {
                let _task = user();
                inner.dispatcher.ms_handle_reset(conn)
            }
            Event::RemoteReset => {
                let _task = user();
                inner.dispatcher.ms_handle_remote_reset(conn)
            }
            Event::Refused => {
                let _task = user();
                inner.dispatcher.ms_handle_refused(conn)
            }
            Event::KeepaliveAck(_) => conn.shared.keepalive_acked.notify_waiters(),
            Event::Closed => {
                inner.forget(conn);
                conn.shared.drained.notify_waiters();
                // Keepalive waiters learn that no ack will come.
                conn.shared.keepalive_acked.notify_waiters();
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Takes what the connection has written, reserves receive budget for
    /// the message being read, decides whether to read (and only then
    /// makes room in the read buffer: a frame waiting for its budget gets
    /// no buffer), and arms the timer. `None`: framing raised a fault to
    /// handle first.
    fn prepare(&mut self) -> Option<Io> {
        let mut raised = false;
        let mut c = self.conn.shared.lock();
        match self.io.link() {
            Some(link) if c.link_id() == Some(link) => {
                raised = c.fill_output(&mut self.io.out, self.now);
            }
            // The connection moved on to another socket.
            Some(_) => self.io.close(),
            None => {}
        }
        let shared = &self.conn.shared;
        if shared
            .senders_waiting
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
            && !c.over_queue_limit()
        {
            shared.drained.notify_waiters();
        }
        // Budget for the message whose preamble is in, before its bytes.
        if self.pending.is_empty() {
            if let Some(len) = c.pending_message_len() {
                let peer = c.peer().entity_type;
                let inner = &self.inner;
                self.budget.policy(|| inner.policy_throttle(peer));
                self.budget.reserve(len as u64);
            }
        }
        // Reading stops, and only reading, while a message waits for
        // budget and while we hold too much for a peer that does not read.
        let blocked = !self.pending.is_empty() || self.budget.waiting() || c.over_queue_limit();
        // A socket an interceptor holds is not read (its handshake is
        // frozen).
        let can_read = self.io.socket.is_some() && !c.link_held();
        let read = can_read && !blocked;
        let read_limit = match read {
            true => self.io.take_input(&mut c),
            false => 0,
        };
        if can_read && blocked {
            self.paused = true;
        } else if read && std::mem::take(&mut self.paused) {
            c.resume_reading(self.now);
        }
        let deadline = c.poll_timeout();
        drop(c);
        if raised {
            return None;
        }
        self.arm(deadline);
        Some(Io { read, read_limit })
    }

    /// Moves the timer, only when the deadline gets earlier: one that fires
    /// before a later deadline finds nothing due and re-arms.
    fn arm(&mut self, deadline: Option<Instant>) {
        let earlier = match (deadline, self.armed) {
            (Some(d), Some(a)) => d < a,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if earlier {
            self.armed = deadline;
            self.timer
                .as_mut()
                .reset(deadline.map_or_else(far, Into::into));
        }
    }

    fn on_step(&mut self, step: Step<T::Stream>) {
        let now = self.now;
        let link = self.io.link().unwrap_or_default();
        match step {
            Step::Read(r) => {
                let failed = match r {
                    Ok(0) => Some(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed by peer",
                    )),
                    Ok(_) if self.inner.injector.fail_now() => Some(injected()),
                    Ok(_) => None,
                    Err(e) => Some(e),
                };
                let mut c = self.conn.shared.lock();
                match failed {
                    Some(e) => c.socket_closed(link, &e, now),
                    None if c.link_id() == Some(link) => {
                        self.io.hand_input(&mut c);
                        c.handle_input(now);
                        c.flush_acks(now);
                    }
                    None => self.io.rbuf.clear(),
                }
            }
            Step::Wrote(r) => match r {
                Ok(_) if self.inner.injector.fail_now() => {
                    self.conn
                        .shared
                        .lock()
                        .socket_closed(link, &injected(), now)
                }
                Ok(n) => self.io.out.advance(n),
                Err(e) => self.conn.shared.lock().socket_closed(link, &e, now),
            },
            Step::Connected(r) => {
                self.connecting = None;
                let mut c = self.conn.shared.lock();
                match r {
                    Ok(stream) => {
                        c.socket_connected(stream.local_addr(), now);
                        if let Some(link) = c.link_id() {
                            let (r, w) = stream.into_split();
                            self.io.use_socket(Socket {
                                link,
                                reader: Box::new(r),
                                writer: Box::new(w),
                                slot: SocketSlot::new(&self.inner.live_sockets),
                            });
                        }
                    }
                    Err(e) => c.socket_failed(&e, now),
                }
            }
            Step::Budget(bytes, permits) => self.budget.granted(bytes, permits),
            Step::Woken => {}
            Step::Timer => {
                self.armed = None;
                self.conn.shared.lock().handle_timeout(now)
            }
            Step::Stop => self.conn.shared.lock().mark_down(),
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

fn store_features(conn: &Connection) {
    let f = conn.shared.lock().peer().features;
    conn.shared
        .features
        .store(f, std::sync::atomic::Ordering::Relaxed);
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
