//! Compound operations against librados on a live cluster, both ways:
//! what our write operations do, Python's `rados` module (librados) and
//! Ceph's `rados` observe, and the reverse; a failed assert leaves nothing
//! written; each op's rval; versions as librados reports them (see
//! tests/support/live.rs for how these run).

mod support;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use msgr_rados::compound::{cmpext_mismatch, ChecksumType, CmpOp, ReadOp, WriteOp};
use msgr_rados::request::flag;
use msgr_rados::{IoCtx, NOSNAP};
use support::live::{connect, python_ok, rados_cli_in, rados_ok, unique};

const POOL: &str = "test";

/// Python printing what librados sees of object `argv[1]`: its data, its
/// xattrs, its omap and the version of the last read, one per line.
const OBSERVE: &str = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
obj = sys.argv[1]
try:
    data = io.read(obj, 1 << 20)
except rados.ObjectNotFound:
    print("absent"); sys.exit(0)
print("data=%s" % data.decode())
print("version=%d" % io.get_last_version())
print("xattrs=%s" % sorted((k, v.decode()) for k, v in io.get_xattrs(obj)))
with rados.ReadOpCtx() as op:
    it, r = io.get_omap_vals(op, "", "", 100)
    io.operate_read_op(op, obj)
    print("omap=%s" % sorted((k, v.decode()) for k, v in it))
c.shutdown()
"#;

fn observe(obj: &str) -> String {
    String::from_utf8(python_ok(OBSERVE, &[obj])).expect("utf-8")
}

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|l| l.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {out}"))
}

fn kv(pairs: &[(&str, &str)]) -> BTreeMap<String, Bytes> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Bytes::copy_from_slice(v.as_bytes())))
        .collect()
}

async fn ioctx() -> (msgr_rados::Rados, IoCtx) {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    (rados, io)
}

/// One write operation of every kind of write op; librados sees its whole
/// effect, at the version our reply said.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn our_write_operation_lands_whole() {
    let (rados, io) = ioctx().await;
    let obj = unique("ops-write");
    let mut w = WriteOp::new();
    w.create(true);
    w.write_full(Bytes::from_static(b"0123456789"));
    w.writesame(10, 6, Bytes::from_static(b"ab"));
    w.append(Bytes::from_static(b"XYZ"));
    w.zero(2, 2);
    w.write(4, Bytes::from_static(b"w"));
    w.setxattr("a", b"1");
    w.setxattr("b", b"2");
    w.rmxattr("b");
    w.omap_set(&kv(&[
        ("k1", "v1"),
        ("k2", "v2"),
        ("k3", "v3"),
        ("k4", "v4"),
    ]));
    w.omap_rm_keys(&BTreeSet::from(["k1".to_string()]));
    w.omap_rm_range("k3", "k4");
    w.omap_set_header(Bytes::from_static(b"hdr"));
    let r = io.operate_write(obj.as_bytes(), &w).await.expect("written");
    assert!(r.version() > 0, "a write's version");
    assert_eq!(io.last_version(), r.version());
    let seen = observe(&obj);
    assert_eq!(line(&seen, "data"), "01\0\0w56789abababXYZ", "{seen}");
    assert_eq!(line(&seen, "version"), r.version().to_string(), "{seen}");
    assert_eq!(line(&seen, "xattrs"), "[('a', '1')]");
    assert_eq!(line(&seen, "omap"), "[('k2', 'v2'), ('k4', 'v4')]");
    let header = rados_ok(&["-p", POOL, "getomapheader", &obj]);
    assert!(
        String::from_utf8_lossy(&header).starts_with("header (3 bytes) :\n"),
        "{}",
        String::from_utf8_lossy(&header)
    );
    // Exclusive create of what exists: EEXIST, and nothing else applies.
    let mut again = WriteOp::new();
    again.create(true);
    again.write_full(Bytes::from_static(b"lost"));
    let e = io
        .operate_write(obj.as_bytes(), &again)
        .await
        .expect_err("exists");
    assert_eq!(e.errno(), Some(-17), "{e}");
    // A ZERO of 0 bytes (which aborts a Ceph 16 OSD) is refused unsent.
    let mut none = WriteOp::new();
    none.zero(3, 0);
    let e = io
        .operate_write(obj.as_bytes(), &none)
        .await
        .expect_err("refused");
    assert_eq!(e.errno(), Some(-22), "{e}");
    // omap_clear and remove.
    let mut clear = WriteOp::new();
    clear.omap_clear();
    io.operate_write(obj.as_bytes(), &clear)
        .await
        .expect("cleared");
    assert_eq!(line(&observe(&obj), "omap"), "[]");
    let mut rm = WriteOp::new();
    rm.assert_exists();
    rm.remove();
    io.operate_write(obj.as_bytes(), &rm)
        .await
        .expect("removed");
    assert_eq!(observe(&obj).trim(), "absent");
    rados.shutdown().await;
}

