//! Following the cluster log (librados's `rados_monitor_log`): a
//! `log-LEVEL` subscription, kept on each new session, and the entries of
//! the monitors' MLogs queued (bounded: the oldest go when a reader falls
//! behind by [`LOG_QUEUE`]) until [`MonClient::log_entries`] takes them.
//! Part of the sans-IO [`MonCore`].
//!
//! A monitor keeps every subscription a session made (there is no
//! unsubscribe), so after a change of level librados hands its callback
//! both streams: the old level's entries and, for a lower level, each entry
//! twice. Here the entries are the level asked for, each once: those below
//! it are dropped, and those seen already (by sender, sequence and stamp,
//! over the last [`LOG_SEEN`]) too; a session subscribes again only when
//! the new level is lower than what it follows.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Duration;

use msgr_messages::log::{LogEntry, MLog};
use msgr_messages::{MMonSubscribe, SubscribeItem, TypedMessage};
use msgr_protocol::Message;
use msgr_transport::Transport;

use super::{ConnId, MonCore, Outgoing};
use crate::error::MonError;
use crate::{deadline_after, MonClient};

/// How many entries wait for a reader at most.
pub const LOG_QUEUE: usize = 10_000;
/// How many recent entries are remembered to drop a second copy.
pub const LOG_SEEN: usize = 4096;

/// What tells one entry from another: its sender, sequence and stamp.
type EntryKey = (u8, i64, u64, u32, u32);

fn key(e: &LogEntry) -> EntryKey {
    (e.rank.kind.0, e.rank.num, e.seq, e.stamp.sec, e.stamp.nsec)
}

/// The subscription and what it brought.
#[derive(Debug, Default)]
pub(super) struct LogFollow {
    /// `log-info`, ...: the subscription's name.
    sub: Option<String>,
    /// The lowest priority kept.
    level: u16,
    /// The lowest priority the session's subscriptions bring (`None`: it
    /// has none yet).
    session_level: Option<u16>,
    entries: VecDeque<LogEntry>,
    /// Entries dropped because the queue was full.
    dropped: u64,
    /// The last [`LOG_SEEN`] entries' keys, oldest first, and as a set.
    seen: VecDeque<EntryKey>,
    seen_set: HashSet<EntryKey>,
}

impl LogFollow {
    /// Whether `e` is new; remembers it.
    fn first_sight(&mut self, e: &LogEntry) -> bool {
        let k = key(e);
        if !self.seen_set.insert(k) {
            return false;
        }
        self.seen.push_back(k);
        if self.seen.len() > LOG_SEEN {
            if let Some(old) = self.seen.pop_front() {
                self.seen_set.remove(&old);
            }
        }
        true
    }
}

/// The subscription a level names, as librados's monitor_log maps it,
/// and the lowest priority it brings (`LogMonitor::sub_name_to_id`);
/// `None`: not a level.
pub fn log_subscription(level: &str) -> Option<(&'static str, u16)> {
    use msgr_messages::log::prio;
    Some(match level {
        "debug" => ("log-debug", prio::DEBUG),
        "info" => ("log-info", prio::INFO),
        "warn" | "warning" => ("log-warn", prio::WARN),
        "err" | "error" => ("log-error", prio::ERROR),
        "sec" => ("log-sec", prio::SEC),
        _ => return None,
    })
}

impl MonCore {
    /// Follows the cluster log from `level` up (`debug`, `info`, `warn`,
    /// `err`, `sec`): subscribes on the session now and on each new one.
    /// Another level replaces the first: entries below it are dropped from
    /// then on, and a lower one subscribes again.
    pub fn follow_log(&mut self, level: &str) -> Result<(), MonError> {
        let (sub, prio) = log_subscription(level).ok_or_else(|| {
            MonError::BadReply(format!(
                "log level {level:?}: expected debug, info, warn, err or sec"
            ))
        })?;
        self.log.sub = Some(sub.to_string());
        self.log.level = prio;
        let covered = self.log.session_level.is_some_and(|l| l <= prio);
        if let (Some(conn), false) = (self.active(), covered) {
            self.send_log_sub(conn);
        }
        Ok(())
    }

    /// A new session: it has no subscription yet; the log's.
    pub(super) fn log_session(&mut self, conn: ConnId) {
        self.log.session_level = None;
        self.send_log_sub(conn);
    }

