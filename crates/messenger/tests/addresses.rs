//! A server bound to a wildcard serves every address it listens on: it is
//! reached over 127.0.0.1 and 127.0.0.2 by many clients, in any order, and
//! each is answered as the address it dialed (never as what the first
//! peer saw).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityAddr, EntityAddrvec, EntityType};
use msgr_messenger::{
    Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::PolicySet;
use msgr_transport::tcp::Tcp;
use tokio::sync::mpsc;

#[path = "support/echo.rs"]
mod echo;
use echo::Echo;

struct Replies(mpsc::UnboundedSender<u64>);
impl Dispatcher for Replies {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        let _ = self.0.send(msg.tid);
    }
}

/// One client: a message to `target`, its echo back, and the address the
/// server identified itself with.
async fn round_trip(target: EntityAddr, nonce: u32, policy: Policy) -> Result<EntityAddr, String> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut o = Options::new(
        format!("client.{nonce}").parse().unwrap(),
        PolicySet::new(policy),
        Arc::new(NoneProvider),
    );
    o.nonce = nonce;
    let m = Messenger::new(Tcp::default(), o, Arc::new(Replies(tx)));
    let conn = m.connect(&EntityAddrvec::single(target), EntityType::OSD);
    let mut msg = Message::new(42, Bytes::from_static(b"ping"));
    msg.tid = nonce as u64;
    conn.send(msg).await;
    let got = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    let server_said = conn.peer_addrs().msgr2().copied();
    m.shutdown().await;
    match (got, server_said) {
        (Ok(Some(t)), Some(a)) if t == nonce as u64 => Ok(a),
        (got, _) => Err(format!(
            "{target}: no echo ({got:?}), last fault {:?}",
            conn.last_fault()
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_bind_serves_every_address_in_any_order() {
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateful_server()),
        Arc::new(NoneProvider),
    );
    o.nonce = 77;
    let server = Messenger::new(Tcp::default(), o, Arc::new(Echo::new()));
    let bound = server.bind(&"v2:0.0.0.0:0".parse().unwrap()).await.unwrap();
    let port = bound.msgr2().unwrap().port();
    let at = |ip: &str| -> EntityAddr { format!("v2:{ip}:{port}/77").parse().unwrap() };

    // One at a time, alternating (the first peer no longer decides), then
    // many at once in a shuffled order, lossless and lossy.
    let mut order = Vec::new();
    for i in 0..6u32 {
        order.push((if i % 2 == 0 { "127.0.0.2" } else { "127.0.0.1" }, 1000 + i));
    }
    for (ip, nonce) in &order {
        let said = round_trip(at(ip), *nonce, Policy::lossless_client())
            .await
            .unwrap();
        assert_eq!(said, at(ip), "the server is the address that was dialed");
    }
    let mut jobs = Vec::new();
    for i in 0..40u32 {
        let ip = if (i * 7) % 3 == 0 {
            "127.0.0.1"
        } else {
            "127.0.0.2"
        };
        let policy = if i % 2 == 0 {
            Policy::lossless_client()
        } else {
            Policy::lossy_client()
        };
        let target = at(ip);
        jobs.push(tokio::spawn(async move {
            round_trip(target, 2000 + i, policy)
                .await
                .map(|a| (a, target))
        }));
    }
    for j in jobs {
        let (said, target) = j.await.unwrap().unwrap();
        assert_eq!(said, target);
    }
    // What we listen on is unchanged: no peer taught it an address.
    assert!(server.addrs().msgr2().unwrap().is_blank_ip());
    server.shutdown().await;
}
