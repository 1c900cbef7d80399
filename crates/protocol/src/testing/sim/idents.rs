//! Ident resolution as the sharded runtime carries it out
//! (messenger/src/driver/ident.rs), when [`Sim::split_idents`] is set: the
//! steps of [`registry`] run as separate scheduled hops between the two
//! connections, each after a seeded delay, as commands between shards do.
//!
//! - The accepting connection asks the connection registered for its peer
//!   (an [`Hop::Ask`]) and reads nothing until its verdict comes back.
//! - The registered connection decides with its state as it is when the
//!   ask arrives, carries out its half and answers ([`Hop::Verdict`]); one
//!   that waits for its own verdict answers later; one no longer registered
//!   tells the asker to ask again.
//! - For a Reuse it is `replacing` (and reads nothing) until the accepted
//!   socket arrives ([`Hop::Adopt`]), or word that it will not: the
//!   accepting connection closed first.
//!
//! Other idents, faults, timers and bytes interleave with every hop.

use std::collections::HashSet;

use std::collections::HashMap;
use std::time::Instant;

use super::*;
use crate::registry::{self, Outcome, PeerKey};
use crate::{Decision, IdentRequest, Reuse};

/// A message between two connections, in flight.
pub(super) enum Hop {
    Ask {
        asker: ConnRef,
        holder: ConnRef,
        key: PeerKey,
        ask: registry::Ask,
    },
    /// `None`: ask again (the holder was no longer registered).
    Verdict {
        asker: ConnRef,
        ask: registry::Ask,
        verdict: Option<(Decision, Option<ConnRef>)>,
    },
    /// The accepted socket (`sock`), or word that it will not come.
    Adopt {
        to: ConnRef,
        from: ConnRef,
        reuse: Option<Reuse>,
        decision: Decision,
        sock: Option<usize>,
    },
}

/// How often each path of the split resolution was taken.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IdentCounts {
    /// Asks sent to a registered connection.
    pub asks: u64,
    /// Asks answered "ask again" (the holder was no longer registered).
    pub retries: u64,
    /// Asks a holder deferred while it waited for its own verdict.
    pub deferred: u64,
    /// Sockets adopted by an existing connection.
    pub adopted: u64,
    /// Promised sockets that did not come (the asker closed first).
    pub cancelled: u64,
    /// Bytes held back from a connection deciding or replacing.
    pub held: u64,
}

/// The split resolution's state.
#[derive(Default)]
pub(super) struct Idents {
    pub counts: IdentCounts,
    pub hops: Vec<(Instant, Hop)>,
    /// Accepting connections waiting for their verdict.
    deciding: HashSet<ConnRef>,
    /// Asks a deciding holder answers once its own verdict is in.
    deferred: HashMap<ConnRef, Vec<(ConnRef, PeerKey, registry::Ask)>>,
    /// Sockets on their way to the connection that adopts them.
    in_transit: HashSet<usize>,
}

impl Sim {
    /// Whether what arrives at end `1 - end` of socket `i` waits: the
    /// socket is in transit, or its connection waits for a verdict or for
    /// the socket it will adopt (the runtime does not read then).
    pub(super) fn blocked(&self, i: usize, end: usize) -> bool {
        if self.idents.in_transit.contains(&i) {
            return true;
        }
        let (dst, _) = self.net.socks[i].ends[1 - end];
        self.idents.deciding.contains(&dst) || self.net.nodes[dst.0].conns()[dst.1].is_replacing()
    }

    pub(super) fn hop(&mut self, at: Instant, hop: Hop) {
        let at = at + self.delay();
        self.idents.hops.push((at, hop));
    }

    /// Our accepted peer identified itself.
    pub(super) fn ident_received(&mut self, asker: ConnRef, req: IdentRequest) {
        let ask = registry::Ask::of(&self.net.nodes[asker.0].conns_mut()[asker.1], req);
        self.ask(asker, ask);
    }

    fn ask(&mut self, asker: ConnRef, ask: registry::Ask) {
        let now = self.net.now;
        let node = &mut self.net.nodes[asker.0];
        let key = registry::lookup_key(&node.conns_mut()[asker.1], &ask.req);
        let holder = key
            .and_then(|k| node.endpoint.registry().holder(&k).copied())
            .filter(|&h| h != asker.1);
        match (key, holder) {
            (Some(key), Some(h)) => {
                self.idents.deciding.insert(asker);
                self.idents.counts.asks += 1;
                let holder = (asker.0, h);
                self.hop(
                    now,
                    Hop::Ask {
                        asker,
                        holder,
                        key,
                        ask,
                    },
                );
            }
            (key, _) => {
                let decision = registry::decide(&ask, None);
                if registry::outcome(&decision, false) == Outcome::RegisterAccepting {
                    if let Some(k) = key {
                        node.endpoint.registry_mut().register(k, asker.1);
                    }
                }
                self.conclude(asker, decision, None);
            }
        }
    }

