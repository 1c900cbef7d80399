//! The errors a user of the library meets, each produced as it happens
//! and its message checked for what happened and what to do: the rows of
//! the table in the crate's docs (`msgr::errors`). Real sockets where the
//! error is about them; our own messengers as the peers that refuse.

use std::sync::Arc;
use std::time::Duration;

use msgr::auth::cephx::{
    CephxClient, CephxProvider, CephxServer, CryptoKey, KeyKind, KeyServer, Keyring, KeyringEntry,
};
use msgr::auth::{AuthError, AuthProvider, ConMode, NoneProvider, SeededRandom};
use msgr::monc::identity::{ClusterOpts, Identity, IdentityError};
use msgr::monc::{MonAuth, MonClient, MonClientConfig, MonError};
use msgr::transport::{MemoryNet, Tcp, Transport};
use msgr::{
    dispatch, EntityAddrvec, EntityType, Messenger, NotReady, Options, Policy, PolicySet,
    ProtocolError,
};

/// A cluster's keys: client.admin's and the OSDs' and monitors' secrets.
struct Keys {
    server: Arc<KeyServer>,
    rng: Arc<SeededRandom>,
}

impl Keys {
    fn new() -> Keys {
        let rng = Arc::new(SeededRandom::new(14));
        let mut ring = Keyring::default();
        for n in ["client.admin", "osd.", "mon."] {
            let key = CryptoKey::random(KeyKind::Aes128, Default::default(), &*rng);
            ring.insert(
                n.parse().unwrap(),
                KeyringEntry {
                    key,
                    caps: Default::default(),
                },
            );
        }
        Keys {
            server: Arc::new(KeyServer::new(ring)),
            rng,
        }
    }

    /// A cephx server for daemons of `service`, allowing these modes.
    fn daemon(&self, service: EntityType, modes: &[ConMode]) -> Arc<dyn AuthProvider> {
        let clock = msgr::auth::system_clock();
        let mut s = CephxServer::new(self.server.clone(), service, self.rng.clone(), clock);
        s.service_modes = modes.to_vec();
        s.mon_modes = modes.to_vec();
        Arc::new(CephxProvider {
            client: None,
            server: Some(Arc::new(s)),
        })
    }

    /// client.admin with `key`, offering `modes`.
    fn client(&self, key: CryptoKey, modes: &[ConMode]) -> Arc<CephxClient> {
        let admin = msgr::AuthName::client_admin();
        let clock = msgr::auth::system_clock();
        let mut c = CephxClient::new(admin, key, self.rng.clone(), clock);
        c.service_modes = modes.to_vec();
        c.mon_modes = modes.to_vec();
        Arc::new(c)
    }

    /// client.admin with its key and a ticket for the OSDs, as a monitor
    /// session would have fetched (global id 1: the messenger is
    /// client.1).
    fn client_with_osd_ticket(&self, modes: &[ConMode]) -> Arc<dyn AuthProvider> {
        let admin = msgr::AuthName::client_admin();
        let key = self.server.entity_key(&admin).unwrap().clone();
        let c = self.client(key, modes);
        c.grant_from(&self.server, EntityType::OSD, 1, 3600)
            .unwrap();
        Arc::new(CephxProvider {
            client: Some(c),
            server: None,
        })
    }
}

fn options(name: &str, policy: Policy, auth: Arc<dyn AuthProvider>) -> Options {
    let mut o = Options::new(name.parse().unwrap(), PolicySet::new(policy), auth);
    o.shards = 1;
    o.shard_threads = false;
    o
}

/// A server messenger on `t` at `bind`, and its addresses.
async fn server<T: Transport>(t: T, bind: &str, o: Options) -> (Messenger<T>, EntityAddrvec) {
    let (d, _events) = dispatch::events();
    let m = Messenger::new(t, o, d);
    let addrs = m.bind(&bind.parse().unwrap()).await.unwrap();
    (m, addrs)
}

/// What ended a lossy client's connection to `addrs` before READY.
async fn refusal<T: Transport>(
    t: T,
    o: Options,
    addrs: &EntityAddrvec,
    peer: EntityType,
) -> NotReady {
    let (d, _events) = dispatch::events();
    let client = Messenger::new(t, o, d);
    let conn = client.connect(addrs, peer);
    let ended = tokio::time::timeout(Duration::from_secs(20), conn.ready())
        .await
        .expect("the connection ends")
        .expect_err("refused");
    client.shutdown().await;
    ended
}

