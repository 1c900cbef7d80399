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
        /// The sender's entity type (mon, osd, client, ...).
        pub entity_type: EntityType,
        /// The address the sender sees the peer at: how a peer that does not know its own IP
        /// learns it.
        pub peer_addr: EntityAddr,
    }
}

encoding! {
    /// AUTH_REQUEST (client): an auth method (CEPH_AUTH_*), the connection
    /// modes it prefers (CEPH_CON_MODE_*), and the method's payload.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthRequest {
        /// The auth method (CEPH_AUTH_*, [`auth_method`]).
        pub method: u32,
        /// The connection modes the client accepts (CEPH_CON_MODE_*, [`con_mode`]), preferred
        /// first.
        pub preferred_modes: Vec<u32>,
        /// The method's first request (for cephx, the ticket request or authorizer).
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_BAD_METHOD (server): the method was refused; what is allowed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthBadMethod {
        /// The method the client asked for.
        pub method: u32,
        /// A negative errno, e.g. -EOPNOTSUPP.
        pub result: i32,
        /// The methods the server accepts, for the client's next try.
        pub allowed_methods: Vec<u32>,
        /// The connection modes the server accepts.
        pub allowed_modes: Vec<u32>,
    }
}

encoding! {
    /// AUTH_REPLY_MORE (server): another round of the auth method.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthReplyMore {
        /// The method's next challenge.
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_REQUEST_MORE (client): the answer to AUTH_REPLY_MORE.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthRequestMore {
        /// The method's answer to the challenge.
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_DONE (server): authenticated; the connection mode from now on.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthDone {
        /// The global id the server gave the client's entity (its gid).
        pub global_id: u64,
        /// The connection mode from here on (CEPH_CON_MODE_*): crc or secure.
        pub con_mode: u32,
        /// The method's final reply (for cephx, the tickets or the authorizer reply).
        pub auth_payload: Bytes,
    }
}

encoding! {
    /// AUTH_SIGNATURE: HMAC-SHA256, under the session key, of every byte
    /// received before it (a raw 32-byte `sha256_digest_t`).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthSignature {
        /// The HMAC-SHA256 digest.
        pub sha256: [u8; 32],
    }
}

encoding! {
    /// CLIENT_IDENT: who the client is, whom it wants, and its session.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ClientIdent {
        /// The client's own addresses (its bound ones, or blank ones it has yet to learn).
        pub addrs: EntityAddrvec,
        /// The server address the client dialled, which the server checks is its own.
        pub target_addr: EntityAddr,
        /// The client's entity number (`entity_name_t` num; its global id for clients).
        pub gid: i64,
        /// The client messenger's global_seq for this attempt: later attempts carry larger
        /// ones.
        pub global_seq: u64,
        /// The feature bits the client supports.
        pub supported_features: u64,
        /// The feature bits the client requires of the server.
        pub required_features: u64,
        /// CEPH_MSG_CONNECT_LOSSY (1) for a lossy policy.
        pub flags: u64,
        /// The client cookie: names the session for a later SESSION_RECONNECT.
        pub cookie: u64,
    }
}

encoding! {
    /// SERVER_IDENT: the server's answer to CLIENT_IDENT.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServerIdent {
        /// The server's addresses.
        pub addrs: EntityAddrvec,
        /// The server's entity number (`entity_name_t` num).
        pub gid: i64,
        /// The server messenger's global_seq for this connection.
        pub global_seq: u64,
        /// The feature bits the server supports.
        pub supported_features: u64,
        /// The feature bits the server requires of the client.
        pub required_features: u64,
        /// CEPH_MSG_CONNECT_LOSSY (1) when the server's policy for the client is lossy.
        pub flags: u64,
        /// The server cookie: names the session for a later SESSION_RECONNECT.
        pub cookie: u64,
    }
}

encoding! {
    /// IDENT_MISSING_FEATURES: the features the peer did not offer.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct IdentMissingFeatures {
        /// The required feature bits the peer lacks.
        pub features: u64,
    }
}

encoding! {
    /// SESSION_RECONNECT: resume a session after a fault.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReconnect {
        /// The client's addresses.
        pub addrs: EntityAddrvec,
        /// The session's client cookie, from its CLIENT_IDENT.
        pub client_cookie: u64,
        /// The session's server cookie, from its SERVER_IDENT.
        pub server_cookie: u64,
        /// The client messenger's global_seq for this attempt.
        pub global_seq: u64,
        /// How many times the client has reconnected this session, counting this attempt.
        pub connect_seq: u64,
        /// The last message sequence number received.
        pub msg_seq: u64,
    }
}

encoding! {
    /// SESSION_RESET: the server lost the session; `full` drops the queue.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReset {
        /// Reset everything, queued messages included; without it, only the cookies and
        /// sequence numbers start over.
        pub full: bool,
    }
}

encoding! {
    /// SESSION_RETRY: reconnect with a newer connect_seq.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionRetry {
        /// The server's connect_seq, which the client's next SESSION_RECONNECT must pass.
        pub connect_seq: u64,
    }
}

encoding! {
    /// SESSION_RETRY_GLOBAL: reconnect with a newer global_seq.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionRetryGlobal {
        /// The global_seq the client's next attempt must exceed.
        pub global_seq: u64,
    }
}

encoding! {
    /// SESSION_RECONNECT_OK: the session is resumed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionReconnectOk {
        /// The last message sequence number the server received: the client resends from the
        /// one after it.
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
        /// The sender's clock when it sent the keepalive.
        pub timestamp: UTime,
    }
}

encoding! {
    /// KEEPALIVE2_ACK: the KEEPALIVE2's timestamp, echoed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Keepalive2Ack {
        /// The timestamp of the KEEPALIVE2 this answers.
        pub timestamp: UTime,
    }
}

encoding! {
    /// ACK: every message up to `seq` arrived.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Ack {
        /// The last message sequence number received.
        pub seq: u64,
    }
}

encoding! {
    /// COMPRESSION_REQUEST (client): whether it wants to compress, and the
    /// algorithms it prefers, best first.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CompressionRequest {
        /// Whether the client wants compression.
        pub is_compress: bool,
        /// The algorithms it accepts (Ceph's compression ids), preferred first.
        pub preferred_methods: Vec<u32>,
    }
}

encoding! {
    /// COMPRESSION_DONE (server): the decision.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CompressionDone {
        /// Whether the frames are compressed from here on.
        pub is_compress: bool,
        /// The algorithm the server chose (a Ceph compression id).
        pub method: u32,
    }
}

macro_rules! control_frames {
    ($($variant:ident($ty:ident) = $tag:ident),* $(,)?) => {
        /// Any control frame, typed.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum ControlFrame {
            $(
                #[doc = concat!("A ", stringify!($tag), " frame.")]
                $variant($ty),
            )*
        }

        impl ControlFrame {
            /// The frame's tag, which says how its payload decodes.
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
    /// No method named.
    pub const UNKNOWN: u32 = 0;
    /// `none`: no authentication; the peer is taken at its word.
    pub const NONE: u32 = 1;
    /// Ceph's own ticket-based authentication.
    pub const CEPHX: u32 = 2;
    /// Kerberos through GSS-API.
    pub const GSS: u32 = 4;
}

/// `CEPH_CON_MODE_*` (src/include/ceph_fs.h).
pub mod con_mode {
    /// No mode chosen yet.
    pub const UNKNOWN: u32 = 0;
    /// Frames carry crc32c checksums, unencrypted.
    pub const CRC: u32 = 1;
    /// Frames are encrypted and authenticated with AES-128-GCM.
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
