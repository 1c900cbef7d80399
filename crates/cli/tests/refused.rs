//! `msgr ping` and `msgr bench` against a server that refuses them end
//! with a non-zero exit and the reason, not an endless "reconnecting": a
//! wrong nonce (the server closes after our CLIENT_IDENT, in the same
//! phase every time) and auth none against a cephx-only server (refused in
//! AUTH_BAD_METHOD). And a server bound to the wildcard answers on every
//! address it listens on.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const MSGR: &str = env!("CARGO_BIN_EXE_msgr");

/// `msgr serve` on a free port; its address (`v2:127.0.0.1:PORT/NONCE`).
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        Server::start_at("v2:127.0.0.1:0", extra)
    }

    fn start_at(bind: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(MSGR)
            .args(["serve", "--bind", bind, "--nonce", "5"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "msgr serve: osd.0 listening on v2:127.0.0.1:PORT/5 (policy ...)"
        let addr = line
            .split_whitespace()
            .find(|w| w.starts_with("v2:"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
    }

    /// Our address with another nonce: not the server's.
    fn wrong_nonce(&self) -> String {
        format!("{}/6", self.addr.rsplit_once('/').unwrap().0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
    let dir = std::env::temp_dir().join(format!("msgr-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keyring = dir.join("keyring");
    let server = Server::start(&["--auth", "cephx", "--keyring", keyring.to_str().unwrap()]);
    let (out, took) = run(&["ping", &server.addr, "--count", "3"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refused us"), "{err}");
    assert!(err.contains("auth"), "{err}");
    assert!(!err.contains("reconnecting"), "refused at once: {err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
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
