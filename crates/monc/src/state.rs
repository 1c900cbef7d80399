//! The monitor client's state, its dispatcher, and its tick (hunting,
//! keepalive, ticket renewal).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::method;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_messages::*;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_protocol::ProtocolError;
use msgr_transport::tcp::Tcp;
use tokio::sync::Notify;

use crate::{CommandReply, MonAuth, MonClientConfig, MonError};

/// `mon_client_ping_interval` and `mon_client_ping_timeout`.
const PING_INTERVAL: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(30);
const TICK: Duration = Duration::from_secs(1);

struct PendingCommand {
    cmd: Vec<String>,
    input: Bytes,
    reply: Option<CommandReply>,
}

#[derive(Default)]
struct Inner {
    monmap: Option<MonMap>,
    mon_config: BTreeMap<String, String>,
    active: Option<Connection>,
    /// Candidates of the current hunt, and when it started.
    pending: Vec<Connection>,
    hunt_started: Option<Instant>,
    /// Index of the next monitor to try.
    next_mon: usize,
    /// Why the most recent candidate failed.
    last_error: Option<String>,
    /// Why each monitor tried last failed, by its address (what a hunt
    /// that finds none reports).
    problems: Vec<(EntityAddrvec, String)>,
    /// Candidates refused for their credentials in a row.
    auth_refusals: usize,
    tried: usize,
    last_tid: u64,
    commands: BTreeMap<u64, PendingCommand>,
    osdmap_epoch: u32,
    /// The OSD map, kept current from the osdmap subscription.
    osdmap: msgr_osdmap::MapFollower,
    /// Why the last MOSDMap could not be used.
    osdmap_error: Option<String>,
    last_version_handle: u64,
    versions: BTreeMap<u64, Option<(u64, u64)>>,
    last_keepalive: Option<Instant>,
    /// The newest keepalive ack stamp seen, and when it was first seen.
    last_ack: Option<(Option<msgr_encoding::UTime>, Instant)>,
    ticket_request_sent: Option<Instant>,
    shut_down: bool,
    /// msgr1 candidates still authenticating with MAuth (crate::v1), and
    /// where each stands (taken while a reply is handled).
    v1: Vec<(Connection, Option<crate::v1::Auth>)>,
}

impl Inner {
    /// Monitor `addr` failed us for `why` (the last reason kept per
    /// monitor).
    fn problem(&mut self, addr: EntityAddrvec, why: String) {
        self.last_error = Some(format!("mon {addr}: {why}"));
        match self.problems.iter_mut().find(|(a, _)| *a == addr) {
            Some(p) => p.1 = why,
            None => self.problems.push((addr, why)),
        }
    }
}

pub(crate) struct State {
    cfg: MonClientConfig,
    mons: Vec<EntityAddrvec>,
    inner: Mutex<Inner>,
    changed: Notify,
}

