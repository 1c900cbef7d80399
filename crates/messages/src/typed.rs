//! The link between typed messages and the messenger's raw [`Message`].

use msgr_encoding::DecodeError;
use msgr_protocol::Message;

/// A message type with a Ceph encoding.
pub trait TypedMessage: Sized {
    /// CEPH_MSG_* / MSG_*.
    const TYPE: u16;

    /// The raw message to send to a peer with connection `features`.
    fn to_message(&self, features: u64) -> Message;

    /// Decodes a received message of type [`TypedMessage::TYPE`].
    fn from_message(msg: &Message) -> Result<Self, MessageError>;
}

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageError {
    /// The message is another type than the one decoded.
    WrongType {
        /// The type number of what was being decoded.
        expected: u16,
        /// The message's type number.
        got: u16,
    },
    /// An encoding version this implementation does not read.
    UnsupportedVersion {
        /// The message's type number.
        msg_type: u16,
        /// Its header's encoding version.
        version: u16,
    },
    /// The payload does not decode.
    Decode(DecodeError),
}

impl From<DecodeError> for MessageError {
    fn from(e: DecodeError) -> Self {
        MessageError::Decode(e)
    }
}

impl std::fmt::Display for MessageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MessageError::WrongType { expected, got } => {
                write!(f, "message type {got}, expected {expected}")
            }
            MessageError::UnsupportedVersion { msg_type, version } => {
                write!(
                    f,
                    "message type {msg_type} version {version} is not supported"
                )
            }
            MessageError::Decode(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for MessageError {}

pub(crate) fn check_type(msg: &Message, expected: u16) -> Result<(), MessageError> {
    if msg.msg_type != expected {
        return Err(MessageError::WrongType {
            expected,
            got: msg.msg_type,
        });
    }
    Ok(())
}
