//! `msgr bench --probe`: small requests beside the stream, on its
//! connection, answered and reported apart; the stream's own counts do
//! not include them.

mod support;

use std::process::Command;

use support::MSGR;

fn probe_run(priority: &str) -> serde_json::Value {
    let out = Command::new(MSGR)
        .args([
            "bench",
            "--size",
            "65536",
            "--depth",
            "4",
            "--duration",
            "1",
            "--probe",
            "5",
            "--probe-priority",
            priority,
            "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().last().expect("a JSON line");
    serde_json::from_str(last).expect("JSON")
}

#[test]
fn probes_are_answered_and_counted_apart() {
    for priority in ["196", "127"] {
        let r = probe_run(priority);
        let probes = r["probe_msgs"].as_u64().expect("probe_msgs");
        // One every 5 ms for a second, less the connect.
        assert!(probes >= 20, "{priority}: {probes} probes: {r}");
        assert_eq!(r["probe_lost"].as_u64(), Some(0), "{r}");
        assert!(r["probe_p50_us"].as_u64().is_some_and(|p| p > 0), "{r}");
        assert_eq!(r["lost"].as_u64(), Some(0), "{r}");
        // The stream counts its own requests only (its tids from 1).
        let stream = r["msgs"].as_u64().unwrap();
        let sent = r["counters"]["sent"].as_u64().unwrap();
        assert!(sent >= stream + probes, "{r}");
    }
}
