//! A dispatcher that records what it hears (and may echo each message),
//! for runtime tests: each event on a channel, and a log to poll.
#![allow(dead_code)] // each test binary uses what it needs

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Message};
use msgr_protocol::ProtocolError;
use tokio::sync::mpsc;

/// A dispatcher's event, as sent on the recorder's channel (faults only go
/// to the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Msg(u64),
    Connect,
    Accept,
    Reset,
    RemoteReset,
    Refused,
}

/// What a recorder heard, summed up.
#[derive(Default)]
pub struct Log {
    /// The tids of the messages dispatched, in order.
    pub tids: Vec<u64>,
    pub connects: u32,
    pub accepts: u32,
    /// ms_handle_reset calls.
    pub resets: u32,
    /// ms_handle_remote_reset calls.
    pub remote_resets: u32,
    pub faults: Vec<ProtocolError>,
}

/// Records every event; when `echo`, answers each message with an empty
/// reply (type 43) of its tid.
pub struct Recorder {
    tx: mpsc::UnboundedSender<Ev>,
    log: Arc<Mutex<Log>>,
    echo: bool,
}

impl Recorder {
    /// A recorder, its channel of events and its log.
    pub fn new(echo: bool) -> (Arc<Recorder>, mpsc::UnboundedReceiver<Ev>, Arc<Mutex<Log>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let r = Recorder::sending(tx, echo);
        let log = r.log.clone();
        (r, rx, log)
    }

    /// A recorder sending its events to `tx`.
    pub fn sending(tx: mpsc::UnboundedSender<Ev>, echo: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            tx,
            log: Arc::default(),
            echo,
        })
    }

    /// Its log.
    pub fn log(&self) -> Arc<Mutex<Log>> {
        self.log.clone()
    }

    fn note(&self, ev: Ev, sum: impl FnOnce(&mut Log)) {
        sum(&mut self.log.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = self.tx.send(ev);
    }
}

impl Dispatcher for Recorder {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let tid = msg.tid;
        self.note(Ev::Msg(tid), |l| l.tids.push(tid));
        if self.echo {
            let mut reply = Message::new(43, Bytes::new());
            reply.tid = tid;
            conn.send_nowait(reply);
        }
    }
    fn ms_handle_connect(&self, _: &Connection, _prev_shard: usize) {
        self.note(Ev::Connect, |l| l.connects += 1);
    }
    fn ms_handle_accept(&self, _: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.note(Ev::Accept, |l| l.accepts += 1);
    }
    fn ms_handle_reset(&self, _: &Connection) {
        self.note(Ev::Reset, |l| l.resets += 1);
    }
    fn ms_handle_remote_reset(&self, _: &Connection) {
        self.note(Ev::RemoteReset, |l| l.remote_resets += 1);
    }
    fn ms_handle_refused(&self, _: &Connection) {
        let _ = self.tx.send(Ev::Refused);
    }
    fn ms_handle_fault(&self, _: &Connection, e: &ProtocolError) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .faults
            .push(e.clone());
    }
}
