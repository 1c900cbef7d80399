//! msgr2 frames (and msgr1's wire, in [`v1`]), sans-IO: the banner, the 32-byte preamble, segments and
//! epilogues in the four framings (msgr2.0 / msgr2.1 × crc / secure), on-wire
//! compression, and the typed payload of every control frame.
//!
//! Reference: Ceph's doc/dev/msgr2.rst (the msgr2 protocol document) and
//! src/msg/async/frames_v2.{h,cc}, crypto_onwire.cc, compression_onwire.cc.
//!
//! Nothing here does I/O or reads a clock. [`FrameEncoder`] turns segments
//! into bytes queued in a [`WireQueue`]; [`FrameDecoder`] turns bytes into
//! frames in two steps (head, then whole frame) so a runtime reads exactly
//! what a frame needs; [`FrameReader`] is that loop over a caller's buffer.
//! Every error on input is a typed [`FrameError`] that says who was at fault.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The identity "cipher" of `fuzz-cipher` lets the fuzzer craft secure-mode
// frames; it must never reach anything but a cargo-fuzz build.
#[cfg(all(feature = "fuzz-cipher", not(fuzzing)))]
compile_error!("the fuzz-cipher feature is for cargo fuzz builds (cfg fuzzing) only");

pub mod banner;
pub mod compression;
pub mod control;
pub mod crc;
pub mod crypto;
mod decoder;
mod encoder;
mod error;
pub mod layout;
pub mod message;
pub mod preamble;
mod reader;
mod tag;
pub mod v1;
mod wire_queue;

pub use banner::{Banner, Negotiated};
pub use control::ControlFrame;
pub use decoder::{FrameDecoder, FrameHead, FrameLimits, Received};
pub use encoder::{FrameEncoder, Seg};
pub use error::{Fault, FrameError};
pub use layout::WireFormat;
pub use message::{MessageFrame, MsgHeader2};
pub use preamble::Preamble;
pub use reader::{banner_len, read_banner, FrameReader, RawFrame};
pub use tag::Tag;
pub use wire_queue::{holds_spare, let_go_if_small, WireQueue};
