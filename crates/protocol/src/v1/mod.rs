//! msgr1 (Ceph's ProtocolV1), beside msgr2: its framing of a socket
//! ([`link`]), its connector and acceptor handshakes ([`handshake`]), and
//! the connection's msgr1 steps (`conn.rs`: the acceptor's answers to the
//! messenger's decision, an open session's items). Sessions, policies,
//! faults and the registry's decisions are shared with msgr2 at the
//! crate's root.

mod conn;
pub(crate) mod handshake;
pub(crate) mod link;
