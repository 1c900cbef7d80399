//! Our cephx client against our cephx server, sans-IO: the monitor
//! session (tickets, connection secret, global-id reclaim) and the
//! authorizer with its challenge, for both key types; and the failures a
//! server must catch.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use msgr_auth::cephx::{
    CephxClient, CephxServer, CryptoKey, KeyKind, KeyServer, Keyring, KeyringEntry,
};
use msgr_auth::{
    AuthError, AuthOutcome, AuthPeer, ClientAuth, Clock, ConMode, SeededRandom, ServerAuth,
    ServerStep,
};
use msgr_encoding::{AuthName, EntityType, UTime};

struct World {
    client: Arc<CephxClient>,
    mon: Arc<CephxServer>,
    osd: Arc<CephxServer>,
    now: Arc<Mutex<u32>>,
}

fn world(kind: KeyKind) -> World {
    let rng = Arc::new(SeededRandom::new(42));
    let now = Arc::new(Mutex::new(1_800_000_000u32));
    let n = now.clone();
    let clock: Clock = Arc::new(move || UTime {
        sec: *n.lock().unwrap(),
        nsec: 0,
    });
    let admin_key = CryptoKey::random(kind, UTime::default(), &*rng);
    let mut ring = Keyring::default();
    let mut caps = std::collections::BTreeMap::new();
    caps.insert("mon".to_string(), "allow *".to_string());
    ring.insert(
        AuthName::client_admin(),
        KeyringEntry {
            key: admin_key.clone(),
            caps,
        },
    );
    for svc in ["osd.", "auth.", "mon.", "mgr."] {
        ring.insert(
            svc.parse().unwrap(),
            KeyringEntry {
                key: CryptoKey::random(KeyKind::Aes256k, UTime::default(), &*rng),
                caps: Default::default(),
            },
        );
    }
    let keys = Arc::new(KeyServer::new(ring));
    let mon = Arc::new(CephxServer::new(
        keys.clone(),
        EntityType::MON,
        rng.clone(),
        clock.clone(),
    ));
    let osd = Arc::new(CephxServer::new(
        keys,
        EntityType::OSD,
        rng.clone(),
        clock.clone(),
    ));
    let client = Arc::new(CephxClient::new(
        AuthName::client_admin(),
        admin_key,
        rng,
        clock,
    ));
    World {
        client,
        mon,
        osd,
        now,
    }
}

/// A client with a random key the servers do not know.
fn random_client(name: AuthName, kind: KeyKind) -> Arc<CephxClient> {
    Arc::new(CephxClient::new(
        name,
        CryptoKey::random(kind, UTime::default(), &SeededRandom::new(9)),
        Arc::new(SeededRandom::new(10)),
        msgr_auth::system_clock(),
    ))
}

fn peer(t: EntityType) -> AuthPeer {
    AuthPeer { entity_type: t }
}

/// Runs one exchange to its end; returns both outcomes.
fn exchange(
    client: &mut dyn ClientAuth,
    server: &mut dyn ServerAuth,
    server_type: EntityType,
) -> Result<(AuthOutcome, AuthOutcome), AuthError> {
    let req = client.request(&peer(server_type), &[])?;
    let mode = server
        .pick_mode(
            &peer(EntityType::CLIENT),
            req.method,
            &req.preferred_modes,
            &req.payload,
        )
        .ok_or(AuthError::NoCommonMode)?;
    let mut step = server.handle(
        &peer(EntityType::CLIENT),
        req.method,
        mode,
        false,
        &req.payload,
    )?;
    for _ in 0..4 {
        match step {
            ServerStep::More(p) => {
                let more = client.reply_more(&p)?;
                step = server.handle(&peer(EntityType::CLIENT), req.method, mode, true, &more)?;
            }
            ServerStep::Done { payload, outcome } => {
                let mine = client.done(outcome.global_id, outcome.con_mode, &payload)?;
                return Ok((mine, outcome));
            }
        }
    }
    panic!("exchange did not finish");
}

/// What both sides share (the server alone learns who the client is).
fn shared(o: &AuthOutcome) -> AuthOutcome {
    AuthOutcome {
        peer: None,
        ..o.clone()
    }
}

fn both_kinds(f: impl Fn(KeyKind)) {
    f(KeyKind::Aes128);
    f(KeyKind::Aes256k);
}

