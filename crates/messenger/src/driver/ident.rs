//! An accepted ident, resolved between two connections that may live on
//! different shards (the rules: msgr_protocol::registry). The accepting
//! connection looks its peer up in the registry; if another connection
//! holds the peer, it sends that one an [`Asking`] and waits for a
//! [`Verdict`]. The existing connection decides with its own state, in
//! one step of its own task: nothing else can change that state
//! meanwhile, so two idents racing for one peer are decided one after the
//! other, as under Ceph's lock. A Reuse comes with a [`Promise`]: the
//! accepting connection keeps it by sending its socket ([`Adoption`]), and
//! a promise dropped unkept (the acceptor closed first) tells the existing
//! connection to stop waiting.
//!
//! The registry is one map under a mutex taken only here and when
//! connections are opened or close: never per message.

use msgr_protocol::registry::{self, Ask, Outcome};
use msgr_protocol::{Decision, IdentRequest, Reuse};
use msgr_transport::Transport;
use tokio::sync::oneshot;

use super::{Driver, Move, Socket};
use crate::connection::{wall_clock, Asking, Command, Promise, Verdict};

/// What moves into the existing connection: the accepted socket, what was
/// framed for it and what was read from it, and what its handshake
/// learned.
pub(crate) struct Adoption<T: Transport> {
    reuse: Option<Reuse>,
    decision: Decision,
    socket: Option<Socket<T>>,
    pending: msgr_frames::WireQueue,
    unread: bytes::BytesMut,
    /// The shard the socket was accepted on (and is registered with).
    from_shard: usize,
}

/// The accepting side's wait for a verdict, and asks that came meanwhile.
#[derive(Default)]
pub(crate) struct Pending {
    /// Boxed: few connections ever wait, all would carry its size.
    waiting: Option<Box<(oneshot::Receiver<Verdict>, Ask)>>,
    /// Asks of other acceptors, answered once our own verdict is in (until
    /// then we are not what they should be decided against).
    deferred: Vec<Asking>,
}

impl Pending {
    pub fn deciding(&self) -> bool {
        self.waiting.is_some()
    }

    pub fn verdict_mut(&mut self) -> Option<&mut oneshot::Receiver<Verdict>> {
        self.waiting.as_mut().map(|w| &mut w.0)
    }
}

impl<T: Transport> Driver<T> {
    /// Our accepted peer identified itself: decide here if nobody else
    /// holds it, else ask who does.
    pub(super) fn on_ident(&mut self, req: IdentRequest) {
        tracing::debug!(target: "msgr", "ident received: deciding");
        let ask = Ask::of(&self.conn, req);
        self.ask(ask);
    }

    fn ask(&mut self, ask: Ask) {
        let key = registry::lookup_key(&self.conn, &ask.req);
        let mut reg = self.inner.registry();
        let holder = key
            .and_then(|k| reg.holder(&k))
            .filter(|c| **c != self.handle)
            .cloned();
        match (key, holder) {
            (Some(key), Some(holder)) => {
                drop(reg);
                let (reply, rx) = oneshot::channel();
                holder.command(Command::Ask(Box::new(Asking {
                    ask: ask.clone(),
                    key,
                    from: self.handle.clone(),
                    reply,
                })));
                self.ident.waiting = Some(Box::new((rx, ask)));
            }
            (key, _) => {
                let decision = registry::decide(&ask, None);
                if registry::outcome(&decision, false) == Outcome::RegisterAccepting {
                    if let Some(k) = key {
                        self.inner.register(&mut reg, k, &self.handle);
                    }
                }
                drop(reg);
                self.conclude(decision, None);
            }
        }
    }

    /// Another acceptor's ident for the peer we hold.
    pub(super) fn on_ask(&mut self, a: Box<Asking>) {
        if self.ident.deciding() {
            self.ident.deferred.push(*a);
            return;
        }
        let mut reg = self.inner.registry();
        if reg.holder(&a.key) != Some(&self.handle) {
            drop(reg);
            let _ = a.reply.send(Verdict::Retry);
            return;
        }
        let decision = registry::decide(&a.ask, Some(&self.conn));
        registry::apply_existing(&decision, &mut self.conn, wall_clock(), self.now);
        let outcome = registry::outcome(&decision, true);
        if outcome == Outcome::RegisterAccepting {
            self.inner.register(&mut reg, a.key, &a.from);
        }
        drop(reg);
        let promise =
            (outcome == Outcome::MovedToExisting).then(|| Promise::to(self.handle.clone()));
        // An asker gone meanwhile drops the verdict, and with it the
        // promise, which tells us.
        let _ = a.reply.send(Verdict::Decided { decision, promise });
    }

