//! `struct ceph_msg_connect` and `struct ceph_msg_connect_reply`
//! (src/include/msgr.h, packed, little-endian): the connector's request
//! and the acceptor's verdict, each followed by `authorizer_len` bytes of
//! authorizer (and a reply tagged SEQ by the acceptor's le64 in_seq).

use super::{field, Tag, WireError};

/// `CEPH_MSG_CONNECT_LOSSY`: the sender's policy drops messages on faults.
pub const FLAG_LOSSY: u8 = 1;

/// Field offsets of `ceph_msg_connect`.
mod connect_field {
    use std::ops::Range;
    pub const FEATURES: Range<usize> = 0..8;
    pub const HOST_TYPE: Range<usize> = 8..12;
    pub const GLOBAL_SEQ: Range<usize> = 12..16;
    pub const CONNECT_SEQ: Range<usize> = 16..20;
    pub const PROTOCOL_VERSION: Range<usize> = 20..24;
    pub const AUTHORIZER_PROTOCOL: Range<usize> = 24..28;
    pub const AUTHORIZER_LEN: Range<usize> = 28..32;
    pub const FLAGS: usize = 32;
}

/// Field offsets of `ceph_msg_connect_reply`.
mod reply_field {
    use std::ops::Range;
    pub const TAG: usize = 0;
    pub const FEATURES: Range<usize> = 1..9;
    pub const GLOBAL_SEQ: Range<usize> = 9..13;
    pub const CONNECT_SEQ: Range<usize> = 13..17;
    pub const PROTOCOL_VERSION: Range<usize> = 17..21;
    pub const AUTHORIZER_LEN: Range<usize> = 21..25;
    pub const FLAGS: usize = 25;
}

fn le32(b: &[u8], r: std::ops::Range<usize>) -> u32 {
    u32::from_le_bytes(field(b, r))
}

fn le64(b: &[u8], r: std::ops::Range<usize>) -> u64 {
    u64::from_le_bytes(field(b, r))
}

/// `ceph_msg_connect`, 33 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Connect {
    /// The connector's supported feature bits.
    pub features: u64,
    /// Its CEPH_ENTITY_TYPE_*.
    pub host_type: u32,
    /// Connections this host initiated (its messenger's global_seq).
    pub global_seq: u32,
    /// Connections initiated in this session (0: a new session).
    pub connect_seq: u32,
    /// The msgr1 protocol version for this pair of entity types (CEPH_OSDC_PROTOCOL and kin).
    pub protocol_version: u32,
    /// CEPH_AUTH_* of the authorizer that follows (0: none).
    pub authorizer_protocol: u32,
    /// The length of the authorizer that follows.
    pub authorizer_len: u32,
    /// CEPH_MSG_CONNECT_*.
    pub flags: u8,
}

impl Connect {
    /// The CONNECT's length on the wire, authorizer excluded.
    pub const LEN: usize = 33;

    /// The CONNECT's wire bytes (little-endian, packed).
    pub fn encode(&self) -> [u8; Connect::LEN] {
        use connect_field::*;
        let mut b = [0u8; Connect::LEN];
        b[FEATURES].copy_from_slice(&self.features.to_le_bytes());
        b[HOST_TYPE].copy_from_slice(&self.host_type.to_le_bytes());
        b[GLOBAL_SEQ].copy_from_slice(&self.global_seq.to_le_bytes());
        b[CONNECT_SEQ].copy_from_slice(&self.connect_seq.to_le_bytes());
        b[PROTOCOL_VERSION].copy_from_slice(&self.protocol_version.to_le_bytes());
        b[AUTHORIZER_PROTOCOL].copy_from_slice(&self.authorizer_protocol.to_le_bytes());
        b[AUTHORIZER_LEN].copy_from_slice(&self.authorizer_len.to_le_bytes());
        b[FLAGS] = self.flags;
        b
    }

    /// The CONNECT these wire bytes hold; every byte pattern is one.
    pub fn decode(b: &[u8; Connect::LEN]) -> Connect {
        use connect_field::*;
        Connect {
            features: le64(b, FEATURES),
            host_type: le32(b, HOST_TYPE),
            global_seq: le32(b, GLOBAL_SEQ),
            connect_seq: le32(b, CONNECT_SEQ),
            protocol_version: le32(b, PROTOCOL_VERSION),
            authorizer_protocol: le32(b, AUTHORIZER_PROTOCOL),
            authorizer_len: le32(b, AUTHORIZER_LEN),
            flags: b[FLAGS],
        }
    }

    /// Whether the connector's policy is lossy (CEPH_MSG_CONNECT_LOSSY).
    pub fn lossy(&self) -> bool {
        self.flags & FLAG_LOSSY != 0
    }
}