#[test]
fn monitor_session_then_osd_authorizer() {
    both_kinds(|kind| {
        let w = world(kind);
        let (c, s) = exchange(
            &mut w.client.conn_auth(),
            &mut w.mon.conn_auth(),
            EntityType::MON,
        )
        .unwrap();
        assert_eq!(c, shared(&s), "{kind:?}");
        // The server knows who authenticated, with its global id.
        let who = s.peer.clone().unwrap();
        assert_eq!(who.name, AuthName::client_admin());
        assert_eq!(who.global_id, s.global_id);
        assert!(who.proven);
        // The client offers secure first to monitors: a 64-byte secret.
        assert_eq!(c.con_mode, ConMode::SECURE);
        assert_eq!(c.connection_secret.len(), 64);
        assert_eq!(c.session_key.secret().len(), kind.secret_len());
        assert!(c.global_id >= 4096);
        let osd = w
            .client
            .ticket(EntityType::OSD)
            .expect("osd ticket in AUTH_DONE");
        assert_eq!(osd.session_key.kind, kind);
        assert_eq!(w.client.need(), 0);

        let (c2, s2) = exchange(
            &mut w.client.conn_auth(),
            &mut w.osd.conn_auth(),
            EntityType::OSD,
        )
        .unwrap();
        assert_eq!(c2, shared(&s2));
        assert_eq!(s2.peer.clone().unwrap().name, AuthName::client_admin());
        assert_eq!(c2.con_mode, ConMode::CRC);
        assert!(c2.connection_secret.is_empty());
        assert_eq!(c2.global_id, c.global_id);
        assert_eq!(c2.session_key.secret(), osd.session_key.secret());
    });
}

#[test]
fn secure_authorizer_gets_a_connection_secret() {
    let w = world(KeyKind::Aes256k);
    exchange(
        &mut w.client.conn_auth(),
        &mut w.mon.conn_auth(),
        EntityType::MON,
    )
    .unwrap();
    let mut auth = w.client.conn_auth();
    let req = auth.request(&peer(EntityType::OSD), &[]).unwrap();
    let mut server = w.osd.conn_auth();
    let ServerStep::More(ch) = server
        .handle(
            &peer(EntityType::CLIENT),
            2,
            ConMode::SECURE,
            false,
            &req.payload,
        )
        .unwrap()
    else {
        panic!("the first authorizer is challenged")
    };
    let more = auth.reply_more(&ch).unwrap();
    let ServerStep::Done { payload, outcome } = server
        .handle(&peer(EntityType::CLIENT), 2, ConMode::SECURE, true, &more)
        .unwrap()
    else {
        panic!("the answered challenge is accepted")
    };
    let mine = auth
        .done(outcome.global_id, ConMode::SECURE, &payload)
        .unwrap();
    assert_eq!(mine.connection_secret.len(), 64);
    assert_eq!(mine, shared(&outcome));
    // The ticket says who the client is.
    let who = outcome.peer.unwrap();
    assert_eq!(who.name, AuthName::client_admin());
    assert_eq!(who.global_id, outcome.global_id);
}

#[test]
fn a_wrong_key_is_refused() {
    both_kinds(|kind| {
        let w = world(kind);
        let impostor = random_client(AuthName::client_admin(), kind);
        let err = exchange(
            &mut impostor.conn_auth(),
            &mut w.mon.conn_auth(),
            EntityType::MON,
        )
        .unwrap_err();
        assert!(matches!(err, AuthError::Denied(_)), "{err:?}");
        assert_eq!(err.errno(), -13);
        let stranger = random_client("client.nobody".parse().unwrap(), kind);
        assert!(matches!(
            exchange(
                &mut stranger.conn_auth(),
                &mut w.mon.conn_auth(),
                EntityType::MON
            ),
            Err(AuthError::Denied(_))
        ));
    });
}

#[test]
fn an_authorizer_without_the_challenge_answer_is_a_replay() {
    let w = world(KeyKind::Aes256k);
    exchange(
        &mut w.client.conn_auth(),
        &mut w.mon.conn_auth(),
        EntityType::MON,
    )
    .unwrap();
    let mut auth = w.client.conn_auth();
    let req = auth.request(&peer(EntityType::OSD), &[]).unwrap();
    let mut server = w.osd.conn_auth();
    let step = server
        .handle(
            &peer(EntityType::CLIENT),
            2,
            ConMode::CRC,
            false,
            &req.payload,
        )
        .unwrap();
    assert!(matches!(step, ServerStep::More(_)));
    // A replayed first authorizer instead of the answer.
    assert_eq!(
        server.handle(
            &peer(EntityType::CLIENT),
            2,
            ConMode::CRC,
            true,
            &req.payload
        ),
        Err(AuthError::Replayed)
    );
    // A tampered ticket.
    let mut bad = req.payload.to_vec();
    bad[30] ^= 0x40;
    assert!(matches!(
        w.osd
            .conn_auth()
            .handle(&peer(EntityType::CLIENT), 2, ConMode::CRC, false, &bad),
        Err(AuthError::Denied(_))
    ));
    // An authorizer meant for another service.
    assert!(matches!(
        w.mon.conn_auth().handle(
            &peer(EntityType::CLIENT),
            2,
            ConMode::CRC,
            false,
            &req.payload
        ),
        Err(AuthError::Denied(_))
    ));
}

