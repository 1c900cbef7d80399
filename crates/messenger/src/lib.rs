//! The messenger runtime: msgr-protocol connections driven over a
//! [`msgr_transport::Transport`], on shards.
//!
//! A [`Messenger`] binds addresses, accepts and opens connections, keeps
//! one connection per peer for stateful policies (the registry), applies
//! the acceptor's decisions on idents, and hands what arrives to a
//! [`Dispatcher`]. It runs on shards (crimson's model): threads with a
//! single-threaded runtime each, pinned to cores. A connection lives on
//! one shard at a time: one task there owns its socket halves and its
//! [`msgr_protocol::Conn`] (no lock: nothing else touches it), reads what
//! the frame decoder wants, writes many frames per vectored write, takes
//! throttle budget for every message it dispatches (a full throttle stops
//! it reading: back pressure to the sender), and dispatches. Handles
//! ([`Connection`]) reach it from any thread through its command queue.
//! A connection moves between shards whole (socket, session, queues), when
//! the dispatcher places it, when a reconnect lands on another shard, or
//! when asked to.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
mod connection;
pub mod counters;
pub mod dispatch;
mod driver;
pub mod inject;
mod inner;
mod log;
mod message_types;
mod messenger;
mod shard;
pub mod throttle;
mod timer;

pub use connection::{CallError, Connection, IncomingMessage, NotReady};

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
pub use message_types::MessageTypes;
pub use messenger::{Messenger, Options};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
pub use msgr_protocol::{ConnState, ConnStats, Message, Policy, PolicyName};

/// What the dispatcher knows of a connection when it places it on a
/// shard: before an accepted session starts (its peer identified and
/// authenticated, before SERVER_IDENT) and before one we open connects.
#[derive(Debug)]
pub struct Placement<'a> {
    /// The peer's entity type (the one dialed, or the one it said).
    pub peer_type: EntityType,
    /// The peer's name, once it said it (accepted connections).
    pub peer_name: Option<EntityName>,
    /// The peer's addresses.
    pub peer_addrs: &'a EntityAddrvec,
    /// Who the peer authenticated as (accepted connections).
    pub identity: Option<&'a msgr_auth::Identity>,
    /// An accepted connection (else one we open).
    pub accepted: bool,
    /// The shard it runs on now: where its socket was accepted (a new
    /// session), the session's own (one that adopts a reconnect's socket;
    /// unplaced, it follows the socket to the shard that accepted it), or
    /// where a connect was called.
    pub shard: usize,
    /// How many shards the messenger has.
    pub shards: usize,
}

/// What a messenger tells its user (Ceph's Dispatcher, with crimson's
/// shard events). Called on the connection's shard: return quickly, or
/// move work elsewhere. With several shards, calls for different
/// connections come from different threads at once.
pub trait Dispatcher: Send + Sync + 'static {
    /// A message arrived (ms_dispatch / ms_fast_dispatch). The message holds
    /// throttle budget until dropped.
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage);

    /// The shard a connection should run on (`None`: where it is; taken
    /// modulo the shard count). An OSD puts a connection where the PG
    /// shard it serves lives.
    fn ms_choose_shard(&self, _placement: &Placement<'_>) -> Option<usize> {
        None
    }

    /// The connection is moving to `new_shard` (ms_handle_shard_change):
    /// called on the shard it leaves; every call after comes from the new
    /// one. `is_accept_or_connect`: a placement at accept or connect (else
    /// a move asked by `Connection::move_to_shard`).
    fn ms_handle_shard_change(
        &self,
        _conn: &Connection,
        _new_shard: usize,
        _is_accept_or_connect: bool,
    ) {
    }

    /// Our connection became READY (ms_handle_connect); `prev_shard`: where
    /// it ran before it last moved (its shard, if it did not).
    fn ms_handle_connect(&self, _conn: &Connection, _prev_shard: usize) {}

    /// An accepted connection became READY (ms_handle_accept), on its
    /// shard; `prev_shard`: where it was accepted or ran before;
    /// `is_replace`: it replaced our lossy connection to the same peer.
    fn ms_handle_accept(&self, _conn: &Connection, _prev_shard: usize, _is_replace: bool) {}

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
