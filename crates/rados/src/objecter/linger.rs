//! Linger operations (Objecter's `LingerOp`), sans-IO: watches and
//! notifies. A watch is registered with WATCH (`CEPH_OSD_WATCH_OP_WATCH`),
//! registered again with RECONNECT and the next `register_gen` when its
//! OSD's connection resets or a new map moves its PG, and pinged every
//! `objecter_tick_interval` (5 s) with the current gen; a failed ping or
//! reconnect, or the OSD's DISCONNECT, is the watch's error (ENOENT told as
//! ENOTCONN, `_normalize_watch_error`), reported once, after which pings
//! stop and [`Lingers::check`] returns it. A notify is a linger too: its
//! NOTIFY_COMPLETE (matched by cookie) brings every watcher's reply. The
//! OSD keeps a notify in memory and ends it on the connection it came by:
//! once accepted ([`Lingers::notify_accepted`]), a notify whose OSD's
//! connection resets, or whose PG moves to another primary, is sent again
//! whole (`_send_linger` of a notify: the same cookie, a new notify id).
//!
//! The driver submits the [`Outgoing`] requests through the [`Objecter`](super::Objecter)
//! (super::Objecter) and hands each result back with its [`Sent`] (a
//! result of an earlier gen, or of a linger since removed, is ignored);
//! it tells the time, the resets and each watch's newly computed target.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use msgr_messages::osd_types::OsdOp;
use msgr_messages::watch_notify::event;
use msgr_messages::MWatchNotify;

use super::{target_of, Object, Request, Target};
use crate::request::{flag, Op, Ops, Reply};

/// `CEPH_OSD_OP_WATCH`.
pub const OP_WATCH: u16 = 0x220f;
/// `CEPH_OSD_OP_NOTIFY`.
pub const OP_NOTIFY: u16 = 0x1206;
/// `CEPH_OSD_OP_NOTIFY_ACK`.
pub const OP_NOTIFY_ACK: u16 = 0x1207;
/// `CEPH_OSD_OP_LIST_WATCHERS`.
pub const OP_LIST_WATCHERS: u16 = 0x1209;

/// `CEPH_OSD_WATCH_OP_*`.
pub mod watch_op {
    /// `CEPH_OSD_WATCH_OP_UNWATCH`.
    pub const UNWATCH: u8 = 0;
    /// `CEPH_OSD_WATCH_OP_WATCH`.
    pub const WATCH: u8 = 3;
    /// `CEPH_OSD_WATCH_OP_RECONNECT`.
    pub const RECONNECT: u8 = 5;
    /// `CEPH_OSD_WATCH_OP_PING`.
    pub const PING: u8 = 7;
}

/// `objecter_tick_interval`: how often a registered watch is pinged.
pub const PING_INTERVAL: Duration = Duration::from_secs(5);
/// `-ENOTCONN`: the watch is gone.
pub const ENOTCONN: i32 = -107;
/// `-EBADF`: no such watch.
pub const EBADF: i32 = -9;
const ENOENT: i32 = -2;

/// The WATCH op (`ObjectOperation::watch`): the `watch` union member is
/// cookie (8), ver (8, unused), op (1), gen (4), timeout (4).
pub fn watch_op(cookie: u64, op: u8, gen: u32, timeout: u32) -> Op {
    let mut args = [0u8; 28];
    args[..8].copy_from_slice(&cookie.to_le_bytes());
    args[16] = op;
    args[17..21].copy_from_slice(&gen.to_le_bytes());
    args[21..25].copy_from_slice(&timeout.to_le_bytes());
    Op {
        op: OsdOp {
            op: OP_WATCH,
            args,
            ..OsdOp::default()
        },
        indata: Bytes::new(),
    }
}

