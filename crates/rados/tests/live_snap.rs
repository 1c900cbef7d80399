//! Pools and snapshots against librados on a live cluster: pools created
//! and deleted by one are seen by the other; pool snapshots taken, read,
//! rolled back and removed by one are seen by the other; self-managed
//! snapshots written by one are read by the other; LIST_SNAPS equals
//! `rados listsnaps` (see tests/support/live.rs for how these run).

mod support;

use bytes::Bytes;
use msgr_rados::{IoCtx, SnapContext, NOSNAP};
use support::live::{
    eventually, msgr_cli, python_ok, rados_cli_in, rados_ok, scratch_pool, unique,
};

fn lines(out: Vec<u8>) -> Vec<String> {
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn pools_created_and_deleted_by_one_are_seen_by_the_other() {
    let rados = support::live::connect().await;
    // Ours creates; rados lists it; python looks it up by the same id.
    let ours = unique("snap-pool-ours");
    let id = rados.pool_create(&ours, None).await.expect("created");
    assert_eq!(rados.pool_lookup(&ours), Some(id));
    assert_eq!(
        rados.pool_reverse_lookup(id).as_deref(),
        Some(ours.as_str())
    );
    assert!(rados.pool_list().contains(&(id, ours.clone())));
    assert!(lines(rados_ok(&["lspools"])).contains(&ours));
    let theirs_id = python_ok(
        "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         print(c.pool_lookup(sys.argv[1]))\n",
        &[&ours],
    );
    assert_eq!(String::from_utf8_lossy(&theirs_id).trim(), id.to_string());
    // Creating it again: EEXIST, as librados.
    let again = rados.pool_create(&ours, None).await.expect_err("exists");
    assert_eq!(again.errno(), Some(-17), "{again}");
    rados.pool_delete(&ours).await.expect("deleted");
    assert_eq!(rados.pool_lookup(&ours), None);
    assert!(!lines(rados_ok(&["lspools"])).contains(&ours));
    let gone = rados.pool_delete(&ours).await.expect_err("gone");
    assert_eq!(gone.errno(), Some(-2), "{gone}");

    // Python creates (with CRUSH rule 0) and deletes; ours follows.
    let theirs = unique("snap-pool-theirs");
    python_ok(
        "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         c.create_pool(sys.argv[1], crush_rule=0)\n",
        &[&theirs],
    );
    eventually(&rados, "python's pool", |r| {
        r.pool_lookup(&theirs).is_some()
    })
    .await;
    let id = rados.pool_lookup(&theirs).expect("seen");
    assert_eq!(rados.osdmap().pools[&id].crush_rule, 0);
    python_ok(
        "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         c.delete_pool(sys.argv[1])\n",
        &[&theirs],
    );
    eventually(&rados, "python's pool gone", |r| {
        r.pool_lookup(&theirs).is_none()
    })
    .await;

    // Ours creates with CRUSH rule 0 (the only one): the pool has it.
    let ruled = unique("snap-pool-ruled");
    let id = rados.pool_create(&ruled, Some(0)).await.expect("created");
    assert_eq!(rados.osdmap().pools[&id].crush_rule, 0);
    rados.pool_delete(&ruled).await.expect("deleted");
    rados.shutdown().await;
}

/// `rados listsnaps` of `obj`: each clone's id (`head` as NOSNAP) and
/// size.
fn rados_listsnaps(pool: &str, obj: &str) -> Vec<(u64, u64)> {
    lines(rados_ok(&["-p", pool, "listsnaps", obj]))
        .iter()
        .skip(2) // "OBJ:", the column titles
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let id = match f[0] {
                "head" => NOSNAP,
                n => n.parse().expect("clone id"),
            };
            (id, f[2].parse().expect("size"))
        })
        .collect()
}

