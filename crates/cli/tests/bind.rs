//! `msgr serve --bind IP:PORT` without a protocol binds as a Ceph daemon
//! binds its public address: msgr2 and msgr1 on consecutive ports, each
//! only while its `ms_bind_msgr2` / `ms_bind_msgr1` is on (the command
//! line's `--ms_bind_*`, or CEPH_ARGS). Each address it advertises answers
//! in its own protocol.

mod support;

use std::process::Command;

use support::{Server, MSGR};

/// The addresses of a "listening on" line.
fn addrs(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == '[' || c == ',' || c == ']')
        .filter(|w| w.starts_with("v2:") || w.starts_with("v1:"))
        .map(str::to_string)
        .collect()
}

fn port(addr: &str) -> u16 {
    let hostport = addr.rsplit_once('/').map_or(addr, |(hp, _)| hp);
    hostport.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// `msgr ping ADDR` once; its output.
fn ping(addr: &str) -> String {
    let out = Command::new(MSGR)
        .args(["ping", addr, "--count", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_bare_address_binds_both_protocols_on_consecutive_ports() {
    // A port whose next one is free too (the server binds both).
    let port0 = (0..100)
        .find_map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let p = l.local_addr().unwrap().port();
            let next = std::net::TcpListener::bind(("127.0.0.1", p.checked_add(1)?));
            next.is_ok().then_some(p)
        })
        .expect("a free pair of consecutive ports");
    let bind = format!("127.0.0.1:{port0}");
    let server = Server::start_at(&bind, &[]);
    let a = addrs(&server.line);
    assert_eq!(a.len(), 2, "{}", server.line);
    assert!(a[0].starts_with("v2:") && a[1].starts_with("v1:"), "{a:?}");
    assert_eq!((port(&a[0]), port(&a[1])), (port0, port0 + 1), "{a:?}");
    assert!(ping(&a[0]).contains("(crc)"));
    assert!(ping(&a[1]).contains("(msgr1)"));
}

#[test]
fn ms_bind_options_leave_a_protocol_out() {
    let v2_only = Server::start_at("127.0.0.1:0", &["--ms_bind_msgr1=false"]);
    let a = addrs(&v2_only.line);
    assert!(a.len() == 1 && a[0].starts_with("v2:"), "{}", v2_only.line);

    let v1_only = Server::start_with(
        "127.0.0.1:0",
        &[],
        &[("CEPH_ARGS", "--ms_bind_msgr2=false")],
    );
    let a = addrs(&v1_only.line);
    assert!(a.len() == 1 && a[0].starts_with("v1:"), "{}", v1_only.line);
    assert!(ping(&a[0]).contains("(msgr1)"));

    // An address written with its protocol is bound as written.
    let written = Server::start_at("v1:127.0.0.1:0", &["--ms_bind_msgr1=false"]);
    assert!(
        addrs(&written.line)[0].starts_with("v1:"),
        "{}",
        written.line
    );
}
