//! Usage asked of the monitors, as librados's Objecter asks it: the
//! cluster's (`MStatfs`, `rados_cluster_stat`) and pools'
//! (`MGetPoolStats`, `rados_ioctx_pool_stat`). Each request has a tid its
//! reply echoes; it goes out on the session if there is one and again on
//! each new session until answered (a reply from another tid or from a
//! monitor we are not talking to completes nothing). Part of the sans-IO
//! [`MonCore`]; [`MonClient::statfs`] and [`MonClient::pool_stats`] wait on
//! it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use msgr_messages::statfs::*;
use msgr_messages::TypedMessage;
use msgr_protocol::Message;
use msgr_transport::Transport;

use super::{next_id, ConnId, MonCore, Outgoing};
use crate::error::MonError;
use crate::{deadline_after, MonClient};

/// What was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    Statfs { data_pool: Option<i64> },
    PoolStats(Vec<String>),
}

/// A usage reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsReply {
    /// The cluster's usage (MStatfsReply).
    Statfs(CephStatfs),
    /// Each pool's stats, by name, and whether the store stats are per
    /// pool (MGetPoolStatsReply).
    PoolStats {
        /// The stats of the pools that exist.
        stats: BTreeMap<String, PoolStat>,
        /// Whether the OSDs report store stats per pool.
        per_pool: bool,
    },
}

#[derive(Debug)]
struct Pending {
    asked: Asked,
    reply: Option<StatsReply>,
}

/// The usage requests not yet taken.
#[derive(Debug, Default)]
pub(super) struct Stats {
    pending: BTreeMap<u64, Pending>,
}

impl MonCore {
    /// Asks for the cluster's usage (or with `data_pool`, one pool's, as
    /// CephFS does). Returns the request's tid.
    pub fn add_statfs(&mut self, data_pool: Option<i64>) -> u64 {
        self.add_stats(Asked::Statfs { data_pool })
    }

    /// Asks for the stats of `pools` (by name). Returns the request's tid.
    pub fn add_pool_stats(&mut self, pools: Vec<String>) -> u64 {
        self.add_stats(Asked::PoolStats(pools))
    }

    fn add_stats(&mut self, asked: Asked) -> u64 {
        let tid = next_id(&mut self.last_tid);
        self.stats
            .pending
            .insert(tid, Pending { asked, reply: None });
        if let Some(conn) = self.active() {
            self.send_stats(conn, tid);
        }
        tid
    }

    fn send_stats(&mut self, conn: ConnId, tid: u64) {
        let Some(p) = self.stats.pending.get(&tid) else {
            return;
        };
        let fsid = self.monmap.as_ref().map(|m| m.fsid).unwrap_or_default();
        let msg = match &p.asked {
            Asked::Statfs { data_pool } => Outgoing::Statfs(MStatfs {
                tid,
                fsid,
                data_pool: *data_pool,
            }),
            Asked::PoolStats(pools) => Outgoing::GetPoolStats(MGetPoolStats {
                tid,
                fsid,
                pools: pools.clone(),
            }),
        };
        self.send(conn, msg);
    }

    /// On a new session: the unanswered requests go again.
    pub(super) fn resend_stats(&mut self, conn: ConnId) {
        let unanswered: Vec<u64> = self
            .stats
            .pending
            .iter()
            .filter(|(_, p)| p.reply.is_none())
            .map(|(t, _)| *t)
            .collect();
        for tid in unanswered {
            self.send_stats(conn, tid);
        }
    }

