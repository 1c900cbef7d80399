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
//! The protocol state is [`crate::core::MonCore`], sans-IO and unit-tested with
//! virtual time; [`MonClient`] drives it over a messenger on any
//! transport (TCP by default; memory, Unix, io_uring).
//!
//! `identity` reads who the client is as the `ceph` CLI does (ceph.conf,
//! CEPH_ARGS, the keyring) into these settings.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
pub mod core;
mod driver;
mod error;
pub mod identity;
mod osds;
mod v1;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::{AuthProvider, ConMode, NoneProvider};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messages::MonMap;
use msgr_messenger::{Connection, Messenger, Options};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;

pub use crate::core::log::{log_subscription, LOG_QUEUE};
pub use crate::core::stats::StatsReply;
pub use crate::core::CommandReply;
pub use config::{MonAuth, MonClientConfig};
use driver::{Dispatch, Shared};
pub use error::MonError;
pub use osds::{parse_osd_dump, OsdAddrs};
/// Ceph's message type names and request/reply pairs (msgr-messages'
/// tables), given to the messengers made here.
const CEPH_MESSAGE_TYPES: msgr_messenger::MessageTypes =
    msgr_messenger::MessageTypes::new(msgr_messages::MESSAGE_TYPES, msgr_messages::REPLY_TYPES);

/// The deadline `timeout` from now (checked: `Instant + Duration` panics
/// past the clock's range), computed before anything is queued or sent.
fn deadline_after(timeout: Duration) -> Result<Instant, MonError> {
    Instant::now()
        .checked_add(timeout)
        .ok_or(MonError::TimeoutTooLong(timeout))
}

/// A connected monitor client, over transport `T`.
pub struct MonClient<T: Transport = Tcp> {
    messenger: Messenger<T>,
    shared: Arc<Shared<T>>,
    ticker: msgr_uring::rt::JoinHandle<()>,
}

impl MonClient<Tcp> {
    /// Hunts for a monitor over TCP, authenticates, and waits for the
    /// monmap.
    pub async fn connect(cfg: MonClientConfig) -> Result<MonClient<Tcp>, MonError> {
        MonClient::connect_over(Tcp::default(), cfg).await
    }
}

/// The authentication provider the client's messenger offers.
fn provider(cfg: &MonClientConfig) -> Arc<dyn AuthProvider> {
    match &cfg.auth {
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
    }
}

impl<T: Transport> MonClient<T> {
    /// Hunts for a monitor over `transport`, authenticates, and waits for
    /// the monmap.
    pub async fn connect_over(
        transport: T,
        cfg: MonClientConfig,
    ) -> Result<MonClient<T>, MonError> {
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
        let mut o = Options::new(
            EntityName::new(EntityType::CLIENT, -1),
            PolicySet::new(PolicyName::LossyClient.policy()),
            provider(&cfg),
        );
        o.rev1 = cfg.rev1;
        o.msgr2 = cfg.msgr2;
        o.message_types = CEPH_MESSAGE_TYPES;
        o.timeouts = cfg.timeouts;
        let shared = Arc::new(Shared::new(crate::core::MonCore::new(cfg, mons)));
        let messenger = Messenger::new(transport, o, Arc::new(Dispatch(shared.clone())));
        shared.set_messenger(messenger.clone());
        let ticker = msgr_uring::rt::spawn(driver::tick(shared.clone()));
        let client = MonClient {
            messenger,
            shared,
            ticker,
        };
        match client.shared.wait_ready(deadline).await {
            Ok(()) => Ok(client),
            Err(e) => {
                client.shutdown().await;
                Err(e)
            }
        }
    }

    /// The monmap the session received.
    pub fn monmap(&self) -> MonMap {
        self.shared.core().monmap().cloned().unwrap_or_default()
    }

    /// The configuration the monitors hold for us (MConfig).
    pub fn mon_config(&self) -> std::collections::BTreeMap<String, String> {
        self.shared.core().mon_config().clone()
    }

    /// The newest osdmap epoch seen (with an `osdmap` subscription).
    pub fn osdmap_epoch(&self) -> u32 {
        self.shared.core().osdmap_epoch()
    }

