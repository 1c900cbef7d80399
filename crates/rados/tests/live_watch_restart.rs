//! A watch survives its OSD restarting (the connection resets, the OSD
//! goes down and up in new maps): it registers again (RECONNECT), stays
//! confirmed (`watch_check`), and a `rados notify` after the restart still
//! reaches it and gets our reply. It restarts an OSD, so it runs only
//! where the cluster is the test's own: scripts/interop/rados.sh sets
//! `MSGR_TEST_OSD_RESTART`, a command restarting the OSD whose id it is
//! given (never set it for a shared cluster).

mod support;

use std::time::Duration;

use bytes::Bytes;
use msgr_rados::WatchEvent;
use support::live::{connect, rados_ok, unique};

const POOL: &str = "test";

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_watch_survives_its_osd_restarting() {
    let Ok(restart) = std::env::var("MSGR_TEST_OSD_RESTART") else {
        eprintln!("not run: MSGR_TEST_OSD_RESTART is not set (scripts/interop/rados.sh sets it on its own cluster)");
        return;
    };
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("watch-restart");
    io.write_full(name.as_bytes(), Bytes::from_static(b"watched"))
        .await
        .expect("written");
    let mut w = io.watch(name.as_bytes()).await.expect("watching");
    let map = rados.osdmap();
    let pool = map.pool_id(POOL).expect("pool");
    let osd = map
        .place(pool, name.as_bytes(), b"")
        .expect("placed")
        .osds
        .acting_primary;
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{restart} \"$@\""))
        .arg("sh")
        .arg(osd.to_string())
        .output()
        .expect("the restart command runs");
    assert!(out.status.success(), "restarting osd.{osd}: {out:?}");
    // Back up in a map we have, and the watch confirmed since.
    for _ in 0..600 {
        if rados.osdmap().is_up(osd) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(rados.osdmap().is_up(osd), "osd.{osd} never came back up");
    let mut confirmed = false;
    for _ in 0..300 {
        match w.check() {
            Ok(age) if age < Duration::from_secs(6) => {
                confirmed = true;
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("the watch was lost over the restart: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(confirmed, "the watch was never confirmed again");
    let task = tokio::spawn(async move {
        loop {
            match w.next_event().await {
                Some(WatchEvent::Notify {
                    notify_id, payload, ..
                }) => {
                    w.notify_ack(notify_id, b"still here").await.expect("acked");
                    w.unwatch().await.expect("unwatched");
                    return payload;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    });
    let n = name.clone();
    let out = tokio::task::spawn_blocking(move || rados_ok(&["-p", POOL, "notify", &n, "after"]))
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&out).into_owned();
    assert!(out.contains("|still here|"), "rados notify printed {out}");
    assert_eq!(task.await.unwrap(), &b"\x05\0\0\0after"[..]);
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}