#[test]
fn an_expired_ticket_is_refused() {
    let w = world(KeyKind::Aes128);
    exchange(
        &mut w.client.conn_auth(),
        &mut w.mon.conn_auth(),
        EntityType::MON,
    )
    .unwrap();
    *w.now.lock().unwrap() += 3_600;
    // The client knows its ticket is dead and does not present it ...
    assert!(matches!(
        w.client.conn_auth().request(&peer(EntityType::OSD), &[]),
        Err(AuthError::NoKey(_))
    ));
    assert_ne!(w.client.need() & EntityType::OSD.0 as u32, 0);
    // ... and a client that presents it anyway is refused by the service.
    let mut stale = w.client.ticket(EntityType::OSD).unwrap();
    stale.expires.sec = u32::MAX;
    w.client
        .install_ticket(EntityType::OSD, w.client.global_id(), stale);
    let err = exchange(
        &mut w.client.conn_auth(),
        &mut w.osd.conn_auth(),
        EntityType::OSD,
    )
    .unwrap_err();
    assert!(matches!(err, AuthError::Expired(_)), "{err:?}");
}

#[test]
fn reconnect_reclaims_the_global_id_with_the_old_ticket() {
    both_kinds(|kind| {
        let w = world(kind);
        let (first, _) = exchange(
            &mut w.client.conn_auth(),
            &mut w.mon.conn_auth(),
            EntityType::MON,
        )
        .unwrap();
        let old = w.client.ticket(EntityType::AUTH).unwrap();
        let (again, srv) = exchange(
            &mut w.client.conn_auth(),
            &mut w.mon.conn_auth(),
            EntityType::MON,
        )
        .unwrap();
        assert_eq!(again.global_id, first.global_id);
        assert_eq!(again, shared(&srv));
        // The new AUTH ticket came re-encrypted under the old session key.
        assert_ne!(
            w.client.ticket(EntityType::AUTH).unwrap().session_key,
            old.session_key
        );
        // A client claiming that global id without the ticket is refused.
        let fresh = world(kind);
        let thief = fresh.client.clone();
        thief.install_ticket(
            EntityType::OSD,
            first.global_id,
            w.client.ticket(EntityType::OSD).unwrap(),
        );
        assert!(matches!(
            exchange(
                &mut thief.conn_auth(),
                &mut w.mon.conn_auth(),
                EntityType::MON
            ),
            Err(AuthError::Denied(_))
        ));
    });
}

#[test]
fn garbage_is_a_typed_error_never_a_panic() {
    let w = world(KeyKind::Aes256k);
    let mut seed = 1u64;
    for len in 0..200 {
        let mut junk = vec![0u8; len];
        for b in junk.iter_mut() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (seed >> 33) as u8;
        }
        for first in [1u8, 10, 0, 200] {
            if let Some(b) = junk.first_mut() {
                *b = first;
            }
            let _ =
                w.mon
                    .conn_auth()
                    .handle(&peer(EntityType::CLIENT), 2, ConMode::CRC, false, &junk);
            let _ =
                w.osd
                    .conn_auth()
                    .handle(&peer(EntityType::CLIENT), 2, ConMode::CRC, false, &junk);
            let mut c = w.client.conn_auth();
            let _ = c.request(&peer(EntityType::MON), &[]);
            let _ = c.reply_more(&junk);
            let _ = c.done(1, ConMode::CRC, &junk);
        }
    }
    let _ = Bytes::new();
}

/// The mode of a request comes from the list of its kind: a monitor
/// session from ms_mon_service_mode, an authorizer from ms_service_mode
/// (not from either list).
#[test]
fn modes_are_picked_from_the_list_of_the_request_kind() {
    let w = world(KeyKind::Aes128);
    let mut server = CephxServer::new(
        w.mon.keys.clone(),
        EntityType::MON,
        Arc::new(SeededRandom::new(1)),
        msgr_auth::system_clock(),
    );
    server.mon_modes = vec![ConMode::SECURE];
    server.service_modes = vec![ConMode::CRC];
    let auth = Arc::new(server).conn_auth();
    let client = peer(EntityType::CLIENT);
    let mon_request = [10u8, 0, 0];
    let authorizer = [1u8, 0, 0];
    let both = [ConMode::CRC, ConMode::SECURE];
    assert_eq!(
        auth.pick_mode(&client, 2, &both, &mon_request),
        Some(ConMode::SECURE)
    );
    assert_eq!(
        auth.pick_mode(&client, 2, &both, &authorizer),
        Some(ConMode::CRC)
    );
    assert_eq!(
        auth.pick_mode(&client, 2, &[ConMode::CRC], &mon_request),
        None
    );
    assert_eq!(
        auth.pick_mode(&client, 2, &[ConMode::SECURE], &authorizer),
        None
    );
    assert_eq!(
        auth.pick_mode(&client, 1, &both, &authorizer),
        None,
        "cephx only"
    );
}
