//! A monitor client (src/mon/MonClient.cc, reduced to what a client needs;
//! docs/research/mon-client.md §6):
//!
//! - **hunting**: connect to up to `hunt_parallel` monitors at once; the
//!   first whose session becomes ready wins and the others are dropped;
//!   every `hunt_interval` without a winner, the next batch is tried;
//! - on each candidate, `MMonGetMap` and a `monmap` + `config` subscription
//!   go out at once; the client is ready when the session is up **and** a
//!   monmap arrived;
//! - **commands** get tids from 1; an ack completes the command of its
//!   tid and no other (Ceph takes tid 0 as the oldest pending; not here);
//!   pending commands are re-sent on a new session;
//! - an msgr1 candidate is heard only for its MAuthReply until it has
//!   authenticated us; OSD maps are decoded outside the state's lock;
//! - **tickets** (cephx): missing or aging service tickets are renewed
//!   with `MAuth` on the session; **keepalive** every 10 s, and a session
//!   with no ack for 30 s is dropped and the hunt resumes;
//! - authentication refused by every monitor tried fails fast, with the
//!   monitor's reason.
//!
//! `identity` reads who the client is as the `ceph` CLI does (ceph.conf,
//! CEPH_ARGS, the keyring) into these settings.
#![forbid(unsafe_code)]

pub mod identity;
mod osds;
mod state;
mod v1;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::cephx::CephxClient;
use msgr_auth::{AuthProvider, ConMode, NoneProvider};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messages::{MMonCommand, MonMap, TypedMessage};
use msgr_messenger::{Connection, Messenger, Options};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;

pub use osds::{parse_osd_dump, OsdAddrs};

/// Ceph's message type names and request/reply pairs (msgr-messages'
/// tables), given to the messengers made here.
const CEPH_MESSAGE_TYPES: msgr_messenger::MessageTypes =
    msgr_messenger::MessageTypes::new(msgr_messages::MESSAGE_TYPES, msgr_messages::REPLY_TYPES);
use state::{Dispatch, State};

/// How the client authenticates.
#[derive(Clone)]
pub enum MonAuth {
    /// Auth none, offering these modes (crc only makes sense).
    None,
    /// cephx, with the tickets kept in this client.
    Cephx(Arc<CephxClient>),
}

/// What a monitor client is set up with.
#[derive(Clone)]
pub struct MonClientConfig {
    /// The monitors to hunt among (mon_host), one address vector each.
    pub mons: Vec<EntityAddrvec>,
    pub auth: MonAuth,
    /// `mon_client_hunt_parallel`.
    pub hunt_parallel: usize,
    /// `mon_client_hunt_interval`.
    pub hunt_interval: Duration,
    /// Give up connecting after this long.
    pub connect_timeout: Duration,
    /// Offer msgr2.1 (false: msgr2.0 only).
    pub rev1: bool,
    /// Sent in MMonSubscribe (the mon shows it as the client's host).
    pub hostname: String,
    /// Other maps to subscribe to (`osdmap`, `mgrmap`), besides monmap and config.
    pub subscribe: Vec<(String, u8)>,
    /// With cephx: fall back to auth none when a monitor allows only that
    /// (`auth_client_required = cephx, none`).
    pub none_fallback: bool,
    /// Dial monitors' msgr2 addresses (ms_bind_msgr2); false: their msgr1
    /// ones, authenticating with MAuth messages.
    pub msgr2: bool,
    /// Who we say we are to a monitor over msgr1 with auth none (cephx
    /// names its client's entity).
    pub name: msgr_encoding::AuthName,
}

impl MonClientConfig {
    pub fn new(mons: Vec<EntityAddrvec>, auth: MonAuth) -> MonClientConfig {
        MonClientConfig {
            mons,
            auth,
            hunt_parallel: 3,
            hunt_interval: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(30),
            rev1: true,
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            subscribe: Vec::new(),
            none_fallback: false,
            msgr2: true,
            name: msgr_encoding::AuthName::new(EntityType::CLIENT, "admin"),
        }
    }
}

