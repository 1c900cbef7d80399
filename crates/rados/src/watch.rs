//! Watch/notify (librados's `watch2`, `notify2`, `notify_ack`,
//! `watch_check`, `unwatch2`, `list_watchers`): the driver of the
//! objecter's linger ops ([`crate::objecter::linger`]). Each watch has a
//! ticker task that sends its pings; new maps and connection resets
//! register the watches again; the OSDs' MWatchNotify messages are routed
//! to their watch or notify.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_messages::watch_notify::{decode_watchers, NotifyResponse};
use msgr_messages::{MWatchNotify, TypedMessage};
use msgr_protocol::Message;
use msgr_uring::rt;
use tokio::sync::{mpsc, oneshot};

use crate::error::RadosError;
use crate::ioctx::{first_out, IoCtx};
pub use crate::objecter::linger::WatchEvent;
use crate::objecter::linger::{
    notify_ack_op, watch_target, LingerEvent, Outgoing, OP_LIST_WATCHERS, PING_INTERVAL,
};
use crate::objecter::{Object, Request, ETIMEDOUT};
use crate::request::{Op, Ops};
use crate::shared::{lock, Shared};
use crate::watch_state::WatchQueue;
pub use crate::watch_state::WATCH_EVENT_QUEUE;

/// How much longer than the notify's own timeout its end is waited for
/// (the OSD ends it; this covers an OSD that died meanwhile).
const NOTIFY_GRACE: Duration = Duration::from_secs(30);

/// Hands the lingers' events to their owners.
fn route(shared: &Shared) {
    let events: Vec<_> = {
        let mut l = lock(&shared.watch.lingers);
        std::iter::from_fn(|| l.poll_event()).collect()
    };
    for e in events {
        match e {
            LingerEvent::Watch { cookie, event } => {
                if let Some(q) = lock(&shared.watch.watches).get(&cookie) {
                    q.push(event);
                }
            }
            LingerEvent::NotifyComplete {
                cookie,
                return_code,
                data,
            } => {
                if let Some(tx) = lock(&shared.watch.notifies).remove(&cookie) {
                    let _ = tx.send((return_code, data));
                }
            }
        }
    }
}

/// An MWatchNotify from an OSD (the messenger's dispatcher).
pub(crate) fn dispatch(shared: &Shared, msg: &Message) {
    let Ok(m) = MWatchNotify::from_message(msg) else {
        tracing::warn!(target: "msgr::rados", "unreadable watch-notify dropped");
        return;
    };
    tracing::debug!(target: "msgr::rados", opcode = m.opcode, cookie = m.cookie, notify_id = m.notify_id, "watch-notify");
    lock(&shared.watch.lingers).handle_watch_notify(m);
    route(shared);
}

/// Submits a linger op and hands its result back to the lingers (placed
/// on the blocking pool: a reset, a map or the ticker called for it).
fn send(shared: &Arc<Shared>, out: Outgoing) {
    let rx = submit(shared, out.request, false);
    let shared = shared.clone();
    let sent = out.sent;
    rt::spawn(async move {
        let result = rx.await.unwrap_or(Err(-125));
        let _ = lock(&shared.watch.lingers).handle_result(sent, &result);
        route(&shared);
    });
}

/// Submits a request; its result comes on the receiver. Placed here when
/// `inline` (the caller's own request, as `IoCtx` places its requests),
/// else where blocking work goes (`rt::spawn_blocking`).
fn submit(
    shared: &Arc<Shared>,
    req: Request,
    inline: bool,
) -> oneshot::Receiver<Result<crate::Reply, i32>> {
    let (tx, rx) = oneshot::channel();
    {
        let mut o = lock(&shared.objecter);
        let tid = o.submit(req, Instant::now());
        lock(&shared.waiters).insert(tid, tx);
    }
    match inline {
        true => shared.place(),
        false => shared.place_soon(),
    }
    rx
}

/// Forgets a watch whose registration's future was dropped.
struct WatchGuard<'a> {
    shared: &'a Shared,
    cookie: u64,
    armed: bool,
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.shared.watch.lingers).remove(self.cookie);
            lock(&self.shared.watch.watches).remove(&self.cookie);
        }
    }
}

/// Forgets a notify (its linger and its waiter) however its future ends.
struct NotifyGuard<'a> {
    shared: &'a Shared,
    cookie: u64,
}

