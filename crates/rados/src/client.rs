//! The async client: a monitor session that keeps the OSD map current, a
//! lossy-client messenger to the OSDs, and the [`Objecter`] between them,
//! driven under one lock (each step is short: no I/O happens under it, and
//! no placement: CRUSH runs on a snapshot of the map after the lock is
//! released). A request's own placement runs in the task that submits it,
//! as librados computes it in the caller's thread; the placements a new
//! map, a reset, a timeout or an OSD's reply call for run on tokio's
//! blocking pool, never in the messenger's dispatch callback nor on the
//! runtime's workers, where the messenger's connections run (a peer's
//! CRUSH map may make each mapping cost up to its budget).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use msgr_messages::{MOSDBackoff, MOSDOpReply, TypedMessage, MSG_OSD_BACKOFF, MSG_OSD_OPREPLY};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger};
use msgr_monc::identity::Identity;
use msgr_monc::{MonClient, MonError};
use msgr_osdmap::OsdMap;
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;
use msgr_uring::rt;
use tokio::sync::Notify;

use crate::error::RadosError;
use crate::ioctx::IoCtx;
use crate::objecter::{Limits, Objecter};
use crate::shared::{lock, Shared};

#[path = "admin.rs"]
pub(crate) mod admin;
#[path = "mgr.rs"]
pub(crate) mod mgr;

/// How long a reset connection's ops wait before they go again (the OSD
/// may be restarting; its new address comes with a new map).
const RESET_DELAY: Duration = Duration::from_millis(200);
struct OsdDispatch(Arc<Shared>);

impl Dispatcher for OsdDispatch {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        // Only from the OSD's current connection.
        let Some(osd) = self.0.osd_of(conn) else {
            return;
        };
        match msg.msg_type {
            MSG_OSD_OPREPLY => {
                let Ok(reply) = MOSDOpReply::from_message(&msg) else {
                    // Unreadable: the request stays in flight and goes
                    // again on the next reset or map change.
                    return;
                };
                if let Some(r) = &reply.redirect {
                    tracing::info!(target: "msgr::rados", osd, tid = reply.tid, pool = r.locator.pool, "request redirected");
                }
                lock(&self.0.objecter).handle_reply(osd, reply);
            }
            MSG_OSD_BACKOFF => {
                let Ok(b) = MOSDBackoff::from_message(&msg) else {
                    return;
                };
                tracing::info!(target: "msgr::rados", osd, op = b.op, id = b.id, pg = %b.pgid.pgid, "backoff");
                let ack = lock(&self.0.objecter).handle_backoff(osd, b);
                if let Some(ack) = ack {
                    conn.send_nowait(ack.to_message(conn.features()));
                }
            }
            msgr_messages::MSG_WATCH_NOTIFY => {
                crate::watch::dispatch(&self.0, &msg);
                return;
            }
            _ => return,
        }
        self.0.flush();
        // A resend the reply asked for (EAGAIN, a redirect) is placed off
        // this callback.
        if lock(&self.0.objecter).placements_waiting() {
            self.0.place_soon();
        }
    }

    fn ms_handle_reset(&self, conn: &Connection) {
        let Some(osd) = self.0.osd_of(conn) else {
            return;
        };
        lock(&self.0.conns).remove(conn);
        let shared = self.0.clone();
        rt::spawn(async move {
            rt::sleep(RESET_DELAY).await;
            lock(&shared.objecter).handle_reset(osd);
            crate::watch::on_reset(&shared, osd);
            shared.place_aside().await;
        });
    }
}

/// A RADOS client, over transport `T` (to the monitors and the OSDs):
/// a monitor session that keeps the OSD map current, and the objecter
/// sending each request to where the map places it. Made by
/// [`RadosConfig`](crate::RadosConfig) as a librados program makes one,
/// or by [`Rados::connect`] from an [`Identity`] a tool resolved.
///
/// ```no_run
/// use msgr_rados::RadosConfig;
/// # async fn f() -> Result<(), msgr_rados::RadosError> {
/// let rados = RadosConfig::new().conf_read_file("/etc/ceph/ceph.conf")?.connect().await?;
/// for (id, name) in rados.pool_list() {
///     println!("{id} {name}");
/// }
/// let io = rados.ioctx("rbd")?;
/// println!("{} objects", io.list().await?.len());
/// rados.shutdown().await;
/// # Ok(()) }
/// ```
pub struct Rados<T: Transport = Tcp> {
    mon: Arc<MonClient<T>>,
    pub(crate) shared: Arc<Shared>,
    messenger: Messenger<T>,
    tasks: Vec<rt::JoinHandle<()>>,
    /// `rados_osd_op_timeout`: each new IoCtx's op timeout.
    op_timeout: Option<Duration>,
}

