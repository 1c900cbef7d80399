//! `msgr ping` and `msgr bench` against a server that refuses them end
//! with a non-zero exit and the reason, not an endless "reconnecting": a
//! wrong nonce (the server closes after our CLIENT_IDENT, in the same
//! phase every time) and auth none against a cephx-only server (refused in
//! AUTH_BAD_METHOD). And a server bound to the wildcard answers on every
//! address it listens on.

mod support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::{Server, MSGR};

/// Runs `msgr ARGS`; returns its output and how long it took.
fn run(args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let out = Command::new(MSGR).args(args).output().unwrap();
    (out, t.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn ping_and_bench_stop_when_the_server_refuses_our_ident() {
    let server = Server::start(&[]);
    let target = server.wrong_nonce();

    let (out, took) = run(&["ping", &target, "--count", "3"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refused us"), "{err}");
    assert!(err.contains("refused our CLIENT_IDENT"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {err}");

    let (out, took) = run(&["bench", "--connect", &target, "--count", "10"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refused our CLIENT_IDENT"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {err}");

    // The right address is served (the refusal was the nonce).
    let (out, _) = run(&["ping", &server.addr, "--count", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn ping_stops_when_the_server_refuses_our_authentication() {
    // serve writes a keyring there, or loads the one it finds: a directory
    // of the test's own.
    let dir = msgr_admin::private_dir::PrivateDir::new("msgr-refused").expect("a directory");
    let keyring = dir.join("keyring");
    let keyring = keyring.to_str().expect("a UTF-8 path");
    let server = Server::start(&["--auth", "cephx", "--keyring", keyring]);
    let (out, took) = run(&["ping", &server.addr, "--count", "3"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refused us"), "{err}");
    assert!(err.contains("auth"), "{err}");
    assert!(!err.contains("reconnecting"), "refused at once: {err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    drop(server);
}

/// The reproduction: `msgr serve --bind v2:0.0.0.0:PORT`, pinged
/// once over 127.0.0.1, then over another address: both are served, in
/// either order, as often as asked.
#[test]
fn a_wildcard_server_answers_pings_on_every_address() {
    let server = Server::start_at("v2:0.0.0.0:0", &[]);
    // "v2:0.0.0.0:PORT/5": the port is what a client needs.
    let port = server
        .addr
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    for ip in ["127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2"] {
        let target = format!("v2:{ip}:{port}/5");
        let (out, _) = run(&["ping", &target, "--count", "2", "--interval", "10"]);
        assert!(out.status.success(), "{target}: {}", stderr(&out));
    }
}
