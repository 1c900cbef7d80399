//! Both handshake roles and the session after it, against a peer in the
//! middle: our own client and server `Conn`s run a real exchange (banner,
//! HELLO, auth, signatures, compression, idents, messages, keepalives,
//! acks) while the fuzzer's operations rewrite the byte stream in one
//! direction: flip, insert, delete, replace or cut at chosen offsets, or
//! reset the socket, after which the client reconnects (SESSION_RECONNECT,
//! and whatever RETRY, RETRY_GLOBAL or RESET the server's registry decides,
//! through the same `registry` resolution the runtime uses); the offsets
//! run on across sockets. Auth is a fixed-key method or real cephx (an
//! authorizer with its challenge). The victim must end in READY or with a
//! typed error, never panic, and a run without operations must deliver
//! every message exactly once, in order, across a forced reconnect too.
//!
//! In secure mode the stream is AES-GCM; built for cargo fuzz with the
//! `fuzz-cipher` feature of msgr-frames, the cipher is the identity with
//! zero tags, so rewritten frames reach the state machines instead of
//! failing authentication.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use msgr_auth::{AuthProvider, ConMode};
use msgr_encoding::{EntityAddrvec, EntityType, UTime};
use msgr_frames::compression::Algorithm;
use msgr_frames::WireQueue;
use msgr_protocol::testing::shared_key;
use msgr_protocol::{
    CompressionConfig, Config, Conn, ConnState, Endpoint, Event, Message, Policy, PolicySet,
    Protocol, Resolved,
};

/// One rewrite of the stream at a byte offset.
#[derive(Debug, Clone)]
enum Op {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Replace(usize, Vec<u8>),
    Cut(usize),
    /// The socket fails both ways; the client reconnects.
    Reset(usize),
}

impl Op {
    fn at(&self) -> usize {
        match self {
            Op::Flip(a, _)
            | Op::Insert(a, _)
            | Op::Delete(a, _)
            | Op::Replace(a, _)
            | Op::Cut(a)
            | Op::Reset(a) => *a,
        }
    }
}

/// Ops as the fuzzer spells them: kind, offset (2 bytes), length, bytes.
fn parse_ops(mut data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    while let [kind, hi, lo, len, rest @ ..] = data {
        let at = u16::from_be_bytes([*hi, *lo]) as usize;
        let n = (*len as usize % 32).min(rest.len());
        let (bytes, tail) = rest.split_at(n);
        ops.push(match kind % 6 {
            0 => Op::Flip(at, *len | 1),
            1 => Op::Insert(at, bytes.to_vec()),
            2 => Op::Delete(at, *len as usize % 64 + 1),
            3 => Op::Replace(at, bytes.to_vec()),
            4 => Op::Cut(at),
            _ => Op::Reset(at),
        });
        data = tail;
        if ops.len() >= 16 {
            break;
        }
    }
    ops.sort_by_key(Op::at);
    ops
}

/// The stream from one side to the other, with the rewrites applied as
/// bytes pass.
struct Tap {
    ops: Vec<Op>,
    /// Offset of the next original byte.
    pos: usize,
    cut: bool,
    /// A Reset was reached: the socket fails (the rest of the chunk is
    /// lost with it).
    reset: bool,
}

impl Tap {
    fn pass(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        for &b in chunk {
            if self.cut || self.reset {
                break;
            }
            let mut keep = Some(b);
            while let Some(op) = self.ops.first().filter(|o| o.at() <= self.pos).cloned() {
                self.ops.remove(0);
                match op {
                    Op::Flip(_, m) => keep = keep.map(|k| k ^ m),
                    Op::Insert(_, bytes) => out.extend_from_slice(&bytes),
                    Op::Delete(at, n) => {
                        // Re-armed for the following bytes of the range.
                        if n > 1 {
                            self.ops.insert(0, Op::Delete(at + 1, n - 1));
                        }
                        keep = None;
                    }
                    Op::Replace(_, bytes) => {
                        out.extend_from_slice(&bytes);
                        keep = None;
                    }
                    Op::Cut(_) => {
                        self.cut = true;
                        keep = None;
                    }
                    Op::Reset(_) => {
                        self.reset = true;
                        keep = None;
                    }
                }
                if keep.is_none() {
                    break;
                }
            }
            if let Some(k) = keep {
                out.push(k);
            }
            self.pos += 1;
        }
        out
    }
}