/// A write operation whose assert fails applies nothing: the errno is the
/// OSD's (ECANCELED for cmpxattr and omap_cmp, ERANGE/EOVERFLOW for
/// assert_version, -MAX_ERRNO-offset for cmpext), the rvals say which op.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_failed_assert_writes_nothing() {
    let (rados, io) = ioctx().await;
    let obj = unique("ops-assert");
    let mut w = WriteOp::new();
    w.write_full(Bytes::from_static(b"original"));
    w.setxattr("state", b"ready");
    w.omap_set(&kv(&[("k", "v")]));
    // Twice: version 0 is refused with EINVAL (Ceph 20), and v0 - 1 is
    // asserted below.
    io.operate_write(obj.as_bytes(), &w).await.expect("set up");
    let v0 = io
        .operate_write(obj.as_bytes(), &w)
        .await
        .expect("set up")
        .version();
    assert!(v0 >= 2);
    let before = observe(&obj);

    let attempt = |assert: &dyn Fn(&mut WriteOp)| {
        let mut w = WriteOp::new();
        w.setxattr("state", b"changed");
        assert(&mut w);
        w.write_full(Bytes::from_static(b"overwritten"));
        w.omap_set(&kv(&[("k", "changed")]));
        w
    };
    let cases: Vec<(&str, WriteOp, Box<dyn Fn(i32) -> bool>)> = vec![
        (
            "cmpxattr",
            attempt(&|w| {
                w.cmpxattr("state", CmpOp::Eq, b"other");
            }),
            Box::new(|e| e == -125),
        ),
        (
            "omap_cmp",
            attempt(&|w| {
                w.omap_cmp(&BTreeMap::from([(
                    "k".to_string(),
                    (Bytes::from_static(b"x"), CmpOp::Eq),
                )]));
            }),
            Box::new(|e| e == -125),
        ),
        (
            "assert_version older",
            attempt(&|w| {
                w.assert_version(v0 - 1);
            }),
            Box::new(|e| e == -34),
        ),
        (
            "assert_version newer",
            attempt(&|w| {
                w.assert_version(v0 + 1);
            }),
            Box::new(|e| e == -75),
        ),
        (
            "cmpext",
            attempt(&|w| {
                w.cmpext(0, Bytes::from_static(b"origXnal"));
            }),
            Box::new(|e| cmpext_mismatch(e) == Some(4)),
        ),
    ];
    for (what, w, expected) in cases {
        let r = io
            .operate_write_results(obj.as_bytes(), &w)
            .await
            .expect("answered");
        assert!(
            expected(r.reply().result),
            "{what}: result {}",
            r.reply().result
        );
        let (index, rval) = r.failed().unwrap_or_else(|| panic!("{what}: {r:?}"));
        assert_eq!(
            (index, rval),
            (1, r.reply().result),
            "{what}: the assert failed"
        );
        let e = io.operate_write(obj.as_bytes(), &w).await.expect_err(what);
        assert_eq!(e.errno(), Some(r.reply().result), "{what}: {e}");
        assert!(e.to_string().contains("op 1"), "{what}: {e}");
        assert_eq!(observe(&obj), before, "{what} wrote nothing");
    }
    // The asserts hold: everything applies.
    let mut w = attempt(&|w| {
        w.cmpxattr("state", CmpOp::Eq, b"ready");
    });
    w.assert_version(v0);
    let r = io.operate_write(obj.as_bytes(), &w).await;
    // assert_version after a setxattr in the same op sees the old version.
    let r = r.expect("asserts hold");
    let after = observe(&obj);
    assert_eq!(line(&after, "data"), "overwritten");
    assert_eq!(line(&after, "version"), r.version().to_string());
    rados.shutdown().await;
}

