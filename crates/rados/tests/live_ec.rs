//! An erasure-coded pool (rados.sh's `ec`: k=2, m=1, one shard an OSD)
//! against librados: whole writes, aligned appends and reads agree both
//! ways; what such a pool refuses (an unaligned append, a partial
//! overwrite, omap) fails with the OSD's error. Skipped, saying so, where
//! the cluster has no pool `ec` (see tests/support/live.rs for how these
//! run).

mod support;

use std::collections::BTreeMap;

use bytes::Bytes;
use support::live::{connect, python_ok, rados_cli_in, rados_ok, unique};

const POOL: &str = "ec";
const EOPNOTSUPP: i32 = -95;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn an_ec_pool_agrees_with_rados_and_refuses_what_it_cannot_do() {
    let rados = connect().await;
    let Ok(io) = rados.ioctx(POOL) else {
        println!("not run: the cluster has no pool {POOL} (rados.sh makes one)");
        return;
    };
    assert!(
        io.requires_alignment().expect("the pool"),
        "EC without overwrites"
    );
    let align = io.required_alignment().expect("the pool") as usize;
    assert!(align > 0, "a stripe width");

    // Ours writes whole and appends a stripe; rados reads it.
    let ours = unique("ec-ours");
    let head = pattern(3 * align, 1);
    io.write_full(ours.as_bytes(), Bytes::from(head.clone()))
        .await
        .expect("write_full");
    let tail = pattern(align, 2);
    io.append(ours.as_bytes(), Bytes::from(tail.clone()))
        .await
        .expect("an aligned append");
    let mut want = head.clone();
    want.extend_from_slice(&tail);
    assert!(rados_ok(&["-p", POOL, "get", &ours, "-"]) == want);
    assert_eq!(
        io.stat(ours.as_bytes()).await.expect("stat").size,
        want.len() as u64
    );

    // What the pool refuses, with the OSD's errno.
    io.append(ours.as_bytes(), Bytes::from_static(b"x"))
        .await
        .expect("an append at an aligned end, of any length");
    let unaligned = io.append(ours.as_bytes(), Bytes::from_static(b"y")).await;
    assert_eq!(
        unaligned.as_ref().err().and_then(|e| e.errno()),
        Some(EOPNOTSUPP),
        "an append past an unaligned end: {unaligned:?}"
    );
    let overwrite = io.write(ours.as_bytes(), 1, Bytes::from_static(b"z")).await;
    assert_eq!(
        overwrite.as_ref().err().and_then(|e| e.errno()),
        Some(EOPNOTSUPP),
        "a partial overwrite: {overwrite:?}"
    );
    let omap = io
        .omap_set(
            ours.as_bytes(),
            &BTreeMap::from([("k".to_string(), Bytes::from_static(b"v"))]),
        )
        .await;
    assert_eq!(
        omap.as_ref().err().and_then(|e| e.errno()),
        Some(EOPNOTSUPP),
        "omap on EC: {omap:?}"
    );

    // rados writes; ours reads and stats it.
    let theirs = unique("ec-theirs");
    let data = pattern(5 * align + 123, 3);
    let put = rados_cli_in(&["-p", POOL, "put", &theirs, "-"], &data);
    assert!(put.status.success(), "{put:?}");
    assert!(io.read(theirs.as_bytes(), 0, 0).await.expect("read")[..] == data[..]);
    assert_eq!(
        io.stat(theirs.as_bytes()).await.expect("stat").size,
        data.len() as u64
    );

    for name in [&ours, &theirs] {
        io.remove(name.as_bytes()).await.expect("removed");
        let gone = io.stat(name.as_bytes()).await;
        assert_eq!(gone.err().and_then(|e| e.errno()), Some(-2));
    }
    rados.shutdown().await;
}

