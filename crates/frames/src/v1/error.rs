//! Errors of msgr1's wire layer, each attributed to who was at fault.

use std::fmt;

use msgr_encoding::DecodeError;

use super::Tag;
use crate::Fault;

/// A message's three payload sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Front,
    Middle,
    Data,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Front => "front",
            Section::Middle => "middle",
            Section::Data => "data",
        })
    }
}

/// An error of msgr1's wire layer. After the first one the stream's
/// framing is lost: the connection faults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The peer's banner is not `ceph v027`; `msgr2` when it is `ceph v2\n`.
    NotMsgr1 { msgr2: bool },
    /// A legacy entity_addr_t in the banner exchange does not decode.
    BadAddr(DecodeError),
    /// A tag that may not come at this point (`expect` names what may).
    UnexpectedTag { expect: &'static str, got: u8 },
    /// An authorizer longer than we accept.
    AuthorizerTooLarge { len: u32, max: u32 },
    /// The header crc does not match its first 49 bytes.
    BadHeaderCrc { expected: u32, computed: u32 },
    /// A section's crc does not match the footer's.
    BadCrc {
        section: Section,
        expected: u32,
        computed: u32,
    },
    /// A section longer than its cap.
    SectionTooLarge {
        section: Section,
        len: u32,
        max: u32,
    },
    /// The message is longer than the cap on a whole message.
    MessageTooLarge { len: u64, max: u64 },
}

impl WireError {
    /// Who is at fault: always the peer, since every error is about what
    /// it sent.
    pub fn fault(&self) -> Fault {
        Fault::PeerMisbehaved
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WireError::*;
        match self {
            NotMsgr1 { msgr2: true } => {
                f.write_str("peer speaks msgr2 (banner \"ceph v2\"), not msgr1")
            }
            NotMsgr1 { msgr2: false } => f.write_str("peer did not send the msgr1 banner"),
            BadAddr(e) => write!(f, "bad address in the msgr1 banner exchange: {e}"),
            UnexpectedTag { expect, got } => match Tag::from_u8(*got) {
                Some(t) => write!(f, "expected {expect}, got tag {t}"),
                None => write!(f, "expected {expect}, got unknown tag {got}"),
            },
            AuthorizerTooLarge { len, max } => {
                write!(f, "authorizer of {len} bytes exceeds the cap of {max}")
            }
            BadHeaderCrc { expected, computed } => write!(
                f,
                "bad message header crc: header says {expected:#010x}, computed {computed:#010x}"
            ),
            BadCrc {
                section,
                expected,
                computed,
            } => write!(
                f,
                "bad {section} crc: footer says {expected:#010x}, computed {computed:#010x}"
            ),
            SectionTooLarge { section, len, max } => {
                write!(f, "{section} of {len} bytes exceeds the cap of {max}")
            }
            MessageTooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the cap of {max}")
            }
        }
    }
}

impl std::error::Error for WireError {}
