//! Usage, applications, blocklisting, the newest map and daemon commands
//! against librados (Python's `rados` module) on a live cluster (see
//! tests/support/live.rs for how these run).
//!
//! Pool and cluster usage come from the mgr's reports: on a cluster
//! without an active mgr both clients read zeros, which are compared all
//! the same; the checks that the numbers move with writes need a mgr and
//! say so when they are skipped.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_rados::Rados;
use support::live::{connect, python_ok, unique};

const POOL: &str = "test";

/// Whether the cluster has an active mgr (`mgr stat`).
async fn mgr_available(rados: &Rados) -> bool {
    let r = rados
        .mon()
        .command(
            r#"{"prefix": "mgr stat", "format": "json"}"#,
            Bytes::new(),
            Duration::from_secs(30),
        )
        .await
        .expect("mgr stat");
    let out = String::from_utf8_lossy(&r.output).replace(' ', "");
    r.r == 0 && out.contains("\"available\":true")
}

const PY_STATS: &str = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
s = c.open_ioctx(sys.argv[1]).get_stats()
print(" ".join("%s=%d" % (k, s[k]) for k in sorted(s)))
s = c.get_cluster_stats()
print(" ".join("%s=%d" % (k, s[k]) for k in sorted(s)))
"#;

/// Ours, as the Python script prints librados's.
async fn our_stats(rados: &Rados) -> String {
    let p = rados.pool_stat(POOL).await.expect("pool stats");
    let pool = [
        ("num_bytes", p.num_bytes),
        ("num_kb", p.num_kb),
        ("num_object_clones", p.num_object_clones),
        ("num_object_copies", p.num_object_copies),
        ("num_objects", p.num_objects),
        ("num_objects_degraded", p.num_objects_degraded),
        (
            "num_objects_missing_on_primary",
            p.num_objects_missing_on_primary,
        ),
        ("num_objects_unfound", p.num_objects_unfound),
        ("num_rd", p.num_rd),
        ("num_rd_kb", p.num_rd_kb),
        ("num_wr", p.num_wr),
        ("num_wr_kb", p.num_wr_kb),
    ];
    let c = rados.cluster_stat().await.expect("cluster stat");
    let cluster = [
        ("kb", c.kb),
        ("kb_avail", c.kb_avail),
        ("kb_used", c.kb_used),
        ("num_objects", c.num_objects),
    ];
    let line = |kv: &[(&str, u64)]| {
        kv.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("{}\n{}\n", line(&pool), line(&cluster))
}

/// Pool and cluster usage equal librados's on the same cluster (polled:
/// the mgr reports every few seconds, so one read may fall between two
/// reports); with a mgr, a write shows in both.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn usage_equals_librados() {
    let rados = connect().await;
    let mgr = mgr_available(&rados).await;
    let io = rados.ioctx(POOL).expect("pool test");
    let name = unique("stats-usage");
    io.write_full(name.as_bytes(), Bytes::from(vec![7u8; 8192]))
        .await
        .expect("written");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let before = our_stats(&rados).await;
        let theirs = String::from_utf8(python_ok(PY_STATS, &[POOL])).unwrap();
        let after = our_stats(&rados).await;
        let counted = !mgr || !theirs.contains(" num_objects=0 ");
        if (before == theirs || after == theirs) && counted {
            println!("usage equals librados's:\n{theirs}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ours\n{before}{after}librados's\n{theirs}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    if !mgr {
        println!("no active mgr: usage is zeros on both sides; a write moving it not checked");
    }
    io.remove(name.as_bytes()).await.expect("removed");
    rados.shutdown().await;
}

const PY_APPS: &str = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
io = c.open_ioctx(sys.argv[1])
op, app = sys.argv[2], sys.argv[3]
if op == "list":
    c.wait_for_latest_osdmap()
    print(app in io.application_list())
    print(sorted(io.application_metadata_list(app)))
elif op == "set":
    io.application_metadata_set(app, sys.argv[4], sys.argv[5])
elif op == "remove":
    io.application_metadata_remove(app, sys.argv[4])
"#;

/// Application metadata set by us is seen by librados, and the reverse;
/// then the application is disabled again.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn application_metadata_both_ways() {
    let rados = connect().await;
    let app = unique("app").replace('-', "");
    rados
        .application_enable(POOL, &app, true)
        .await
        .expect("enabled");
    assert!(rados.application_list(POOL).unwrap().contains(&app));
    rados
        .application_metadata_set(POOL, &app, "ours", "v1")
        .await
        .expect("set");
    let seen = String::from_utf8(python_ok(PY_APPS, &[POOL, "list", &app])).unwrap();
    assert_eq!(seen, "True\n[('ours', 'v1')]\n");

    python_ok(PY_APPS, &[POOL, "set", &app, "theirs", "v2"]);
    rados.wait_for_latest_osdmap().await.expect("newest map");
    assert_eq!(
        rados
            .application_metadata_get(POOL, &app, "theirs")
            .unwrap(),
        "v2"
    );
    rados
        .application_metadata_remove(POOL, &app, "ours")
        .await
        .expect("removed");
    let seen = String::from_utf8(python_ok(PY_APPS, &[POOL, "list", &app])).unwrap();
    assert_eq!(seen, "True\n[('theirs', 'v2')]\n");
    python_ok(PY_APPS, &[POOL, "remove", &app, "theirs"]);
    rados.wait_for_latest_osdmap().await.expect("newest map");
    let e = rados
        .application_metadata_get(POOL, &app, "theirs")
        .unwrap_err();
    assert_eq!(e.errno(), Some(-2), "{e}");
    assert!(rados
        .application_metadata_list(POOL, &app)
        .unwrap()
        .is_empty());

    let disable = format!(
        r#"{{"prefix": "osd pool application disable", "pool": "{POOL}", "app": "{app}", "yes_i_really_mean_it": true}}"#
    );
    let r = rados
        .mon()
        .command(&disable, Bytes::new(), Duration::from_secs(30))
        .await
        .expect("disable");
    assert_eq!(r.r, 0, "{}", r.rs);
    rados.wait_for_latest_osdmap().await.expect("newest map");
    assert!(!rados.application_list(POOL).unwrap().contains(&app));
    let e = rados.application_metadata_list(POOL, &app).unwrap_err();
    assert_eq!(e.errno(), Some(-2), "{e}");
    rados.shutdown().await;
}

