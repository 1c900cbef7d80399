//! Sessions belong to who authenticated: an attacker holding a valid cephx
//! ticket of its own claims a victim's address, nonce and a huge
//! global_seq, over TCP, against each policy that keeps sessions by peer
//! (lossless peers: reuse; a stateful server: reconnect; a registered lossy
//! server: replace). It is refused; the victim's session and messages stay
//! with the victim. And a ticket buys only its own entity: a client's
//! ticket cannot say HELLO as an OSD, nor an OSD's ticket name another gid.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::cephx::{
    CephxClient, CephxProvider, CephxServer, CryptoKey, KeyKind, KeyServer, Keyring, KeyringEntry,
};
use msgr_auth::{AuthProvider, ConMode, SeededRandom};
use msgr_encoding::{AuthName, EntityAddrvec, EntityType, UTime};
use msgr_frames::control::*;
use msgr_frames::ControlFrame;
use msgr_messenger::{
    Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::{Claim, PolicySet, ProtocolError};
use msgr_transport::tcp::Tcp;

#[path = "support/poll.rs"]
mod poll;
#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::{Frame, RawPeer};

/// The keys a monitor would hold: two clients, two OSDs, the OSD service
/// secret.
struct World {
    keys: Arc<KeyServer>,
    rng: Arc<SeededRandom>,
}

fn world() -> World {
    let rng = Arc::new(SeededRandom::new(11));
    let mut ring = Keyring::default();
    for n in ["client.admin", "client.mallory", "osd.1", "osd.2", "osd."] {
        ring.insert(
            n.parse().unwrap(),
            KeyringEntry {
                key: CryptoKey::random(KeyKind::Aes128, UTime::default(), &*rng),
                caps: Default::default(),
            },
        );
    }
    World {
        keys: Arc::new(KeyServer::new(ring)),
        rng,
    }
}

impl World {
    /// `principal` with an OSD ticket for `global_id`, as its monitor
    /// session would have left it.
    fn client(&self, principal: &str, global_id: u64) -> Arc<CephxClient> {
        let name: AuthName = principal.parse().unwrap();
        let clock = msgr_auth::system_clock();
        let mut c = CephxClient::new(
            name.clone(),
            self.keys.entity_key(&name).unwrap().clone(),
            self.rng.clone(),
            clock.clone(),
        );
        c.service_modes = vec![ConMode::CRC];
        let now = clock();
        let t = self
            .keys
            .mint(
                &name,
                global_id,
                EntityType::OSD.0 as u32,
                3600,
                now,
                &*self.rng,
            )
            .unwrap();
        c.install_ticket(EntityType::OSD, global_id, t.client_ticket(now));
        Arc::new(c)
    }

    /// Both sides of an OSD-like messenger (verifies authorizers to OSDs).
    fn provider(&self, client: Option<Arc<CephxClient>>) -> Arc<dyn AuthProvider> {
        let mut server = CephxServer::new(
            self.keys.clone(),
            EntityType::OSD,
            self.rng.clone(),
            msgr_auth::system_clock(),
        );
        server.service_modes = vec![ConMode::CRC];
        Arc::new(CephxProvider {
            client,
            server: Some(Arc::new(server)),
        })
    }
}

#[derive(Default)]
struct Log {
    tids: Vec<u64>,
    resets: usize,
    faults: Vec<ProtocolError>,
}

/// Records what arrives; a server echoes each message.
struct Recorder {
    log: Arc<Mutex<Log>>,
    echo: bool,
}

impl Recorder {
    fn new(echo: bool) -> (Arc<Recorder>, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        (
            Arc::new(Recorder {
                log: log.clone(),
                echo,
            }),
            log,
        )
    }
}

impl Dispatcher for Recorder {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.log.lock().unwrap().tids.push(msg.tid);
        if self.echo {
            let mut reply = Message::new(43, Bytes::new());
            reply.tid = msg.tid;
            conn.send_nowait(reply);
        }
    }
    fn ms_handle_reset(&self, _: &Connection) {
        self.log.lock().unwrap().resets += 1;
    }
    fn ms_handle_remote_reset(&self, _: &Connection) {
        self.log.lock().unwrap().resets += 1;
    }
    fn ms_handle_fault(&self, _: &Connection, e: &ProtocolError) {
        self.log.lock().unwrap().faults.push(e.clone());
    }
}

