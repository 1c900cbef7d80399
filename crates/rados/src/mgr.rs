//! Commands to the active mgr (librados's `rados_mgr_command` and
//! `rados_mgr_command_target`, Python's `Rados.mgr_command`), as
//! librados's MgrClient sends them:
//!
//! - the client follows the monitors' MgrMap (a `mgrmap` subscription,
//!   taken on connect as librados does) and sends to the active mgr's
//!   addresses, as a peer of type MGR;
//! - a command is MMgrCommand (fsid zero) to a mgr whose features have
//!   SERVER_OCTOPUS (Ceph 15+), MCommand to an older one; a command for a
//!   named mgr (`mgr_command_target`, a `tell`) is MCommand carrying the
//!   cluster's fsid, which tells the mgr it is a tell;
//! - with no active, available mgr the command waits for one (MgrClient
//!   queues it) until the timeout, then fails with ETIMEDOUT, as
//!   librados's `cond.wait_for(rados_mon_op_timeout)` does;
//! - when the active mgr changes while a command is out (a new MgrMap
//!   names another gid or other addresses), the command is sent again to
//!   the new one, as MgrClient's `reconnect` resends its pending commands;
//!   when the connection resets, again after `mgr_connect_retry_interval`
//!   (1 s). A command may so run twice on a mgr that failed over after
//!   running it: MgrClient does the same.

use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_encoding::{EntityAddrvec, EntityType, Uuid};
use msgr_messages::mgr::{MMgrCommand, MMgrCommandReply, MgrMap};
use msgr_messages::{MCommand, MCommandReply, TypedMessage};
use msgr_messenger::CallError;
use msgr_monc::{CommandReply, MonError};
use msgr_protocol::Message;
use msgr_transport::Transport;

use super::admin::ADMIN_TIMEOUT;
use super::Rados;
use crate::error::RadosError;

/// `ETIMEDOUT`.
const ETIMEDOUT: i32 = -110;
/// `ENXIO`: the named mgr is not the active one.
const ENXIO: i32 = -6;
/// `EIO`: the call failed otherwise.
const EIO: i32 = -5;

/// `mgr_connect_retry_interval`: how long MgrClient waits before
/// connecting again to a mgr whose connection reset.
pub const MGR_RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// Where a command goes, and as what, in a given mgr map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// Wait for another map: none has an active, available mgr.
    Wait,
    /// The named mgr is not the active one (ENXIO, as MgrClient ends a
    /// tell to a mgr that is not active).
    NotActive {
        /// The active mgr's name.
        active: String,
    },
    /// Send to the active mgr.
    Send {
        /// Its global id (a change of it is a failover).
        gid: u64,
        /// Its addresses.
        addrs: EntityAddrvec,
        /// MMgrCommand (true) or MCommand.
        mgr_command: bool,
    },
}

/// Where MgrClient sends a command in `map`: to the active mgr if it is
/// available; a tell (`target`) only if the target is the active one
/// (an empty name is any), and then always as MCommand.
pub(crate) fn route(map: &MgrMap, target: Option<&str>) -> Route {
    if !map.has_active() {
        return Route::Wait;
    }
    if let Some(name) = target.filter(|n| !n.is_empty()) {
        if name != map.active_name {
            return Route::NotActive {
                active: map.active_name.clone(),
            };
        }
    }
    Route::Send {
        gid: map.active_gid,
        addrs: map.active_addrs.clone(),
        mgr_command: target.is_none() && map.active_takes_mgr_command(),
    }
}

/// The message for `cmd`: MMgrCommand with a zero fsid (MgrClient's
/// `start_command`), or MCommand with `fsid` (a tell carries the
/// cluster's; a command to a pre-Octopus mgr a zero one).
fn command_message(mgr_command: bool, fsid: Uuid, cmd: &str, input: &Bytes) -> Message {
    let cmd = vec![cmd.to_string()];
    match mgr_command {
        true => MMgrCommand {
            tid: 0,
            fsid: Uuid::default(),
            cmd,
            input: input.clone(),
        }
        .to_message(0),
        false => MCommand {
            tid: 0,
            fsid,
            cmd,
            input: input.clone(),
        }
        .to_message(0),
    }
}

/// The reply to what [`command_message`] sent.
fn read_reply(mgr_command: bool, reply: &Message) -> Result<CommandReply, RadosError> {
    if mgr_command {
        let r = MMgrCommandReply::from_message(reply)
            .map_err(|e| RadosError::BadReply(format!("the mgr's MMgrCommandReply: {e}")))?;
        Ok(CommandReply {
            r: r.r,
            rs: r.rs,
            output: r.output,
        })
    } else {
        let r = MCommandReply::from_message(reply)
            .map_err(|e| RadosError::BadReply(format!("the mgr's MCommandReply: {e}")))?;
        Ok(CommandReply {
            r: r.r,
            rs: r.rs,
            output: r.output,
        })
    }
}

