//! The mgr map (MgrClient's `handle_mgr_map`): with a `mgrmap`
//! subscription in the config (as librados subscribes for its MgrClient),
//! the monitors send each new MgrMap; the newest is kept, and callers wait
//! for one that has what they need (an active, available mgr, to send a
//! command to). Part of the sans-IO [`MonCore`].

use std::sync::Arc;
use std::time::Duration;

use msgr_messages::mgr::{MMgrMap, MgrMap};
use msgr_messages::TypedMessage;
use msgr_protocol::Message;
use msgr_transport::Transport;

use super::MonCore;
use crate::error::MonError;
use crate::{deadline_after, MonClient};

impl MonCore {
    /// An MMgrMap: kept unless it is older than the one kept (a map of
    /// the same epoch replaces it: a new session's subscription sends the
    /// current one again). An unreadable one is named in `last_error`.
    pub(super) fn handle_mgr_map(&mut self, m: &Message) {
        match MMgrMap::from_message(m) {
            Ok(MMgrMap { map }) => {
                if self
                    .mgrmap
                    .as_ref()
                    .is_none_or(|old| map.epoch >= old.epoch)
                {
                    self.mgrmap = Some(Arc::new(map));
                }
            }
            Err(e) => self.last_error = Some(format!("an unreadable MMgrMap: {e}")),
        }
    }

    /// The newest mgr map received (with a `mgrmap` subscription).
    pub fn mgrmap(&self) -> Option<&Arc<MgrMap>> {
        self.mgrmap.as_ref()
    }
}

impl<T: Transport> MonClient<T> {
    /// The newest mgr map received; `None` before the first (the client
    /// needs `mgrmap` among its config's subscriptions).
    pub fn mgrmap(&self) -> Option<Arc<MgrMap>> {
        self.shared.core().mgrmap().cloned()
    }

    /// Waits up to `timeout` for a mgr map that `wanted` accepts (e.g.
    /// [`MgrMap::has_active`]), and returns it. [`MonError::Timeout`] says
    /// what the newest map had by then.
    ///
    /// ```no_run
    /// # async fn f(mon: &msgr_monc::MonClient) -> Result<(), msgr_monc::MonError> {
    /// let map = mon
    ///     .wait_mgrmap(|m| m.has_active(), std::time::Duration::from_secs(10))
    ///     .await?;
    /// println!("active mgr: {} at {}", map.active_name, map.active_addrs);
    /// # Ok(()) }
    /// ```
    pub async fn wait_mgrmap(
        &self,
        mut wanted: impl FnMut(&MgrMap) -> bool,
        timeout: Duration,
    ) -> Result<Arc<MgrMap>, MonError> {
        let deadline = deadline_after(timeout)?;
        let got = self
            .shared
            .wait_for(deadline, |core| match core.mgrmap() {
                Some(m) if wanted(m) => Some(Ok(m.clone())),
                _ if core.is_shut_down() => Some(Err(MonError::Shutdown)),
                _ => None,
            })
            .await;
        match got {
            Some(r) => r,
            None => Err(MonError::Timeout(match self.mgrmap() {
                None => format!("no mgr map within {timeout:?} (is `mgrmap` subscribed?)"),
                Some(m) => format!(
                    "mgr map epoch {} (active {:?}, gid {}, available {}) is still not \
                     the one waited for after {timeout:?}",
                    m.epoch, m.active_name, m.active_gid, m.available
                ),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Transmit;
    use super::*;
    use crate::config::{MonAuth, MonClientConfig};
    use crate::core::ConnId;
    use msgr_encoding::EntityAddrvec;
    use msgr_messages::mgr::MgrStandby;
    use std::time::Instant;

    fn session(subscribe: bool) -> (MonCore, ConnId, Instant, Vec<String>) {
        let addrs: EntityAddrvec = "v2:127.0.0.1:3300/0".parse().unwrap();
        let mut cfg = MonClientConfig::new(vec![addrs.clone()], MonAuth::None);
        if subscribe {
            cfg.subscribe.push(("mgrmap".to_string(), 0));
        }
        let mut core = MonCore::new(cfg, vec![addrs]);
        let now = Instant::now();
        let conn = core.test_session(now);
        let subs = std::iter::from_fn(|| core.poll_transmit())
            .filter_map(|t| match t {
                Transmit::Send {
                    msg: super::super::Outgoing::Subscribe(s),
                    ..
                } => Some(s.what.keys().cloned().collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        (core, conn, now, subs)
    }

    fn map(epoch: u32, active: &str) -> MgrMap {
        MgrMap {
            struct_v: 9,
            epoch,
            active_addrs: "v2:127.0.0.1:6800/1".parse().unwrap(),
            active_gid: 4100 + u64::from(epoch),
            available: true,
            active_name: active.to_string(),
            standbys: vec![MgrStandby {
                gid: 7,
                name: "y".into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_subscription_goes_out_and_the_newest_map_is_kept() {
        let (_, _, _, subs) = session(false);
        assert!(!subs.contains(&"mgrmap".to_string()));
        let (mut core, conn, now, subs) = session(true);
        assert!(subs.contains(&"mgrmap".to_string()));
        assert!(core.mgrmap().is_none());
        let _ = core.handle_message(conn, MMgrMap { map: map(5, "x") }.to_message(0), now);
        assert_eq!(core.mgrmap().unwrap().epoch, 5);
        // An older map (a reordered message) does not replace it.
        let _ = core.handle_message(conn, MMgrMap { map: map(4, "y") }.to_message(0), now);
        assert_eq!(core.mgrmap().unwrap().active_name, "x");
        // The next does: the active mgr failed over.
        let _ = core.handle_message(conn, MMgrMap { map: map(6, "y") }.to_message(0), now);
        let m = core.mgrmap().unwrap();
        assert_eq!((m.epoch, m.active_name.as_str()), (6, "y"));
        assert!(m.has_active());
        assert_eq!(m.names().into_iter().collect::<Vec<_>>(), ["y".to_string()]);
    }

    #[test]
    fn an_unreadable_map_is_named_and_keeps_the_old_one() {
        let (mut core, conn, now, _) = session(true);
        let _ = core.handle_message(conn, MMgrMap { map: map(5, "x") }.to_message(0), now);
        let mut bad = MMgrMap { map: map(6, "y") }.to_message(0);
        bad.front = bad.front.slice(..bad.front.len() - 3);
        let _ = core.handle_message(conn, bad, now);
        assert!(core.last_error().unwrap().contains("MMgrMap"));
        assert_eq!(core.mgrmap().unwrap().epoch, 5);
    }
}
