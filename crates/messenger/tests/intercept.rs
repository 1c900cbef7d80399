//! The interceptor through the runtime, over TCP and the memory transport:
//! breakpoints reach the tokio driver (a FAULT retries, a STALL shuts the
//! socket under a frozen handshake that resumes stale when released).

#[path = "support/pair.rs"]
mod pair;
#[path = "support/poll.rs"]
mod poll;
#[path = "support/recorder.rs"]
mod recorder;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_frames::Tag;
use msgr_messenger::{ConnState, Message, Options, Policy};
use msgr_protocol::intercept::{Action, Breakpoint, CustomPoint, Direction, Traps};
use msgr_protocol::PolicySet;
use msgr_transport::memory::MemoryNet;

use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;
use pair::Pair;
use poll::until;

/// A server (stateful) and a lossless client over `t`, with the
/// interceptors given, the client connected; what each dispatcher hears is
/// in its log (crimson's cnt_*_dispatched).
async fn pair<T: Transport>(
    t: T,
    bind: &str,
    client_traps: Option<Arc<Traps>>,
    server_traps: Option<Arc<Traps>>,
) -> Pair<T> {
    let options = |name: &str, policy: Policy, nonce: u32, traps: Option<Arc<Traps>>| {
        let mut o = Options::new(
            name.parse().unwrap(),
            PolicySet::new(policy),
            Arc::new(NoneProvider),
        );
        o.nonce = nonce;
        o.seed = nonce as u64;
        o.timeouts.backoff_initial = Duration::from_millis(5);
        o.timeouts.backoff_max = Duration::from_millis(50);
        o.interceptor = traps.map(|t| t as _);
        o
    };
    Pair::start(
        t,
        bind,
        options("client.1", Policy::lossless_client(), 11, client_traps),
        options("osd.0", Policy::stateful_server(), 22, server_traps),
        false,
    )
    .await
}

fn msg(tid: u64) -> Message {
    let mut m = Message::new(42, Bytes::from_static(b"payload"));
    m.tid = tid;
    m
}

fn frame(tag: Tag, d: Direction) -> Breakpoint {
    Breakpoint::Frame(tag, d)
}

async fn fault_at_client_ident_write<T: Transport>(t: T, bind: &str) {
    let traps = Arc::new(Traps::default());
    traps.arm(frame(Tag::CLIENT_IDENT, Direction::Write), 1, Action::Fault);
    let p = pair(t, bind, Some(traps.clone()), None).await;
    let conn = p.conn.clone();
    conn.send(msg(1)).await;
    assert!(until(|| p.server_log.lock().unwrap().tids.len() == 1).await);
    let id = conn.id();
    let connecting = Breakpoint::Custom(CustomPoint::SocketConnecting);
    assert_eq!(traps.conn_hits(id, connecting), 2);
    assert_eq!(
        traps.conn_hits(id, frame(Tag::CLIENT_IDENT, Direction::Write)),
        2
    );
    assert_eq!(p.client_log.lock().unwrap().connects, 1);
    assert_eq!(p.server_log.lock().unwrap().accepts, 1);
    p.client.shutdown().await;
    p.server.shutdown().await;
}

/// crimson's stale accept through the runtime.
async fn stalled_acceptor_resumes_stale<T: Transport>(t: T, bind: &str) {
    let traps = Arc::new(Traps::default());
    traps.arm(frame(Tag::CLIENT_IDENT, Direction::Read), 1, Action::Stall);
    let p = pair(t, bind, None, Some(traps.clone())).await;
    let conn = p.conn.clone();
    conn.send(msg(1)).await;
    // The client lost its socket under the stall and connected again.
    assert!(until(|| p.server_log.lock().unwrap().tids.len() == 1).await);
    let stale_id = traps.blocked().expect("a stall was handed out");
    let stale = p
        .server
        .connections()
        .into_iter()
        .find(|c| c.id() == stale_id)
        .expect("the stalled acceptor is alive");
    assert_eq!(
        stale.state(),
        ConnState::Accepting,
        "frozen before handling the ident"
    );
    stale.unblock();
    assert!(until(|| stale.state() == ConnState::Closed).await);
    conn.send(msg(2)).await;
    assert!(until(|| p.server_log.lock().unwrap().tids.len() == 2).await);
    assert_eq!(p.server_log.lock().unwrap().tids, vec![1, 2]);
    assert_eq!(p.client_log.lock().unwrap().connects, 1);
    assert_eq!(p.server_log.lock().unwrap().accepts, 1);
    assert_eq!(p.server_log.lock().unwrap().resets, 0);
    assert_eq!(p.client_log.lock().unwrap().remote_resets, 0);
    assert_eq!(
        traps.hits(Breakpoint::Custom(CustomPoint::SocketAccepted)),
        2
    );
    assert_eq!(p.server.connections().len(), 1);
    p.client.shutdown().await;
    p.server.shutdown().await;
}

#[tokio::test]
async fn fault_retries_over_memory_and_tcp() {
    fault_at_client_ident_write(MemoryNet::new(), "v2:10.0.0.1:6800").await;
    fault_at_client_ident_write(Tcp::default(), "v2:127.0.0.1:0").await;
}

#[tokio::test]
async fn stall_makes_a_stale_acceptor_over_memory_and_tcp() {
    stalled_acceptor_resumes_stale(MemoryNet::new(), "v2:10.0.0.1:6800").await;
    stalled_acceptor_resumes_stale(Tcp::default(), "v2:127.0.0.1:0").await;
}
