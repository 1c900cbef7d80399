//! The monitor client's protocol state, sans-IO (as the objecter is): it
//! owns the hunt, the msgr1 authentication of candidates, the session's
//! keepalive and ticket renewal, pending commands and version requests,
//! the subscriptions and the OSD map. It does no I/O and reads no clock:
//! the driver ([`crate::MonClient`]) hands it what the messenger reports
//! (`handle_connect`, `handle_message`, `handle_fault`, `handle_reset`)
//! and the time (`handle_timeout`), and carries out what
//! [`MonCore::poll_transmit`] asks for (dial a monitor, send to it, mark a
//! connection down). Connections are named by [`ConnId`]s the core hands
//! out, which the driver maps to its own connection handles.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::method;
use msgr_encoding::{EntityAddrvec, UTime};
use msgr_messages::*;
use msgr_osdmap::{Followed, MapFollower, OsdMap};
use msgr_protocol::{Message, ProtocolError};

use crate::config::{MonAuth, MonClientConfig};
use crate::error::MonError;

#[path = "pool_op.rs"]
mod pool_op;
pub use pool_op::{PoolOpReply, PoolOpRequest};

/// `mon_client_ping_interval` and `mon_client_ping_timeout`.
pub const PING_INTERVAL: Duration = Duration::from_secs(10);
/// How long a session may go without a keepalive ack before it is dropped.
pub const PING_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to a monitor, as the core names it: handed out with
/// [`Transmit::Connect`], never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(u64);

/// A message for a monitor, encoded by the driver with the features of
/// the connection it goes on.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// MMonGetMap: ask for the current monmap.
    GetMap,
    /// MMonSubscribe: subscribe to maps and config.
    Subscribe(MMonSubscribe),
    /// MMonCommand: a monitor command.
    Command(MMonCommand),
    /// MAuth: a cephx ticket renewal on the session.
    Auth(MAuth),
    /// MMonGetVersion: ask for a map's newest and oldest versions.
    GetVersion(MMonGetVersion),
    /// MPoolOp: a pool operation ([`MonCore::add_pool_op`]).
    PoolOp(MPoolOp),
    /// MStatfs: the cluster's usage (crate::core::stats).
    Statfs(MStatfs),
    /// MGetPoolStats: pools' stats (crate::core::stats).
    GetPoolStats(MGetPoolStats),
}

impl Outgoing {
    /// The message, encoded for a peer with `features`.
    pub fn to_message(&self, features: u64) -> Message {
        match self {
            Outgoing::GetMap => MMonGetMap.to_message(features),
            Outgoing::Subscribe(m) => m.to_message(features),
            Outgoing::Command(m) => m.to_message(features),
            Outgoing::Auth(m) => m.to_message(features),
            Outgoing::GetVersion(m) => m.to_message(features),
            Outgoing::PoolOp(m) => m.to_message(features),
            Outgoing::Statfs(m) => m.to_message(features),
            Outgoing::GetPoolStats(m) => m.to_message(features),
        }
    }
}

/// What the core asks the driver to do, in order.
#[derive(Debug, Clone)]
pub enum Transmit {
    /// Dial the monitor at `addrs`; the connection is `conn` from now on.
    Connect {
        /// The new connection's id.
        conn: ConnId,
        /// The monitor's addresses.
        addrs: EntityAddrvec,
    },
    /// Send `msg` on `conn` (dropped if the driver no longer has it).
    Send {
        /// The connection to send on.
        conn: ConnId,
        /// The message.
        msg: Outgoing,
    },
    /// Send a keepalive on `conn`.
    Keepalive {
        /// The connection to send on.
        conn: ConnId,
    },
    /// Close `conn`: the core has forgotten it.
    MarkDown {
        /// The connection to close.
        conn: ConnId,
    },
}

/// A monitor command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    /// 0 or a negative errno.
    pub r: i32,
    /// The status line (what `ceph` prints on stderr).
    pub rs: String,
    /// The command's output data (what `ceph` prints on stdout).
    pub output: Bytes,
}