/// A map change made through librados is the client's once
/// wait_for_latest_osdmap returns, with no other waiting.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn the_latest_osdmap_after_a_change() {
    let rados = connect().await;
    let before = rados.osdmap().epoch;
    let app = unique("mapapp").replace('-', "");
    let script = r#"
import os, sys, rados, json
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
for cmd in ({"prefix": "osd pool application enable", "pool": sys.argv[1], "app": sys.argv[2], "yes_i_really_mean_it": True},
            {"prefix": "osd pool application disable", "pool": sys.argv[1], "app": sys.argv[2], "yes_i_really_mean_it": True}):
    r, out, outs = c.mon_command(json.dumps(cmd), b"")
    assert r == 0, outs
c.wait_for_latest_osdmap()
print(c.get_fsid())
"#;
    python_ok(script, &[POOL, &app]);
    let epoch = rados.wait_for_latest_osdmap().await.expect("newest map");
    assert!(epoch >= before + 2, "epoch {epoch}, was {before}");
    assert!(rados.osdmap().epoch >= epoch);
    rados.shutdown().await;
}

/// blocklist_add shows in `osd blocklist ls` (as librados's does), and the
/// map we hold has it once the call returns.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_blocklisted_address_is_listed() {
    let rados = connect().await;
    let nonce = std::process::id();
    let addr = format!("127.0.0.1:9/{nonce}");
    rados.blocklist_add(&addr, 600).await.expect("blocklisted");
    let r = rados
        .mon()
        .command(
            r#"{"prefix": "osd blocklist ls", "format": "json"}"#,
            Bytes::new(),
            Duration::from_secs(30),
        )
        .await
        .expect("blocklist ls");
    let listed = String::from_utf8_lossy(&r.output).to_string();
    assert!(listed.contains(&addr), "{addr} not in {listed}");
    // librados's listing agrees.
    let script = r#"
