//! What the client's tasks, its futures and the messenger's dispatcher
//! share: the objecter under its lock, the waiters of its requests, the
//! connections to the OSDs; and the steps that move requests along
//! (placing them off the lock, sending what the objecter queued, handing
//! out what it finished).

use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

use msgr_encoding::EntityType;
use msgr_messages::TypedMessage;
use msgr_messenger::{Connection, Messenger};
use msgr_transport::Transport;
use msgr_uring::rt;
use tokio::sync::{oneshot, Notify};

use crate::objecter::Objecter;
use crate::request::Reply;

/// What the tasks and the dispatcher share.
pub(crate) struct Shared {
    pub(crate) objecter: Mutex<Objecter>,
    pub(crate) waiters: Mutex<HashMap<u64, oneshot::Sender<Result<Reply, i32>>>>,
    /// The connection to each OSD we talk to.
    pub(crate) conns: Mutex<OsdConns>,
    /// The messenger to the OSDs, whatever its transport (`None` once
    /// shut down).
    pub(crate) messenger: Mutex<Option<Arc<dyn Dial>>>,
    /// Wakes the timer when a request with a deadline arrives.
    pub(crate) timer: Notify,
    /// Watches and notifies (`crate::watch_state`, worked by `crate::watch`).
    pub(crate) watch: crate::watch_state::WatchState,
    /// One placer at a time on the blocking pool ([`Shared::placer`]): a
    /// map, reset or reply that calls for placement while one runs asks
    /// it to look again, rather than taking a thread of its own (under an
    /// OSD thrash, tens of them at once).
    pub(crate) placer: Placer,
}

/// The connection to each OSD we talk to, the addresses (as the map gave
/// them) it was opened to, and which OSD each connection is to: a reply
/// finds its OSD by its connection's id, not by a scan over every OSD's
/// connection (linear in the cluster's size, per reply).
#[derive(Default)]
pub(crate) struct OsdConns {
    by_osd: HashMap<i32, (msgr_encoding::EntityAddrvec, Connection)>,
    /// `Connection::id` (unique in the OSD messenger) → OSD.
    by_id: HashMap<u64, i32>,
}

impl OsdConns {
    /// The OSD `conn` is the current connection to.
    pub(crate) fn osd_of(&self, conn: &Connection) -> Option<i32> {
        let osd = *self.by_id.get(&conn.id())?;
        let (_, current) = self.by_osd.get(&osd)?;
        (current == conn).then_some(osd)
    }

    /// `osd`'s connection, and the addresses it was opened to.
    fn get(&self, osd: i32) -> Option<&(msgr_encoding::EntityAddrvec, Connection)> {
        self.by_osd.get(&osd)
    }

    /// `conn`, opened to `addrs`, is now `osd`'s connection (replacing any
    /// other, which is forgotten).
    fn insert(&mut self, osd: i32, addrs: msgr_encoding::EntityAddrvec, conn: Connection) {
        let id = conn.id();
        if let Some((_, old)) = self.by_osd.insert(osd, (addrs, conn)) {
            if old.id() != id && self.by_id.get(&old.id()) == Some(&osd) {
                self.by_id.remove(&old.id());
            }
        }
        self.by_id.insert(id, osd);
    }

    /// Forgets `conn` (reset) if it is an OSD's current connection.
    pub(crate) fn remove(&mut self, conn: &Connection) {
        if let Some(osd) = self.osd_of(conn) {
            self.by_osd.remove(&osd);
            self.by_id.remove(&conn.id());
        }
    }
}

/// Whether a placer runs, and whether it was asked to look again.
#[derive(Default)]
pub(crate) struct Placer {
    running: AtomicBool,
    again: AtomicBool,
}

impl Placer {
    /// Marks a placer running unless one is, after asking for a look: true
    /// if the caller is to run it ([`Placer::run`]).
    fn start(&self) -> bool {
        self.again.store(true, SeqCst);
        !self.running.swap(true, SeqCst)
    }

