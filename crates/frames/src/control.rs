//! Typed payloads of every control frame, HELLO through COMPRESSION_DONE
//! (the `ControlFrame` structs of src/msg/async/frames_v2.h).
//!
//! A control frame has one segment holding its fields in order, each in its
//! Ceph encoding, with `msgr2_frame_assumed` features: addresses always in
//! the MSG_ADDR2 form. Bytes after the last field are ignored on decode, as
//! Ceph's ControlFrame::decode does.

use bytes::Bytes;
use msgr_encoding::{
    encoding, Decode, Decoder, Encode, EntityAddr, EntityAddrvec, EntityType, UTime,
};

use crate::{FrameError, Tag};

encoding! {
    /// HELLO: our entity type and the address we see the peer at.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Hello {
        pub entity_type: EntityType,
        pub peer_addr: EntityAddr,
    }
}

encoding! {
    /// AUTH_REQUEST (client): an auth method (CEPH_AUTH_*), the connection
    /// modes it prefers (CEPH_CON_MODE_*), and the method's payload.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthRequest {
        pub method: u32,
        pub preferred_modes: Vec<u32>,
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_BAD_METHOD (server): the method was refused; what is allowed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthBadMethod {
        pub method: u32,
        /// A negative errno, e.g. -EOPNOTSUPP.
        pub result: i32,
        pub allowed_methods: Vec<u32>,
        pub allowed_modes: Vec<u32>,
    }
}

encoding! {
    /// AUTH_REPLY_MORE (server): another round of the auth method.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthReplyMore {
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_REQUEST_MORE (client): the answer to AUTH_REPLY_MORE.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthRequestMore {
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_DONE (server): authenticated; the connection mode from now on.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthDone {
        pub global_id: u64,
        pub con_mode: u32,
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_SIGNATURE: HMAC-SHA256, under the session key, of every byte
    /// received before it (a raw 32-byte `sha256_digest_t`).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthSignature {
        pub sha256: [u8; 32],
    }
}

encoding! {
    /// CLIENT_IDENT: who the client is, whom it wants, and its session.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ClientIdent {
        pub addrs: EntityAddrvec,
        pub target_addr: EntityAddr,
        pub gid: i64,
        pub global_seq: u64,
        pub supported_features: u64,
        pub required_features: u64,
        /// CEPH_MSG_CONNECT_LOSSY (1) for a lossy policy.
        pub flags: u64,
        pub cookie: u64,
    }
}

encoding! {
    /// SERVER_IDENT: the server's answer to CLIENT_IDENT.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServerIdent {
        pub addrs: EntityAddrvec,
        pub gid: i64,
        pub global_seq: u64,
        pub supported_features: u64,
        pub required_features: u64,
        pub flags: u64,
        pub cookie: u64,
    }
}

encoding! {
    /// IDENT_MISSING_FEATURES: the features the peer did not offer.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct IdentMissingFeatures {
        pub features: u64,
    }
}

encoding! {
    /// SESSION_RECONNECT: resume a session after a fault.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReconnect {
        pub addrs: EntityAddrvec,
        pub client_cookie: u64,
        pub server_cookie: u64,
        pub global_seq: u64,
        pub connect_seq: u64,
        /// The last message sequence number received.
        pub msg_seq: u64,
    }
}

encoding! {
    /// SESSION_RESET: the server lost the session; `full` drops the queue.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReset {
        pub full: bool,
    }
}

encoding! {
    /// SESSION_RETRY: reconnect with a newer connect_seq.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionRetry {
        pub connect_seq: u64,
    }
}

encoding! {
    /// SESSION_RETRY_GLOBAL: reconnect with a newer global_seq.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionRetryGlobal {
        pub global_seq: u64,
    }
}

encoding! {
    /// SESSION_RECONNECT_OK: the session is resumed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReconnectOk {
        pub msg_seq: u64,
    }
}

encoding! {
    /// WAIT: a connection race; let the peer's connection win.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Wait {}
}

encoding! {
    /// KEEPALIVE2: the sender's clock.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Keepalive2 {
        pub timestamp: UTime,
    }
}

encoding! {
    /// KEEPALIVE2_ACK: the KEEPALIVE2's timestamp, echoed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Keepalive2Ack {
        pub timestamp: UTime,
    }
}