impl Drop for NotifyGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.watch.lingers).remove(self.cookie);
        lock(&self.shared.watch.notifies).remove(&self.cookie);
    }
}

/// A reset of `osd`'s connection: the watches there register again, the
/// notifies it accepted are sent again.
pub(crate) fn on_reset(shared: &Arc<Shared>, osd: i32) {
    let outs = lock(&shared.watch.lingers).handle_reset(osd, Instant::now());
    for o in outs {
        tracing::info!(target: "msgr::rados", osd, cookie = o.sent.cookie, kind = ?o.sent.kind, "linger sent again after a reset");
        send(shared, o);
    }
}

/// A new map: each watch's target is computed (off the locks, on the
/// blocking pool) and the moved ones register again.
pub(crate) fn on_map(shared: &Arc<Shared>) {
    let watched = lock(&shared.watch.lingers).watched();
    if watched.is_empty() {
        return;
    }
    let map = lock(&shared.objecter).map().clone();
    let shared = shared.clone();
    rt::spawn_blocking(move || {
        let targets: Vec<_> = watched
            .into_iter()
            .map(|(c, o)| (c, watch_target(&map, &o)))
            .collect();
        let outs: Vec<_> = {
            let mut l = lock(&shared.watch.lingers);
            targets
                .into_iter()
                .filter_map(|(c, t)| l.handle_target(c, t, Instant::now()))
                .collect()
        };
        if outs.is_empty() {
            return;
        }
        for o in outs {
            tracing::info!(target: "msgr::rados", cookie = o.sent.cookie, kind = ?o.sent.kind, "linger sent again: its PG moved");
            send(&shared, o);
        }
    });
}

/// A watch on an object (`rados_watch2`): its events come from
/// [`Watch::next_event`]. Dropping it stops the pings and sends the
/// UNWATCH without waiting ([`Watch::unwatch`] waits for it).
pub struct Watch {
    ioctx: IoCtx,
    object: Object,
    cookie: u64,
    events: mpsc::Receiver<WatchEvent>,
    /// Events dropped for want of room ([`WATCH_EVENT_QUEUE`]).
    dropped: Arc<AtomicU64>,
    ticker: rt::JoinHandle<()>,
    done: bool,
}

/// What a notify collected (`rados_decode_notify_response`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyReply {
    /// Each watcher that acknowledged: its client's gid, its watch's
    /// cookie, its reply payload.
    pub acks: Vec<(u64, u64, Bytes)>,
    /// The watchers that did not acknowledge in time: gid and cookie.
    pub timeouts: Vec<(u64, u64)>,
}

/// One watcher of an object (`obj_watch_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watcher {
    /// The watcher's address, as Ceph prints it (`v1:1.2.3.4:0/123`).
    pub addr: String,
    /// The watching client's id (`client.N`).
    pub watcher_id: i64,
    /// The watch's cookie.
    pub cookie: u64,
    /// The watch's timeout in seconds.
    pub timeout_seconds: u32,
}

impl IoCtx {
    fn object_id(&self, name: &[u8]) -> Object {
        Object {
            pool: self.pool,
            name: Bytes::copy_from_slice(name),
            nspace: self.nspace.clone(),
            key: self.key.clone(),
            pg: None,
        }
    }

    /// Watches object `name` (`rados_watch2`, with the OSD's default
    /// timeout): notifies to it come as [`WatchEvent::Notify`] from the
    /// returned [`Watch`], to be acknowledged with [`Watch::notify_ack`].
    ///
    /// ```no_run
    /// # async fn f(ioctx: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
    /// use msgr_rados::WatchEvent;
    /// let mut watch = ioctx.watch(b"obj").await?;
    /// while let Some(event) = watch.next_event().await {
    ///     match event {
    ///         WatchEvent::Notify { notify_id, payload, .. } => {
    ///             watch.notify_ack(notify_id, &payload).await?;
    ///         }
    ///         WatchEvent::Error { err } => {
    ///             eprintln!("watch lost: {err}");
    ///             break;
    ///         }
    ///     }
    /// }
    /// watch.unwatch().await?;
    /// # Ok(()) }
    /// ```
    pub async fn watch(&self, name: &[u8]) -> Result<Watch, RadosError> {
        self.watch_with_timeout(name, 0).await
    }