/// What librados writes with a write operation, our read operation reads
/// op by op, each with its rval, at the version librados reports.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn librados_writes_our_read_operation_reads() {
    let (rados, io) = ioctx().await;
    let obj = unique("ops-read");
    let script = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
obj = sys.argv[1]
with rados.WriteOpCtx() as op:
    op.new(1)
    op.write_full(b"hello world, hello")
    op.set_xattr("x1", b"one")
    op.set_xattr("x2", b"two")
    io.set_omap(op, ("a", "b", "c"), (b"1", b"2", b"3"))
    io.operate_write_op(op, obj)
print(io.get_last_version())
c.shutdown()
"#;
    let version: u64 = String::from_utf8(python_ok(script, &[&obj]))
        .unwrap()
        .trim()
        .parse()
        .expect("a version");
    rados_ok(&["-p", POOL, "setomapheader", &obj, "the header"]);
    let mut r = ReadOp::new();
    let exists = r.assert_exists();
    let stat = r.stat();
    let whole = r.read(0, 0);
    let part = r.read(6, 5);
    let sparse = r.sparse_read(0, 100);
    let x1 = r.getxattr("x1");
    let xs = r.getxattrs();
    let keys = r.omap_get_keys("", 2);
    let vals = r.omap_get_vals("a", "", 10);
    let by_keys = r.omap_get_vals_by_keys(&BTreeSet::from(["b".to_string(), "zz".to_string()]));
    let header = r.omap_get_header();
    let same = r.cmpext(6, Bytes::from_static(b"world"));
    let cmp = r.cmpxattr("x2", CmpOp::Eq, b"two");
    let crc = r.checksum(ChecksumType::Crc32c, u64::from(u32::MAX), 0, 18, 9);
    let out = io.operate_read(obj.as_bytes(), &r).await.expect("read");
    // The version librados reads after the header's setomapheader (a
    // version is the PG's log version: later than librados's write).
    let now = line(&observe(&obj), "version").parse::<u64>().unwrap();
    assert!(now > version, "{now} after {version}");
    assert_eq!(out.version(), now);
    assert_eq!(io.last_version(), now);
    // Every op succeeded (cmpxattr's rval is 1 when it holds).
    for i in 0..r.len() {
        assert!(
            out.reply().ops[i].rval >= 0,
            "op {i}: {:?}",
            out.reply().ops[i]
        );
    }
    assert_eq!(out.rval(cmp), 1, "cmpxattr holds");
    out.get(exists).expect("exists");
    assert_eq!(out.get(stat).unwrap().size, 18);
    assert_eq!(out.get(whole).unwrap(), &b"hello world, hello"[..]);
    assert_eq!(out.get(part).unwrap(), &b"world"[..]);
    let s = out.get(sparse).unwrap();
    assert_eq!(s.pieces().unwrap().concat_data(), b"hello world, hello");
    assert_eq!(out.get(x1).unwrap(), &b"one"[..]);
    assert_eq!(out.get(xs).unwrap(), kv(&[("x1", "one"), ("x2", "two")]));
    let k = out.get(keys).unwrap();
    assert_eq!(
        (k.keys, k.more),
        (vec!["a".to_string(), "b".to_string()], true)
    );
    let v = out.get(vals).unwrap();
    assert_eq!((v.vals, v.more), (kv(&[("b", "2"), ("c", "3")]), false));
    assert_eq!(out.get(by_keys).unwrap(), kv(&[("b", "2")]));
    assert_eq!(out.get(header).unwrap(), &b"the header"[..]);
    out.get(same).expect("cmpext matches");
    out.get(cmp).expect("cmpxattr matches");
    let sums = out.get(crc).unwrap().0;
    let expect: Vec<u64> = [&b"hello wor"[..], &b"ld, hello"[..]]
        .iter()
        .map(|c| u64::from(msgr_encoding::crc32c::ceph_crc32c(u32::MAX, c)))
        .collect();
    assert_eq!(sums, expect, "crc32c per 9-byte chunk");

    // A mismatch, as librados's cmpext reports it.
    let theirs = String::from_utf8(python_ok(
        r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
print(io.cmpext(sys.argv[1], b"world!!", 6))
c.shutdown()
"#,
        &[&obj],
    ))
    .unwrap();
    let mut r = ReadOp::new();
    let stat = r.stat();
    let differ = r.cmpext(6, Bytes::from_static(b"world!!"));
    let got = io
        .operate_read_results(obj.as_bytes(), &r)
        .await
        .expect("answered");
    assert_eq!(
        got.rval(differ).to_string(),
        theirs.trim(),
        "rval as librados's"
    );
    assert_eq!(cmpext_mismatch(got.rval(differ)), Some(5));
    assert_eq!(got.failed(), Some((1, got.rval(differ))));
    assert_eq!(got.reply().result, got.rval(differ));
    let e = io
        .operate_read(obj.as_bytes(), &r)
        .await
        .expect_err("mismatch");
    assert!(e.to_string().contains("mismatch at offset 5"), "{e}");
    let _ = stat;

    // FAILOK: a failing op does not fail the whole.
    let mut r = ReadOp::new();
    let missing = r.getxattr("nope");
    r.set_op_flags(msgr_rados::compound::op_flag::FAILOK);
    let data = r.read(0, 5);
    let out = io.operate_read(obj.as_bytes(), &r).await.expect("failok");
    assert_eq!(out.rval(missing), -61, "ENODATA");
    assert_eq!(out.get(data).unwrap(), &b"hello"[..]);

    // list_snaps: the head alone, as `rados listsnaps` says.
    let mut r = ReadOp::new();
    let snaps = r.list_snaps();
    let set = io
        .operate_read(obj.as_bytes(), &r)
        .await
        .expect("listsnaps")
        .get(snaps)
        .unwrap();
    assert_eq!(set.clones.len(), 1, "{set:?}");
    assert_eq!((set.clones[0].cloneid, set.clones[0].size), (NOSNAP, 18));
    let listed = String::from_utf8(rados_ok(&["-p", POOL, "listsnaps", &obj])).unwrap();
    assert!(listed.contains("head\t-\t18"), "{listed}");
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

