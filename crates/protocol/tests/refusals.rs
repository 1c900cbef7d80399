//! A client holds its server to what it offered: a connection mode or a
//! compression method it did not list is refused with a typed error, not
//! taken (a man in the middle could otherwise turn compression on under
//! secure mode, or pick a mode the client's policy forbids). Driven
//! sans-IO: a connector against a scripted server.

use std::sync::Arc;
use std::time::Instant;

use msgr_auth::{ConMode, NoneProvider};
use msgr_encoding::EntityType;
use msgr_frames::compression::Algorithm;
use msgr_frames::control::*;
use msgr_frames::{Banner, ControlFrame, FrameEncoder};
use msgr_protocol::{CompressionConfig, Config, Conn, Policy, PolicySet, ProtocolError};

mod script;
use script::Script;

#[test]
fn a_mode_the_client_did_not_offer_is_refused() {
    // Auth none offers crc only; the "server" answers secure.
    let mut s = Script::new(CompressionConfig::default());
    s.auth_done(ConMode::SECURE);
    assert_eq!(
        s.fault(),
        Some(ProtocolError::NotOffered {
            what: "connection mode",
            offered: vec![ConMode::CRC.0],
            got: ConMode::SECURE.0,
        })
    );
}

/// A client that offered `algorithms` (none: it did not ask to compress)
/// told by its server to compress with `method`: the fault it reports,
/// and where it stands.
fn compression_done(
    algorithms: &[Algorithm],
    method: Algorithm,
) -> (Option<ProtocolError>, &'static str) {
    let mut s = Script::new(CompressionConfig {
        force: !algorithms.is_empty(),
        all_peers: true,
        algorithms: algorithms.to_vec(),
        ..Default::default()
    });
    s.auth_done(ConMode::CRC);
    // Auth none signs with no key: 32 zero bytes.
    s.frame(AuthSignature { sha256: [0; 32] }.into());
    s.frame(
        CompressionDone {
            is_compress: true,
            method: method as u32,
        }
        .into(),
    );
    (s.fault(), s.conn.phase())
}

#[test]
fn compression_the_client_did_not_ask_for_is_refused() {
    assert_eq!(
        compression_done(&[], Algorithm::Snappy).0,
        Some(ProtocolError::NotOffered {
            what: "compression method",
            offered: vec![],
            got: Algorithm::Snappy as u32,
        })
    );
}

#[test]
fn a_compression_method_the_client_did_not_offer_is_refused() {
    assert_eq!(
        compression_done(&[Algorithm::Snappy], Algorithm::Zstd).0,
        Some(ProtocolError::NotOffered {
            what: "compression method",
            offered: vec![Algorithm::Snappy as u32],
            got: Algorithm::Zstd as u32,
        })
    );
    // What was offered is taken.
    assert_eq!(
        compression_done(&[Algorithm::Snappy], Algorithm::Snappy),
        (None, "SESSION_CONNECTING")
    );
}

/// Counters a server sets in its answers to SESSION_RECONNECT are never
/// wrapped: SESSION_RETRY at connect_seq u64::MAX, SESSION_RETRY_GLOBAL
/// beyond what our global_seq may be raised to.
#[test]
fn a_server_cannot_wrap_our_counters() {
    for (frame, refused) in [
        (
            ControlFrame::from(SessionRetry {
                connect_seq: u64::MAX,
            }),
            ProtocolError::CounterOverflow {
                counter: "connect_seq",
            },
        ),
        (
            ControlFrame::from(SessionRetryGlobal {
                global_seq: u64::MAX,
            }),
            ProtocolError::PeerGlobalSeq {
                shown: u64::MAX,
                ours: 2,
                pushed: 0,
            },
        ),
    ] {
        let mut s = Script::with(Policy::lossless_client(), CompressionConfig::default());
        s.to_ident();
        s.frame(
            ServerIdent {
                addrs: "v2:10.0.0.1:6800/1".parse().unwrap(),
                gid: 0,
                global_seq: 1,
                supported_features: msgr_protocol::features::SUPPORTED_DEFAULT,
                required_features: 0,
                flags: 0,
                cookie: 77,
            }
            .into(),
        );
        assert_eq!(s.conn.phase(), "READY");
        let link = s.conn.link_id().unwrap();
        s.conn
            .socket_closed(link, &std::io::ErrorKind::ConnectionReset.into(), s.now);
        while s.conn.poll_event().is_some() {}
        s.socket();
        s.to_ident();
        assert_eq!(s.conn.phase(), "SESSION_RECONNECTING");
        s.frame(frame);
        assert_eq!(s.fault(), Some(refused));
    }
}