/// Auth for both sides: the pair harness's shared-key method, or cephx with a client.1
/// ticket for osd.0 minted from a key server (seeded, on a fixed clock, so
/// runs repeat).
fn auth(mode: ConMode, cephx: bool) -> (Arc<dyn AuthProvider>, Arc<dyn AuthProvider>) {
    if !cephx {
        return (shared_key(&[mode]), shared_key(&[mode]));
    }
    use msgr_auth::cephx::*;
    let rng = Arc::new(msgr_auth::SeededRandom::new(7));
    let clock: msgr_auth::Clock = Arc::new(|| UTime::new(1_800_000_000, 0));
    let mut ring = Keyring::default();
    for n in ["client.admin", "osd."] {
        ring.insert(
            n.parse().expect("valid"),
            KeyringEntry {
                key: CryptoKey::random(KeyKind::Aes128, UTime::default(), &*rng),
                caps: Default::default(),
            },
        );
    }
    let keys = Arc::new(KeyServer::new(ring));
    let mut server = CephxServer::new(keys.clone(), EntityType::OSD, rng.clone(), clock.clone());
    server.service_modes = vec![mode];
    let admin = msgr_encoding::AuthName::client_admin();
    let key = keys.entity_key(&admin).expect("in the keyring").clone();
    let mut client = CephxClient::new(admin.clone(), key, rng.clone(), clock.clone());
    client.service_modes = vec![mode];
    client.grant_from(&keys, EntityType::OSD, 1, 3600);
    (
        Arc::new(CephxProvider {
            client: Some(Arc::new(client)),
            server: None,
        }),
        Arc::new(CephxProvider {
            client: None,
            server: Some(Arc::new(server)),
        }),
    )
}

fn config(
    name: &str,
    auth: Arc<dyn AuthProvider>,
    rev1: bool,
    compress: bool,
    policy: Policy,
) -> Arc<Config> {
    let mut c = Config::new(name.parse().expect("valid"), auth, PolicySet::new(policy));
    if !rev1 {
        c = c.rev0_only();
    }
    c.compression = CompressionConfig {
        force: compress,
        all_peers: true,
        algorithms: vec![Algorithm::Snappy, Algorithm::Zstd],
        min_size: 0,
        ..Default::default()
    };
    c.frame_limits = msgr_frames::FrameLimits {
        max_segment_len: 1 << 20,
        max_frame_len: 2 << 20,
        max_decompressed_len: 1 << 20,
    };
    c.random = Arc::new(msgr_auth::SeededRandom::new(name.len() as u64));
    Arc::new(c)
}

/// The server side: every connection it accepted, and the registry that
/// decides on their idents (an Endpoint, as the pair harness's nodes).
struct Server {
    endpoint: Endpoint,
    /// The connection the current socket belongs to.
    current: usize,
}

impl Server {
    /// A socket from the client: a new accepting connection.
    fn accept(&mut self, now: Instant) {
        let peer: SocketAddr = "10.0.0.1:40000".parse().expect("literal");
        self.current = self.endpoint.accept(Protocol::V2, peer, now);
    }

    /// The messenger's decision on connection `i`'s ident, carried out as
    /// the runtime does (registry::resolve: its steps, in its order).
    fn decide(&mut self, i: usize, req: &msgr_protocol::IdentRequest, now: Instant) {
        let stamp = UTime::new(2, 0);
        if let Resolved::Moved { into, .. } = self.endpoint.handle_ident(i, req.clone(), stamp, now)
        {
            self.current = into;
        }
    }
}

/// Moves what `from` wrote into `to` (whose socket's read buffer is
/// `inbox`), through `tap` when this is the tapped direction. Returns
/// whether bytes moved or events were raised.
fn transfer(
    from: &mut Conn,
    to: &mut Conn,
    inbox: &mut BytesMut,
    tap: Option<&mut Tap>,
    now: Instant,
) -> bool {
    let mut out = WireQueue::new();
    let raised = from.fill_output(&mut out, now);
    if out.is_empty() {
        return raised;
    }
    let bytes = out.take_all();
    let bytes = match tap {
        Some(t) => t.pass(&bytes),
        None => bytes.to_vec(),
    };
    inbox.extend_from_slice(&bytes);
    to.handle_input(inbox, now);
    to.flush_acks(now);
    true
}