    /// [`IoCtx::watch`] with a watch timeout in seconds (`rados_watch3`;
    /// 0: the OSD's `osd_client_watch_timeout`).
    pub async fn watch_with_timeout(&self, name: &[u8], timeout: u32) -> Result<Watch, RadosError> {
        let shared = &self.shared;
        let object = self.object_id(name);
        let (tx, events) = mpsc::channel(WATCH_EVENT_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let (cookie, out) =
            lock(&shared.watch.lingers).watch(object.clone(), timeout, Instant::now());
        lock(&shared.watch.watches).insert(
            cookie,
            WatchQueue {
                tx,
                dropped: dropped.clone(),
            },
        );
        // Its target, to see it move in later maps.
        let map = lock(&shared.objecter).map().clone();
        let target = watch_target(&map, &object);
        let _ = lock(&shared.watch.lingers).handle_target(cookie, target, Instant::now());
        let sent = out.sent;
        // Dropped before the registration's answer: forgotten (a WATCH
        // that landed times out on the OSD, unpinged).
        let pending = WatchGuard {
            shared,
            cookie,
            armed: true,
        };
        let result = submit(shared, out.request, true).await.unwrap_or(Err(-125));
        let mut pending = pending;
        pending.armed = false;
        let registered = lock(&shared.watch.lingers).handle_result(sent, &result);
        if let Err(errno) = registered {
            lock(&shared.watch.watches).remove(&cookie);
            return Err(RadosError::Os {
                errno,
                what: format!("watch {}", String::from_utf8_lossy(name)),
            });
        }
        route(shared);
        let ticker = rt::spawn(tick(shared.clone(), cookie));
        Ok(Watch {
            ioctx: self.clone(),
            object,
            cookie,
            events,
            dropped,
            ticker,
            done: false,
        })
    }

    /// Notifies the watchers of object `name` with `payload`, waiting up to
    /// `timeout` (whole seconds; zero: the OSD's `osd_default_notify_timeout`)
    /// for their acknowledgements (`rados_notify2`). Watchers that did not
    /// answer in time are in [`NotifyReply::timeouts`] (librados then
    /// returns `-ETIMEDOUT` with the same replies).
    ///
    /// ```no_run
    /// # async fn f(ioctx: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
    /// let reply = ioctx.notify(b"obj", b"hello", std::time::Duration::from_secs(10)).await?;
    /// for (gid, cookie, payload) in &reply.acks {
    ///     println!("client.{gid} cookie {cookie}: {} bytes", payload.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn notify(
        &self,
        name: &[u8],
        payload: &[u8],
        timeout: Duration,
    ) -> Result<NotifyReply, RadosError> {
        let what = format!("notify {}", String::from_utf8_lossy(name));
        let (_, data) = self.notify_raw(name, payload, timeout).await?;
        let r = NotifyResponse::decode(&data)
            .map_err(|e| RadosError::BadReply(format!("{what}: the replies do not decode: {e}")))?;
        Ok(NotifyReply {
            acks: r.acks.into_iter().map(|((g, c), b)| (g, c, b)).collect(),
            timeouts: r.timeouts,
        })
    }

    /// [`IoCtx::notify`] answering the notify's end as the OSD sent it
    /// (`rados_notify2`'s reply buffer): its code (0, or `-ETIMEDOUT` when
    /// a watcher did not acknowledge in time) and the encoded acks and
    /// timeouts (`map<pair<u64,u64>,bufferlist>`, `set<pair<u64,u64>>`).
    pub async fn notify_raw(
        &self,
        name: &[u8],
        payload: &[u8],
        timeout: Duration,
    ) -> Result<(i32, Bytes), RadosError> {
        let shared = &self.shared;
        let secs = u32::try_from(timeout.as_secs()).unwrap_or(u32::MAX);
        let (cookie, req) = lock(&shared.watch.lingers).notify(self.object_id(name), payload, secs);
        let (tx, done) = oneshot::channel();
        lock(&shared.watch.notifies).insert(cookie, tx);
        let _forget = NotifyGuard { shared, cookie };
        let what = format!("notify {}", String::from_utf8_lossy(name));
        let accepted = self.run(req).await?;
        lock(&shared.watch.lingers).notify_accepted(cookie, accepted.osd);
        let wait = Duration::from_secs(u64::from(secs.max(30))).saturating_add(NOTIFY_GRACE);
        let end = rt::timeout(wait, done).await;
        let (code, data) = match end {
            Ok(Ok(end)) => end,
            Ok(Err(_)) => return Err(RadosError::Shutdown),
            Err(_) => {
                return Err(RadosError::Os {
                    errno: ETIMEDOUT,
                    what: format!("{what} (its end never came)"),
                })
            }
        };
        if code < 0 && code != ETIMEDOUT {
            return Err(RadosError::Os { errno: code, what });
        }
        Ok((code, data))
    }