    /// A reply from the session: it answers the request of its tid, if
    /// that request is of its kind (an unreadable one answers nothing:
    /// the request waits for the next session or its deadline).
    pub(super) fn handle_stats_reply(&mut self, m: &Message) {
        let reply = match m.msg_type {
            MSG_STATFS_REPLY => MStatfsReply::from_message(m)
                .map(|r| (r.tid, StatsReply::Statfs(r.st)))
                .map_err(|e| format!("an unreadable MStatfsReply (tid {}): {e}", m.tid)),
            MSG_GETPOOLSTATSREPLY => MGetPoolStatsReply::from_message(m)
                .map(|r| {
                    (
                        r.tid,
                        StatsReply::PoolStats {
                            stats: r.pool_stats,
                            per_pool: r.per_pool,
                        },
                    )
                })
                .map_err(|e| format!("an unreadable MGetPoolStatsReply (tid {}): {e}", m.tid)),
            _ => return,
        };
        let (tid, reply) = match reply {
            Ok(r) => r,
            Err(why) => {
                // Said when the request times out.
                self.last_error = Some(why);
                return;
            }
        };
        if let Some(p) = self.stats.pending.get_mut(&tid) {
            let kind_matches = matches!(
                (&p.asked, &reply),
                (Asked::Statfs { .. }, StatsReply::Statfs(_))
                    | (Asked::PoolStats(_), StatsReply::PoolStats { .. })
            );
            if kind_matches && p.reply.is_none() {
                p.reply = Some(reply);
            }
        }
    }

    /// The reply to usage request `tid`, once (then forgotten).
    pub fn take_stats_reply(&mut self, tid: u64) -> Option<StatsReply> {
        self.stats.pending.get(&tid)?.reply.as_ref()?;
        self.stats.pending.remove(&tid).and_then(|p| p.reply)
    }

    /// Gives up on usage request `tid`.
    pub fn forget_stats(&mut self, tid: u64) {
        self.stats.pending.remove(&tid);
    }
}

impl<T: Transport> MonClient<T> {
    /// The cluster's usage (librados's `rados_cluster_stat`): MStatfs to
    /// the monitors, answered from the mgr's reports (zeros without a
    /// mgr).
    pub async fn statfs(&self, timeout: Duration) -> Result<CephStatfs, MonError> {
        match self.wait_stats(|c| c.add_statfs(None), timeout).await? {
            StatsReply::Statfs(st) => Ok(st),
            StatsReply::PoolStats { .. } => Err(MonError::BadReply(
                "pool stats answered a statfs".to_string(),
            )),
        }
    }

    /// The stats of `pools` (by name; those that do not exist are left
    /// out), and whether their store stats are per pool:
    /// MGetPoolStats, answered from the mgr's reports.
    pub async fn pool_stats(
        &self,
        pools: &[String],
        timeout: Duration,
    ) -> Result<(BTreeMap<String, PoolStat>, bool), MonError> {
        match self
            .wait_stats(|c| c.add_pool_stats(pools.to_vec()), timeout)
            .await?
        {
            StatsReply::PoolStats { stats, per_pool } => Ok((stats, per_pool)),
            StatsReply::Statfs(_) => Err(MonError::BadReply(
                "a statfs answered pool stats".to_string(),
            )),
        }
    }

