//! Both handshake roles and the session after it, against a peer in the
//! middle: our own client and server `Conn`s run a real exchange (banner,
//! HELLO, auth, signatures, compression, idents, messages, keepalives,
//! acks) while the fuzzer's operations rewrite the byte stream in one
//! direction: flip, insert, delete, replace or cut at chosen offsets. The
//! victim must end in READY or with a typed error, never panic, and a run
//! without operations must deliver every message.
//!
//! In secure mode the stream is AES-GCM; built for cargo fuzz with the
//! `fuzz-cipher` feature of msgr-frames, the cipher is the identity with
//! zero tags, so rewritten frames reach the state machines instead of
//! failing authentication.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::{
    AuthError, AuthOutcome, AuthPeer, AuthProvider, AuthRequest, ClientAuth, ConMode, ServerAuth,
    ServerStep, SessionKey,
};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType, UTime};
use msgr_frames::compression::Algorithm;
use msgr_protocol::registry;
use msgr_protocol::{
    CompressionConfig, Config, Conn, ConnState, Event, Message, Policy, PolicySet,
};

const METHOD: u32 = 0x7e57;

/// A fixed-key auth method, so that secure mode runs without a key server.
struct FixedAuth(ConMode);

fn outcome(mode: ConMode) -> AuthOutcome {
    AuthOutcome {
        global_id: 9,
        con_mode: mode,
        session_key: SessionKey::new(vec![7; 16]),
        connection_secret: msgr_auth::Secret::new(vec![0x42; 64]),
        peer: None,
    }
}

impl ClientAuth for FixedAuth {
    fn request(&mut self, _: &AuthPeer, _: &[u32]) -> Result<AuthRequest, AuthError> {
        Ok(AuthRequest {
            method: METHOD,
            preferred_modes: vec![self.0],
            payload: Bytes::from_static(b"fuzz"),
        })
    }
    fn reply_more(&mut self, _: &[u8]) -> Result<Bytes, AuthError> {
        Ok(Bytes::from_static(b"more"))
    }
    fn done(&mut self, _: u64, mode: ConMode, _: &[u8]) -> Result<AuthOutcome, AuthError> {
        Ok(outcome(mode))
    }
    fn bad_method(&mut self, _: u32, _: i32, _: &[u32], _: &[ConMode]) -> Result<(), AuthError> {
        Err(AuthError::NoMethodLeft)
    }
}

impl ServerAuth for FixedAuth {
    fn allowed_methods(&self, _: &AuthPeer) -> Vec<u32> {
        vec![METHOD]
    }
    fn allowed_modes(&self, _: &AuthPeer, _: u32) -> Vec<ConMode> {
        vec![self.0]
    }
    fn handle(
        &mut self,
        _: &AuthPeer,
        m: u32,
        mode: ConMode,
        _: bool,
        _: &[u8],
    ) -> Result<ServerStep, AuthError> {
        if m != METHOD {
            return Err(AuthError::MethodNotSupported { method: m });
        }
        Ok(ServerStep::Done {
            payload: Bytes::from_static(b"ok"),
            outcome: outcome(mode),
        })
    }
}

impl AuthProvider for FixedAuth {
    fn client(&self, _: &EntityName) -> Box<dyn ClientAuth> {
        Box::new(FixedAuth(self.0))
    }
    fn server(&self) -> Box<dyn ServerAuth> {
        Box::new(FixedAuth(self.0))
    }
}

/// One rewrite of the stream at a byte offset.
#[derive(Debug, Clone)]
enum Op {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Replace(usize, Vec<u8>),
    Cut(usize),
}