fn msg(tid: u64) -> Message {
    let mut m = Message::new(42, Bytes::from(vec![tid as u8; 64]));
    m.tid = tid;
    m
}

fn options(name: &str, policies: PolicySet, auth: Arc<dyn AuthProvider>, nonce: u32) -> Options {
    let mut o = Options::new(name.parse().unwrap(), policies, auth);
    o.nonce = nonce;
    o.seed = nonce as u64;
    o
}

/// The OSD under attack, on 127.0.0.1, with `client_policy` for clients
/// and lossless-peer for OSDs.
async fn osd0(
    w: &World,
    client_policy: Policy,
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Mutex<Log>>) {
    let (d, log) = Recorder::new(true);
    let policies = PolicySet::new(client_policy).with(EntityType::OSD, Policy::lossless_peer());
    let m = Messenger::new(
        Tcp::default(),
        options("osd.0", policies, w.provider(None), 100),
        d,
    );
    let addrs = m.bind(&"v2:127.0.0.1:0".parse().unwrap()).await.unwrap();
    (m, addrs, log)
}

/// client.admin (global id 4100) as a victim with `policy`, at `nonce`.
fn victim_client(w: &World, policy: Policy, nonce: u32) -> (Messenger<Tcp>, Arc<Mutex<Log>>) {
    let (d, log) = Recorder::new(false);
    let m = Messenger::new(
        Tcp::default(),
        options(
            "client.4100",
            PolicySet::new(policy),
            w.provider(Some(w.client("client.admin", 4100))),
            nonce,
        ),
        d,
    );
    (m, log)
}

/// The attacker's handshake up to its ident: HELLO as `hello`, a cephx
/// authorizer with `ticket`.
async fn attacker(server: &EntityAddrvec, hello: EntityType, ticket: Arc<CephxClient>) -> RawPeer {
    let sock = server.msgr2().unwrap().addr.unwrap();
    let mut p = RawPeer::connect(sock).await.unwrap();
    p.hello(hello).await.unwrap();
    p.authenticate(&mut ticket.conn_auth(), EntityType::OSD)
        .await
        .expect("the attacker's own ticket is valid");
    p.compression(None).await.unwrap();
    p
}

/// The attacker's CLIENT_IDENT: `addrs` claimed, `gid`, a `global_seq`,
/// lossy or not (osd.0 is at nonce 100).
async fn claim(p: &mut RawPeer, addrs: EntityAddrvec, gid: i64, global_seq: u64, lossy: bool) {
    let ident = ClientIdent {
        addrs,
        target_addr: p.server_addr(100),
        gid,
        global_seq,
        supported_features: msgr_protocol::features::SUPPORTED_DEFAULT,
        required_features: 0,
        flags: if lossy { CONNECT_FLAG_LOSSY } else { 0 },
        cookie: 0xbad,
    };
    // The server may already have closed the socket (a refusal).
    let _ = p.control(ident.into()).await;
}

/// What the server answers before it closes the socket.
async fn answers(p: &mut RawPeer) -> Vec<String> {
    let mut got = Vec::new();
    while let Some(f) = p.recv_frame().await {
        got.push(match f {
            Frame::Control(c) => format!("{:?}", c.tag()),
            Frame::Message => "MESSAGE".into(),
        });
    }
    got
}

fn refused_not_owner(log: &Mutex<Log>) -> bool {
    log.lock()
        .unwrap()
        .faults
        .iter()
        .any(|e| matches!(e, ProtocolError::NotSessionOwner { .. }))
}