encoding! {
    /// ACK: every message up to `seq` arrived.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Ack {
        pub seq: u64,
    }
}

encoding! {
    /// COMPRESSION_REQUEST (client): whether it wants to compress, and the
    /// algorithms it prefers, best first.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CompressionRequest {
        pub is_compress: bool,
        pub preferred_methods: Vec<u32>,
    }
}

encoding! {
    /// COMPRESSION_DONE (server): the decision.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CompressionDone {
        pub is_compress: bool,
        pub method: u32,
    }
}

macro_rules! control_frames {
    ($($variant:ident($ty:ident) = $tag:ident),* $(,)?) => {
        /// Any control frame, typed.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum ControlFrame {
            $($variant($ty),)*
        }

        impl ControlFrame {
            pub fn tag(&self) -> Tag {
                match self {
                    $(ControlFrame::$variant(_) => Tag::$tag,)*
                }
            }

            /// The payload (the frame's only segment).
            pub fn payload(&self) -> Bytes {
                match self {
                    $(ControlFrame::$variant(v) => v.to_bytes(),)*
                }
            }

            /// Decodes the payload of a frame with tag `tag`. MESSAGE and
            /// unknown tags are not control frames.
            pub fn decode(tag: Tag, payload: &Bytes) -> Result<ControlFrame, FrameError> {
                let mut d = Decoder::from_bytes(payload);
                let bad = |error| FrameError::BadPayload { tag, error };
                match tag {
                    $(Tag::$tag => $ty::decode(&mut d).map(ControlFrame::$variant).map_err(bad),)*
                    _ => Err(FrameError::UnexpectedSegments { tag, count: 1 }),
                }
            }
        }

        $(
            impl From<$ty> for ControlFrame {
                fn from(v: $ty) -> Self {
                    ControlFrame::$variant(v)
                }
            }
        )*
    };
}

control_frames! {
    Hello(Hello) = HELLO,
    AuthRequest(AuthRequest) = AUTH_REQUEST,
    AuthBadMethod(AuthBadMethod) = AUTH_BAD_METHOD,
    AuthReplyMore(AuthReplyMore) = AUTH_REPLY_MORE,
    AuthRequestMore(AuthRequestMore) = AUTH_REQUEST_MORE,
    AuthDone(AuthDone) = AUTH_DONE,
    AuthSignature(AuthSignature) = AUTH_SIGNATURE,
    ClientIdent(ClientIdent) = CLIENT_IDENT,
    ServerIdent(ServerIdent) = SERVER_IDENT,
    IdentMissingFeatures(IdentMissingFeatures) = IDENT_MISSING_FEATURES,
    SessionReconnect(SessionReconnect) = SESSION_RECONNECT,
    SessionReset(SessionReset) = SESSION_RESET,
    SessionRetry(SessionRetry) = SESSION_RETRY,
    SessionRetryGlobal(SessionRetryGlobal) = SESSION_RETRY_GLOBAL,
    SessionReconnectOk(SessionReconnectOk) = SESSION_RECONNECT_OK,
    Wait(Wait) = WAIT,
    Keepalive2(Keepalive2) = KEEPALIVE2,
    Keepalive2Ack(Keepalive2Ack) = KEEPALIVE2_ACK,
    Ack(Ack) = ACK,
    CompressionRequest(CompressionRequest) = COMPRESSION_REQUEST,
    CompressionDone(CompressionDone) = COMPRESSION_DONE,
}

impl ControlFrame {
    /// Decodes a received frame, which must have exactly one segment.
    pub fn from_received(frame: &crate::Received) -> Result<ControlFrame, FrameError> {
        if frame.num_segments() != 1 {
            return Err(FrameError::UnexpectedSegments {
                tag: frame.tag,
                count: frame.num_segments(),
            });
        }
        Self::decode(frame.tag, &frame.segments[0])
    }
}

/// `CEPH_AUTH_*` (src/include/ceph_fs.h).
pub mod auth_method {
    pub const UNKNOWN: u32 = 0;
    pub const NONE: u32 = 1;
    pub const CEPHX: u32 = 2;
    pub const GSS: u32 = 4;
}

/// `CEPH_CON_MODE_*` (src/include/ceph_fs.h).
pub mod con_mode {
    pub const UNKNOWN: u32 = 0;
    pub const CRC: u32 = 1;
    pub const SECURE: u32 = 2;
}

