//! Object class calls and cls_lock against librados on a live cluster:
//! `exec` of real class methods (and EOPNOTSUPP for a class the OSDs lack)
//! answers as Python's `ioctx.execute` does; locks taken by us are seen
//! and refused by Ceph's `rados lock`, and the reverse; shared locks
//! coexist; unlock, break and expiry work both ways; `msgr rados lock`
//! prints what `rados lock` prints (see tests/support/live.rs for how
//! these run).

mod support;

use std::process::Output;
use std::time::Duration;

use bytes::Bytes;
use msgr_rados::lock::{Lock, LockType};
use msgr_rados::IoCtx;
use support::live::{connect, msgr_cli, python_ok, rados_cli, rados_ok, unique};

const POOL: &str = "test";
const EBUSY: i32 = -16;
const EEXIST: i32 = -17;
const ENOENT: i32 = -2;
const EOPNOTSUPP: i32 = -95;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A `rados` that must fail as `errno` does: exit status 1 and the errno
/// in its message, as `do_lock_cmd` reports it.
fn refused(out: Output, errno: i32) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = text(&out.stderr);
    assert!(err.contains(&format!("({})", -errno)), "{err}");
}

/// Our `msgr rados -p POOL lock ...`.
fn msgr_lock(args: &[&str]) -> Output {
    let mut all = vec!["rados", "-p", POOL, "lock"];
    all.extend_from_slice(args);
    msgr_cli(&all)
}

fn msgr_ok(args: &[&str]) -> String {
    let out = msgr_lock(args);
    assert!(out.status.success(), "msgr rados lock {args:?}: {out:?}");
    text(&out.stdout)
}

fn rados_lock(args: &[&str]) -> String {
    let mut all = vec!["-p", POOL, "lock"];
    all.extend_from_slice(args);
    text(&rados_ok(&all))
}

fn rados_lock_out(args: &[&str]) -> Output {
    let mut all = vec!["-p", POOL, "lock"];
    all.extend_from_slice(args);
    rados_cli(&all)
}