/// Lossless peers: osd.2 claims osd.1's session with osd.0, while osd.0
/// has messages queued for osd.1 (reuse would hand them over).
#[tokio::test]
async fn a_lossless_peer_session_is_not_handed_to_another_osd() {
    let w = world();
    let (s, s_addrs, s_log) = osd0(&w, Policy::stateful_server()).await;
    let (d, v_log) = Recorder::new(false);
    let victim = Messenger::new(
        Tcp::default(),
        options(
            "osd.1",
            PolicySet::new(Policy::lossless_peer()),
            w.provider(Some(w.client("osd.1", 5001))),
            200,
        ),
        d,
    );
    let v_addrs = victim
        .bind(&"v2:127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let v_conn = victim.connect(&s_addrs, EntityType::OSD);
    v_conn.send(msg(0)).await;
    assert!(
        poll::until(|| v_log.lock().unwrap().tids == [0]).await,
        "echoed"
    );
    let s_to_v = s.connect(&v_addrs, EntityType::OSD);
    assert_eq!(s_to_v.peer_identity().unwrap().name.to_string(), "osd.1");
    for tid in 1..=100 {
        s_to_v.send_nowait(msg(tid));
    }

    let mut p = attacker(&s_addrs, EntityType::OSD, w.client("osd.2", 5002)).await;
    claim(&mut p, v_addrs.clone(), 2, 1 << 40, false).await;
    assert_eq!(
        answers(&mut p).await,
        Vec::<String>::new(),
        "refused outright"
    );
    for tid in 101..=200 {
        s_to_v.send_nowait(msg(tid));
    }
    assert!(
        poll::until(|| v_log.lock().unwrap().tids.len() >= 201).await,
        "{:?}",
        v_log.lock().unwrap().tids.len()
    );
    let v = v_log.lock().unwrap();
    assert_eq!(
        v.tids,
        (0..=200).collect::<Vec<_>>(),
        "every message, once, in order"
    );
    assert_eq!(v.resets, 0, "the victim's session was not reset");
    assert!(refused_not_owner(&s_log));
    assert_eq!(s.connect(&v_addrs, EntityType::OSD), s_to_v, "same session");
    drop(v);
    victim.shutdown().await;
    s.shutdown().await;
}

/// A stateful server: client.mallory sends SESSION_RECONNECT (and, were it
/// told to reset, CLIENT_IDENT) with client.admin's address.
#[tokio::test]
async fn a_stateful_session_is_not_reconnected_by_another_client() {
    let w = world();
    let (s, s_addrs, s_log) = osd0(&w, Policy::stateful_server()).await;
    let (victim, v_log) = victim_client(&w, Policy::lossless_client(), 300);
    let conn = victim.connect(&s_addrs, EntityType::OSD);
    for tid in 1..=50 {
        conn.send(msg(tid)).await;
    }
    assert!(poll::until(|| v_log.lock().unwrap().tids.len() >= 50).await);
    let served = s.connections();
    let v_addrs = served[0].peer_addrs();
    let who = served[0].peer_identity().unwrap();
    assert_eq!(
        (who.name.to_string(), who.global_id),
        ("client.admin".into(), 4100)
    );

    let mut p = attacker(
        &s_addrs,
        EntityType::CLIENT,
        w.client("client.mallory", 4200),
    )
    .await;
    p.control(
        SessionReconnect {
            addrs: v_addrs.clone(),
            client_cookie: 1,
            server_cookie: 1,
            global_seq: 1 << 40,
            connect_seq: 1 << 20,
            msg_seq: 0,
        }
        .into(),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    if let Some(Frame::Control(ControlFrame::SessionReset(_))) = p.recv_frame().await {
        // What the attack does next where a reset is offered: a new
        // session under the victim's address, which a stateful server
        // would hand the victim's (reset) session to.
        got.push("SESSION_RESET".to_string());
        claim(&mut p, v_addrs.clone(), 4200, (1 << 40) + 1, false).await;
        got.extend(answers(&mut p).await);
    }
    assert_eq!(got, Vec::<String>::new(), "refused at its first ident");
    for tid in 51..=100 {
        conn.send(msg(tid)).await;
    }
    assert!(poll::until(|| v_log.lock().unwrap().tids.len() >= 100).await);
    let v = v_log.lock().unwrap();
    assert_eq!(v.tids, (1..=100).collect::<Vec<_>>());
    assert_eq!(v.resets, 0);
    assert!(refused_not_owner(&s_log));
    drop(v);
    victim.shutdown().await;
    s.shutdown().await;
}

/// A lossy server that registers its clients: client.mallory's ident with
/// client.admin's address would replace (close) the victim's connection.
#[tokio::test]
async fn a_registered_lossy_client_is_not_replaced_by_another() {
    let w = world();
    let (s, s_addrs, s_log) = osd0(&w, Policy::stateless_registered_server()).await;
    let (victim, v_log) = victim_client(&w, Policy::lossy_client(), 400);
    let conn = victim.connect(&s_addrs, EntityType::OSD);
    conn.send(msg(1)).await;
    assert!(poll::until(|| v_log.lock().unwrap().tids.len() == 1).await);
    let v_addrs = s.connections()[0].peer_addrs();

    let mut p = attacker(
        &s_addrs,
        EntityType::CLIENT,
        w.client("client.mallory", 4200),
    )
    .await;
    claim(&mut p, v_addrs, 4200, 1 << 40, true).await;
    assert_eq!(answers(&mut p).await, Vec::<String>::new());
    for tid in 2..=20 {
        conn.send(msg(tid)).await;
    }
    assert!(poll::until(|| v_log.lock().unwrap().tids.len() >= 20).await);
    let v = v_log.lock().unwrap();
    assert_eq!(v.tids, (1..=20).collect::<Vec<_>>());
    assert_eq!(v.resets, 0, "the victim kept its connection");
    assert!(conn.is_connected());
    assert!(refused_not_owner(&s_log));
    drop(v);
    victim.shutdown().await;
    s.shutdown().await;
}

/// A ticket is for one entity: a client's ticket with HELLO as an OSD is
/// refused at AUTH_DONE (AUTH_BAD_METHOD, EACCES), an OSD's ticket with
/// another OSD's gid at its ident.
#[tokio::test]
async fn a_ticket_buys_only_its_own_type_and_gid() {
    let w = world();
    let (s, s_addrs, s_log) = osd0(&w, Policy::stateful_server()).await;
    let sock = s_addrs.msgr2().unwrap().addr.unwrap();

    let mut p = RawPeer::connect(sock).await.unwrap();
    p.hello(EntityType::OSD).await.unwrap();
    let r = p
        .authenticate(
            &mut w.client("client.mallory", 4200).conn_auth(),
            EntityType::OSD,
        )
        .await;
    assert_eq!(r.err().as_deref(), Some("AUTH_BAD_METHOD -13"));
    assert!(p.closed_by_server(Duration::from_secs(5)).await);

    let mut p = attacker(&s_addrs, EntityType::OSD, w.client("osd.2", 5002)).await;
    claim(&mut p, "v2:127.0.0.1:6999/1".parse().unwrap(), 1, 1, false).await;
    assert_eq!(answers(&mut p).await, Vec::<String>::new());

    assert!(poll::until(|| s_log.lock().unwrap().faults.len() >= 2).await);
    let faults = s_log.lock().unwrap().faults.clone();
    let claims: Vec<_> = faults
        .iter()
        .filter_map(|e| match e {
            ProtocolError::Impersonation {
                authenticated,
                claim,
            } => Some((authenticated.name.to_string(), claim.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        claims,
        vec![
            ("client.mallory".into(), Claim::HelloType(EntityType::OSD)),
            ("osd.2".into(), Claim::IdentGid(1)),
        ]
    );
    assert!(poll::until(|| s.connections().is_empty()).await);
    s.shutdown().await;
}