/// A monitor command through Python's `rados` module (librados's
/// `mon_command`, as the `ceph` CLI sends it): its output; it must succeed.
fn librados_mon(cmd: &str) -> String {
    let script = "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         r, out, rs = c.mon_command(sys.argv[1], b'')\n\
         assert r == 0, (r, rs)\n\
         sys.stdout.write(out.decode())\n";
    String::from_utf8(python_ok(script, &[cmd])).expect("utf-8")
}

/// An erasure-code profile and an EC pool made by ours are what librados
/// sees (`osd erasure-code-profile get`, `osd pool get`, `rados
/// put`/`get`), and a profile made through librados is what ours reads from
/// the map.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn ec_profiles_and_pools_made_by_one_are_seen_by_the_other() {
    let rados = connect().await;
    let profile = unique("ecprof");
    rados
        .erasure_code_profile_set(
            &profile,
            &[("k", "2"), ("m", "1"), ("crush-failure-domain", "osd")],
        )
        .await
        .expect("profile set");
    let got = librados_mon(&format!(
        r#"{{"prefix": "osd erasure-code-profile get", "name": "{profile}", "format": "json"}}"#
    ));
    for kv in [
        "\"k\":\"2\"",
        "\"m\":\"1\"",
        "\"crush-failure-domain\":\"osd\"",
    ] {
        assert!(got.contains(kv), "ceph reads {got}");
    }
    assert!(rados.erasure_code_profile_list().contains(&profile));

    let pool = unique("ecpool");
    let id = rados
        .pool_create_erasure(&pool, &profile, 8)
        .await
        .expect("EC pool created");
    assert_eq!(rados.pool_lookup(&pool), Some(id));
    let got = librados_mon(&format!(
        r#"{{"prefix": "osd pool get", "pool": "{pool}", "var": "erasure_code_profile", "format": "json"}}"#
    ));
    assert!(
        got.contains(&format!("\"erasure_code_profile\":\"{profile}\"")),
        "{got}"
    );
    let e = rados.pool_create_erasure(&pool, &profile, 8).await;
    assert_eq!(e.expect_err("exists").errno(), Some(-17));
    let e = rados
        .pool_create_erasure("never", "no-such-profile", 8)
        .await;
    assert_eq!(e.expect_err("no profile").errno(), Some(-2));
    // A pool uses it: the monitors keep it.
    let busy = rados.erasure_code_profile_remove(&profile).await;
    assert!(busy.is_err(), "a profile in use removed: {busy:?}");

    // Data both ways.
    let io = rados.ioctx(&pool).expect("the pool");
    assert!(io.requires_alignment().expect("the pool"));
    let data = pattern(2 * io.required_alignment().expect("pool") as usize, 7);
    io.write_full(b"ours", Bytes::from(data.clone()))
        .await
        .expect("written");
    assert!(rados_ok(&["-p", &pool, "get", "ours", "-"]) == data);
    let put = rados_cli_in(&["-p", &pool, "put", "theirs", "-"], &data);
    assert!(put.status.success(), "{put:?}");
    assert!(io.read(b"theirs", 0, 0).await.expect("read")[..] == data[..]);

    rados.pool_delete(&pool).await.expect("pool deleted");
    rados
        .erasure_code_profile_remove(&profile)
        .await
        .expect("profile removed");
    assert!(rados.erasure_code_profile_get(&profile).is_err());

    // librados makes one; ours reads it from the map.
    let theirs = unique("ecprof-librados");
    librados_mon(&format!(
        r#"{{"prefix": "osd erasure-code-profile set", "name": "{theirs}", "profile": ["k=3", "m=2"]}}"#
    ));
    rados.wait_for_latest_osdmap().await.expect("the map");
    let p = rados
        .erasure_code_profile_get(&theirs)
        .expect("their profile");
    assert_eq!((p["k"].as_str(), p["m"].as_str()), ("3", "2"));
    rados
        .erasure_code_profile_remove(&theirs)
        .await
        .expect("their profile removed");
    rados.shutdown().await;
}