/// A candidate of the hunt.
struct Candidate {
    conn: ConnId,
    /// The monitor dialled.
    addrs: EntityAddrvec,
    /// An msgr1 candidate still authenticating with MAuth (crate::v1),
    /// and where it stands; `None` once authenticated, or for msgr2.
    v1: Option<crate::v1::Auth>,
}

struct PendingCommand {
    cmd: Vec<String>,
    input: Bytes,
    reply: Option<CommandReply>,
}

struct VersionRequest {
    what: String,
    /// When it last went out (`None`: not yet).
    sent: Option<Instant>,
    answer: Option<(u64, u64)>,
}

/// An MOSDMap to apply away from the core (a map is megabytes and its
/// CRUSH map is checked): [`OsdMapWork::run`] applies it to a copy of
/// the core's map follower, [`MonCore::finish_osd_map`] takes the result.
pub struct OsdMapWork {
    conn: ConnId,
    follower: MapFollower,
    msg: Message,
}

/// What [`OsdMapWork::run`] did.
pub struct OsdMapDone {
    conn: ConnId,
    follower: MapFollower,
    /// `None`: the message did not decode (nothing to take).
    result: Option<Result<(Followed, u32), String>>,
}

impl OsdMapWork {
    /// Decodes the MOSDMap and applies it to the follower's copy.
    pub fn run(self) -> OsdMapDone {
        let OsdMapWork {
            conn,
            mut follower,
            msg,
        } = self;
        let result = MOSDMap::from_message(&msg).ok().map(|om| {
            follower
                .handle(&om)
                .map(|f| (f, om.newest_epoch()))
                .map_err(|e| e.to_string())
        });
        OsdMapDone {
            conn,
            follower,
            result,
        }
    }
}

/// The monitor client's state.
pub struct MonCore {
    cfg: MonClientConfig,
    /// One address vector per monitor, as dialled.
    mons: Vec<EntityAddrvec>,
    monmap: Option<MonMap>,
    mon_config: BTreeMap<String, String>,
    /// The session, and the monitor it is with.
    active: Option<(ConnId, EntityAddrvec)>,
    /// Candidates of the current hunt, and when it started.
    candidates: Vec<Candidate>,
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
    last_conn: u64,
    last_tid: u64,
    commands: BTreeMap<u64, PendingCommand>,
    osdmap_epoch: u32,
    /// The OSD map, kept current from the osdmap subscription.
    osdmap: MapFollower,
    /// Why the last MOSDMap could not be used.
    osdmap_error: Option<String>,
    /// The newest mgr map (mgrmap.rs).
    mgrmap: Option<Arc<msgr_messages::mgr::MgrMap>>,
    last_version_handle: u64,
    versions: BTreeMap<u64, VersionRequest>,
    /// Pool operations, by tid (from the commands' counter).
    pool_ops: BTreeMap<u64, pool_op::PendingPoolOp>,
    /// Usage requests (stats.rs).
    stats: stats::Stats,
    /// The cluster log followed (log.rs).
    log: log::LogFollow,
    /// Pings out (ping.rs).
    pings: ping::Pings,
    last_keepalive: Option<Instant>,
    /// The newest keepalive ack stamp seen, and when it was first seen.
    last_ack: Option<(Option<UTime>, Instant)>,
    ticket_request_sent: Option<Instant>,
    shut_down: bool,
    transmits: VecDeque<Transmit>,
}

/// Takes the next id of a counter that starts at 0 (ids start at 1).
#[allow(clippy::arithmetic_side_effects)]
fn next_id(last: &mut u64) -> u64 {
    // One id per local request or connection: at a billion a second, u64
    // lasts over 500 years, so this cannot overflow.
    *last += 1;
    *last
}

