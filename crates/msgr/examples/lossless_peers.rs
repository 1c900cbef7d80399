//! Two lossless peers (as two OSDs talk) whose sockets fail one read or
//! write in 20 (injected): each sends the other 500 messages; every one
//! arrives exactly once and in order, through the reconnects.
//!
//!     cargo run -p msgr --example lossless_peers
// An example counts its own messages: plain arithmetic (the workspace
// checks it where peers' numbers are parsed).
#![allow(clippy::arithmetic_side_effects)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use msgr::transport::Tcp;
use msgr::{
    Connection, Dispatcher, EntityType, IncomingMessage, InjectConfig, Message, Messenger, Options,
    Policy, PolicySet,
};

const COUNT: u64 = 500;

/// The tids a peer received, in arrival order.
#[derive(Default)]
struct Received(Mutex<Vec<u64>>);

impl Dispatcher for Received {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(msg.tid);
    }
}

fn peer(
    name: &str,
    nonce: u32,
    got: Arc<Received>,
) -> Result<Messenger<Tcp>, Box<dyn std::error::Error>> {
    let mut opts = Options::new(
        name.parse()?,
        PolicySet::new(Policy::lossless_peer()),
        Arc::new(msgr::auth::NoneProvider),
    );
    opts.nonce = nonce;
    opts.shards = 1;
    opts.inject = InjectConfig {
        socket_failures: 20,
        ..Default::default()
    };
    opts.timeouts.backoff_initial = Duration::from_millis(5);
    opts.timeouts.backoff_max = Duration::from_millis(50);
    Ok(Messenger::new(Tcp::default(), opts, got))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let got = [Arc::new(Received::default()), Arc::new(Received::default())];
    let a = peer("osd.1", 1, got[0].clone())?;
    let b = peer("osd.2", 2, got[1].clone())?;
    let a_addrs = a.bind(&"v2:127.0.0.1:0".parse()?).await?;
    let b_addrs = b.bind(&"v2:127.0.0.1:0".parse()?).await?;
    let to_b = a.connect(&b_addrs, EntityType::OSD);
    let to_a = b.connect(&a_addrs, EntityType::OSD);
    for tid in 1..=COUNT {
        for conn in [&to_b, &to_a] {
            let mut m = Message::new(
                0x7fff,
                vec![tid as u8; 100 + (tid as usize * 37) % 4000].into(),
            );
            m.tid = tid;
            conn.send(m).await;
        }
    }
    let all: Vec<u64> = (1..=COUNT).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let done = got
            .iter()
            .all(|g| g.0.lock().map(|v| v.len() as u64 >= COUNT).unwrap_or(false));
        if done || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for (name, g) in ["osd.1", "osd.2"].iter().zip(&got) {
        let v = g.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if v != all {
            return Err(format!(
                "{name} received {} messages, not 1..={COUNT} once each in order",
                v.len()
            )
            .into());
        }
    }
    println!(
        "lossless_peers: {COUNT} messages each way, each once and in order, through {} injected socket failures and {} reconnects",
        a.injected_failures() + b.injected_failures(),
        to_b.stats().reconnects + to_a.stats().reconnects
    );
    a.shutdown().await;
    b.shutdown().await;
    Ok(())
}
