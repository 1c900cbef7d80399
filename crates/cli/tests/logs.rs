//! `--debug-ms N` sets what the messenger logs on stderr, as Ceph's
//! debug_ms does: 0 warnings only, 1 every message, 5 handshakes and state
//! changes; each line carries the connection's span (id, shard, peer).

mod support;

use std::process::Command;

use support::{Server, MSGR};

/// stderr of `msgr bench` against `server`, at `debug_ms`.
fn bench_stderr(server: &Server, debug_ms: &str) -> String {
    let out = Command::new(MSGR)
        .args([
            "bench",
            "--connect",
            &server.addr,
            "--count",
            "3",
            "--depth",
            "1",
        ])
        .args(["--debug-ms", debug_ms])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn debug_ms_picks_what_is_logged() {
    let server = Server::start(&[]);
    let quiet = bench_stderr(&server, "0");
    assert!(!quiet.contains("msgr:"), "{quiet}");
    let messages = bench_stderr(&server, "1");
    assert_eq!(messages.matches("--> queued").count(), 3, "{messages}");
    assert_eq!(messages.matches("<== received").count(), 3, "{messages}");
    assert!(!messages.contains("session established"), "{messages}");
    let handshakes = bench_stderr(&server, "5");
    assert!(handshakes.contains("session established"), "{handshakes}");
    assert!(
        handshakes.contains("state from=Some(NeedSocket) to=Connecting"),
        "{handshakes}"
    );
    // Every line of a connection carries its span.
    let line = handshakes
        .lines()
        .find(|l| l.contains("session established"))
        .unwrap();
    assert!(
        line.contains("conn{id=") && line.contains("peer=v2:127.0.0.1:"),
        "{line}"
    );
}
