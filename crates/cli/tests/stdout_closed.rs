//! A reader that goes away (`msgr ping | head`, `msgr decode | head`) ends
//! the tool quietly, with status 0 and nothing on stderr, where it used to
//! panic in println! (ping) or say "Broken pipe" with status 2 (decode).

mod support;

use std::process::{Command, Output, Stdio};

use support::{Server, MSGR};

/// Runs `msgr ARGS` with its stdout a pipe whose reader is already closed.
fn with_stdout_closed(args: &[&str]) -> Output {
    let mut child = Command::new(MSGR)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn assert_quiet(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn ping_ends_quietly_when_its_reader_goes_away() {
    let server = Server::start(&[]);
    let args = ["ping", &server.addr, "--count", "3", "--interval", "10"];
    assert_quiet(&with_stdout_closed(&args));
}

#[test]
fn decode_ends_quietly_when_its_reader_goes_away() {
    // Its text is far longer than the writer's buffer, so writes fail
    // before the end.
    let capture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/captures/tentacle-osd-compress-lz4.pcap"
    );
    assert_quiet(&with_stdout_closed(&["decode", capture]));
}
