//! Several auth methods at once, as Ceph's AuthRegistry offers them
//! (`auth_client_required = cephx, none`; `auth_service_required`):
//!
//! - a client starts with its first method the server allows, and on
//!   AUTH_BAD_METHOD moves on to the next of its methods the server lists
//!   (MonConnection::handle_auth_bad_method);
//! - a server accepts any of its methods, each with its own modes.

use bytes::Bytes;
use msgr_encoding::EntityName;

use crate::{
    AuthError, AuthOutcome, AuthPeer, AuthProvider, AuthRequest, ClientAuth, ConMode, ServerAuth,
    ServerStep,
};

/// Providers by method, best first.
pub struct MultiProvider {
    /// Each method (`CEPH_AUTH_*`) with its provider, the client's first choice first.
    pub providers: Vec<(u32, std::sync::Arc<dyn AuthProvider>)>,
}

impl AuthProvider for MultiProvider {
    fn client(&self, me: &EntityName) -> Box<dyn ClientAuth> {
        Box::new(FallbackClient {
            auths: self
                .providers
                .iter()
                .map(|(m, p)| (*m, p.client(me)))
                .collect(),
            current: 0,
        })
    }

    fn server(&self) -> Box<dyn ServerAuth> {
        Box::new(MultiServer {
            auths: self
                .providers
                .iter()
                .map(|(m, p)| (*m, p.server()))
                .collect(),
        })
    }
}

/// A client that falls back through its methods on AUTH_BAD_METHOD.
pub struct FallbackClient {
    auths: Vec<(u32, Box<dyn ClientAuth>)>,
    current: usize,
}

impl FallbackClient {
    fn cur(&mut self) -> Result<&mut Box<dyn ClientAuth>, AuthError> {
        self.auths
            .get_mut(self.current)
            .map(|(_, a)| a)
            .ok_or(AuthError::NoMethodLeft)
    }
}

impl ClientAuth for FallbackClient {
    fn request(&mut self, peer: &AuthPeer, allowed: &[u32]) -> Result<AuthRequest, AuthError> {
        let ok = |m: u32| allowed.is_empty() || allowed.contains(&m);
        self.current = self
            .auths
            .iter()
            .enumerate()
            .skip(self.current)
            .find(|(_, (m, _))| ok(*m))
            .map(|(i, _)| i)
            .ok_or(AuthError::NoMethodLeft)?;
        self.cur()?.request(peer, allowed)
    }

    fn reply_more(&mut self, payload: &[u8]) -> Result<Bytes, AuthError> {
        self.cur()?.reply_more(payload)
    }

    fn done(
        &mut self,
        global_id: u64,
        con_mode: ConMode,
        payload: &[u8],
    ) -> Result<AuthOutcome, AuthError> {
        self.cur()?.done(global_id, con_mode, payload)
    }

    fn bad_method(
        &mut self,
        method: u32,
        result: i32,
        allowed_methods: &[u32],
        allowed_modes: &[ConMode],
    ) -> Result<(), AuthError> {
        // The first of our later methods the server allows (after the
        // refused one: an index is below the length, `+ 1` never saturates).
        let after = self
            .auths
            .iter()
            .position(|(m, _)| *m == method)
            .map_or(self.current, |i| i.saturating_add(1));
        let next = self
            .auths
            .iter()
            .enumerate()
            .skip(after)
            .find(|(_, (m, _))| allowed_methods.contains(m))
            .map(|(i, _)| i);
        match next {
            Some(i) => {
                self.current = i;
                Ok(())
            }
            // Nothing else to try: the current method's own verdict.
            None => self
                .cur()?
                .bad_method(method, result, allowed_methods, allowed_modes),
        }
    }
}

/// A server that accepts any of several methods.
pub struct MultiServer {
    auths: Vec<(u32, Box<dyn ServerAuth>)>,
}

impl MultiServer {
    fn by_method(&mut self, m: u32) -> Option<&mut Box<dyn ServerAuth>> {
        self.auths.iter_mut().find(|(x, _)| *x == m).map(|(_, a)| a)
    }
}

impl ServerAuth for MultiServer {
    fn allowed_methods(&self, _peer: &AuthPeer) -> Vec<u32> {
        self.auths.iter().map(|(m, _)| *m).collect()
    }

    fn allowed_modes(&self, peer: &AuthPeer, method: u32) -> Vec<ConMode> {
        self.auths
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, a)| a.allowed_modes(peer, method))
            .unwrap_or_default()
    }

    fn pick_mode(
        &self,
        peer: &AuthPeer,
        method: u32,
        client_modes: &[ConMode],
        payload: &[u8],
    ) -> Option<ConMode> {
        self.auths
            .iter()
            .find(|(m, _)| *m == method)
            .and_then(|(_, a)| a.pick_mode(peer, method, client_modes, payload))
    }

    fn handle(
        &mut self,
        peer: &AuthPeer,
        method: u32,
        con_mode: ConMode,
        more: bool,
        payload: &[u8],
    ) -> Result<ServerStep, AuthError> {
        match self.by_method(method) {
            Some(a) => a.handle(peer, method, con_mode, more, payload),
            None => Err(AuthError::MethodNotSupported { method }),
        }
    }
}
