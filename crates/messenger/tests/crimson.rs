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

/// The Test side's dispatcher; like crimson's FailoverSuite it tracks the
/// connection it connected or last accepted, and sends queued before there
/// was one go out on it.
#[derive(Default)]
struct TestSide {
    by_conn: Mutex<BTreeMap<u64, Dispatched>>,
    received: Mutex<u32>,
    tracked: Mutex<Option<Connection>>,
    pending_sends: Mutex<u32>,
}

impl TestSide {
    fn track(&self, c: &Connection) {
        *self.tracked.lock().unwrap() = Some(c.clone());
        let n = std::mem::take(&mut *self.pending_sends.lock().unwrap());
        for _ in 0..n {
            c.send_nowait(op());
        }
    }

    fn send(&self) {
        match self.tracked.lock().unwrap().as_ref() {
            Some(c) => c.send_nowait(op()),
            None => *self.pending_sends.lock().unwrap() += 1,
        }
    }

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
        self.track(c);
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
    fn track(&self, c: &Connection) {
        *self.tracked.lock().unwrap() = Some(c.clone());
        let n = std::mem::take(&mut *self.pending_sends.lock().unwrap());
        for _ in 0..n {
            c.send_nowait(op());
        }
    }

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
        self.track(c);
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
    test_addrs: EntityAddrvec,
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
        let test_addrs = test.bind(&format!("v2:{ip}:0").parse().unwrap()).await.unwrap();
        let peer = Messenger::new(t, options("osd.4", peer_policy, 4), peer_side.clone());
        let peer_addrs = peer.bind(&format!("v2:{ip}:0").parse().unwrap()).await.unwrap();
        Suite {
            test,
            peer,
            traps,
            test_side,
            peer_side,
            peer_addrs,
            test_addrs,
            sent_to_peer: 0,
            peer_sent_me: 0,
        }
    }

    fn send_peer(&mut self) {
        self.sent_to_peer += 1;
        self.test_side.send();
    }

    fn connect_peer(&mut self) {
        let c = self.test.connect(&self.peer_addrs, EntityType::OSD);
        self.test_side.track(&c);
    }

    fn peer_connect_me(&mut self) {
        let c = self.peer.connect(&self.test_addrs, EntityType::OSD);
        self.peer_side.track(&c);
    }

    fn peer_send_me(&mut self) {
        self.peer_sent_me += 1;
        self.peer_side.send_me();
    }

    fn send_bidirectional(&mut self) {
        self.send_peer();
        self.peer_send_me();
    }

    /// crimson's wait_results(n): `n` Test connections (every one that
    /// ever started, oldest first), each READY or closed, and everything
    /// sent arrived unless nothing is live.
    async fn wait_results(&self, n: usize) -> Vec<Outcome> {
        for _ in 0..1000 {
            let results = self.results();
            let settled = results.iter().all(|r| r.state != St::Other);
            let live = results.iter().any(|r| r.state == St::Established);
            let arrived = *self.peer_side.received.lock().unwrap() >= self.sent_to_peer
                && *self.test_side.received.lock().unwrap() >= self.peer_sent_me;
            if results.len() == n && settled && (arrived || !live) {
                return results;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "wait_results({n}) timed out: {:?}; peer received {} of {}, test received {} of {}",
            self.results(),
            self.peer_side.received.lock().unwrap(),
            self.sent_to_peer,
            self.test_side.received.lock().unwrap(),
            self.peer_sent_me
        );
    }

    /// Every Test connection's outcome so far, oldest first.
    fn results(&self) -> Vec<Outcome> {
        let live: BTreeMap<u64, Connection> =
            self.test.connections().into_iter().map(|c| (c.id(), c)).collect();
        self.traps
            .connections()
            .into_iter()
            .map(|id| {
                let state = match live.get(&id).map(|c| c.state()) {
                    Some(ConnState::Ready) => St::Established,
                    Some(ConnState::Closed) | None if self.traps.was_replaced(id) => St::Replaced,
                    Some(ConnState::Closed) | None => St::Closed,
                    Some(_) => St::Other,
                };
                Outcome {
                    id,
                    state,
                    connect: self.connect_counts(id),
                    accept: self.accept_counts(id),
                    reset: self.reset_counts(id),
                }
            })
            .collect()
    }

    /// C(a, c, r, d) of connection `id`.
    fn connect_counts(&self, id: u64) -> [u32; 4] {
        [
            self.traps.conn_hits(id, Breakpoint::Custom(CustomPoint::SocketConnecting)),
            self.traps.conn_hits(id, frame(Tag::CLIENT_IDENT, Direction::Write)),
            self.traps.conn_hits(id, frame(Tag::SESSION_RECONNECT, Direction::Write)),
            self.dispatched(id).connects,
        ]
    }

    /// A(a, c, r, d) of connection `id`.
    fn accept_counts(&self, id: u64) -> [u32; 4] {
        [
            self.traps.conn_hits(id, Breakpoint::Custom(CustomPoint::SocketAccepted)),
            self.traps.conn_hits(id, frame(Tag::CLIENT_IDENT, Direction::Read)),
            self.traps.conn_hits(id, frame(Tag::SESSION_RECONNECT, Direction::Read)),
            self.dispatched(id).accepts,
        ]
    }

    /// R(local, remote) of connection `id`.
    fn reset_counts(&self, id: u64) -> [u32; 2] {
        let d = self.dispatched(id);
        [d.resets, d.remote_resets]
    }

    fn dispatched(&self, id: u64) -> Dispatched {
        self.test_side
            .by_conn
            .lock()
            .unwrap()
            .get(&id)
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

/// A Test connection's end state (crimson's conn_state_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Established,
    Closed,
    Replaced,
    /// Neither READY nor closed yet.
    Other,
}

/// What a Test connection ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    id: u64,
    state: St,
    connect: [u32; 4],
    accept: [u32; 4],
    reset: [u32; 2],
}