fn timed_out(what: String) -> RadosError {
    RadosError::Os {
        errno: ETIMEDOUT,
        what,
    }
}

impl<T: Transport> Rados<T> {
    /// Sends a command (normally one JSON object) to the active mgr, as
    /// `rados_mgr_command` and `ceph` for the mgr's commands do, and
    /// returns its reply (`r` < 0: the mgr's errno, `rs` its status,
    /// `output` what it printed). Waits for an active mgr, and follows a
    /// failover, up to [`ADMIN_TIMEOUT`]; then ETIMEDOUT (see the module
    /// notes, [`Rados::mgr_command_within`] for another timeout).
    ///
    /// ```no_run
    /// # async fn f(rados: msgr_rados::Rados) -> Result<(), msgr_rados::RadosError> {
    /// let r = rados
    ///     .mgr_command(r#"{"prefix": "mgr services", "format": "json"}"#, Default::default())
    ///     .await?;
    /// assert_eq!(r.r, 0, "{}", r.rs);
    /// println!("{}", String::from_utf8_lossy(&r.output));
    /// # Ok(()) }
    /// ```
    pub async fn mgr_command(&self, cmd: &str, input: Bytes) -> Result<CommandReply, RadosError> {
        self.mgr_command_within(None, cmd, input, ADMIN_TIMEOUT)
            .await
    }

    /// Sends a command to the mgr named `name` (`x` of `mgr.x`), as
    /// `rados_mgr_command_target` (`ceph tell mgr.x ...`) does: an
    /// MCommand carrying the cluster's fsid. Only the active mgr takes
    /// commands: if another is active, ENXIO (MgrClient ends a pending
    /// tell with ENXIO when the active mgr is not its target; it waits for
    /// the next map first, this says so at once).
    pub async fn mgr_command_target(
        &self,
        name: &str,
        cmd: &str,
        input: Bytes,
    ) -> Result<CommandReply, RadosError> {
        self.mgr_command_within(Some(name), cmd, input, ADMIN_TIMEOUT)
            .await
    }

    /// [`Rados::mgr_command`] (`target` `None`) or
    /// [`Rados::mgr_command_target`], waiting up to `timeout` (librados's
    /// `rados_mon_op_timeout`) for an active mgr and its reply.
    pub async fn mgr_command_within(
        &self,
        target: Option<&str>,
        cmd: &str,
        input: Bytes,
        timeout: Duration,
    ) -> Result<CommandReply, RadosError> {
        let start = Instant::now();
        let left = || timeout.saturating_sub(start.elapsed());
        // A tell carries the cluster's fsid (which tells the mgr it is
        // one); a command sent as MCommand to an older mgr a zero one.
        let fsid = match target {
            Some(_) => self.mon.monmap().fsid,
            None => Uuid::default(),
        };
        loop {
            let map = match self.mon.wait_mgrmap(MgrMap::has_active, left()).await {
                Ok(m) => m,
                Err(MonError::Timeout(why)) => {
                    return Err(timed_out(format!(
                        "mgr command {cmd}: no active mgr within {timeout:?} ({why}); \
                         check `ceph mgr stat`"
                    )))
                }
                Err(e) => return Err(e.into()),
            };
            let (gid, addrs, mgr_command) = match route(&map, target) {
                // wait_mgrmap returned a map with an active mgr.
                Route::Wait => continue,
                Route::NotActive { active } => {
                    return Err(RadosError::Os {
                        errno: ENXIO,
                        what: format!(
                            "mgr command to mgr.{}: the active mgr is mgr.{active}",
                            target.unwrap_or_default()
                        ),
                    })
                }
                Route::Send {
                    gid,
                    addrs,
                    mgr_command,
                } => (gid, addrs, mgr_command),
            };
            let conn = self.messenger.connect(&addrs, EntityType::MGR);
            let msg = command_message(mgr_command, fsid, cmd, &input);
            let failover = self.mon.wait_mgrmap(
                |m| m.epoch > map.epoch && (m.active_gid != gid || m.active_addrs != addrs),
                left(),
            );
            tokio::select! {
                r = conn.call(msg, left()) => match r {
                    Ok(reply) => return read_reply(mgr_command, &reply),
                    Err(CallError::Timeout { after }) => {
                        return Err(timed_out(format!(
                            "mgr command {cmd}: no reply from mgr.{} ({addrs}) within {after:?}",
                            map.active_name
                        )))
                    }
                    Err(CallError::Reset | CallError::Closed) => {
                        tracing::info!(target: "msgr::rados", mgr = %map.active_name, "mgr connection reset: the command goes again");
                        msgr_uring::rt::sleep(MGR_RETRY_INTERVAL.min(left())).await;
                    }
                    Err(e) => {
                        return Err(RadosError::Os {
                            errno: EIO,
                            what: format!("mgr command {cmd} to mgr.{}: {e}", map.active_name),
                        })
                    }
                },
                changed = failover => match changed {
                    Ok(m) => {
                        tracing::info!(target: "msgr::rados", from = %map.active_name, to = %m.active_name, epoch = m.epoch, "active mgr changed: the command goes again");
                    }
                    // The time is up: the call's own timeout says so.
                    Err(MonError::Timeout(_)) => {
                        return Err(timed_out(format!(
                            "mgr command {cmd}: no reply from mgr.{} ({addrs}) within {timeout:?}",
                            map.active_name
                        )))
                    }
                    Err(e) => return Err(e.into()),
                },
            }
            if left().is_zero() {
                return Err(timed_out(format!(
                    "mgr command {cmd}: no reply from a mgr within {timeout:?}"
                )));
            }
        }
    }
}