async fn new_object(io: &IoCtx, what: &str) -> String {
    let name = unique(what);
    io.write_full(name.as_bytes(), Bytes::from_static(b"x"))
        .await
        .expect("written");
    name
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn exec_runs_class_methods_as_librados_does() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = new_object(&io, "lock-exec").await;
    // cls_hello (in the OSDs' default class list): what Python's
    // librados gets for the same call.
    let ours = io
        .exec(obj.as_bytes(), "hello", "say_hello", b"msgr")
        .await
        .expect("hello.say_hello");
    assert_eq!(&ours[..], b"Hello, msgr!");
    let theirs = python_ok(
        "import os, sys, rados\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx('test')\n\
         ret, out = io.execute(sys.argv[1], 'hello', 'say_hello', b'msgr')\n\
         sys.stdout.buffer.write(out)\n\
         io.close(); c.shutdown()\n",
        &[&obj],
    );
    assert_eq!(&ours[..], &theirs[..]);
    // A writing method through a write operation: hello.record_hello
    // creates the object with its greeting, which rados reads.
    let fresh = unique("lock-exec-record");
    io.exec_write(fresh.as_bytes(), "hello", "record_hello", b"rados")
        .await
        .expect("hello.record_hello");
    assert_eq!(
        rados_ok(&["-p", POOL, "get", &fresh, "-"]),
        b"Hello, rados!"
    );
    // It only greets new objects: EEXIST the second time.
    let e = io
        .exec_write(fresh.as_bytes(), "hello", "record_hello", b"rados")
        .await
        .expect_err("exists");
    assert_eq!(e.errno(), Some(EEXIST), "{e}");
    io.remove(fresh.as_bytes()).await.expect("removed");
    // cls_lock's list_locks through exec: nothing yet.
    let out = io
        .exec(obj.as_bytes(), "lock", "list_locks", &[])
        .await
        .expect("lock.list_locks");
    assert!(msgr_rados::lock::decode_list_locks(&out)
        .unwrap()
        .is_empty());
    // A class no OSD has: the errno librados gets (EPERM where the OSDs'
    // osd_class_load_list does not name it, EOPNOTSUPP where it would be
    // loaded but is not installed); a method the lock class lacks:
    // EOPNOTSUPP.
    let e = io
        .exec(obj.as_bytes(), "msgr_no_such_class", "m", b"")
        .await
        .expect_err("no such class");
    let theirs = python_ok(
        "import os, sys, rados\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx('test')\n\
         try:\n\
         \x20   io.execute(sys.argv[1], 'msgr_no_such_class', 'm', b'')\n\
         \x20   print('no error')\n\
         except rados.Error as e:\n\
         \x20   print(-e.errno)\n\
         io.close(); c.shutdown()\n",
        &[&obj],
    );
    assert_eq!(text(&theirs).trim(), e.errno().unwrap().to_string(), "{e}");
    assert!([EOPNOTSUPP, -1].contains(&e.errno().unwrap()), "{e}");
    let e = io
        .exec(obj.as_bytes(), "lock", "no_such_method", b"")
        .await
        .expect_err("no such method");
    assert_eq!(e.errno(), Some(EOPNOTSUPP), "{e}");
    // A name the op cannot carry fails here, before any request.
    let e = io
        .exec(obj.as_bytes(), &"c".repeat(256), "m", b"")
        .await
        .expect_err("too long");
    assert_eq!(e.errno(), Some(-22), "{e}");
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn exclusive_locks_are_seen_and_refused_both_ways() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = unique("lock-excl");
    // Ours, on an object that does not exist yet: taking it creates it.
    let lock = Lock::exclusive("L")
        .cookie("c1")
        .tag("")
        .description("taken by msgr")
        .duration(Duration::from_secs(600));
    io.lock(obj.as_bytes(), &lock).await.expect("locked");
    let info = io.lock_info(obj.as_bytes(), "L").await.expect("info");
    assert_eq!(info.kind, LockType::Exclusive);
    assert_eq!(info.lockers.len(), 1);
    let me = info.lockers[0].locker;
    assert_eq!(info.lockers[0].cookie, "c1");
    assert_eq!(info.lockers[0].description, "taken by msgr");
    // rados sees it as we do, and our CLI prints what it prints.
    let theirs = rados_lock(&["info", &obj, "L"]);
    assert!(theirs.contains(&format!("\"name\":\"{me}\"")), "{theirs}");
    assert!(
        theirs.contains("\"description\":\"taken by msgr\""),
        "{theirs}"
    );
    assert_eq!(msgr_ok(&["info", &obj, "L"]), theirs);
    assert_eq!(
        rados_lock(&["list", &obj]),
        format!("{{\"objname\":\"{obj}\",\"locks\":[{{\"name\":\"L\"}}]}}")
    );
    assert_eq!(msgr_ok(&["list", &obj]), rados_lock(&["list", &obj]));
    assert_eq!(io.list_locks(obj.as_bytes()).await.unwrap(), ["L"]);
    // rados is refused (another client: EBUSY), whatever its cookie.
    refused(
        rados_lock_out(&["get", &obj, "L", "--lock-cookie", "c1"]),
        EBUSY,
    );
    refused(
        rados_lock_out(&["get", &obj, "L", "--lock-cookie", "c9"]),
        EBUSY,
    );
    // We hold it with c1 already: EEXIST, unless renewing.
    let e = io.lock(obj.as_bytes(), &lock).await.expect_err("held");
    assert_eq!(e.errno(), Some(EEXIST), "{e}");
    io.lock(obj.as_bytes(), &lock.clone().may_renew())
        .await
        .expect("renewed");
    // Another cookie of ours is another locker: EBUSY.
    let e = io
        .lock(obj.as_bytes(), &Lock::exclusive("L").cookie("c2"))
        .await
        .expect_err("exclusive");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    // Unlock with a cookie we do not hold: ENOENT; with ours, gone.
    let e = io
        .unlock(obj.as_bytes(), "L", "c2")
        .await
        .expect_err("not held");
    assert_eq!(e.errno(), Some(ENOENT), "{e}");
    io.unlock(obj.as_bytes(), "L", "c1")
        .await
        .expect("unlocked");
    assert!(rados_lock(&["info", &obj, "L"]).contains("\"lockers\":[]"));

    // The reverse: rados locks, we are refused and see its locker.
    rados_lock(&[
        "get",
        &obj,
        "R",
        "--lock-cookie",
        "rc",
        "--lock-description",
        "taken by rados",
    ]);
    let e = io
        .lock(obj.as_bytes(), &Lock::exclusive("R").cookie("rc"))
        .await
        .expect_err("rados holds it");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    let info = io.lock_info(obj.as_bytes(), "R").await.expect("info");
    assert_eq!(info.lockers.len(), 1);
    let them = info.lockers[0].locker;
    assert_ne!(them, me);
    assert_eq!(info.lockers[0].cookie, "rc");
    assert_eq!(info.lockers[0].description, "taken by rados");
    assert_eq!(
        msgr_ok(&["info", &obj, "R"]),
        rados_lock(&["info", &obj, "R"])
    );
    // Breaking with the wrong cookie: ENOENT; with its own: broken.
    let e = io
        .break_lock(obj.as_bytes(), "R", &them, "nope")
        .await
        .expect_err("wrong cookie");
    assert_eq!(e.errno(), Some(ENOENT), "{e}");
    io.break_lock(obj.as_bytes(), "R", &them, "rc")
        .await
        .expect("broken");
    assert!(rados_lock(&["info", &obj, "R"]).contains("\"lockers\":[]"));

    // rados breaks ours.
    io.lock(obj.as_bytes(), &Lock::exclusive("B").cookie("bc"))
        .await
        .expect("locked");
    rados_lock(&["break", &obj, "B", &me.to_string(), "--lock-cookie", "bc"]);
    let info = io.lock_info(obj.as_bytes(), "B").await.expect("info");
    assert!(info.lockers.is_empty(), "{info:?}");
    let mut names = io.list_locks(obj.as_bytes()).await.unwrap();
    names.sort();
    assert_eq!(names, ["B", "L", "R"]);
    io.remove(obj.as_bytes()).await.expect("removed");
    // No object: ENOENT, for rados and for us.
    refused(rados_lock_out(&["info", &obj, "L"]), ENOENT);
    let e = io.lock_info(obj.as_bytes(), "L").await.expect_err("gone");
    assert_eq!(e.errno(), Some(ENOENT), "{e}");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn shared_locks_coexist_and_tags_must_match() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = new_object(&io, "lock-shared").await;
    io.lock(
        obj.as_bytes(),
        &Lock::shared("S")
            .cookie("ours")
            .tag("T")
            .description("\"quoted\" / é\ttab"),
    )
    .await
    .expect("shared");
    rados_lock(&[
        "get",
        &obj,
        "S",
        "--lock-type",
        "shared",
        "--lock-cookie",
        "theirs",
        "--lock-tag",
        "T",
    ]);
    let info = io.lock_info(obj.as_bytes(), "S").await.expect("info");
    assert_eq!(info.kind, LockType::Shared);
    assert_eq!(info.tag, "T");
    let mut cookies: Vec<&str> = info.lockers.iter().map(|l| l.cookie.as_str()).collect();
    cookies.sort();
    assert_eq!(cookies, ["ours", "theirs"]);
    let theirs = rados_lock(&["info", &obj, "S"]);
    assert!(
        theirs.contains("\"type\":\"shared\",\"tag\":\"T\""),
        "{theirs}"
    );
    assert_eq!(msgr_ok(&["info", &obj, "S"]), theirs);
    let pretty = ["info", obj.as_str(), "S", "-f", "json-pretty"];
    assert_eq!(msgr_ok(&pretty), rados_lock(&pretty));
    let pretty = ["list", obj.as_str(), "-f", "json-pretty"];
    assert_eq!(msgr_ok(&pretty), rados_lock(&pretty));
    // Exclusive, or another tag: refused to both.
    refused(
        rados_lock_out(&["get", &obj, "S", "--lock-cookie", "x"]),
        EBUSY,
    );
    refused(
        rados_lock_out(&[
            "get",
            &obj,
            "S",
            "--lock-type",
            "shared",
            "--lock-cookie",
            "y",
            "--lock-tag",
            "other",
        ]),
        EBUSY,
    );
    let e = io
        .lock(obj.as_bytes(), &Lock::shared("S").cookie("z").tag("other"))
        .await
        .expect_err("tag");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    let e = io
        .lock(obj.as_bytes(), &Lock::exclusive("S").cookie("z").tag("T"))
        .await
        .expect_err("type");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    // Our CLI takes a third share; rados sees it.
    msgr_ok(&[
        "get",
        &obj,
        "S",
        "--lock-type",
        "shared",
        "--lock-cookie",
        "cli",
        "--lock-tag",
        "T",
    ]);
    assert!(rados_lock(&["info", &obj, "S"]).contains("\"cookie\":\"cli\""));
    // And our CLI is refused as rados is, exit status 1.
    let out = msgr_lock(&["get", &obj, "S", "--lock-cookie", "ex"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("EBUSY"), "{out:?}");
    io.unlock(obj.as_bytes(), "S", "ours")
        .await
        .expect("unlocked");
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn locks_expire_after_their_duration() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = new_object(&io, "lock-expiry").await;
    io.lock(
        obj.as_bytes(),
        &Lock::exclusive("E")
            .cookie("e")
            .duration(Duration::from_secs(2)),
    )
    .await
    .expect("locked");
    let info = io.lock_info(obj.as_bytes(), "E").await.expect("info");
    assert_ne!(info.lockers[0].expiration.sec, 0);
    assert_eq!(
        msgr_ok(&["info", &obj, "E"]),
        rados_lock(&["info", &obj, "E"])
    );
    refused(
        rados_lock_out(&["get", &obj, "E", "--lock-cookie", "r"]),
        EBUSY,
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Expired: the OSD drops it, and rados takes the lock, for 1 second.
    assert!(io
        .lock_info(obj.as_bytes(), "E")
        .await
        .expect("info")
        .lockers
        .is_empty());
    rados_lock(&[
        "get",
        &obj,
        "E",
        "--lock-cookie",
        "r",
        "--lock-duration",
        "1",
    ]);
    let e = io
        .lock(obj.as_bytes(), &Lock::exclusive("E").cookie("e"))
        .await
        .expect_err("rados holds it");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    io.lock(obj.as_bytes(), &Lock::exclusive("E").cookie("e"))
        .await
        .expect("theirs expired");
    // A lock without a duration prints its expiration as utime_t's zero.
    io.lock(obj.as_bytes(), &Lock::exclusive("F").cookie("f"))
        .await
        .expect("locked");
    let theirs = rados_lock(&["info", &obj, "F"]);
    assert!(theirs.contains("\"expiration\":\"0.000000\""), "{theirs}");
    assert_eq!(msgr_ok(&["info", &obj, "F"]), theirs);
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

/// Python's librados (`Ioctx.lock_exclusive`) and ours: each refused the
/// other's exclusive lock; we see and break Python's hold.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn python_librados_and_ours_see_each_others_locks() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = new_object(&io, "lock-python").await;
    io.lock(obj.as_bytes(), &Lock::exclusive("P").cookie("ours"))
        .await
        .expect("locked");
    let me = io.lock_info(obj.as_bytes(), "P").await.unwrap().lockers[0].locker;
    let script = "import os, sys, rados\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx('test')\n\
         o = sys.argv[1]\n\
         try:\n\
         \x20   io.lock_exclusive(o, 'P', 'py', 'python', 600, 0)\n\
         \x20   print('taken')\n\
         except rados.Error as e:\n\
         \x20   print(-e.errno)\n\
         io.lock_exclusive(o, 'Q', 'py', 'python', 600, 0)\n\
         print('client.%d' % c.get_instance_id())\n\
         io.close(); c.shutdown()\n";
    let out = text(&python_ok(script, &[&obj]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], EBUSY.to_string(), "{out}");
    let py = lines[1];
    assert_ne!(py, me.to_string());
    // Python's hold of Q: we see it, are refused, and break it.
    let info = io.lock_info(obj.as_bytes(), "Q").await.expect("info");
    assert_eq!(info.lockers.len(), 1);
    assert_eq!(info.lockers[0].locker.to_string(), py);
    assert_eq!(info.lockers[0].description, "python");
    let e = io
        .lock(obj.as_bytes(), &Lock::exclusive("Q").cookie("py"))
        .await
        .expect_err("python holds it");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    io.break_lock(obj.as_bytes(), "Q", &info.lockers[0].locker, "py")
        .await
        .expect("broken");
    assert!(rados_lock(&["info", &obj, "Q"]).contains("\"lockers\":[]"));
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

/// Renewal flags, a cookie moved, an ephemeral lock whose unlock removes
/// the object, and assert_locked: as the lock class answers librados.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn renewals_cookies_and_ephemeral_locks() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let obj = new_object(&io, "lock-renew").await;
    let lock = Lock::exclusive("R").cookie("a").tag("t");
    // MUST_RENEW a lock we do not hold: ENOENT; then take, renew.
    let e = io
        .lock(obj.as_bytes(), &lock.clone().must_renew())
        .await
        .expect_err("not held");
    assert_eq!(e.errno(), Some(ENOENT), "{e}");
    io.lock(obj.as_bytes(), &lock).await.expect("locked");
    io.lock(obj.as_bytes(), &lock.clone().must_renew())
        .await
        .expect("renewed");
    io.assert_locked(obj.as_bytes(), "R", LockType::Exclusive, "a", "t")
        .await
        .expect("ours");
    let e = io
        .assert_locked(obj.as_bytes(), "R", LockType::Exclusive, "b", "t")
        .await
        .expect_err("not with that cookie");
    assert_eq!(e.errno(), Some(EBUSY), "{e}");
    // The hold moves to cookie b: rados sees b.
    io.set_lock_cookie(obj.as_bytes(), "R", LockType::Exclusive, "a", "t", "b")
        .await
        .expect("cookie moved");
    let theirs = rados_lock(&["info", &obj, "R"]);
    assert!(theirs.contains("\"cookie\":\"b\""), "{theirs}");
    io.unlock(obj.as_bytes(), "R", "b").await.expect("unlocked");
    // An ephemeral exclusive lock: unlocking removes the object.
    let eph = unique("lock-ephemeral");
    io.lock(
        eph.as_bytes(),
        &Lock::new("E", LockType::ExclusiveEphemeral).cookie("e"),
    )
    .await
    .expect("ephemeral");
    let theirs = rados_lock(&["info", &eph, "E"]);
    assert!(
        theirs.contains("\"type\":\"exclusive-ephemeral\""),
        "{theirs}"
    );
    assert_eq!(msgr_ok(&["info", &eph, "E"]), theirs);
    io.unlock(eph.as_bytes(), "E", "e").await.expect("unlocked");
    let e = io.stat(eph.as_bytes()).await.expect_err("removed");
    assert_eq!(e.errno(), Some(ENOENT), "{e}");
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}
