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
use msgr_messenger::{Connection, Message, Messenger, Options, Policy};
use msgr_protocol::{Claim, PolicySet, ProtocolError};
use msgr_transport::tcp::Tcp;

#[path = "support/poll.rs"]
mod poll;
#[path = "support/raw_peer.rs"]
mod raw_peer;
#[path = "support/raw_v1.rs"]
mod raw_v1;
#[path = "support/recorder.rs"]
mod recorder;
use raw_peer::{Frame, RawPeer};
use raw_v1::RawV1;
use recorder::{Log, Recorder};

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
        self.client_with(principal, global_id, &[ConMode::CRC])
    }

    /// The same, asking for `modes`.
    fn client_with(&self, principal: &str, global_id: u64, modes: &[ConMode]) -> Arc<CephxClient> {
        let name: AuthName = principal.parse().unwrap();
        let clock = msgr_auth::system_clock();
        let mut c = CephxClient::new(
            name.clone(),
            self.keys.entity_key(&name).unwrap().clone(),
            self.rng.clone(),
            clock.clone(),
        );
        c.service_modes = modes.to_vec();
        c.grant_from(&self.keys, EntityType::OSD, global_id, 3600)
            .unwrap();
        Arc::new(c)
    }

    /// Both sides of an OSD-like messenger (verifies authorizers to OSDs).
    fn provider(&self, client: Option<Arc<CephxClient>>) -> Arc<dyn AuthProvider> {
        self.provider_with(client, &[ConMode::CRC])
    }

    /// The same, offering `modes` as a server.
    fn provider_with(
        &self,
        client: Option<Arc<CephxClient>>,
        modes: &[ConMode],
    ) -> Arc<dyn AuthProvider> {
        let mut server = CephxServer::new(
            self.keys.clone(),
            EntityType::OSD,
            self.rng.clone(),
            msgr_auth::system_clock(),
        );
        server.service_modes = modes.to_vec();
        Arc::new(CephxProvider {
            client,
            server: Some(Arc::new(server)),
        })
    }

    /// A server that allows auth none beside cephx, as Ceph's
    /// `auth_service_required = cephx, none` does.
    fn cephx_or_none(&self, modes: &[ConMode]) -> Arc<dyn AuthProvider> {
        use msgr_frames::control::auth_method;
        Arc::new(msgr_auth::MultiProvider {
            providers: vec![
                (auth_method::CEPHX, self.provider_with(None, modes)),
                (auth_method::NONE, Arc::new(msgr_auth::NoneProvider)),
            ],
        })
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
    let (d, _, log) = Recorder::new(true);
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
    let (d, _, log) = Recorder::new(false);
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

/// Sends messages `sent + 1 ..= sent + more` and waits for their echoes;
/// returns how many were sent in all.
async fn echoed(conn: &Connection, v_log: &Mutex<Log>, sent: u64, more: u64) -> u64 {
    let all = sent + more;
    for tid in sent + 1..=all {
        conn.send(msg(tid)).await;
    }
    assert!(poll::until(|| v_log.lock().unwrap().tids.len() as u64 >= all).await);
    all
}

/// The victim's session after an attack on it: messages `sent + 1 ..=
/// sent + more` go through too, every message arrived once and in order,
/// nothing was reset, and the server logged whom it refused.
async fn victim_carries_on(
    conn: &Connection,
    v_log: &Mutex<Log>,
    s_log: &Mutex<Log>,
    sent: u64,
    more: u64,
) {
    let all = echoed(conn, v_log, sent, more).await;
    let v = v_log.lock().unwrap();
    assert_eq!(v.tids, (1..=all).collect::<Vec<_>>());
    assert_eq!(
        v.resets + v.remote_resets,
        0,
        "the victim's session was not reset"
    );
    assert!(refused_not_owner(s_log));
}

/// Lossless peers: osd.2 claims osd.1's session with osd.0, while osd.0
/// has messages queued for osd.1 (reuse would hand them over).
#[tokio::test]
async fn a_lossless_peer_session_is_not_handed_to_another_osd() {
    let w = world();
    let (s, s_addrs, s_log) = osd0(&w, Policy::stateful_server()).await;
    let (d, _, v_log) = Recorder::new(false);
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
    assert_eq!(
        v.resets + v.remote_resets,
        0,
        "the victim's session was not reset"
    );
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
    victim_carries_on(&conn, &v_log, &s_log, 50, 50).await;
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
    assert_eq!(
        v.resets + v.remote_resets,
        0,
        "the victim kept its connection"
    );
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

/// osd.0 allowing auth none beside cephx (`modes` for cephx), listening
/// on each of `binds` (msgr1 and/or msgr2).
async fn osd0_cephx_or_none(
    w: &World,
    modes: &[ConMode],
    binds: &str,
) -> (Messenger<Tcp>, EntityAddrvec, Arc<Mutex<Log>>) {
    let (d, _, log) = Recorder::new(true);
    let policies = PolicySet::new(Policy::stateful_server());
    let m = Messenger::new(
        Tcp::default(),
        options("osd.0", policies, w.cephx_or_none(modes), 100),
        d,
    );
    let addrs = m.bind(&binds.parse().unwrap()).await.unwrap();
    (m, addrs, log)
}

/// The attack over msgr1: at the server's msgr1 address, a CONNECT with no
/// authorizer claims the victim's address and nonce (`victim`, as the
/// server registered it) with connect_seq 2, to resume its session.
/// Returns the server's answer, if any.
async fn anonymous_resume(
    server: &EntityAddrvec,
    victim: &EntityAddrvec,
) -> Option<msgr_frames::v1::ConnectReply> {
    let mut claimed = victim.0[0];
    claimed.kind = msgr_encoding::EntityAddrType::LEGACY;
    let sock = server.legacy().unwrap().addr.unwrap();
    let mut p = RawV1::hello(sock, claimed).await.unwrap();
    p.connect(raw_v1::connect(EntityType::CLIENT, 1 << 20, 2), None)
        .await
}

/// The attack, over msgr1 on a server that allows auth none beside cephx:
/// a CONNECT with no authorizer claims client.admin's address and nonce
/// with connect_seq 2, to be answered SEQ and take the session over (its
/// queued messages, and its own messages dispatched as the victim's). It
/// is refused before any answer; the victim's session carries on.
#[tokio::test]
async fn an_anonymous_msgr1_peer_does_not_take_over_a_cephx_session() {
    let w = world();
    let (s, s_addrs, s_log) = osd0_cephx_or_none(&w, &[ConMode::CRC], "v1:127.0.0.1:0").await;
    let (victim, v_log) = victim_client(&w, Policy::lossless_client(), 500);
    let conn = victim.connect(&s_addrs, EntityType::OSD);
    echoed(&conn, &v_log, 0, 20).await;
    let served = s.connections();
    assert!(served[0].is_msgr1());
    let who = served[0].peer_identity().unwrap();
    assert!(who.proven && who.name.to_string() == "client.admin");

    let reply = anonymous_resume(&s_addrs, &served[0].peer_addrs()).await;
    assert_eq!(reply, None, "refused before any answer");
    victim_carries_on(&conn, &v_log, &s_log, 20, 20).await;
    victim.shutdown().await;
    s.shutdown().await;
}

/// A session opened over msgr2 in secure mode is not resumed over
/// plaintext msgr1 at the same address and nonce.
#[tokio::test]
async fn an_msgr2_secure_session_is_not_resumed_over_msgr1() {
    let w = world();
    let modes = [ConMode::SECURE, ConMode::CRC];
    let (s, s_addrs, s_log) =
        osd0_cephx_or_none(&w, &modes, "[v2:127.0.0.1:0,v1:127.0.0.1:0]").await;
    let (d, _, v_log) = Recorder::new(false);
    let admin = w.client_with("client.admin", 4100, &[ConMode::SECURE]);
    let victim = Messenger::new(
        Tcp::default(),
        options(
            "client.4100",
            PolicySet::new(Policy::lossless_client()),
            w.provider_with(Some(admin), &modes),
            600,
        ),
        d,
    );
    let conn = victim.connect(
        &EntityAddrvec::single(*s_addrs.msgr2().unwrap()),
        EntityType::OSD,
    );
    echoed(&conn, &v_log, 0, 20).await;
    let served = s.connections();
    assert!(!served[0].is_msgr1());

    let reply = anonymous_resume(&s_addrs, &served[0].peer_addrs()).await;
    assert_eq!(reply, None, "refused before any answer");
    victim_carries_on(&conn, &v_log, &s_log, 20, 20).await;
    victim.shutdown().await;
    s.shutdown().await;
}

/// msgr1 binds its claims to who authenticated: a client's ticket with a
/// CONNECT as an OSD is refused (BADAUTHORIZER), and a message whose
/// header names another sender ends the session undelivered, from a
/// cephx peer (another client's number) as from an anonymous one
/// (another type). The same peers naming themselves are served.
#[tokio::test]
async fn msgr1_binds_host_type_and_sender_to_the_authenticated_entity() {
    use msgr_frames::v1::Tag as Tag1;
    let w = world();
    let (s, s_addrs, s_log) = osd0_cephx_or_none(&w, &[ConMode::CRC], "v1:127.0.0.1:0").await;
    let sock = s_addrs.legacy().unwrap().addr.unwrap();
    let at = |nonce: u32| -> msgr_encoding::EntityAddr {
        format!("v1:127.0.0.1:0/{nonce}").parse().unwrap()
    };
    let mallory = || w.client("client.mallory", 4200);

    // A client's ticket, a CONNECT as an OSD.
    let mut p = RawV1::hello(sock, at(701)).await.unwrap();
    let mut auth = mallory().conn_auth();
    let reply = p
        .connect(raw_v1::connect(EntityType::OSD, 1, 0), Some(&mut auth))
        .await;
    assert_eq!(reply.map(|r| r.tag), Some(Tag1::BadAuthorizer));
    assert!(p.closed_within(Duration::from_secs(5)).await.0);

    // A cephx client naming another client, then one naming itself.
    for (nonce, src, served) in [(702, "client.4100", false), (703, "client.4200", true)] {
        let mut p = RawV1::hello(sock, at(nonce)).await.unwrap();
        let mut auth = mallory().conn_auth();
        let reply = p
            .connect(raw_v1::connect(EntityType::CLIENT, 1, 0), Some(&mut auth))
            .await
            .unwrap();
        assert!(matches!(reply.tag, Tag1::Ready | Tag1::Seq), "{reply:?}");
        p.send(src.parse().unwrap(), 42, b"hi").await.unwrap();
        let (closed, answered) = p.closed_within(Duration::from_secs(2)).await;
        assert_eq!((closed, answered > 0), (!served, served), "{src}");
    }
    // An anonymous client naming an OSD.
    let mut p = RawV1::hello(sock, at(704)).await.unwrap();
    let reply = p
        .connect(raw_v1::connect(EntityType::CLIENT, 1, 0), None)
        .await
        .unwrap();
    assert!(matches!(reply.tag, Tag1::Ready | Tag1::Seq), "{reply:?}");
    p.send("osd.3".parse().unwrap(), 42, b"hi").await.unwrap();
    assert!(p.closed_within(Duration::from_secs(5)).await.0);

    assert_eq!(s_log.lock().unwrap().tids, [1], "only the honest message");
    let claims: Vec<_> = s_log
        .lock()
        .unwrap()
        .faults
        .iter()
        .filter_map(|e| match e {
            ProtocolError::Impersonation { claim, .. } => Some(claim.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        claims,
        vec![
            Claim::ConnectType(EntityType::OSD),
            Claim::MessageSource("client.4100".parse().unwrap()),
            Claim::MessageSource("osd.3".parse().unwrap()),
        ]
    );
    s.shutdown().await;
}

/// A peer we dial answers our CONNECT with RETRY_GLOBAL u32::MAX: that
/// connection faults, and the messenger's global_seq, which numbers every
/// msgr1 CONNECT, is not pushed past msgr1's 32 bits: the next peer is
/// reached as before.
#[tokio::test]
async fn a_dialled_peer_cannot_push_global_seq_past_32_bits() {
    use msgr_frames::v1::{ConnectReply, Tag};
    let w = world();
    let hostile = raw_v1::scripted_server(
        ConnectReply {
            tag: Tag::RetryGlobal,
            features: msgr_protocol::features::SUPPORTED_DEFAULT,
            global_seq: u32::MAX,
            connect_seq: 0,
            protocol_version: raw_v1::OSDC_PROTOCOL,
            authorizer_len: 0,
            flags: 0,
        },
        4,
    )
    .await;
    let (d, _, c_log) = Recorder::new(false);
    let client = Messenger::new(
        Tcp::default(),
        options(
            "client.4100",
            PolicySet::new(Policy::lossy_client()),
            Arc::new(msgr_auth::NoneProvider),
            800,
        ),
        d,
    );
    let to_hostile = client.connect(&EntityAddrvec::single(hostile), EntityType::OSD);
    to_hostile.send_nowait(msg(1));
    assert!(
        poll::until(|| c_log
            .lock()
            .unwrap()
            .faults
            .iter()
            .any(|e| matches!(e, ProtocolError::PeerGlobalSeq { .. })))
        .await,
        "{:?}",
        c_log.lock().unwrap().faults
    );
    to_hostile.mark_down();

    let (s, s_addrs, _) = osd0_cephx_or_none(&w, &[ConMode::CRC], "v1:127.0.0.1:0").await;
    let conn = client.connect(&s_addrs, EntityType::OSD);
    conn.send(msg(2)).await;
    assert!(
        poll::until(|| c_log.lock().unwrap().tids == [2]).await,
        "{:?}",
        c_log.lock().unwrap().faults
    );
    client.shutdown().await;
    s.shutdown().await;
}
