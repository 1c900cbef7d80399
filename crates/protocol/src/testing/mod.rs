//! What tests drive connections with (cargo feature `testing`): one pair
//! harness for every test, fuzzer and benchmark that runs `Conn`s against
//! each other, as quinn-proto keeps one `Pair`.
//!
//! - [`Net`]: nodes, each an [`crate::Endpoint`], joined by in-memory
//!   sockets, in virtual time, with a log of what each connection
//!   dispatched.
//! - [`Sim`]: a seeded scheduler over a `Net` (delays, split writes,
//!   socket cuts, ident resolution in the sharded runtime's hops).
//! - [`auth`]: auth none and a pre-shared-key method for secure mode.
//!
//! Test code: it unwraps and indexes freely, and panics on what a test
//! should not see.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic,
    clippy::large_enum_variant,
    clippy::should_implement_trait,
    missing_docs
)]

pub mod auth;
mod net;
mod sim;

pub use auth::{none, shared_key, NoneAuth, SharedKeyAuth, SHARED_KEY_METHOD};
pub use net::{conn_id, osd, policies, ConnRef, Ev, Net, Node};
pub use sim::{IdentCounts, Sim, SimRng};