/// `CEPH_MSG_CONNECT_LOSSY` (src/include/msgr.h), in ident `flags`.
pub const CONNECT_FLAG_LOSSY: u64 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn all_frames() -> Vec<ControlFrame> {
        let addr: EntityAddr = "v2:127.0.0.1:3300/0".parse().unwrap();
        let addrs: EntityAddrvec = "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]".parse().unwrap();
        vec![
            Hello {
                entity_type: EntityType::MON,
                peer_addr: addr,
            }
            .into(),
            AuthRequest {
                method: auth_method::CEPHX,
                preferred_modes: vec![con_mode::SECURE, con_mode::CRC],
                auth_payload: Bytes::from_static(b"payload"),
            }
            .into(),
            AuthBadMethod {
                method: 1,
                result: -95,
                allowed_methods: vec![2],
                allowed_modes: vec![2, 1],
            }
            .into(),
            AuthReplyMore {
                auth_payload: Bytes::from_static(b"x"),
            }
            .into(),
            AuthRequestMore {
                auth_payload: Bytes::new(),
            }
            .into(),
            AuthDone {
                global_id: 4123,
                con_mode: con_mode::SECURE,
                auth_payload: Bytes::from_static(b"ticket"),
            }
            .into(),
            AuthSignature { sha256: [9; 32] }.into(),
            ClientIdent {
                addrs: addrs.clone(),
                target_addr: addr,
                gid: -1,
                global_seq: 3,
                supported_features: u64::MAX,
                required_features: 0,
                flags: CONNECT_FLAG_LOSSY,
                cookie: 77,
            }
            .into(),
            ServerIdent {
                addrs: addrs.clone(),
                gid: 0,
                global_seq: 9,
                supported_features: 1,
                required_features: 2,
                flags: 0,
                cookie: 88,
            }
            .into(),
            IdentMissingFeatures { features: 1 << 59 }.into(),
            SessionReconnect {
                addrs,
                client_cookie: 1,
                server_cookie: 2,
                global_seq: 3,
                connect_seq: 4,
                msg_seq: 5,
            }
            .into(),
            SessionReset { full: true }.into(),
            SessionRetry { connect_seq: 6 }.into(),
            SessionRetryGlobal { global_seq: 7 }.into(),
            SessionReconnectOk { msg_seq: 8 }.into(),
            Wait {}.into(),
            Keepalive2 {
                timestamp: UTime::new(1, 2),
            }
            .into(),
            Keepalive2Ack {
                timestamp: UTime::new(1, 2),
            }
            .into(),
            Ack { seq: 10 }.into(),
            CompressionRequest {
                is_compress: true,
                preferred_methods: vec![1, 3],
            }
            .into(),
            CompressionDone {
                is_compress: true,
                method: 3,
            }
            .into(),
        ]
    }

    #[test]
    fn every_control_frame_roundtrips() {
        let frames = all_frames();
        assert_eq!(frames.len(), 21, "all control tags");
        for f in frames {
            let payload = f.payload();
            assert_eq!(ControlFrame::decode(f.tag(), &payload).unwrap(), f);
        }
    }

    #[test]
    fn layouts_match_frames_v2_h() {
        // COMPRESSION_REQUEST for snappy then zstd (compression research note).
        let req: ControlFrame = CompressionRequest {
            is_compress: true,
            preferred_methods: vec![1, 3],
        }
        .into();
        assert_eq!(&req.payload()[..], &[1, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0]);
        // AUTH_SIGNATURE is the raw 32 bytes.
        assert_eq!(
            ControlFrame::from(AuthSignature { sha256: [1; 32] })
                .payload()
                .len(),
            32
        );
        assert!(ControlFrame::from(Wait {}).payload().is_empty());
    }

    #[test]
    fn truncated_payloads_are_typed_errors() {
        for f in all_frames() {
            let payload = f.payload();
            for cut in 0..payload.len() {
                let r = ControlFrame::decode(f.tag(), &payload.slice(..cut));
                assert!(
                    matches!(r, Err(FrameError::BadPayload { .. })),
                    "{} cut at {cut}: {r:?}",
                    f.tag()
                );
            }
        }
    }
}