/// The NOTIFY op (`ObjectOperation::notify`): the notify's cookie in the
/// op, then `prot_ver` (1), the timeout in seconds and the payload.
pub fn notify_op(cookie: u64, timeout: u32, payload: &[u8]) -> Op {
    let mut args = [0u8; 28];
    args[..8].copy_from_slice(&cookie.to_le_bytes());
    let mut indata = Vec::with_capacity(12usize.saturating_add(payload.len()));
    indata.put_u32_le(1);
    indata.put_u32_le(timeout);
    indata.put_u32_le(payload.len() as u32);
    indata.extend_from_slice(payload);
    Op {
        op: OsdOp {
            op: OP_NOTIFY,
            args,
            ..OsdOp::default()
        },
        indata: Bytes::from(indata),
    }
}

/// The NOTIFY_ACK op: notify id, the watch's cookie, the reply payload.
pub fn notify_ack_op(notify_id: u64, cookie: u64, reply: &[u8]) -> Op {
    let mut indata = Vec::with_capacity(20usize.saturating_add(reply.len()));
    indata.put_u64_le(notify_id);
    indata.put_u64_le(cookie);
    indata.put_u32_le(reply.len() as u32);
    indata.extend_from_slice(reply);
    Op {
        op: OsdOp {
            op: OP_NOTIFY_ACK,
            ..OsdOp::default()
        },
        indata: Bytes::from(indata),
    }
}

/// What a linger op sent was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentKind {
    /// The first registration (WATCH).
    Register,
    /// A registration again (RECONNECT).
    Reconnect,
    /// A PING.
    Ping,
    /// A notify sent again (NOTIFY).
    Notify,
}

/// A linger op sent, to hand back with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// The linger's cookie.
    pub cookie: u64,
    /// What was sent.
    pub kind: SentKind,
    /// The `register_gen` it was sent with.
    pub gen: u32,
    /// When.
    pub at: Instant,
}

/// A request a linger needs sent.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The request (for [`super::Objecter::submit`]).
    pub request: Request,
    /// What to hand back with its result.
    pub sent: Sent,
}

/// What a watcher is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A notify to acknowledge (`notify_ack`).
    Notify {
        /// The notify's id.
        notify_id: u64,
        /// The watch's cookie.
        cookie: u64,
        /// The notifier's global id.
        notifier_gid: u64,
        /// What the notifier sent.
        payload: Bytes,
    },
    /// The watch failed (`-ENOTCONN`: it is gone; re-watch to go on).
    Error {
        /// The negative errno.
        err: i32,
    },
}

/// Something for the driver to hand to a watch's or a notify's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LingerEvent {
    /// For a watch.
    Watch {
        /// The watch's cookie.
        cookie: u64,
        /// What happened.
        event: WatchEvent,
    },
    /// A notify's end.
    NotifyComplete {
        /// The notify's cookie.
        cookie: u64,
        /// 0, or `-ETIMEDOUT` when a watcher did not answer.
        return_code: i32,
        /// The replies ([`msgr_messages::watch_notify::NotifyResponse`]).
        data: Bytes,
    },
}

struct Linger {
    object: Object,
    /// A watch (else a notify).
    watch: bool,
    /// The timeout the watch registers with (0: the OSD's default).
    timeout: u32,
    registered: bool,
    register_gen: u32,
    last_error: i32,
    /// The send time of the last registration or ping the OSD confirmed.
    valid_thru: Option<Instant>,
    next_ping: Option<Instant>,
    /// The target the driver last computed for the object.
    target: Option<Target>,
    /// A notify's NOTIFY_COMPLETE came.
    completed: bool,
    /// A notify's payload (to send it again).
    payload: Bytes,
    /// The OSD that accepted a notify (`None` while it is on its way).
    notified_at: Option<i32>,
}

/// The linger ops of one client.
#[derive(Default)]
pub struct Lingers {
    last_cookie: u64,
    lingers: BTreeMap<u64, Linger>,
    events: VecDeque<LingerEvent>,
}

impl Lingers {
    /// No linger op.
    pub fn new() -> Lingers {
        Lingers::default()
    }

    fn next_cookie(&mut self) -> u64 {
        self.last_cookie = self.last_cookie.wrapping_add(1);
        self.last_cookie
    }

