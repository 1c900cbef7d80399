//! msgr1's one-byte tags (`CEPH_MSGR_TAG_*`, src/include/msgr.h): the
//! connect reply's verdict, and what precedes each item of an open
//! session's stream.

use std::fmt;

/// A `CEPH_MSGR_TAG_*` value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub enum Tag {
    /// Server → client: the session is open.
    Ready = 1,
    /// Server → client: the session was reset; start a new one.
    ResetSession = 2,
    /// Server → client: a connect race the server wins; wait for its connection.
    Wait = 3,
    /// Server → client: retry with the connect_seq in the reply.
    RetrySession = 4,
    /// Server → client: retry with a global_seq above the one in the reply.
    RetryGlobal = 5,
    /// The session ends.
    Close = 6,
    /// A message follows.
    Msg = 7,
    /// An acknowledgement (le64 seq) follows.
    Ack = 8,
    /// A keepalive with no payload (old peers).
    Keepalive = 9,
    /// Server → client: protocol versions differ.
    BadProtoVer = 10,
    /// Server → client: the authorizer was refused.
    BadAuthorizer = 11,
    /// Server → client: required features are missing.
    Features = 12,
    /// Server → client: like READY, and the server's in_seq follows; the
    /// client answers with its own (lossless reconnects).
    Seq = 13,
    /// A keepalive with a timestamp (ceph_timespec) to echo.
    Keepalive2 = 14,
    /// The echo of a KEEPALIVE2's timestamp.
    Keepalive2Ack = 15,
    /// Server → client: an authorizer challenge (CVE-2018-1128); reconnect
    /// with an authorizer that answers it.
    ChallengeAuthorizer = 16,
}

impl Tag {
    const ALL: [Tag; 16] = [
        Tag::Ready,
        Tag::ResetSession,
        Tag::Wait,
        Tag::RetrySession,
        Tag::RetryGlobal,
        Tag::Close,
        Tag::Msg,
        Tag::Ack,
        Tag::Keepalive,
        Tag::BadProtoVer,
        Tag::BadAuthorizer,
        Tag::Features,
        Tag::Seq,
        Tag::Keepalive2,
        Tag::Keepalive2Ack,
        Tag::ChallengeAuthorizer,
    ];

    /// The tag this byte names, if any.
    pub fn from_u8(b: u8) -> Option<Tag> {
        Tag::ALL.get(usize::from(b).checked_sub(1)?).copied()
    }

    /// As msgr.h names it, without `CEPH_MSGR_TAG_`.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Ready => "READY",
            Tag::ResetSession => "RESETSESSION",
            Tag::Wait => "WAIT",
            Tag::RetrySession => "RETRY_SESSION",
            Tag::RetryGlobal => "RETRY_GLOBAL",
            Tag::Close => "CLOSE",
            Tag::Msg => "MSG",
            Tag::Ack => "ACK",
            Tag::Keepalive => "KEEPALIVE",
            Tag::BadProtoVer => "BADPROTOVER",
            Tag::BadAuthorizer => "BADAUTHORIZER",
            Tag::Features => "FEATURES",
            Tag::Seq => "SEQ",
            Tag::Keepalive2 => "KEEPALIVE2",
            Tag::Keepalive2Ack => "KEEPALIVE2_ACK",
            Tag::ChallengeAuthorizer => "CHALLENGE_AUTHORIZER",
        }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_msgr_h_s() {
        for (i, t) in Tag::ALL.iter().enumerate() {
            assert_eq!(*t as u8 as usize, i + 1);
            assert_eq!(Tag::from_u8(*t as u8), Some(*t));
        }
        assert_eq!(Tag::from_u8(0), None);
        assert_eq!(Tag::from_u8(17), None);
        assert_eq!((Tag::Msg as u8, Tag::Seq as u8), (7, 13));
    }
}