    /// The log subscription on the session (new, or for a lower level).
    fn send_log_sub(&mut self, conn: ConnId) {
        let Some(sub) = self.log.sub.clone() else {
            return;
        };
        let level = self.log.level;
        self.log.session_level = Some(self.log.session_level.map_or(level, |l| l.min(level)));
        // From 0: the monitor sends what comes from now on.
        let what = BTreeMap::from([(sub, SubscribeItem { start: 0, flags: 0 })]);
        let m = MMonSubscribe {
            what,
            hostname: self.cfg.hostname.clone(),
        };
        self.send(conn, Outgoing::Subscribe(m));
    }

    /// An MLog from the session: its entries queue (only while following).
    pub(super) fn handle_log(&mut self, m: &Message) {
        if self.log.sub.is_none() {
            return;
        }
        match MLog::from_message(m) {
            Ok(log) => {
                for e in log.entries {
                    if e.prio < self.log.level || !self.log.first_sight(&e) {
                        continue;
                    }
                    if self.log.entries.len() >= LOG_QUEUE {
                        self.log.entries.pop_front();
                        self.log.dropped = self.log.dropped.saturating_add(1);
                    }
                    self.log.entries.push_back(e);
                }
            }
            Err(e) => self.last_error = Some(format!("an unreadable MLog: {e}")),
        }
    }

    /// The entries queued, oldest first, and how many were dropped since
    /// the last take (the queue was full).
    pub fn take_log(&mut self) -> (Vec<LogEntry>, u64) {
        let dropped = std::mem::take(&mut self.log.dropped);
        (self.log.entries.drain(..).collect(), dropped)
    }

    fn has_log(&self) -> bool {
        !self.log.entries.is_empty() || self.log.dropped > 0
    }
}

impl<T: Transport> MonClient<T> {
    /// Follows the cluster log from `level` up (`debug`, `info`, `warn`,
    /// `err`, `sec`), as `rados_monitor_log` does; entries are then read
    /// with [`MonClient::log_entries`].
    pub fn follow_log(&self, level: &str) -> Result<(), MonError> {
        self.shared.with(|core| core.follow_log(level))
    }

