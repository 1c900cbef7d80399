//! An erasure-coded pool (rados.sh's `ec`: k=2, m=1, one shard an OSD)
//! against librados: whole writes, aligned appends and reads agree both
//! ways; what such a pool refuses (an unaligned append, a partial
//! overwrite, omap) fails with the OSD's error. Skipped, saying so, where
//! the cluster has no pool `ec` (see tests/support/live.rs for how these
//! run).

mod support;

use std::collections::BTreeMap;

use bytes::Bytes;
use support::live::{connect, rados_cli_in, rados_ok, unique};

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
