//! Watch/notify against librados on a live cluster, both ways: Ceph's
//! `rados notify` and Python's `ioctx.notify` reach our watch and get our
//! acknowledgement; Python's and `rados`'s watches get our notify and we
//! collect their replies; a watcher that does not answer is reported as
//! timed out; our listing of watchers equals `rados listwatchers`; a
//! deleted object's watch is told it is lost (see tests/support/live.rs
//! for how these run).

mod support;

use std::time::Duration;

use bytes::Bytes;
use msgr_rados::{IoCtx, WatchEvent};
use support::live::{connect, msgr_cli, python, rados_cli, rados_ok, unique};

const POOL: &str = "test";

async fn create(io: &IoCtx, name: &str) {
    io.write_full(name.as_bytes(), Bytes::from_static(b"watched"))
        .await
        .expect("object written");
}

/// Waits until `name` has `n` watchers (a watch from another process).
async fn watchers(io: &IoCtx, name: &str, n: usize) {
    for _ in 0..200 {
        if io
            .list_watchers(name.as_bytes())
            .await
            .expect("listed")
            .len()
            == n
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never had {n} watchers");
}

/// Our watch: each notify acknowledged with `reply`, until the task ends.
fn acking(mut w: msgr_rados::Watch, reply: &'static [u8]) -> tokio::task::JoinHandle<Vec<Bytes>> {
    tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(e) = w.next_event().await {
            if let WatchEvent::Notify {
                notify_id, payload, ..
            } = e
            {
                got.push(payload);
                w.notify_ack(notify_id, reply).await.expect("acked");
                if got.len() == 2 {
                    break;
                }
            }
        }
        w.unwatch().await.expect("unwatched");
        got
    })
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn rados_and_python_notifies_reach_our_watch_and_get_our_reply() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("watch-ours");
    create(&io, &name).await;
    let w = io.watch(name.as_bytes()).await.expect("watching");
    let cookie = w.cookie();
    assert!(w.check().expect("confirmed") < Duration::from_secs(5));
    let task = acking(w, b"ack from msgr");
    let n = name.clone();
    let out = tokio::task::spawn_blocking(move || rados_ok(&["-p", POOL, "notify", &n, "hello"]))
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&out).into_owned();
    assert!(
        out.contains(&format!("cookie {cookie} : 13 bytes")) && out.contains("|ack from msgr|"),
        "rados notify printed {out}"
    );
    let n = name.clone();
    let py = tokio::task::spawn_blocking(move || {
        python(
            r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
print(io.notify(sys.argv[1], "from python", 10000))
"#,
            &[&n],
        )
    })
    .await
    .unwrap();
    assert!(py.status.success(), "python notify: {py:?}");
    let got = task.await.unwrap();
    // `rados notify` sends its message encoded as a string; Python raw.
    assert_eq!(got[0], &b"\x05\0\0\0hello"[..]);
    assert_eq!(got[1], &b"from python"[..]);
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn our_notify_collects_pythons_reply_and_reaches_rados_watch() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("watch-theirs");
    create(&io, &name).await;
    let n = name.clone();
    let py = tokio::task::spawn_blocking(move || {
        python(
            r#"
import os, sys, time, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
got = []
def cb(notify_id, notifier_id, watch_id, data):
    got.append(data)
    return b"python says hi"
w = io.watch(sys.argv[1], cb)
for _ in range(150):
    if got:
        break
    time.sleep(0.1)
time.sleep(1)
w.close()
print(got)
"#,
            &[&n],
        )
    });
    watchers(&io, &name, 1).await;
    let reply = io
        .notify(name.as_bytes(), b"ping from msgr", Duration::from_secs(10))
        .await
        .expect("notified");
    assert_eq!(reply.timeouts, vec![]);
    assert_eq!(reply.acks.len(), 1);
    assert_eq!(reply.acks[0].2, &b"python says hi"[..]);
    let py = py.await.unwrap();
    assert!(py.status.success(), "python watch: {py:?}");
    assert_eq!(
        String::from_utf8_lossy(&py.stdout).trim(),
        "[b'ping from msgr']"
    );

    // `rados watch` acks with the payload it got, and prints it.
    let n = name.clone();
    let theirs = tokio::task::spawn_blocking(move || {
        support::live::rados_cli_in_after(&["-p", POOL, "watch", &n], Duration::from_secs(6))
    });
    watchers(&io, &name, 1).await;
    let reply = io
        .notify(name.as_bytes(), b"to rados", Duration::from_secs(10))
        .await
        .expect("notified");
    assert_eq!(reply.acks.len(), 1);
    assert_eq!(reply.acks[0].2, &b"to rados"[..]);
    let out = theirs.await.unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.contains("NOTIFY cookie") && out.contains("|to rados|"),
        "rados watch printed {out}"
    );
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_watcher_that_does_not_answer_times_out_and_listings_agree() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("watch-silent");
    create(&io, &name).await;
    let mut silent = io.watch(name.as_bytes()).await.expect("watching");
    let answering = io.watch(name.as_bytes()).await.expect("watching");
    let task = acking(answering, b"here");
    // Our listing, rados's and our CLI's are the same lines.
    let ours: String = io
        .list_watchers(name.as_bytes())
        .await
        .expect("listed")
        .iter()
        .map(|w| {
            format!(
                "watcher={} client.{} cookie={}\n",
                w.addr, w.watcher_id, w.cookie
            )
        })
        .collect();
    let mut theirs: Vec<String> =
        String::from_utf8_lossy(&rados_ok(&["-p", POOL, "listwatchers", &name]))
            .lines()
            .map(str::to_string)
            .collect();
    let mut mine: Vec<String> = ours.lines().map(str::to_string).collect();
    theirs.sort();
    mine.sort();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine, theirs);
    let cli = msgr_cli(&["rados", "-p", POOL, "listwatchers", &name]);
    assert!(cli.status.success(), "{cli:?}");
    let mut cli: Vec<String> = String::from_utf8_lossy(&cli.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    cli.sort();
    assert_eq!(cli, theirs);

    let reply = io
        .notify(name.as_bytes(), b"anyone?", Duration::from_secs(3))
        .await
        .expect("notified");
    assert_eq!(reply.acks.len(), 1, "{reply:?}");
    assert_eq!(reply.acks[0].2, &b"here"[..]);
    assert_eq!(reply.timeouts.len(), 1, "{reply:?}");
    assert_eq!(reply.timeouts[0].1, silent.cookie());
    // The silent watch got the notify all the same.
    let e = silent.next_event().await.expect("an event");
    assert!(matches!(e, WatchEvent::Notify { .. }), "{e:?}");
    // And rados's notify reports it as timed out, failing.
    let out = rados_cli(&["-p", POOL, "notify", &name, "again"]);
    assert!(!out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "timeout client.{} cookie {}",
            reply.timeouts[0].0,
            silent.cookie()
        )),
        "{text}"
    );
    drop(task);
    silent.unwatch().await.expect("unwatched");
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_deleted_objects_watch_is_told_it_is_lost() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("watch-lost");
    create(&io, &name).await;
    let mut w = io.watch(name.as_bytes()).await.expect("watching");
    w.check().expect("confirmed");
    rados_ok(&["-p", POOL, "rm", &name]);
    let e = tokio::time::timeout(Duration::from_secs(30), w.next_event())
        .await
        .expect("told in time");
    assert_eq!(e, Some(WatchEvent::Error { err: -107 }));
    let err = w.check().expect_err("lost");
    assert!(
        matches!(err, msgr_rados::RadosError::Os { errno: -107, .. }),
        "{err}"
    );
    rados.shutdown().await;
}