/// What a case expects of one connection; `accept_short` checks only
/// A's attempts and dispatches (crimson's two-argument assert_accept).
#[derive(Debug, Clone, Copy)]
struct Expect {
    state: St,
    connect: [u32; 4],
    accept: [u32; 4],
    reset: [u32; 2],
    accept_short: bool,
}

impl Expect {
    fn check(&self, got: &Outcome, what: &str) {
        assert_eq!(got.state, self.state, "state {what}: {got:?}");
        assert_eq!(got.connect, self.connect, "C {what}: {got:?}");
        if self.accept_short {
            let short = [got.accept[0], got.accept[3]];
            assert_eq!(short, [self.accept[0], self.accept[3]], "A {what}: {got:?}");
        } else {
            assert_eq!(got.accept, self.accept, "A {what}: {got:?}");
        }
        assert_eq!(got.reset, self.reset, "R {what}: {got:?}");
    }
}

const fn ex(state: St, connect: [u32; 4], accept: [u32; 4], reset: [u32; 2]) -> Expect {
    Expect {
        state,
        connect,
        accept,
        reset,
        accept_short: false,
    }
}

/// A case's body (the scenario's operations before wait_results).
#[derive(Debug, Clone, Copy)]
enum Body {
    /// suite.send_peer(); suite.connect_peer()
    SendConnect,
    /// test.send_bidirectional(); suite.connect_peer()
    BidirectionalConnect,
    /// test.peer_send_me(); test.peer_connect_me()
    PeerSendPeerConnect,
    /// test.send_bidirectional(); test.peer_connect_me()
    BidirectionalPeerConnect,
    /// test.peer_send_me(); suite.connect_peer()
    PeerSendConnect,
}

