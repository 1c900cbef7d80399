//! The monitor client against a live Ceph monitor with cephx. Ignored by
//! plain `cargo test`: scripts/interop/clusters.sh runs them against fresh
//! Ceph 16 and Ceph 20 clusters, with `MSGR_TEST_CEPH_CONF` naming a
//! ceph.conf whose [client] section names the keyring (and the cluster set
//! up with `auth_allow_insecure_global_id_reclaim = false`), over msgr2,
//! and over msgr1 with `CEPH_ARGS="--ms_bind_msgr2=false"`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::cephx::{CephxClient, Keyring};
use msgr_auth::SystemRandom;
use msgr_config::{Config, ConfigOptions, Env};
use msgr_encoding::EntityType;
use msgr_monc::{MonAuth, MonClient, MonClientConfig};

const OSD: u32 = EntityType::OSD.0 as u32;
const MON: u32 = EntityType::MON.0 as u32;
const MGR: u32 = EntityType::MGR.0 as u32;

fn setup(want: u32) -> (MonClientConfig, Arc<CephxClient>) {
    setup_with_clock(want, msgr_auth::system_clock())
}

fn setup_with_clock(want: u32, clock: msgr_auth::Clock) -> (MonClientConfig, Arc<CephxClient>) {
    let conf = std::env::var("MSGR_TEST_CEPH_CONF").expect(
        "MSGR_TEST_CEPH_CONF names the cluster's ceph.conf (see scripts/interop/clusters.sh)",
    );
    let opts = ConfigOptions {
        conf: Some(conf),
        ..Default::default()
    };
    let cfg = Config::load(&opts, &Env::from_process()).unwrap();
    let path = cfg
        .keyring_paths()
        .into_iter()
        .find(|p| p.exists())
        .expect("a keyring");
    let ring = Keyring::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let key = ring.get(&cfg.name).expect("our key").key.clone();
    let cx = Arc::new(CephxClient::new(
        cfg.name.clone(),
        key,
        Arc::new(SystemRandom),
        clock,
    ));
    cx.set_want(want);
    let mut mc = MonClientConfig::new(cfg.mon_host().unwrap(), MonAuth::Cephx(cx.clone()));
    // CEPH_ARGS="--ms_bind_msgr2=false": the same tests over msgr1 (MAuth).
    mc.msgr2 = cfg.get("ms_bind_msgr2").as_deref() != Some("false");
    (mc, cx)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn status_ok(mc: &MonClient) {
    let r = mc
        .command(
            r#"{"prefix": "status", "format": "json"}"#,
            Bytes::new(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(r.r, 0, "{}", r.rs);
    assert!(String::from_utf8_lossy(&r.output).contains("\"fsid\""));
}

#[test]
#[ignore = "needs a live cluster: scripts/interop/clusters.sh"]
fn service_tickets_come_by_mauth_when_wanted_later() {
    rt().block_on(async {
        let (cfg, cx) = setup(MON);
        let mc = MonClient::connect(cfg).await.unwrap();
        assert!(cx.ticket(EntityType::OSD).is_none(), "not asked for yet");
        // Now ask: the tick sends MAuth (GET_PRINCIPAL_SESSION_KEY).
        cx.set_want(MON | OSD | MGR);
        let deadline = Instant::now() + Duration::from_secs(15);
        while cx.need() != 0 {
            assert!(
                Instant::now() < deadline,
                "tickets never arrived (need {:#x})",
                cx.need()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(cx.ticket(EntityType::OSD).is_some());
        assert!(cx.ticket(EntityType::MGR).is_some());
        status_ok(&mc).await;
        mc.shutdown().await;
    });
}

#[test]
#[ignore = "needs a live cluster: scripts/interop/clusters.sh"]
fn a_new_session_reclaims_the_global_id_with_the_old_ticket() {
    rt().block_on(async {
        let (cfg, cx) = setup(MON | OSD | MGR);
        let msgr1 = !cfg.msgr2;
        let mc = MonClient::connect(cfg).await.unwrap();
        assert_eq!(mc.is_msgr1(), msgr1, "the session speaks what was asked");
        let gid = cx.global_id();
        assert!(gid > 0);
        for _ in 0..2 {
            mc.reconnect(Duration::from_secs(20)).await.unwrap();
            assert_eq!(cx.global_id(), gid, "the global id survives a new session");
            status_ok(&mc).await;
        }
        mc.shutdown().await;
    });
}

#[test]
#[ignore = "needs a live cluster: scripts/interop/clusters.sh"]
fn versions_subscriptions_and_a_command_across_a_session_drop() {
    rt().block_on(async {
        let (mut cfg, _cx) = setup(MON | OSD | MGR);
        cfg.subscribe
            .push(("osdmap".into(), msgr_messages::SUBSCRIBE_ONETIME));
        let mc = MonClient::connect(cfg).await.unwrap();
        let (newest, oldest) = mc
            .get_version("osdmap", Duration::from_secs(20))
            .await
            .unwrap();
        assert!(newest >= oldest && newest > 0, "{newest} {oldest}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while mc.osdmap_epoch() == 0 {
            assert!(
                Instant::now() < deadline,
                "no MOSDMap for the osdmap subscription"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(mc.osdmap_epoch() as u64 <= newest);
        // A command whose session is dropped under it is sent again on the
        // next session and answered.
        let cmd = mc.command(
            r#"{"prefix": "mon dump", "format": "json"}"#,
            Bytes::new(),
            Duration::from_secs(30),
        );
        let drop_it = async {
            mc.reconnect(Duration::from_secs(20)).await.unwrap();
        };
        let (r, ()) = tokio::join!(cmd, drop_it);
        let r = r.unwrap();
        assert_eq!(r.r, 0, "{}", r.rs);
        assert!(String::from_utf8_lossy(&r.output).contains("\"mons\""));
        mc.shutdown().await;
    });
}

#[test]
#[ignore = "needs a live cluster: scripts/interop/clusters.sh"]
fn the_auth_ticket_is_renewed_over_mauth_when_due() {
    use std::sync::atomic::{AtomicU32, Ordering};
    rt().block_on(async {
        // Our clock, which the test moves 60 hours on: past the AUTH
        // ticket's renewal point (3/4 of its 72 hours), and past every
        // service ticket's expiry.
        let skew = Arc::new(AtomicU32::new(0));
        let sys = msgr_auth::system_clock();
        let s2 = skew.clone();
        let clock: msgr_auth::Clock = Arc::new(move || {
            let mut t = sys();
            t.sec += s2.load(Ordering::Relaxed);
            t
        });
        let (cfg, cx) = setup_with_clock(MON | OSD | MGR, clock);
        let mc = MonClient::connect(cfg).await.unwrap();
        let old = cx.ticket(EntityType::AUTH).unwrap();
        assert_eq!(cx.need(), 0);
        skew.store(60 * 3600, Ordering::Relaxed);
        assert_ne!(cx.need() & EntityType::AUTH.0 as u32, 0);
        // The tick renews: GET_AUTH_SESSION_KEY with the old ticket; the
        // new AUTH ticket comes back sealed under the old session key.
        let deadline = Instant::now() + Duration::from_secs(15);
        while cx.need() != 0 {
            assert!(
                Instant::now() < deadline,
                "not renewed (need {:#x})",
                cx.need()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let new = cx.ticket(EntityType::AUTH).unwrap();
        assert_ne!(new.session_key, old.session_key);
        status_ok(&mc).await;
        mc.shutdown().await;
    });
}

#[test]
#[ignore = "needs a live cluster: scripts/interop/clusters.sh"]
fn hunting_passes_over_monitors_that_do_not_answer() {
    rt().block_on(async {
        let (mut cfg, _cx) = setup(MON | OSD | MGR);
        // Two monitors that refuse connections, then the real one: hunting
        // one at a time, the client gets past them.
        let dead: Vec<msgr_encoding::EntityAddrvec> = ["v2:127.0.0.1:1", "v2:127.0.0.1:2"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        cfg.mons = dead.into_iter().chain(cfg.mons).collect();
        cfg.hunt_parallel = 1;
        cfg.hunt_interval = Duration::from_millis(500);
        let t0 = Instant::now();
        let mc = MonClient::connect(cfg).await.unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10));
        status_ok(&mc).await;
        mc.shutdown().await;
    });
}
