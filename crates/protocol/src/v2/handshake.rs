//! What msgr2's two handshakes (`connect.rs`, `accept.rs`) share: what each
//! phase expects, taking control frames, secure mode, compression and
//! AUTH_SIGNATURE. Each phase consumes itself on the
//! next input and returns the next phase (or the handshake's end); an input
//! the phase does not accept is a typed error.
//!
//! Connector (msgr2 document, client state diagram; ProtocolV2.cc
//! BANNER_CONNECTING .. SESSION_RECONNECTING):
//! `Banner → Hello → Auth ⟲ (REPLY_MORE, BAD_METHOD) → Signature →
//! [Compression] → Ident | Reconnect ⟲ (RETRY, RETRY_GLOBAL, RESET) → READY`,
//! or WAIT.
//! Acceptor (server state diagram; START_ACCEPT .. SESSION_ACCEPTING):
//! `Banner → Hello → Auth ⟲ (MORE, BAD_METHOD) → Signature → [Compression]
//! → Session`, which ends in an ident for the messenger to decide on.

pub(super) use bytes::Bytes;
pub(super) use msgr_auth::{
    AuthError, AuthPeer, ClientAuth, ConMode, Identity, ServerAuth, ServerStep,
};
pub(super) use msgr_encoding::{EntityAddr, EntityName};
pub(super) use msgr_frames::compression::{Algorithm, TxCompression};
pub(super) use msgr_frames::control::*;
pub(super) use msgr_frames::crypto::{Role, SecureKeys};
pub(super) use msgr_frames::{ControlFrame, Tag};

pub(super) use super::link::Input;
pub(super) use crate::cx::{auth_round, Cx};
pub(super) use crate::error::{Claim, ProtocolError, Wire};
pub(super) use crate::event::Event;
pub(super) use crate::features;
pub(super) use crate::link::Link;
pub(super) use crate::peer::PeerInfo;

/// What each phase accepts (for errors that say what was expected).
pub(super) mod expect {
    use super::Tag;
    use crate::error::Wire::{self, Banner, Frame};
    pub const BANNER: &[Wire] = &[Banner];
    pub const HELLO: &[Wire] = &[Frame(Tag::HELLO)];
    pub const AUTH_REPLY: &[Wire] = &[
        Frame(Tag::AUTH_REPLY_MORE),
        Frame(Tag::AUTH_DONE),
        Frame(Tag::AUTH_BAD_METHOD),
    ];
    pub const AUTH_REQUEST: &[Wire] = &[Frame(Tag::AUTH_REQUEST)];
    pub const AUTH_REQUEST_MORE: &[Wire] = &[Frame(Tag::AUTH_REQUEST_MORE)];
    pub const AUTH_SIGNATURE: &[Wire] = &[Frame(Tag::AUTH_SIGNATURE)];
    pub const COMPRESSION_REQUEST: &[Wire] = &[Frame(Tag::COMPRESSION_REQUEST)];
    pub const COMPRESSION_DONE: &[Wire] = &[Frame(Tag::COMPRESSION_DONE)];
    pub const IDENT_REPLY: &[Wire] = &[
        Frame(Tag::SERVER_IDENT),
        Frame(Tag::IDENT_MISSING_FEATURES),
        Frame(Tag::WAIT),
    ];
    pub const RECONNECT_REPLY: &[Wire] = &[
        Frame(Tag::SESSION_RECONNECT_OK),
        Frame(Tag::SESSION_RESET),
        Frame(Tag::SESSION_RETRY),
        Frame(Tag::SESSION_RETRY_GLOBAL),
        Frame(Tag::WAIT),
    ];
    pub const IDENT: &[Wire] = &[Frame(Tag::CLIENT_IDENT), Frame(Tag::SESSION_RECONNECT)];
}

/// `got` where `state` accepts only `expected`.
pub(super) fn unexpected(
    state: &'static str,
    expected: &'static [Wire],
    got: Wire,
) -> ProtocolError {
    ProtocolError::UnexpectedFrame {
        state,
        expected,
        got,
    }
}

pub(super) fn wire(input: &Input) -> Wire {
    input.wire()
}

/// The `$variant` control frame `$input` must carry in `$state`, which
/// expects `$expected`; anything else returns from the phase with what was
/// expected against what came.
macro_rules! take {
    ($state:expr, $expected:expr, $input:expr, $variant:ident) => {
        match control($state, $expected, $input)? {
            ControlFrame::$variant(frame) => frame,
            other => return Err(unexpected($state, $expected, Wire::Frame(other.tag()))),
        }
    };
}

pub(super) use take;

/// The control frame `input` carries (a banner or a MESSAGE is refused
/// as not among `expected`).
pub(super) fn control(
    state: &'static str,
    expected: &'static [Wire],
    input: Input,
) -> Result<ControlFrame, ProtocolError> {
    match input {
        Input::Frame(f) if f.tag != Tag::MESSAGE => Ok(ControlFrame::from_received(&f)?),
        other => Err(unexpected(state, expected, wire(&other))),
    }
}

pub(super) fn auth_peer(peer: &PeerInfo) -> AuthPeer {
    AuthPeer {
        entity_type: peer.entity_type,
    }
}

/// Installs secure mode on both directions of `link` (after AUTH_DONE).
pub(super) fn go_secure(link: &mut Link, secret: &[u8], role: Role) -> Result<(), ProtocolError> {
    let rev1 = link.negotiated().is_some_and(|n| n.rev1);
    let (tx, rx) = SecureKeys::from_connection_secret(secret, role)?.ciphers(rev1);
    if let Some(e) = link.encoder_mut() {
        e.set_cipher(tx);
    }
    if let Some(d) = link.decoder_mut() {
        d.set_cipher(rx);
    }
    Ok(())
}

/// Turns compression on in both directions of `link`.
pub(super) fn set_compression(link: &mut Link, alg: Algorithm, min_size: usize) {
    if let Some(e) = link.encoder_mut() {
        e.set_compression(Some(TxCompression {
            algorithm: alg,
            min_frame_len: min_size,
        }));
    }
    if let Some(d) = link.decoder_mut() {
        d.set_decompression(Some(alg));
    }
}

/// Checks the peer's AUTH_SIGNATURE against what we sent (handle_auth_signature).
pub(super) fn verify_signature(
    sig: &AuthSignature,
    key: &msgr_auth::SessionKey,
    tx: &[u8],
) -> Result<(), ProtocolError> {
    // In constant time (SessionKey::verify).
    if !key.verify([tx], &sig.sha256) {
        return Err(ProtocolError::BadSignature);
    }
    Ok(())
}

pub(super) fn hello(cx: &mut Cx<'_>, peer_addr: EntityAddr) -> Result<(), ProtocolError> {
    cx.link.send_control(
        &Hello {
            entity_type: cx.config.my_name.kind,
            peer_addr,
        }
        .into(),
    )
}
