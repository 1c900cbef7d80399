//! Breakpoints for failover tests (crimson's Interceptor,
//! src/crimson/net/Interceptor.h; docs/research/crimson-v2-matrix.md §1).
//!
//! A test installs an [`Interceptor`] in [`crate::Config`] (cargo feature
//! `interceptor`; without it no hook is ever called). Each connection asks
//! it what to do at every custom point (socket connecting, socket accepted,
//! banner write, banner read, banner payload read) and at every frame it
//! reads or writes, by tag; an msgr1 connection at each part of its
//! handshake and each tagged item it reads or writes ([`Point1`]). The
//! answer:
//! - [`Action::Continue`]: go on.
//! - [`Action::Fault`]: fail before the I/O (the frame is neither written
//!   nor handed to the state machine; a connect is not attempted).
//! - [`Action::Block`]: hold the I/O, and everything after it on that
//!   socket, until [`crate::Conn::unblock`].
//! - [`Action::Stall`]: do the I/O, then have the driver shut the socket
//!   down ([`crate::Event::ShutdownSocket`]) while the connection, unaware,
//!   stays frozen mid-handshake; after [`crate::Conn::unblock`] it goes on
//!   with what it read and fails at its next use of the dead socket. This is
//!   how stale handshakes are made.
//!
//! The gate lives in the link (one socket): the state machine itself never
//! waits, so the sans-IO core stays synchronous.

use std::fmt;

use msgr_frames::{Tag, WireQueue};

use crate::input::Input;

/// The custom breakpoints (crimson's custom_bp_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CustomPoint {
    /// Before our banner is written.
    BannerWrite,
    /// Before the peer's banner prefix is read.
    BannerRead,
    /// Before the peer's banner payload (its feature words) is read.
    BannerPayloadRead,
    /// Before each connect attempt (Fault, Block and Continue only).
    SocketConnecting,
    /// When a socket is accepted (a notification: Continue only).
    SocketAccepted,
}

/// Which way the I/O at a breakpoint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Reading what the peer sent.
    Read,
    /// Writing to the peer.
    Write,
}

/// msgr1's points, which has no frames: the hello each side writes first
/// (a connector's banner; an acceptor's banner and addresses) and reads
/// from the other, each CONNECT, each CONNECT_REPLY by its tag, the
/// connector's in_seq after SEQ, and each tagged item of an open session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point1 {
    /// The hello: a connector's banner, an acceptor's banner and addresses.
    Hello,
    /// A CONNECT.
    Connect,
    /// A CONNECT_REPLY with this tag.
    Reply(msgr_frames::v1::Tag),
    /// The connector's in_seq after a SEQ reply.
    Seq,
    /// A tagged item of an open session (a message, an ACK, a keepalive).
    Item(msgr_frames::v1::Tag),
}

/// Where a connection is (crimson's Breakpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Breakpoint {
    /// A custom point: socket and banner steps.
    Custom(CustomPoint),
    /// An msgr2 frame with this tag, read or written.
    Frame(Tag, Direction),
    /// An msgr1 step, read or written.
    Msgr1(Point1, Direction),
}

impl fmt::Display for Breakpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = |d: &Direction| match d {
            Direction::Read => "READ",
            Direction::Write => "WRITE",
        };
        match self {
            Breakpoint::Custom(c) => write!(f, "{c:?}"),
            Breakpoint::Frame(tag, d) => write!(f, "{tag:?}_{}", dir(d)),
            Breakpoint::Msgr1(p, d) => match p {
                Point1::Hello => write!(f, "MSGR1_HELLO_{}", dir(d)),
                Point1::Connect => write!(f, "CONNECT_{}", dir(d)),
                Point1::Reply(t) => write!(f, "CONNECT_REPLY_{t}_{}", dir(d)),
                Point1::Seq => write!(f, "IN_SEQ_{}", dir(d)),
                Point1::Item(t) => write!(f, "{t}_{}", dir(d)),
            },
        }
    }
}

/// What to do at a breakpoint (crimson's bp_action_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Go on.
    #[default]
    Continue,
    /// Fail before the I/O: the frame is neither written nor handed to the
    /// state machine; a connect is not attempted.
    Fault,
    /// Hold the I/O, and everything after it on that socket, until
    /// [`crate::Conn::unblock`].
    Block,
    /// Do the I/O, then have the driver shut the socket down while the
    /// connection stays frozen mid-handshake until [`crate::Conn::unblock`].
    Stall,
}

/// The test's side: called at every breakpoint of every connection, with
/// the connection's id ([`crate::Conn::id`]).
pub trait Interceptor: Send + Sync {
    /// What connection `conn` does at breakpoint `bp`.
    fn intercept(&self, conn: u64, bp: Breakpoint) -> Action;

    /// Accepted connection `conn` handed its socket and session over to an
    /// existing connection and closed (crimson's register_conn_replaced).
    fn replaced(&self, _conn: u64) {}
}

/// A ready-made interceptor for tests (crimson's TestInterceptor): actions
/// armed for the n-th hit of a breakpoint, where hits count across every
/// connection of the messenger that installed it, and every hit counted
/// per breakpoint and per connection (before its action applies, so an
/// attempt that faults still counts).
#[cfg(feature = "interceptor")]
#[derive(Default)]
pub struct Traps {
    inner: std::sync::Mutex<TrapsInner>,
}

#[cfg(feature = "interceptor")]
#[derive(Default)]
struct TrapsInner {
    armed: std::collections::HashMap<(Breakpoint, u32), Action>,
    hits: std::collections::HashMap<Breakpoint, u32>,
    by_conn: std::collections::HashMap<(u64, Breakpoint), u32>,
    /// The last connection a BLOCK or STALL was handed to.
    blocked: Option<u64>,
    /// Connections in the order they were first seen (crimson's results).
    order: Vec<u64>,
    replaced: std::collections::HashSet<u64>,
}

