//! The machinery of the crimson matrix port: the Test and TestPeer
//! messengers, crimson's suite helpers, results and the case runner.
//! Shared by three test crates, each using part of it.
#![allow(dead_code, unused_macros)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_frames::Tag;
use msgr_messenger::{
    ConnState, Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::intercept::{Action, Breakpoint, CustomPoint, Direction, Traps};
use msgr_protocol::PolicySet;
use msgr_transport::memory::MemoryNet;
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;

use crate::poll::until;

/// Dispatched events per connection id (crimson's cnt_*_dispatched).
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    connects: u32,
    accepts: u32,
    resets: u32,
    remote_resets: u32,
}

/// The connection a side talks on (the one it connected or last
/// accepted), and sends asked for before there was one, sent when it comes.
#[derive(Default)]
pub struct Tracked {
    conn: Mutex<Option<Connection>>,
    pending_sends: Mutex<u32>,
}

impl Tracked {
    fn track(&self, c: &Connection) {
        *self.conn.lock().unwrap() = Some(c.clone());
        let n = std::mem::take(&mut *self.pending_sends.lock().unwrap());
        for _ in 0..n {
            c.send_nowait(op());
        }
    }

    fn send(&self) {
        match self.conn.lock().unwrap().as_ref() {
            Some(c) => c.send_nowait(op()),
            None => *self.pending_sends.lock().unwrap() += 1,
        }
    }

    fn get(&self) -> Option<Connection> {
        self.conn.lock().unwrap().clone()
    }
}

/// The Test side's dispatcher (crimson's FailoverSuite): counts what is
/// dispatched per connection, and tracks the connection it talks on.
#[derive(Default)]
pub struct TestSide {
    by_conn: Mutex<BTreeMap<u64, Dispatched>>,
    received: Mutex<u32>,
    tracked: Tracked,
}

impl TestSide {
    fn count(&self, c: &Connection, f: impl FnOnce(&mut Dispatched)) {
        f(self.by_conn.lock().unwrap().entry(c.id()).or_default());
    }
}

/// Accepted connections run on another shard than the one that accepted
/// them (with one shard, where they are).
fn elsewhere(p: &msgr_messenger::Placement<'_>) -> Option<usize> {
    p.accepted.then(|| p.shard + 1)
}

impl Dispatcher for TestSide {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {
        *self.received.lock().unwrap() += 1;
    }
    fn ms_choose_shard(&self, p: &msgr_messenger::Placement<'_>) -> Option<usize> {
        elsewhere(p)
    }
    fn ms_handle_connect(&self, c: &Connection, _prev_shard: usize) {
        self.count(c, |d| d.connects += 1);
    }
    fn ms_handle_accept(&self, c: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.count(c, |d| d.accepts += 1);
        self.tracked.track(c);
    }
    fn ms_handle_reset(&self, c: &Connection) {
        self.count(c, |d| d.resets += 1);
    }
    fn ms_handle_remote_reset(&self, c: &Connection) {
        self.count(c, |d| d.remote_resets += 1);
    }
}

/// TestPeer: records what arrives, and tracks the connection it talks on.
#[derive(Default)]
pub struct PeerSide {
    received: Mutex<u32>,
    tracked: Tracked,
}

impl Dispatcher for PeerSide {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {
        *self.received.lock().unwrap() += 1;
    }
    fn ms_choose_shard(&self, p: &msgr_messenger::Placement<'_>) -> Option<usize> {
        elsewhere(p)
    }
    fn ms_handle_accept(&self, c: &Connection, _prev_shard: usize, _is_replace: bool) {
        self.tracked.track(c);
    }
}

pub fn op() -> Message {
    Message::new(42, Bytes::from_static(b"MOSDOp"))
}

