//! `msgr rados opbench` on a live cluster (the benchmark's measuring, not
//! its numbers: no timing is asserted): each mode runs, prints the line
//! scripts/bench/rados-ops-vs-librados.sh reads (the same keys as
//! scripts/bench/rados_ops_bench.c's), and leaves no object behind, as
//! Ceph's `rados ls` sees it (see tests/support/live.rs for how these run).

mod support;

use std::collections::BTreeMap;

use support::live::{msgr_cli, rados_ok};

/// `opbench`'s objects left in pool `test`, as `rados ls` lists them.
fn leftovers() -> Vec<String> {
    let ls = rados_ok(&["-p", "test", "ls"]);
    String::from_utf8_lossy(&ls)
        .lines()
        .filter(|l| l.starts_with("opbench_"))
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
fn each_mode_prints_its_line_and_cleans_up() {
    for (t, mode) in [
        ("1", "notify"),
        ("1", "compound-write"),
        ("4", "compound-write"),
        ("1", "compound-read"),
        ("4", "compound-read"),
    ] {
        let out = msgr_cli(&["rados", "-p", "test", "-t", t, "opbench", "20", mode]);
        assert!(out.status.success(), "opbench {mode}: {out:?}");
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        let kv: BTreeMap<&str, &str> = text
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        let keys: Vec<&str> = kv.keys().copied().collect();
        assert_eq!(
            keys,
            [
                "cpu_us_per_op",
                "in_flight",
                "median_us",
                "mode",
                "ops",
                "ops_per_s",
                "p99_us",
                "secs",
                "tool"
            ],
            "{text}"
        );
        assert_eq!(kv["tool"], "msgr");
        assert_eq!(kv["mode"], mode);
        assert_eq!(kv["ops"], "20");
        // notifies go one at a time whatever -t says
        let q = if mode == "notify" { "1" } else { t };
        assert_eq!(kv["in_flight"], q, "{text}");
        for k in ["secs", "ops_per_s", "median_us", "p99_us", "cpu_us_per_op"] {
            let v: f64 = kv[k].parse().unwrap_or_else(|_| panic!("{k} in {text}"));
            assert!(v.is_finite() && v >= 0.0, "{k} in {text}");
        }
        let median: f64 = kv["median_us"].parse().expect("median");
        let p99: f64 = kv["p99_us"].parse().expect("p99");
        assert!(median <= p99, "{text}");
        assert_eq!(leftovers(), Vec::<String>::new(), "after opbench {mode}");
    }
}

#[test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
fn a_bad_mode_is_refused() {
    let out = msgr_cli(&["rados", "-p", "test", "opbench", "20", "rand"]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("expected notify, compound-write or compound-read"),
        "{err}"
    );
}