/// Runs one case over memory and TCP: faults armed at round 1 for each of
/// `faults`, the body, wait_results(expects.len()), and every result checked.
async fn case(
    name: &str,
    faults: &[Breakpoint],
    policies: (Policy, Policy),
    body: Body,
    expects: &[Expect],
) {
    for tcp in [false, true] {
        let traps = Traps::default();
        for bp in faults {
            traps.arm(*bp, 1, Action::Fault);
        }
        macro_rules! run {
            ($t:expr, $ip:expr) => {{
                let mut s = Suite::new($t, $ip, traps, policies.0, policies.1).await;
                match body {
                    Body::SendConnect => {
                        s.send_peer();
                        s.connect_peer();
                    }
                    Body::BidirectionalConnect => {
                        s.send_bidirectional();
                        s.connect_peer();
                    }
                    Body::PeerSendPeerConnect => {
                        s.peer_send_me();
                        s.peer_connect_me();
                    }
                    Body::BidirectionalPeerConnect => {
                        s.send_bidirectional();
                        s.peer_connect_me();
                    }
                    Body::PeerSendConnect => {
                        s.peer_send_me();
                        s.connect_peer();
                    }
                }
                let results = s.wait_results(expects.len()).await;
                for (i, (e, got)) in expects.iter().zip(&results).enumerate() {
                    e.check(got, &format!("{name} tcp={tcp} r{i}"));
                }
                for bp in faults {
                    assert!(s.traps.hits(*bp) >= 1, "{bp} was missed: {name} tcp={tcp}");
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
    ex(St::Established, connect, [0; 4], [0, 0])
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
        case(&name, &[bp], lossy(), Body::SendConnect, &[established([2, 1, 0, 1])]).await;
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
        case(&name, &[bp], lossy(), Body::SendConnect, &[established([2, 2, 0, 1])]).await;
    }
}

/// #3 test_v2_lossy_connected_fault
#[tokio::test]
async fn lossy_connected_fault() {
    let closed = ex(St::Closed, [1, 1, 0, 1], [0; 4], [1, 0]);
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossy_connected_fault -- {bp}");
        case(&name, &[bp], lossy(), Body::BidirectionalConnect, &[closed]).await;
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
        case(&name, &[bp], lossless(), Body::BidirectionalConnect, &[established([2, 2, 0, 1])]).await;
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
        case(&name, &[bp], lossless(), Body::BidirectionalConnect, &[established([2, 1, 1, 2])]).await;
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
        let expect = [established([3, 1, 2, 2])];
        case(&name, &faults, lossless(), Body::BidirectionalConnect, &expect).await;
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
        case(&name, &[bp], peers(), Body::SendConnect, &[established([2, 2, 0, 1])]).await;
    }
}

/// #19 test_v2_peer_connected_fault_reconnect
#[tokio::test]
async fn peer_connected_fault_reconnect() {
    let bp = frame(Tag::MESSAGE, Direction::Write);
    let name = format!("peer_connected_fault_reconnect -- {bp}");
    case(&name, &[bp], peers(), Body::SendConnect, &[established([2, 1, 1, 2])]).await;
}

fn acceptor(policies: (Policy, Policy)) -> (Policy, Policy) {
    (policies.1, policies.0)
}

const NONE: [u32; 4] = [0; 4];

/// #4 test_v2_lossy_early_accept_fault
#[tokio::test]
async fn lossy_early_accept_fault() {
    use CustomPoint::*;
    let bps = [
        Breakpoint::Custom(BannerWrite),
        Breakpoint::Custom(BannerRead),
        Breakpoint::Custom(BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Read),
        frame(Tag::AUTH_DONE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ];
    let expect = [
        ex(St::Closed, NONE, [1, 0, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    for bp in bps {
        let name = format!("lossy_early_accept_fault -- {bp}");
        case(&name, &[bp], acceptor(lossy()), Body::PeerSendPeerConnect, &expect).await;
    }
}

/// #5 test_v2_lossy_accept_fault
#[tokio::test]
async fn lossy_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossy_accept_fault -- {bp}");
    case(&name, &[bp], acceptor(lossy()), Body::PeerSendPeerConnect, &expect).await;
}

/// #6 test_v2_lossy_establishing_fault
#[tokio::test]
async fn lossy_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 1], [1, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossy_establishing_fault -- {bp}");
    case(&name, &[bp], acceptor(lossy()), Body::PeerSendPeerConnect, &expect).await;
}

/// #7 test_v2_lossy_accepted_fault
#[tokio::test]
async fn lossy_accepted_fault() {
    let expect = [ex(St::Closed, NONE, [1, 1, 0, 1], [1, 0])];
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossy_accepted_fault -- {bp}");
        case(&name, &[bp], acceptor(lossy()), Body::BidirectionalPeerConnect, &expect).await;
    }
}

/// #12 test_v2_lossless_accept_fault
#[tokio::test]
async fn lossless_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("lossless_accept_fault -- {bp}");
    case(&name, &[bp], acceptor(lossless()), Body::BidirectionalPeerConnect, &expect).await;
}

/// #13 test_v2_lossless_establishing_fault
#[tokio::test]
async fn lossless_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
        ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]),
    ];
    let name = format!("lossless_establishing_fault -- {bp}");
    case(&name, &[bp], acceptor(lossless()), Body::BidirectionalPeerConnect, &expect).await;
}