/// `ceph_msg_connect_reply`, 26 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectReply {
    /// The verdict: READY, SEQ, WAIT, RETRY_*, RESETSESSION, BAD*,
    /// FEATURES, CHALLENGE_AUTHORIZER.
    pub tag: Tag,
    /// The session's features (READY/SEQ); the acceptor's otherwise.
    pub features: u64,
    /// The acceptor's global_seq (RETRY_GLOBAL: the value to exceed).
    pub global_seq: u32,
    /// The acceptor's connect_seq (RETRY_SESSION: the value to pass).
    pub connect_seq: u32,
    /// The acceptor's protocol version for this pair of entity types.
    pub protocol_version: u32,
    /// The length of the authorizer reply that follows.
    pub authorizer_len: u32,
    /// CEPH_MSG_CONNECT_*: the acceptor's policy.
    pub flags: u8,
}

impl ConnectReply {
    /// The reply's length on the wire, authorizer reply excluded.
    pub const LEN: usize = 26;

    /// The tags a reply may carry.
    const EXPECT: &'static str = "a connect reply tag (READY, SEQ, WAIT, RETRY_SESSION, RETRY_GLOBAL, RESETSESSION, BADPROTOVER, BADAUTHORIZER, FEATURES, CHALLENGE_AUTHORIZER)";

    /// The reply's wire bytes (little-endian, packed).
    pub fn encode(&self) -> [u8; ConnectReply::LEN] {
        use reply_field::*;
        let mut b = [0u8; ConnectReply::LEN];
        b[TAG] = self.tag as u8;
        b[FEATURES].copy_from_slice(&self.features.to_le_bytes());
        b[GLOBAL_SEQ].copy_from_slice(&self.global_seq.to_le_bytes());
        b[CONNECT_SEQ].copy_from_slice(&self.connect_seq.to_le_bytes());
        b[PROTOCOL_VERSION].copy_from_slice(&self.protocol_version.to_le_bytes());
        b[AUTHORIZER_LEN].copy_from_slice(&self.authorizer_len.to_le_bytes());
        b[FLAGS] = self.flags;
        b
    }

    /// Decodes a reply; a tag no reply may carry is the peer's error.
    pub fn decode(b: &[u8; ConnectReply::LEN]) -> Result<ConnectReply, WireError> {
        use reply_field::*;
        let tag = match Tag::from_u8(b[TAG]) {
            Some(
                t @ (Tag::Ready
                | Tag::Seq
                | Tag::Wait
                | Tag::RetrySession
                | Tag::RetryGlobal
                | Tag::ResetSession
                | Tag::BadProtoVer
                | Tag::BadAuthorizer
                | Tag::Features
                | Tag::ChallengeAuthorizer),
            ) => t,
            _ => {
                return Err(WireError::UnexpectedTag {
                    expect: ConnectReply::EXPECT,
                    got: b[TAG],
                })
            }
        };
        Ok(ConnectReply {
            tag,
            features: le64(b, FEATURES),
            global_seq: le32(b, GLOBAL_SEQ),
            connect_seq: le32(b, CONNECT_SEQ),
            protocol_version: le32(b, PROTOCOL_VERSION),
            authorizer_len: le32(b, AUTHORIZER_LEN),
            flags: b[FLAGS],
        })
    }

    /// Whether the acceptor's policy is lossy (CEPH_MSG_CONNECT_LOSSY).
    pub fn lossy(&self) -> bool {
        self.flags & FLAG_LOSSY != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::hex;

    #[test]
    fn connect_and_reply_match_a_ceph_20_handshake() {
        // tentacle-v1-perf-msgr.pcap: ceph_perf_msgr_client's CONNECT and
        // the server's reply (SEQ; its in_seq follows the 26 bytes).
        let wire = hex::decode(
            "fffffdffffff073f 08000000 01000000 00000000 18000000 00000000 00000000 00",
        )
        .unwrap();
        let c = Connect::decode(wire.as_slice().try_into().unwrap());
        assert_eq!(c.features, 0x3f07_ffff_fffd_ffff);
        assert_eq!((c.host_type, c.global_seq, c.connect_seq), (8, 1, 0));
        assert_eq!((c.protocol_version, c.authorizer_len, c.flags), (24, 0, 0));
        assert_eq!(&c.encode()[..], &wire[..]);

        let wire =
            hex::decode("0d ffff fdff ffff 073f 01000000 01000000 18000000 00000000 01").unwrap();
        let r = ConnectReply::decode(wire.as_slice().try_into().unwrap()).unwrap();
        assert_eq!(r.tag, Tag::Seq);
        assert_eq!(
            (r.global_seq, r.connect_seq, r.protocol_version),
            (1, 1, 24)
        );
        assert!(r.lossy());
        assert_eq!(&r.encode()[..], &wire[..]);
    }

    #[test]
    fn a_reply_with_a_stream_tag_is_refused() {
        let mut b = [0u8; ConnectReply::LEN];
        for bad in [0, Tag::Msg as u8, Tag::Ack as u8, Tag::Close as u8, 200] {
            b[0] = bad;
            assert!(matches!(
                ConnectReply::decode(&b),
                Err(WireError::UnexpectedTag { got, .. }) if got == bad
            ));
        }
    }
}