/// Wrong key: the monitor refuses us, and says so (EACCES).
#[tokio::test]
async fn wrong_key() {
    let keys = Keys::new();
    let mon = options(
        "mon.0",
        Policy::stateless_server(),
        keys.daemon(EntityType::MON, &[ConMode::CRC]),
    );
    let (mon, addrs) = server(Tcp::default(), "v2:127.0.0.1:0", mon).await;
    let wrong = CryptoKey::random(KeyKind::Aes128, Default::default(), &*keys.rng);
    let cfg = MonClientConfig::new(
        vec![addrs],
        MonAuth::Cephx(keys.client(wrong, &[ConMode::CRC])),
    );
    let e = MonClient::connect(cfg).await.err().expect("refused");
    assert!(matches!(e, MonError::AuthFailed(_)), "{e:?}");
    let said = e.to_string();
    assert!(said.contains("the server refused client.admin"), "{said}");
    assert!(said.contains("EACCES: wrong key, unknown entity"), "{said}");
    mon.shutdown().await;
}

/// Unreachable monitors: every address tried, and why each failed.
#[tokio::test]
async fn unreachable_monitors() {
    // Two ports nothing listens on.
    let free = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        format!("v2:127.0.0.1:{port}")
            .parse::<EntityAddrvec>()
            .unwrap()
    };
    let mons = vec![free(), free()];
    let mut cfg = MonClientConfig::new(mons.clone(), MonAuth::None);
    cfg.connect_timeout = Duration::from_secs(4);
    cfg.hunt_interval = Duration::from_millis(200);
    let e = MonClient::connect(cfg).await.err().expect("unreachable");
    let MonError::Unreachable { tried, after } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*after, Duration::from_secs(4));
    assert_eq!(tried.len(), 2);
    let said = e.to_string();
    for m in &mons {
        assert!(said.contains(&m.to_string()), "{said}");
    }
    assert!(said.contains("refused"), "{said}");
    assert!(said.contains("check mon_host"), "{said}");
}

/// A peer that allows only secure mode refuses our crc: both named.
#[tokio::test]
async fn mode_refused() {
    let keys = Keys::new();
    let t = MemoryNet::new();
    let osd = options(
        "osd.0",
        Policy::stateless_server(),
        keys.daemon(EntityType::OSD, &[ConMode::SECURE]),
    );
    let (osd, addrs) = server(t.clone(), "v2:10.0.0.1:6800", osd).await;
    let client = options(
        "client.1",
        Policy::lossy_client(),
        keys.client_with_osd_ticket(&[ConMode::CRC]),
    );
    let ended = refusal(t, client, &addrs, EntityType::OSD).await;
    let Some(ProtocolError::Auth(AuthError::ModeRefused { offered, allowed })) = &ended.last_fault
    else {
        panic!("{ended:?}")
    };
    assert_eq!(
        (offered.as_slice(), allowed.as_slice()),
        (&[ConMode::CRC][..], &[ConMode::SECURE][..])
    );
    let said = ended.to_string();
    assert!(
        said.contains("the peer allows connection mode secure, we offered crc"),
        "{said}"
    );
    assert!(said.contains("ms_client_mode"), "{said}");
    osd.shutdown().await;
}