    /// A new watch of `object` (`timeout` seconds without a ping before the
    /// OSD drops it; 0: `osd_client_watch_timeout`): its cookie and its
    /// registration to send.
    pub fn watch(&mut self, object: Object, timeout: u32, now: Instant) -> (u64, Outgoing) {
        let cookie = self.next_cookie();
        self.lingers.insert(
            cookie,
            Linger {
                object: object.clone(),
                watch: true,
                timeout,
                registered: false,
                register_gen: 0,
                last_error: 0,
                valid_thru: None,
                next_ping: None,
                target: None,
                completed: false,
                payload: Bytes::new(),
                notified_at: None,
            },
        );
        let op = watch_op(cookie, watch_op::WATCH, 0, timeout);
        (
            cookie,
            outgoing(object, op, cookie, SentKind::Register, 0, now),
        )
    }

    /// A new notify on `object`: its cookie and its NOTIFY request (a
    /// plain request: its result is the caller's, not handed back).
    pub fn notify(&mut self, object: Object, payload: &[u8], timeout: u32) -> (u64, Request) {
        let cookie = self.next_cookie();
        self.lingers.insert(
            cookie,
            Linger {
                object: object.clone(),
                watch: false,
                timeout,
                registered: false,
                register_gen: 0,
                last_error: 0,
                valid_thru: None,
                next_ping: None,
                target: None,
                completed: false,
                payload: Bytes::copy_from_slice(payload),
                notified_at: None,
            },
        );
        let op = notify_op(cookie, timeout, payload);
        (cookie, Request::new(object, Ops(vec![op])))
    }

    /// Notify `cookie`'s NOTIFY was accepted by `osd` (the caller's
    /// request succeeded): from now on a reset of that OSD, or its PG
    /// moving, sends it again.
    pub fn notify_accepted(&mut self, cookie: u64, osd: i32) {
        if let Some(l) = self.lingers.get_mut(&cookie).filter(|l| !l.watch) {
            l.registered = true;
            l.notified_at = Some(osd);
        }
    }

    /// Forgets linger `cookie` (unwatch, a notify's end): later results and
    /// events for it are ignored. The UNWATCH request of a watch.
    pub fn remove(&mut self, cookie: u64) -> Option<Request> {
        let l = self.lingers.remove(&cookie)?;
        if !l.watch {
            return None;
        }
        let op = watch_op(cookie, watch_op::UNWATCH, 0, 0);
        Some(Request::new(l.object, Ops(vec![op])))
    }

    /// The objects of the watches and of the accepted notifies not yet
    /// ended, for the driver to compute their targets.
    pub fn watched(&self) -> Vec<(u64, Object)> {
        self.lingers
            .iter()
            .filter(|(_, l)| l.watch || (l.registered && !l.completed))
            .map(|(c, l)| (*c, l.object.clone()))
            .collect()
    }

    /// The target the driver computed for linger `cookie` in a new map: a
    /// registered watch whose target moved (another PG, primary or
    /// interval) registers again; an accepted notify whose target moved,
    /// or whose primary is not the OSD that accepted it, is sent again.
    pub fn handle_target(
        &mut self,
        cookie: u64,
        target: Option<Target>,
        now: Instant,
    ) -> Option<Outgoing> {
        let l = self.lingers.get_mut(&cookie)?;
        let mut moved = l.target.is_some() && l.target != target;
        if !l.watch && l.notified_at.is_some() {
            moved |= target.as_ref().map(|t| t.osd) != l.notified_at;
        }
        l.target = target;
        match (moved, l.watch) {
            (true, true) => self.reconnect(cookie, now),
            (true, false) => self.notify_again(cookie, now),
            (false, _) => None,
        }
    }