    /// Another acceptor's ident, at the connection registered for its peer.
    fn on_ask(&mut self, asker: ConnRef, holder: ConnRef, key: PeerKey, ask: registry::Ask) {
        if self.idents.deciding.contains(&holder) {
            let deferred = self.idents.deferred.entry(holder).or_default();
            deferred.push((asker, key, ask));
            self.idents.counts.deferred += 1;
            return;
        }
        let now = self.net.now;
        let stamp = self.net.stamp();
        let node = &mut self.net.nodes[holder.0];
        if node.endpoint.registry().holder(&key) != Some(&holder.1) {
            self.idents.counts.retries += 1;
            self.hop(
                now,
                Hop::Verdict {
                    asker,
                    ask,
                    verdict: None,
                },
            );
            return;
        }
        let existing = &mut node.conns_mut()[holder.1];
        let decision = registry::decide(&ask, Some(existing));
        registry::apply_existing(&decision, existing, stamp, now);
        let outcome = registry::outcome(&decision, true);
        if outcome == Outcome::RegisterAccepting {
            node.endpoint.registry_mut().register(key, asker.1);
        }
        let promise = (outcome == Outcome::MovedToExisting).then_some(holder);
        let verdict = Some((decision, promise));
        self.hop(
            now,
            Hop::Verdict {
                asker,
                ask,
                verdict,
            },
        );
    }

    fn on_verdict(
        &mut self,
        asker: ConnRef,
        ask: registry::Ask,
        verdict: Option<(Decision, Option<ConnRef>)>,
    ) {
        self.idents.deciding.remove(&asker);
        let closed = self.net.state(asker) == ConnState::Closed;
        match verdict {
            // The asker is gone: its promise is dropped unkept.
            Some((decision, Some(to))) if closed => self.adopt(to, asker, None, decision, None),
            _ if closed => {}
            Some((decision, promise)) => self.conclude(asker, decision, promise),
            None => self.ask(asker, ask),
        }
        if !self.idents.deciding.contains(&asker) {
            for (a, key, ask) in self.idents.deferred.remove(&asker).unwrap_or_default() {
                self.on_ask(a, asker, key, ask);
            }
        }
    }

    /// The accepting connection's half of a decision: for a Reuse, its
    /// socket goes to the existing connection.
    fn conclude(&mut self, asker: ConnRef, decision: Decision, promise: Option<ConnRef>) {
        let now = self.net.now;
        let sock = self
            .net
            .conn(asker)
            .link_id()
            .and_then(|l| self.net.find_sock(asker, l))
            .map(|(i, _)| i);
        let conn = self.net.conn(asker);
        let reuse = registry::apply_accepting(decision.clone(), conn, promise.is_some(), now);
        if let Some(to) = promise {
            let sock = sock.filter(|_| reuse.is_some());
            if let Some(i) = sock {
                self.idents.in_transit.insert(i);
            }
            self.adopt(to, asker, reuse, decision, sock);
        }
    }

    /// Sends `to` the accepting connection's socket (`sock`, for a Reuse)
    /// or word that none comes.
    fn adopt(
        &mut self,
        to: ConnRef,
        from: ConnRef,
        reuse: Option<Reuse>,
        decision: Decision,
        sock: Option<usize>,
    ) {
        let now = self.net.now;
        let hop = Hop::Adopt {
            to,
            from,
            reuse,
            decision,
            sock,
        };
        self.hop(now, hop);
    }

    fn on_adopt(
        &mut self,
        to: ConnRef,
        from: ConnRef,
        reuse: Option<Reuse>,
        decision: Decision,
        sock: Option<usize>,
    ) {
        let now = self.net.now;
        let adopted = reuse.is_some();
        match adopted {
            true => self.idents.counts.adopted += 1,
            false => self.idents.counts.cancelled += 1,
        }
        registry::adopt(self.net.conn(to), reuse, &decision, now);
        let Some(i) = sock else {
            return;
        };
        self.idents.in_transit.remove(&i);
        match (adopted, self.net.conn(to).link_id()) {
            (true, Some(link)) if self.net.socks[i].open => {
                for end in self.net.socks[i].ends.iter_mut() {
                    if end.0 == from {
                        *end = (to, link);
                    }
                }
            }
            // Cut on the way: the adopting connection finds it closed.
            (true, Some(link)) => {
                let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
                self.net.conn(to).socket_closed(link, &reset, now);
            }
            // Closed before the socket arrived: the socket closes.
            _ => self.net.close_sock(i),
        }
    }

    /// Hops due now.
    pub(super) fn hops_due(&self) -> Vec<usize> {
        let now = self.net.now;
        (0..self.idents.hops.len())
            .filter(|&j| self.idents.hops[j].0 <= now)
            .collect()
    }

    pub(super) fn fire_hop(&mut self, j: usize) {
        let (_, hop) = self.idents.hops.remove(j);
        match hop {
            Hop::Ask {
                asker,
                holder,
                key,
                ask,
            } => {
                self.note(&[5, asker.1 as u64, holder.1 as u64]);
                self.on_ask(asker, holder, key, ask);
            }
            Hop::Verdict {
                asker,
                ask,
                verdict,
            } => {
                self.note(&[6, asker.1 as u64, verdict.is_some() as u64]);
                self.on_verdict(asker, ask, verdict);
            }
            Hop::Adopt {
                to,
                from,
                reuse,
                decision,
                sock,
            } => {
                self.note(&[7, to.1 as u64, reuse.is_some() as u64]);
                self.on_adopt(to, from, reuse, decision, sock);
            }
        }
    }
}
