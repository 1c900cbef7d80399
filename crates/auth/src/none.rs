//! Auth `none` (CEPH_AUTH_NONE): no credentials, no keys. The client's
//! request payload is an auth mode byte, its entity name and global id:
//! to a monitor `AUTH_MODE_MON` (10), as MonConnection::get_auth_request
//! writes it; to a service `AUTH_MODE_AUTHORIZER` (1), the
//! AuthNoneAuthorizer (src/auth/none/AuthNoneProtocol.h). The server
//! accepts anyone and answers AUTH_DONE at once.

use bytes::Bytes;
use msgr_encoding::{AuthName, Decode, Decoder, Encode};

use crate::{
    method, AuthError, AuthOutcome, AuthPeer, AuthRequest, Caps, ClientAuth, ConMode, Identity,
    ServerAuth, ServerStep,
};

/// Auth none, client side.
pub struct NoneClient {
    /// The cephx-style name (`client.admin`); auth none sends type and id.
    pub name: String,
    /// The global id to claim (auth none proves nothing: the server takes it).
    pub global_id: u64,
    /// The connection modes to offer, best first.
    pub modes: Vec<ConMode>,
}

impl ClientAuth for NoneClient {
    fn request(&mut self, peer: &AuthPeer, allowed: &[u32]) -> Result<AuthRequest, AuthError> {
        if !allowed.is_empty() && !allowed.contains(&method::NONE) {
            return Err(AuthError::NoMethodLeft);
        }
        let mode = match peer.entity_type {
            msgr_encoding::EntityType::MON => 10,
            _ => 1,
        };
        Ok(AuthRequest {
            method: method::NONE,
            // Auth none has no keys: crc is the only mode it can run.
            preferred_modes: self
                .modes
                .iter()
                .copied()
                .filter(|m| *m == ConMode::CRC)
                .collect(),
            payload: encode_none_request(mode, &self.name, self.global_id),
        })
    }

    fn reply_more(&mut self, _payload: &[u8]) -> Result<Bytes, AuthError> {
        Err(AuthError::Malformed("auth none has a single round".into()))
    }

    fn done(
        &mut self,
        global_id: u64,
        con_mode: ConMode,
        _payload: &[u8],
    ) -> Result<AuthOutcome, AuthError> {
        if con_mode == ConMode::SECURE {
            // Secure mode needs a connection secret, which auth none cannot make.
            return Err(AuthError::NoCommonMode);
        }
        Ok(AuthOutcome {
            global_id,
            con_mode,
            ..Default::default()
        })
    }

    fn bad_method(
        &mut self,
        _: u32,
        _: i32,
        allowed: &[u32],
        _: &[ConMode],
    ) -> Result<(), AuthError> {
        if allowed.contains(&method::NONE) {
            Ok(())
        } else {
            Err(AuthError::NoMethodLeft)
        }
    }
}

/// The auth mode byte, then `EntityName` of src/common/entity_name.h (le32
/// type, string id), then the global id.
fn encode_none_request(mode: u8, name: &str, global_id: u64) -> Bytes {
    let (ty, id) = name.split_once('.').unwrap_or(("client", name));
    let ty = msgr_encoding::EntityType::from_name(ty).map_or(0, |t| t.0 as u32);
    let mut out = Vec::new();
    mode.encode(&mut out);
    ty.encode(&mut out);
    id.encode(&mut out);
    global_id.encode(&mut out);
    Bytes::from(out)
}

/// Auth none, server side: accepts anyone, in crc mode.
pub struct NoneServer {
    /// Modes allowed, best first (secure is impossible without keys).
    pub modes: Vec<ConMode>,
    /// The global id handed out.
    pub next_global_id: u64,
}

impl Default for NoneServer {
    fn default() -> Self {
        NoneServer {
            modes: vec![ConMode::CRC],
            next_global_id: 0,
        }
    }
}

impl ServerAuth for NoneServer {
    fn allowed_methods(&self, _peer: &AuthPeer) -> Vec<u32> {
        vec![method::NONE]
    }

    fn allowed_modes(&self, _peer: &AuthPeer, method: u32) -> Vec<ConMode> {
        if method == method::NONE {
            self.modes
                .iter()
                .copied()
                .filter(|m| *m != ConMode::SECURE)
                .collect()
        } else {
            Vec::new()
        }
    }

    fn handle(
        &mut self,
        peer: &AuthPeer,
        method: u32,
        con_mode: ConMode,
        _more: bool,
        payload: &[u8],
    ) -> Result<ServerStep, AuthError> {
        if method != method::NONE {
            return Err(AuthError::MethodNotSupported { method });
        }
        // The name and global id the client says it has (AuthNoneAuthorizer
        // carries them); anything undecodable is ignored, as Ceph does, and
        // the peer is then its HELLO type with no id.
        let claimed = decode_none_request(payload).ok();
        let (name, global_id) = claimed.unwrap_or_else(|| (AuthName::new(peer.entity_type, ""), 0));
        let global_id = if global_id != 0 {
            global_id
        } else {
            self.next_global_id
        };
        Ok(ServerStep::Done {
            payload: Bytes::new(),
            outcome: AuthOutcome {
                global_id,
                con_mode,
                // Auth none proves nothing: the identity is what the peer
                // claims, with every cap (AuthNoneAuthorizeHandler sets
                // allow_all).
                peer: Some(Identity {
                    name,
                    global_id,
                    caps: Caps {
                        allow_all: true,
                        caps: Bytes::new(),
                    },
                    proven: false,
                }),
                ..Default::default()
            },
        })
    }
}

/// The auth mode byte, the entity name and the global id of a none request.
fn decode_none_request(payload: &[u8]) -> Result<(AuthName, u64), msgr_encoding::DecodeError> {
    let mut d = Decoder::new(payload);
    let _mode = u8::decode(&mut d)?;
    let name = AuthName::decode(&mut d)?;
    let global_id = u64::decode(&mut d)?;
    Ok((name, global_id))
}

/// Auth none for both sides of a messenger.
#[derive(Debug, Clone, Default)]
pub struct NoneProvider;

impl crate::AuthProvider for NoneProvider {
    fn client(&self, me: &msgr_encoding::EntityName) -> Box<dyn ClientAuth> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_exchange() {
        let peer = AuthPeer {
            entity_type: msgr_encoding::EntityType::OSD,
        };
        let mut c = NoneClient {
            name: "client.admin".into(),
            global_id: 4123,
            modes: vec![ConMode::CRC],
        };
        let mut s = NoneServer::default();
        let req = c.request(&peer, &[]).unwrap();
        assert_eq!(req.method, method::NONE);
        let mode = s
            .pick_mode(&peer, req.method, &req.preferred_modes, &req.payload)
            .unwrap();
        let ServerStep::Done { payload, outcome } = s
            .handle(&peer, req.method, mode, false, &req.payload)
            .unwrap()
        else {
            panic!("auth none is one round");
        };
        assert_eq!(outcome.global_id, 4123);
        let who = outcome.peer.clone().unwrap();
        assert_eq!(who.name.to_string(), "client.admin");
        assert!(!who.proven && who.caps.allow_all);
        let got = c.done(outcome.global_id, mode, &payload).unwrap();
        assert!(got.session_key.is_empty());
        assert_eq!(
            s.pick_mode(&peer, method::NONE, &[ConMode::SECURE], &[]),
            None
        );
        assert_eq!(
            s.handle(&peer, 2, mode, false, &[]),
            Err(AuthError::MethodNotSupported { method: 2 })
        );
    }
}
