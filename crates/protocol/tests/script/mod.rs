//! A scripted peer for sans-IO tests: one `Conn` (a connector or an
//! acceptor) driven by hand-encoded frames from "the other side", with
//! time passed in.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::{ConMode, NoneProvider};
use msgr_encoding::{EntityAddrvec, EntityType};
use msgr_frames::control::*;
use msgr_frames::message::MsgHeader2;
use msgr_frames::{Banner, ControlFrame, FrameEncoder, Tag, WireQueue};
use msgr_protocol::{CompressionConfig, Config, Conn, Event, Policy, PolicySet, ProtocolError};

/// A connector to an OSD, and the server side's encoder.
pub struct Script {
    pub conn: Conn,
    pub enc: FrameEncoder,
    pub now: Instant,
    /// What the connection read and has not taken yet.
    pub input: bytes::BytesMut,
}

impl Script {
    pub fn new(compression: CompressionConfig) -> Script {
        Script::with(Policy::lossy_client(), compression)
    }

    pub fn with(policy: Policy, compression: CompressionConfig) -> Script {
        let mut cfg = Config::new(
            "client.1".parse().unwrap(),
            Arc::new(NoneProvider),
            PolicySet::new(policy),
        );
        cfg.compression = compression;
        let now = Instant::now();
        let server: EntityAddrvec = "v2:10.0.0.1:6800/1".parse().unwrap();
        let conn = Conn::connect(
            Arc::new(cfg),
            server,
            EntityType::OSD,
            "v2:10.0.0.2:0/2".parse().unwrap(),
            now,
            1,
        );
        let mut s = Script {
            conn,
            enc: FrameEncoder::new(true),
            now,
            input: bytes::BytesMut::new(),
        };
        s.socket();
        s
    }

    /// A new socket: the banners and the server's HELLO.
    pub fn socket(&mut self) {
        self.input.clear();
        self.conn.socket_connected(None, self.now);
        self.enc = FrameEncoder::new(true);
        self.bytes(&Banner::DEFAULT.encode());
        self.frame(
            Hello {
                entity_type: EntityType::OSD,
                peer_addr: "v2:10.0.0.2:50000/0".parse().unwrap(),
            }
            .into(),
        );
    }

    /// Auth none, the signatures and no compression: the client's ident
    /// (CLIENT_IDENT or SESSION_RECONNECT) is out.
    pub fn to_ident(&mut self) {
        self.auth_done(ConMode::CRC);
        self.frame(AuthSignature { sha256: [0; 32] }.into());
        self.frame(
            CompressionDone {
                is_compress: false,
                method: 0,
            }
            .into(),
        );
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.input.extend_from_slice(b);
        self.conn.handle_input(&mut self.input, self.now);
    }

    pub fn frame(&mut self, f: ControlFrame) {
        let mut q = WireQueue::new();
        self.enc.encode(f.tag(), &[f.payload()], &mut q).unwrap();
        self.bytes(&q.take_all());
    }

    pub fn auth_done(&mut self, mode: ConMode) {
        self.frame(
            AuthDone {
                global_id: 1,
                con_mode: mode.0,
                auth_payload: Bytes::new(),
            }
            .into(),
        );
    }

    /// The first fault the connection reported.
    pub fn fault(&mut self) -> Option<ProtocolError> {
        std::iter::from_fn(|| self.conn.poll_event()).find_map(|e| match e {
            Event::Fault(f) => Some(f),
            _ => None,
        })
    }
}

/// The server's address in these scripts.
pub const SERVER: &str = "v2:10.0.0.1:6800/1";

impl Script {
    /// An acceptor (osd.0) with `config`, through banner, HELLO as a
    /// client, auth none, the signatures and no compression: waiting for
    /// the client's ident.
    pub fn acceptor(config: Config) -> Script {
        let mut s = Script::acceptor_before_auth(config);
        s.auth_request(msgr_auth::method::NONE);
        s.frame(AuthSignature { sha256: [0; 32] }.into());
        s.frame(
            CompressionRequest {
                is_compress: false,
                preferred_methods: vec![],
            }
            .into(),
        );
        s
    }

