//! Ceph's crimson failover matrix (src/test/crimson/test_messenger.cc,
//! `test_v2_protocol`; docs/research/crimson-v2-matrix.md), ported scenario
//! by scenario with crimson's exact expected counters, each breakpoint a
//! separate case, over the memory transport and TCP.
//!
//! A case: a Test messenger with the interceptor and a plain TestPeer; the
//! body sends and connects; `wait_results` waits until every Test
//! connection is READY or closed and what was sent arrived; then each
//! connection's counters are checked: C(connect attempts, CLIENT_IDENT
//! writes, SESSION_RECONNECT writes, connects dispatched), A(accepts,
//! CLIENT_IDENT reads, SESSION_RECONNECT reads, accepts dispatched),
//! R(resets, remote resets) and its final state.
//!
//! Ported so far: the scenarios where the Test side is the connector (#1,
//! #2, #3, #8, #9, #11, #16, #19 of the note's §4.1).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::{AuthProvider, ClientAuth, ConMode, NoneClient, NoneServer, ServerAuth};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_frames::Tag;
use msgr_messenger::{
    ConnState, Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::intercept::{Action, Breakpoint, CustomPoint, Direction, Traps};
use msgr_protocol::PolicySet;
use msgr_transport::memory::MemoryNet;
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;

struct NoneAuth;
impl AuthProvider for NoneAuth {
    fn client(&self, me: &EntityName) -> Box<dyn ClientAuth> {
        Box::new(NoneClient {
            name: me.to_string(),
            global_id: 0,
            modes: vec![ConMode::CRC],
        })
    }
    fn server(&self) -> Box<dyn ServerAuth> {
        Box::new(NoneServer::default())
    }
}

/// Dispatched events per connection id (crimson's cnt_*_dispatched).
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
struct Dispatched {
    connects: u32,
    accepts: u32,
    resets: u32,
    remote_resets: u32,
}

/// The Test side's dispatcher.
#[derive(Default)]
struct TestSide {
    by_conn: Mutex<BTreeMap<u64, Dispatched>>,
    received: Mutex<u32>,
}

impl TestSide {
    fn count(&self, c: &Connection, f: impl FnOnce(&mut Dispatched)) {
        f(self.by_conn.lock().unwrap().entry(c.id()).or_default());
    }
}

impl Dispatcher for TestSide {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {
        *self.received.lock().unwrap() += 1;
    }
    fn ms_handle_connect(&self, c: &Connection) {
        self.count(c, |d| d.connects += 1);
    }
    fn ms_handle_accept(&self, c: &Connection) {
        self.count(c, |d| d.accepts += 1);
    }
    fn ms_handle_reset(&self, c: &Connection) {
        self.count(c, |d| d.resets += 1);
    }
    fn ms_handle_remote_reset(&self, c: &Connection) {
        self.count(c, |d| d.remote_resets += 1);
    }
}

/// TestPeer: records what arrives, and sends what the test asks of it on
/// the connection it last accepted (queued until there is one).
#[derive(Default)]
struct PeerSide {
    received: Mutex<u32>,
    tracked: Mutex<Option<Connection>>,
    pending_sends: Mutex<u32>,
}

impl PeerSide {
    fn send_me(&self) {
        match self.tracked.lock().unwrap().as_ref() {
            Some(c) => c.send_nowait(op()),
            None => *self.pending_sends.lock().unwrap() += 1,
        }
    }
}

impl Dispatcher for PeerSide {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {
        *self.received.lock().unwrap() += 1;
    }
    fn ms_handle_accept(&self, c: &Connection) {
        *self.tracked.lock().unwrap() = Some(c.clone());
        let n = std::mem::take(&mut *self.pending_sends.lock().unwrap());
        for _ in 0..n {
            c.send_nowait(op());
        }
    }
}

fn op() -> Message {
    Message::new(42, Bytes::from_static(b"MOSDOp"))
}

/// One case's messengers and bookkeeping (crimson's FailoverSuite).
struct Suite<T: Transport> {
    test: Messenger<T>,
    peer: Messenger<T>,
    traps: Arc<Traps>,
    test_side: Arc<TestSide>,
    peer_side: Arc<PeerSide>,
    peer_addrs: EntityAddrvec,
    tracked: Option<Connection>,
    pending_send: u32,
    sent_to_peer: u32,
    peer_sent_me: u32,
}

fn options(name: &str, policy: Policy, nonce: u32) -> Options {
    let mut o = Options::new(name.parse().unwrap(), PolicySet::new(policy), Arc::new(NoneAuth));
    o.nonce = nonce;
    o.seed = nonce as u64 * 7919;
    o.timeouts.backoff_initial = Duration::from_millis(5);
    o.timeouts.backoff_max = Duration::from_millis(50);
    o
}

impl<T: Transport> Suite<T> {
    async fn new(t: T, ip: &str, traps: Traps, test_policy: Policy, peer_policy: Policy) -> Self {
        let traps = Arc::new(traps);
        let test_side = Arc::new(TestSide::default());
        let peer_side = Arc::new(PeerSide::default());
        let mut o = options("osd.2", test_policy, 2);
        o.interceptor = Some(traps.clone() as _);
        let test = Messenger::new(t.clone(), o, test_side.clone());
        test.bind(&format!("v2:{ip}:0").parse().unwrap()).await.unwrap();
        let peer = Messenger::new(t, options("osd.4", peer_policy, 4), peer_side.clone());
        let peer_addrs = peer.bind(&format!("v2:{ip}:0").parse().unwrap()).await.unwrap();
        Suite {
            test,
            peer,
            traps,
            test_side,
            peer_side,
            peer_addrs,
            tracked: None,
            pending_send: 0,
            sent_to_peer: 0,
            peer_sent_me: 0,
        }
    }

    fn send_peer(&mut self) {
        self.sent_to_peer += 1;
        match &self.tracked {
            Some(c) => c.send_nowait(op()),
            None => self.pending_send += 1,
        }
    }

    fn connect_peer(&mut self) {
        let c = self.test.connect(&self.peer_addrs, EntityType::OSD);
        for _ in 0..std::mem::take(&mut self.pending_send) {
            c.send_nowait(op());
        }
        self.tracked = Some(c);
    }

    fn peer_send_me(&mut self) {
        self.peer_sent_me += 1;
        self.peer_side.send_me();
    }

    fn send_bidirectional(&mut self) {
        self.send_peer();
        self.peer_send_me();
    }

    /// crimson's wait_results(n): `n` Test connections, each READY or
    /// closed, and everything sent arrived unless nothing is live.
    async fn wait_results(&self, n: usize) -> Vec<Connection> {
        for _ in 0..1000 {
            let mut conns = self.test_connections();
            conns.sort_by_key(|c| c.id());
            let settled = conns
                .iter()
                .all(|c| matches!(c.state(), ConnState::Ready | ConnState::Closed));
            let live = conns.iter().any(|c| c.state() == ConnState::Ready);
            let arrived = *self.peer_side.received.lock().unwrap() >= self.sent_to_peer
                && *self.test_side.received.lock().unwrap() >= self.peer_sent_me;
            if conns.len() == n && settled && (arrived || !live) {
                return conns;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let conns = self.test_connections();
        let states: Vec<_> = conns
            .iter()
            .map(|c| (c.id(), c.state(), self.connect_counts(c), self.accept_counts(c), c.last_fault()))
            .collect();
        panic!(
            "wait_results({n}) timed out: {states:?}; peer received {} of {}, test received {} of {}",
            self.peer_side.received.lock().unwrap(),
            self.sent_to_peer,
            self.test_side.received.lock().unwrap(),
            self.peer_sent_me
        );
    }

    /// Every Test connection ever made (closed ones included), by id.
    fn test_connections(&self) -> Vec<Connection> {
        let mut all: BTreeMap<u64, Connection> = BTreeMap::new();
        for c in self.test.connections() {
            all.insert(c.id(), c);
        }
        if let Some(c) = &self.tracked {
            all.insert(c.id(), c.clone());
        }
        all.into_values().collect()
    }

    /// C(a, c, r, d) of connection `conn`.
    fn connect_counts(&self, conn: &Connection) -> [u32; 4] {
        let id = conn.id();
        [
            self.traps.conn_hits(id, Breakpoint::Custom(CustomPoint::SocketConnecting)),
            self.traps.conn_hits(id, frame(Tag::CLIENT_IDENT, Direction::Write)),
            self.traps.conn_hits(id, frame(Tag::SESSION_RECONNECT, Direction::Write)),
            self.dispatched(conn).connects,
        ]
    }

    /// A(a, c, r, d) of connection `conn`.
    fn accept_counts(&self, conn: &Connection) -> [u32; 4] {
        let id = conn.id();
        [
            self.traps.conn_hits(id, Breakpoint::Custom(CustomPoint::SocketAccepted)),
            self.traps.conn_hits(id, frame(Tag::CLIENT_IDENT, Direction::Read)),
            self.traps.conn_hits(id, frame(Tag::SESSION_RECONNECT, Direction::Read)),
            self.dispatched(conn).accepts,
        ]
    }

    /// R(local, remote) of connection `conn`.
    fn reset_counts(&self, conn: &Connection) -> [u32; 2] {
        let d = self.dispatched(conn);
        [d.resets, d.remote_resets]
    }

    fn dispatched(&self, conn: &Connection) -> Dispatched {
        self.test_side
            .by_conn
            .lock()
            .unwrap()
            .get(&conn.id())
            .copied()
            .unwrap_or_default()
    }

    async fn finish(self) {
        self.test.shutdown().await;
        self.peer.shutdown().await;
    }
}

fn frame(tag: Tag, d: Direction) -> Breakpoint {
    Breakpoint::Frame(tag, d)
}

/// What a case expects of connection r0.
#[derive(Debug)]
struct Expect {
    established: bool,
    connect: [u32; 4],
    accept: [u32; 4],
    reset: [u32; 2],
}

/// Runs one case over memory and TCP: faults armed at round 1 for each of
/// `faults`, `body`, then wait_results(1) and r0 checked.
async fn connector_case(
    name: &str,
    faults: &[Breakpoint],
    policies: (Policy, Policy),
    bidirectional: bool,
    expect: &Expect,
) {
    for tcp in [false, true] {
        let traps = Traps::default();
        for bp in faults {
            traps.arm(*bp, 1, Action::Fault);
        }
        macro_rules! run {
            ($t:expr, $ip:expr) => {{
                let mut s = Suite::new($t, $ip, traps, policies.0, policies.1).await;
                if bidirectional {
                    s.send_bidirectional();
                } else {
                    s.send_peer();
                }
                s.connect_peer();
                let results = s.wait_results(1).await;
                let r0 = &results[0];
                let what = format!("{name} tcp={tcp}: {expect:?}");
                assert_eq!(r0.state() == ConnState::Ready, expect.established, "{what}");
                assert_eq!(s.connect_counts(r0), expect.connect, "C {what}");
                assert_eq!(s.accept_counts(r0), expect.accept, "A {what}");
                assert_eq!(s.reset_counts(r0), expect.reset, "R {what}");
                for bp in faults {
                    assert!(s.traps.hits(*bp) >= 1, "{bp} was missed: {what}");
                }
                s.finish().await;
            }};
        }
        if tcp {
            run!(Tcp::default(), "127.0.0.1");
        } else {
            run!(MemoryNet::new(), "10.0.0.1");
        }
    }
}

fn lossy() -> (Policy, Policy) {
    (Policy::lossy_client(), Policy::stateless_server())
}

fn lossless() -> (Policy, Policy) {
    (Policy::lossless_client(), Policy::stateful_server())
}

fn peers() -> (Policy, Policy) {
    (Policy::lossless_peer(), Policy::lossless_peer())
}

const fn established(connect: [u32; 4]) -> Expect {
    Expect {
        established: true,
        connect,
        accept: [0; 4],
        reset: [0, 0],
    }
}

/// #1 test_v2_lossy_early_connect_fault
#[tokio::test]
async fn lossy_early_connect_fault() {
    use CustomPoint::*;
    let bps = [
        Breakpoint::Custom(SocketConnecting),
        Breakpoint::Custom(BannerWrite),
        Breakpoint::Custom(BannerRead),
        Breakpoint::Custom(BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Write),
        frame(Tag::AUTH_DONE, Direction::Read),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ];
    for bp in bps {
        let name = format!("lossy_early_connect_fault -- {bp}");
        connector_case(&name, &[bp], lossy(), false, &established([2, 1, 0, 1])).await;
    }
}

/// #2 test_v2_lossy_connect_fault
#[tokio::test]
async fn lossy_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("lossy_connect_fault -- {bp}");
        connector_case(&name, &[bp], lossy(), false, &established([2, 2, 0, 1])).await;
    }
}

/// #3 test_v2_lossy_connected_fault
#[tokio::test]
async fn lossy_connected_fault() {
    let closed = Expect {
        established: false,
        connect: [1, 1, 0, 1],
        accept: [0; 4],
        reset: [1, 0],
    };
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossy_connected_fault -- {bp}");
        connector_case(&name, &[bp], lossy(), true, &closed).await;
    }
}