async fn our_listsnaps(io: &IoCtx, obj: &str) -> Vec<(u64, u64)> {
    let set = io.list_snaps(obj.as_bytes()).await.expect("list_snaps");
    set.clones.iter().map(|c| (c.cloneid, c.size)).collect()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn pool_snapshots_both_ways() {
    let rados = support::live::connect().await;
    let (pool, mut io) = scratch_pool(&rados, "snap-poolsnaps").await;
    let obj = unique("snap-obj");
    io.write_full(obj.as_bytes(), Bytes::from_static(b"one"))
        .await
        .expect("written");

    // Ours snapshots: rados lists it; both read the old data at it.
    rados.snap_create(&io, "s1").await.expect("snapshot");
    let s1 = io.snap_lookup("s1").expect("ours has it");
    assert_eq!(io.snap_get_name(s1).expect("name"), "s1");
    let stamp = io.snap_get_stamp(s1).expect("stamp");
    assert!(stamp.sec > 0, "{stamp:?}");
    let listed = lines(rados_ok(&["-p", &pool, "lssnap"]));
    assert!(
        listed.iter().any(|l| l
            .split_whitespace()
            .take(2)
            .eq([s1.to_string().as_str(), "s1"])),
        "{listed:?}"
    );
    assert!(
        listed.last().is_some_and(|l| l.contains("snaps")),
        "{listed:?}"
    );
    let again = rados.snap_create(&io, "s1").await.expect_err("exists");
    assert_eq!(again.errno(), Some(-17));
    io.write_full(obj.as_bytes(), Bytes::from_static(b"two!"))
        .await
        .expect("overwritten");
    // rados says which snapshot it selected (by our id), then the data.
    let got = rados_ok(&["-p", &pool, "-s", "s1", "get", &obj, "-"]);
    assert_eq!(got, format!("selected snap {s1} 's1'\none").as_bytes());
    // msgr rados -s says and reads the same.
    let ours = msgr_cli(&["rados", "-p", &pool, "-s", "s1", "get", &obj, "-"]);
    assert!(ours.status.success(), "{ours:?}");
    assert_eq!(ours.stdout, got);
    let none = msgr_cli(&["rados", "-p", &pool, "-s", "nosuch", "get", &obj, "-"]);
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("error looking up snap 'nosuch'"),
        "{none:?}"
    );
    let py = python_ok(
        "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx(sys.argv[1])\n\
         s = io.lookup_snap('s1')\n\
         print(s.snap_id, int(s.get_timestamp().timestamp()))\n\
         io.set_read(s.snap_id)\n\
         sys.stdout.write(io.read(sys.argv[2]).decode())\n",
        &[&pool, &obj],
    );
    let py = String::from_utf8(py).expect("utf-8");
    let (head, data) = py.split_once('\n').expect("two lines");
    assert_eq!(head, format!("{s1} {}", stamp.sec));
    assert_eq!(data, "one");
    io.set_read_snap(s1);
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("at s1"),
        &b"one"[..]
    );
    io.set_read_snap(NOSNAP);

    // rados snapshots: ours sees it, with librados's id.
    rados_ok(&["-p", &pool, "mksnap", "s2"]);
    eventually(&rados, "rados's snapshot", |_| io.snap_lookup("s2").is_ok()).await;
    let s2 = io.snap_lookup("s2").expect("seen");
    assert_eq!(io.snap_list().expect("list"), vec![s1, s2]);
    let put = rados_cli_in(&["-p", &pool, "put", &obj, "-"], b"three");
    assert!(put.status.success(), "{put:?}");

    // LIST_SNAPS equals rados listsnaps: clones of s1 and s2, the head.
    let theirs = rados_listsnaps(&pool, &obj);
    assert_eq!(our_listsnaps(&io, &obj).await, theirs);
    assert_eq!(theirs, vec![(s1, 3), (s2, 4), (NOSNAP, 5)]);

    // Rollbacks both ways.
    io.snap_rollback(obj.as_bytes(), "s1")
        .await
        .expect("rolled back");
    assert_eq!(rados_ok(&["-p", &pool, "get", &obj, "-"]), b"one");
    rados_ok(&["-p", &pool, "rollback", &obj, "s2"]);
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("head"),
        &b"two!"[..]
    );
    let none = io
        .snap_rollback(obj.as_bytes(), "nope")
        .await
        .expect_err("no such snap");
    assert_eq!(none.errno(), Some(-2));

    // Removals both ways.
    rados.snap_remove(&io, "s1").await.expect("removed");
    assert!(io.snap_lookup("s1").is_err());
    let listed = lines(rados_ok(&["-p", &pool, "lssnap"]));
    assert!(!listed.iter().any(|l| l.contains("s1")), "{listed:?}");
    rados_ok(&["-p", &pool, "rmsnap", "s2"]);
    eventually(&rados, "rados's removal", |_| io.snap_lookup("s2").is_err()).await;
    assert_eq!(io.snap_list().expect("list"), Vec::<u64>::new());

    // A pool with pool snapshots takes no self-managed ones.
    let e = rados.selfmanaged_snap_create(&io).await;
    // (None left now: the pool is still in pool-snaps mode.)
    assert_eq!(e.expect_err("pool-snaps mode").errno(), Some(-22));
    rados.pool_delete(&pool).await.expect("pool deleted");
    rados.shutdown().await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn self_managed_snapshots_both_ways() {
    let rados = support::live::connect().await;
    let (pool, mut io) = scratch_pool(&rados, "snap-selfmanaged").await;
    let obj = unique("snap-sm");
    io.write_full(obj.as_bytes(), Bytes::from_static(b"v1"))
        .await
        .expect("written");
    // Ours allocates a snap id and writes with it: the clone keeps v1.
    let a = rados.selfmanaged_snap_create(&io).await.expect("snap id");
    io.set_write_snap_context(SnapContext {
        seq: a,
        snaps: vec![a],
    });
    io.write_full(obj.as_bytes(), Bytes::from_static(b"v2-ours"))
        .await
        .expect("written with the snapc");

    // Python reads the clone at a and the head; then allocates b, writes
    // with [b, a], and prints b.
    let script = "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx(sys.argv[1]); a = int(sys.argv[3])\n\
         io.set_read(a); old = io.read(sys.argv[2]).decode()\n\
         io.set_read(rados.LIBRADOS_SNAP_HEAD); head = io.read(sys.argv[2]).decode()\n\
         b = io.create_self_managed_snap()\n\
         io.set_self_managed_snap_write([b, a])\n\
         io.write_full(sys.argv[2], b'v3-python')\n\
         print(old, head, b)\n";
    let out = python_ok(script, &[&pool, &obj, &a.to_string()]);
    let out = String::from_utf8(out).expect("utf-8");
    let f: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(&f[..2], ["v1", "v2-ours"]);
    let b: u64 = f[2].parse().expect("b");
    assert!(b > a);

    // Ours reads python's clone at b, and the head.
    io.set_read_snap(b);
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("at b"),
        &b"v2-ours"[..]
    );
    io.set_read_snap(a);
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("at a"),
        &b"v1"[..]
    );
    io.set_read_snap(NOSNAP);
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("head"),
        &b"v3-python"[..]
    );
    let theirs = rados_listsnaps(&pool, &obj);
    assert_eq!(our_listsnaps(&io, &obj).await, theirs);
    assert_eq!(theirs, vec![(a, 2), (b, 7), (NOSNAP, 9)]);
    assert_eq!(io.list_snaps(obj.as_bytes()).await.expect("snaps").seq, b);

    // Rollbacks both ways.
    io.set_write_snap_context(SnapContext {
        seq: b,
        snaps: vec![b, a],
    });
    io.selfmanaged_snap_rollback(obj.as_bytes(), a)
        .await
        .expect("rolled back");
    let rollback = "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx(sys.argv[1]); a, b = int(sys.argv[3]), int(sys.argv[4])\n\
         sys.stdout.write(io.read(sys.argv[2]).decode() + ' ')\n\
         io.set_self_managed_snap_write([b, a])\n\
         io.rollback_self_managed_snap(sys.argv[2], b)\n";
    let out = python_ok(rollback, &[&pool, &obj, &a.to_string(), &b.to_string()]);
    assert_eq!(out, b"v1 ");
    assert_eq!(
        io.read(obj.as_bytes(), 0, 0).await.expect("head"),
        &b"v2-ours"[..]
    );

    // Removals: ours removes a, python b; the clones are trimmed in time,
    // the ids are gone from the pool's snap context right away.
    rados
        .selfmanaged_snap_remove(&io, a)
        .await
        .expect("a removed");
    python_ok(
        "import rados, os, sys\n\
         c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()\n\
         io = c.open_ioctx(sys.argv[1]); io.remove_self_managed_snap(int(sys.argv[2]))\n",
        &[&pool, &b.to_string()],
    );
    // A pool in self-managed mode takes no pool snapshot.
    let e = rados
        .snap_create(&io, "nope")
        .await
        .expect_err("self-managed mode");
    assert_eq!(e.errno(), Some(-22), "{e}");
    rados.pool_delete(&pool).await.expect("pool deleted");
    rados.shutdown().await;
}