impl<T: Transport> Rados<T> {
    /// One beacon of a service daemon to the active mgr, as MgrClient
    /// sends them (`rados_service_register`): `open` (MMgrOpen) first
    /// when the session with the active mgr is new (another mgr than
    /// `*opened` names, or a connection that is not up), then an
    /// MMgrReport with `status` (None: unchanged). Without an active mgr,
    /// nothing is sent and `*opened` is cleared. Returns whether it sent.
    pub async fn service_beacon(
        &self,
        open: &msgr_messages::mgr_service::MMgrOpen,
        status: Option<std::collections::BTreeMap<String, String>>,
        opened: &mut Option<u64>,
    ) -> bool {
        let Some(map) = self.mon.mgrmap().filter(|m| m.has_active()) else {
            *opened = None;
            return false;
        };
        let conn = self.messenger.connect(&map.active_addrs, EntityType::MGR);
        if *opened != Some(map.active_gid) || !conn.is_connected() {
            conn.send_nowait(open.to_message(conn.features()));
            *opened = Some(map.active_gid);
        }
        let report = msgr_messages::mgr_service::MMgrReport {
            daemon_name: open.daemon_name.clone(),
            service_name: open.service_name.clone(),
            daemon_status: status,
        };
        conn.send_nowait(report.to_message(conn.features()));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_messages::mgr::FEATUREMASK_SERVER_OCTOPUS;

    fn map(available: bool, features: u64) -> MgrMap {
        MgrMap {
            epoch: 3,
            active_gid: 4123,
            active_name: "x".into(),
            active_addrs: "v2:127.0.0.1:6800/77".parse().unwrap(),
            available,
            active_mgr_features: features,
            ..Default::default()
        }
    }

    #[test]
    fn commands_go_as_mgr_client_routes_them() {
        // No active mgr, or not yet available: wait.
        assert_eq!(route(&MgrMap::default(), None), Route::Wait);
        assert_eq!(route(&map(false, u64::MAX), None), Route::Wait);
        let octopus = map(true, FEATUREMASK_SERVER_OCTOPUS);
        let Route::Send {
            gid, mgr_command, ..
        } = route(&octopus, None)
        else {
            panic!("not sent")
        };
        assert_eq!((gid, mgr_command), (4123, true));
        // Part of the mask is not the feature: MCommand.
        let older = map(true, 1 << 16);
        assert!(matches!(
            route(&older, None),
            Route::Send {
                mgr_command: false,
                ..
            }
        ));
        // A tell: MCommand, to the active mgr only.
        assert!(matches!(
            route(&octopus, Some("x")),
            Route::Send {
                mgr_command: false,
                ..
            }
        ));
        assert_eq!(
            route(&octopus, Some("y")),
            Route::NotActive { active: "x".into() }
        );
        assert!(matches!(route(&octopus, Some("")), Route::Send { .. }));
    }

    #[test]
    fn the_messages_are_the_ones_routed() {
        let fsid = Uuid([7; 16]);
        let input = Bytes::from_static(b"in");
        let m = command_message(true, fsid, "{\"prefix\": \"mgr services\"}", &input);
        let c = MMgrCommand::from_message(&m).unwrap();
        assert_eq!(c.fsid, Uuid::default());
        assert_eq!(c.cmd, ["{\"prefix\": \"mgr services\"}"]);
        assert_eq!(c.input, input);
        let m = command_message(false, fsid, "x", &input);
        assert_eq!(MCommand::from_message(&m).unwrap().fsid, fsid);
        // A reply of the other kind is a typed error, not a panic.
        let reply = MCommandReply {
            tid: 1,
            r: -22,
            rs: "no".into(),
            output: Bytes::new(),
        }
        .to_message(0);
        assert_eq!(read_reply(false, &reply).unwrap().r, -22);
        assert!(matches!(
            read_reply(true, &reply),
            Err(RadosError::BadReply(_))
        ));
    }
}