    /// The cluster log entries that arrived, waiting up to `timeout` for
    /// one (an empty list: none by then), and how many were dropped
    /// because nobody read them (more than [`LOG_QUEUE`] waiting).
    pub async fn log_entries(&self, timeout: Duration) -> Result<(Vec<LogEntry>, u64), MonError> {
        let deadline = deadline_after(timeout)?;
        let got = self
            .shared
            .wait_for(deadline, |core| match core.has_log() {
                true => Some(Ok(core.take_log())),
                false if core.is_shut_down() => Some(Err(MonError::Shutdown)),
                false => None,
            })
            .await;
        got.unwrap_or(Ok((Vec::new(), 0)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Transmit;
    use super::*;
    use crate::config::{MonAuth, MonClientConfig};
    use msgr_encoding::{AuthName, EntityAddrvec, EntityName, EntityType, UTime, Uuid};
    use std::time::Instant;

    fn entry_at(seq: u64, prio: u16) -> LogEntry {
        LogEntry { prio, ..entry(seq) }
    }

    fn entry(seq: u64) -> LogEntry {
        LogEntry {
            name: AuthName {
                kind: EntityType::CLIENT,
                id: "admin".into(),
            },
            rank: EntityName::new(EntityType::CLIENT, 1),
            addrs: EntityAddrvec::default(),
            stamp: UTime::default(),
            seq,
            prio: 1,
            msg: format!("m{seq}"),
            channel: "cluster".into(),
        }
    }

    fn mlog(seqs: std::ops::Range<u64>) -> Message {
        MLog {
            fsid: Uuid::default(),
            entries: seqs.map(entry).collect(),
        }
        .to_message(0)
    }

    fn session() -> (MonCore, ConnId, Instant) {
        let addrs: EntityAddrvec = "v2:127.0.0.1:3300/0".parse().unwrap();
        let mut core = MonCore::new(
            MonClientConfig::new(vec![addrs.clone()], MonAuth::None),
            vec![addrs],
        );
        let now = Instant::now();
        let conn = core.test_session(now);
        while core.poll_transmit().is_some() {}
        (core, conn, now)
    }

    fn subscribed(core: &mut MonCore) -> Vec<String> {
        std::iter::from_fn(|| core.poll_transmit())
            .filter_map(|t| match t {
                Transmit::Send {
                    msg: Outgoing::Subscribe(s),
                    ..
                } => Some(s.what.keys().cloned().collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn levels_are_librados_subscriptions() {
        assert_eq!(log_subscription("warning"), Some(("log-warn", 3)));
        assert_eq!(log_subscription("err"), Some(("log-error", 4)));
        assert_eq!(log_subscription("loud"), None);
        let (mut core, _, _) = session();
        assert!(core.follow_log("loud").is_err());
    }

    #[test]
    fn following_subscribes_now_and_on_each_new_session_and_queues_entries() {
        let (mut core, conn, now) = session();
        // Not following: an MLog is not kept.
        let _ = core.handle_message(conn, mlog(0..2), now);
        assert_eq!(core.take_log().0.len(), 0);
        core.follow_log("info").unwrap();
        assert_eq!(subscribed(&mut core), ["log-info"]);
        let _ = core.handle_message(conn, mlog(1..4), now);
        let (got, dropped) = core.take_log();
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(dropped, 0);
        // A new session subscribes again.
        core.handle_reset(conn);
        let later = now + Duration::from_secs(5);
        let conn2 = core.test_session(later);
        assert!(subscribed(&mut core).contains(&"log-info".to_string()));
        // An unreadable MLog is named, and queues nothing.
        let mut bad = mlog(0..1);
        bad.front = bad.front.slice(..bad.front.len() - 1);
        let _ = core.handle_message(conn2, bad, later);
        assert!(core.last_error().unwrap().contains("MLog"));
        assert!(core.take_log().0.is_empty());
    }

    #[test]
    fn a_reader_that_falls_behind_loses_the_oldest() {
        let (mut core, conn, now) = session();
        core.follow_log("debug").unwrap();
        let n = LOG_QUEUE as u64;
        let _ = core.handle_message(conn, mlog(0..n + 5), now);
        let (got, dropped) = core.take_log();
        assert_eq!(got.len(), LOG_QUEUE);
        assert_eq!((got[0].seq, dropped), (5, 5));
    }

    #[test]
    fn another_level_filters_and_a_lower_one_subscribes_again_without_duplicates() {
        use msgr_messages::log::prio;
        let (mut core, conn, now) = session();
        let send = |core: &mut MonCore, entries: Vec<LogEntry>| {
            let m = MLog {
                fsid: Uuid::default(),
                entries,
            };
            let _ = core.handle_message(conn, m.to_message(0), now);
        };
        core.follow_log("info").unwrap();
        assert_eq!(subscribed(&mut core), ["log-info"]);
        // Higher: no new subscription (log-info brings it); debug and info
        // entries the monitor still sends are dropped.
        core.follow_log("warn").unwrap();
        assert!(subscribed(&mut core).is_empty());
        send(
            &mut core,
            vec![
                entry_at(1, prio::INFO),
                entry_at(2, prio::WARN),
                entry_at(3, prio::ERROR),
            ],
        );
        let seqs = |got: Vec<LogEntry>| got.iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(core.take_log().0), [2, 3]);
        // Lower: subscribed again; both subscriptions' copies come, each
        // entry is kept once.
        core.follow_log("debug").unwrap();
        assert_eq!(subscribed(&mut core), ["log-debug"]);
        send(
            &mut core,
            vec![entry_at(4, prio::DEBUG), entry_at(5, prio::INFO)],
        );
        send(
            &mut core,
            vec![entry_at(5, prio::INFO), entry_at(6, prio::INFO)],
        );
        assert_eq!(seqs(core.take_log().0), [4, 5, 6]);
        // Already seen before the change: not again.
        send(&mut core, vec![entry_at(3, prio::ERROR)]);
        assert!(core.take_log().0.is_empty());
        // A new session subscribes at the level followed now.
        core.handle_reset(conn);
        let later = now + Duration::from_secs(5);
        core.test_session(later);
        assert!(subscribed(&mut core).contains(&"log-debug".to_string()));
    }
}