trait Concat {
    fn concat_data(&self) -> Vec<u8>;
}

impl Concat for Vec<(u64, Bytes)> {
    fn concat_data(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (off, b) in self {
            out.resize(*off as usize, 0);
            out.extend_from_slice(b);
        }
        out
    }
}

/// What librados's write operation asserts, on what we wrote: the same
/// errnos and effect as ours.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn librados_asserts_on_what_we_wrote() {
    let (rados, io) = ioctx().await;
    let obj = unique("ops-theirs");
    let mut w = WriteOp::new();
    w.write_full(Bytes::from_static(b"abcdef"));
    w.omap_set(&kv(&[("k", "v")]));
    io.operate_write(obj.as_bytes(), &w).await.expect("written");
    let v = io
        .operate_write(obj.as_bytes(), &w)
        .await
        .expect("written")
        .version();
    assert!(v >= 2);
    let script = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
obj, v = sys.argv[1], int(sys.argv[2])
def attempt(f):
    with rados.WriteOpCtx() as op:
        f(op)
        op.write_full(b"changed")
        try:
            io.operate_write_op(op, obj)
            return "ok"
        except rados.Error as e:
            return "err%s" % getattr(e, "errno", None)
print("stale", attempt(lambda op: op.assert_version(v - 1)))
print("omapcmp", attempt(lambda op: op.omap_cmp("k", "x", rados.LIBRADOS_CMPXATTR_OP_EQ)))
print("version", io.get_last_version())
print("good", attempt(lambda op: op.assert_version(v)))
print("version", io.get_last_version())
c.shutdown()
"#;
    let out = String::from_utf8(python_ok(script, &[&obj, &v.to_string()])).unwrap();
    assert!(out.contains("stale err34"), "ERANGE: {out}");
    assert!(out.contains("omapcmp err125"), "ECANCELED: {out}");
    assert!(out.contains("good ok"), "{out}");
    let last: u64 = out
        .lines()
        .filter_map(|l| l.strip_prefix("version "))
        .last()
        .unwrap()
        .parse()
        .unwrap();
    // Ours sees their write and its version.
    let mut r = ReadOp::new();
    let data = r.read(0, 0);
    r.assert_version(last);
    let got = io.operate_read(obj.as_bytes(), &r).await.expect("read");
    assert_eq!(got.get(data).unwrap(), &b"changed"[..]);
    assert_eq!(got.version(), last);
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

