//! 10000 idle connections cost `msgr serve` at most 8 KiB of resident
//! memory each (Ceph 20's ceph_perf_msgr_server: about 13 KB): a
//! connection holds no read buffer or write arena between messages and
//! trims its queues when idle. Measured as the growth from 2000 to 10000
//! connections (the first steps also pay for the allocator's and the
//! runtime's own start), each READY, with a keepalive and a 4 KiB write
//! answered, then idle; in crc mode and in secure mode. One test, so the
//! two runs' client sockets are not open at once (20000 would pass this
//! machine's hard limit on open files).

use std::path::Path;

use msgr_auth::ConMode;
use msgr_bench::idle::{client_net, hold, Server};

const MSGR: &str = env!("CARGO_BIN_EXE_msgr");
const TARGET_KIB: f64 = 8.0;

fn growth_per_connection(mode: ConMode) -> f64 {
    let server = Server::spawn(Path::new(MSGR), Some(1), mode).unwrap();
    let net = client_net(mode, server.keyring()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let steps = rt
        .block_on(hold(&server, &net, &[2000, 10000], |_| {}))
        .unwrap();
    let [a, b] = steps[..] else {
        panic!("two steps: {steps:?}")
    };
    (b.rss_kib as f64 - a.rss_kib as f64) / (b.conns - a.conns) as f64
}

#[test]
fn ten_thousand_idle_connections_cost_the_server_at_most_8_kib_each() {
    // The server raises its own limit; the client side holds 10000 sockets.
    let limit = msgr_sys::raise_fd_limit().unwrap();
    assert!(
        limit >= 10_200,
        "this test holds 10000 connections: the open-file limit ({limit}) is too low"
    );
    for mode in [ConMode::CRC, ConMode::SECURE] {
        let kib = growth_per_connection(mode);
        eprintln!("{mode:?}: {kib:.2} KiB per idle connection");
        assert!(
            kib <= TARGET_KIB,
            "{mode:?}: {kib:.2} KiB per idle connection, more than {TARGET_KIB}"
        );
    }
}