/// Features: a peer requiring one we do not offer (msgr2 and msgr1), and
/// over msgr1 a peer lacking one our policy requires.
#[tokio::test]
async fn features_refused_and_missing() {
    const BIT: u64 = 1 << 62;
    let t = MemoryNet::new();
    let mut demanding = Policy::stateless_server();
    demanding.features_required |= BIT;
    let mut lacking = Policy::lossy_client();
    lacking.features_supported &= !BIT;
    let none = || Arc::new(NoneProvider) as Arc<dyn AuthProvider>;
    for bind in ["v2:10.0.0.1:6800", "v1:10.0.0.1:6801"] {
        let (osd, addrs) = server(t.clone(), bind, options("osd.0", demanding, none())).await;
        let ended = refusal(
            t.clone(),
            options("client.1", lacking, none()),
            &addrs,
            EntityType::OSD,
        )
        .await;
        let missing = match &ended.last_fault {
            Some(ProtocolError::FeaturesRefused { missing }) => *missing,
            _ => panic!("{bind}: {ended:?}"),
        };
        assert_eq!(missing & BIT, BIT, "{bind}");
        let said = ended.to_string();
        assert!(said.contains("the peer requires features"), "{said}");
        assert!(said.contains("that we do not offer"), "{said}");
        osd.shutdown().await;
    }

    // msgr1: we require what the server lacks.
    let mut old = Policy::stateless_server();
    old.features_supported &= !BIT;
    let (osd, addrs) = server(t.clone(), "v1:10.0.0.2:6801", options("osd.0", old, none())).await;
    let mut requiring = Policy::lossy_client();
    requiring.features_required |= BIT;
    let ended = refusal(
        t,
        options("client.1", requiring, none()),
        &addrs,
        EntityType::OSD,
    )
    .await;
    let Some(ProtocolError::MissingFeatures { missing }) = &ended.last_fault else {
        panic!("{ended:?}")
    };
    assert_eq!(missing & BIT, BIT);
    assert!(
        ended.to_string().contains("the peer lacks features"),
        "{ended}"
    );
    osd.shutdown().await;
}

/// A peer of another type than the one we connected to.
#[tokio::test]
async fn wrong_peer_type() {
    let t = MemoryNet::new();
    let none = Arc::new(NoneProvider);
    let (osd, addrs) = server(
        t.clone(),
        "v2:10.0.0.1:6800",
        options("osd.0", Policy::stateless_server(), none.clone()),
    )
    .await;
    let ended = refusal(
        t,
        options("client.1", Policy::lossy_client(), none),
        &addrs,
        EntityType::MON,
    )
    .await;
    assert!(
        matches!(
            ended.last_fault,
            Some(ProtocolError::PeerTypeMismatch { .. })
        ),
        "{ended:?}"
    );
    assert!(
        ended
            .to_string()
            .contains("peer is a osd but we connected to a mon"),
        "{ended}"
    );
    osd.shutdown().await;
}

/// An OSD address nothing listens on: the socket's own error.
#[tokio::test]
async fn unreachable_peer() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addrs: EntityAddrvec = format!("v2:127.0.0.1:{port}/1").parse().unwrap();
    let o = options("client.1", Policy::lossy_client(), Arc::new(NoneProvider));
    let ended = refusal(Tcp::default(), o, &addrs, EntityType::OSD).await;
    assert!(
        matches!(
            &ended.last_fault,
            Some(ProtocolError::Transport {
                kind: std::io::ErrorKind::ConnectionRefused,
                ..
            })
        ),
        "{ended:?}"
    );
    assert!(ended.to_string().contains("Connection refused"), "{ended}");
}

/// A new directory in the temporary directory, under a random name, that
/// only this user may enter: creation fails rather than reuse one someone
/// else made first, where a write of the keyring would follow their
/// symlink or they would read it.
fn private_dir(prefix: &str) -> std::path::PathBuf {
    use std::hash::{BuildHasher, Hasher};
    use std::os::unix::fs::DirBuilderExt;
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let dir = std::env::temp_dir().join(format!("{prefix}-{random:016x}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("a new private directory");
    dir
}

/// A keyring without the entity: which one, where we looked, what to do.
#[test]
fn keyring_without_the_entity() {
    let dir = private_dir("msgr-errors");
    let keyring = dir.join("keyring");
    std::fs::write(
        &keyring,
        "[client.admin]\n\tkey = AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==\n",
    )
    .unwrap();
    let conf = dir.join("ceph.conf");
    std::fs::write(
        &conf,
        format!(
            "[global]\nmon_host = v2:127.0.0.1:3300\nkeyring = {}\nauth_client_required = cephx\n",
            keyring.display()
        ),
    )
    .unwrap();
    let mut opts = ClusterOpts::default();
    let conf_path = conf.display().to_string();
    opts.take("-c", || Ok(conf_path.clone())).unwrap();
    opts.take("-n", || Ok("client.nobody".into())).unwrap();
    let e = Identity::load(&opts).err().expect("no key");
    assert!(
        matches!(&e, IdentityError::NoKey { entity, .. } if entity == "client.nobody"),
        "{e:?}"
    );
    let said = e.to_string();
    assert!(said.contains(&keyring.display().to_string()), "{said}");
    assert!(said.contains("give one with -k"), "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}