/// #14 test_v2_lossless_accepted_fault
#[tokio::test]
async fn lossless_accepted_fault() {
    let mut replaced = ex(St::Replaced, NONE, [1, 0, 0, 0], [0, 0]);
    replaced.accept_short = true;
    let expect = [ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]), replaced];
    for bp in [
        frame(Tag::MESSAGE, Direction::Write),
        frame(Tag::MESSAGE, Direction::Read),
    ] {
        let name = format!("lossless_accepted_fault -- {bp}");
        case(&name, &[bp], acceptor(lossless()), Body::BidirectionalPeerConnect, &expect).await;
    }
}

/// #15 test_v2_lossless_reaccept_fault
#[tokio::test]
async fn lossless_reaccept_fault() {
    let message_read = frame(Tag::MESSAGE, Direction::Read);
    let cases = [
        (
            frame(Tag::SESSION_RECONNECT, Direction::Read),
            [
                ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
                ex(St::Closed, NONE, [1, 0, 1, 0], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
            ],
        ),
        (
            frame(Tag::SESSION_RECONNECT_OK, Direction::Write),
            [
                ex(St::Established, NONE, [1, 1, 0, 3], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
                ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
            ],
        ),
    ];
    for (second, expect) in cases {
        let name = format!("lossless_reaccept_fault -- {message_read}, {second}");
        let faults = [message_read, second];
        case(&name, &faults, acceptor(lossless()), Body::BidirectionalPeerConnect, &expect).await;
    }
}

/// #17 test_v2_peer_accept_fault
#[tokio::test]
async fn peer_accept_fault() {
    let bp = frame(Tag::CLIENT_IDENT, Direction::Read);
    let expect = [
        ex(St::Closed, NONE, [1, 1, 0, 0], [0, 0]),
        ex(St::Established, NONE, [1, 1, 0, 1], [0, 0]),
    ];
    let name = format!("peer_accept_fault -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendPeerConnect, &expect).await;
}

/// #18 test_v2_peer_establishing_fault
#[tokio::test]
async fn peer_establishing_fault() {
    let bp = frame(Tag::SERVER_IDENT, Direction::Write);
    let expect = [
        ex(St::Established, NONE, [1, 1, 0, 2], [0, 0]),
        ex(St::Replaced, NONE, [1, 1, 0, 0], [0, 0]),
    ];
    let name = format!("peer_establishing_fault -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendPeerConnect, &expect).await;
}

/// #20 test_v2_peer_connected_fault_reaccept
#[tokio::test]
async fn peer_connected_fault_reaccept() {
    let bp = frame(Tag::MESSAGE, Direction::Read);
    let expect = [
        ex(St::Established, [1, 1, 0, 1], [0, 0, 0, 1], [0, 0]),
        ex(St::Replaced, NONE, [1, 0, 1, 0], [0, 0]),
    ];
    let name = format!("peer_connected_fault_reaccept -- {bp}");
    case(&name, &[bp], peers(), Body::PeerSendConnect, &expect).await;
}