    /// The connection to `osd` was reset: the watches registered there
    /// register again, and the notifies it accepted are sent again.
    pub fn handle_reset(&mut self, osd: i32, now: Instant) -> Vec<Outgoing> {
        let at: Vec<(u64, bool)> = self
            .lingers
            .iter()
            .filter(|(_, l)| match l.watch {
                true => l.target.as_ref().is_some_and(|t| t.osd == osd),
                false => l.notified_at == Some(osd),
            })
            .map(|(c, l)| (*c, l.watch))
            .collect();
        at.into_iter()
            .filter_map(|(c, watch)| match watch {
                true => self.reconnect(c, now),
                false => self.notify_again(c, now),
            })
            .collect()
    }

    /// `_send_linger` of an accepted notify not yet ended: NOTIFY again,
    /// the same cookie and payload, with the next gen (a result of the
    /// earlier send is then stale).
    fn notify_again(&mut self, cookie: u64, now: Instant) -> Option<Outgoing> {
        let l = self.lingers.get_mut(&cookie)?;
        if l.watch || l.completed || l.notified_at.is_none() {
            return None;
        }
        l.notified_at = None;
        l.register_gen = l.register_gen.wrapping_add(1);
        let op = notify_op(cookie, l.timeout, &l.payload);
        Some(outgoing(
            l.object.clone(),
            op,
            cookie,
            SentKind::Notify,
            l.register_gen,
            now,
        ))
    }

    /// `_send_linger` of a registered watch: RECONNECT with the next gen
    /// (an unregistered one's WATCH is still on its way, and the objecter
    /// sends it again itself).
    fn reconnect(&mut self, cookie: u64, now: Instant) -> Option<Outgoing> {
        let l = self.lingers.get_mut(&cookie)?;
        if !l.watch || !l.registered {
            return None;
        }
        l.register_gen = l.register_gen.wrapping_add(1);
        let gen = l.register_gen;
        let op = watch_op(cookie, watch_op::RECONNECT, gen, l.timeout);
        Some(outgoing(
            l.object.clone(),
            op,
            cookie,
            SentKind::Reconnect,
            gen,
            now,
        ))
    }

    /// The pings due at `now` (`tick`: each registered watch without an
    /// error, every [`PING_INTERVAL`]).
    pub fn tick(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        for (cookie, l) in self.lingers.iter_mut() {
            let due = l.next_ping.is_some_and(|t| t <= now);
            if !(l.watch && l.registered && l.last_error == 0 && due) {
                continue;
            }
            l.next_ping = now.checked_add(PING_INTERVAL);
            let op = watch_op(*cookie, watch_op::PING, l.register_gen, 0);
            let mut o = outgoing(
                l.object.clone(),
                op,
                *cookie,
                SentKind::Ping,
                l.register_gen,
                now,
            );
            // `info->target.flags | CEPH_OSD_FLAG_READ`.
            o.request.flags |= flag::READ;
            out.push(o);
        }
        out
    }

    /// When [`Lingers::tick`] next has a ping to send.
    pub fn next_tick(&self) -> Option<Instant> {
        self.lingers
            .values()
            .filter(|l| l.watch && l.registered && l.last_error == 0)
            .filter_map(|l| l.next_ping)
            .min()
    }

    /// The result of a linger op sent (`_linger_commit`,
    /// `_linger_reconnect`, `_linger_ping`). A first registration that
    /// failed is the caller's error (returned; the watch is forgotten).
    pub fn handle_result(&mut self, sent: Sent, result: &Result<Reply, i32>) -> Result<(), i32> {
        let r = match result {
            Ok(reply) => reply.result.min(0),
            Err(e) => *e,
        };
        let Some(l) = self.lingers.get_mut(&sent.cookie) else {
            return Ok(());
        };
        if sent.gen != l.register_gen {
            // From before a reconnect: stale.
            return Ok(());
        }
        match sent.kind {
            // Ended meanwhile: nothing to tell.
            SentKind::Notify if l.completed => {}
            SentKind::Notify => match result {
                Ok(reply) if r == 0 => l.notified_at = Some(reply.osd),
                _ => {
                    // The notify's end, with the error.
                    l.completed = true;
                    self.events.push_back(LingerEvent::NotifyComplete {
                        cookie: sent.cookie,
                        return_code: r,
                        data: Bytes::new(),
                    });
                }
            },
            SentKind::Register => {
                if r < 0 {
                    self.lingers.remove(&sent.cookie);
                    return Err(r);
                }
                l.registered = true;
                l.valid_thru = Some(sent.at);
                l.next_ping = sent.at.checked_add(PING_INTERVAL);
            }
            SentKind::Reconnect | SentKind::Ping => {
                if r == 0 {
                    if sent.kind == SentKind::Ping {
                        l.valid_thru = Some(sent.at);
                    }
                } else if l.last_error == 0 {
                    let err = normalize(r);
                    l.last_error = err;
                    self.events.push_back(LingerEvent::Watch {
                        cookie: sent.cookie,
                        event: WatchEvent::Error { err },
                    });
                }
            }
        }
        Ok(())
    }