    /// The watchers of object `name` (`rados_list_watchers`).
    pub async fn list_watchers(&self, name: &[u8]) -> Result<Vec<Watcher>, RadosError> {
        let ops = Ops(vec![Op::new(OP_LIST_WATCHERS)]);
        let reply = self.operate(name, ops).await?;
        let items = decode_watchers(&first_out(&reply)).map_err(|e| {
            RadosError::BadReply(format!(
                "list watchers of {}: {e}",
                String::from_utf8_lossy(name)
            ))
        })?;
        Ok(items
            .into_iter()
            .map(|w| Watcher {
                addr: w.addr.map(|a| ceph_addr(&a)).unwrap_or_default(),
                watcher_id: w.name.num,
                cookie: w.cookie,
                timeout_seconds: w.timeout_seconds,
            })
            .collect())
    }
}

/// An address as Ceph's `operator<<` prints it: no prefix for
/// `TYPE_ANY` (clients' addresses), `v1:`/`v2:` otherwise.
fn ceph_addr(a: &msgr_encoding::EntityAddr) -> String {
    let s = a.to_string();
    match a.kind == msgr_encoding::EntityAddrType::ANY {
        true => s.strip_prefix(a.kind.prefix()).unwrap_or(&s).to_string(),
        false => s,
    }
}

/// Sends a watch's pings when due, until the watch goes.
async fn tick(shared: Arc<Shared>, cookie: u64) {
    loop {
        rt::sleep(PING_INTERVAL).await;
        let pings = lock(&shared.watch.lingers).tick(Instant::now());
        if !lock(&shared.watch.watches).contains_key(&cookie) {
            return;
        }
        for p in pings {
            send(&shared, p);
        }
    }
}

impl Watch {
    /// The watch's cookie (what notifies and listings name it by).
    pub fn cookie(&self) -> u64 {
        self.cookie
    }

    /// The next notify or error (`None` once the client is gone). At most
    /// [`WATCH_EVENT_QUEUE`] wait to be taken; see [`Watch::dropped`].
    pub async fn next_event(&mut self) -> Option<WatchEvent> {
        self.events.recv().await
    }

    /// How many events were dropped because [`WATCH_EVENT_QUEUE`] of them
    /// were waiting (their notifiers saw this watcher time out).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Acknowledges notify `notify_id` with `reply` (`rados_notify_ack`):
    /// the notifier gets it among its [`NotifyReply::acks`].
    pub async fn notify_ack(&self, notify_id: u64, reply: &[u8]) -> Result<(), RadosError> {
        let ops = Ops(vec![notify_ack_op(notify_id, self.cookie, reply)]);
        self.ioctx
            .run(Request::new(self.object.clone(), ops))
            .await?;
        Ok(())
    }

    /// `rados_watch_check`: how long ago the OSD last confirmed the watch,
    /// or its error (`-ENOTCONN`: lost; watch again).
    pub fn check(&self) -> Result<Duration, RadosError> {
        lock(&self.ioctx.shared.watch.lingers)
            .check(self.cookie, Instant::now())
            .map_err(|errno| RadosError::Os {
                errno,
                what: format!("watch {}", String::from_utf8_lossy(&self.object.name)),
            })
    }

    fn forget(&mut self) -> Option<Request> {
        self.done = true;
        self.ticker.abort();
        let shared = &self.ioctx.shared;
        lock(&shared.watch.watches).remove(&self.cookie);
        lock(&shared.watch.lingers).remove(self.cookie)
    }

    /// Ends the watch (`rados_unwatch2`): the OSD forgets it.
    pub async fn unwatch(mut self) -> Result<(), RadosError> {
        if let Some(req) = self.forget() {
            self.ioctx.run(req).await?;
        }
        Ok(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(req) = self.forget() {
            if rt::Handle::try_current().is_some() {
                drop(submit(&self.ioctx.shared, req, false));
            }
        }
    }
}
