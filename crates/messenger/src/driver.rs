//! One connection's task, on the shard that owns it: it owns the
//! connection's `Conn` (no lock: nothing else touches it), its socket
//! halves and its buffers. It takes commands from the connection's handles
//! (sends, keepalives, mark_down, asks of other connections), reads into
//! the frame decoder's buffer, writes the queued frames with vectored
//! writes, connects when asked, dispatches, fires timers, and publishes
//! what handles may read. A connection moves to another shard by this
//! task ending and the same driver starting there (`run` hands it back
//! with the shard to go to).

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::BytesMut;
use msgr_frames::WireQueue;
use msgr_protocol::{Conn, ConnState, Event};
use msgr_transport::{Outgoing, ReadRoom, Receiver, Sender, Stream, Transport};

use crate::budget::Budget;
use crate::connection::{Command, Connection, IncomingMessage, Outbox, Published, SocketBytes};
use crate::inner::Inner;

pub(crate) mod ident;
mod io;

use io::{flush_and_close, SocketIo};
pub(crate) use io::{Socket, SocketSlot};

/// Queued messages are framed (and encrypted) only while the driver holds
/// fewer unwritten bytes than this (Config::output_window): a frame is
/// built just before the socket takes it, while its bytes are in cache,
/// instead of a whole window of 1 MiB frames being encrypted ahead of the
/// socket and read back from memory. Large enough for a vectored write of
/// many small frames.
pub(crate) const OUTPUT_WINDOW: usize = 512 * 1024;

/// Commands taken per turn before the socket gets its turn (a flood of
/// sends from other threads does not starve reading).
const COMMANDS_PER_TURN: usize = 1024;

type Connecting<S> = Pin<Box<dyn Future<Output = std::io::Result<S>> + Send>>;

/// Starts `d` on `shard`, and again wherever it moves.
///
/// The driver is boxed: the task's future then holds a pointer to it, not
/// the driver twice (once as the future's capture, once in `run`'s state).
pub(crate) fn start<T: Transport>(inner: &Arc<Inner<T>>, shard: usize, d: Box<Driver<T>>) {
    use tracing::Instrument;
    let again = inner.clone();
    let done = inner.task_guard();
    let span = d.span.clone();
    let task = async move {
        if let Some((d, to)) = d.run(shard).await {
            start(&again, to, d);
        }
        // The messenger let go of before the task counts done.
        drop(again);
        drop(done);
    };
    match span.is_disabled() {
        // A span is enabled or not for good when it is made: entering a
        // disabled one on every poll would only touch one more line of
        // the task's memory.
        true => inner.shards.spawn(shard, task),
        false => inner.shards.spawn(shard, task.instrument(span)),
    }
}

/// One connection's task: the connection, the socket, the bytes in flight
/// each way, the events not yet handled and the receive budget.
///
/// In declared order (`repr(C)`): the fields a turn of the loop reads per
/// message first, then the connection (its own per-message fields first),
/// then what serves moves and logs: a connection's hot state in adjacent
/// cache lines (BENCHMARKS.md, "What grows with connections").
#[repr(C)]
pub(crate) struct Driver<T: Transport> {
    inner: Arc<Inner<T>>,
    handle: Connection,
    /// The shard this task runs on.
    shard: usize,
    /// The time of the current step: dispatches and the sends they make
    /// use it instead of reading the clock per message.
    now: Instant,
    /// The deadline the timer is set for (none: it waits for
    /// [`timer_unset`], a day away).
    timer_deadline: Option<Instant>,
    /// One timer per stay on a shard (made there: a timer belongs to its
    /// runtime), moved when the deadline changes.
    timer: Option<crate::timer::Sleep>,
    /// Whether the timer has been polled with its waker (the handle's
    /// shared state, `impl Wake for Shared`) since it was made, reset or
    /// fired: until it fires, the driver does not poll it again (its entry
    /// is a cache line of its own, cold when connections are many).
    timer_polled: bool,
    /// We stopped reading (receive budget, the queue limit): the frame
    /// being read gets its full time again when we resume.
    paused: bool,
    /// Bytes read and written on this connection's sockets.
    bytes: SocketBytes,
    /// When this connection's reads were last noted in the messenger's
    /// HostsHeard: milliseconds past the messenger's epoch, wrapping
    /// (4 bytes, not an Instant's 16: see the size test below); 0: never.
    host_noted: u32,
    io: SocketIo<T>,
    budget: Budget,
    /// Commands taken from the inbox in one go, not yet handled.
    taken: std::collections::VecDeque<Command>,
    /// A message taken from the connection that waits for receive budget:
    /// the connection's later events wait behind it, in its queue. Boxed:
    /// rare, and every driver would carry a message's size.
    held: Option<Box<msgr_protocol::Message>>,
    connecting: Option<Connecting<T::Stream>>,
    /// Sockets to flush and shut down (Event::ShutdownSocket).
    closing: Vec<(Socket<T>, WireQueue)>,
    ident: ident::Pending,
    /// A move to carry out at the next point where the connection can
    /// leave (not connecting, no ident awaiting a verdict).
    move_to: Option<Move>,
    /// While a placement waits: how many of the connection's queued events
    /// came before the accept placed (dispatched on the shard being left,
    /// so the accept is the first event on the shard it was placed on).
    before_move: u32,
    /// An explicit move asked while a placement waits: carried out once
    /// the placed accept has been dispatched where it was placed.
    then_move: Option<u32>,
    published: Published,
    conn: Conn,
    /// Where the connection ran before it last moved, and whether its
    /// accept replaced a lossy connection: ms_handle_accept and
    /// ms_handle_connect say so (crimson's prv_shard and is_replace).
    /// A u32, as `host_noted`, to keep the driver within its size class.
    prev_shard: u32,
    replaced: bool,
    /// The shard whose `msgr_active_connections` counts this connection.
    active_on: Option<usize>,
    /// The connection's log span (crate::log).
    span: tracing::Span,
}

