//! An OSD-like server: a dispatcher that answers each MOSDOp with its
//! MOSDOpReply, on msgr2 and msgr1, for SECONDS (default 30):
//!
//!     cargo run -p msgr --example osd_server -- 127.0.0.1:6800 [SECONDS]
//!
//! (`msgr bench --connect v2:127.0.0.1:6800/0` or the `osd_client` example
//! talk to it.)
// An example counts its own messages: plain arithmetic (the workspace
// checks it where peers' numbers are parsed).
#![allow(clippy::arithmetic_side_effects)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use msgr::messages::{MOSDOp, MOSDOpReply, TypedMessage, MSG_OSD_OP};
use msgr::transport::Tcp;
use msgr::{
    Connection, Dispatcher, EntityAddrvec, IncomingMessage, Messenger, Options, Policy, PolicySet,
};

#[derive(Default)]
struct Osd {
    ops: AtomicU64,
}

impl Dispatcher for Osd {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        if msg.msg_type != MSG_OSD_OP {
            return;
        }
        match MOSDOp::from_message(&msg) {
            Ok(op) => {
                self.ops.fetch_add(1, Ordering::Relaxed);
                let reply = MOSDOpReply::answering(op, 0);
                conn.send_nowait(reply.to_message(conn.features()));
            }
            Err(e) => eprintln!("osd_server: an MOSDOp we cannot read: {e}"),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let ip_port = args.next().ok_or("usage: osd_server IP:PORT [SECONDS]")?;
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(30);
    let (ip, port) = ip_port.rsplit_once(':').ok_or("expected IP:PORT")?;
    let port: u16 = port.parse()?;
    // msgr2 at PORT and msgr1 at the next, as an OSD binds them.
    let bind: EntityAddrvec = format!("[v2:{ip}:{port}/1,v1:{ip}:{}/1]", port + 1).parse()?;

    let osd = Arc::new(Osd::default());
    let mut opts = Options::new(
        "osd.0".parse()?,
        PolicySet::new(Policy::stateless_server()),
        Arc::new(msgr::auth::NoneProvider),
    );
    opts.nonce = 1;
    opts.shards = 1;
    let server = Messenger::new(Tcp::default(), opts, osd.clone());
    let addrs = server.bind(&bind).await?;
    println!("osd_server: listening on {addrs}");
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    server.shutdown().await;
    println!(
        "osd_server: answered {} ops",
        osd.ops.load(Ordering::Relaxed)
    );
    Ok(())
}