/// #8 test_v2_lossless_connect_fault
#[tokio::test]
async fn lossless_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("lossless_connect_fault -- {bp}");
        connector_case(&name, &[bp], lossless(), true, &established([2, 2, 0, 1])).await;
    }
}

/// #9 test_v2_lossless_connected_fault
#[tokio::test]
async fn lossless_connected_fault() {
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossless_connected_fault -- {bp}");
        connector_case(&name, &[bp], lossless(), true, &established([2, 1, 1, 2])).await;
    }
}

/// #11 test_v2_lossless_reconnect_fault
#[tokio::test]
async fn lossless_reconnect_fault() {
    let message_write = frame(Tag::MESSAGE, Direction::Write);
    for second in [
        frame(Tag::SESSION_RECONNECT, Direction::Write),
        frame(Tag::SESSION_RECONNECT_OK, Direction::Read),
    ] {
        let name = format!("lossless_reconnect_fault -- {message_write}, {second}");
        let faults = [message_write, second];
        connector_case(&name, &faults, lossless(), true, &established([3, 1, 2, 2])).await;
    }
}

/// #16 test_v2_peer_connect_fault
#[tokio::test]
async fn peer_connect_fault() {
    for bp in [
        frame(Tag::CLIENT_IDENT, Direction::Write),
        frame(Tag::SERVER_IDENT, Direction::Read),
    ] {
        let name = format!("peer_connect_fault -- {bp}");
        connector_case(&name, &[bp], peers(), false, &established([2, 2, 0, 1])).await;
    }
}

/// #19 test_v2_peer_connected_fault_reconnect
#[tokio::test]
async fn peer_connected_fault_reconnect() {
    let bp = frame(Tag::MESSAGE, Direction::Write);
    let name = format!("peer_connected_fault_reconnect -- {bp}");
    connector_case(&name, &[bp], peers(), false, &established([2, 1, 1, 2])).await;
}