/// `msgr rados` prints what `rados` prints: lssnap, listsnaps, lspools,
/// and mksnap / rollback / rmsnap / mkpool / rmpool as rados did.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn the_cli_prints_what_rados_prints() {
    let msgr = |args: &[&str]| {
        let mut all = vec!["rados"];
        all.extend_from_slice(args);
        let out = msgr_cli(&all);
        assert!(out.status.success(), "msgr {all:?}: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let rados = |args: &[&str]| String::from_utf8(rados_ok(args)).expect("utf-8");
    let pool = unique("snap-cli");
    assert_eq!(
        msgr(&["mkpool", &pool]),
        format!("successfully created pool {pool}\n")
    );
    assert_eq!(msgr(&["lspools"]), rados(&["lspools"]));
    let obj = unique("snap-cli-obj");
    let put = rados_cli_in(&["-p", &pool, "put", &obj, "-"], b"first");
    assert!(put.status.success(), "{put:?}");
    assert_eq!(
        msgr(&["-p", &pool, "mksnap", "a"]),
        format!("created pool {pool} snap a\n")
    );
    rados(&["-p", &pool, "mksnap", "b"]);
    let put = rados_cli_in(&["-p", &pool, "put", &obj, "-"], b"second!");
    assert!(put.status.success(), "{put:?}");
    assert_eq!(
        msgr(&["-p", &pool, "lssnap"]),
        rados(&["-p", &pool, "lssnap"])
    );
    assert_eq!(
        msgr(&["-p", &pool, "listsnaps", &obj]),
        rados(&["-p", &pool, "listsnaps", &obj])
    );
    assert_eq!(
        msgr(&["-p", &pool, "rollback", &obj, "a"]),
        format!("rolled back pool {pool} to snapshot a\n")
    );
    assert_eq!(rados(&["-p", &pool, "get", &obj, "-"]), "first");
    // A second mksnap of a: exit status 1, as rados.
    let again = msgr_cli(&["rados", "-p", &pool, "mksnap", "a"]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert_eq!(
        msgr(&["-p", &pool, "rmsnap", "a"]),
        format!("removed pool {pool} snap a\n")
    );
    assert_eq!(
        msgr(&["-p", &pool, "lssnap"]),
        rados(&["-p", &pool, "lssnap"])
    );
    assert_eq!(
        msgr(&["rmpool", &pool, &pool, "--yes-i-really-really-mean-it"]),
        format!("successfully deleted pool {pool}\n")
    );
    assert!(!rados(&["lspools"]).lines().any(|l| l == pool));
}
