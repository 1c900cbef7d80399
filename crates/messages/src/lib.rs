//! Ceph message types carried in msgr2 MESSAGE frames. The messenger moves
//! a header and front / middle / data segments; this crate gives them
//! meaning.
#![forbid(unsafe_code)]

mod types;

pub use types::{message_type_name, MESSAGE_TYPES};