#[cfg(feature = "interceptor")]
impl Traps {
    fn inner(&self) -> std::sync::MutexGuard<'_, TrapsInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `action` at the `round`-th hit of `bp` (from 1).
    pub fn arm(&self, bp: Breakpoint, round: u32, action: Action) {
        self.inner().armed.insert((bp, round), action);
    }

    /// Hits of `bp` on every connection.
    pub fn hits(&self, bp: Breakpoint) -> u32 {
        self.inner().hits.get(&bp).copied().unwrap_or(0)
    }

    /// Hits of `bp` on connection `conn`.
    pub fn conn_hits(&self, conn: u64, bp: Breakpoint) -> u32 {
        self.inner().by_conn.get(&(conn, bp)).copied().unwrap_or(0)
    }

    /// The connection holding a BLOCK or STALL, if one was handed out.
    pub fn blocked(&self) -> Option<u64> {
        self.inner().blocked
    }

    /// Every connection that hit a breakpoint, oldest first (each hits
    /// SOCKET_CONNECTING or SOCKET_ACCEPTED when it starts).
    pub fn connections(&self) -> Vec<u64> {
        self.inner().order.clone()
    }

    /// Whether connection `conn` was replaced (moved into an existing one).
    pub fn was_replaced(&self, conn: u64) -> bool {
        self.inner().replaced.contains(&conn)
    }
}

#[cfg(feature = "interceptor")]
impl Interceptor for Traps {
    fn intercept(&self, conn: u64, bp: Breakpoint) -> Action {
        let mut t = self.inner();
        let round = {
            let n = t.hits.entry(bp).or_default();
            *n = n.saturating_add(1);
            *n
        };
        if !t.order.contains(&conn) {
            t.order.push(conn);
        }
        let hits = t.by_conn.entry((conn, bp)).or_default();
        *hits = hits.saturating_add(1);
        let action = t.armed.get(&(bp, round)).copied().unwrap_or_default();
        if matches!(action, Action::Block | Action::Stall) {
            t.blocked = Some(conn);
        }
        action
    }

    fn replaced(&self, conn: u64) {
        self.inner().replaced.insert(conn);
    }
}

/// One link's hook and gate.
#[derive(Default)]
pub(crate) struct Tap {
    #[cfg(feature = "interceptor")]
    pub interceptor: Option<std::sync::Arc<dyn Interceptor>>,
    pub conn: u64,
    /// The socket failed while held (reported at the unblock).
    pub dead: bool,
    /// A write was failed on purpose: the socket's close flushes what was
    /// written before it.
    pub flush_on_close: bool,
    gate: Gate,
}

/// Held is rare (tests only): boxed, so that every connection's link does
/// not carry its size.
#[derive(Default)]
enum Gate {
    #[default]
    Open,
    Held(Box<Held>),
}

/// Output from the blocked write on (in the link's output queue;
/// `released` is what the driver may still write), and the input that was
/// read but not handed on.
struct Held {
    released: WireQueue,
    input: Option<Input>,
    stall: bool,
    shutdown_requested: bool,
}

impl Tap {
    pub fn new(conn: u64) -> Tap {
        Tap {
            conn,
            ..Tap::default()
        }
    }

    /// Asks the interceptor (always Continue without the feature).
    pub fn hit(&self, bp: Breakpoint) -> Action {
        #[cfg(feature = "interceptor")]
        if let Some(i) = self.interceptor.as_ref() {
            return i.intercept(self.conn, bp);
        }
        let _ = bp;
        Action::Continue
    }

    pub fn held(&self) -> bool {
        matches!(self.gate, Gate::Held(_))
    }

    /// Closes the gate: what `output` holds now stays writable, later
    /// output is held (for good when `stall`: the socket is dead).
    pub fn close(&mut self, output: &mut WireQueue, stall: bool) {
        if self.held() {
            return;
        }
        self.gate = Gate::Held(Box::new(Held {
            released: std::mem::take(output),
            input: None,
            stall,
            shutdown_requested: false,
        }));
    }

    /// Keeps `input` for after the gate opens.
    pub fn hold_input(&mut self, held: Input) {
        if let Gate::Held(h) = &mut self.gate {
            h.input = Some(held);
        }
    }

    /// The output the driver may write: all of it when open, what came
    /// before the gate when held.
    pub fn writable<'a>(&'a mut self, output: &'a mut WireQueue) -> &'a mut WireQueue {
        match &mut self.gate {
            Gate::Open => output,
            Gate::Held(h) => &mut h.released,
        }
    }

    /// A stalled socket's shutdown, asked of the driver once.
    pub fn take_shutdown(&mut self) -> bool {
        match &mut self.gate {
            Gate::Held(h) if h.stall && !h.shutdown_requested => {
                h.shutdown_requested = true;
                true
            }
            _ => false,
        }
    }

    /// Opens the gate: held output joins `output`; returns the held input
    /// and whether the socket was stalled (and so is dead).
    #[cfg(feature = "interceptor")]
    pub fn open(&mut self, output: &mut WireQueue) -> (Option<Input>, bool) {
        match std::mem::take(&mut self.gate) {
            Gate::Open => (None, false),
            Gate::Held(h) => {
                let Held {
                    mut released,
                    input,
                    stall,
                    ..
                } = *h;
                released.append(output);
                *output = released;
                (input, stall)
            }
        }
    }
}