impl Rados<Tcp> {
    /// Connects to the monitors as `id` over TCP, takes the OSD map, and
    /// is ready to talk to OSDs; fails after `id.mount_timeout`
    /// (`client_mount_timeout`, 30 s unless set) with
    /// [`RadosError::Mon`] naming every monitor tried.
    pub async fn connect(id: &Identity, limits: Limits) -> Result<Rados<Tcp>, RadosError> {
        Rados::connect_over(Tcp::default(), id, limits).await
    }
}

impl<T: Transport> Rados<T> {
    /// Connects to the monitors as `id` over `transport`, takes the OSD
    /// map, and is ready to talk to OSDs over it too.
    pub async fn connect_over(
        transport: T,
        id: &Identity,
        limits: Limits,
    ) -> Result<Rados<T>, RadosError> {
        let op_timeout = op_timeout(id)?;
        let mut cfg = id.mon_client_config();
        cfg.subscribe.push(("osdmap".to_string(), 0));
        // As librados's MgrClient follows it: for mgr commands.
        cfg.subscribe.push(("mgrmap".to_string(), 0));
        // One deadline for the session and the first map, as
        // client_mount_timeout bounds librados's connect.
        let started = std::time::Instant::now();
        let mon = Arc::new(MonClient::connect_over(transport.clone(), cfg).await?);
        let left = id.mount_timeout.saturating_sub(started.elapsed());
        let map = mon
            .wait_osdmap(0, left.max(Duration::from_millis(1)))
            .await?;
        let shared = Arc::new(Shared {
            objecter: Mutex::new(Objecter::new(map, limits)),
            waiters: Mutex::new(HashMap::default()),
            conns: Mutex::default(),
            messenger: Mutex::new(None),
            timer: Notify::new(),
            watch: Default::default(),
            placer: Default::default(),
        });
        let mut options = id.client_options(PolicySet::new(PolicyName::LossyClient.policy()));
        // One shard, in the caller's runtime: a request, its message and
        // its reply stay on the thread that made them (no hand-off to a
        // shard thread and back per op). A caller on a multi-threaded
        // runtime spreads its requests itself.
        options.shards = 1;
        let messenger = Messenger::new(transport, options, Arc::new(OsdDispatch(shared.clone())));
        *lock(&shared.messenger) = Some(Arc::new(messenger.clone()));
        let tasks = vec![
            rt::spawn(follow_maps(mon.clone(), shared.clone())),
            rt::spawn(timeouts(shared.clone())),
        ];
        Ok(Rados {
            mon,
            shared,
            messenger,
            tasks,
            op_timeout,
        })
    }

    /// The current OSD map.
    pub fn osdmap(&self) -> Arc<OsdMap> {
        lock(&self.shared.objecter).map().clone()
    }

    /// Where this client is in the CRUSH hierarchy (`crush_location`,
    /// e.g. `[("host", "node1"), ("root", "default")]`): reads with
    /// LOCALIZE_READS go to the acting OSD closest to it. None is set by
    /// default (localized reads then go to the primary).
    pub fn set_crush_location(&self, location: Vec<(String, String)>) {
        lock(&self.shared.objecter).set_crush_location(location);
    }

    /// This client's instance id (`rados_get_instance_id`): the global id
    /// the monitors gave its session, which names its messenger
    /// (`client.GLOBAL_ID`); 0 when the session did not authenticate with
    /// cephx (auth none: the id is not kept).
    pub fn instance_id(&self) -> u64 {
        u64::try_from(self.messenger.name().num).unwrap_or(0)
    }

    /// This client's addresses as its OSD messenger has them (learned
    /// from its peers once connected), for `rados_getaddrs`.
    pub fn addrs(&self) -> msgr_encoding::EntityAddrvec {
        self.messenger.addrs()
    }

