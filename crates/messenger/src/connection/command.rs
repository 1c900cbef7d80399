//! What a handle, or another connection, asks of a connection's driver:
//! the driver's command queue carries these (connection/inbox.rs). Among
//! them are the messages two connections exchange to resolve an accepted
//! ident (what an acceptor asks, the verdict, the promise of a socket);
//! the rules that decide them live with the driver (crate::driver::ident).

use msgr_encoding::UTime;
use msgr_protocol::registry::{Ask, PeerKey};
use msgr_protocol::{Decision, Message};
use tokio::sync::oneshot;

use super::Connection;

/// What a handle (or another connection) asks of a connection's driver.
///
/// Small (a message is boxed): queued by value (connection/inbox.rs).
pub(crate) enum Command {
    /// A message; `counted`: in `Shared::in_flight` until the driver
    /// takes it (sent by `send`, which waits on that count); `queued`:
    /// when it was queued, for one message in
    /// [`crate::counters::SAMPLE_EVERY`] (none: not sampled), for `msgr_send_messages_queue_lat`.
    Send {
        msg: Box<Message>,
        counted: bool,
        queued: crate::counters::Stamp,
    },
    Keepalive(UTime),
    MarkDown,
    MarkDisposable,
    /// Close the socket of this idle connection (Options::max_connections).
    Evict,
    /// Move to this shard (Connection::move_to_shard).
    MoveTo(usize),
    #[cfg(feature = "interceptor")]
    Unblock,
    /// An accepting connection asks this one, registered for its peer, to
    /// decide on its ident (crate::driver::ident).
    Ask(Box<Asking>),
    /// The socket a Reuse promised (a `driver::ident::Adoption<T>`: typed
    /// by the transport, which handles are not).
    Adopt(Box<dyn std::any::Any + Send>),
    /// The socket a Reuse promised will not come.
    AdoptCancelled,
}

/// An ident, sent to the connection registered for its peer.
pub(crate) struct Asking {
    pub ask: Ask,
    pub key: PeerKey,
    /// The asker, registered in its place if the decision says so.
    pub from: Connection,
    pub reply: oneshot::Sender<Verdict>,
}

/// The answer to an [`Asking`].
pub(crate) enum Verdict {
    /// Another connection holds the peer now: look again.
    Retry,
    /// The decision, carried out on the existing connection; with a
    /// promise when the accepted socket is to move into it.
    Decided {
        decision: Decision,
        promise: Option<Promise>,
    },
}

/// An existing connection waits for the socket a Reuse gave it.
pub(crate) struct Promise {
    to: Option<Connection>,
}

impl Promise {
    /// A promise to send `to` the accepted socket.
    pub fn to(to: Connection) -> Promise {
        Promise { to: Some(to) }
    }

    /// Sends the promised socket (a `driver::ident::Adoption<T>`).
    pub fn keep(mut self, adoption: Box<dyn std::any::Any + Send>) {
        if let Some(to) = self.to.take() {
            to.command(Command::Adopt(adoption));
        }
    }
}

/// A promise dropped unkept (the acceptor closed first) tells the
/// existing connection to stop waiting.
impl Drop for Promise {
    fn drop(&mut self) {
        if let Some(to) = self.to.take() {
            to.command(Command::AdoptCancelled);
        }
    }
}