/// Byte 0: which side the rewritten stream goes to (bit 0), msgr2.1 (bit
/// 1), secure (bit 2), compression (bit 3), cephx (bit 4), a socket reset
/// after the third message of a clean run (bit 5); then the rewrites.
pub fn session(data: &[u8]) {
    let Some((&cfg, rest)) = data.split_first() else {
        return;
    };
    let to_server = cfg & 1 == 0;
    let rev1 = cfg & 2 != 0;
    let mode = if cfg & 4 != 0 {
        ConMode::SECURE
    } else {
        ConMode::CRC
    };
    let compress = cfg & 8 != 0;
    let (client_auth, server_auth) = auth(mode, cfg & 16 != 0);
    let forced_reset = cfg & 32 != 0;
    let ops = parse_ops(rest);
    let clean = ops.is_empty();
    let mut tap = Tap {
        ops,
        pos: 0,
        cut: false,
        reset: false,
    };

    let start = Instant::now();
    let mut now = start;
    let server_addrs: EntityAddrvec = "v2:10.0.0.2:6800/22".parse().expect("literal");
    let client_addrs: EntityAddrvec = "v2:10.0.0.1:0/11".parse().expect("literal");
    let mut client = Conn::connect(
        config(
            "client.1",
            client_auth,
            rev1,
            compress,
            Policy::lossless_client(),
        ),
        server_addrs.clone(),
        EntityType::OSD,
        client_addrs,
        now,
        1,
    );
    let server_config = config(
        "osd.0",
        server_auth,
        rev1,
        compress,
        Policy::stateful_server(),
    );
    let mut server = Server {
        endpoint: Endpoint::new(server_config, server_addrs.clone(), 2 << 32),
        current: 0,
    };
    for tid in 1..=5u64 {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 300 * tid as usize]));
        m.tid = tid;
        client.send(m, now);
    }
    client.send_keepalive(UTime::new(1, 0), now);
    let mut delivered = Vec::new();
    let mut reset_done = false;
    // The current socket's read buffers: the server's end, the client's.
    let mut inbox: [BytesMut; 2] = Default::default();
    for _ in 0..400 {
        let mut progress = false;
        while let Some(ev) = client.poll_event() {
            progress = true;
            if let Event::Connect { .. } = ev {
                inbox = Default::default();
                server.accept(now);
                client.socket_connected(None, now);
            }
        }
        for i in 0..server.endpoint.conns().len() {
            while let Some(ev) = server.endpoint.conns_mut()[i].poll_event() {
                progress = true;
                match ev {
                    Event::IdentReceived(req) => server.decide(i, &req, now),
                    Event::Message(m) => {
                        delivered.push(m.tid);
                        let mut r = Message::new(43, Bytes::new());
                        r.tid = m.tid;
                        server.endpoint.conns_mut()[i].send(r, now);
                    }
                    _ => {}
                }
            }
        }
        if let Some(s) = server.endpoint.conn_mut(server.current) {
            // Client to server, then server to client; one direction tapped.
            let (up, down) = match to_server {
                true => (Some(&mut tap), None),
                false => (None, Some(&mut tap)),
            };
            let [to_server_in, to_client_in] = &mut inbox;
            progress |= transfer(&mut client, s, to_server_in, up, now);
            progress |= transfer(s, &mut client, to_client_in, down, now);
        }
        let forced = clean && forced_reset && !reset_done && delivered.len() >= 3;
        if std::mem::take(&mut tap.reset) || forced {
            // The socket fails on both sides; the client reconnects.
            reset_done = true;
            progress = true;
            let err = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            if let Some(l) = client.link_id() {
                client.socket_closed(l, &err, now);
            }
            if let Some(s) = server.endpoint.conn_mut(server.current) {
                if let Some(l) = s.link_id() {
                    s.socket_closed(l, &err, now);
                }
            }
        }
        if !progress {
            // Let timers run (handshake timeouts, keepalives, backoff).
            now += Duration::from_secs(1);
            client.handle_timeout(now);
            for s in server.endpoint.conns_mut() {
                s.handle_timeout(now);
            }
            if now - start > Duration::from_secs(60) {
                break;
            }
        }
    }
    if clean {
        assert_eq!(
            client.state(),
            ConnState::Ready,
            "a clean run reaches READY"
        );
        assert_eq!(
            delivered,
            vec![1, 2, 3, 4, 5],
            "a clean run delivers every message, once, in order"
        );
        assert!(!forced_reset || client.stats().reconnects > 0);
    }
}