    /// The monitor session.
    pub fn mon(&self) -> &MonClient<T> {
        &self.mon
    }

    /// An I/O context on pool `name` (the default namespace, the head of
    /// objects, `rados_osd_op_timeout` as its ops' timeout).
    pub fn ioctx(&self, name: &str) -> Result<IoCtx, RadosError> {
        let pool = self
            .osdmap()
            .pool_id(name)
            .ok_or_else(|| RadosError::NoPool(name.to_string()))?;
        let mut io = IoCtx::new(self.shared.clone(), pool);
        io.set_timeout(self.op_timeout);
        Ok(io)
    }

    /// Closes the OSD sessions and the monitor session.
    pub async fn shutdown(self) {
        for t in &self.tasks {
            t.abort();
        }
        lock(&self.shared.messenger).take();
        self.messenger.shutdown().await;
        if let Ok(mon) = Arc::try_unwrap(self.mon) {
            mon.shutdown().await;
        }
    }
}

/// Hands each new OSD map to the objecter.
async fn follow_maps<T: Transport>(mon: Arc<MonClient<T>>, shared: Arc<Shared>) {
    follow(
        || lock(&shared.objecter).map().epoch,
        |next| mon.wait_osdmap(next, Duration::from_secs(3600)),
        |map| {
            lock(&shared.objecter).handle_map(map);
            crate::watch::on_map(&shared);
            shared.place_aside()
        },
    )
    .await
}

/// Waits for each map after the epoch `have` says (`wait`, which may give
/// up) and hands it to `take`. A map claims its epoch: one at u32::MAX has
/// no next to wait for (waiting for "the next" would find it again at
/// once, round and round without yielding), so following ends there.
async fn follow<W, Fut, T, Taken>(have: impl Fn() -> u32, mut wait: W, mut take: T)
where
    W: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Arc<OsdMap>, MonError>>,
    T: FnMut(Arc<OsdMap>) -> Taken,
    Taken: std::future::Future<Output = ()>,
{
    while let Some(next) = have().checked_add(1) {
        if let Ok(map) = wait(next).await {
            take(map).await;
        }
    }
}

/// Ends requests whose time is up.
async fn timeouts(shared: Arc<Shared>) {
    loop {
        let next = lock(&shared.objecter).next_deadline();
        let wake = shared.timer.notified();
        match next {
            Some(at) => {
                let _ = rt::timeout_at(at, wake).await;
            }
            None => wake.await,
        }
        // Woken for a new deadline, or at one: only a deadline passed has
        // requests to end, and their completions to hand out off the
        // runtime (on the blocking pool: a thread switch there and back,
        // not for every wake).
        let now = Instant::now();
        let due = {
            let mut o = lock(&shared.objecter);
            let due = o.next_deadline().is_some_and(|d| d <= now);
            if due {
                o.handle_timeout(now);
            }
            due
        };
        if due {
            shared.place_aside().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map claiming the last epoch there is: following stops, rather
    /// than finding it again as "the next" for ever.
    #[tokio::test]
    async fn following_maps_ends_at_the_last_epoch() {
        let last = Arc::new(OsdMap {
            epoch: u32::MAX,
            ..OsdMap::default()
        });
        let mut asked = 0usize;
        follow(
            || last.epoch,
            |_| {
                asked = asked.saturating_add(1);
                assert!(asked <= 100, "asked {asked} times: a loop");
                std::future::ready(Ok(last.clone()))
            },
            |_| std::future::ready(()),
        )
        .await;
        assert_eq!(asked, 0);
    }
}

/// `rados_osd_op_timeout` in seconds (0 or unset: none).
pub(crate) fn op_timeout(id: &Identity) -> Result<Option<Duration>, RadosError> {
    let Some(v) = id.config.get("rados_osd_op_timeout") else {
        return Ok(None);
    };
    let secs: f64 = crate::config::parse_option("rados_osd_op_timeout", &v)?;
    if !secs.is_finite() || !(0.0..1e9).contains(&secs) {
        return Err(RadosError::Config(format!(
            "rados_osd_op_timeout: {v:?} is not a number of seconds"
        )));
    }
    Ok((secs > 0.0).then(|| Duration::from_secs_f64(secs)))
}