    /// Our verdict (None: the connection asked closed before deciding).
    pub(super) fn on_verdict(&mut self, v: Option<Verdict>) {
        let Some(ask) = self.ident.waiting.take().map(|w| w.1) else {
            return;
        };
        match v {
            Some(Verdict::Decided { decision, promise }) => self.conclude(decision, promise),
            Some(Verdict::Retry) | None => self.ask(ask),
        }
        if !self.ident.deciding() {
            for a in std::mem::take(&mut self.ident.deferred) {
                self.on_ask(Box::new(a));
            }
        }
    }

    /// The accepting connection's half of a decision.
    fn conclude(&mut self, decision: Decision, promise: Option<Promise>) {
        tracing::debug!(target: "msgr", ?decision, "ident decided");
        let earlier = self.conn.queued_events();
        let outcome = registry::outcome(&decision, promise.is_some());
        let replace = matches!(decision, Decision::ReplaceLossy);
        let d = decision.clone();
        let reuse = registry::apply_accepting(d, &mut self.conn, promise.is_some(), self.now);
        match promise {
            // Our socket moves into the existing connection.
            Some(p) if reuse.is_some() => {
                #[cfg(feature = "interceptor")]
                if let Some(i) = self.inner.config.interceptor.as_ref() {
                    i.replaced(self.handle.id());
                }
                p.keep(Box::new(Adoption::<T> {
                    reuse,
                    decision,
                    socket: self.io.socket.take(),
                    pending: std::mem::take(&mut self.io.out),
                    unread: std::mem::take(&mut self.io.rbuf),
                    from_shard: self.shard,
                }));
                self.io.close();
            }
            // We closed before it could (dropping the promise says so).
            Some(_) => {}
            None if outcome == Outcome::RegisterAccepting => {
                self.replaced = replace;
                self.place(self.shard, earlier);
            }
            None => {}
        }
    }

    /// The socket a Reuse promised us, or word that it will not come.
    pub(super) fn on_adopt(&mut self, a: Box<dyn std::any::Any + Send>) {
        let Ok(a) = a.downcast::<Adoption<T>>() else {
            self.conn.end_replacing();
            return;
        };
        let Adoption {
            reuse,
            decision,
            socket,
            pending,
            unread,
            from_shard,
        } = *a;
        let adopted = reuse.is_some();
        let earlier = self.conn.queued_events();
        registry::adopt(&mut self.conn, reuse, &decision, self.now);
        if adopted {
            // A connect of ours still under way is moot: the session goes
            // on over the adopted socket (and may now move with it).
            self.connecting = None;
        }
        let (Some(socket), Some(link), true) = (socket, self.conn.link_id(), adopted) else {
            return;
        };
        let socket = Socket { link, ..socket };
        let socket = match from_shard == self.shard {
            true => Ok(socket),
            false => socket.rehome(),
        };
        match socket {
            Ok(s) => self.io.install(s, pending, unread),
            Err(e) => self.conn.socket_closed(link, &e, self.now),
        }
        // Crimson's default: the session goes where its socket was
        // accepted.
        self.place(from_shard, earlier);
    }

    /// Where an accepted session runs: where the dispatcher says, else
    /// `default`. Called before the session's accept is dispatched, with
    /// how many events the connection queued before it (`earlier`: they
    /// are dispatched here, before the session moves).
    fn place(&mut self, default: usize, earlier: usize) {
        let shards = &self.inner.shards;
        let chosen = {
            let c = &self.conn;
            let peer = c.peer();
            let p = crate::Placement {
                peer_type: peer.entity_type,
                peer_name: c.peer_name(),
                peer_addrs: &peer.addrs,
                identity: c.peer_identity(),
                accepted: true,
                shard: self.shard,
                shards: shards.len(),
            };
            self.inner.dispatcher.ms_choose_shard(&p)
        };
        let to = shards.index(chosen.unwrap_or(default));
        let Ok(to) = u32::try_from(to) else { return };
        match self.move_to {
            _ if to as usize == self.shard => {}
            // A second accept before the first was dispatched: the first
            // is still where the shard's events end.
            Some(Move { placed: true, .. }) => self.move_to = Move::placement(to),
            asked => {
                // An explicit move still waiting comes after the placement.
                if let Some(Move {
                    to: asked,
                    placed: false,
                }) = asked
                {
                    self.then_move = Some(asked);
                }
                self.move_to = Move::placement(to);
                self.before_move = u32::try_from(earlier).unwrap_or(u32::MAX);
            }
        }
    }
}
