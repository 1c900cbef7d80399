//! cephx on both sides fed arbitrary peer payloads, and the keyring and
//! cephx structure decoders.

use std::sync::Arc;

use bytes::Bytes;
use msgr_auth::cephx::wire::{
    Authenticate, AuthorizeReply, AuthorizerHead, ServerChallenge, ServiceTicketInfo, TicketBlob,
};
use msgr_auth::cephx::{
    CephxClient, CephxServer, CryptoKey, KeyKind, KeyServer, Keyring, KeyringEntry,
};
use msgr_auth::{AuthPeer, ClientAuth, ConMode, SeededRandom, ServerAuth, ServerStep};
use msgr_encoding::{AuthName, Decode, Decoder, Encode, EntityType, UTime};

fn peer(t: EntityType) -> AuthPeer {
    AuthPeer { entity_type: t }
}

/// A deterministic cephx world: client.admin and the service keys.
fn world(kind: KeyKind) -> (Arc<CephxClient>, Arc<CephxServer>, Arc<CephxServer>) {
    let rng = Arc::new(SeededRandom::new(1));
    let clock: msgr_auth::Clock = Arc::new(|| UTime {
        sec: 1_800_000_000,
        nsec: 0,
    });
    let mut ring = Keyring::default();
    for n in ["client.admin", "osd.", "auth.", "mon.", "mgr."] {
        ring.insert(
            n.parse().expect("valid"),
            KeyringEntry {
                key: CryptoKey::random(kind, UTime::default(), &*rng),
                caps: Default::default(),
            },
        );
    }
    let admin = AuthName::client_admin();
    let key = ring.get(&admin).expect("present").key.clone();
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
    let client = Arc::new(CephxClient::new(admin, key, rng, clock));
    (client, mon, osd)
}

/// One exchange between our client and server to READY, so that later
/// fuzzed steps start from a real state.
fn establish(client: &Arc<CephxClient>, server: &Arc<CephxServer>, t: EntityType) {
    let mut c = client.conn_auth();
    let mut s = server.conn_auth();
    let Ok(req) = c.request(&peer(t), &[]) else {
        return;
    };
    let mut step = s.handle(
        &peer(EntityType::CLIENT),
        req.method,
        ConMode::SECURE,
        false,
        &req.payload,
    );
    for _ in 0..3 {
        match step {
            Ok(ServerStep::More(p)) => match c.reply_more(&p) {
                Ok(more) => {
                    step = s.handle(
                        &peer(EntityType::CLIENT),
                        req.method,
                        ConMode::SECURE,
                        true,
                        &more,
                    )
                }
                Err(_) => return,
            },
            Ok(ServerStep::Done { payload, outcome }) => {
                let _ = c.done(outcome.global_id, outcome.con_mode, &payload);
                return;
            }
            Err(_) => return,
        }
    }
}

/// The first byte picks the key type and the side and step that takes the
/// rest as the peer's payload.
pub fn cephx(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let kind = if sel & 0x80 != 0 {
        KeyKind::Aes256k
    } else {
        KeyKind::Aes128
    };
    let (client, mon, osd) = world(kind);
    let cl = || peer(EntityType::CLIENT);
    match sel & 0x0f {
        // Servers: a first request, then a second round on the same state.
        0 => {
            let mut s = mon.conn_auth();
            let _ = s.handle(&cl(), 2, ConMode::CRC, false, rest);
            let _ = s.handle(&cl(), 2, ConMode::SECURE, true, rest);
        }
        1 => {
            // A real start, then a fuzzed authenticate.
            let mut c = client.conn_auth();
            let mut s = mon.conn_auth();
            if let Ok(req) = c.request(&peer(EntityType::MON), &[]) {
                let _ = s.handle(&cl(), 2, ConMode::SECURE, false, &req.payload);
                let _ = s.handle(&cl(), 2, ConMode::SECURE, true, rest);
            }
        }
        2 => {
            let mut s = osd.conn_auth();
            let _ = s.handle(&cl(), 2, ConMode::CRC, false, rest);
            let _ = s.handle(&cl(), 2, ConMode::CRC, true, rest);
        }
        // Clients: a fuzzed challenge and a fuzzed AUTH_DONE from a monitor.
        3 => {
            let mut c = client.conn_auth();
            if c.request(&peer(EntityType::MON), &[]).is_ok() {
                let _ = c.reply_more(rest);
                let _ = c.done(1, ConMode::SECURE, rest);
            }
        }
        4 => {
            let mut c = client.conn_auth();
            if c.request(&peer(EntityType::MON), &[]).is_ok() {
                let ch = ServerChallenge {
                    server_challenge: 7,
                }
                .to_bytes();
                let _ = c.reply_more(&ch);
                let _ = c.done(1, ConMode::SECURE, rest);
            }
        }
        // An authorizer's challenge and reply from a service.
        5 => {
            establish(&client, &mon, EntityType::MON);
            let mut c = client.conn_auth();
            if c.request(&peer(EntityType::OSD), &[]).is_ok() {
                let _ = c.reply_more(rest);
                let _ = c.done(1, ConMode::CRC, rest);
            }
        }
        // Ticket renewal replies.
        6 => {
            establish(&client, &mon, EntityType::MON);
            let _ = client.handle_ticket_reply(rest);
        }
        7 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                if let Ok(ring) = Keyring::parse(text) {
                    assert_eq!(Keyring::parse(&ring.to_text()).expect("own text"), ring);
                }
            }
        }
        8 => {
            let _ = CryptoKey::decode_exact(rest, "key");
            let _ = msgr_auth::base64::decode(&String::from_utf8_lossy(rest));
        }
        _ => {
            let mut d = Decoder::new(rest);
            let _ = Authenticate::decode(&mut d);
            let _ = TicketBlob::decode(&mut Decoder::new(rest));
            let _ = ServiceTicketInfo::decode(&mut Decoder::new(rest));
            let _ = AuthorizerHead::decode(&mut Decoder::new(rest));
            let _ = AuthorizeReply::decode(&mut Decoder::new(rest));
            let key = CryptoKey::random(kind, UTime::default(), &SeededRandom::new(3));
            let _ = key.decrypt(4, rest);
            let _ = Bytes::new();
        }
    }
}
