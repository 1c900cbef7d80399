//! Ceph's two wire protocols, msgr2 and msgr1, sans-IO.
//!
//! [`Conn`] is one connection to a peer: its handshakes (msgr2's banner,
//! HELLO, auth, AUTH_SIGNATURE, compression, idents and reconnects; or
//! msgr1's banner, CONNECT and its replies), the session that numbers,
//! acknowledges and replays messages, and Ceph's fault handling per
//! [`Policy`]. The [`decide`] functions are the acceptor's rules for an
//! ident that meets an existing connection (races, resets, retries).
//! Nothing here does I/O or reads a clock: drivers feed bytes and time in
//! and take bytes and [`Event`]s out.
//!
//! Layout: what is msgr2's alone lives in `v2/` (its framing of a socket,
//! its two handshakes, its READY frames), what is msgr1's alone in `v1/`;
//! the connection, its session, policies, decisions and errors are shared
//! and live at the root. A connection picks its protocol once, from its
//! target's or listener's address ([`Protocol`]); its socket's
//! `link` and handshake phase carry that choice, and the
//! root dispatches to `v1/` or `v2/` on them.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod conn;
mod cx;
pub mod decide;
mod endpoint;
mod error;
mod event;
pub mod features;
mod handshake;
mod ident;
mod input;
// The test interceptor's breakpoints and actions are public only with the
// `interceptor` feature; without it the hooks stay inert.
#[cfg(feature = "interceptor")]
pub mod intercept;
#[cfg(not(feature = "interceptor"))]
#[allow(dead_code)]
mod intercept;
mod link;
mod message;
mod peer;
pub mod policy;
pub mod registry;
mod seq;
mod session;
#[cfg(feature = "testing")]
pub mod testing;
mod v1;
mod v2;

pub use config::{
    later, CompressionConfig, Config, GlobalSeq, Policies, PolicySet, QueueLimits, Timeouts,
};
pub use conn::{Conn, ConnState, ConnStats, FailedPaths, HostsHeard, PathProgress, Reuse, Side};
pub use cx::MAX_AUTH_ROUNDS;
pub use decide::{Decision, ExistingInfo, Owner, Protocol};
pub use endpoint::{ConnId, Endpoint, Resolved};
pub use error::{Claim, ProtocolError, Wire};
pub use event::Event;
pub use ident::{ConnectRequest, IdentRequest};
pub use link::LinkId;
pub use message::Message;
pub use peer::{target_addr, MyAddrs, PeerInfo};
pub use policy::{Policy, PolicyName, ThrottleLimits};
pub use session::Session;
pub use v2::MAX_PRE_AUTH;
