//! msgr2 (Ceph's ProtocolV2): its framing of a socket ([`link`]), its
//! connector and acceptor handshakes (`connect.rs`, `accept.rs`, with
//! what both use in `handshake.rs`), and the connection's msgr2 steps
//! (`conn.rs`: the acceptor's answers to the messenger's decision, READY's
//! frames). Sessions, policies, faults and the registry's decisions are
//! shared with msgr1 at the crate's root.

pub(crate) mod accept;
mod conn;
pub(crate) mod connect;
mod handshake;
pub(crate) mod link;

pub use link::MAX_PRE_AUTH;