impl Op {
    fn at(&self) -> usize {
        match self {
            Op::Flip(a, _)
            | Op::Insert(a, _)
            | Op::Delete(a, _)
            | Op::Replace(a, _)
            | Op::Cut(a) => *a,
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
        ops.push(match kind % 5 {
            0 => Op::Flip(at, *len | 1),
            1 => Op::Insert(at, bytes.to_vec()),
            2 => Op::Delete(at, *len as usize % 64 + 1),
            3 => Op::Replace(at, bytes.to_vec()),
            _ => Op::Cut(at),
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
}

impl Tap {
    fn pass(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        for &b in chunk {
            if self.cut {
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

fn config(name: &str, mode: ConMode, rev1: bool, compress: bool, policy: Policy) -> Arc<Config> {
    let mut c = Config::new(
        name.parse().expect("valid"),
        Arc::new(FixedAuth(mode)),
        PolicySet::new(policy),
    );
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
    Arc::new(c)
}

/// Byte 0: which side the rewritten stream goes to (bit 0), msgr2.1 (bit
/// 1), secure (bit 2), compression (bit 3); then the rewrites.
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
    let ops = parse_ops(rest);
    let clean = ops.is_empty();
    let mut tap = Tap {
        ops,
        pos: 0,
        cut: false,
    };

    let start = Instant::now();
    let mut now = start;
    let server_addrs: EntityAddrvec = "v2:10.0.0.2:6800/22".parse().expect("literal");
    let client_addrs: EntityAddrvec = "v2:10.0.0.1:0/11".parse().expect("literal");
    let peer_sock: SocketAddr = "10.0.0.1:40000".parse().expect("literal");
    let mut client = Conn::connect(
        config("client.1", mode, rev1, compress, Policy::lossless_client()),
        server_addrs.clone(),
        EntityType::OSD,
        client_addrs,
        now,
        1,
    );
    let mut server = Conn::accept(
        config("osd.0", mode, rev1, compress, Policy::stateful_server()),
        server_addrs,
        peer_sock,
        now,
        2,
    );
    for tid in 1..=5u64 {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 300 * tid as usize]));
        m.tid = tid;
        client.send(m, now);
    }
    client.send_keepalive(UTime::new(1, 0), now);
    let mut delivered = Vec::new();
    let mut connected = false;
    for _ in 0..200 {
        let mut progress = false;
        while let Some(ev) = client.poll_event() {
            progress = true;
            if let Event::Connect { .. } = ev {
                if !connected {
                    connected = true;
                    client.socket_connected(None, now);
                }
            }
        }
        while let Some(ev) = server.poll_event() {
            progress = true;
            match ev {
                Event::IdentReceived(req) => {
                    let d = registry::decide(&server, None, &req);
                    registry::apply(d, &mut server, None, UTime::new(2, 0), now);
                }
                Event::Message(m) => {
                    delivered.push(m.tid);
                    let mut r = Message::new(43, Bytes::new());
                    r.tid = m.tid;
                    server.send(r, now);
                }
                _ => {}
            }
        }
        // Client to server, then server to client; one direction tapped.
        if let Some(out) = client.output() {
            if !out.is_empty() {
                progress = true;
                let bytes = out.take_all();
                let bytes = if to_server {
                    tap.pass(&bytes)
                } else {
                    bytes.to_vec()
                };
                if let Some(inp) = server.input() {
                    inp.extend_from_slice(&bytes);
                }
                server.handle_input(now);
                server.flush_acks(now);
            }
        }
        if let Some(out) = server.output() {
            if !out.is_empty() {
                progress = true;
                let bytes = out.take_all();
                let bytes = if !to_server {
                    tap.pass(&bytes)
                } else {
                    bytes.to_vec()
                };
                if let Some(inp) = client.input() {
                    inp.extend_from_slice(&bytes);
                }
                client.handle_input(now);
                client.flush_acks(now);
            }
        }
        if !progress {
            // Let timers run (handshake timeouts, keepalives, backoff).
            now += Duration::from_secs(1);
            client.handle_timeout(now);
            server.handle_timeout(now);
            if now - start > Duration::from_secs(30) {
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
            "a clean run delivers every message"
        );
    }
}