    async fn wait_stats(
        &self,
        add: impl FnOnce(&mut MonCore) -> u64,
        timeout: Duration,
    ) -> Result<StatsReply, MonError> {
        let deadline: Instant = deadline_after(timeout)?;
        let tid = self.shared.with(add);
        self.shared
            .wait_answer(
                deadline,
                |core| core.take_stats_reply(tid),
                |core| core.forget_stats(tid),
                || format!("no answer to usage request {tid} within {timeout:?}"),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MonCore, Outgoing, Transmit};
    use super::*;
    use crate::config::{MonAuth, MonClientConfig};
    use msgr_encoding::{EntityAddrvec, Uuid};

    fn core_with_session() -> (MonCore, ConnId, Instant) {
        let addrs: EntityAddrvec = "v2:127.0.0.1:3300/0".parse().unwrap();
        let cfg = MonClientConfig::new(vec![addrs.clone()], MonAuth::None);
        let mut core = MonCore::new(cfg, vec![addrs]);
        let now = Instant::now();
        core.handle_timeout(now);
        let conn = connect_first(&mut core);
        core.handle_connect(conn, now);
        while core.poll_transmit().is_some() {}
        (core, conn, now)
    }

    fn connect_first(core: &mut MonCore) -> ConnId {
        loop {
            match core.poll_transmit() {
                Some(Transmit::Connect { conn, .. }) => return conn,
                Some(_) => {}
                None => panic!("no connect"),
            }
        }
    }

    fn sent(core: &mut MonCore) -> Vec<(ConnId, Outgoing)> {
        std::iter::from_fn(|| core.poll_transmit())
            .filter_map(|t| match t {
                Transmit::Send { conn, msg } => Some((conn, msg)),
                _ => None,
            })
            .collect()
    }

    fn pool_reply(tid: u64) -> Message {
        MGetPoolStatsReply {
            tid,
            fsid: Uuid::default(),
            pool_stats: BTreeMap::from([("test".to_string(), PoolStat::default())]),
            per_pool: true,
        }
        .to_message(0)
    }

    #[test]
    fn a_reply_answers_its_own_tid_and_kind_once() {
        let (mut core, conn, now) = core_with_session();
        let a = core.add_pool_stats(vec!["test".into()]);
        let b = core.add_statfs(None);
        let out = sent(&mut core);
        assert!(
            matches!(&out[..], [(_, Outgoing::GetPoolStats(p)), (_, Outgoing::Statfs(s))]
            if p.tid == a && p.pools == ["test"] && s.tid == b && s.data_pool.is_none())
        );
        // A pool stats reply with the statfs's tid answers nothing.
        let _ = core.handle_message(conn, pool_reply(b), now);
        assert_eq!(core.take_stats_reply(b), None);
        let _ = core.handle_message(conn, pool_reply(a), now);
        assert!(matches!(
            core.take_stats_reply(a),
            Some(StatsReply::PoolStats { per_pool: true, ref stats }) if stats.contains_key("test")
        ));
        assert_eq!(core.take_stats_reply(a), None);
        let st = CephStatfs {
            kb: 9,
            ..Default::default()
        };
        let r = MStatfsReply {
            tid: b,
            fsid: Uuid::default(),
            version: 1,
            st,
        };
        let _ = core.handle_message(conn, r.to_message(0), now);
        assert_eq!(core.take_stats_reply(b), Some(StatsReply::Statfs(st)));
    }

    #[test]
    fn unanswered_requests_go_again_on_a_new_session() {
        let (mut core, conn, now) = core_with_session();
        let a = core.add_statfs(None);
        let _ = sent(&mut core);
        core.handle_reset(conn);
        // Nothing goes out without a session; the hunt finds another.
        let later = now + Duration::from_secs(5);
        core.handle_timeout(later);
        let conn2 = connect_first(&mut core);
        assert_ne!(conn, conn2);
        core.handle_connect(conn2, later);
        let again = sent(&mut core);
        assert!(again
            .iter()
            .any(|(c, m)| *c == conn2 && matches!(m, Outgoing::Statfs(s) if s.tid == a)));
        // A reply on the old, reset connection is not heard.
        let r = MStatfsReply {
            tid: a,
            fsid: Uuid::default(),
            version: 1,
            st: CephStatfs::default(),
        };
        let _ = core.handle_message(conn, r.to_message(0), later);
        assert_eq!(core.take_stats_reply(a), None);
        let _ = core.handle_message(conn2, r.to_message(0), later);
        assert!(core.take_stats_reply(a).is_some());
        // Forgotten requests are not sent again.
        let b = core.add_statfs(None);
        let _ = sent(&mut core);
        core.forget_stats(b);
        core.resend_stats(conn2);
        assert!(sent(&mut core)
            .iter()
            .all(|(_, m)| !matches!(m, Outgoing::Statfs(s) if s.tid == b)));
    }

    #[test]
    fn an_unreadable_reply_answers_nothing() {
        let (mut core, conn, now) = core_with_session();
        let a = core.add_pool_stats(vec!["x".into()]);
        let mut bad = pool_reply(a);
        bad.front = bad.front.slice(..bad.front.len() - 3);
        let _ = core.handle_message(conn, bad, now);
        assert_eq!(core.take_stats_reply(a), None);
    }
}
