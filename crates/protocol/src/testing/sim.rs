//! A seeded scheduler over the harness network: where [`Net::run`] moves
//! every byte at once in a fixed order, [`Sim`] makes one choice at a time
//! from what is due (deliver part of a socket's bytes, complete a connect,
//! cut a socket), with random delays per write, random split points (so
//! every incremental-decode path is taken) and random tie-breaking. Every
//! choice is folded into a trace hash, so a test can count how many
//! distinct interleavings its seeds explored.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_encoding::EntityAddrvec;

use super::net::{ConnRef, Ev, Net};
use crate::{ConnState, Event};

mod idents;

pub use idents::IdentCounts;

/// splitmix64.
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng(seed)
    }
    pub fn next(&mut self) -> u64 {
        msgr_auth::splitmix64(&mut self.0)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub struct Sim {
    pub net: Net,
    pub rng: SimRng,
    /// Bytes in flight per socket and direction (end 0 → 1, end 1 → 0),
    /// each write with the time it arrives (never before an earlier one).
    wire: Vec<[VecDeque<(Instant, Bytes)>; 2]>,
    /// Connects in progress: when they complete, who, and where to.
    connects: Vec<(Instant, ConnRef, SocketAddr)>,
    /// Every message delivered: (node, connection, tid), in order.
    pub deliveries: Vec<(usize, usize, u64)>,
    /// Every event dispatched: (node, connection, event).
    pub events: Vec<(usize, usize, Ev)>,
    pub trace: u64,
    pub steps: u64,
    /// Socket cuts still allowed, and their chance per step (1 in N).
    pub cuts_left: u32,
    pub cut_one_in: u64,
    pub cuts: u32,
    pub max_delay: Duration,
    /// Resolve idents in the sharded runtime's separate steps, each hop a
    /// scheduled choice (sim/idents.rs), instead of at once.
    pub split_idents: bool,
    idents: idents::Idents,
}

impl Sim {
    pub fn new(net: Net, seed: u64) -> Sim {
        Sim {
            net,
            rng: SimRng::new(seed),
            wire: Vec::new(),
            connects: Vec::new(),
            deliveries: Vec::new(),
            events: Vec::new(),
            trace: 0xcbf2_9ce4_8422_2325,
            steps: 0,
            cuts_left: 0,
            cut_one_in: 40,
            cuts: 0,
            max_delay: Duration::from_millis(3),
            split_idents: false,
            idents: Default::default(),
        }
    }

    fn note(&mut self, words: &[u64]) {
        for w in words {
            for b in w.to_le_bytes() {
                self.trace = (self.trace ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }

    /// Handles every pending event; a connect is held back for the
    /// scheduler to complete later.
    fn drain_events(&mut self) {
        loop {
            let mut any = false;
            for n in 0..self.net.nodes.len() {
                for c in 0..self.net.nodes[n].conns().len() {
                    while let Some(ev) = self.net.nodes[n].conns_mut()[c].poll_event() {
                        any = true;
                        self.on_event((n, c), ev);
                    }
                }
            }
            if !any {
                return;
            }
        }
    }

    fn on_event(&mut self, c: ConnRef, ev: Event) {
        let seen = match &ev {
            Event::Connected => Some(Ev::Connected),
            Event::Accepted => Some(Ev::Accepted),
            Event::Message(m) => {
                self.deliveries.push((c.0, c.1, m.tid));
                Some(Ev::Message(m.tid))
            }
            Event::Reset => Some(Ev::Reset),
            Event::RemoteReset => Some(Ev::RemoteReset),
            Event::Refused => Some(Ev::Refused),
            Event::Closed => Some(Ev::Closed),
            _ => None,
        };
        if let Some(e) = seen {
            self.events.push((c.0, c.1, e));
        }
        match ev {
            Event::Connect { addr, .. } => {
                let delay = self.delay();
                self.connects.push((self.net.now + delay, c, addr));
            }
            Event::IdentReceived(req) if self.split_idents => self.ident_received(c, req),
            other => self.net.on_event(c, other),
        }
    }

    fn delay(&mut self) -> Duration {
        let max = self.max_delay.as_micros().max(1) as u64;
        Duration::from_micros(self.rng.below(max))
    }

    /// Moves what connections wrote onto the wire.
    fn collect_output(&mut self) {
        while self.wire.len() < self.net.socks.len() {
            self.wire.push([VecDeque::new(), VecDeque::new()]);
        }
        for i in 0..self.net.socks.len() {
            if !self.net.socks[i].open {
                self.wire[i] = [VecDeque::new(), VecDeque::new()];
                continue;
            }
            for end in 0..2 {
                let (src, src_link) = self.net.socks[i].ends[end];
                let conn = &mut self.net.nodes[src.0].conns_mut()[src.1];
                if conn.link_id() != Some(src_link) {
                    continue;
                }
                let mut q = msgr_frames::WireQueue::new();
                conn.fill_output(&mut q, self.net.now);
                if q.is_empty() {
                    continue;
                }
                let bytes = q.take_all();
                let after = self.wire[i][end].back().map(|(t, _)| *t);
                let at = (self.net.now + self.delay()).max(after.unwrap_or(self.net.now));
                self.wire[i][end].push_back((at, bytes));
            }
        }
    }

    /// Delivers some of the first write in flight on socket `i`, `end` → other.
    fn deliver(&mut self, i: usize, end: usize) {
        let Some((at, bytes)) = self.wire[i][end].pop_front() else {
            return;
        };
        let n = if bytes.len() > 1 && self.rng.below(3) == 0 {
            1 + self.rng.below(bytes.len() as u64 - 1) as usize
        } else {
            bytes.len()
        };
        if n < bytes.len() {
            self.wire[i][end].push_front((at, bytes.slice(n..)));
        }
        self.note(&[1, i as u64, end as u64, n as u64]);
        let (dst, dst_link) = self.net.socks[i].ends[1 - end];
        let now = self.net.now;
        let d = &mut self.net.nodes[dst.0].conns_mut()[dst.1];
        if d.link_id() != Some(dst_link) {
            return;
        }
        let inbox = &mut self.net.socks[i].inbox[1 - end];
        inbox.extend_from_slice(&bytes[..n]);
        d.handle_input(inbox, now);
        d.flush_acks(now);
    }

    fn fire_timers(&mut self) {
        let now = self.net.now;
        for n in 0..self.net.nodes.len() {
            for c in 0..self.net.nodes[n].conns().len() {
                let conn = &mut self.net.nodes[n].conns_mut()[c];
                if conn.poll_timeout().is_some_and(|t| t <= now) {
                    conn.handle_timeout(now);
                }
            }
        }
    }

    /// Runs the network until virtual time `until`, one seeded choice at a
    /// time.
    pub fn run_until(&mut self, until: Instant) {
        loop {
            self.steps += 1;
            assert!(self.steps < 5_000_000, "the simulation does not settle");
            self.drain_events();
            self.collect_output();
            let now = self.net.now;
            if self.cuts_left > 0 && self.rng.below(self.cut_one_in) == 0 {
                let open: Vec<usize> = (0..self.net.socks.len())
                    .filter(|&i| self.net.socks[i].open)
                    .collect();
                if !open.is_empty() {
                    let i = open[self.rng.below(open.len() as u64) as usize];
                    self.cuts_left -= 1;
                    self.cuts += 1;
                    self.note(&[2, i as u64]);
                    self.net.close_sock(i);
                    continue;
                }
            }
            let mut due: Vec<(usize, usize)> = Vec::new();
            let mut held = 0;
            for (i, dirs) in self.wire.iter().enumerate() {
                for (end, q) in dirs.iter().enumerate() {
                    if q.front().is_some_and(|(t, _)| *t <= now) {
                        match self.blocked(i, end) {
                            true => held += 1,
                            false => due.push((i, end)),
                        }
                    }
                }
            }
            self.idents.counts.held += held;
            let connects_due: Vec<usize> = (0..self.connects.len())
                .filter(|&j| self.connects[j].0 <= now)
                .collect();
            let hops_due = self.hops_due();
            let choices = due.len() + connects_due.len() + hops_due.len();
            if choices > 0 {
                let pick = self.rng.below(choices as u64) as usize;
                if pick < due.len() {
                    let (i, end) = due[pick];
                    self.deliver(i, end);
                } else if pick < due.len() + connects_due.len() {
                    let (_, from, addr) = self.connects.remove(connects_due[pick - due.len()]);
                    self.note(&[3, from.0 as u64, from.1 as u64]);
                    self.net.open_socket(from, addr);
                } else {
                    self.fire_hop(hops_due[pick - due.len() - connects_due.len()]);
                }
                continue;
            }
            // Nothing due: on to the next thing that will be (what waits
            // on a hop is due when the hop is).
            let this = &*self;
            let next_wire = this.wire.iter().enumerate().flat_map(|(i, dirs)| {
                dirs.iter().enumerate().filter_map(move |(end, q)| {
                    let t = q.front().map(|(t, _)| *t)?;
                    (!this.blocked(i, end)).then_some(t)
                })
            });
            let next_connect = self
                .connects
                .iter()
                .map(|c| c.0)
                .chain(self.idents.hops.iter().map(|h| h.0));
            let next_timer = self
                .net
                .nodes
                .iter()
                .flat_map(|n| n.conns().iter().filter_map(|c| c.poll_timeout()))
                .filter(|t| *t > now);
            let next = next_wire.chain(next_connect).chain(next_timer).min();
            match next {
                Some(t) if t <= until => {
                    self.net.now = t;
                    self.fire_timers();
                }
                _ => {
                    self.net.now = until.max(now);
                    self.fire_timers();
                    self.drain_events();
                    self.collect_output();
                    return;
                }
            }
        }
    }

    /// How often each path of the split ident resolution was taken.
    pub fn ident_counts(&self) -> IdentCounts {
        self.idents.counts
    }

    pub fn run_for(&mut self, d: Duration) {
        let until = self.net.now + d;
        self.run_until(until);
    }

    /// Replaces node `n` by a fresh instance at `addr` (a restart; a new
    /// nonce makes it a different instance to its peers).
    pub fn restart(&mut self, n: usize, addr: &str) {
        for c in 0..self.net.nodes[n].conns().len() {
            self.net.nodes[n].conns_mut()[c].mark_down();
        }
        self.drain_events();
        // The old connections stay (closed) so every index keeps naming
        // one connection; the registry starts empty.
        let node = &mut self.net.nodes[n];
        node.endpoint.registry_mut().clear();
        let addrs = EntityAddrvec::single(addr.parse().expect("address"));
        node.endpoint.set_addrs(addrs);
        self.note(&[4, n as u64]);
    }
}

impl Net {
    /// Every open socket joins two live connections that still use it.
    pub fn check_sockets(&self) -> Result<(), String> {
        for (i, s) in self.socks.iter().enumerate().filter(|(_, s)| s.open) {
            for (c, link) in s.ends {
                let conn = &self.nodes[c.0].conns()[c.1];
                if conn.state() == ConnState::Closed || conn.link_id() != Some(link) {
                    return Err(format!(
                        "socket {i} is open but its end {c:?} is {:?} on {:?}",
                        conn.state(),
                        conn.link_id()
                    ));
                }
            }
        }
        Ok(())
    }
}
