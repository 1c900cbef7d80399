//! Ceph's binary encoding, as written by `encode()` / `decode()` in Ceph's
//! src/include/encoding.h and the types of src/msg/msg_types.h.
//!
//! Decoding reads untrusted bytes through [`Decoder`], a bounded cursor:
//! every read is checked, every length is capped by what the input can hold
//! before anything is allocated, and every failure is a typed
//! [`DecodeError`]. Nothing here panics on input, and nothing does I/O.
//!
//! Types declare their encoding with [`encoding!`] (plain or versioned
//! structs) or by implementing [`Encode`] / [`Decode`] by hand.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use bytes;

mod auth_name;
mod codec;
pub mod crc32c;
mod decoder;
pub mod entity;
mod error;
pub mod hex;
mod macros;
pub mod time;
mod versioned;

pub use auth_name::AuthName;
pub use codec::{Decode, Encode};
pub use decoder::Decoder;
pub use entity::{EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType};
pub use error::{DecodeError, DecodeResult};
pub use time::{UTime, Uuid};
pub use versioned::{decode_versioned, encode_versioned, ENVELOPE_HEADER_LEN};