    /// An acceptor (osd.0) with `config` past the banners and HELLO:
    /// waiting for AUTH_REQUEST.
    pub fn acceptor_before_auth(config: Config) -> Script {
        let now = Instant::now();
        let addrs: EntityAddrvec = SERVER.parse().unwrap();
        let conn = Conn::accept(
            Arc::new(config),
            addrs.clone(),
            "10.0.0.2:50000".parse().unwrap(),
            now,
            2,
        );
        let mut s = Script {
            conn,
            enc: FrameEncoder::new(true),
            now,
            input: bytes::BytesMut::new(),
        };
        s.bytes(&Banner::DEFAULT.encode());
        s.frame(
            Hello {
                entity_type: EntityType::CLIENT,
                peer_addr: addrs.0[0],
            }
            .into(),
        );
        s
    }

    /// An acceptor READY with a session from client.1.
    pub fn accepted(config: Config) -> Script {
        let mut s = Script::acceptor(config);
        s.frame(
            ClientIdent {
                addrs: "v2:10.0.0.2:0/2".parse().unwrap(),
                target_addr: SERVER.parse().unwrap(),
                gid: 1,
                global_seq: 1,
                supported_features: msgr_protocol::features::SUPPORTED_DEFAULT,
                required_features: 0,
                flags: 0,
                cookie: 7,
            }
            .into(),
        );
        let req = std::iter::from_fn(|| s.conn.poll_event())
            .find_map(|e| match e {
                Event::IdentReceived(req) => Some(req),
                _ => None,
            })
            .expect("the ident reached the messenger");
        let stamp = msgr_encoding::UTime::default();
        msgr_protocol::registry::resolve(&mut s.conn, None, req, stamp, s.now);
        assert_eq!(s.conn.phase(), "READY");
        s
    }

    /// An AUTH_REQUEST under `method` carrying `payload`.
    pub fn auth_request_with(&mut self, method: u32, payload: Bytes) {
        self.frame(
            AuthRequest {
                method,
                preferred_modes: vec![ConMode::CRC.0],
                auth_payload: payload,
            }
            .into(),
        );
    }

    /// An auth none AUTH_REQUEST under `method` (a method the server does
    /// not know is answered with AUTH_BAD_METHOD).
    pub fn auth_request(&mut self, method: u32) {
        let mut none = msgr_auth::NoneClient {
            name: "client.1".into(),
            global_id: 1,
            modes: vec![ConMode::CRC],
        };
        let req = msgr_auth::ClientAuth::request(
            &mut none,
            &msgr_auth::AuthPeer {
                entity_type: EntityType::OSD,
            },
            &[],
        )
        .unwrap();
        self.frame(
            AuthRequest {
                method,
                preferred_modes: vec![ConMode::CRC.0],
                auth_payload: req.payload,
            }
            .into(),
        );
    }

    /// The MESSAGE frame of `data` numbered `seq`, encoded.
    pub fn message(&mut self, seq: u64, data: &[u8]) -> Bytes {
        let h = MsgHeader2 {
            seq,
            tid: seq,
            msg_type: 42,
            priority: 127,
            ..Default::default()
        };
        let mut q = WireQueue::new();
        self.enc
            .encode(
                Tag::MESSAGE,
                &[
                    Bytes::copy_from_slice(&h.to_array()),
                    Bytes::new(),
                    Bytes::new(),
                    Bytes::copy_from_slice(data),
                ],
                &mut q,
            )
            .unwrap();
        q.take_all()
    }

    /// Moves time on by `d` and fires the connection's timer if it is due.
    pub fn wait(&mut self, d: Duration) {
        self.now += d;
        if self.conn.poll_timeout().is_some_and(|t| t <= self.now) {
            self.conn.handle_timeout(self.now);
        }
    }

    /// Every event so far.
    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.conn.poll_event()).collect()
    }
}

/// A config for osd.0 serving clients with `policy`.
pub fn server_config(policy: Policy) -> Config {
    Config::new(
        "osd.0".parse().unwrap(),
        Arc::new(NoneProvider),
        PolicySet::new(policy),
    )
}
