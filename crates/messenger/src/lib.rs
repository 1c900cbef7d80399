//! The messenger runtime: tokio tasks that drive msgr-protocol connections
//! over a [`msgr_transport::Transport`].
//!
//! A [`Messenger`] binds addresses, accepts and opens connections, keeps
//! one connection per peer for stateful policies (the registry), applies
//! the acceptor's decisions on idents, and hands what arrives to a
//! [`Dispatcher`]. Each connection is one task that owns its socket halves
//! and runs [`msgr_protocol::Conn`]: it reads what the frame decoder wants,
//! writes many frames per vectored write, and takes throttle budget for
//! every message it dispatches, so a full throttle stops it reading (back
//! pressure to the sender) and nothing queues without bound.
//!
//! The socket I/O (this crate) is separate from the session state (the
//! protocol crate's `Conn`, behind a mutex that the registry also takes
//! during handshakes), as crimson separates its IOHandler from
//! ProtocolV2: a later runtime can move connections between cores
//! without touching the protocol.
#![forbid(unsafe_code)]

mod budget;
mod connection;
mod driver;
pub mod inject;
mod messenger;
pub mod throttle;

pub use connection::{Connection, IncomingMessage};

/// The runtime's monotonic clock: tokio's, so a test runtime with paused
/// time drives every protocol deadline (handshake timeouts, backoff,
/// keepalives) in virtual time. Outside a paused runtime it is the system
/// clock.
pub(crate) fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// `d` from now on the runtime's clock (msgr_protocol::later: a duration
/// too long for the clock is a year).
pub(crate) fn after(d: std::time::Duration) -> tokio::time::Instant {
    tokio::time::Instant::from_std(msgr_protocol::later(now(), d))
}
pub use inject::InjectConfig;
pub use messenger::{Messenger, Options};
pub use msgr_protocol::{ConnState, ConnStats, Message, Policy, PolicyName};

/// What a messenger tells its user (Ceph's Dispatcher). Called on the
/// connection's task: return quickly, or move work elsewhere.
pub trait Dispatcher: Send + Sync + 'static {
    /// A message arrived (ms_dispatch / ms_fast_dispatch). The message holds
    /// throttle budget until dropped.
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage);

    /// Our connection became READY (ms_handle_connect).
    fn ms_handle_connect(&self, _conn: &Connection) {}

    /// An accepted connection became READY (ms_handle_accept).
    fn ms_handle_accept(&self, _conn: &Connection) {}

    /// A connection closed by fault; what was queued is lost
    /// (ms_handle_reset).
    fn ms_handle_reset(&self, _conn: &Connection) {}

    /// The peer lost our session and we reset ours (ms_handle_remote_reset).
    fn ms_handle_remote_reset(&self, _conn: &Connection) {}

    /// A connect was refused (ms_handle_refused).
    fn ms_handle_refused(&self, _conn: &Connection) {}

    /// The connection faulted (before its policy decides: retry, standby
    /// or reset). Where Ceph's AuthClient hears of AUTH_BAD_METHOD, a user
    /// hears of an authentication refusal here.
    fn ms_handle_fault(&self, _conn: &Connection, _error: &msgr_protocol::ProtocolError) {}
}