/// BALANCE_READS sends reads to any acting OSD: some reach a replica
/// and read right; a replica that cannot serve a read yet (an object
/// written since the PG's last complete on disk) bounces it with EAGAIN
/// and it goes to the primary. Writes stay with the primary.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn balanced_reads_reach_replicas() {
    let (rados, mut io) = ioctx().await;
    // One PG for all (one locator key): a later write there lets its
    // replicas serve the earlier objects.
    // A key whose PG has its two OSDs on two hosts (for the localized
    // reads below; the dev clusters' rule chooses OSDs, not hosts).
    let m = rados.osdmap();
    let host_of = |osd: i32| {
        let host_type = m
            .crush
            .type_names
            .iter()
            .find(|(_, n)| *n == "host")
            .expect("host")
            .0;
        m.crush
            .buckets
            .iter()
            .flatten()
            .find(|b| i32::from(b.type_id) == *host_type && b.items.contains(&osd))
            .map(|b| m.crush.names[&b.id].clone())
            .expect("the OSD's host")
    };
    // The acting set of the PG that locator key `k` places objects in.
    let pool = io.pool();
    let acting = |k: &str| {
        let raw = m
            .object_to_raw_pg(pool, b"any", k.as_bytes(), b"")
            .expect("placed");
        let pg = m.pools[&pool].raw_pg_to_pg(raw);
        m.pg_to_up_acting(pg).expect("mapped").acting
    };
    let key = (0..256)
        .map(|_| unique("ops-balance-key"))
        .find(|k| {
            let hosts: BTreeSet<String> = acting(k).iter().map(|&o| host_of(o)).collect();
            hosts.len() > 1
        })
        .expect("a PG on two hosts");
    io.set_locator_key(&key);
    let objs: Vec<(String, Bytes)> = (0..16)
        .map(|i| {
            (
                unique(&format!("ops-balance-{i}")),
                Bytes::from(format!("balanced {i}")),
            )
        })
        .collect();
    let mut primary = None;
    for (obj, data) in &objs {
        let mut w = WriteOp::new();
        w.write_full(data.clone());
        w.set_flags(flag::BALANCE_READS);
        let osd = io
            .operate_write(obj.as_bytes(), &w)
            .await
            .expect("written")
            .reply()
            .osd;
        assert_eq!(*primary.get_or_insert(osd), osd, "writes go to the primary");
    }
    let bump = unique("ops-balance-bump");
    for _ in 0..2 {
        io.write_full(bump.as_bytes(), Bytes::from_static(b"bump"))
            .await
            .expect("bump");
    }
    // LOCALIZE_READS with the client on the host of the PG's other
    // acting OSD: reads go there.
    let replica = *acting(&key)
        .iter()
        .find(|&&o| Some(o) != primary)
        .expect("two acting OSDs");
    let host = host_of(replica);
    rados.set_crush_location(vec![
        ("host".into(), host),
        ("root".into(), "default".into()),
    ]);
    for (obj, data) in &objs {
        let mut r = ReadOp::new();
        let h = r.read(0, 0);
        r.set_flags(flag::LOCALIZE_READS);
        let local = io.operate_read(obj.as_bytes(), &r).await.expect("read");
        assert_eq!(&local.get(h).unwrap(), data);
        assert_eq!(local.reply().osd, replica, "the read on the client's host");
    }
    rados.set_crush_location(Vec::new());
    let mut replica_reads = 0;
    for (obj, data) in &objs {
        let mut r = ReadOp::new();
        let h = r.read(0, 0);
        let plain = io.operate_read(obj.as_bytes(), &r).await.expect("read");
        assert_eq!(Some(plain.reply().osd), primary, "reads go to the primary");
        r.set_flags(flag::BALANCE_READS);
        let balanced = io.operate_read(obj.as_bytes(), &r).await.expect("read");
        assert_eq!(&balanced.get(h).unwrap(), data);
        if Some(balanced.reply().osd) != primary {
            replica_reads += 1;
        }
        io.remove(obj.as_bytes()).await.expect("removed");
    }
    io.remove(bump.as_bytes()).await.expect("removed");
    assert!(
        replica_reads > 0,
        "16 balanced reads all went to the primary"
    );
    rados.shutdown().await;
}