/// Why the client failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonError {
    /// Every monitor refused our credentials.
    AuthFailed(String),
    /// No monitor session within the timeout; the last problem seen.
    Timeout(String),
    /// No monitor session within `after` (the connect timeout): each
    /// monitor of mon_host, and why it failed.
    Unreachable {
        tried: Vec<(EntityAddrvec, String)>,
        after: Duration,
    },
    /// The configuration names no monitor we can reach over msgr2.
    NoMonitors,
    /// The client was shut down.
    Shutdown,
    /// A monitor command failed (its errno and status line).
    Command { cmd: String, r: i32, rs: String },
    /// A monitor's reply could not be read.
    BadReply(String),
    /// The OSD map has no OSD of this id (or it has no address).
    NoSuchOsd(u64),
    /// The caller asked for a timeout so long that its deadline is past
    /// what the clock can represent (the caller's mistake).
    TimeoutTooLong(Duration),
}

impl std::fmt::Display for MonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MonError::AuthFailed(why) => write!(f, "authentication failed: {why}"),
            MonError::Timeout(why) => write!(f, "timed out: {why}"),
            MonError::Unreachable { tried, after } => {
                write!(f, "no monitor session within {after:?}; tried")?;
                for (i, (addr, why)) in tried.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}{addr} ({why})")?;
                }
                f.write_str(": check mon_host and that the monitors are up")
            }
            MonError::NoMonitors => {
                f.write_str("no monitor address to dial (v2:, or v1: with msgr2 off or alone)")
            }
            MonError::Shutdown => f.write_str("the monitor client was shut down"),
            MonError::TimeoutTooLong(t) => write!(f, "timeout {t:?} is too long"),
            MonError::Command { cmd, r, rs } => write!(f, "{cmd}: error {r}: {rs}"),
            MonError::BadReply(why) => write!(f, "unreadable reply from the monitor: {why}"),
            MonError::NoSuchOsd(id) => write!(f, "osd.{id} is not in the OSD map"),
        }
    }
}

impl std::error::Error for MonError {}

/// A monitor command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    /// 0 or a negative errno.
    pub r: i32,
    /// The status line (what `ceph` prints on stderr).
    pub rs: String,
    pub output: Bytes,
}

/// The deadline `timeout` from now (checked: `Instant + Duration` panics
/// past the clock's range), computed before anything is queued or sent.
fn deadline_after(timeout: Duration) -> Result<Instant, MonError> {
    Instant::now()
        .checked_add(timeout)
        .ok_or(MonError::TimeoutTooLong(timeout))
}

/// A connected monitor client.
pub struct MonClient {
    messenger: Messenger<Tcp>,
    state: Arc<State>,
    ticker: tokio::task::JoinHandle<()>,
}

impl MonClient {
    /// Hunts for a monitor, authenticates, and waits for the monmap.
    pub async fn connect(cfg: MonClientConfig) -> Result<MonClient, MonError> {
        // One address per monitor, chosen as the messenger will dial.
        let mons: Vec<EntityAddrvec> = cfg
            .mons
            .iter()
            .filter_map(|v| msgr_protocol::target_addr(v, cfg.msgr2))
            .filter(|a| {
                let k = a.kind;
                k == msgr_encoding::EntityAddrType::MSGR2
                    || k == msgr_encoding::EntityAddrType::LEGACY
            })
            .map(EntityAddrvec::single)
            .collect();
        if mons.is_empty() {
            return Err(MonError::NoMonitors);
        }
        let deadline = deadline_after(cfg.connect_timeout)?;
        let state = Arc::new(State::new(cfg.clone(), mons));
        let provider: Arc<dyn AuthProvider> = match &cfg.auth {
            MonAuth::None => Arc::new(NoneProvider),
            MonAuth::Cephx(c) => {
                let cephx: Arc<dyn AuthProvider> = Arc::new(msgr_auth::cephx::CephxProvider {
                    client: Some(c.clone()),
                    server: None,
                });
                match cfg.none_fallback {
                    false => cephx,
                    true => Arc::new(msgr_auth::MultiProvider {
                        providers: vec![
                            (msgr_auth::method::CEPHX, cephx),
                            (msgr_auth::method::NONE, Arc::new(NoneProvider)),
                        ],
                    }),
                }
            }
        };
        let mut o = Options::new(
            EntityName::new(EntityType::CLIENT, -1),
            PolicySet::new(PolicyName::LossyClient.policy()),
            provider,
        );
        o.rev1 = cfg.rev1;
        o.msgr2 = cfg.msgr2;
        o.nonce = std::process::id();
        o.message_types = CEPH_MESSAGE_TYPES;
        let messenger = Messenger::new(Tcp::default(), o, Arc::new(Dispatch(state.clone())));
        let ticker = tokio::spawn(state::tick(state.clone(), messenger.clone()));
        let client = MonClient {
            messenger,
            state,
            ticker,
        };
        match client.state.wait_ready(deadline).await {
            Ok(()) => Ok(client),
            Err(e) => {
                client.shutdown().await;
                Err(e)
            }
        }
    }

