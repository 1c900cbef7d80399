//! A deterministic network of two or more nodes, each an [`Endpoint`],
//! for driving `Conn`s in tests: virtual time, in-memory sockets, and a
//! log of every dispatched event.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use msgr_auth::AuthProvider;
use msgr_encoding::{EntityAddrvec, EntityName, EntityType, UTime};
use msgr_frames::WireQueue;

use crate::endpoint::{Endpoint, Resolved};
use crate::{Config, Conn, ConnState, Event, IdentRequest, LinkId, Message, Policy, PolicySet};

/// A dispatched event, as a test wants to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Connected,
    Accepted,
    /// A message, by its tid.
    Message(u64),
    Reset,
    RemoteReset,
    Refused,
    Closed,
}

pub type ConnRef = (usize, usize);

/// One messenger of the network: its endpoint (connections and
/// registry), and what its connections dispatched.
pub struct Node {
    pub name: EntityName,
    pub endpoint: Endpoint,
    pub log: Vec<(usize, Ev)>,
    pub faults: Vec<(usize, String)>,
    pub listening: bool,
}

impl Node {
    pub fn conns(&self) -> &[Conn] {
        self.endpoint.conns()
    }

    pub fn conns_mut(&mut self) -> &mut [Conn] {
        self.endpoint.conns_mut()
    }

    pub fn addrs(&self) -> &EntityAddrvec {
        self.endpoint.addrs()
    }

    pub fn config(&self) -> &Arc<Config> {
        self.endpoint.config()
    }
}

pub(crate) struct Sock {
    pub(crate) ends: [(ConnRef, LinkId); 2],
    pub(crate) open: bool,
    /// What each end read and its connection has not taken yet (a
    /// driver's read buffer: it goes with the socket, to whichever
    /// connection adopts it).
    pub(crate) inbox: [BytesMut; 2],
    /// What each end wrote that a partition holds (TCP retransmits it once
    /// the path heals; it goes with the socket if that closes first).
    pub(crate) wire: [BytesMut; 2],
    /// When TCP retransmits what a partition held: its timeout doubled
    /// since the partition began, so the first retransmission after the
    /// path heals comes that much later.
    pub(crate) release_at: Option<Instant>,
}

pub struct Net {
    pub start: Instant,
    pub now: Instant,
    pub nodes: Vec<Node>,
    pub(crate) socks: Vec<Sock>,
    next_port: u16,
    seed: u64,
    /// Drop everything this node writes once it has accepted a session
    /// (to lose its SERVER_IDENT).
    pub drop_after_accept: Option<usize>,
    dropping: Vec<usize>,
    /// Drop what a node's connection writes while it is in this handshake
    /// phase (to lose, e.g., its CLIENT_IDENT).
    pub drop_in_phase: Option<(usize, &'static str)>,
    /// Since when the network between the nodes is partitioned (see
    /// [`Net::partition`]).
    partitioned_since: Option<Instant>,
    /// How long the latest connect was allowed to take.
    pub last_connect_timeout: Option<Duration>,
    /// Connections whose writes a congested link drops, and since when
    /// (see [`Net::starve`]).
    starved: Vec<(ConnRef, Instant)>,
}

impl Default for Net {
    fn default() -> Self {
        Net::new()
    }
}

impl Net {
    pub fn new() -> Net {
        let now = Instant::now();
        Net {
            start: now,
            now,
            nodes: Vec::new(),
            socks: Vec::new(),
            next_port: 40000,
            seed: 1,
            drop_after_accept: None,
            dropping: Vec::new(),
            drop_in_phase: None,
            partitioned_since: None,
            last_connect_timeout: None,
            starved: Vec::new(),
        }
    }

    /// Partitions the network as a cable pulled between the hosts would:
    /// what the nodes write is lost, both ways; a connect fails as an
    /// unreachable host's does; a path check reports what TCP would
    /// (nothing acknowledged since the partition, through the
    /// retransmissions its doubling timeout made meanwhile). Sockets stay
    /// open: neither end hears of the partition.
    pub fn partition(&mut self) {
        self.partitioned_since.get_or_insert(self.now);
    }