impl State {
    pub fn new(cfg: MonClientConfig, mons: Vec<EntityAddrvec>) -> State {
        State {
            cfg,
            mons,
            inner: Mutex::new(Inner::default()),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn monmap(&self) -> Option<MonMap> {
        self.lock().monmap.clone()
    }

    pub fn mon_config(&self) -> BTreeMap<String, String> {
        self.lock().mon_config.clone()
    }

    pub fn osdmap_epoch(&self) -> u32 {
        self.lock().osdmap_epoch
    }

    pub fn osdmap(&self) -> Option<Arc<msgr_osdmap::OsdMap>> {
        self.lock().osdmap.map().cloned()
    }

    pub fn osdmap_error(&self) -> Option<String> {
        self.lock().osdmap_error.clone()
    }

    /// The flags of the configured osdmap subscription, if any.
    fn osdmap_flags(&self) -> Option<u8> {
        self.cfg
            .subscribe
            .iter()
            .find(|(name, _)| name == "osdmap")
            .map(|(_, f)| *f)
    }

    /// Asks the monitor for osdmaps from `from` on (0: the newest, whole):
    /// as the configured subscription does if there is one, else once.
    pub fn request_osdmap(&self, c: &Connection, from: u32) {
        let flags = self.osdmap_flags().unwrap_or(SUBSCRIBE_ONETIME);
        let mut what = BTreeMap::new();
        what.insert(
            "osdmap".to_string(),
            SubscribeItem {
                start: from.into(),
                flags,
            },
        );
        let sub = MMonSubscribe {
            what,
            hostname: self.cfg.hostname.clone(),
        };
        c.send_nowait(sub.to_message(c.features()));
    }

    /// Waits until the OSD map is at `epoch` or newer, asking for it when
    /// it is not.
    pub async fn wait_osdmap(
        &self,
        epoch: u32,
        deadline: Instant,
    ) -> Result<Arc<msgr_osdmap::OsdMap>, MonError> {
        let mut asked: Option<Connection> = None;
        loop {
            let changed = self.changed.notified();
            if let Some(m) = self.osdmap().filter(|m| m.epoch >= epoch.max(1)) {
                return Ok(m);
            }
            if let Some(c) = self.active().filter(|c| asked.as_ref() != Some(c)) {
                let have = self.lock().osdmap.epoch();
                self.request_osdmap(&c, if have == 0 { 0 } else { have.saturating_add(1) });
                asked = Some(c);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let why = self
                    .osdmap_error()
                    .or_else(|| self.lock().last_error.clone());
                return Err(MonError::Timeout(format!(
                    "no osdmap of epoch {epoch} or newer{}",
                    why.map(|w| format!(" (last problem: {w})"))
                        .unwrap_or_default()
                )));
            }
            let _ = tokio::time::timeout(left, changed).await;
        }
    }

    pub fn active(&self) -> Option<Connection> {
        self.lock().active.clone()
    }

    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.changed.notify_waiters();
    }

    /// Waits until a session is up and a monmap arrived.
    pub async fn wait_ready(&self, deadline: Instant) -> Result<(), MonError> {
        loop {
            let changed = self.changed.notified();
            {
                let i = self.lock();
                if i.active.is_some() && i.monmap.is_some() {
                    return Ok(());
                }
                if i.shut_down {
                    return Err(MonError::Shutdown);
                }
                // Every monitor tried refused us: credentials, not luck.
                if i.auth_refusals > 0 && i.auth_refusals >= self.mons.len().min(i.tried.max(1)) {
                    return Err(MonError::AuthFailed(
                        i.last_error.clone().unwrap_or_default(),
                    ));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let i = self.lock();
                let tried = self
                    .mons
                    .iter()
                    .map(|m| {
                        let why = i.problems.iter().find(|(a, _)| a == m);
                        let why = why.map_or("no answer", |(_, w)| w.as_str());
                        (m.clone(), why.to_string())
                    })
                    .collect();
                return Err(MonError::Unreachable {
                    tried,
                    after: self.cfg.connect_timeout,
                });
            }
            let _ = tokio::time::timeout(left, changed).await;
        }
    }

    pub fn hunt_interval(&self) -> Duration {
        self.cfg.hunt_interval
    }

    pub fn add_version_request(&self) -> u64 {
        let mut i = self.lock();
        let h = next_id(&mut i.last_version_handle);
        i.versions.insert(h, None);
        h
    }

    /// Waits for the answer to version request `handle` until `deadline`.
    pub async fn wait_version(&self, handle: u64, deadline: Instant) -> Option<(u64, u64)> {
        loop {
            let changed = self.changed.notified();
            {
                let mut i = self.lock();
                if let Some(Some(v)) = i.versions.get(&handle) {
                    let v = *v;
                    i.versions.remove(&handle);
                    return Some(v);
                }
                if i.shut_down {
                    return None;
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let _ = tokio::time::timeout(left, changed).await;
        }
    }

    /// Drops the active session (the tick then hunts again).
    pub fn drop_session(&self) {
        let active = {
            let mut i = self.lock();
            i.hunt_started = None;
            i.active.take()
        };
        if let Some(c) = active {
            c.mark_down();
        }
        self.changed.notify_waiters();
    }

    pub fn add_command(&self, cmd: Vec<String>, input: Bytes) -> u64 {
        let mut i = self.lock();
        let tid = next_id(&mut i.last_tid);
        i.commands.insert(
            tid,
            PendingCommand {
                cmd,
                input,
                reply: None,
            },
        );
        tid
    }

    pub fn command(&self, tid: u64) -> Option<(Vec<String>, Bytes)> {
        self.lock()
            .commands
            .get(&tid)
            .map(|c| (c.cmd.clone(), c.input.clone()))
    }

    pub async fn wait_command(
        &self,
        tid: u64,
        deadline: Instant,
    ) -> Result<CommandReply, MonError> {
        loop {
            let changed = self.changed.notified();
            {
                let mut i = self.lock();
                if i.commands.get(&tid).is_some_and(|c| c.reply.is_some()) {
                    let c = i.commands.remove(&tid).expect("present");
                    return Ok(c.reply.expect("present"));
                }
                if i.shut_down {
                    return Err(MonError::Shutdown);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let why = self.lock().last_error.clone();
                self.lock().commands.remove(&tid);
                return Err(MonError::Timeout(format!(
                    "no reply to command {tid}{}",
                    why.map(|w| format!(" (last problem: {w})"))
                        .unwrap_or_default()
                )));
            }
            let _ = tokio::time::timeout(left, changed).await;
        }
    }

    /// Sends `MMonGetMap` and the subscriptions on a new candidate.
    fn greet(&self, c: &Connection) {
        let f = c.features();
        c.send_nowait(MMonGetMap.to_message(f));
        let mut what = BTreeMap::new();
        let monmap_start = self
            .lock()
            .monmap
            .as_ref()
            // A u32 epoch widened to u64: never saturates.
            .map_or(0, |m| u64::from(m.epoch).saturating_add(1));
        what.insert(
            "monmap".to_string(),
            SubscribeItem {
                start: monmap_start,
                flags: 0,
            },
        );
        what.insert("config".to_string(), SubscribeItem { start: 0, flags: 0 });
        // The osdmap from the epoch after ours: incrementals, not a new
        // whole map, on a new session.
        let osdmap_next = match self.lock().osdmap.epoch() {
            0 => 0,
            e => u64::from(e).saturating_add(1),
        };
        for (name, flags) in &self.cfg.subscribe {
            let start = if name == "osdmap" { osdmap_next } else { 0 };
            what.insert(
                name.clone(),
                SubscribeItem {
                    start,
                    flags: *flags,
                },
            );
        }
        let sub = MMonSubscribe {
            what,
            hostname: self.cfg.hostname.clone(),
        };
        c.send_nowait(sub.to_message(f));
    }

    /// A candidate's session is ready (over msgr1: authenticated too): the
    /// first one wins.
    fn on_connect(&self, c: &Connection) {
        let (losers, resend) = {
            let mut i = self.lock();
            if i.active.is_some() || !i.pending.contains(c) || i.v1.iter().any(|(v, _)| v == c) {
                return;
            }
            i.active = Some(c.clone());
            i.auth_refusals = 0;
            i.last_keepalive = Some(Instant::now());
            i.last_ack = Some((c.last_keepalive_ack(), Instant::now()));
            let losers: Vec<Connection> = i.pending.drain(..).filter(|p| p != c).collect();
            let resend: Vec<u64> = i
                .commands
                .iter()
                .filter(|(_, p)| p.reply.is_none())
                .map(|(t, _)| *t)
                .collect();
            (losers, resend)
        };
        for l in losers {
            l.mark_down();
        }
        let fsid = self.monmap().map(|m| m.fsid).unwrap_or_default();
        for tid in resend {
            if let Some((cmd, input)) = self.command(tid) {
                let m = MMonCommand {
                    tid,
                    fsid,
                    cmd,
                    input,
                };
                c.send_nowait(m.to_message(c.features()));
            }
        }
        self.changed.notify_waiters();
    }

    /// A candidate faulted: an authentication refusal ends it (the
    /// messenger would retry it forever), anything else is remembered.
    fn on_fault(&self, c: &Connection, f: &ProtocolError) {
        let refused = matches!(
            f,
            ProtocolError::Auth(
                msgr_auth::AuthError::Denied(_)
                    | msgr_auth::AuthError::NoKey(_)
                    | msgr_auth::AuthError::NoMethodLeft
                    | msgr_auth::AuthError::NoCommonMode
                    | msgr_auth::AuthError::ModeRefused { .. }
            )
        );
        {
            let mut i = self.lock();
            i.problem(c.peer_addrs(), f.to_string());
            if refused && i.pending.contains(c) {
                // A count compared with the number of monitors tried:
                // saturating is harmless.
                i.auth_refusals = i.auth_refusals.saturating_add(1);
                i.pending.retain(|p| p != c);
            }
        }
        if refused {
            c.mark_down();
        }
        self.changed.notify_waiters();
    }

    fn on_reset(&self, c: &Connection) {
        let mut i = self.lock();
        if i.active.as_ref() == Some(c) {
            i.active = None;
            i.hunt_started = None;
        }
        i.pending.retain(|p| p != c);
        i.v1.retain(|(v, _)| v != c);
        drop(i);
        self.changed.notify_waiters();
    }

    fn on_message(&self, c: &Connection, m: msgr_protocol::Message) {
        match m.msg_type {
            MSG_MON_MAP => {
                let Ok(mm) = MMonMap::from_message(&m) else {
                    return;
                };
                let Ok(map) = MonMap::decode(&mut msgr_encoding::Decoder::new(&mm.monmap)) else {
                    return;
                };
                self.lock().monmap = Some(map);
            }
            MSG_CONFIG => {
                if let Ok(cfg) = MConfig::from_message(&m) {
                    self.lock().mon_config = cfg.config;
                }
            }
            MSG_MON_COMMAND_ACK => {
                let Ok(ack) = MMonCommandAck::from_message(&m) else {
                    return;
                };
                let mut i = self.lock();
                // The ack completes the command of its tid, and only that
                // one. Ceph's MonClient takes tid 0 as the oldest pending
                // command (for monitors older than Firefly, which did not
                // echo tids); here a tid-0 ack completes nothing, since our
                // tids start at 1 and any monitor we speak to echoes them:
                // otherwise whoever can send us an ack could answer a
                // command it never saw.
                if let Some(p) = i.commands.get_mut(&ack.tid) {
                    p.reply = Some(CommandReply {
                        r: ack.r,
                        rs: ack.rs,
                        output: ack.output,
                    });
                }
            }
            MSG_AUTH_REPLY => {
                let Ok(r) = MAuthReply::from_message(&m) else {
                    return;
                };
                let at = {
                    let mut i = self.lock();
                    i.v1.iter_mut().find(|(v, _)| v == c).map(|(_, a)| a.take())
                };
                match at {
                    Some(Some(at)) => return self.on_v1_auth(c, at, &r),
                    // A reply while the last one is still being handled:
                    // not a ticket renewal, which only a session has.
                    Some(None) => return,
                    None => {}
                }
                self.lock().ticket_request_sent = None;
                if let MonAuth::Cephx(cx) = &self.cfg.auth {
                    if r.result < 0 {
                        self.lock().last_error =
                            Some(format!("ticket renewal refused: {}", r.result));
                    } else if let Err(e) = cx.handle_ticket_reply(&r.payload) {
                        self.lock().last_error = Some(format!("ticket renewal: {e}"));
                    }
                }
            }
            MSG_MON_GET_VERSION_REPLY => {
                if let Ok(r) = MMonGetVersionReply::from_message(&m) {
                    let mut i = self.lock();
                    if let Some(slot) = i.versions.get_mut(&r.handle) {
                        *slot = Some((r.version, r.oldest_version));
                    }
                }
            }
            MSG_OSD_MAP => {
                if let Ok(om) = MOSDMap::from_message(&m) {
                    self.on_osd_map(c, &om);
                }
            }
            _ => {}
        }
        let _ = c;
        self.changed.notify_waiters();
    }
}

impl State {
    /// A message from a monitor: dropped unless it is from our session or
    /// a candidate of the hunt (as MonClient::ms_dispatch drops them), and
    /// from an msgr1 candidate still authenticating unless it is its
    /// MAuthReply: until then the peer is nobody we know.
    pub(crate) fn dispatch(&self, conn: &Connection, m: msgr_protocol::Message) {
        {
            let mut i = self.lock();
            let ours = i.active.as_ref() == Some(conn) || i.pending.contains(conn);
            if !ours {
                return;
            }
            let authenticating = i.v1.iter().any(|(v, _)| v == conn);
            if authenticating && m.msg_type != MSG_AUTH_REPLY {
                let name = msgr_messages::message_type_name(m.msg_type)
                    .map_or_else(|| format!("message type {}", m.msg_type), str::to_string);
                i.problem(
                    conn.peer_addrs(),
                    format!(
                        "sent {name} before authenticating us (only MAuthReply is taken \
                         then): dropped"
                    ),
                );
                return;
            }
        }
        self.on_message(conn, m);
    }

    /// An MOSDMap: decoded and applied outside the state's lock, on a copy
    /// of the follower (a map is megabytes and its CRUSH map is checked:
    /// nobody else waits on the lock meanwhile), which replaces the kept
    /// one if it got further. Maps of an epoch are the same map whichever
    /// message brought them, so the furthest wins when two race.
    fn on_osd_map(&self, c: &Connection, om: &MOSDMap) {
        let mut follower = self.lock().osdmap.clone();
        let result = follower.handle(om);
        let want = {
            let mut i = self.lock();
            if follower.epoch() > i.osdmap.epoch() {
                i.osdmap = follower;
            }
            match result {
                Ok(f) => {
                    // What the monitors say they have, once their maps
                    // were taken.
                    i.osdmap_epoch = i.osdmap_epoch.max(om.newest_epoch());
                    f.want
                }
                Err(e) => {
                    i.osdmap_error = Some(e.to_string());
                    None
                }
            }
        };
        if let Some(from) = want {
            self.request_osdmap(c, from);
        }
    }

    /// A monitor's MAuthReply to an msgr1 candidate authenticating.
    fn on_v1_auth(&self, c: &Connection, at: crate::v1::Auth, r: &MAuthReply) {
        let epoch = self.monmap().map_or(0, |m| m.epoch);
        let step = crate::v1::on_reply(at, r, &self.cfg.auth, self.cfg.none_fallback, epoch);
        match step {
            Ok(crate::v1::Step::Send(m, next)) => {
                if let Some(slot) = self.lock().v1.iter_mut().find(|(v, _)| v == c) {
                    slot.1 = Some(next);
                }
                c.send_nowait(m.to_message(c.features()));
            }
            Ok(crate::v1::Step::Done) => {
                self.lock().v1.retain(|(v, _)| v != c);
                self.on_connect(c);
                self.greet(c);
            }
            Err(e) => {
                {
                    let mut i = self.lock();
                    i.problem(c.peer_addrs(), e.to_string());
                    i.auth_refusals = i.auth_refusals.saturating_add(1);
                    i.pending.retain(|p| p != c);
                    i.v1.retain(|(v, _)| v != c);
                }
                c.mark_down();
            }
        }
        self.changed.notify_waiters();
    }
}

/// Takes the next id of a counter that starts at 0 (ids start at 1).
#[allow(clippy::arithmetic_side_effects)]
fn next_id(last: &mut u64) -> u64 {
    // One id per local request: at a billion a second, u64 lasts over 500
    // years, so this cannot overflow.
    *last += 1;
    *last
}

pub(crate) struct Dispatch(pub Arc<State>);

impl Dispatcher for Dispatch {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.0.dispatch(conn, msg.into_message());
    }

    fn ms_handle_connect(&self, conn: &Connection, _prev_shard: usize) {
        self.0.on_connect(conn);
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        self.0.on_reset(conn);
    }

    fn ms_handle_fault(&self, conn: &Connection, error: &ProtocolError) {
        self.0.on_fault(conn, error);
    }

    fn ms_handle_refused(&self, conn: &Connection) {
        let s = &self.0;
        s.lock()
            .problem(conn.peer_addrs(), "connection refused".into());
        s.changed.notify_waiters();
    }
}

/// Hunts while there is no session, keeps the session alive, renews
/// tickets.
pub(crate) async fn tick(state: Arc<State>, messenger: Messenger<Tcp>) {
    loop {
        let now = Instant::now();
        let (hunt, ping, renew) = {
            let i = state.lock();
            if i.shut_down {
                return;
            }
            let hunt = i.active.is_none()
                && i.hunt_started.is_none_or(|t| {
                    now.duration_since(t) >= state.cfg.hunt_interval || i.pending.is_empty()
                });
            let ping = i.active.clone().filter(|_| {
                i.last_keepalive
                    .is_none_or(|t| now.duration_since(t) >= PING_INTERVAL)
            });
            let renew = match (&state.cfg.auth, &i.active) {
                (MonAuth::Cephx(cx), Some(c))
                    if i.ticket_request_sent
                        .is_none_or(|t| now.duration_since(t) > PING_TIMEOUT) =>
                {
                    let need = cx.need();
                    (need != 0).then(|| (c.clone(), cx.clone(), need))
                }
                _ => None,
            };
            (hunt, ping, renew)
        };
        if hunt {
            start_hunt(&state, &messenger);
        }
        if let Some(c) = ping {
            let stale = {
                let mut i = state.lock();
                let ack = c.last_keepalive_ack();
                let since = match i.last_ack {
                    Some((seen, at)) if seen == ack => at,
                    _ => {
                        i.last_ack = Some((ack, now));
                        now
                    }
                };
                now.duration_since(since) > PING_TIMEOUT
            };
            if stale {
                c.mark_down();
                state.on_reset(&c);
            } else {
                c.send_keepalive();
                state.lock().last_keepalive = Some(now);
            }
        }
        if let Some((c, cx, need)) = renew {
            if let Ok(payload) = cx.build_ticket_request(need) {
                let m = MAuth {
                    protocol: method::CEPHX,
                    payload,
                    monmap_epoch: state.monmap().map_or(0, |m| m.epoch),
                };
                c.send_nowait(m.to_message(c.features()));
                state.lock().ticket_request_sent = Some(now);
            }
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Drops the current candidates and tries the next batch.
fn start_hunt(state: &Arc<State>, messenger: &Messenger<Tcp>) {
    let batch: Vec<EntityAddrvec> = {
        let mut i = state.lock();
        for p in i.pending.drain(..) {
            p.mark_down();
        }
        i.v1.clear();
        let len = state.mons.len();
        let n = state.cfg.hunt_parallel.clamp(1, len);
        let start = i.next_mon;
        // `start < len` and `n <= len`, so the sum cannot overflow; `len` is
        // not 0 (`connect` refuses an empty list).
        i.next_mon = start
            .checked_add(n)
            .and_then(|end| end.checked_rem(len))
            .unwrap_or(0);
        // A count compared with the number of monitors: saturating is
        // harmless.
        i.tried = i.tried.saturating_add(n);
        i.hunt_started = Some(Instant::now());
        state
            .mons
            .iter()
            .cycle()
            .skip(start)
            .take(n)
            .cloned()
            .collect()
    };
    for addrs in batch {
        let c = messenger.connect(&addrs, EntityType::MON);
        state.lock().pending.push(c.clone());
        let msgr1 = msgr_protocol::target_addr(&addrs, state.cfg.msgr2)
            .is_some_and(|a| a.kind == msgr_encoding::EntityAddrType::LEGACY);
        if msgr1 {
            // No AUTH frames on msgr1: MAuth messages first (crate::v1).
            state
                .lock()
                .v1
                .push((c.clone(), Some(crate::v1::Auth::Negotiating)));
            let name = match &state.cfg.auth {
                MonAuth::Cephx(cx) => cx.name().clone(),
                MonAuth::None => state.cfg.name.clone(),
            };
            let first = crate::v1::first(&state.cfg.auth, state.cfg.none_fallback, &name);
            c.send_nowait(first.to_message(c.features()));
        } else {
            state.greet(&c);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use msgr_auth::NoneProvider;
    use msgr_encoding::{EntityName, Uuid};
    use msgr_messenger::Options;
    use msgr_protocol::{PolicyName, PolicySet};

    use super::*;

    struct Nothing;

    impl Dispatcher for Nothing {
        fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
    }

    /// A client hunting one msgr1 monitor (a socket that accepts and says
    /// nothing), as `start_hunt` leaves it: the candidate's first MAuth
    /// out, nothing back.
    async fn hunting() -> (
        Arc<State>,
        Connection,
        Messenger<Tcp>,
        std::net::TcpListener,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let mon: EntityAddrvec = format!("v1:127.0.0.1:{port}/0").parse().expect("addr");
        let cfg = MonClientConfig::new(vec![mon.clone()], MonAuth::None);
        let state = Arc::new(State::new(cfg, vec![mon.clone()]));
        let o = Options::new(
            EntityName::new(EntityType::CLIENT, -1),
            PolicySet::new(PolicyName::LossyClient.policy()),
            Arc::new(NoneProvider),
        );
        let messenger = Messenger::new(Tcp::default(), o, Arc::new(Nothing));
        let c = messenger.connect(&mon, EntityType::MON);
        {
            let mut i = state.lock();
            i.pending.push(c.clone());
            i.v1.push((c.clone(), Some(crate::v1::Auth::Negotiating)));
        }
        (state, c, messenger, listener)
    }

    fn blob(kind: &str, epoch: u32) -> Bytes {
        let path = format!(
            "{}/../../testdata/osdmaps/pacific/{kind}-{epoch}.bin",
            env!("CARGO_MANIFEST_DIR")
        );
        Bytes::from(std::fs::read(path).expect("testdata"))
    }

    fn osd_map(key: u32, full: Bytes, oldest: u32) -> msgr_protocol::Message {
        MOSDMap {
            fsid: Uuid::default(),
            incremental_maps: BTreeMap::new(),
            maps: BTreeMap::from([(key, full)]),
            oldest_map: oldest,
            newest_map: key,
        }
        .to_message(0)
    }

    fn ack(tid: u64) -> msgr_protocol::Message {
        MMonCommandAck {
            tid,
            r: 0,
            rs: "forged".into(),
            cmd: Vec::new(),
            output: Bytes::from_static(b"forged"),
        }
        .to_message(0)
    }

    fn answered(state: &State, tid: u64) -> bool {
        state
            .lock()
            .commands
            .get(&tid)
            .is_some_and(|c| c.reply.is_some())
    }

    /// Runs `f` on a thread; fails the test if it takes over 10 s (the
    /// issue's MOSDMap held the state's lock for ever).
    fn within_10s(f: impl FnOnce() + Send + 'static) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            f();
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the message was handled within 10 s");
    }

    /// The attack: a candidate that never answered our MAuth
    /// pushes an MOSDMap, an MMonMap and a tid-0 MMonCommandAck. None is
    /// taken, and why is kept for the error the hunt ends with.
    #[tokio::test]
    async fn an_unauthenticated_candidate_is_heard_only_for_its_auth_reply() {
        let (state, c, messenger, _listener) = hunting().await;
        let tid = state.add_command(vec!["{}".into()], Bytes::new());
        state.dispatch(&c, osd_map(10, blob("full", 10), 1));
        assert!(state.osdmap().is_none());
        let monmap = MMonMap {
            monmap: Bytes::from_static(b"not even a monmap"),
        };
        state.dispatch(&c, monmap.to_message(0));
        assert!(state.monmap().is_none());
        state.dispatch(&c, ack(0));
        state.dispatch(&c, ack(tid));
        assert!(!answered(&state, tid));
        let why = state.lock().last_error.clone().unwrap_or_default();
        assert!(why.contains("before authenticating us"), "{why}");
        assert!(why.contains("MSG_MON_COMMAND_ACK"), "{why}");
        // Still its candidate: its MAuthReply (auth none) makes the session.
        let reply = MAuthReply {
            protocol: method::NONE,
            result: 0,
            global_id: 4100,
            payload: Bytes::new(),
            message: String::new(),
        };
        state.dispatch(&c, reply.to_message(0));
        assert_eq!(state.active(), Some(c.clone()));
        state.dispatch(&c, osd_map(10, blob("full", 10), 1));
        assert_eq!(state.osdmap().map(|m| m.epoch), Some(10));
        messenger.shutdown().await;
    }

    /// An ack completes the command of its tid only: tid 0 is none of ours.
    #[tokio::test]
    async fn a_command_ack_must_name_a_command_we_sent() {
        let (state, c, messenger, _listener) = hunting().await;
        {
            let mut i = state.lock();
            i.v1.clear();
            i.active = Some(c.clone());
        }
        let first = state.add_command(vec!["{}".into()], Bytes::new());
        let second = state.add_command(vec!["{}".into()], Bytes::new());
        state.dispatch(&c, ack(0));
        state.dispatch(&c, ack(second.wrapping_add(1)));
        assert!(!answered(&state, first) && !answered(&state, second));
        state.dispatch(&c, ack(second));
        assert!(!answered(&state, first) && answered(&state, second));
        messenger.shutdown().await;
    }

    /// From our own monitor, the MOSDMap (a full map keyed
    /// u32::MAX, oldest_map u32::MAX) is refused at once, the map kept.
    #[tokio::test]
    async fn the_poison_osd_map_is_refused_from_a_session_too() {
        let (state, c, messenger, _listener) = hunting().await;
        {
            let mut i = state.lock();
            i.v1.clear();
            i.active = Some(c.clone());
        }
        state.dispatch(&c, osd_map(10, blob("full", 10), 1));
        let (s, conn) = (state.clone(), c.clone());
        within_10s(move || {
            s.dispatch(&conn, osd_map(u32::MAX, blob("full", 10), u32::MAX));
        });
        assert_eq!(state.osdmap().map(|m| m.epoch), Some(10));
        let why = state.osdmap_error().unwrap_or_default();
        assert!(why.contains("epoch 4294967295"), "{why}");
        messenger.shutdown().await;
    }
}
