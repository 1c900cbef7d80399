//! Two messengers for runtime tests: a server bound to an address and a
//! client connected to it, each dispatching to a recorder
//! (support/recorder.rs, which the test includes as `recorder`).
#![allow(dead_code)] // each test binary uses what it needs

use std::sync::{Arc, Mutex};

use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messenger::{Connection, Messenger, Options};
use msgr_transport::Transport;
use tokio::sync::mpsc;

use super::recorder::{Ev, Log, Recorder};

pub struct Pair<T: Transport> {
    pub server: Messenger<T>,
    pub client: Messenger<T>,
    pub server_addrs: EntityAddrvec,
    /// What each side's dispatcher heard, as events and as a log.
    pub server_rx: mpsc::UnboundedReceiver<Ev>,
    pub client_rx: mpsc::UnboundedReceiver<Ev>,
    pub server_log: Arc<Mutex<Log>>,
    pub client_log: Arc<Mutex<Log>>,
    /// The client's connection to the server (as an OSD).
    pub conn: Connection,
}

impl<T: Transport> Pair<T> {
    /// A server made with `server` and bound to `bind` (echoing each
    /// message when `echo`), and a client made with `client`, connected to
    /// it.
    pub async fn start(t: T, bind: &str, client: Options, server: Options, echo: bool) -> Pair<T> {
        let (s_rec, server_rx, server_log) = Recorder::new(echo);
        let (c_rec, client_rx, client_log) = Recorder::new(false);
        let s = Messenger::new(t.clone(), server, s_rec);
        let server_addrs = s
            .bind(&bind.parse::<EntityAddrvec>().unwrap())
            .await
            .unwrap();
        let c = Messenger::new(t, client, c_rec);
        let conn = c.connect(&server_addrs, EntityType::OSD);
        Pair {
            server: s,
            client: c,
            server_addrs,
            server_rx,
            client_rx,
            server_log,
            client_log,
            conn,
        }
    }
}
