//! MOSDOp writes to an OSD-like server (`msgr serve`, or the `osd_server`
//! example), each reply awaited with `Connection::call`:
//!
//!     cargo run -p msgr --example osd_client -- v2:127.0.0.1:6800/0 [COUNT]
// An example counts its own messages: plain arithmetic (the workspace
// checks it where peers' numbers are parsed).
#![allow(clippy::arithmetic_side_effects)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use msgr::messages::{MOSDOp, MOSDOpReply, TypedMessage};
use msgr::transport::Tcp;
use msgr::{dispatch, EntityAddrvec, EntityType, Messenger, Options, Policy, PolicySet};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addrs: EntityAddrvec = args
        .next()
        .ok_or("usage: osd_client ADDR [COUNT]")?
        .parse()?;
    let count: u64 = args.next().map(|c| c.parse()).transpose()?.unwrap_or(100);

    // Replies go to their callers; nothing else is expected, so the
    // other events are left in a stream nobody reads.
    let (dispatcher, _events) = dispatch::events();
    let policies = PolicySet::new(Policy::lossless_client());
    let mut opts = Options::new(
        "client.4242".parse()?,
        policies,
        Arc::new(msgr::auth::NoneProvider),
    );
    opts.shards = 1;
    // MOSDOp's reply is MOSDOpReply (for `call`).
    opts.message_types = msgr::CEPH_MESSAGE_TYPES;
    let client = Messenger::new(Tcp::default(), opts, dispatcher);

    let osd = client.connect(&addrs, EntityType::OSD);
    // READY: the peer's features are known, so requests are encoded for them.
    osd.ready().await?;
    let started = Instant::now();
    for tid in 1..=count {
        let data = vec![tid as u8; 4096];
        let op = MOSDOp::write(
            tid,
            1,
            "example-object",
            (tid - 1) * 4096,
            data.into(),
            false,
        );
        let reply = osd
            .call(op.to_message(osd.features()), Duration::from_secs(10))
            .await?;
        let reply = MOSDOpReply::from_message(&reply)?;
        if reply.tid != tid || reply.result != 0 {
            return Err(format!(
                "write {tid}: reply tid {} result {}",
                reply.tid, reply.result
            )
            .into());
        }
    }
    let peer = osd
        .peer_name()
        .map_or_else(|| "?".into(), |n| n.to_string());
    println!(
        "osd_client: {count} writes to {peer} at {addrs}, each answered ({:.0} us a round trip)",
        started.elapsed().as_secs_f64() * 1e6 / count.max(1) as f64
    );
    client.shutdown().await;
    Ok(())
}