    /// The OSD map, once one arrived (subscribe to `osdmap`, or call
    /// [`MonClient::wait_osdmap`]).
    pub fn osdmap(&self) -> Option<Arc<msgr_osdmap::OsdMap>> {
        self.shared.core().osdmap().cloned()
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
        self.shared.wait_osdmap(epoch, deadline).await
    }

    /// The monitor the session is with.
    pub fn session(&self) -> Option<Connection> {
        let active = self.shared.core().active();
        active.and_then(|id| self.shared.conn(id))
    }

    /// Whether the session speaks msgr1.
    pub fn is_msgr1(&self) -> bool {
        self.session().is_some_and(|c| c.is_msgr1())
    }

    /// The mode the session runs in (msgr2).
    pub fn con_mode(&self) -> Option<ConMode> {
        self.session().and_then(|c| c.con_mode())
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
        let tid = self
            .shared
            .with(|core| core.add_command(vec![cmd.to_string()], input));
        self.shared.wait_command(tid, deadline).await
    }

    /// [`MonClient::command`] with the command in several parts, as
    /// `rados_mon_command` sends its `cmd` array (MMonCommand's vector of
    /// strings, which the monitor joins).
    pub async fn command_parts(
        &self,
        cmd: Vec<String>,
        input: Bytes,
        timeout: Duration,
    ) -> Result<CommandReply, MonError> {
        let deadline = deadline_after(timeout)?;
        let tid = self.shared.with(|core| core.add_command(cmd, input));
        self.shared.wait_command(tid, deadline).await
    }

    /// The newest and oldest epochs of a map the monitors keep (`osdmap`,
    /// `monmap`, `mdsmap`, `fsmap`): MMonGetVersion, sent again every hunt
    /// interval and on each new session until answered.
    pub async fn get_version(&self, what: &str, timeout: Duration) -> Result<(u64, u64), MonError> {
        let deadline = deadline_after(timeout)?;
        let now = Instant::now();
        let handle = self.shared.with(|core| core.add_version_request(what, now));
        self.shared
            .wait_version(handle, deadline)
            .await
            .ok_or_else(|| MonError::Timeout(format!("no answer to get_version {what}")))
    }

    /// A pool operation (MPoolOp: create or delete a pool, a pool
    /// snapshot, a self-managed snap id), sent again on each new session
    /// until answered, and done when the monitors answered and the OSD map
    /// this client follows has the change's epoch, up to `timeout`. The
    /// reply's `r` is the monitors' result (0 or a negative errno).
    ///
    /// ```no_run
    /// # async fn f(mon: &msgr_monc::MonClient) -> Result<(), msgr_monc::MonError> {
    /// use msgr_monc::core::PoolOpRequest;
    /// let req = PoolOpRequest {
    ///     op: msgr_messages::pool_op::CREATE_SNAP,
    ///     pool: 1,
    ///     name: "before-upgrade".into(),
    ///     snapid: 0,
    ///     crush_rule: 0,
    /// };
    /// let reply = mon.pool_op(req, std::time::Duration::from_secs(30)).await?;
    /// assert_eq!(reply.r, 0);
    /// # Ok(()) }
    /// ```
    pub async fn pool_op(
        &self,
        req: crate::core::PoolOpRequest,
        timeout: Duration,
    ) -> Result<crate::core::PoolOpReply, MonError> {
        let deadline = deadline_after(timeout)?;
        let tid = self.shared.with(|core| core.add_pool_op(req));
        self.shared.wait_pool_op(tid, deadline).await
    }

    /// Drops the current session; the client hunts for a new one (and
    /// reclaims its global id with its ticket). Waits until it is back.
    pub async fn reconnect(&self, timeout: Duration) -> Result<(), MonError> {
        let deadline = deadline_after(timeout)?;
        self.shared.with(|core| core.drop_session());
        self.shared.wait_ready(deadline).await
    }

    /// Closes the session and stops.
    pub async fn shutdown(self) {
        self.ticker.abort();
        self.shared.shut_down();
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
