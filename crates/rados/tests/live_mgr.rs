//! Commands to the active mgr (`Rados::mgr_command`) against librados's
//! (`Rados.mgr_command` in Python) on the same cluster: the same result
//! codes and outputs, an effect one sets the other reads back (see
//! tests/support/live.rs for how these run).

mod support;

use std::time::Duration;

use bytes::Bytes;
use support::live::{connect, python_ok};

/// Runs each command of argv[2:] with librados's mgr_command (to target
/// argv[1], "-" for the active mgr) and prints, per command, a JSON line
/// `{"r": R, "out": OUTPUT, "outs": STATUS}`.
const PY_MGR: &str = r#"
import os, sys, json, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
target = sys.argv[1]
for cmd in sys.argv[2:]:
    if target == "-":
        r, out, outs = c.mgr_command(cmd, b"", timeout=30)
    else:
        r, out, outs = c.mgr_command(cmd, b"", timeout=30, target=target)
    print(json.dumps({"r": r, "out": out.decode(), "outs": outs}))
"#;

/// Compares argv[1] and argv[2], two JSON texts, as parsed values
/// (`keys`: only their top-level keys); prints "same" or what differs.
const PY_SAME_JSON: &str = r#"
import sys, json
a, b = json.loads(sys.argv[2]), json.loads(sys.argv[3])
mode = sys.argv[1]
if mode == "keys":
    a, b = sorted(a.keys()), sorted(b.keys())
elif mode.startswith("all-but:"):
    drop = set(mode[len("all-but:"):].split(","))
    strip = lambda d: {k: v for k, v in d.items() if k not in drop}
    a, b = ([strip(x) for x in v] if isinstance(v, list) else strip(v) for v in (a, b))
print("same" if a == b else "differ: %r != %r" % (a, b))
"#;

/// librados's replies to `cmds` (r, output, status), sent to `target`
/// (None: the active mgr).
fn theirs(target: Option<&str>, cmds: &[&str]) -> Vec<(i32, String, String)> {
    let mut args = vec![target.unwrap_or("-")];
    args.extend_from_slice(cmds);
    let out = python_ok(PY_MGR, &args);
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| {
            // Parsed by Python again to keep this crate free of a JSON
            // parser: r, then the output and status as Python prints them.
            let script = r#"
import sys, json
v = json.loads(sys.argv[1])
sys.stdout.write(str(v["r"]) + "\0" + v["out"] + "\0" + v["outs"])
"#;
            let fields = python_ok(script, &[l]);
            let fields = String::from_utf8(fields).expect("utf-8");
            let mut it = fields.splitn(3, '\0');
            let r = it.next().unwrap().parse().expect("r");
            let out = it.next().unwrap_or_default().to_string();
            let outs = it.next().unwrap_or_default().to_string();
            (r, out, outs)
        })
        .collect()
}

