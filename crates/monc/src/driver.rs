//! The monitor client's driver: carries what the messenger reports into
//! the sans-IO [`MonCore`], ticks its clock, carries out its transmits on
//! the messenger, and wakes whoever waits on it. It decides nothing.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use msgr_encoding::EntityType;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_protocol::ProtocolError;
use msgr_transport::Transport;
use tokio::sync::Notify;

use crate::core::{CommandReply, ConnId, MonCore, Transmit};
use crate::error::MonError;

/// How often the core is given the time.
const TICK: Duration = Duration::from_secs(1);

/// What the client, its dispatcher and its tick share.
pub(crate) struct Shared<T: Transport> {
    core: Mutex<MonCore>,
    /// The messenger's connection for each of the core's. Held while the
    /// core's transmits are carried out, so that they go in the order it
    /// queued them (a candidate dialled before its first message) and a
    /// report about a connection just dialled waits for it to be listed.
    conns: Mutex<Vec<(ConnId, Connection)>>,
    /// Set once, right after the messenger is made (it needs our
    /// dispatcher first).
    messenger: OnceLock<Messenger<T>>,
    changed: Notify,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: Transport> Shared<T> {
    pub fn new(core: MonCore) -> Shared<T> {
        Shared {
            core: Mutex::new(core),
            conns: Mutex::new(Vec::new()),
            messenger: OnceLock::new(),
            changed: Notify::new(),
        }
    }

    pub fn set_messenger(&self, messenger: Messenger<T>) {
        let _ = self.messenger.set(messenger);
    }

    pub fn core(&self) -> MutexGuard<'_, MonCore> {
        lock(&self.core)
    }

    /// Runs `f` on the core, then carries out what it queued and wakes
    /// the waiters.
    pub fn with<R>(&self, f: impl FnOnce(&mut MonCore) -> R) -> R {
        let r = f(&mut self.core());
        self.flush();
        r
    }

