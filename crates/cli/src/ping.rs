//! `msgr ping ADDR`: connects (learning the peer's type from its HELLO) and
//! times KEEPALIVE2 → KEEPALIVE2_ACK round trips.

use std::sync::Arc;
use std::time::Duration;

use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage};
use msgr_protocol::PolicyName;

use crate::common::{messenger, NetOpts};

struct Quiet;
impl Dispatcher for Quiet {
    fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
}

/// Pings `addr` `count` times; returns the round trip times.
pub async fn run(
    addr: EntityAddrvec,
    count: u32,
    interval: Duration,
    rev1: bool,
) -> Result<Vec<Duration>, String> {
    let net = NetOpts {
        policy: PolicyName::LossyClient,
        rev1,
        ..Default::default()
    };
    let m = messenger(
        EntityName::new(EntityType::CLIENT, -1),
        std::process::id(),
        &net,
        Arc::new(Quiet),
    );
    let conn = m.connect(&addr, EntityType::ANY);
    let mut rtts = Vec::new();
    for i in 0..count {
        match conn.keepalive_roundtrip(Duration::from_secs(10)).await {
            Some(rtt) => {
                let peer = conn
                    .peer_name()
                    .map_or_else(|| "?".into(), |n| n.to_string());
                println!(
                    "keepalive from {peer} at {addr}: seq={} time={:.3} ms",
                    i + 1,
                    rtt.as_secs_f64() * 1e3
                );
                rtts.push(rtt);
            }
            None => {
                m.shutdown().await;
                return Err(format!(
                    "no keepalive ack from {addr} (connection {:?})",
                    conn.state()
                ));
            }
        }
        if i + 1 < count {
            tokio::time::sleep(interval).await;
        }
    }
    m.shutdown().await;
    Ok(rtts)
}
