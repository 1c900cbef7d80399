//! The sans-IO protocol path alone: two `Conn`s handing bytes to each other
//! in memory, a client sending `COUNT` MESSAGEs of `SIZE` bytes `DEPTH` at a
//! time and the server answering each. No sockets, tasks or clocks beyond
//! one `Instant::now()` per batch: what the protocol layer costs per
//! message. `conn-pair [SIZE] [COUNT] [DEPTH]`.
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_frames::WireQueue;
use msgr_protocol::{Config, Endpoint, Event, Message, Policy, PolicySet, Protocol};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("number"))
        .collect();
    let size = args.first().copied().unwrap_or(4096);
    let count = args.get(1).copied().unwrap_or(200_000);
    let depth = args.get(2).copied().unwrap_or(128);
    let now = Instant::now();
    let ccfg = Arc::new(Config::new(
        "client.1".parse().expect("a valid literal"),
        Arc::new(NoneProvider),
        PolicySet::new(Policy::lossless_client()),
    ));
    let scfg = Arc::new(Config::new(
        "osd.0".parse().expect("a valid literal"),
        Arc::new(NoneProvider),
        PolicySet::new(Policy::stateless_server()),
    ));
    let saddrs: EntityAddrvec = "v2:127.0.0.1:6800/0".parse().expect("a valid literal");
    let caddrs: EntityAddrvec = "v2:127.0.0.1:0/1".parse().expect("a valid literal");
    // Each side an endpoint (its connection table and registry), one
    // connection each.
    let mut client = Endpoint::new(ccfg, caddrs, 1 << 32);
    let mut server = Endpoint::new(scfg, saddrs.clone(), 2 << 32);
    let ci = client.connect(saddrs, EntityType::OSD, now);
    let peer = "127.0.0.1:40000".parse().expect("a valid literal");
    let si = server.accept(Protocol::V2, peer, now);
    client.conns_mut()[ci].socket_connected(None, now);
    let payload = Bytes::from(vec![3u8; size]);
    let (mut sent, mut done) = (0usize, 0usize);
    let start = Instant::now();
    let mut events = Vec::new();
    // The socket's read buffer at each end, and the bytes in flight.
    let (mut s_in, mut c_in) = (BytesMut::new(), BytesMut::new());
    let mut wire = WireQueue::new();
    loop {
        // Client: fill the window.
        while sent < count && sent - done < depth {
            let mut m = Message::new(42, Bytes::from_static(&[0u8; 200]));
            m.data = payload.clone();
            m.tid = sent as u64;
            client.conns_mut()[ci].send(m, now);
            sent += 1;
        }
        // Move bytes both ways and process.
        let c = &mut client.conns_mut()[ci];
        c.fill_output(&mut wire, now);
        s_in.extend_from_slice(&wire.take_all());
        server.conns_mut()[si].handle_input(&mut s_in, now);
        while let Some(ev) = server.conns_mut()[si].poll_event() {
            match ev {
                Event::Message(m) => {
                    let mut r = Message::new(43, Bytes::from_static(&[0u8; 100]));
                    r.tid = m.tid;
                    events.push(r);
                }
                Event::IdentReceived(req) => {
                    server.handle_ident(si, req, Default::default(), now);
                }
                _ => {}
            }
        }
        let s = &mut server.conns_mut()[si];
        for r in events.drain(..) {
            s.send(r, now);
        }
        s.flush_acks(now);
        s.fill_output(&mut wire, now);
        c_in.extend_from_slice(&wire.take_all());
        let c = &mut client.conns_mut()[ci];
        c.handle_input(&mut c_in, now);
        while let Some(ev) = c.poll_event() {
            if let Event::Message(_) = ev {
                done += 1;
            }
        }
        c.flush_acks(now);
        if done >= count {
            break;
        }
    }
    let dt = start.elapsed();
    println!(
        "{count} round trips of {size} B (depth {depth}) in {:.3}s: {:.0}/s, {:.2} us per round trip (both sides, one core)",
        dt.as_secs_f64(),
        count as f64 / dt.as_secs_f64(),
        dt.as_secs_f64() * 1e6 / count as f64
    );
}
