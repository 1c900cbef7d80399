//! What an auth exchange is, whatever the method: the client and server
//! authenticators the handshake drives, what they exchange, and what a
//! finished exchange leaves behind.

use bytes::Bytes;
use msgr_encoding::{EntityName, EntityType};

use crate::modes::pick_mode;
use crate::{AuthError, ConMode, Identity, Secret, SessionKey};

/// The wall clock, as an input: auth state machines ask it for the time
/// (ticket lifetimes), so tests can set it.
pub type Clock = std::sync::Arc<dyn Fn() -> msgr_encoding::UTime + Send + Sync>;

/// The system's wall clock.
pub fn system_clock() -> Clock {
    std::sync::Arc::new(|| {
        msgr_encoding::UTime::from_duration(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        )
    })
}

/// `CEPH_AUTH_*` method numbers (src/include/ceph_fs.h).
pub mod method {
    /// `CEPH_AUTH_NONE`: no authentication; the peer is taken at its word.
    pub const NONE: u32 = 1;
    /// `CEPH_AUTH_CEPHX`: Ceph's ticket-based authentication.
    pub const CEPHX: u32 = 2;
}

/// What a successful auth exchange leaves behind.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthOutcome {
    /// Assigned by the monitor (or 0); the client's `global_id`.
    pub global_id: u64,
    /// The connection mode AUTH_DONE announced.
    pub con_mode: ConMode,
    /// Keys the AUTH_SIGNATURE HMAC; empty for auth none (the signature is
    /// then 32 zero bytes).
    pub session_key: SessionKey,
    /// Secure mode's key material (msgr-frames' SecureKeys); empty in crc
    /// mode.
    pub connection_secret: Secret,
    /// On a server: who the client authenticated as (every server method
    /// says). On a client: `None`, the server being known by the service
    /// its ticket was for.
    pub peer: Option<Identity>,
}

impl std::fmt::Debug for AuthOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthOutcome")
            .field("global_id", &self.global_id)
            .field("con_mode", &self.con_mode)
            .field("session_key", &self.session_key)
            .field("connection_secret_len", &self.connection_secret.len())
            .field("peer", &self.peer)
            .finish()
    }
}

/// Who the connection is with, as far as the handshake knows when auth
/// starts (after HELLO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPeer {
    /// From the peer's HELLO.
    pub entity_type: EntityType,
}

/// The first AUTH_REQUEST of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// The method (`CEPH_AUTH_*`, [`method`]).
    pub method: u32,
    /// Connection modes in order of preference.
    pub preferred_modes: Vec<ConMode>,
    /// The method's first request.
    pub payload: Bytes,
}

/// The connector's side of one connection's auth exchange.
pub trait ClientAuth: Send {
    /// The first request; `allowed` restricts the methods after an
    /// AUTH_BAD_METHOD (empty: any).
    fn request(
        &mut self,
        peer: &AuthPeer,
        allowed_methods: &[u32],
    ) -> Result<AuthRequest, AuthError>;

    /// AUTH_REPLY_MORE's payload in, AUTH_REQUEST_MORE's payload out.
    fn reply_more(&mut self, payload: &[u8]) -> Result<Bytes, AuthError>;

    /// AUTH_DONE in; the keys out.
    fn done(
        &mut self,
        global_id: u64,
        con_mode: ConMode,
        payload: &[u8],
    ) -> Result<AuthOutcome, AuthError>;

    /// AUTH_BAD_METHOD: whether to try again (the handshake then calls
    /// `request` with the allowed methods) or give up.
    fn bad_method(
        &mut self,
        method: u32,
        result: i32,
        allowed_methods: &[u32],
        allowed_modes: &[ConMode],
    ) -> Result<(), AuthError>;
}

/// What the server answers to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStep {
    /// Another round: AUTH_REPLY_MORE with this payload.
    More(Bytes),
    /// Authenticated: AUTH_DONE with this payload.
    Done {
        /// AUTH_DONE's payload (for cephx, the tickets or the authorizer reply).
        payload: Bytes,
        /// Who the client is and the keys the connection uses from here on.
        outcome: AuthOutcome,
    },
}

/// The acceptor's side of one connection's auth exchange.
pub trait ServerAuth: Send {
    /// Methods this server accepts from `peer`, best first.
    fn allowed_methods(&self, peer: &AuthPeer) -> Vec<u32>;

    /// Connection modes this server allows for `peer` and `method`, best
    /// first.
    fn allowed_modes(&self, peer: &AuthPeer, method: u32) -> Vec<ConMode>;

    /// The mode for the first request of `method`, whose payload is
    /// `payload` (a server playing several roles tells them apart by it):
    /// ours, in our order, that the client listed (`pick_con_mode`); `None`
    /// refuses the request.
    fn pick_mode(
        &self,
        peer: &AuthPeer,
        method: u32,
        client_modes: &[ConMode],
        _payload: &[u8],
    ) -> Option<ConMode> {
        pick_mode(&self.allowed_modes(peer, method), client_modes)
    }

    /// Handles AUTH_REQUEST (`more` false) or AUTH_REQUEST_MORE (`more`
    /// true). An error becomes AUTH_BAD_METHOD with its errno.
    fn handle(
        &mut self,
        peer: &AuthPeer,
        method: u32,
        con_mode: ConMode,
        more: bool,
        payload: &[u8],
    ) -> Result<ServerStep, AuthError>;
}

/// Makes one authenticator per connection (both sides of a messenger).
pub trait AuthProvider: Send + Sync {
    /// A fresh client side for a connection of ours, as `me`.
    fn client(&self, me: &EntityName) -> Box<dyn ClientAuth>;
    /// A fresh server side for a connection we accepted.
    fn server(&self) -> Box<dyn ServerAuth>;
}
