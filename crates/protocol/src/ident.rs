//! An accepted peer's request for a session, either protocol's: what the
//! messenger decides on against the connection it may already have with
//! the same peer ([`crate::registry`]).

use bytes::Bytes;
use msgr_encoding::{EntityAddr, EntityAddrvec};
use msgr_frames::control::{ClientIdent, SessionReconnect};
use msgr_frames::v1::Connect;

/// An ident for the messenger to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentRequest {
    /// msgr2's CLIENT_IDENT: a new session.
    New(ClientIdent),
    /// msgr2's SESSION_RECONNECT: an existing session, resumed.
    Reconnect(SessionReconnect),
    /// An msgr1 CONNECT.
    V1(ConnectRequest),
}

/// An msgr1 CONNECT the acceptor's checks let through, for the messenger
/// to decide on, with what the acceptor learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    /// The connector's address as it claimed it (a blank IP filled in
    /// from the socket).
    pub addr: EntityAddr,
    /// The CONNECT as the connector sent it (features, host type, global_seq,
    /// connect_seq, flags, authorizer).
    pub connect: Connect,
    /// The authorizer reply that goes with the final CONNECT_REPLY.
    pub authorizer_reply: Bytes,
}

impl ConnectRequest {
    /// The connector's address as an address vector, the key the registry
    /// finds its session by.
    pub fn addrs(&self) -> EntityAddrvec {
        EntityAddrvec::single(self.addr)
    }
}
