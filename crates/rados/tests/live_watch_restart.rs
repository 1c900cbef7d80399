//! A watch survives its OSD restarting (the connection resets, the OSD
//! goes down and up in new maps): it registers again (RECONNECT), stays
//! confirmed (`watch_check`), and a `rados notify` after the restart still
//! reaches it and gets our reply. A notify the OSD accepted before it
//! restarted is sent again and ends with the watcher's reply (the old
//! OSD's end of it never comes). These restart an OSD, so they run only
//! where the cluster is the test's own: scripts/interop/rados.sh sets
//! `MSGR_TEST_OSD_RESTART`, a command restarting the OSD whose id it is
//! given (never set it for a shared cluster).

mod support;

use std::time::Duration;

use bytes::Bytes;
use msgr_rados::WatchEvent;
use support::live::{connect, rados_ok, unique};

const POOL: &str = "test";

/// Restarts `osd` with the command `MSGR_TEST_OSD_RESTART` names, and
/// waits until our map has it up again.
async fn restart_osd(rados: &msgr_rados::Rados, restart: &str, osd: i32) {
    let cmd = format!("{restart} \"$@\"");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .arg("sh")
            .arg(osd.to_string())
            .output()
    })
    .await
    .unwrap()
    .expect("the restart command runs");
    assert!(out.status.success(), "restarting osd.{osd}: {out:?}");
    // Back up in a map we have.
    for _ in 0..600 {
        if rados.osdmap().is_up(osd) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(rados.osdmap().is_up(osd), "osd.{osd} never came back up");
}

/// The acting primary of object `name` in pool `test`.
fn primary(rados: &msgr_rados::Rados, name: &str) -> i32 {
    let map = rados.osdmap();
    let pool = map.pool_id(POOL).expect("pool");
    map.place(pool, name.as_bytes(), b"")
        .expect("placed")
        .osds
        .acting_primary
}

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
    let osd = primary(&rados, &name);
    restart_osd(&rados, &restart, osd).await;
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

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_notify_accepted_before_its_osd_restarts_is_sent_again() {
    let Ok(restart) = std::env::var("MSGR_TEST_OSD_RESTART") else {
        eprintln!("not run: MSGR_TEST_OSD_RESTART is not set (scripts/interop/rados.sh sets it on its own cluster)");
        return;
    };
    // A watcher and a notifier, each a client of its own.
    let (watcher, notifier) = (connect().await, connect().await);
    let io = watcher.ioctx(POOL).expect("pool test");
    let name = unique("notify-restart");
    io.write_full(name.as_bytes(), Bytes::from_static(b"watched"))
        .await
        .expect("written");
    let mut w = io.watch(name.as_bytes()).await.expect("watching");
    let nio = notifier.ioctx(POOL).expect("pool test");
    let n = name.clone();
    let notify = tokio::spawn(async move {
        nio.notify(n.as_bytes(), b"across", Duration::from_secs(60))
            .await
    });
    // The OSD accepted the notify (it reached the watcher), which is left
    // unanswered while the OSD restarts.
    let first = tokio::time::timeout(Duration::from_secs(30), w.next_event())
        .await
        .expect("the notify reached the watcher");
    let Some(WatchEvent::Notify { notify_id, .. }) = first else {
        panic!("expected a notify, got {first:?}");
    };
    let osd = primary(&watcher, &name);
    restart_osd(&watcher, &restart, osd).await;
    // Sent again (once per move of the PG while the OSD went down and came
    // back): the watcher gets it under new ids, and answers each, as an
    // application does; the notify ends with the answer.
    let mut notify = notify;
    let mut answered = 0;
    let reply = tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            tokio::select! {
                r = &mut notify => break r.unwrap(),
                e = w.next_event() => match e {
                    Some(WatchEvent::Notify { notify_id: id, payload, .. }) if id != notify_id => {
                        assert_eq!(payload, &b"across"[..]);
                        w.notify_ack(id, b"after the restart").await.expect("acked");
                        answered += 1;
                    }
                    Some(WatchEvent::Notify { .. }) => {}
                    other => panic!("the watch: {other:?}"),
                },
            }
        }
    })
    .await
    .expect("the notify ended")
    .expect("the notify succeeded");
    assert!(answered > 0, "the notify never came again");
    assert_eq!(reply.acks.len(), 1, "{reply:?}");
    assert_eq!(reply.acks[0].2, &b"after the restart"[..]);
    assert!(reply.timeouts.is_empty(), "{reply:?}");
    w.unwatch().await.expect("unwatched");
    io.remove(name.as_bytes()).await.expect("removed");
    watcher.shutdown().await;
    notifier.shutdown().await;
}