    /// Ends the partition: connects succeed again, and what a socket wrote
    /// meanwhile goes at its next retransmission (TCP's timeout doubles
    /// from 200 ms while nothing is acknowledged, up to 120 s).
    pub fn heal(&mut self) {
        let Some(since) = self.partitioned_since.take() else {
            return;
        };
        let (mut at, mut rto) = (since, Duration::from_millis(200));
        while at <= self.now {
            at += rto;
            rto = (rto * 2).min(Duration::from_secs(120));
        }
        for s in self
            .socks
            .iter_mut()
            .filter(|s| s.wire.iter().any(|w| !w.is_empty()))
        {
            s.release_at = Some(at);
        }
    }

    /// Drops what connection `c` writes, as a congested link drops one
    /// flow's segments and their retransmissions while other flows to the
    /// same host get through: TCP retransmits it once [`Net::unstarve`]d,
    /// and a path check reports what TCP would.
    pub fn starve(&mut self, c: ConnRef) {
        if !self.starved.iter().any(|(s, _)| *s == c) {
            self.starved.push((c, self.now));
        }
    }

    /// Connection `c`'s segments get through again.
    pub fn unstarve(&mut self, c: ConnRef) {
        self.starved.retain(|(s, _)| *s != c);
    }

    /// What TCP's path would report for connection `c`, partitioned,
    /// starved or not: in-memory sockets deliver at once, so a working
    /// path has nothing in flight. Its host was heard from as its
    /// endpoint noted.
    fn path_progress(&self, c: ConnRef) -> crate::PathProgress {
        let host_heard = self.nodes[c.0].endpoint.host_heard(c.1, self.now);
        let starved = self.starved.iter().find(|(s, _)| *s == c).map(|(_, t)| *t);
        let Some(since) = self.partitioned_since.or(starved) else {
            return crate::PathProgress {
                in_flight: false,
                unanswered: 0,
                since_ack: Duration::ZERO,
                host_heard,
            };
        };
        let since_ack = self.now.saturating_duration_since(since);
        // Retransmissions at TCP's smallest timeout, doubling: 200 ms,
        // 400 ms, ... after the first send.
        let (mut unanswered, mut at, mut rto) = (0u8, Duration::ZERO, Duration::from_millis(200));
        while at + rto <= since_ack && unanswered < u8::MAX {
            at += rto;
            rto *= 2;
            unanswered += 1;
        }
        crate::PathProgress {
            in_flight: true,
            unanswered,
            since_ack,
            host_heard,
        }
    }

    /// Adds a node named `name` at `addr` (e.g. "v2:10.0.0.1:6800/1").
    pub fn add_node(
        &mut self,
        name: &str,
        addr: &str,
        policies: PolicySet,
        auth: Arc<dyn AuthProvider>,
    ) -> usize {
        let name: EntityName = name.parse().unwrap();
        let config = Config::new(name, auth, policies);
        self.add_node_with(config, addr)
    }

    pub fn add_node_with(&mut self, mut config: Config, addr: &str) -> usize {
        // Cookies from a seeded source: every run repeats exactly.
        self.seed += 1;
        config.random = Arc::new(msgr_auth::SeededRandom::new(
            self.seed * 0x1234_5678_9abc_def1,
        ));
        let name = config.my_name;
        let addrs = EntityAddrvec::single(addr.parse().unwrap());
        let id_base = conn_id(self.nodes.len(), 0);
        self.nodes.push(Node {
            name,
            endpoint: Endpoint::new(Arc::new(config), addrs, id_base),
            log: Vec::new(),
            faults: Vec::new(),
            listening: true,
        });
        self.nodes.len() - 1
    }

    /// Node `from` connects to node `to`.
    pub fn connect(&mut self, from: usize, to: usize) -> usize {
        let target = self.nodes[to].addrs().clone();
        let peer_type = self.nodes[to].name.kind;
        self.nodes[from]
            .endpoint
            .connect(target, peer_type, self.now)
    }

