//! Auth methods for tests: auth none on both sides, and a method with a
//! pre-shared key, so that secure mode and a keyed AUTH_SIGNATURE run
//! without a key server.

use std::sync::Arc;

use bytes::Bytes;
use msgr_auth::{
    AuthError, AuthOutcome, AuthPeer, AuthProvider, AuthRequest, ClientAuth, ConMode, NoneClient,
    NoneServer, ServerAuth, ServerStep, SessionKey,
};
use msgr_encoding::EntityName;

/// Auth none, both sides.
pub struct NoneAuth;

impl AuthProvider for NoneAuth {
    fn client(&self, me: &EntityName) -> Box<dyn ClientAuth> {
        Box::new(NoneClient {
            name: me.to_string(),
            global_id: 0,
            modes: vec![ConMode::CRC],
        })
    }
    fn server(&self) -> Box<dyn ServerAuth> {
        Box::new(NoneServer::default())
    }
}

/// A test-only method with a pre-shared key, so that secure mode and a
/// keyed AUTH_SIGNATURE can be exercised before cephx: both sides derive
/// the session key and connection secret from the shared bytes.
pub struct SharedKeyAuth {
    pub key: Vec<u8>,
    pub modes: Vec<ConMode>,
}

struct SharedKeyClient {
    key: Vec<u8>,
    modes: Vec<ConMode>,
}

pub const SHARED_KEY_METHOD: u32 = 0x7e57;

fn outcome(key: &[u8], mode: ConMode) -> AuthOutcome {
    let secret: Vec<u8> = (0..64u8)
        .map(|i| key[i as usize % key.len()] ^ i.wrapping_mul(7))
        .collect();
    AuthOutcome {
        global_id: 42,
        con_mode: mode,
        session_key: SessionKey::new(key.to_vec()),
        connection_secret: msgr_auth::Secret::new(secret),
        peer: None,
    }
}

impl ClientAuth for SharedKeyClient {
    fn request(&mut self, _: &AuthPeer, _: &[u32]) -> Result<AuthRequest, AuthError> {
        Ok(AuthRequest {
            method: SHARED_KEY_METHOD,
            preferred_modes: self.modes.clone(),
            payload: Bytes::from_static(b"hello"),
        })
    }
    fn reply_more(&mut self, payload: &[u8]) -> Result<Bytes, AuthError> {
        // One extra round, to exercise AUTH_REPLY_MORE / AUTH_REQUEST_MORE.
        Ok(Bytes::copy_from_slice(payload))
    }
    fn done(&mut self, _: u64, mode: ConMode, _: &[u8]) -> Result<AuthOutcome, AuthError> {
        Ok(outcome(&self.key, mode))
    }
    fn bad_method(&mut self, _: u32, _: i32, _: &[u32], _: &[ConMode]) -> Result<(), AuthError> {
        Err(AuthError::NoMethodLeft)
    }
}

struct SharedKeyServer {
    key: Vec<u8>,
    modes: Vec<ConMode>,
}

impl ServerAuth for SharedKeyServer {
    fn allowed_methods(&self, _: &AuthPeer) -> Vec<u32> {
        vec![SHARED_KEY_METHOD]
    }
    fn allowed_modes(&self, _: &AuthPeer, _: u32) -> Vec<ConMode> {
        self.modes.clone()
    }
    fn handle(
        &mut self,
        _: &AuthPeer,
        method: u32,
        mode: ConMode,
        more: bool,
        _: &[u8],
    ) -> Result<ServerStep, AuthError> {
        if method != SHARED_KEY_METHOD {
            return Err(AuthError::MethodNotSupported { method });
        }
        if !more {
            return Ok(ServerStep::More(Bytes::from_static(b"challenge")));
        }
        Ok(ServerStep::Done {
            payload: Bytes::new(),
            outcome: outcome(&self.key, mode),
        })
    }
}

impl AuthProvider for SharedKeyAuth {
    fn client(&self, _: &EntityName) -> Box<dyn ClientAuth> {
        Box::new(SharedKeyClient {
            key: self.key.clone(),
            modes: self.modes.clone(),
        })
    }
    fn server(&self) -> Box<dyn ServerAuth> {
        Box::new(SharedKeyServer {
            key: self.key.clone(),
            modes: self.modes.clone(),
        })
    }
}

pub fn none() -> Arc<dyn AuthProvider> {
    Arc::new(NoneAuth)
}

pub fn shared_key(modes: &[ConMode]) -> Arc<dyn AuthProvider> {
    Arc::new(SharedKeyAuth {
        key: b"0123456789abcdef".to_vec(),
        modes: modes.to_vec(),
    })
}
