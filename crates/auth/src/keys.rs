//! The session key and the AUTH_SIGNATURE HMAC.

use aws_lc_rs::hmac;

/// A session key's raw secret (the cephx session key; empty for auth
/// none). It keys AUTH_SIGNATURE: HMAC-SHA256 over every byte received
/// before it (ProtocolV2::finish_auth, CryptoKey::hmac_sha256).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SessionKey(Vec<u8>);

impl SessionKey {
    pub fn new(secret: Vec<u8>) -> Self {
        SessionKey(secret)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn secret(&self) -> &[u8] {
        &self.0
    }

    /// The AUTH_SIGNATURE of `parts` (concatenated): HMAC-SHA256 keyed by the
    /// secret, or 32 zero bytes without a key.
    pub fn signature<'a>(&self, parts: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
        let mut out = [0u8; 32];
        if self.0.is_empty() {
            return out;
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        let mut ctx = hmac::Context::with_key(&key);
        for p in parts {
            ctx.update(p);
        }
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKey({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_rfc4231_case_2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let k = SessionKey::new(b"Jefe".to_vec());
        let sig = k.signature([&b"what do ya want "[..], &b"for nothing?"[..]]);
        assert_eq!(
            msgr_encoding::hex::encode(&sig),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(SessionKey::default().signature([&b"x"[..]]), [0u8; 32]);
    }
}