    /// The started placer: `place` until nobody asked for another look
    /// meanwhile. The request is made before the check, and the placer
    /// clears it before it looks: whichever way the two interleave, what
    /// was asked for is placed. `running` is cleared however `place`
    /// returns, a panic included, so that later requests start a placer.
    fn run(&self, place: impl Fn()) {
        struct Stopped<'a>(&'a AtomicBool);
        impl Drop for Stopped<'_> {
            fn drop(&mut self) {
                self.0.store(false, SeqCst);
            }
        }
        loop {
            self.again.store(false, SeqCst);
            let stopped = Stopped(&self.running);
            place();
            drop(stopped);
            if !self.again.load(SeqCst) || self.running.swap(true, SeqCst) {
                break;
            }
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens connections to OSDs: a messenger of any transport, so that the
/// objecter's shared state needs no transport parameter.
pub(crate) trait Dial: Send + Sync {
    fn dial(&self, addrs: &msgr_encoding::EntityAddrvec) -> Connection;
}

impl<T: Transport> Dial for Messenger<T> {
    fn dial(&self, addrs: &msgr_encoding::EntityAddrvec) -> Connection {
        self.connect(addrs, EntityType::OSD)
    }
}

impl Shared {
    /// Computes the targets the objecter queued, a batch at a time until
    /// none is left, each with the map it was taken with and without the
    /// objecter's lock (a batch another task has out is finished by that
    /// task, which looks again once it is back); then sends and hands out
    /// what that decided. Not for the messenger's dispatch callback.
    pub(crate) fn place(&self) {
        loop {
            let batch = lock(&self.objecter).take_placements();
            let Some(batch) = batch else {
                break;
            };
            let placed = batch.run();
            lock(&self.objecter).finish_placements(placed);
        }
        self.flush();
    }

    /// [`Shared::place`] where blocking work goes (tokio's blocking pool,
    /// or a thread of a ring loop's: `rt::spawn_blocking`), off the loop,
    /// for placements a map, a reset, a timeout or a reply called for;
    /// returns once this call's placer has run, or at once when one
    /// already runs (that one looks again before it stops, and places
    /// what was asked for).
    pub(crate) async fn place_aside(self: &Arc<Self>) {
        if let Some(placer) = rt::Handle::try_current().and_then(|h| self.placer(&h)) {
            let _ = placer.await;
        }
    }

    /// [`Shared::place`] off the loop without waiting for it,
    /// from code that cannot wait (a dropped future, the dispatcher);
    /// nothing outside a runtime (the next request or timer places what
    /// is left).
    pub(crate) fn place_soon(self: &Arc<Self>) {
        if let Some(h) = rt::Handle::try_current() {
            self.placer(&h);
        }
    }

    /// Starts the placer where `rt` runs blocking work unless it runs;
    /// asks a running one to look again ([`Placer`]).
    fn placer(self: &Arc<Self>, rt: &rt::Handle) -> Option<rt::JoinHandle<()>> {
        if !self.placer.start() {
            return None;
        }
        let shared = self.clone();
        Some(rt.spawn_blocking(move || shared.placer.run(|| shared.place())))
    }

    /// Sends what the objecter queued and hands out what it finished.
    pub(crate) fn flush(&self) {
        let (map, transmits, done) = {
            let mut o = lock(&self.objecter);
            let t: Vec<_> = std::iter::from_fn(|| o.poll_transmit()).collect();
            let d: Vec<_> = std::iter::from_fn(|| o.poll_completion()).collect();
            (o.map().clone(), t, d)
        };
        for t in transmits {
            // An OSD gone from this newer map: its request goes again with
            // the map that moved it.
            let Some(c) = map.osd_addrs(t.osd).and_then(|a| self.conn_to(t.osd, a)) else {
                continue;
            };
            c.send_nowait(t.msg.to_message(c.features()));
        }
        let mut waiters = lock(&self.waiters);
        for c in done {
            if let Some(w) = waiters.remove(&c.tid) {
                let _ = w.send(c.result);
            }
        }
    }

    /// The connection to `osd` at `addrs` (a new one if the OSD moved).
    fn conn_to(&self, osd: i32, addrs: &msgr_encoding::EntityAddrvec) -> Option<Connection> {
        let messenger = lock(&self.messenger).clone()?;
        let mut conns = lock(&self.conns);
        if let Some((at, c)) = conns.get(osd) {
            if at == addrs {
                return Some(c.clone());
            }
            c.mark_down();
        }
        let c = messenger.dial(addrs);
        conns.insert(osd, addrs.clone(), c.clone());
        Some(c)
    }

    /// The OSD a connection is to.
    pub(crate) fn osd_of(&self, conn: &Connection) -> Option<i32> {
        lock(&self.conns).osd_of(conn)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::sync::Arc;

    use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
    use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
    use msgr_protocol::{PolicyName, PolicySet};
    use msgr_transport::memory::MemoryNet;

    use super::{OsdConns, Placer};

    struct Nothing;
    impl Dispatcher for Nothing {
        fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
    }

    /// A reply finds its OSD by its connection; a connection replaced (the
    /// OSD moved) or reset is nobody's, and forgetting a stale one leaves
    /// the OSD's current connection alone.
    #[tokio::test]
    async fn a_connection_is_its_osds_until_replaced_or_reset() {
        let m = Messenger::new(
            MemoryNet::new(),
            Options::new(
                EntityName::new(EntityType::CLIENT, 1),
                PolicySet::new(PolicyName::LossyClient.policy()),
                Arc::new(msgr_auth::NoneProvider),
            ),
            Arc::new(Nothing),
        );
        let at = |s: &str| -> EntityAddrvec { s.parse().expect("an address") };
        let (a, b, moved) = (
            at("v2:10.0.0.2:6800/1"),
            at("v2:10.0.0.3:6800/2"),
            at("v2:10.0.0.4:6800/3"),
        );
        let (c1, c2, c3) = (
            m.connect(&a, EntityType::OSD),
            m.connect(&b, EntityType::OSD),
            m.connect(&moved, EntityType::OSD),
        );
        let mut k = OsdConns::default();
        k.insert(1, a, c1.clone());
        k.insert(2, b, c2.clone());
        assert_eq!(
            (k.osd_of(&c1), k.osd_of(&c2), k.osd_of(&c3)),
            (Some(1), Some(2), None)
        );
        // osd.1 moved: its old connection answers for nobody.
        k.insert(1, moved.clone(), c3.clone());
        assert_eq!((k.osd_of(&c1), k.osd_of(&c3)), (None, Some(1)));
        assert_eq!(k.get(1).map(|(at, _)| at), Some(&moved));
        assert_eq!(k.by_id.len(), 2, "the replaced connection is forgotten");
        // A reset of the stale one changes nothing; of a current one, forgets it.
        k.remove(&c1);
        assert_eq!(k.osd_of(&c3), Some(1));
        k.remove(&c2);
        assert_eq!((k.osd_of(&c2), k.get(2).is_some()), (None, false));
        assert_eq!(k.by_id.len(), 1);
        m.shutdown().await;
    }

    #[test]
    fn a_placer_that_panicked_does_not_stop_later_ones() {
        let p = Placer::default();
        assert!(p.start());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.run(|| panic!("a placement panicked"))
        }));
        assert!(r.is_err());
        // The next request starts a placer again, and it places.
        let placed = AtomicU32::new(0);
        assert!(p.start());
        p.run(|| {
            placed.fetch_add(1, SeqCst);
        });
        assert_eq!(placed.load(SeqCst), 1);
    }

    #[test]
    fn a_request_while_a_placer_runs_has_it_look_again() {
        let p = Placer::default();
        assert!(p.start());
        let looks = AtomicU32::new(0);
        p.run(|| {
            // The first look: another request comes meanwhile.
            if looks.fetch_add(1, SeqCst) == 0 {
                assert!(!p.start());
            }
        });
        assert_eq!(looks.load(SeqCst), 2);
    }
}