/// `msgr rados setomapheader` / `getomapheader` against Ceph's `rados`,
/// both ways: the same header, the same printout (hexdump with its `*`
/// runs), the same file, an absent object failing with status 1.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn omap_header_commands_match_rados() {
    use support::live::msgr_cli;
    let ours = unique("ops-hdr-ours");
    let theirs = unique("ops-hdr-theirs");
    let header = format!("{}{}{}", "a".repeat(40), "bbb", "c".repeat(40));
    let set = msgr_cli(&["rados", "-p", POOL, "setomapheader", &ours, &header]);
    assert!(set.status.success(), "{set:?}");
    rados_ok(&["-p", POOL, "setomapheader", &theirs, &header]);
    let printed = rados_ok(&["-p", POOL, "getomapheader", &ours]);
    assert!(String::from_utf8_lossy(&printed).starts_with("header (83 bytes) :\n"));
    let got = msgr_cli(&["rados", "-p", POOL, "getomapheader", &theirs]);
    assert!(got.status.success(), "{got:?}");
    assert_eq!(
        String::from_utf8_lossy(&got.stdout),
        String::from_utf8_lossy(&printed)
    );
    let file = std::env::temp_dir().join(unique("ops-hdr-file"));
    let file = file.to_str().unwrap();
    let got = msgr_cli(&["rados", "-p", POOL, "getomapheader", &theirs, file]);
    assert!(got.status.success(), "{got:?}");
    assert_eq!(
        String::from_utf8_lossy(&got.stderr),
        format!("Writing to {file}\n")
    );
    assert_eq!(std::fs::read(file).unwrap(), header.as_bytes());
    let _ = std::fs::remove_file(file);
    let absent = unique("ops-hdr-absent");
    let got = msgr_cli(&["rados", "-p", POOL, "getomapheader", &absent]);
    assert_eq!(got.status.code(), Some(1));
    let err = String::from_utf8_lossy(&got.stderr);
    assert!(
        err.contains(&format!("error getting omap header {POOL}/{absent}")) && err.contains("-2"),
        "{err}"
    );
    for o in [&ours, &theirs] {
        rados_ok(&["-p", POOL, "rm", o]);
    }
}

