//! The client's watch and notify tables, kept in the driver's shared state
//! (`shared.rs`) and worked by `watch.rs`.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::objecter::linger::{Lingers, WatchEvent};

/// The watches' and notifies' state in the client.
#[derive(Default)]
pub(crate) struct WatchState {
    pub(crate) lingers: Mutex<Lingers>,
    /// Each watch's events.
    pub(crate) watches: Mutex<HashMap<u64, mpsc::UnboundedSender<WatchEvent>>>,
    /// Each notify's end: its return code and replies.
    pub(crate) notifies: Mutex<HashMap<u64, oneshot::Sender<(i32, Bytes)>>>,
}