import os, sys, rados, json
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
r, out, outs = c.mon_command(json.dumps({"prefix": "osd blocklist ls", "format": "json"}), b"")
print(sys.argv[1] in out.decode())
"#;
    assert_eq!(python_ok(script, &[&addr]), b"True\n");
    let rm = format!(r#"{{"prefix": "osd blocklist", "blocklistop": "rm", "addr": "{addr}"}}"#);
    let r = rados
        .mon()
        .command(&rm, Bytes::new(), Duration::from_secs(30))
        .await
        .expect("blocklist rm");
    assert_eq!(r.r, 0, "{}", r.rs);
    // Not an address: refused before asking.
    let e = rados.blocklist_add("not an address", 0).await.unwrap_err();
    assert_eq!(e.errno(), Some(-22), "{e}");
    rados.shutdown().await;
}

const PY_CMD: &str = r#"
import os, sys, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
if sys.argv[1] == "osd":
    r, out, outs = c.osd_command(int(sys.argv[2]), sys.argv[3], b"")
else:
    r, out, outs = c.pg_command(sys.argv[2], sys.argv[3], b"")
assert r == 0, outs
sys.stdout.write(out.decode())
"#;

/// osd_command's reply equals librados's; pg_command reaches the PG's
/// primary (its `query` answers for that PG, in the acting set librados's
/// sees); commands to OSDs that are not up fail with ENXIO.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn osd_and_pg_commands_equal_librados() {
    let rados = connect().await;
    let cmd = r#"{"prefix": "version"}"#;
    // The first OSD up (others may be stopped by other tests).
    let map = rados.osdmap();
    let osd = (0..map.max_osd).find(|o| map.is_up(*o)).expect("an OSD up");
    let ours = rados
        .osd_command(osd, cmd, Bytes::new())
        .await
        .expect("osd command");
    assert_eq!(ours.r, 0, "{}", ours.rs);
    let theirs = python_ok(PY_CMD, &["osd", &osd.to_string(), cmd]);
    assert_eq!(
        String::from_utf8_lossy(&ours.output),
        String::from_utf8_lossy(&theirs)
    );
    assert!(String::from_utf8_lossy(&theirs).contains("\"version\""));

    let pool = rados.osdmap().pool_id(POOL).expect("pool test");
    // A PG whose primary is up (others may be stopped by other tests).
    let pg_num = map.pools[&pool].pg_num;
    let seed = (0..pg_num)
        .find(|seed| {
            let pg = msgr_messages::osd_types::PgId {
                pool: pool as u64,
                seed: *seed,
            };
            map.pg_to_up_acting(pg)
                .is_some_and(|u| u.acting_primary >= 0 && map.is_up(u.acting_primary))
        })
        .expect("a PG with its primary up");
    let pgid = format!("{pool}.{seed:x}");
    let query = format!(r#"{{"prefix": "query", "pgid": "{pgid}"}}"#);
    let ours = rados
        .pg_command(&pgid, &query, Bytes::new())
        .await
        .expect("pg command");
    assert_eq!(ours.r, 0, "{}", ours.rs);
    let ours = String::from_utf8_lossy(&ours.output).to_string();
    let theirs = String::from_utf8(python_ok(PY_CMD, &["pg", &pgid, &query])).unwrap();
    // The answers hold times and counters that move; the PG and its
    // acting set do not.
    let field = |text: &str, key: &str| -> String {
        let at = text.find(key).unwrap_or_else(|| panic!("{key} in {text}"));
        let rest = &text[at..];
        rest[..rest.find(']').or_else(|| rest.find(',')).unwrap()].to_string()
    };
    assert!(ours.contains(&format!("\"{pgid}\"")), "{ours}");
    assert_eq!(field(&ours, "\"acting\""), field(&theirs, "\"acting\""));

    let e = rados
        .osd_command(9999, cmd, Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(-6), "{e}");
    let e = rados
        .pg_command("nonsense", &query, Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(-22), "{e}");
    let base = rados.pool_get_base_tier(pool).expect("base tier");
    assert_eq!(base, pool, "pool test is no cache tier");
    rados.shutdown().await;
}