impl MonCore {
    /// A client that will hunt among `mons` (one address each, as they
    /// are to be dialled) with `cfg`.
    pub fn new(cfg: MonClientConfig, mons: Vec<EntityAddrvec>) -> MonCore {
        MonCore {
            cfg,
            mons,
            monmap: None,
            mon_config: BTreeMap::new(),
            active: None,
            candidates: Vec::new(),
            hunt_started: None,
            next_mon: 0,
            last_error: None,
            problems: Vec::new(),
            auth_refusals: 0,
            tried: 0,
            last_conn: 0,
            last_tid: 0,
            commands: BTreeMap::new(),
            osdmap_epoch: 0,
            osdmap: MapFollower::default(),
            osdmap_error: None,
            mgrmap: None,
            last_version_handle: 0,
            versions: BTreeMap::new(),
            pool_ops: BTreeMap::new(),
            stats: stats::Stats::default(),
            log: log::LogFollow::default(),
            pings: ping::Pings::default(),
            last_keepalive: None,
            last_ack: None,
            ticket_request_sent: None,
            shut_down: false,
            transmits: VecDeque::new(),
        }
    }

    /// The next thing to do.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    fn send(&mut self, conn: ConnId, msg: Outgoing) {
        self.transmits.push_back(Transmit::Send { conn, msg });
    }

    // -- what the client holds --

    /// The newest monmap received, if any.
    pub fn monmap(&self) -> Option<&MonMap> {
        self.monmap.as_ref()
    }

    /// The configuration the monitors sent (MConfig), by option name.
    pub fn mon_config(&self) -> &BTreeMap<String, String> {
        &self.mon_config
    }

    /// The newest osdmap epoch the monitors said they have.
    pub fn osdmap_epoch(&self) -> u32 {
        self.osdmap_epoch
    }

    /// The newest decoded OSD map, if any.
    pub fn osdmap(&self) -> Option<&Arc<OsdMap>> {
        self.osdmap.map()
    }

    /// Why the last MOSDMap could not be used.
    pub fn osdmap_error(&self) -> Option<&str> {
        self.osdmap_error.as_deref()
    }

    /// Why the most recent monitor failed us.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// The session's connection.
    pub fn active(&self) -> Option<ConnId> {
        self.active.as_ref().map(|(c, _)| *c)
    }

    /// `mon_client_hunt_interval`: how long a hunt batch is given before the next.
    pub fn hunt_interval(&self) -> Duration {
        self.cfg.hunt_interval
    }

    /// Whether the client has been shut down.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Whether the client is ready (a session and a monmap), failed for
    /// good (shut down, or refused by every monitor tried), or not yet
    /// (`None`).
    pub fn ready(&self) -> Option<Result<(), MonError>> {
        if self.active.is_some() && self.monmap.is_some() {
            return Some(Ok(()));
        }
        if self.shut_down {
            return Some(Err(MonError::Shutdown));
        }
        // Every monitor tried refused us: credentials, not luck.
        let asked = self.mons.len().min(self.tried.max(1));
        if self.auth_refusals > 0 && self.auth_refusals >= asked {
            let why = self.last_error.clone().unwrap_or_default();
            return Some(Err(MonError::AuthFailed(why)));
        }
        None
    }

    /// The error of a hunt that found no monitor: each monitor and why it
    /// failed.
    pub fn unreachable(&self) -> MonError {
        let tried = self
            .mons
            .iter()
            .map(|m| {
                let why = self.problems.iter().find(|(a, _)| a == m);
                let why = why.map_or("no answer", |(_, w)| w.as_str());
                (m.clone(), why.to_string())
            })
            .collect();
        MonError::Unreachable {
            tried,
            after: self.cfg.connect_timeout,
        }
    }

    // -- what the client's user asks --

    /// A monitor command: sent on the session if there is one, and again
    /// on each new session until answered. Returns its tid.
    pub fn add_command(&mut self, cmd: Vec<String>, input: Bytes) -> u64 {
        let tid = next_id(&mut self.last_tid);
        self.commands.insert(
            tid,
            PendingCommand {
                cmd,
                input,
                reply: None,
            },
        );
        if let Some(conn) = self.active() {
            self.send_command(conn, tid);
        }
        tid
    }

    fn send_command(&mut self, conn: ConnId, tid: u64) {
        let Some(c) = self.commands.get(&tid) else {
            return;
        };
        let m = MMonCommand {
            tid,
            fsid: self.monmap.as_ref().map(|m| m.fsid).unwrap_or_default(),
            cmd: c.cmd.clone(),
            input: c.input.clone(),
        };
        self.send(conn, Outgoing::Command(m));
    }

    /// The reply to command `tid`, once (the command is then forgotten).
    pub fn take_command_reply(&mut self, tid: u64) -> Option<CommandReply> {
        self.commands.get(&tid)?.reply.as_ref()?;
        self.commands.remove(&tid).and_then(|c| c.reply)
    }

    /// Gives up on command `tid`.
    pub fn forget_command(&mut self, tid: u64) {
        self.commands.remove(&tid);
    }

    /// An MMonGetVersion for map `what`: sent on the session, and again
    /// every hunt interval and on each new session until answered.
    pub fn add_version_request(&mut self, what: &str, now: Instant) -> u64 {
        let handle = next_id(&mut self.last_version_handle);
        self.versions.insert(
            handle,
            VersionRequest {
                what: what.to_string(),
                sent: None,
                answer: None,
            },
        );
        if let Some(conn) = self.active() {
            self.send_version(conn, handle, now);
        }
        handle
    }

    fn send_version(&mut self, conn: ConnId, handle: u64, now: Instant) {
        let Some(v) = self.versions.get_mut(&handle) else {
            return;
        };
        v.sent = Some(now);
        let m = MMonGetVersion {
            handle,
            what: v.what.clone(),
        };
        self.send(conn, Outgoing::GetVersion(m));
    }

    /// The answer to version request `handle` (newest, oldest), once.
    pub fn take_version(&mut self, handle: u64) -> Option<(u64, u64)> {
        let answer = self.versions.get(&handle)?.answer?;
        self.versions.remove(&handle);
        Some(answer)
    }

    /// Drop version request `handle` without waiting for its answer.
    pub fn forget_version(&mut self, handle: u64) {
        self.versions.remove(&handle);
    }

    /// The flags of the configured osdmap subscription, if any.
    fn osdmap_flags(&self) -> Option<u8> {
        self.cfg
            .subscribe
            .iter()
            .find(|(name, _)| name == "osdmap")
            .map(|(_, f)| *f)
    }

    /// Asks the session's monitor for the OSD maps after ours (all of the
    /// newest if we have none): as the configured subscription does if
    /// there is one, else once. Returns the session asked.
    pub fn request_osdmap(&mut self) -> Option<ConnId> {
        let conn = self.active()?;
        let from = match self.osdmap.epoch() {
            0 => 0,
            e => e.saturating_add(1),
        };
        self.request_osdmap_on(conn, from);
        Some(conn)
    }

    /// Asks `conn` for osdmaps from `from` on (0: the newest, whole).
    fn request_osdmap_on(&mut self, conn: ConnId, from: u32) {
        let flags = self.osdmap_flags().unwrap_or(SUBSCRIBE_ONETIME);
        let what = BTreeMap::from([(
            "osdmap".to_string(),
            SubscribeItem {
                start: from.into(),
                flags,
            },
        )]);
        let sub = MMonSubscribe {
            what,
            hostname: self.cfg.hostname.clone(),
        };
        self.send(conn, Outgoing::Subscribe(sub));
    }

    /// Drops the session; the next timeout hunts again.
    pub fn drop_session(&mut self) {
        self.hunt_started = None;
        if let Some((conn, _)) = self.active.take() {
            self.transmits.push_back(Transmit::MarkDown { conn });
        }
    }

    /// Stops: no more hunting; waiters are told.
    pub fn shut_down(&mut self) {
        self.shut_down = true;
    }

    // -- what the messenger reports --

    /// The addresses of `conn`, if it is the session or a candidate.
    fn addrs_of(&self, conn: ConnId) -> Option<EntityAddrvec> {
        match &self.active {
            Some((c, a)) if *c == conn => Some(a.clone()),
            _ => self
                .candidates
                .iter()
                .find(|c| c.conn == conn)
                .map(|c| c.addrs.clone()),
        }
    }

    /// Monitor `addr` failed us for `why` (the last reason kept per
    /// monitor).
    fn problem(&mut self, addr: EntityAddrvec, why: String) {
        self.last_error = Some(format!("mon {addr}: {why}"));
        match self.problems.iter_mut().find(|(a, _)| *a == addr) {
            Some(p) => p.1 = why,
            None => self.problems.push((addr, why)),
        }
    }

    /// A candidate's session is ready (over msgr1: authenticated too): the
    /// first one wins, the others are closed, and pending commands and
    /// version requests go out on it.
    pub fn handle_connect(&mut self, conn: ConnId, now: Instant) {
        if self.active.is_some() {
            return;
        }
        let Some(at) = self.candidates.iter().position(|c| c.conn == conn) else {
            return;
        };
        if self.candidates.get(at).is_some_and(|c| c.v1.is_some()) {
            return;
        }
        let won = self.candidates.swap_remove(at);
        self.active = Some((conn, won.addrs));
        self.auth_refusals = 0;
        self.last_keepalive = Some(now);
        self.last_ack = Some((None, now));
        for lost in std::mem::take(&mut self.candidates) {
            self.transmits
                .push_back(Transmit::MarkDown { conn: lost.conn });
        }
        let resend: Vec<u64> = self
            .commands
            .iter()
            .filter(|(_, p)| p.reply.is_none())
            .map(|(t, _)| *t)
            .collect();
        for tid in resend {
            self.send_command(conn, tid);
        }
        let unanswered: Vec<u64> = self
            .versions
            .iter()
            .filter(|(_, v)| v.answer.is_none())
            .map(|(h, _)| *h)
            .collect();
        for handle in unanswered {
            self.send_version(conn, handle, now);
        }
        self.resend_pool_ops(conn);
        self.resend_stats(conn);
        self.log_session(conn);
    }

    /// A connection faulted: an authentication refusal ends a candidate
    /// (the messenger would retry it forever), anything else is
    /// remembered.
    pub fn handle_fault(&mut self, conn: ConnId, error: &ProtocolError) {
        let refused = matches!(
            error,
            ProtocolError::Auth(
                msgr_auth::AuthError::Denied(_)
                    | msgr_auth::AuthError::NoKey(_)
                    | msgr_auth::AuthError::NoMethodLeft
                    | msgr_auth::AuthError::NoCommonMode
                    | msgr_auth::AuthError::ModeRefused { .. }
            )
        );
        let Some(addrs) = self.addrs_of(conn) else {
            return;
        };
        self.problem(addrs, error.to_string());
        if !refused {
            return;
        }
        if let Some(at) = self.candidates.iter().position(|c| c.conn == conn) {
            self.candidates.swap_remove(at);
            // A count compared with the number of monitors tried:
            // saturating is harmless.
            self.auth_refusals = self.auth_refusals.saturating_add(1);
        }
        self.handle_reset(conn);
        self.transmits.push_back(Transmit::MarkDown { conn });
    }

    /// A connection was refused by its peer.
    pub fn handle_refused(&mut self, conn: ConnId) {
        if let Some(addrs) = self.addrs_of(conn) {
            self.problem(addrs, "connection refused".into());
        }
    }

    /// A connection was reset: the session's ends it (the next timeout
    /// hunts), a candidate's drops it.
    pub fn handle_reset(&mut self, conn: ConnId) {
        if self.active() == Some(conn) {
            self.active = None;
            self.hunt_started = None;
        }
        self.candidates.retain(|c| c.conn != conn);
    }

    /// The newest keepalive ack stamp of `conn` (the session's, as the
    /// messenger last saw it): a new one restarts the ping timeout.
    pub fn handle_keepalive_ack(&mut self, conn: ConnId, stamp: Option<UTime>, now: Instant) {
        if self.active() != Some(conn) {
            return;
        }
        if self.last_ack.is_none_or(|(seen, _)| seen != stamp) {
            self.last_ack = Some((stamp, now));
        }
    }

    /// A message from a monitor: dropped unless it is from our session or
    /// a candidate of the hunt (as MonClient::ms_dispatch drops them), and
    /// from an msgr1 candidate still authenticating unless it is its
    /// MAuthReply: until then the peer is nobody we know. An MOSDMap is
    /// handed back, to be applied away from the core.
    pub fn handle_message(&mut self, conn: ConnId, m: Message, now: Instant) -> Option<OsdMapWork> {
        let addrs = self.addrs_of(conn)?;
        let authenticating = self
            .candidates
            .iter()
            .any(|c| c.conn == conn && c.v1.is_some());
        if authenticating && m.msg_type != MSG_AUTH_REPLY {
            let name = msgr_messages::message_type_name(m.msg_type)
                .map_or_else(|| format!("message type {}", m.msg_type), str::to_string);
            self.problem(
                addrs,
                format!(
                    "sent {name} before authenticating us (only MAuthReply is taken \
                     then): dropped"
                ),
            );
            return None;
        }
        match m.msg_type {
            MSG_MON_MAP => {
                let Ok(mm) = MMonMap::from_message(&m) else {
                    return None;
                };
                if let Ok(map) = MonMap::decode(&mut msgr_encoding::Decoder::new(&mm.monmap)) {
                    self.monmap = Some(map);
                }
            }
            MSG_CONFIG => {
                if let Ok(cfg) = MConfig::from_message(&m) {
                    self.mon_config = cfg.config;
                }
            }
            MSG_MON_COMMAND_ACK => {
                let Ok(ack) = MMonCommandAck::from_message(&m) else {
                    return None;
                };
                // The ack completes the command of its tid, and only that
                // one. Ceph's MonClient takes tid 0 as the oldest pending
                // command (for monitors older than Firefly, which did not
                // echo tids); here a tid-0 ack completes nothing, since our
                // tids start at 1 and any monitor we speak to echoes them:
                // otherwise whoever can send us an ack could answer a
                // command it never saw.
                if let Some(p) = self.commands.get_mut(&ack.tid) {
                    p.reply = Some(CommandReply {
                        r: ack.r,
                        rs: ack.rs,
                        output: ack.output,
                    });
                }
            }
            MSG_AUTH_REPLY => {
                let Ok(r) = MAuthReply::from_message(&m) else {
                    return None;
                };
                self.on_auth_reply(conn, addrs, &r, now);
            }
            MSG_MON_GET_VERSION_REPLY => {
                if let Ok(r) = MMonGetVersionReply::from_message(&m) {
                    if let Some(v) = self.versions.get_mut(&r.handle) {
                        v.answer = Some((r.version, r.oldest_version));
                    }
                }
            }
            // Only from the session (a candidate has no pool ops out).
            MSG_POOLOP_REPLY if self.active() == Some(conn) => {
                if let Ok(r) = MPoolOpReply::from_message(&m) {
                    self.on_pool_op_reply(conn, r);
                }
            }
            msgr_messages::statfs::MSG_STATFS_REPLY
            | msgr_messages::statfs::MSG_GETPOOLSTATSREPLY => self.handle_stats_reply(&m),
            msgr_messages::log::MSG_LOG => self.handle_log(&m),
            ping::MSG_PING => self.handle_ping(&m),
            msgr_messages::mgr::MSG_MGR_MAP => self.handle_mgr_map(&m),
            MSG_OSD_MAP => {
                return Some(OsdMapWork {
                    conn,
                    follower: self.osdmap.clone(),
                    msg: m,
                });
            }
            _ => {}
        }
        None
    }

    /// Takes an MOSDMap applied by [`OsdMapWork::run`]: its follower
    /// replaces the kept one if it got further (maps of an epoch are the
    /// same map whichever message brought them, so the furthest wins when
    /// two race), and maps missing past ours are asked for.
    pub fn finish_osd_map(&mut self, done: OsdMapDone) {
        let OsdMapDone {
            conn,
            follower,
            result,
        } = done;
        if follower.epoch() > self.osdmap.epoch() {
            self.osdmap = follower;
        }
        match result {
            None => {}
            Some(Ok((f, newest))) => {
                // What the monitors say they have, once their maps were
                // taken.
                self.osdmap_epoch = self.osdmap_epoch.max(newest);
                if let Some(from) = f.want {
                    self.request_osdmap_on(conn, from);
                }
            }
            Some(Err(e)) => self.osdmap_error = Some(e),
        }
    }

    /// An MAuthReply: the next step of an msgr1 candidate's
    /// authentication, or the answer to a ticket renewal on the session.
    fn on_auth_reply(&mut self, conn: ConnId, addrs: EntityAddrvec, r: &MAuthReply, now: Instant) {
        let at = self
            .candidates
            .iter_mut()
            .find(|c| c.conn == conn)
            .and_then(|c| c.v1.take());
        if let Some(at) = at {
            return self.on_v1_auth(conn, addrs, at, r, now);
        }
        self.ticket_request_sent = None;
        if let MonAuth::Cephx(cx) = &self.cfg.auth {
            if r.result < 0 {
                self.last_error = Some(format!("ticket renewal refused: {}", r.result));
            } else if let Err(e) = cx.handle_ticket_reply(&r.payload) {
                self.last_error = Some(format!("ticket renewal: {e}"));
            }
        }
    }

    /// A monitor's MAuthReply to an msgr1 candidate authenticating.
    fn on_v1_auth(
        &mut self,
        conn: ConnId,
        addrs: EntityAddrvec,
        at: crate::v1::Auth,
        r: &MAuthReply,
        now: Instant,
    ) {
        let epoch = self.monmap.as_ref().map_or(0, |m| m.epoch);
        let step = crate::v1::on_reply(at, r, &self.cfg.auth, self.cfg.none_fallback, epoch);
        match step {
            Ok(crate::v1::Step::Send(m, next)) => {
                if let Some(c) = self.candidates.iter_mut().find(|c| c.conn == conn) {
                    c.v1 = Some(next);
                }
                self.send(conn, Outgoing::Auth(m));
            }
            Ok(crate::v1::Step::Done) => {
                self.handle_connect(conn, now);
                self.greet(conn);
            }
            Err(e) => {
                self.problem(addrs, e.to_string());
                self.auth_refusals = self.auth_refusals.saturating_add(1);
                self.candidates.retain(|c| c.conn != conn);
                self.transmits.push_back(Transmit::MarkDown { conn });
            }
        }
    }

    // -- time --

    /// What is due at `now`: a hunt (no session, and the last batch had
    /// its interval or is gone), a keepalive (or dropping a session whose
    /// acks stopped), a ticket renewal, version requests again.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.shut_down {
            return;
        }
        let hunt = self.active.is_none()
            && self.hunt_started.is_none_or(|t| {
                now.saturating_duration_since(t) >= self.cfg.hunt_interval
                    || self.candidates.is_empty()
            });
        if hunt {
            self.start_hunt(now);
        }
        self.keep_alive(now);
        self.renew_tickets(now);
        if let Some(conn) = self.active() {
            let due: Vec<u64> = self
                .versions
                .iter()
                .filter(|(_, v)| v.answer.is_none())
                .filter(|(_, v)| {
                    v.sent
                        .is_none_or(|t| now.saturating_duration_since(t) >= self.cfg.hunt_interval)
                })
                .map(|(h, _)| *h)
                .collect();
            for handle in due {
                self.send_version(conn, handle, now);
            }
        }
    }

    /// A keepalive every PING_INTERVAL; a session whose acks stopped
    /// for PING_TIMEOUT is dropped (the next timeout hunts), checked at
    /// every tick as MonClient::tick does (not only when a keepalive is
    /// due, which would find it up to a PING_INTERVAL late).
    fn keep_alive(&mut self, now: Instant) {
        let Some(conn) = self.active() else {
            return;
        };
        let since = self.last_ack.map_or(now, |(_, at)| at);
        if now.saturating_duration_since(since) > PING_TIMEOUT {
            self.transmits.push_back(Transmit::MarkDown { conn });
            self.handle_reset(conn);
            return;
        }
        let due = self
            .last_keepalive
            .is_none_or(|t| now.saturating_duration_since(t) >= PING_INTERVAL);
        if due {
            self.transmits.push_back(Transmit::Keepalive { conn });
            self.last_keepalive = Some(now);
        }
    }

    /// cephx: missing or aging tickets are asked for on the session, once
    /// per PING_TIMEOUT until answered.
    fn renew_tickets(&mut self, now: Instant) {
        let (Some(conn), MonAuth::Cephx(cx)) = (self.active(), &self.cfg.auth) else {
            return;
        };
        let waiting = self
            .ticket_request_sent
            .is_some_and(|t| now.saturating_duration_since(t) <= PING_TIMEOUT);
        if waiting {
            return;
        }
        let need = cx.need();
        if need == 0 {
            return;
        }
        let Ok(payload) = cx.build_ticket_request(need) else {
            return;
        };
        let m = MAuth {
            protocol: method::CEPHX,
            payload,
            monmap_epoch: self.monmap.as_ref().map_or(0, |m| m.epoch),
        };
        self.send(conn, Outgoing::Auth(m));
        self.ticket_request_sent = Some(now);
    }

    /// Closes the current candidates and dials the next batch.
    fn start_hunt(&mut self, now: Instant) {
        for c in std::mem::take(&mut self.candidates) {
            self.transmits
                .push_back(Transmit::MarkDown { conn: c.conn });
        }
        let len = self.mons.len();
        if len == 0 {
            return;
        }
        let n = self.cfg.hunt_parallel.clamp(1, len);
        let start = self.next_mon;
        // `start < len` and `n <= len`, so the sum cannot overflow; `len` is
        // not 0.
        self.next_mon = start
            .checked_add(n)
            .and_then(|end| end.checked_rem(len))
            .unwrap_or(0);
        // A count compared with the number of monitors: saturating is
        // harmless.
        self.tried = self.tried.saturating_add(n);
        self.hunt_started = Some(now);
        let batch: Vec<EntityAddrvec> = self
            .mons
            .iter()
            .cycle()
            .skip(start)
            .take(n)
            .cloned()
            .collect();
        for addrs in batch {
            let conn = ConnId(next_id(&mut self.last_conn));
            self.transmits.push_back(Transmit::Connect {
                conn,
                addrs: addrs.clone(),
            });
            let msgr1 = msgr_protocol::target_addr(&addrs, self.cfg.msgr2)
                .is_some_and(|a| a.kind == msgr_encoding::EntityAddrType::LEGACY);
            if msgr1 {
                // No AUTH frames on msgr1: MAuth messages first (crate::v1).
                self.candidates.push(Candidate {
                    conn,
                    addrs,
                    v1: Some(crate::v1::Auth::Negotiating),
                });
                let name = match &self.cfg.auth {
                    MonAuth::Cephx(cx) => cx.name().clone(),
                    MonAuth::None => self.cfg.name.clone(),
                };
                let first = crate::v1::first(&self.cfg.auth, self.cfg.none_fallback, &name);
                self.send(conn, Outgoing::Auth(first));
            } else {
                self.candidates.push(Candidate {
                    conn,
                    addrs,
                    v1: None,
                });
                self.greet(conn);
            }
        }
    }

    /// `MMonGetMap` and the subscriptions, on a new candidate: each map
    /// from the epoch after ours (the osdmap as incrementals, not a new
    /// whole map, on a new session).
    fn greet(&mut self, conn: ConnId) {
        self.send(conn, Outgoing::GetMap);
        let monmap_start = self
            .monmap
            .as_ref()
            // A u32 epoch widened to u64: never saturates.
            .map_or(0, |m| u64::from(m.epoch).saturating_add(1));
        let mut what = BTreeMap::new();
        what.insert(
            "monmap".to_string(),
            SubscribeItem {
                start: monmap_start,
                flags: 0,
            },
        );
        what.insert("config".to_string(), SubscribeItem { start: 0, flags: 0 });
        let osdmap_next = match self.osdmap.epoch() {
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
        self.send(conn, Outgoing::Subscribe(sub));
    }
}

#[cfg(test)]
impl MonCore {
    /// Tests: the connection this core dials at `now`, its session up.
    pub(crate) fn test_session(&mut self, now: Instant) -> ConnId {
        self.handle_timeout(now);
        let conn = std::iter::from_fn(|| self.poll_transmit())
            .find_map(|t| match t {
                Transmit::Connect { conn, .. } => Some(conn),
                _ => None,
            })
            .expect("a monitor dialled");
        self.handle_connect(conn, now);
        conn
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;

#[path = "stats.rs"]
pub mod stats;

#[path = "log.rs"]
pub mod log;

#[path = "mgrmap.rs"]
pub mod mgrmap;

#[path = "ping.rs"]
pub mod ping;
