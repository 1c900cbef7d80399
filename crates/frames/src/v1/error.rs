//! Errors of msgr1's wire layer, each attributed to who was at fault.

use std::fmt;

use msgr_encoding::DecodeError;

use super::Tag;
use crate::Fault;

/// A message's three payload sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The front: the message's encoded fields.
    Front,
    /// The middle: rarely used; most message types leave it empty.
    Middle,
    /// The data: bulk bytes such as an object's contents.
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
    NotMsgr1 {
        /// The banner is msgr2's: the peer speaks the newer protocol.
        msgr2: bool,
    },
    /// A legacy entity_addr_t in the banner exchange does not decode.
    BadAddr(DecodeError),
    /// A tag that may not come at this point (`expect` names what may).
    UnexpectedTag {
        /// What may come at this point.
        expect: &'static str,
        /// The tag byte that came.
        got: u8,
    },
    /// An authorizer longer than we accept.
    AuthorizerTooLarge {
        /// The authorizer length the CONNECT (or its reply) announces.
        len: u32,
        /// The most we accept.
        max: u32,
    },
    /// The header crc does not match its first 49 bytes.
    BadHeaderCrc {
        /// The crc the header carries (`crc`).
        expected: u32,
        /// The crc of the bytes that arrived.
        computed: u32,
    },
    /// A section's crc does not match the footer's.
    BadCrc {
        /// Which section.
        section: Section,
        /// The crc the footer carries for it.
        expected: u32,
        /// The crc of the bytes that arrived.
        computed: u32,
    },
    /// A section longer than its cap.
    SectionTooLarge {
        /// Which section.
        section: Section,
        /// Its length, as the header announces it.
        len: u32,
        /// The cap on it.
        max: u32,
    },
    /// The message is longer than the cap on a whole message.
    MessageTooLarge {
        /// The message's length, its sections together.
        len: u64,
        /// The cap on a whole message.
        max: u64,
    },
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