    /// The messenger's connection of the core's `id`.
    pub fn conn(&self, id: ConnId) -> Option<Connection> {
        lock(&self.conns)
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, c)| c.clone())
    }

    /// The core's name for `conn` (the newest, if the messenger handed the
    /// same connection out twice).
    fn id_of(&self, conn: &Connection) -> Option<ConnId> {
        lock(&self.conns)
            .iter()
            .rev()
            .find(|(_, c)| c == conn)
            .map(|(i, _)| *i)
    }

    /// Carries out the core's transmits and wakes the waiters.
    fn flush(&self) {
        {
            let mut conns = lock(&self.conns);
            loop {
                let next = self.core().poll_transmit();
                let Some(t) = next else {
                    break;
                };
                let find = |conns: &[(ConnId, Connection)], id: ConnId| {
                    conns.iter().find(|(i, _)| *i == id).map(|(_, c)| c.clone())
                };
                match t {
                    Transmit::Connect { conn, addrs } => {
                        if let Some(m) = self.messenger.get() {
                            conns.push((conn, m.connect(&addrs, EntityType::MON)));
                        }
                    }
                    Transmit::Send { conn, msg } => {
                        if let Some(c) = find(&conns, conn) {
                            c.send_nowait(msg.to_message(c.features()));
                        }
                    }
                    Transmit::Keepalive { conn } => {
                        if let Some(c) = find(&conns, conn) {
                            c.send_keepalive();
                        }
                    }
                    Transmit::MarkDown { conn } => {
                        if let Some(at) = conns.iter().position(|(i, _)| *i == conn) {
                            let (_, c) = conns.swap_remove(at);
                            c.mark_down();
                        }
                    }
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Forgets the connections the messenger reset (the core did too).
    fn forget(&self, conn: &Connection) {
        lock(&self.conns).retain(|(_, c)| c != conn);
    }

    /// Waits until `check` finds what it looks for in the core (`Some`),
    /// looking again whenever the core changed, or until `deadline`
    /// (`None`).
    pub(crate) async fn wait_for<R>(
        &self,
        deadline: Instant,
        mut check: impl FnMut(&mut MonCore) -> Option<R>,
    ) -> Option<R> {
        loop {
            let changed = self.changed.notified();
            if let Some(r) = check(&mut self.core()) {
                return Some(r);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let _ = msgr_uring::rt::timeout(left, changed).await;
        }
    }

    /// Waits until a session is up and a monmap arrived.
    pub async fn wait_ready(&self, deadline: Instant) -> Result<(), MonError> {
        match self.wait_for(deadline, |core| core.ready()).await {
            Some(r) => r,
            None => Err(self.core().unreachable()),
        }
    }

    /// Waits until the OSD map is at `epoch` or newer, asking for it (once
    /// per session) when it is not.
    pub async fn wait_osdmap(
        &self,
        epoch: u32,
        deadline: Instant,
    ) -> Result<Arc<msgr_osdmap::OsdMap>, MonError> {
        let mut asked: Option<ConnId> = None;
        loop {
            let changed = self.changed.notified();
            let map = self.core().osdmap().cloned();
            if let Some(m) = map.filter(|m| m.epoch >= epoch.max(1)) {
                return Ok(m);
            }
            let active = self.core().active();
            if active.is_some() && active != asked {
                asked = self.with(|core| core.request_osdmap());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let core = self.core();
                let why = core.osdmap_error().or_else(|| core.last_error());
                return Err(MonError::Timeout(format!(
                    "no osdmap of epoch {epoch} or newer{}",
                    why.map(|w| format!(" (last problem: {w})"))
                        .unwrap_or_default()
                )));
            }
            let _ = msgr_uring::rt::timeout(left, changed).await;
        }
    }

    /// Waits until `deadline` for the answer `take` finds, a request's by
    /// its tid; if none came (or the client shut down first), `forget`s
    /// the request and says what was `waited` for, with the last problem.
    pub(crate) async fn wait_answer<R>(
        &self,
        deadline: Instant,
        mut take: impl FnMut(&mut MonCore) -> Option<R>,
        forget: impl FnOnce(&mut MonCore),
        waited: impl FnOnce() -> String,
    ) -> Result<R, MonError> {
        let answer = self.wait_for(deadline, |core| match take(core) {
            Some(reply) => Some(Ok(reply)),
            None if core.is_shut_down() => Some(Err(MonError::Shutdown)),
            None => None,
        });
        if let Some(r) = answer.await {
            return r;
        }
        let mut core = self.core();
        forget(&mut core);
        Err(MonError::Timeout(format!(
            "{}{}",
            waited(),
            core.last_error()
                .map(|w| format!(" (last problem: {w})"))
                .unwrap_or_default()
        )))
    }

    /// Waits for the reply to command `tid` until `deadline`.
    pub async fn wait_command(
        &self,
        tid: u64,
        deadline: Instant,
    ) -> Result<CommandReply, MonError> {
        self.wait_answer(
            deadline,
            |core| core.take_command_reply(tid),
            |core| core.forget_command(tid),
            || format!("no reply to command {tid}"),
        )
        .await
    }

    /// Waits for pool operation `tid` to be answered and its epoch's map
    /// to arrive, until `deadline` (then it is forgotten).
    pub async fn wait_pool_op(
        &self,
        tid: u64,
        deadline: Instant,
    ) -> Result<crate::core::PoolOpReply, MonError> {
        self.wait_answer(
            deadline,
            |core| core.take_pool_op_reply(tid),
            |core| core.forget_pool_op(tid),
            || format!("no reply to pool operation {tid}, or no OSD map of its epoch"),
        )
        .await
    }

    /// Waits for the answer to version request `handle` until `deadline`
    /// (`None`: none by then, or shut down).
    pub async fn wait_version(&self, handle: u64, deadline: Instant) -> Option<(u64, u64)> {
        let answer = self.wait_for(deadline, |core| match core.take_version(handle) {
            Some(v) => Some(Some(v)),
            None if core.is_shut_down() => Some(None),
            None => None,
        });
        let answer = answer.await.flatten();
        if answer.is_none() {
            self.core().forget_version(handle);
        }
        answer
    }

    pub fn shut_down(&self) {
        self.core().shut_down();
        self.changed.notify_waiters();
    }
}

/// The messenger's reports, handed to the core.
pub(crate) struct Dispatch<T: Transport>(pub Arc<Shared<T>>);

impl<T: Transport> Dispatcher for Dispatch<T> {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        let Some(id) = self.0.id_of(conn) else {
            return;
        };
        let now = Instant::now();
        let work = self
            .0
            .with(|core| core.handle_message(id, msg.into_message(), now));
        // An OSD map is decoded and applied without the core's lock.
        if let Some(work) = work {
            let done = work.run();
            self.0.with(|core| core.finish_osd_map(done));
        }
    }

    fn ms_handle_connect(&self, conn: &Connection, _prev_shard: usize) {
        if let Some(id) = self.0.id_of(conn) {
            let now = Instant::now();
            self.0.with(|core| core.handle_connect(id, now));
        }
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        if let Some(id) = self.0.id_of(conn) {
            self.0.forget(conn);
            self.0.with(|core| core.handle_reset(id));
        }
    }

    fn ms_handle_fault(&self, conn: &Connection, error: &ProtocolError) {
        if let Some(id) = self.0.id_of(conn) {
            self.0.with(|core| core.handle_fault(id, error));
        }
    }

    fn ms_handle_refused(&self, conn: &Connection) {
        if let Some(id) = self.0.id_of(conn) {
            self.0.with(|core| core.handle_refused(id));
        }
    }
}

/// Gives the core the time every second (hunting, keepalive, ticket
/// renewal, resends), with the session's newest keepalive ack.
pub(crate) async fn tick<T: Transport>(shared: Arc<Shared<T>>) {
    loop {
        let now = Instant::now();
        let active = shared.core().active();
        let ack = active.and_then(|id| shared.conn(id).map(|c| (id, c.last_keepalive_ack())));
        let stop = shared.with(|core| {
            if let Some((id, stamp)) = ack {
                core.handle_keepalive_ack(id, stamp, now);
            }
            core.handle_timeout(now);
            core.is_shut_down()
        });
        if stop {
            return;
        }
        msgr_uring::rt::sleep(TICK).await;
    }
}
