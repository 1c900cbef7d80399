//! The one error type of decoding. Every variant is the peer's fault: the bytes
//! it sent do not describe a value we can build. See `DecodeError::kind`.

use std::fmt;

/// Why a value could not be decoded. Decoding stops at the first error; the
/// bytes consumed so far are not meaningful afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before the value did.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length or count claims more than the input could hold, or more than
    /// a configured cap. Checked before anything is allocated.
    LengthTooLarge {
        /// What was being read.
        what: &'static str,
        /// The length or count the input claims.
        claimed: u64,
        /// The most it may be here.
        max: u64,
    },
    /// A versioned envelope (ENCODE_START) needs a decoder at least as new as
    /// `compat`; we implement `supported` (src/include/encoding.h DECODE_START).
    IncompatibleVersion {
        /// What was being read.
        what: &'static str,
        /// The envelope's compat version: the oldest decoder that can read it.
        compat: u8,
        /// The version we implement.
        supported: u8,
    },
    /// A versioned envelope is older than the oldest version we can read.
    VersionTooOld {
        /// What was being read.
        what: &'static str,
        /// The envelope's version.
        version: u8,
        /// The oldest version we can read.
        oldest: u8,
    },
    /// A field holds a value outside its domain (bad marker byte, unknown
    /// address family, invalid UTF-8, ...).
    InvalidValue {
        /// What was being read.
        what: &'static str,
        /// The value that arrived.
        value: u64,
    },
    /// A versioned envelope's body was shorter than the fields it must hold.
    EnvelopeOverrun {
        /// What was being read.
        what: &'static str,
    },
    /// Bytes were left over where a value had to fill its container exactly.
    TrailingBytes {
        /// What was being read.
        what: &'static str,
        /// How many bytes were left.
        left: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated {
                what,
                needed,
                remaining,
            } => write!(
                f,
                "truncated {what}: needed {needed} bytes, {remaining} left"
            ),
            DecodeError::LengthTooLarge { what, claimed, max } => {
                write!(f, "{what} claims length {claimed}, at most {max} allowed")
            }
            DecodeError::IncompatibleVersion {
                what,
                compat,
                supported,
            } => write!(
                f,
                "{what} needs decoder version {compat}, we support up to {supported}"
            ),
            DecodeError::VersionTooOld {
                what,
                version,
                oldest,
            } => write!(
                f,
                "{what} has version {version}, oldest supported is {oldest}"
            ),
            DecodeError::InvalidValue { what, value } => {
                write!(f, "invalid {what}: {value:#x}")
            }
            DecodeError::EnvelopeOverrun { what } => {
                write!(f, "{what} reads past the end of its versioned envelope")
            }
            DecodeError::TrailingBytes { what, left } => {
                write!(f, "{left} unexpected bytes after {what}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// The result of a decode.
pub type DecodeResult<T> = Result<T, DecodeError>;

impl DecodeError {
    /// Names the field being decoded when the error came from a primitive
    /// that did not know its own name.
    pub fn context(mut self, field: &'static str) -> Self {
        let what = match &mut self {
            DecodeError::Truncated { what, .. }
            | DecodeError::LengthTooLarge { what, .. }
            | DecodeError::IncompatibleVersion { what, .. }
            | DecodeError::VersionTooOld { what, .. }
            | DecodeError::InvalidValue { what, .. }
            | DecodeError::EnvelopeOverrun { what }
            | DecodeError::TrailingBytes { what, .. } => what,
        };
        if what.is_empty() {
            *what = field;
        }
        self
    }
}
