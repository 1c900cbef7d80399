//! The client's data path against librados on a live cluster: what one
//! writes the other reads, and a dropped request is cancelled (see
//! tests/support/live.rs for how these run).

mod support;

use std::time::Duration;

use bytes::Bytes;
use support::live::{connect, rados_cli_in, rados_ok, unique};

const POOL: &str = "test";

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn what_one_writes_the_other_reads() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let ours = unique("basic-ours");
    io.write_full(ours.as_bytes(), Bytes::from_static(b"written by msgr"))
        .await
        .expect("written");
    assert_eq!(
        rados_ok(&["-p", POOL, "get", &ours, "-"]),
        b"written by msgr"
    );
    let theirs = unique("basic-theirs");
    let put = rados_cli_in(&["-p", POOL, "put", &theirs, "-"], b"written by rados");
    assert!(put.status.success(), "{put:?}");
    assert_eq!(
        io.read(theirs.as_bytes(), 0, 0).await.expect("read"),
        &b"written by rados"[..]
    );
    rados.shutdown().await;
}

/// A write whose future is dropped while the cluster holds writes (`osd
/// pause`) never lands, even once the pause is lifted.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_dropped_write_never_lands() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("basic-dropped");
    let mon = |cmd: &'static str| {
        let mon = rados.mon();
        async move {
            let r = mon
                .command(cmd, Bytes::new(), Duration::from_secs(30))
                .await
                .expect("monitor command");
            assert_eq!(r.r, 0, "{cmd}: {}", r.rs);
        }
    };
    mon(r#"{"prefix": "osd pause"}"#).await;
    // Wait for the client to see the pause, so the write is held.
    let pausewr = msgr_osdmap::flag::PAUSEWR;
    while rados.osdmap().flags & pausewr == 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let write = io.write_full(name.as_bytes(), Bytes::from_static(b"late"));
    let gave_up = tokio::time::timeout(Duration::from_millis(500), write).await;
    mon(r#"{"prefix": "osd unpause"}"#).await;
    assert!(gave_up.is_err(), "the write waits while paused");
    while rados.osdmap().flags & pausewr != 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A later request to the same object goes after anything still queued
    // for it (ops on one object are ordered): it finds nothing.
    let e = io.stat(name.as_bytes()).await.expect_err("never written");
    assert_eq!(e.errno(), Some(-2), "{e}");
    rados.shutdown().await;
}

/// Set up as a librados program is (the file named, an option set), the
/// client connects, and an op timeout set as `rados_osd_op_timeout` holds
/// for each IoCtx: a read held by `osd pause` ends in ETIMEDOUT.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_client_set_up_as_librados_is_times_out_ops() {
    let conf = std::env::var("CEPH_CONF").expect("CEPH_CONF");
    let rados = msgr_rados::RadosConfig::new()
        .conf_read_file(&conf)
        .expect("ceph.conf")
        .conf_set("rados_osd_op_timeout", "2")
        .connect()
        .await
        .expect("connected");
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("basic-config");
    io.write_full(name.as_bytes(), Bytes::from_static(b"x"))
        .await
        .expect("written");
    let mon = rados.mon();
    let run = |cmd: &'static str| async move {
        let r = mon
            .command(cmd, Bytes::new(), Duration::from_secs(30))
            .await
            .expect("monitor command");
        assert_eq!(r.r, 0, "{cmd}: {}", r.rs);
    };
    run(r#"{"prefix": "osd pause"}"#).await;
    let pauserd = msgr_osdmap::flag::PAUSERD;
    while rados.osdmap().flags & pauserd == 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = io.read(name.as_bytes(), 0, 0).await;
    run(r#"{"prefix": "osd unpause"}"#).await;
    match r {
        Err(e) => assert_eq!(e.errno(), Some(-110), "{e}"),
        Ok(d) => panic!("a paused read answered {d:?}"),
    }
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}
