//! cephx as a messenger's [`AuthProvider`]: the client side for the
//! connections it makes, the server side for those it accepts.

use std::sync::Arc;

use bytes::Bytes;
use msgr_encoding::EntityName;

use super::client::CephxClient;
use super::server::CephxServer;
use crate::{
    AuthError, AuthOutcome, AuthPeer, AuthProvider, AuthRequest, ClientAuth, ConMode, ServerAuth,
    ServerStep,
};

/// Either side may be absent: a pure client refuses incoming auth, a pure
/// server has nothing to present.
#[derive(Clone, Default)]
pub struct CephxProvider {
    /// How we authenticate to others; None refuses to connect with cephx.
    pub client: Option<Arc<CephxClient>>,
    /// How we authenticate others; None refuses incoming cephx.
    pub server: Option<Arc<CephxServer>>,
}

impl AuthProvider for CephxProvider {
    fn client(&self, _me: &EntityName) -> Box<dyn ClientAuth> {
        match &self.client {
            Some(c) => Box::new(c.conn_auth()),
            None => Box::new(Refuse),
        }
    }

    fn server(&self) -> Box<dyn ServerAuth> {
        match &self.server {
            Some(s) => Box::new(s.conn_auth()),
            None => Box::new(Refuse),
        }
    }
}

/// The side a provider does not have.
struct Refuse;

impl ClientAuth for Refuse {
    fn request(&mut self, _: &AuthPeer, _: &[u32]) -> Result<AuthRequest, AuthError> {
        Err(AuthError::NoKey(
            "cephx credentials (no key for this entity in the keyring)".into(),
        ))
    }
    fn reply_more(&mut self, _: &[u8]) -> Result<Bytes, AuthError> {
        Err(AuthError::NoMethodLeft)
    }
    fn done(&mut self, _: u64, _: ConMode, _: &[u8]) -> Result<AuthOutcome, AuthError> {
        Err(AuthError::NoMethodLeft)
    }
    fn bad_method(&mut self, _: u32, _: i32, _: &[u32], _: &[ConMode]) -> Result<(), AuthError> {
        Err(AuthError::NoMethodLeft)
    }
}

impl ServerAuth for Refuse {
    fn allowed_methods(&self, _: &AuthPeer) -> Vec<u32> {
        Vec::new()
    }
    fn allowed_modes(&self, _: &AuthPeer, _: u32) -> Vec<ConMode> {
        Vec::new()
    }
    fn handle(
        &mut self,
        _: &AuthPeer,
        m: u32,
        _: ConMode,
        _: bool,
        _: &[u8],
    ) -> Result<ServerStep, AuthError> {
        Err(AuthError::MethodNotSupported { method: m })
    }
}