/// `msgr rados df` prints what `rados df` prints, plain and `-f json`
/// (polled: the mgr's reports may change between the two runs).
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn rados_df_prints_what_rados_prints() {
    use support::live::{msgr_cli, rados_cli};
    for format in [None, Some("json")] {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut ours = vec!["rados", "df"];
            let mut theirs = vec!["df"];
            if let Some(f) = format {
                ours.extend(["-f", f]);
                theirs.extend(["--format", f]);
            }
            let o = msgr_cli(&ours);
            assert!(o.status.success(), "{o:?}");
            let t = rados_cli(&theirs);
            assert!(t.status.success(), "{t:?}");
            if o.stdout == t.stdout {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "ours:\n{}\nrados's:\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&t.stdout)
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// The cluster log: a line logged through librados (`log` as `ceph log`
/// sends it) arrives in our subscription; one we log arrives in
/// librados's monitor_log callback.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn cluster_log_both_ways() {
    let rados = connect().await;
    rados.monitor_log("info").expect("following the log");
    // Let the subscription reach the monitor first.
    let _ = rados.log_entries(Duration::from_secs(1)).await;
    let theirs = unique("stats-log-theirs");
    let script = r#"
import os, sys, rados, json
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
r, out, outs = c.mon_command(json.dumps({"prefix": "log", "logtext": [sys.argv[1]]}), b"")
assert r == 0, outs
"#;
    python_ok(script, &[&theirs]);
    let deadline = Instant::now() + Duration::from_secs(30);
    'found: loop {
        let (entries, _) = rados
            .log_entries(Duration::from_secs(5))
            .await
            .expect("log entries");
        for e in &entries {
            if e.msg.contains(&theirs) {
                assert_eq!(e.channel, "cluster");
                assert_eq!(e.prio, msgr_messages::log::prio::INFO);
                break 'found;
            }
        }
        assert!(Instant::now() < deadline, "{theirs} never arrived");
    }

    // The reverse: librados follows, we log.
    let ours = unique("stats-log-ours");
    let watch = r#"
import os, sys, rados, time
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
seen = []
c.monitor_log("info", lambda arg, line, who, sec, nsec, seq, level, msg: seen.append(msg.decode() if isinstance(msg, bytes) else msg), None)
print("ready", flush=True)
end = time.time() + 30
while time.time() < end and not any(sys.argv[1] in m for m in seen):
    time.sleep(0.2)
print(any(sys.argv[1] in m for m in seen))
"#;
    let env_py = std::env::var("MSGR_TEST_PYTHON").unwrap();
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{env_py} - {ours}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(watch.as_bytes()).unwrap();
    }
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert_eq!(line, "ready\n");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cmd = format!(r#"{{"prefix": "log", "logtext": ["{ours}"]}}"#);
    let r = rados
        .mon()
        .command(&cmd, Bytes::new(), Duration::from_secs(30))
        .await
        .expect("log");
    assert_eq!(r.r, 0, "{}", r.rs);
    line.clear();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(line, "True\n", "librados did not see {ours}");
    rados.shutdown().await;
}
