//! Ways to take what a messenger delivers besides one [`Dispatcher`]:
//! - [`Chain`]: several dispatchers in turn, as Ceph's messenger keeps a
//!   list (`add_dispatcher_head/tail`): each message goes to the first
//!   that takes it ([`ChainLink::ms_take`]), every event to all of them;
//! - [`events`]: a stream of [`DispatchEvent`]s to `.recv().await`, for
//!   code that would rather await than be called back.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::{Connection, Dispatcher, IncomingMessage};

/// A dispatcher that may leave a message to the next in a [`Chain`].
pub trait ChainLink: Send + Sync + 'static {
    /// Takes `msg` (None), or gives it back for the next (Some), as Ceph's
    /// `ms_dispatch` returns whether it handled the message.
    fn ms_take(&self, conn: &Connection, msg: IncomingMessage) -> Option<IncomingMessage>;

    /// The connection events every link hears (see [`Dispatcher`]): a
    /// session we opened is READY.
    fn ms_handle_connect(&self, _conn: &Connection) {}
    /// A session we accepted is READY.
    fn ms_handle_accept(&self, _conn: &Connection) {}
    /// A connection closed by fault; what was queued is lost.
    fn ms_handle_reset(&self, _conn: &Connection) {}
    /// The peer lost our session and we reset ours.
    fn ms_handle_remote_reset(&self, _conn: &Connection) {}
    /// A connect was refused.
    fn ms_handle_refused(&self, _conn: &Connection) {}
}

/// Dispatchers in turn: a message to the first that takes it (one no link
/// takes is dropped, its throttle budget returned); events to every link.
#[derive(Default)]
pub struct Chain {
    links: Vec<Arc<dyn ChainLink>>,
}

impl Chain {
    /// A chain with no links.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Adds `link` last (add_dispatcher_tail).
    pub fn then(mut self, link: Arc<dyn ChainLink>) -> Chain {
        self.links.push(link);
        self
    }
}

impl Dispatcher for Chain {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let mut msg = Some(msg);
        for link in &self.links {
            let Some(m) = msg.take() else {
                return;
            };
            msg = link.ms_take(conn, m);
        }
        if let Some(m) = msg {
            tracing::debug!(target: "msgr", msg_type = m.msg_type, tid = m.tid, "no dispatcher took the message");
        }
    }

    fn ms_handle_connect(&self, conn: &Connection, _prev_shard: usize) {
        self.links.iter().for_each(|l| l.ms_handle_connect(conn));
    }

    fn ms_handle_accept(&self, conn: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.links.iter().for_each(|l| l.ms_handle_accept(conn));
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        self.links.iter().for_each(|l| l.ms_handle_reset(conn));
    }

    fn ms_handle_remote_reset(&self, conn: &Connection) {
        self.links
            .iter()
            .for_each(|l| l.ms_handle_remote_reset(conn));
    }

    fn ms_handle_refused(&self, conn: &Connection) {
        self.links.iter().for_each(|l| l.ms_handle_refused(conn));
    }
}

/// What a messenger delivers, as a stream ([`events`]).
pub enum DispatchEvent {
    /// A message, holding its throttle budget until dropped.
    Message(Connection, IncomingMessage),
    /// A session we opened is READY (ms_handle_connect).
    Connected(Connection),
    /// A session we accepted is READY (ms_handle_accept).
    Accepted(Connection),
    /// A connection closed by fault (ms_handle_reset).
    Reset(Connection),
    /// The peer lost our session and we reset ours (ms_handle_remote_reset).
    RemoteReset(Connection),
    /// A connect was refused (ms_handle_refused).
    Refused(Connection),
}

/// A dispatcher that sends everything to the returned receiver, in the
/// order each connection delivers it. Unbounded: what a receiver has not
/// taken yet still holds its messages' throttle budget, so a receiver
/// that falls behind stops the messenger reading, as a slow dispatcher
/// would.
pub fn events() -> (Arc<dyn Dispatcher>, mpsc::UnboundedReceiver<DispatchEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Events { tx }), rx)
}

struct Events {
    tx: mpsc::UnboundedSender<DispatchEvent>,
}

impl Events {
    fn send(&self, e: DispatchEvent) {
        // A receiver gone: nobody listens; the event (and its budget) goes.
        let _ = self.tx.send(e);
    }
}

impl Dispatcher for Events {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.send(DispatchEvent::Message(conn.clone(), msg));
    }

    fn ms_handle_connect(&self, conn: &Connection, _prev_shard: usize) {
        self.send(DispatchEvent::Connected(conn.clone()));
    }

    fn ms_handle_accept(&self, conn: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.send(DispatchEvent::Accepted(conn.clone()));
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        self.send(DispatchEvent::Reset(conn.clone()));
    }

    fn ms_handle_remote_reset(&self, conn: &Connection) {
        self.send(DispatchEvent::RemoteReset(conn.clone()));
    }

    fn ms_handle_refused(&self, conn: &Connection) {
        self.send(DispatchEvent::Refused(conn.clone()));
    }
}