/// A frame out of place is reported as what the state expected against
/// what arrived, on both sides.
#[test]
fn an_unexpected_frame_says_what_was_expected_and_what_came() {
    use msgr_frames::Tag;
    use msgr_protocol::Wire;
    // A connector awaiting HELLO gets AUTH_SIGNATURE.
    let mut cfg = Config::new(
        "client.1".parse().unwrap(),
        Arc::new(NoneProvider),
        PolicySet::new(Policy::lossy_client()),
    );
    cfg.compression = CompressionConfig::default();
    let now = Instant::now();
    let mut conn = Conn::connect(
        Arc::new(cfg),
        "v2:10.0.0.1:6800/1".parse().unwrap(),
        EntityType::OSD,
        "v2:10.0.0.2:0/2".parse().unwrap(),
        now,
        1,
    );
    conn.socket_connected(None, now);
    let mut s = Script {
        conn,
        enc: FrameEncoder::new(true),
        now,
        input: Default::default(),
    };
    s.bytes(&Banner::DEFAULT.encode());
    s.frame(AuthSignature { sha256: [0; 32] }.into());
    let e = s.fault().unwrap();
    assert_eq!(
        e,
        ProtocolError::UnexpectedFrame {
            state: "HELLO_CONNECTING",
            expected: &[Wire::Frame(Tag::HELLO)],
            got: Wire::Frame(Tag::AUTH_SIGNATURE),
        }
    );
    assert_eq!(
        e.to_string(),
        "in state HELLO_CONNECTING the peer sent AUTH_SIGNATURE; expected HELLO"
    );

    // An acceptor awaiting COMPRESSION_REQUEST gets CLIENT_IDENT.
    let mut s = Script::acceptor_before_auth(script::server_config(Policy::stateless_server()));
    s.auth_request(msgr_auth::method::NONE);
    s.frame(AuthSignature { sha256: [0; 32] }.into());
    s.frame(
        ClientIdent {
            addrs: "v2:10.0.0.2:0/2".parse().unwrap(),
            target_addr: script::SERVER.parse().unwrap(),
            gid: 1,
            global_seq: 1,
            supported_features: msgr_protocol::features::SUPPORTED_DEFAULT,
            required_features: 0,
            flags: 1,
            cookie: 0,
        }
        .into(),
    );
    let e = s.fault().unwrap();
    assert_eq!(
        e.to_string(),
        "in state COMPRESSION_ACCEPTING the peer sent CLIENT_IDENT; expected COMPRESSION_REQUEST"
    );
}

/// What a driver read past a frame that ends its socket goes with the
/// socket: the read buffer is left empty, and a partial frame read on a
/// live socket stays for the next read.
#[test]
fn bytes_read_past_a_fault_are_dropped_with_the_socket() {
    let mut s = Script::new(CompressionConfig::default());
    let mut q = msgr_frames::WireQueue::new();
    let sig = ControlFrame::from(AuthSignature { sha256: [0; 32] });
    s.enc.encode(sig.tag(), &[sig.payload()], &mut q).unwrap();
    let frame = q.take_all();
    // Half a frame stays in the buffer while the socket lives.
    s.bytes(&frame[..20]);
    assert_eq!(s.input.len(), 20);
    // The rest, and more: AUTH_SIGNATURE before AUTH_DONE is a fault.
    s.bytes(&[&frame[20..], &b"more bytes of the dead socket"[..]].concat());
    assert!(s.fault().is_some());
    assert!(s.input.is_empty(), "{} bytes kept", s.input.len());
}