/// `msgr rados cmpext` (Ceph's `rados` has none) on an object Ceph's
/// `rados` wrote: a match is status 0 and silent; a mismatch is status 1
/// naming the first differing byte; an absent object the OSD's ENOENT.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn cmpext_command_compares_what_rados_wrote() {
    use support::live::msgr_cli;
    let obj = unique("ops-cmpext");
    let put = rados_cli_in(&["-p", POOL, "put", &obj, "-"], b"0123456789");
    assert!(put.status.success(), "{put:?}");
    let file = std::env::temp_dir().join(unique("ops-cmpext-file"));
    let file = file.to_str().unwrap();
    std::fs::write(file, b"2345").unwrap();
    let same = msgr_cli(&["rados", "-p", POOL, "cmpext", &obj, "2", file]);
    assert!(same.status.success() && same.stdout.is_empty(), "{same:?}");
    std::fs::write(file, b"23x5").unwrap();
    let differs = msgr_cli(&["rados", "-p", POOL, "cmpext", &obj, "2", file]);
    assert_eq!(differs.status.code(), Some(1), "{differs:?}");
    let err = String::from_utf8_lossy(&differs.stderr);
    assert!(err.contains("at byte 4 (offset 2 of the compare)"), "{err}");
    let absent = unique("ops-cmpext-absent");
    let gone = msgr_cli(&["rados", "-p", POOL, "cmpext", &absent, "0", file]);
    assert_eq!(gone.status.code(), Some(1), "{gone:?}");
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("-2"),
        "{gone:?}"
    );
    let _ = std::fs::remove_file(file);
    rados_ok(&["-p", POOL, "rm", &obj]);
}

/// librados's write operation of data, xattr and omap ops (writesame,
/// truncate, append, rm_xattr, omap range removal, omap clear); our read
/// operation reads the result, op by op. (Not Python's `WriteOp.zero`:
/// Ceph 16's passes its arguments swapped, and a ZERO of 0 bytes aborts
/// a Ceph 16 OSD: `ceph_assert(op.extent.length)`.)
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn librados_write_operation_our_reads_see() {
    let (rados, io) = ioctx().await;
    let obj = unique("ops-theirs-write");
    let script = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx("test")
obj = sys.argv[1]
with rados.WriteOpCtx() as op:
    op.write_full(b"0123456789")
    op.writesame(b"xy", 6, 2)
    op.append(b"END")
    op.truncate(12)
    op.set_xattr("keep", b"k")
    op.set_xattr("drop", b"d")
    op.rm_xattr("drop")
    io.set_omap(op, ("a", "b", "c", "d"), (b"1", b"2", b"3", b"4"))
    io.remove_omap_range2(op, "b", "d")
    io.operate_write_op(op, obj)
print(io.get_last_version())
with rados.WriteOpCtx() as op:
    io.clear_omap(op)
    io.set_omap(op, ("z",), (b"26",))
    io.operate_write_op(op, obj)
print(io.get_last_version())
c.shutdown()
"#;
    let out = String::from_utf8(python_ok(script, &[&obj])).unwrap();
    let version: u64 = out.lines().last().unwrap().parse().unwrap();
    let mut r = ReadOp::new();
    let data = r.read(0, 0);
    let xattrs = r.getxattrs();
    let omap = r.omap_get_vals("", "", 100);
    let crc = r.checksum(ChecksumType::Crc32c, 0, 0, 12, 12);
    let got = io.operate_read(obj.as_bytes(), &r).await.expect("read");
    // write_full, "xyxyxy" over 2..8, END appended at 10, cut to 12 bytes.
    let want: &[u8] = b"01xyxyxy89EN";
    assert_eq!(got.get(data).unwrap(), want);
    assert_eq!(got.get(xattrs).unwrap(), kv(&[("keep", "k")]));
    let vals = got.get(omap).unwrap();
    assert_eq!((vals.vals, vals.more), (kv(&[("z", "26")]), false));
    let sums = got.get(crc).unwrap().0;
    assert_eq!(
        sums,
        vec![u64::from(msgr_encoding::crc32c::ceph_crc32c(0, want))]
    );
    assert_eq!(got.version(), version, "the version librados wrote");
    io.remove(obj.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}