    /// An MWatchNotify (`handle_watch_notify`): a notify for a watch, a
    /// notify's end, a watch's disconnection. One for a linger we do not
    /// have, or a second end of a notify, is ignored.
    pub fn handle_watch_notify(&mut self, m: MWatchNotify) {
        let Some(l) = self.lingers.get_mut(&m.cookie) else {
            return;
        };
        match (m.opcode, l.watch) {
            (event::DISCONNECT, true) if l.last_error == 0 => {
                l.last_error = ENOTCONN;
                self.events.push_back(LingerEvent::Watch {
                    cookie: m.cookie,
                    event: WatchEvent::Error { err: ENOTCONN },
                });
            }
            (event::NOTIFY, true) => self.events.push_back(LingerEvent::Watch {
                cookie: m.cookie,
                event: WatchEvent::Notify {
                    notify_id: m.notify_id,
                    cookie: m.cookie,
                    notifier_gid: m.notifier_gid,
                    payload: m.payload,
                },
            }),
            (event::NOTIFY_COMPLETE, false) if !l.completed => {
                l.completed = true;
                self.events.push_back(LingerEvent::NotifyComplete {
                    cookie: m.cookie,
                    return_code: m.return_code,
                    data: m.data,
                });
            }
            _ => {}
        }
    }

    /// The next event for a watch's or notify's owner.
    pub fn poll_event(&mut self) -> Option<LingerEvent> {
        self.events.pop_front()
    }

    /// `linger_check` (`watch_check`): how long since the OSD last
    /// confirmed watch `cookie` (the send time of its last confirmed
    /// registration or ping), or its error (`-EBADF`: no such watch;
    /// `-ENOTCONN` before its registration is confirmed).
    pub fn check(&self, cookie: u64, now: Instant) -> Result<Duration, i32> {
        let l = self.lingers.get(&cookie).filter(|l| l.watch).ok_or(EBADF)?;
        if l.last_error != 0 {
            return Err(l.last_error);
        }
        let since = l.valid_thru.ok_or(ENOTCONN)?;
        Ok(now.saturating_duration_since(since))
    }
}

/// `_normalize_watch_error`: a deleted object (ENOENT) reads as the
/// watch's loss.
fn normalize(r: i32) -> i32 {
    match r {
        ENOENT => ENOTCONN,
        r => r,
    }
}

fn outgoing(
    object: Object,
    op: Op,
    cookie: u64,
    kind: SentKind,
    gen: u32,
    now: Instant,
) -> Outgoing {
    Outgoing {
        request: Request::new(object, Ops(vec![op])),
        sent: Sent {
            cookie,
            kind,
            gen,
            at: now,
        },
    }
}

/// A watch's target in `map` (`_calc_target` of a linger op, which writes),
/// for [`Lingers::handle_target`]; CRUSH runs here: call it off any lock.
pub fn watch_target(map: &msgr_osdmap::OsdMap, object: &Object) -> Option<Target> {
    let up_acting = |pg| map.pg_to_up_acting(pg);
    let write = super::ReadFrom {
        writes: true,
        flags: 0,
        tid: 0,
        location: &[],
    };
    target_of(map, up_acting, object, false, &write)
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests;