/// A move of the connection to another shard, waiting for the point where
/// it can leave (Driver::move_to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    /// The shard to go to (a u32: the driver stays within its size class).
    to: u32,
    /// Whether it is an accept's placement (the dispatcher's
    /// ms_choose_shard, or where a reconnect's socket landed), whose events
    /// wait for it; else an explicit move (Connection::move_to_shard).
    placed: bool,
}

impl Move {
    /// An accept's placement on shard `to`.
    fn placement(to: u32) -> Option<Move> {
        Some(Move { to, placed: true })
    }

    /// An explicit move to shard `to`.
    fn asked(to: u32) -> Option<Move> {
        Some(Move { to, placed: false })
    }
}

/// A shard's index as the driver keeps it (shards number in the tens).
fn shard_u32(shard: usize) -> u32 {
    u32::try_from(shard).unwrap_or(u32::MAX)
}

/// Which way bytes went on a socket (Driver::count_bytes).
#[derive(Debug, Clone, Copy)]
enum Direction {
    Read,
    Write,
}

/// How the next wait may use the socket.
struct Io {
    read: bool,
    room: ReadRoom,
}

enum Step<S> {
    Read(std::io::Result<usize>),
    Wrote(std::io::Result<usize>),
    Connected(std::io::Result<S>),
    Budget(crate::budget::Granted),
    Verdict(Option<crate::connection::Verdict>),
    Command(Command),
    Timer,
}

/// Where a timer with no deadline waits: a day from now (it is reset
/// to any real deadline before that).
fn timer_unset() -> tokio::time::Instant {
    crate::after(std::time::Duration::from_secs(86400))
}

impl<T: Transport> Driver<T> {
    /// The driver of `conn` (named by `handle`), to start on `shard`, with
    /// the socket it was accepted on, if it was.
    pub fn new(
        inner: Arc<Inner<T>>,
        conn: Conn,
        handle: Connection,
        shard: usize,
        socket: Option<Socket<T>>,
    ) -> Driver<T> {
        let budget = Budget::new(&inner.dispatch_throttle, shard);
        let handle_id = handle.id();
        let mut io = SocketIo::new();
        if let Some(s) = socket {
            io.use_socket(s);
        }
        inner
            .counters
            .shard(shard)
            .inc(crate::counters::CREATED_CONNECTIONS, 1);
        Driver {
            inner,
            conn,
            handle,
            shard,
            io,
            connecting: None,
            held: None,
            taken: Default::default(),
            budget,
            paused: false,
            closing: Vec::new(),
            timer: None,
            timer_polled: false,
            timer_deadline: None,
            now: crate::now(),
            published: Published::default(),
            ident: ident::Pending::default(),
            move_to: None,
            before_move: 0,
            then_move: None,
            prev_shard: shard_u32(shard),
            replaced: false,
            active_on: None,
            bytes: SocketBytes::default(),
            host_noted: 0,
            span: crate::log::conn_span(handle_id, shard),
        }
    }

    /// This shard's perf counters (crate::counters).
    fn logger(&self) -> &msgr_admin::perf::Logger {
        self.inner.counters.shard(self.shard)
    }

    /// Counts this connection as active on `shard` (None: nowhere).
    fn set_active(&mut self, shard: Option<usize>) {
        use crate::counters::ACTIVE_CONNECTIONS;
        if let Some(old) = std::mem::replace(&mut self.active_on, shard) {
            self.inner.counters.shard(old).dec(ACTIVE_CONNECTIONS, 1);
        }
        if let Some(new) = shard {
            self.inner.counters.shard(new).inc(ACTIVE_CONNECTIONS, 1);
        }
    }

    /// Counts `n` bytes read from (`dir` Read) or written to (Write) the
    /// socket.
    fn count_bytes(&mut self, dir: Direction, n: usize) {
        use crate::counters::{RECV_BYTES, RECV_ENCRYPTED_BYTES, SEND_BYTES, SEND_ENCRYPTED_BYTES};
        let n = n as u64;
        let (total, plain, encrypted) = match dir {
            Direction::Read => (&mut self.bytes.read, RECV_BYTES, RECV_ENCRYPTED_BYTES),
            Direction::Write => (&mut self.bytes.written, SEND_BYTES, SEND_ENCRYPTED_BYTES),
        };
        *total = total.wrapping_add(n);
        if matches!(dir, Direction::Read) {
            self.note_host_heard();
        }
        let logger = self.logger();
        logger.inc(plain, n);
        if self.conn.wire_format().is_some_and(|f| f.secure) {
            logger.inc(encrypted, n);
        }
    }