    pub fn conn(&mut self, c: ConnRef) -> &mut Conn {
        &mut self.nodes[c.0].conns_mut()[c.1]
    }

    pub fn send(&mut self, c: ConnRef, tid: u64, len: usize) {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; len]));
        m.tid = tid;
        let now = self.now;
        self.conn(c).send(m, now);
    }

    pub(crate) fn stamp(&self) -> UTime {
        UTime::from_duration(self.now - self.start)
    }

    /// Processes events and moves bytes until nothing changes.
    pub fn run(&mut self) {
        for _ in 0..10_000 {
            if !self.step() {
                return;
            }
        }
        panic!("the network did not settle");
    }

    /// Moves virtual time forward by `d` in small steps, firing timers.
    pub fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            let next = self
                .nodes
                .iter()
                .flat_map(|n| n.conns().iter().filter_map(|c| c.poll_timeout()))
                .filter(|t| *t > self.now)
                .min()
                .unwrap_or(end)
                .min(end);
            self.now = next;
            for n in 0..self.nodes.len() {
                for c in 0..self.nodes[n].conns().len() {
                    let now = self.now;
                    self.nodes[n].conns_mut()[c].handle_timeout(now);
                }
            }
            self.run();
        }
    }

    pub(crate) fn find_sock(&self, c: ConnRef, link: LinkId) -> Option<(usize, usize)> {
        self.socks.iter().enumerate().find_map(|(i, s)| {
            if !s.open {
                return None;
            }
            s.ends
                .iter()
                .position(|e| e.0 == c && e.1 == link)
                .map(|end| (i, end))
        })
    }

    /// Releases what an interceptor holds on connection `c`: its held
    /// input, then what its socket read meanwhile.
    #[cfg(feature = "interceptor")]
    pub fn unblock(&mut self, c: ConnRef) {
        let now = self.now;
        let sock = self.conn(c).link_id().and_then(|l| self.find_sock(c, l));
        let mut none = BytesMut::new();
        let inbox = match sock {
            Some((i, end)) => &mut self.socks[i].inbox[end],
            None => &mut none,
        };
        self.nodes[c.0].conns_mut()[c.1].unblock(inbox, now);
    }

    /// Cuts the socket of connection `c`, if it has one (both ends see it).
    pub fn cut(&mut self, c: ConnRef) {
        let Some(link) = self.conn(c).link_id() else {
            return;
        };
        if let Some((i, _)) = self.find_sock(c, link) {
            self.close_sock(i);
        }
    }

    pub(crate) fn close_sock(&mut self, i: usize) {
        if !self.socks[i].open {
            return;
        }
        self.socks[i].open = false;
        let now = self.now;
        for (c, link) in self.socks[i].ends {
            self.nodes[c.0].conns_mut()[c.1].socket_closed(
                link,
                &std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset"),
                now,
            );
        }
    }

    fn step(&mut self) -> bool {
        let mut progress = false;
        // Events.
        for n in 0..self.nodes.len() {
            for c in 0..self.nodes[n].conns().len() {
                while let Some(ev) = self.nodes[n].conns_mut()[c].poll_event() {
                    progress = true;
                    self.on_event((n, c), ev);
                }
            }
        }
        // Bytes.
        for i in 0..self.socks.len() {
            if !self.socks[i].open {
                continue;
            }
            for end in 0..2 {
                let (src, src_link) = self.socks[i].ends[end];
                let (dst, dst_link) = self.socks[i].ends[1 - end];
                if self.nodes[src.0].conns_mut()[src.1].link_id() != Some(src_link) {
                    continue;
                }
                let now = self.now;
                let mut q = WireQueue::new();
                progress |= self.nodes[src.0].conns_mut()[src.1].fill_output(&mut q, now);
                if !q.is_empty() {
                    progress = true;
                }
                let bytes = q.take_all();
                if self.dropping.contains(&src.0) {
                    continue;
                }
                let sock = &mut self.socks[i];
                let wire = &mut sock.wire[end];
                wire.extend_from_slice(&bytes);
                let held = sock.release_at.is_some_and(|t| now < t)
                    || self.starved.iter().any(|(s, _)| *s == src);
                if self.partitioned_since.is_some() || held || wire.is_empty() {
                    continue;
                }
                let bytes = wire.split().freeze();
                progress = true;
                if let Some((node, phase)) = self.drop_in_phase {
                    if node == src.0 && self.nodes[src.0].conns_mut()[src.1].phase() == phase {
                        continue;
                    }
                }
                let d = &mut self.nodes[dst.0].conns_mut()[dst.1];
                if d.link_id() != Some(dst_link) {
                    continue;
                }
                let inbox = &mut self.socks[i].inbox[1 - end];
                inbox.extend_from_slice(&bytes);
                d.handle_input(inbox, now);
                d.flush_acks(now);
                self.nodes[dst.0].endpoint.heard(dst.1, now);
            }
        }
        progress
    }

    pub(crate) fn on_event(&mut self, c: ConnRef, ev: Event) {
        let now = self.now;
        match ev {
            Event::Connect { addr, timeout } => {
                self.last_connect_timeout = Some(timeout);
                self.open_socket(c, addr)
            }
            Event::CloseSocket { link } => {
                if let Some((i, _)) = self.find_sock(c, link) {
                    self.close_sock(i);
                }
            }
            Event::ShutdownSocket { link, mut last } => {
                // A STALL or a write FAULT: what was written goes out, then
                // the socket closes; a stalled end does not notice.
                if let Some((i, end)) = self.find_sock(c, link) {
                    let (dst, dst_link) = self.socks[i].ends[1 - end];
                    if self.conn(c).link_id() == Some(link) {
                        self.conn(c).fill_output(&mut last, now);
                    }
                    let bytes = last.take_all();
                    let d = &mut self.nodes[dst.0].conns_mut()[dst.1];
                    if d.link_id() == Some(dst_link) {
                        let inbox = &mut self.socks[i].inbox[1 - end];
                        inbox.extend_from_slice(&bytes);
                        d.handle_input(inbox, now);
                    }
                    self.close_sock(i);
                }
            }
            Event::IdentReceived(req) => self.decide(c, req),
            Event::LearnedAddr(_) | Event::KeepaliveAck(_) => {}
            Event::CheckPath { link } => {
                let (path, stamp) = (self.path_progress(c), self.stamp());
                self.conn(c).handle_path(link, Some(path), stamp, now);
            }
            Event::Fault(e) => {
                let node = &mut self.nodes[c.0];
                node.endpoint.faulted(c.1, &e, now);
                node.faults.push((c.1, e.to_string()));
            }
            Event::Connected => {
                let node = &mut self.nodes[c.0];
                node.endpoint.connected(c.1);
                node.log.push((c.1, Ev::Connected));
            }
            Event::Accepted => {
                self.nodes[c.0].log.push((c.1, Ev::Accepted));
                if self.drop_after_accept == Some(c.0) {
                    self.dropping.push(c.0);
                }
            }
            Event::Message(m) => self.nodes[c.0].log.push((c.1, Ev::Message(m.tid))),
            Event::Reset => self.nodes[c.0].log.push((c.1, Ev::Reset)),
            Event::RemoteReset => self.nodes[c.0].log.push((c.1, Ev::RemoteReset)),
            Event::Refused => self.nodes[c.0].log.push((c.1, Ev::Refused)),
            Event::Closed => {
                let node = &mut self.nodes[c.0];
                node.log.push((c.1, Ev::Closed));
                node.endpoint.closed(c.1);
            }
        }
        let _ = now;
    }

    pub(crate) fn open_socket(&mut self, from: ConnRef, addr: SocketAddr) {
        let now = self.now;
        if self.conn(from).state() != ConnState::NeedSocket {
            return; // it moved on (closed) before the connect completed
        }
        if self.partitioned_since.is_some() {
            let e = std::io::Error::new(std::io::ErrorKind::HostUnreachable, "partitioned");
            return self.conn(from).socket_failed(&e, now);
        }
        let target = self
            .nodes
            .iter()
            .position(|n| n.listening && n.endpoint.listens_on(addr).is_some());
        let Some(to) = target else {
            self.conn(from)
                .socket_failed(&std::io::ErrorKind::ConnectionRefused.into(), now);
            return;
        };
        self.next_port += 1;
        let from_ip = self.nodes[from.0].addrs().0[0]
            .addr
            .map(|a| a.ip())
            .unwrap();
        let peer_socket = SocketAddr::new(from_ip, self.next_port);
        let node = &mut self.nodes[to];
        // The listener speaks what its address says.
        let protocol = node.endpoint.listens_on(addr).unwrap();
        let acc_id = node.endpoint.accept(protocol, peer_socket, now);
        let Some(acc_link) = node.conns()[acc_id].link_id() else {
            // Closed at birth (an interceptor's fault): the connect fails.
            let closed = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed by peer");
            return self.conn(from).socket_failed(&closed, now);
        };
        self.conn(from).socket_connected(None, now);
        let from_link = self.conn(from).link_id().unwrap();
        self.socks.push(Sock {
            ends: [(from, from_link), ((to, acc_id), acc_link)],
            open: true,
            inbox: Default::default(),
            wire: Default::default(),
            release_at: None,
        });
    }

    pub(crate) fn decide(&mut self, c: ConnRef, req: IdentRequest) {
        let now = self.now;
        let stamp = self.stamp();
        let resolved = self.nodes[c.0].endpoint.handle_ident(c.1, req, stamp, now);
        if let Resolved::Moved { into, link } = resolved {
            // The accepted socket now belongs to the existing connection.
            for s in self.socks.iter_mut().filter(|s| s.open) {
                for end in s.ends.iter_mut() {
                    if end.0 == c {
                        *end = ((c.0, into), link);
                    }
                }
            }
        }
    }

    /// Stops dropping what nodes write.
    pub fn stop_dropping(&mut self) {
        self.dropping.clear();
        self.drop_after_accept = None;
        self.drop_in_phase = None;
    }

    /// Replaces node `n` by a fresh instance at the same address (a restart:
    /// all its connections and sessions are gone).
    pub fn restart(&mut self, n: usize) {
        let now = self.now;
        for c in self.nodes[n].conns_mut() {
            c.mark_down();
        }
        self.run();
        let node = &mut self.nodes[n];
        node.endpoint.clear();
        node.log.clear();
        node.faults.clear();
        let _ = now;
    }

    /// Events of `node`'s connection `conn`, in order.
    pub fn log(&self, node: usize, conn: usize) -> Vec<Ev> {
        self.nodes[node]
            .log
            .iter()
            .filter(|(c, _)| *c == conn)
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// The tids of messages delivered on every connection of `node`.
    pub fn delivered(&self, node: usize) -> Vec<u64> {
        self.nodes[node]
            .log
            .iter()
            .filter_map(|(_, e)| match e {
                Ev::Message(t) => Some(*t),
                _ => None,
            })
            .collect()
    }

    pub fn state(&self, c: ConnRef) -> ConnState {
        self.nodes[c.0].conns()[c.1].state()
    }

    /// The node's connection registered for `peer`.
    pub fn registered(&self, node: usize, peer: usize) -> Option<usize> {
        let addrs = self.nodes[peer].addrs().clone();
        self.nodes[node].endpoint.registered(&addrs)
    }
}

/// The interceptor's name for node `node`'s connection `conn`.
pub fn conn_id(node: usize, conn: usize) -> u64 {
    (node as u64) << 32 | conn as u64
}

pub fn policies(p: Policy) -> PolicySet {
    PolicySet::new(p)
}

pub fn osd() -> EntityType {
    EntityType::OSD
}