    /// The monmap the session received.
    pub fn monmap(&self) -> MonMap {
        self.state.monmap().unwrap_or_default()
    }

    /// The configuration the monitors hold for us (MConfig).
    pub fn mon_config(&self) -> std::collections::BTreeMap<String, String> {
        self.state.mon_config()
    }

    /// The newest osdmap epoch seen (with an `osdmap` subscription).
    pub fn osdmap_epoch(&self) -> u32 {
        self.state.osdmap_epoch()
    }

    /// The OSD map, once one arrived (subscribe to `osdmap`, or call
    /// [`MonClient::wait_osdmap`]).
    pub fn osdmap(&self) -> Option<Arc<msgr_osdmap::OsdMap>> {
        self.state.osdmap()
    }

    /// The OSD map at `epoch` or newer (0: any), asked for if we do not
    /// have it; kept current afterwards only with an `osdmap`
    /// subscription in the config.
    pub async fn wait_osdmap(
        &self,
        epoch: u32,
        timeout: Duration,
    ) -> Result<Arc<msgr_osdmap::OsdMap>, MonError> {
        let deadline = deadline_after(timeout)?;
        self.state.wait_osdmap(epoch, deadline).await
    }

    /// The monitor the session is with.
    pub fn session(&self) -> Option<Connection> {
        self.state.active()
    }

    /// Whether the session speaks msgr1.
    pub fn is_msgr1(&self) -> bool {
        self.state.active().is_some_and(|c| c.is_msgr1())
    }

    /// The mode the session runs in (msgr2).
    pub fn con_mode(&self) -> Option<ConMode> {
        self.state.active().and_then(|c| c.con_mode())
    }

    /// Sends a monitor command (`cmd` is normally one JSON object) and
    /// waits for its ack, up to `timeout`.
    pub async fn command(
        &self,
        cmd: &str,
        input: Bytes,
        timeout: Duration,
    ) -> Result<CommandReply, MonError> {
        let deadline = deadline_after(timeout)?;
        let tid = self.state.add_command(vec![cmd.to_string()], input);
        if let Some(c) = self.state.active() {
            self.send_command(&c, tid);
        }
        self.state.wait_command(tid, deadline).await
    }

    fn send_command(&self, c: &Connection, tid: u64) {
        if let Some((cmd, input)) = self.state.command(tid) {
            let m = MMonCommand {
                tid,
                fsid: self.monmap().fsid,
                cmd,
                input,
            };
            c.send_nowait(m.to_message(c.features()));
        }
    }

    /// The newest and oldest epochs of a map the monitors keep (`osdmap`,
    /// `monmap`, `mdsmap`, `fsmap`): MMonGetVersion.
    pub async fn get_version(&self, what: &str, timeout: Duration) -> Result<(u64, u64), MonError> {
        let deadline = deadline_after(timeout)?;
        let handle = self.state.add_version_request();
        loop {
            // (Re)send on the current session until answered.
            if let Some(c) = self.state.active() {
                let m = msgr_messages::MMonGetVersion {
                    handle,
                    what: what.to_string(),
                };
                c.send_nowait(m.to_message(c.features()));
            }
            // An interval past the clock's range waits for the deadline.
            let step = Instant::now()
                .checked_add(self.state.hunt_interval())
                .map_or(deadline, |step| step.min(deadline));
            match self.state.wait_version(handle, step).await {
                Some(v) => return Ok(v),
                None if Instant::now() >= deadline => {
                    return Err(MonError::Timeout(format!(
                        "no answer to get_version {what}"
                    )))
                }
                None => continue,
            }
        }
    }

    /// Drops the current session; the client hunts for a new one (and
    /// reclaims its global id with its ticket). Waits until it is back.
    pub async fn reconnect(&self, timeout: Duration) -> Result<(), MonError> {
        let deadline = deadline_after(timeout)?;
        self.state.drop_session();
        self.state.wait_ready(deadline).await
    }

    /// Closes the session and stops.
    pub async fn shutdown(self) {
        self.ticker.abort();
        self.state.shut_down();
        self.messenger.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_past_the_clock_are_errors() {
        assert_eq!(
            deadline_after(Duration::MAX),
            Err(MonError::TimeoutTooLong(Duration::MAX))
        );
        assert!(deadline_after(Duration::from_secs(30)).is_ok());
    }
}