    /// Notes that the peer's host was heard from, a few times per stall
    /// check at most (HostsHeard::NOTE_EVERY).
    fn note_host_heard(&mut self) {
        let every = msgr_protocol::HostsHeard::note_every(self.inner.config.timeouts.stall);
        let ms = (self.inner.idle_clock.nanos(self.now) / 1_000_000) as u32 | 1;
        let since = ms.wrapping_sub(self.host_noted);
        if self.host_noted != 0 && u128::from(since) < every.as_millis() {
            return;
        }
        if let Some(host) = self.conn.peer_host() {
            self.host_noted = ms;
            self.inner.hosts_heard().note(host, self.now);
        }
    }

    /// The session is established (`how`: by our connect or an accept):
    /// the span learns the peer; a session resumed after faults says so.
    fn established(&self, how: &'static str) {
        use crate::counters::{HANDSHAKE_LAT, RECONNECTS};
        let peer = self.conn.peer();
        crate::log::record_peer(&self.span, &peer.addrs, self.conn.peer_name(), peer.policy);
        let stats = self.conn.stats();
        let sessions = &self.inner.counters.sessions;
        if stats.last_handshake_ns != 0 {
            sessions.avg_add(HANDSHAKE_LAT, stats.last_handshake_ns);
        }
        match self.conn.resumed() {
            false => {
                tracing::debug!(target: "msgr", how, features = peer.features, "session established")
            }
            true => {
                sessions.inc(RECONNECTS, 1);
                let n = stats.reconnects;
                tracing::info!(target: "msgr", how, reconnects = n, "session resumed after a fault")
            }
        }
    }

    /// Runs the connection on `shard` until it closes (None) or must move
    /// (the driver and where to).
    async fn run(mut self: Box<Self>, shard: usize) -> Option<(Box<Driver<T>>, usize)> {
        self.arrive(shard);
        // Shutdown marks down every connection it lists; one made (or
        // moved) after it listed them sees the flag here instead. No wait on
        // the flag per turn.
        if *self.inner.shutdown.borrow() {
            self.conn.mark_down();
        }
        // The steps are plain methods; the waits are here, in one body, so no
        // step's future is built and moved per turn of the loop.
        loop {
            let flow = self.handle_events();
            // Sockets to shut down after what was written to them (a refusal
            // the peer should read; an interceptor's STALL or write FAULT).
            // Boxed: held inline across the wait, the sockets and the
            // flush's future would make every connection's task (its
            // memory, and the lines a turn touches) some 800 bytes larger.
            if !self.closing.is_empty() {
                let closing = std::mem::take(&mut self.closing);
                Box::pin(flush_and_close(closing)).await;
            }
            if flow.is_break() {
                return None;
            }
            if let Some(to) = self.leave() {
                return Some((self, to));
            }
            let Some(io) = self.prepare() else {
                // Framing failed (a fault): its events come before any wait.
                continue;
            };
            self.io.out.seal();
            // An injected write delay (a test's), drawn per turn. Boxed: a
            // timer is large, and only a test's injected delay needs one.
            let mut delay = self
                .inner
                .injector
                .delay_now()
                .map(crate::timer::Sleep::after);
            let step = std::future::poll_fn(|cx| self.poll_step(cx, &io, &mut delay)).await;
            self.now = crate::now();
            self.on_step(step);
        }
    }

