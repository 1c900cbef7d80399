//! The pieces of the `msgr` tool, as a library so that tests can drive
//! them: capture analysis (`msgr decode`) and JSON output.
#![forbid(unsafe_code)]

pub mod decode_cmd;
pub mod describe;
pub mod inspect;
pub mod json;