thread_local! {
    /// The Suites made on this thread bind msgr1 (`v1:`) addresses.
    static MSGR1: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The Suites this thread makes from now on speak msgr1.
pub fn use_msgr1() {
    MSGR1.set(true);
}

/// One case's messengers and bookkeeping (crimson's FailoverSuite).
pub struct Suite<T: Transport> {
    pub test: Messenger<T>,
    /// Test and TestPeer speak msgr1: counters count CONNECTs.
    msgr1: bool,
    peer: Messenger<T>,
    pub traps: Arc<Traps>,
    test_side: Arc<TestSide>,
    peer_side: Arc<PeerSide>,
    peer_addrs: EntityAddrvec,
    test_addrs: EntityAddrvec,
    sent_to_peer: u32,
    peer_sent_me: u32,
}

pub fn options(name: &str, policy: Policy, nonce: u32) -> Options {
    let mut o = Options::new(
        name.parse().unwrap(),
        PolicySet::new(policy),
        Arc::new(NoneProvider),
    );
    o.nonce = nonce;
    o.seed = nonce as u64 * 7919;
    o.timeouts.backoff_initial = Duration::from_millis(5);
    o.timeouts.backoff_max = Duration::from_millis(50);
    // The matrix runs on as many shards as cores, and in CI on 1 and 4 too.
    if let Some(n) = std::env::var("MSGR_TEST_SHARDS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        o.shards = n;
    }
    o
}

impl<T: Transport> Suite<T> {
    pub async fn new(
        t: T,
        ip: &str,
        traps: Traps,
        test_policy: Policy,
        peer_policy: Policy,
    ) -> Self {
        Self::new_at(t, ip, (0, 0), traps, test_policy, peer_policy).await
    }

    /// Test and TestPeer bound at `ports` (0: any).
    pub async fn new_at(
        t: T,
        ip: &str,
        ports: (u16, u16),
        traps: Traps,
        test_policy: Policy,
        peer_policy: Policy,
    ) -> Self {
        let traps = Arc::new(traps);
        let msgr1 = MSGR1.get();
        let kind = if msgr1 { "v1" } else { "v2" };
        let test_side = Arc::new(TestSide::default());
        let peer_side = Arc::new(PeerSide::default());
        let mut o = options("osd.2", test_policy, 2);
        o.interceptor = Some(traps.clone() as _);
        let test = Messenger::new(t.clone(), o, test_side.clone());
        let test_addrs = test
            .bind(&format!("{kind}:{ip}:{}", ports.0).parse().unwrap())
            .await
            .unwrap();
        // Both nonces are 2 (crimson's TEST_NONCE and TEST_PEER_NONCE), so
        // the addresses' ports decide who wins a race.
        let mut peer_options = options("osd.4", peer_policy, 4);
        peer_options.nonce = 2;
        let peer = Messenger::new(t, peer_options, peer_side.clone());
        let peer_addrs = peer
            .bind(&format!("{kind}:{ip}:{}", ports.1).parse().unwrap())
            .await
            .unwrap();
        Suite {
            test,
            msgr1,
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

    pub fn send_peer(&mut self) {
        self.sent_to_peer += 1;
        self.test_side.tracked.send();
    }

    pub fn connect_peer(&mut self) {
        let c = self.test.connect(&self.peer_addrs, EntityType::OSD);
        self.test_side.tracked.track(&c);
    }

    pub fn peer_connect_me(&mut self) {
        let c = self.peer.connect(&self.test_addrs, EntityType::OSD);
        self.peer_side.tracked.track(&c);
    }

    pub fn peer_send_me(&mut self) {
        self.peer_sent_me += 1;
        self.peer_side.tracked.send();
    }

    pub fn keepalive_peer(&self) {
        if let Some(c) = self.test_side.tracked.get() {
            c.send_keepalive();
        }
    }

    pub fn peer_keepalive_me(&self) {
        if let Some(c) = self.peer_side.tracked.get() {
            c.send_keepalive();
        }
    }

    /// crimson's wait_established: what was sent arrived (or nothing is
    /// live).
    pub async fn wait_established(&self) {
        if !until(|| self.arrived()).await {
            panic!("wait_established timed out: {:?}", self.results());
        }
    }

    /// Everything sent either way arrived.
    fn arrived(&self) -> bool {
        *self.peer_side.received.lock().unwrap() >= self.sent_to_peer
            && *self.test_side.received.lock().unwrap() >= self.peer_sent_me
    }

    pub fn send_bidirectional(&mut self) {
        self.send_peer();
        self.peer_send_me();
    }

    /// crimson's wait_results(n): `n` Test connections (every one that
    /// ever started, oldest first), each READY or closed, and everything
    /// sent arrived unless nothing is live.
    pub async fn wait_results(&self, n: usize) -> Vec<Outcome> {
        let done = |results: &[Outcome]| {
            let settled = results.iter().all(|r| r.state != St::Other);
            let live = results.iter().any(|r| r.state == St::Established);
            results.len() == n && settled && (self.arrived() || !live)
        };
        if until(|| done(&self.results())).await {
            return self.results();
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
    pub fn results(&self) -> Vec<Outcome> {
        let live: BTreeMap<u64, Connection> = self
            .test
            .connections()
            .into_iter()
            .map(|c| (c.id(), c))
            .collect();
        self.traps
            .connections()
            .into_iter()
            .map(|id| {
                let state = match live.get(&id).map(|c| c.state()) {
                    Some(ConnState::Ready) => St::Established,
                    Some(ConnState::Closed) | None if self.traps.was_replaced(id) => St::Replaced,
                    // Closed once its driver let it go (after dispatching
                    // the reset its close brought): a connection whose
                    // closed state is published but whose events are
                    // still being dispatched on its shard is not settled.
                    None => St::Closed,
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

    /// C(a, c, r, d) of connection `id`: connect attempts, CLIENT_IDENT and
    /// SESSION_RECONNECT writes (msgr1: CONNECT writes, and 0), connects
    /// dispatched.
    pub fn connect_counts(&self, id: u64) -> [u32; 4] {
        let start = CustomPoint::SocketConnecting;
        self.side_counts(id, start, Direction::Write, self.dispatched(id).connects)
    }

    /// A(a, c, r, d) of connection `id`: the same, accepting and reading.
    pub fn accept_counts(&self, id: u64) -> [u32; 4] {
        let start = CustomPoint::SocketAccepted;
        self.side_counts(id, start, Direction::Read, self.dispatched(id).accepts)
    }

    fn side_counts(
        &self,
        id: u64,
        start: CustomPoint,
        idents: Direction,
        dispatched: u32,
    ) -> [u32; 4] {
        if self.msgr1 {
            let connect = Breakpoint::Msgr1(msgr_protocol::intercept::Point1::Connect, idents);
            return [
                self.traps.conn_hits(id, Breakpoint::Custom(start)),
                self.traps.conn_hits(id, connect),
                0,
                dispatched,
            ];
        }
        [
            self.traps.conn_hits(id, Breakpoint::Custom(start)),
            self.traps.conn_hits(id, frame(Tag::CLIENT_IDENT, idents)),
            self.traps
                .conn_hits(id, frame(Tag::SESSION_RECONNECT, idents)),
            dispatched,
        ]
    }

    /// R(local, remote) of connection `id`.
    pub fn reset_counts(&self, id: u64) -> [u32; 2] {
        let d = self.dispatched(id);
        [d.resets, d.remote_resets]
    }

    pub fn dispatched(&self, id: u64) -> Dispatched {
        self.test_side
            .by_conn
            .lock()
            .unwrap()
            .get(&id)
            .copied()
            .unwrap_or_default()
    }

    /// crimson's suite.markdown(): let acks settle, mark the tracked
    /// connection down (no reset event), let that settle.
    pub async fn markdown(&self) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(c) = self.test_side.tracked.get() {
            c.mark_down();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// crimson's test.markdown_peer(): the same on the peer's side.
    pub async fn markdown_peer(&self) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(c) = self.peer_side.tracked.get() {
            c.mark_down();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// A send that may be lost (not waited for).
    pub fn try_send_peer(&self) {
        self.test_side.tracked.send();
    }

    /// A peer send that may be lost.
    pub fn try_peer_send_me(&self) {
        self.peer_side.tracked.send();
    }

    /// Waits (bounded) until Test connection `i` (oldest first) has
    /// dispatched `n` messages: a send that is not counted against the
    /// tracked connection (it goes to another) is waited for this way.
    pub async fn wait_dispatched(&self, i: usize, n: u32) {
        until(|| self.results().get(i).is_some_and(|r| r.accept[3] >= n)).await;
    }

    /// Whether the tracked connection stands by.
    pub fn is_standby(&self) -> bool {
        self.test_side
            .tracked
            .get()
            .is_some_and(|c| c.state() == ConnState::Standby)
    }

    /// Whether, on the Test side, an accepted connection wins a race
    /// against our own (crimson's peer_wins(): our address is the higher).
    pub fn peer_wins(&self) -> bool {
        let first = |a: &EntityAddrvec| a.0.first().copied().unwrap_or_default();
        let (test, peer) = (first(&self.test_addrs), first(&self.peer_addrs));
        msgr_protocol::decide::peer_wins(&peer, &test, false)
    }

    /// crimson's suite.wait_blocked(): a BLOCK or STALL was handed out.
    pub async fn wait_blocked(&self) {
        if !until(|| self.traps.blocked().is_some()).await {
            panic!("wait_blocked timed out: {:?}", self.results());
        }
    }

    /// crimson's suite.unblock(): releases the blocked connection.
    pub fn unblock(&self) {
        let id = self.traps.blocked().expect("something was blocked");
        if let Some(c) = self.test.connections().into_iter().find(|c| c.id() == id) {
            c.unblock();
        }
    }

    /// crimson's suite.wait_replaced(n): `n` connections were replaced.
    pub async fn wait_replaced(&self, n: usize) {
        let replaced = || {
            self.results()
                .iter()
                .filter(|r| r.state == St::Replaced)
                .count()
        };
        if !until(|| replaced() >= n).await {
            panic!("wait_replaced({n}) timed out: {:?}", self.results());
        }
    }

    pub async fn finish(self) {
        self.test.shutdown().await;
        self.peer.shutdown().await;
    }
}

pub fn frame(tag: Tag, d: Direction) -> Breakpoint {
    Breakpoint::Frame(tag, d)
}

/// A Test connection's end state (crimson's conn_state_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum St {
    Established,
    Closed,
    Replaced,
    /// Neither READY nor closed yet.
    Other,
}

/// What a Test connection ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub id: u64,
    pub state: St,
    pub connect: [u32; 4],
    pub accept: [u32; 4],
    pub reset: [u32; 2],
}

/// What a case expects of one connection; `accept_short` checks only
/// A's attempts and dispatches (crimson's two-argument assert_accept).
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    pub state: St,
    pub connect: [u32; 4],
    pub accept: [u32; 4],
    pub reset: [u32; 2],
    pub accept_short: bool,
    /// Checks only C's attempts and dispatches (two-argument assert_connect).
    pub connect_short: bool,
}

impl Expect {
    pub fn check(&self, got: &Outcome, what: &str) {
        assert_eq!(got.state, self.state, "state {what}: {got:?}");
        if self.connect_short {
            let short = [got.connect[0], got.connect[3]];
            assert_eq!(
                short,
                [self.connect[0], self.connect[3]],
                "C {what}: {got:?}"
            );
        } else {
            assert_eq!(got.connect, self.connect, "C {what}: {got:?}");
        }
        if self.accept_short {
            let short = [got.accept[0], got.accept[3]];
            assert_eq!(short, [self.accept[0], self.accept[3]], "A {what}: {got:?}");
        } else {
            assert_eq!(got.accept, self.accept, "A {what}: {got:?}");
        }
        assert_eq!(got.reset, self.reset, "R {what}: {got:?}");
    }
}

pub const fn ex(state: St, connect: [u32; 4], accept: [u32; 4], reset: [u32; 2]) -> Expect {
    Expect {
        state,
        connect,
        accept,
        reset,
        accept_short: false,
        connect_short: false,
    }
}

/// A case's body (the scenario's operations before wait_results).
#[derive(Debug, Clone, Copy)]
pub enum Body {
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
    /// #10's: messages and keepalives both ways, settling between steps.
    Keepalives,
}

/// Runs one case over memory, TCP and io_uring: faults armed at round 1 for each of
/// `faults`, the body, wait_results(expects.len()), and every result checked.
pub async fn case(
    name: &str,
    faults: &[Breakpoint],
    policies: (Policy, Policy),
    body: Body,
    expects: &[Expect],
) {
    for net in ["memory", "tcp", "uring"] {
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
                    Body::Keepalives => {
                        s.connect_peer();
                        s.wait_established().await;
                        s.send_peer();
                        s.keepalive_peer();
                        s.wait_established().await;
                        s.peer_send_me();
                        s.peer_keepalive_me();
                        s.wait_established().await;
                        s.send_peer();
                        s.wait_established().await;
                        s.peer_send_me();
                        s.wait_established().await;
                    }
                }
                let results = s.wait_results(expects.len()).await;
                for (i, (e, got)) in expects.iter().zip(&results).enumerate() {
                    e.check(got, &format!("{name} over {net} r{i}"));
                }
                for bp in faults {
                    assert!(s.traps.hits(*bp) >= 1, "{bp} was missed: {name} over {net}");
                }
                s.finish().await;
            }};
        }
        match net {
            "memory" => run!(MemoryNet::new(), "10.0.0.1"),
            "tcp" => run!(Tcp::default(), "127.0.0.1"),
            _ => run!(msgr_uring::Uring::default(), "127.0.0.1"),
        }
    }
}

// ---------------------------------------------------------------- shared by the scenario files

pub fn lossy() -> (Policy, Policy) {
    (Policy::lossy_client(), Policy::stateless_server())
}

pub fn lossless() -> (Policy, Policy) {
    (Policy::lossless_client(), Policy::stateful_server())
}

pub fn peers() -> (Policy, Policy) {
    (Policy::lossless_peer(), Policy::lossless_peer())
}

pub const fn established(connect: [u32; 4]) -> Expect {
    ex(St::Established, connect, [0; 4], [0, 0])
}

pub fn acceptor(policies: (Policy, Policy)) -> (Policy, Policy) {
    (policies.1, policies.0)
}

pub const NONE: [u32; 4] = [0; 4];

pub const C1: [u32; 4] = [1, 1, 0, 1];
pub const A1: [u32; 4] = [1, 1, 0, 1];

/// Checks stage `stage` of scenario `name`: every result against `expects`.
pub fn stage(name: &str, stage: u32, results: &[Outcome], expects: &[Expect]) {
    assert_eq!(
        results.len(),
        expects.len(),
        "{name} stage {stage}: {results:?}"
    );
    for (i, (e, got)) in expects.iter().zip(results).enumerate() {
        e.check(got, &format!("{name} stage {stage} r{i}"));
    }
}

/// Runs a lifecycle scenario over memory, TCP and io_uring.
#[allow(unused_macros)]
macro_rules! lifecycle {
    ($test:ident, $name:literal, $policies:expr, |$s:ident| $body:block) => {
        #[tokio::test]
        async fn $test() {
            async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
                let policies = $policies;
                let mut $s = Suite::new(t, ip, Traps::default(), policies.0, policies.1).await;
                $body
                $s.finish().await;
            }
            scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
            scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
            scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
        }
    };
}

/// Runs a scenario with breakpoints armed by (breakpoint, round, action)
/// over memory, TCP and io_uring.
#[allow(unused_macros)]
macro_rules! armed {
    ($test:ident, $policies:expr, [$(($bp:expr, $round:expr, $action:expr)),*], |$s:ident| $body:block) => {
        #[tokio::test]
        async fn $test() {
            async fn scenario<T: msgr_transport::Transport>(t: T, ip: &str) {
                let policies = $policies;
                let traps = Traps::default();
                $(traps.arm($bp, $round, $action);)*
                let mut $s = Suite::new(t, ip, traps, policies.0, policies.1).await;
                $body
                $s.finish().await;
            }
            scenario(msgr_transport::memory::MemoryNet::new(), "10.0.0.1").await;
            scenario(msgr_transport::tcp::Tcp::default(), "127.0.0.1").await;
            scenario(msgr_uring::Uring::default(), "127.0.0.1").await;
        }
    };
}

/// The connector's breakpoints from the banner to AUTH_SIGNATURE, in
/// handshake order (crimson's early connect list, less SOCKET_CONNECTING).
pub fn connector_handshake() -> Vec<Breakpoint> {
    vec![
        Breakpoint::Custom(CustomPoint::BannerWrite),
        Breakpoint::Custom(CustomPoint::BannerRead),
        Breakpoint::Custom(CustomPoint::BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Write),
        frame(Tag::AUTH_DONE, Direction::Read),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ]
}

/// The acceptor's breakpoints from the banner to AUTH_SIGNATURE.
pub fn acceptor_handshake() -> Vec<Breakpoint> {
    vec![
        Breakpoint::Custom(CustomPoint::BannerWrite),
        Breakpoint::Custom(CustomPoint::BannerRead),
        Breakpoint::Custom(CustomPoint::BannerPayloadRead),
        frame(Tag::HELLO, Direction::Write),
        frame(Tag::HELLO, Direction::Read),
        frame(Tag::AUTH_REQUEST, Direction::Read),
        frame(Tag::AUTH_DONE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Write),
        frame(Tag::AUTH_SIGNATURE, Direction::Read),
    ]
}