    /// Polls the connection's sources, in a fixed order so that a run on a
    /// paused single-threaded runtime repeats exactly; the first ready one
    /// is the step. Writes come before reads: output is bounded by what
    /// the user queued, and a socket with room takes it at once. One poll
    /// function rather than a future per source and turn: nothing is built
    /// or dropped per turn, and the task holds no source's future.
    fn poll_step(
        &mut self,
        cx: &mut Context<'_>,
        io: &Io,
        delay: &mut Option<crate::timer::Sleep>,
    ) -> Poll<Step<T::Stream>> {
        let SocketIo { socket, out, rbuf } = &mut self.io;
        if let Some(s) = socket.as_mut() {
            let out = Outgoing::new(out.as_slices());
            if !out.is_empty() {
                if delay
                    .as_mut()
                    .is_some_and(|d| Pin::new(d).poll(cx).is_ready())
                {
                    *delay = None;
                }
                if delay.is_none() {
                    if let Poll::Ready(w) = s.writer.poll_send(cx, out) {
                        return Poll::Ready(Step::Wrote(w));
                    }
                }
            }
            if io.read {
                if let Poll::Ready(r) = s.reader.poll_recv(cx, rbuf, io.room) {
                    return Poll::Ready(Step::Read(r));
                }
            }
        }
        if let Some(c) = self.connecting.as_mut() {
            if let Poll::Ready(r) = c.as_mut().poll(cx) {
                return Poll::Ready(Step::Connected(r));
            }
        }
        if let Some(w) = self.budget.wait_mut() {
            if let Poll::Ready(g) = w.as_mut().poll(cx) {
                return Poll::Ready(Step::Budget(g));
            }
        }
        if self.poll_timer() {
            return Poll::Ready(Step::Timer);
        }
        if let Some(v) = self.ident.verdict_mut() {
            if let Poll::Ready(v) = Pin::new(v).poll(cx) {
                return Poll::Ready(Step::Verdict(v.ok()));
            }
        }
        // Commands already taken come before the inbox's.
        if let Some(c) = self.next_taken() {
            return Poll::Ready(Step::Command(c));
        }
        let inbox = &self.handle.shared.inbox;
        if let Poll::Ready(c) = inbox.poll_pop(cx) {
            return Poll::Ready(Step::Command(c));
        }
        // The timer's waker wakes the task through the inbox's, which may
        // have held none when the timer was polled above (a poll that
        // found the task's budget spent wakes at once): look again now
        // that it holds this task's.
        if inbox.timer_due() {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }

    /// Whether the timer fired. It is polled once armed, with a waker of
    /// its own (the handle's shared state: `impl Wake for Shared`), then
    /// only once that waker said it fired (a poll per turn would touch its
    /// entry, a cache line of its own).
    fn poll_timer(&mut self) -> bool {
        // Taken whether or not armed: a flag left by a timer since
        // replaced would otherwise wake the task again and again.
        let shared = &self.handle.shared;
        let due = shared.inbox.take_timer_due();
        let Some(t) = self
            .timer
            .as_mut()
            .filter(|_| self.timer_deadline.is_some())
        else {
            return false;
        };
        if !due && self.timer_polled {
            return false;
        }
        self.timer_polled = true;
        let waker = std::task::Waker::from(shared.clone());
        Pin::new(t)
            .poll(&mut Context::from_waker(&waker))
            .is_ready()
    }

    /// Settles on `shard`: a timer of its runtime, and the socket
    /// registered with its reactor.
    fn arrive(&mut self, shard: usize) {
        self.set_active(Some(shard));
        self.timer = Some(crate::timer::Sleep::until(timer_unset()));
        self.timer_polled = false;
        self.timer_deadline = None;
        if shard != self.shard {
            self.prev_shard = shard_u32(self.shard);
            self.shard = shard;
            self.budget.rehome(shard);
            if let Some(s) = self.io.socket.take() {
                let link = s.link;
                match s.rehome() {
                    Ok(s) => self.io.use_socket_keeping_buffers(s),
                    Err(e) => {
                        self.io.close();
                        self.conn.socket_closed(link, &e, crate::now());
                    }
                }
            }
        }
        self.handle.shared.view.set_shard(shard);
    }

    /// A placed move, and whether events that came before its accept are
    /// still to be dispatched here (None: no placement waits).
    fn placement(&self) -> Option<bool> {
        matches!(self.move_to, Some(Move { placed: true, .. }))
            .then(|| self.before_move > 0 || self.held.is_some())
    }

    /// Whether the connection's events wait for a placed move: its accept
    /// and what follows are dispatched on the shard it was placed on.
    fn placement_holds_events(&self) -> bool {
        self.placement() == Some(false)
    }

    /// Where to move now, if a move is due and the connection can leave:
    /// the dispatcher hears of it here, on the shard being left.
    fn leave(&mut self) -> Option<usize> {
        if !self.can_leave() {
            return None;
        }
        let Move { to, placed } = self.move_to.take()?;
        let to = to as usize;
        if to == self.shard {
            return None;
        }
        self.publish();
        self.inner
            .dispatcher
            .ms_handle_shard_change(&self.handle, to, placed);
        self.set_active(None);
        Some(to)
    }

    /// Whether the connection can leave its shard now: not while a connect
    /// is under way (its future belongs to this shard's reactor), an ident
    /// waits for its verdict, or events from before a placed accept are
    /// still to be dispatched here.
    fn can_leave(&self) -> bool {
        self.connecting.is_none() && !self.ident.deciding() && self.placement() != Some(true)
    }

    fn publish(&mut self) {
        let view = &self.handle.shared.view;
        if let Some(from) = self
            .published
            .publish(&self.conn, view, self.inner.idle_clock)
        {
            crate::log::state_change(from, self.conn.state());
            self.handle.shared.state_changed.notify_waiters();
        }
        self.published.bytes(view, self.bytes);
    }

    /// Commands from handles, in order (up to COMMANDS_PER_TURN); returns
    /// whether the queue is empty now.
    fn take_commands(&mut self) -> bool {
        for _ in 0..COMMANDS_PER_TURN {
            if self.taken.is_empty() {
                self.handle.shared.inbox.take_all(&mut self.taken);
            }
            match self.next_taken() {
                Some(c) => self.on_command(c),
                None => return true,
            }
        }
        false
    }

    /// The first command taken and not yet handled; the emptied list lets
    /// go of a small buffer (msgr_frames::let_go_if_small).
    fn next_taken(&mut self) -> Option<Command> {
        let c = self.taken.pop_front();
        msgr_frames::let_go_if_small(&mut self.taken);
        c
    }

    fn on_command(&mut self, cmd: Command) {
        let now = self.now;
        match cmd {
            Command::Send {
                msg,
                counted,
                queued,
            } => {
                let logger = self.logger();
                logger.inc(crate::counters::SEND_MESSAGES, 1);
                let by_type = self.inner.counters.by_type(self.shard);
                by_type.send(msg.msg_type, msg.payload_len());
                if let Some(waited) = queued.elapsed() {
                    logger.tinc(crate::counters::SEND_MESSAGES_QUEUE_LAT, waited);
                }
                tracing::info!(
                    target: "msgr",
                    msg_type = msg.msg_type,
                    tid = msg.tid,
                    len = msg.payload_len(),
                    "--> queued"
                );
                if counted {
                    // What `Connection::send` added.
                    let cost = msgr_protocol::Session::cost(msg.payload_len());
                    let in_flight = &self.handle.shared.in_flight;
                    in_flight.fetch_sub(cost, std::sync::atomic::Ordering::AcqRel);
                }
                self.conn.send(msg, now);
            }
            Command::Keepalive(stamp) => self.conn.send_keepalive(stamp, now),
            Command::MarkDown => self.conn.mark_down(),
            Command::MarkDisposable => self.conn.mark_disposable(),
            Command::Evict => self.conn.evict_idle(now),
            Command::MoveTo(s) => {
                let to = self.inner.shards.index(s);
                let Ok(shard) = u32::try_from(to) else { return };
                match self.move_to {
                    Some(Move { placed: true, .. }) => self.then_move = Some(shard),
                    _ if to != self.shard => self.move_to = Move::asked(shard),
                    _ => {}
                }
            }
            #[cfg(feature = "interceptor")]
            Command::Unblock => self.conn.unblock(&mut self.io.rbuf, now),
            Command::Ask(a) => self.on_ask(a),
            Command::Adopt(a) => self.on_adopt(a),
            Command::AdoptCancelled => self.conn.end_replacing(),
        }
    }

    /// Commands and events, in order, until handling them (a dispatcher's
    /// send, say) makes no more, a message waits for receive budget, or the
    /// connection is to move (what is left is handled where it goes).
    /// Breaks when the connection closed.
    fn handle_events(&mut self) -> ControlFlow<()> {
        loop {
            let emptied = self.take_commands();
            if self.handle.shared.inbox.marked_down() {
                // At once, before anything more is dispatched: the user
                // hears nothing of a connection after marking it down,
                // whatever its command queue still holds.
                self.conn.mark_down();
            }
            let mut batch = self.conn.queued_events();
            match self.move_to {
                // A placed session's accept, and what follows it, is
                // dispatched on the shard it was placed on; what came
                // before it, here. While it cannot leave yet (a connect of
                // its own under way, an ident deciding), its events wait.
                Some(_) if self.placement_holds_events() => return ControlFlow::Continue(()),
                Some(Move { placed: true, .. }) => batch = batch.min(self.before_move as usize),
                Some(Move { placed: false, .. }) if self.can_leave() => {
                    return ControlFlow::Continue(())
                }
                _ => {}
            }
            if batch == 0 && self.held.is_none() {
                return ControlFlow::Continue(());
            }
            // The dispatcher's calls see the state the events come from.
            self.publish();
            // What the dispatcher gives this connection from this thread
            // skips the queue (connection/outbox.rs); it may only when
            // nothing of this thread's is left in the queue.
            let outbox = match emptied {
                true => Outbox::open(self.handle.outbox_key()),
                false => Outbox::closed(),
            };
            // Dispatch time, per batch (two clock reads, not two a message).
            let began = crate::now();
            let dispatched = self.dispatch(batch);
            let took = crate::now().saturating_duration_since(began);
            self.logger()
                .tinc(crate::counters::RUNNING_FAST_DISPATCH_TIME, took);
            if took > crate::log::SLOW_DISPATCH {
                tracing::warn!(target: "msgr", ?took, events = batch, "slow dispatch");
            }
            let mut given = outbox.close();
            for c in given.drain(..) {
                self.on_command(c);
            }
            crate::connection::recycle(given);
            if self.move_to.is_none() {
                // Dispatched where it was placed: a move asked meanwhile is
                // due now.
                let shard = self.shard;
                let asked = self.then_move.take().filter(|&to| to as usize != shard);
                self.move_to = asked.and_then(Move::asked);
            }
            if !dispatched? {
                return ControlFlow::Continue(());
            }
        }
    }

    /// Dispatches the held message, then the next `batch` events of the
    /// connection, in order; Continue(false) when a message waits for
    /// receive budget (held; the events after it stay queued).
    fn dispatch(&mut self, batch: usize) -> ControlFlow<(), bool> {
        if let Some(msg) = self.held.take() {
            if !self.dispatch_message(msg) {
                return ControlFlow::Continue(false);
            }
        }
        for _ in 0..batch {
            let ev = self.conn.poll_event();
            self.before_move = self.before_move.saturating_sub(1);
            match ev {
                Some(Event::Message(msg)) => {
                    if !self.dispatch_message(msg) {
                        return ControlFlow::Continue(false);
                    }
                }
                Some(ev) => self.on_event(ev)?,
                None => break,
            }
        }
        ControlFlow::Continue(true)
    }

    /// The receive budget takes the throttle of the connection's policy,
    /// once the peer is known: before the first message is read, whether
    /// its preamble came alone or with the whole message.
    fn take_policy_throttle(&mut self) {
        let (inner, peer) = (&self.inner, self.conn.peer());
        self.budget.policy(self.shard, || {
            inner.policy_throttle(peer.entity_type, peer.policy)
        });
    }

    /// Dispatches `msg` with its receive budget, or holds it until the
    /// budget is there (false).
    fn dispatch_message(&mut self, msg: Box<msgr_protocol::Message>) -> bool {
        self.take_policy_throttle();
        match self.budget.take(receive_cost(msg.payload_len())) {
            Some(permits) => {
                self.logger().inc(crate::counters::RECV_MESSAGES, 1);
                let by_type = self.inner.counters.by_type(self.shard);
                by_type.recv(msg.msg_type, msg.payload_len());
                tracing::info!(
                    target: "msgr",
                    seq = msg.seq,
                    msg_type = msg.msg_type,
                    tid = msg.tid,
                    len = msg.payload_len(),
                    "<== received"
                );
                // A call's reply goes to its caller (its budget returns
                // at once), anything else to the dispatcher.
                if let Err(msg) = self.handle.shared.calls.answer(msg) {
                    let incoming = IncomingMessage {
                        msg,
                        _permits: permits,
                    };
                    self.inner.dispatcher.ms_dispatch(&self.handle, incoming);
                }
                true
            }
            None => {
                self.held = Some(msg);
                false
            }
        }
    }

    fn on_event(&mut self, ev: Event) -> ControlFlow<()> {
        let (inner, conn) = (&self.inner, &self.handle);
        let dispatcher = &inner.dispatcher;
        match ev {
            // A request an adopted socket answered meanwhile is moot.
            Event::Connect { .. } if self.conn.state() != ConnState::NeedSocket => {}
            Event::Connect { addr, timeout } => {
                let t = inner.transport.clone();
                self.connecting = Some(Box::pin(async move {
                    crate::timer::timeout(timeout, t.connect(addr))
                        .await
                        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
                }));
            }
            Event::CheckPath { link } => {
                let path = self.io.socket.as_ref().filter(|s| s.link == link);
                let host = self.conn.peer_host();
                let host_heard = host.and_then(|h| inner.hosts_heard().since(h, self.now));
                let path =
                    path.and_then(|s| s.reader.path())
                        .map(|p| msgr_protocol::PathProgress {
                            in_flight: p.in_flight,
                            unanswered: p.unanswered,
                            since_ack: p.since_ack,
                            host_heard,
                        });
                tracing::debug!(target: "msgr", ?path, "path check: the peer has been silent");
                let stamp = crate::connection::wall_clock();
                self.conn.handle_path(link, path, stamp, self.now);
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
                    if self.conn.link_id() == Some(link) {
                        self.conn.fill_output(&mut out, self.now);
                    }
                    self.closing.push((s, out));
                    self.io.close();
                }
            }
            Event::IdentReceived(req) => self.on_ident(req),
            Event::LearnedAddr(a) => inner.learned(a),
            Event::Fault(e) => {
                tracing::info!(target: "msgr", error = %e, "fault");
                count_fault(&inner.counters.sessions, &e);
                if e.is_path_failure() {
                    // Before the reset that has a lossy user dial again.
                    if let Some(k) = conn.shared.registered_key() {
                        inner.failed_paths().note(k, crate::now());
                    }
                }
                dispatcher.ms_handle_fault(conn, &e);
                // Connection::ready reports a refusal.
                conn.shared.state_changed.notify_waiters();
            }
            Event::Connected => {
                self.established("connect");
                let (inner, conn) = (&self.inner, &self.handle);
                if let Some(k) = conn.shared.registered_key() {
                    let mut failed = inner.failed_paths();
                    if !failed.is_empty() {
                        failed.forget(&k);
                    }
                }
                inner
                    .dispatcher
                    .ms_handle_connect(conn, self.prev_shard as usize);
                self.prev_shard = shard_u32(self.shard);
            }
            Event::Accepted => {
                self.established("accept");
                let (inner, conn) = (&self.inner, &self.handle);
                let replaced = std::mem::take(&mut self.replaced);
                if replaced {
                    inner.counters.sessions.inc(crate::counters::REPLACED, 1);
                }
                inner
                    .dispatcher
                    .ms_handle_accept(conn, self.prev_shard as usize, replaced);
                self.prev_shard = shard_u32(self.shard);
            }
            Event::Message(_) => unreachable!("dispatched by dispatch"),
            // A reset queued before the user's mark_down is not reported
            // after it.
            Event::Reset if !conn.shared.inbox.marked_down() => {
                tracing::info!(target: "msgr", "reset: the session is gone");
                inner.counters.sessions.inc(crate::counters::RESETS, 1);
                conn.shared.calls.fail_all(crate::CallError::Reset);
                dispatcher.ms_handle_reset(conn)
            }
            Event::RemoteReset if !conn.shared.inbox.marked_down() => {
                tracing::info!(target: "msgr", "remote reset: the peer reset the session");
                inner.counters.sessions.inc(crate::counters::RESETS, 1);
                conn.shared.calls.fail_all(crate::CallError::Reset);
                dispatcher.ms_handle_remote_reset(conn)
            }
            Event::Reset | Event::RemoteReset => {}
            Event::Refused => {
                tracing::info!(target: "msgr", "refused by the peer");
                dispatcher.ms_handle_refused(conn)
            }
            Event::KeepaliveAck(_) => {
                self.published
                    .publish(&self.conn, &conn.shared.view, inner.idle_clock);
                conn.shared.keepalive_acked.notify_waiters();
            }
            Event::Closed => {
                conn.shared.calls.fail_all(crate::CallError::Closed);
                conn.shared.state_changed.notify_waiters();
                self.published
                    .publish(&self.conn, &conn.shared.view, inner.idle_clock);
                inner.forget(conn);
                conn.shared.drained.notify_waiters();
                // Keepalive waiters learn that no ack will come.
                conn.shared.keepalive_acked.notify_waiters();
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Takes what the connection has written, publishes, reserves receive
    /// budget for the message being read, decides whether to read (the
    /// reader gives the read buffer room only once bytes are there: a
    /// connection waiting for its peer, or a frame for its budget, holds
    /// none), and arms the timer. `None`: framing raised a fault to handle
    /// first.
    fn prepare(&mut self) -> Option<Io> {
        let mut raised = false;
        match self.io.link() {
            Some(link) if self.conn.link_id() == Some(link) => {
                raised = self.conn.fill_output(&mut self.io.out, self.now);
            }
            // The connection moved on to another socket.
            Some(_) => self.io.close(),
            None => {}
        }
        self.publish();
        let c = &self.conn;
        let shared = &self.handle.shared;
        if shared
            .senders_waiting
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
            && !c.over_queue_limit()
        {
            shared.drained.notify_waiters();
        }
        // Budget for the message whose preamble is in, before its bytes:
        // what it will cost once received (dispatch_message takes the same).
        if self.held.is_none() {
            if let Some(len) = self.conn.pending_message_len() {
                self.take_policy_throttle();
                self.budget.reserve(receive_cost(len));
            }
        }
        // Reading stops, and only reading, while a message waits for
        // budget, while we hold too much for a peer that does not read, and
        // while an ident waits for its verdict or a promised socket for
        // its arrival (the peer has nothing to say meanwhile).
        let c = &self.conn;
        let blocked = self.held.is_some()
            || self.budget.waiting()
            || c.reading_paused()
            || c.is_replacing()
            || self.ident.deciding();
        // A socket an interceptor holds is not read (its handshake is
        // frozen).
        let can_read = self.io.socket.is_some() && !c.link_held();
        let read = can_read && !blocked;
        let room = self.io.read_room(&self.conn);
        if can_read && blocked {
            if !self.paused && (self.held.is_some() || self.budget.waiting()) {
                tracing::debug!(target: "msgr", "reading paused: waiting for receive budget");
            }
            self.paused = true;
        } else if read && std::mem::take(&mut self.paused) {
            self.conn.resume_reading(self.now);
        }
        let deadline = self.conn.poll_timeout_holding(self.holds_spare());
        // What was raised is handled before any wait, unless a placement
        // holds it for the shard placed on, or it queues behind a message
        // waiting for receive budget: events are handled in order, so
        // handling them now would find that message still waiting, turn
        // after turn, the task never waiting for the budget (a spin that
        // starves the shard).
        if raised && self.held.is_none() && !self.placement_holds_events() {
            return None;
        }
        self.arm(deadline);
        Some(Io { read, room })
    }

    /// Whether an emptied queue of the driver's own kept its buffer (what
    /// Driver::trim lets go): the connection counts them in its trim
    /// deadline (Conn::poll_timeout_holding).
    fn holds_spare(&self) -> bool {
        self.handle.shared.inbox.holds_spare()
            || msgr_frames::holds_spare(&self.taken)
            || self.io.out.holds_spare()
    }

    /// Lets go of what the driver's own queues grew to (the connection
    /// trims its own when idle: Timeouts::trim; timers are rare enough to
    /// do this at each).
    fn trim(&mut self) {
        self.io.out.trim();
        self.handle.shared.inbox.trim();
        if self.taken.is_empty() {
            self.taken = Default::default();
        }
    }

    /// Moves the timer, only when the deadline gets earlier: one that fires
    /// before a later deadline finds nothing due and re-arms.
    fn arm(&mut self, deadline: Option<Instant>) {
        let earlier = match (deadline, self.timer_deadline) {
            (Some(d), Some(a)) => d < a,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if let (true, Some(timer)) = (earlier, self.timer.as_mut()) {
            self.timer_deadline = deadline;
            timer.reset(deadline.map_or_else(timer_unset, Into::into));
            self.timer_polled = false;
        }
    }

    fn on_step(&mut self, step: Step<T::Stream>) {
        match &step {
            Step::Read(Ok(n)) => self.count_bytes(Direction::Read, *n),
            Step::Wrote(Ok(n)) => self.count_bytes(Direction::Write, *n),
            _ => {}
        }
        let now = self.now;
        let link = self.io.link().unwrap_or_default();
        let c = &mut self.conn;
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
                match failed {
                    Some(e) => c.socket_closed(link, &e, now),
                    None if c.link_id() == Some(link) => {
                        c.handle_input(&mut self.io.rbuf, now);
                        c.flush_acks(now);
                        // Emptied: the buffer goes (the next read takes
                        // its thread's spare once bytes are there).
                        msgr_transport::let_go(&mut self.io.rbuf);
                    }
                    None => self.io.rbuf = BytesMut::new(),
                }
            }
            Step::Wrote(r) => match r {
                Ok(_) if self.inner.injector.fail_now() => c.socket_closed(link, &injected(), now),
                Ok(n) => self.io.out.advance(n),
                Err(e) => c.socket_closed(link, &e, now),
            },
            Step::Connected(r) => {
                self.connecting = None;
                match r {
                    Ok(stream) => {
                        tracing::debug!(target: "msgr", "socket connected");
                        let took = c.socket_connected(stream.local_addr(), now);
                        if let (true, Some(link)) = (took, c.link_id()) {
                            let (r, w) = stream.into_split();
                            self.io.use_socket(Socket {
                                link,
                                reader: r,
                                writer: w,
                                slot: SocketSlot::new(&self.inner.live_sockets),
                            });
                        }
                    }
                    Err(e) => {
                        tracing::debug!(target: "msgr", error = %e, "connect failed");
                        c.socket_failed(&e, now)
                    }
                }
            }
            Step::Budget(g) => {
                if let Some(waited) = g.dispatch_wait {
                    let throttle = &self.inner.counters.throttle;
                    throttle.tinc(crate::counters::THROTTLE_WAIT, waited);
                }
                tracing::debug!(target: "msgr", waited = ?g.dispatch_wait, bytes = g.bytes, "receive budget granted");
                self.budget.granted(g.bytes, g.permits)
            }
            Step::Verdict(v) => self.on_verdict(v),
            Step::Command(cmd) => self.on_command(cmd),
            Step::Timer => {
                self.timer_deadline = None;
                self.timer_polled = false;
                c.handle_timeout(now);
                self.trim();
            }
        }
    }
}

/// The driver is gone (its connection closed, or its runtime shut down):
/// commands sent to it from now on are dropped.
impl<T: Transport> Drop for Driver<T> {
    fn drop(&mut self) {
        self.set_active(None);
        self.handle.shared.inbox.close();
        // No reply can come through a connection whose driver is gone.
        self.handle.shared.calls.fail_all(crate::CallError::Closed);
        self.handle.shared.state_changed.notify_waiters();
    }
}

/// Counts fault `e` in the sessions' counters (crate::counters): every
/// one, and the timeouts Ceph 20 counts apart.
fn count_fault(sessions: &msgr_admin::perf::Logger, e: &msgr_protocol::ProtocolError) {
    use crate::counters::{FAULTS, IDLE_TIMEOUTS, PATH_STALLS, READY_TIMEOUTS};
    use msgr_protocol::ProtocolError::Timeout;
    sessions.inc(FAULTS, 1);
    match e {
        Timeout("handshake") => sessions.inc(READY_TIMEOUTS, 1),
        Timeout(what) if what.starts_with("idle connection") => sessions.inc(IDLE_TIMEOUTS, 1),
        msgr_protocol::ProtocolError::PathStalled { .. } => sessions.inc(PATH_STALLS, 1),
        _ => {}
    }
}

/// The receive budget a message of `payload` bytes takes: its payload and
/// the fixed overhead of a message (Session::cost), so that what empty
/// messages waiting for dispatch, or held by the user, hold is bounded by
/// the throttles as large ones are.
#[inline]
fn receive_cost(payload: usize) -> u64 {
    u64::try_from(msgr_protocol::Session::cost(payload)).unwrap_or(u64::MAX)
}

/// What an injected socket failure looks like to the connection.
fn injected() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "injected socket failure",
    )
}

#[cfg(test)]
mod tests {
    /// The driver is a connection's largest allocation, and the allocator
    /// rounds it up to a size class (mimalloc's: 2048, 2560, 3072 bytes):
    /// a byte past one costs 512 more for every connection (issue 16 holds
    /// an idle connection to 8 KiB). It fits 2048 over TCP and over the
    /// transport the `msgr` tool uses (TCP or io_uring, whose halves are
    /// boxed).
    #[test]
    fn a_driver_stays_within_its_allocation_size_class() {
        use super::Driver;
        let tcp = std::mem::size_of::<Driver<msgr_transport::tcp::Tcp>>();
        let either = std::mem::size_of::<Driver<msgr_uring::TcpOrUring>>();
        assert!(tcp <= 2048, "over TCP: {tcp} bytes");
        assert!(either <= 2048, "over TCP or io_uring: {either} bytes");
    }
}