/// How two replies of a command are compared.
#[derive(Clone, Copy)]
enum Compare {
    /// The whole value.
    All,
    /// The top-level keys (values that move between two runs).
    Keys,
    /// The whole value but these keys of each object (at the top or in a
    /// top-level list): figures that move as the cluster's usage does.
    AllBut(&'static str),
}

/// Whether two JSON texts parse to the same value, compared as `how`
/// says, as Python's json sees them.
fn same_json(a: &str, b: &str, how: Compare) {
    let mode = match how {
        Compare::All => "all".to_string(),
        Compare::Keys => "keys".to_string(),
        Compare::AllBut(keys) => format!("all-but:{keys}"),
    };
    let said = python_ok(PY_SAME_JSON, &[&mode, a, b]);
    assert_eq!(
        String::from_utf8_lossy(&said).trim(),
        "same",
        "ours: {a}\ntheirs: {b}"
    );
}

/// Read-only mgr commands that Ceph 16 and 20 both have, and how their
/// replies through us and through librados are compared: balancer
/// status's timestamps move when the balancer runs (its keys); a pool's
/// usage in autoscale-status moves as the mgr's PG stats catch up with
/// writes of the tests before (all but those figures).
const READ_ONLY: &[(&str, Compare)] = &[
    (
        r#"{"prefix": "balancer status", "format": "json"}"#,
        Compare::Keys,
    ),
    (r#"{"prefix": "crash ls", "format": "json"}"#, Compare::All),
    (r#"{"prefix": "device ls", "format": "json"}"#, Compare::All),
    (
        r#"{"prefix": "osd pool autoscale-status", "format": "json"}"#,
        Compare::AllBut(
            "actual_capacity_ratio,actual_raw_used,capacity_ratio,logical_used,raw_used",
        ),
    ),
];

/// Each read-only command answers the same through us and through
/// librados (r, and the JSON output), and a command the mgr does not
/// know fails with the same errno and status both ways.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn mgr_commands_answer_as_librados() {
    let rados = connect().await;
    let cmds: Vec<&str> = READ_ONLY.iter().map(|(c, _)| *c).collect();
    let mut ours = Vec::new();
    for cmd in &cmds {
        let r = rados
            .mgr_command(cmd, Bytes::new())
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
        ours.push(r);
    }
    let replies = theirs(None, &cmds);
    for (((cmd, how), o), (r, out, _)) in READ_ONLY.iter().zip(&ours).zip(&replies) {
        assert_eq!(o.r, *r, "{cmd}: {}", o.rs);
        assert_eq!(o.r, 0, "{cmd}: {}", o.rs);
        same_json(&String::from_utf8_lossy(&o.output), out, *how);
    }

    let unknown = r#"{"prefix": "no such mgr command"}"#;
    let o = rados
        .mgr_command(unknown, Bytes::new())
        .await
        .expect("an answer");
    let t = theirs(None, &[unknown]);
    assert_eq!(o.r, -22, "{}", o.rs);
    assert_eq!((o.r, o.rs.as_str()), (t[0].0, t[0].2.as_str()));
    assert!(o.output.is_empty());
    rados.shutdown().await;
}

/// What one sets through the mgr, the other reads back: the balancer's
/// mode, set by us and read by librados, then set by librados and read
/// by us; the mode it had is put back.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn a_mode_set_by_one_is_read_by_the_other() {
    let rados = connect().await;
    let mode_of = |status: &str| -> String {
        let script = r#"
import sys, json
sys.stdout.write(json.loads(sys.argv[1])["mode"])
"#;
        String::from_utf8(python_ok(script, &[status])).expect("utf-8")
    };
    let status = r#"{"prefix": "balancer status", "format": "json"}"#;
    let before = rados
        .mgr_command(status, Bytes::new())
        .await
        .expect("balancer status");
    assert_eq!(before.r, 0, "{}", before.rs);
    let original = mode_of(&String::from_utf8_lossy(&before.output));
    let set = |mode: &str| format!(r#"{{"prefix": "balancer mode", "mode": "{mode}"}}"#);
    let (first, second) = match original.as_str() {
        "crush-compat" => ("upmap", "none"),
        _ => ("crush-compat", "none"),
    };

    // Ours sets, librados reads; librados sets, ours reads; an unknown
    // mode both ways. Observed first, the mode put back, then checked.
    let set_ours = rados.mgr_command(&set(first), Bytes::new()).await;
    let read_theirs = theirs(None, &[status]);
    let set_theirs = theirs(None, &[&set(second)]);
    let read_ours = rados.mgr_command(status, Bytes::new()).await;
    let bad = set("no-such-mode");
    let bad_ours = rados.mgr_command(&bad, Bytes::new()).await;
    let bad_theirs = theirs(None, &[&bad]);
    let restored = rados.mgr_command(&set(&original), Bytes::new()).await;

    let r = set_ours.expect("balancer mode");
    assert_eq!(r.r, 0, "{}", r.rs);
    assert_eq!(mode_of(&read_theirs[0].1), first);
    assert_eq!(set_theirs[0].0, 0, "{}", set_theirs[0].2);
    let r = read_ours.expect("balancer status");
    assert_eq!(mode_of(&String::from_utf8_lossy(&r.output)), second);
    let o = bad_ours.expect("an answer");
    assert_eq!(
        (o.r, o.rs.as_str()),
        (bad_theirs[0].0, bad_theirs[0].2.as_str())
    );
    let r = restored.expect("balancer mode restored");
    assert_eq!(r.r, 0, "{}", r.rs);
    rados.shutdown().await;
}

/// The map the client follows names the mgr `ceph mgr dump` names; a
/// command to the active mgr by name (a tell) answers as librados's
/// `mgr_command(target=...)`; one to a mgr that is not active is ENXIO.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn the_mgr_map_and_commands_to_a_named_mgr() {
    let rados = connect().await;
    let map = rados
        .mon()
        .wait_mgrmap(|m| m.has_active(), Duration::from_secs(30))
        .await
        .expect("an active mgr");
    let dump = support::live::python_ok(
        r#"
import os, json, rados
c = rados.Rados(conffile=os.environ["CEPH_CONF"]); c.connect()
r, out, outs = c.mon_command(json.dumps({"prefix": "mgr dump", "format": "json"}), b"")
m = json.loads(out)
print(m["active_name"], m["active_gid"], m["active_mgr_features"])
"#,
        &[],
    );
    let dump = String::from_utf8(dump).expect("utf-8");
    let fields: Vec<&str> = dump.split_whitespace().collect();
    assert_eq!(fields[0], map.active_name);
    assert_eq!(fields[1], map.active_gid.to_string());
    assert_eq!(fields[2], map.active_mgr_features.to_string());

    // Tells to the active mgr: what librados's get.
    let tells = [
        r#"{"prefix": "version"}"#,
        r#"{"prefix": "config get", "var": "mgr_tick_period"}"#,
    ];
    let t = theirs(Some(&map.active_name), &tells);
    for (tell, (r, out, outs)) in tells.iter().zip(&t) {
        let ours = rados
            .mgr_command_target(&map.active_name, tell, Bytes::new())
            .await
            .expect("tell");
        assert_eq!((ours.r, *r), (0, 0), "ours: {}; theirs: {outs}", ours.rs);
        same_json(&String::from_utf8_lossy(&ours.output), out, Compare::All);
    }
    // A tell is not a mgr command: the mgr's own refusal, both ways.
    let not_tell = r#"{"prefix": "balancer status"}"#;
    let ours = rados
        .mgr_command_target(&map.active_name, not_tell, Bytes::new())
        .await
        .expect("an answer");
    let t = theirs(Some(&map.active_name), &[not_tell]);
    assert!(ours.r < 0);
    assert_eq!((ours.r, ours.rs.as_str()), (t[0].0, t[0].2.as_str()));
    let tell = tells[0];
    let e = rados
        .mgr_command_target("no-such-mgr", tell, Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(-6), "{e}");
    rados.shutdown().await;
}

/// `msgr mon mgr JSON` prints what librados's mgr_command returns (the
/// output on stdout, the status on stderr, the errno as exit code), and
/// `msgr mon tell mgr.NAME JSON` what a tell returns.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn msgr_mon_mgr_prints_what_librados_returns() {
    use support::live::msgr_cli;
    let cmd = r#"{"prefix": "crash ls", "format": "json"}"#;
    let ours = msgr_cli(&["mon", "mgr", cmd]);
    assert!(ours.status.success(), "{ours:?}");
    let t = theirs(None, &[cmd]);
    same_json(
        &String::from_utf8_lossy(&ours.stdout),
        &t[0].1,
        Compare::All,
    );

    let unknown = r#"{"prefix": "no such mgr command"}"#;
    let ours = msgr_cli(&["mon", "mgr", unknown]);
    let t = theirs(None, &[unknown]);
    assert_eq!(ours.status.code(), Some(-t[0].0), "{ours:?}");
    assert_eq!(String::from_utf8_lossy(&ours.stderr).trim(), t[0].2);

    let rados = connect().await;
    let active = rados
        .mon()
        .wait_mgrmap(|m| m.has_active(), Duration::from_secs(30))
        .await
        .expect("an active mgr")
        .active_name
        .clone();
    rados.shutdown().await;
    let version = r#"{"prefix": "version"}"#;
    let ours = msgr_cli(&["mon", "tell", &format!("mgr.{active}"), version]);
    assert!(ours.status.success(), "{ours:?}");
    let t = theirs(Some(&active), &[version]);
    same_json(
        &String::from_utf8_lossy(&ours.stdout),
        &t[0].1,
        Compare::All,
    );
}
