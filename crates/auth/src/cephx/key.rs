//! `CryptoKey` (src/auth/Crypto.h): a key type, a creation time and the
//! secret. Encoding: `u16 type, utime_t created, u16 len, secret` — so a
//! base64 keyring key starts `AQ` for type 1 (AES-128) and `Ag` for type 2
//! (aes256k).

use bytes::BufMut;
use msgr_encoding::{Decode, DecodeError, DecodeResult, Decoder, Encode, UTime};

use crate::base64;
use crate::Secret;

/// `CEPH_CRYPTO_*`: what a key encrypts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// `CEPH_CRYPTO_NONE` (0): no secret, no encryption.
    None,
    /// `CEPH_CRYPTO_AES` (1): AES-128-CBC with Ceph's fixed IV, PKCS#7.
    Aes128,
    /// `CEPH_CRYPTO_AES256KRB5` (2): AES256-CTS-HMAC-SHA384-192 (RFC 8009),
    /// Ceph 20's default.
    Aes256k,
}

impl KeyKind {
    /// The number Ceph encodes the kind as (`CEPH_CRYPTO_*`).
    pub fn code(self) -> u16 {
        match self {
            KeyKind::None => 0,
            KeyKind::Aes128 => 1,
            KeyKind::Aes256k => 2,
        }
    }

    /// The kind `CEPH_CRYPTO_*` number `code` names, if we know it.
    pub fn from_code(code: u16) -> Option<KeyKind> {
        Some(match code {
            0 => KeyKind::None,
            1 => KeyKind::Aes128,
            2 => KeyKind::Aes256k,
            _ => return None,
        })
    }

    /// The secret's length in bytes.
    pub fn secret_len(self) -> usize {
        match self {
            KeyKind::None => 0,
            KeyKind::Aes128 => 16,
            KeyKind::Aes256k => 32,
        }
    }

    /// The name Ceph uses in `auth_allowed_ciphers` and keyring tools.
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::None => "none",
            KeyKind::Aes128 => "aes",
            KeyKind::Aes256k => "aes256k",
        }
    }
}

/// A cephx key.
#[derive(Clone, PartialEq, Eq)]
pub struct CryptoKey {
    /// The cipher the key is for.
    pub kind: KeyKind,
    /// When the key was made, as its encoding carries it.
    pub created: UTime,
    /// Wiped when the key is dropped.
    secret: Secret,
}

impl CryptoKey {
    /// A key of `kind` with `secret`, which must have the kind's length.
    pub fn new(kind: KeyKind, created: UTime, secret: Vec<u8>) -> Result<CryptoKey, String> {
        if secret.len() != kind.secret_len() {
            return Err(format!(
                "a {} key has {} secret bytes, not {}",
                kind.name(),
                kind.secret_len(),
                secret.len()
            ));
        }
        Ok(CryptoKey {
            kind,
            created,
            secret: Secret::new(secret),
        })
    }

    /// A fresh random key (session keys, service secrets, test keys).
    pub fn random(kind: KeyKind, created: UTime, rng: &dyn crate::Random) -> CryptoKey {
        CryptoKey {
            kind,
            created,
            secret: Secret::random(kind.secret_len(), rng),
        }
    }

    /// The secret's bytes (a borrow: the key keeps the only copy and wipes
    /// it on drop).
    pub fn secret(&self) -> &[u8] {
        self.secret.expose()
    }

    /// From the base64 text of a keyring's `key = ...` line.
    pub fn from_base64(text: &str) -> Result<CryptoKey, String> {
        let raw = base64::decode(text.trim())?;
        CryptoKey::decode_exact(&raw, "CryptoKey").map_err(|e| format!("bad key: {e}"))
    }

    /// The base64 text a keyring holds.
    pub fn to_base64(&self) -> String {
        base64::encode(&self.to_bytes())
    }
}

impl std::fmt::Debug for CryptoKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CryptoKey({}, {} bytes)",
            self.kind.name(),
            self.secret.len()
        )
    }
}

impl Encode for CryptoKey {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16_le(self.kind.code());
        self.created.encode(out);
        // A kind's length (16 or 32), checked when the key was made.
        out.put_u16_le(u16::try_from(self.secret.len()).unwrap_or(u16::MAX));
        out.extend_from_slice(self.secret.expose());
    }
}

impl Decode for CryptoKey {
    const MIN_ENCODED_LEN: usize = 12;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let code = d.u16("CryptoKey.type")?;
        let kind = KeyKind::from_code(code).ok_or(DecodeError::InvalidValue {
            what: "CryptoKey.type",
            value: code as u64,
        })?;
        let created = UTime::decode(d)?;
        let len = d.u16("CryptoKey.len")? as usize;
        if len != kind.secret_len() {
            return Err(DecodeError::InvalidValue {
                what: "CryptoKey secret length",
                value: len as u64,
            });
        }
        let secret = Secret::new(d.take(len, "CryptoKey.secret")?.to_vec());
        Ok(CryptoKey {
            kind,
            created,
            secret,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyring_keys_of_both_types() {
        // Keys of the throw-away clusters in testdata/captures.
        let aes = CryptoKey::from_base64("AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==").unwrap();
        assert_eq!(aes.kind, KeyKind::Aes128);
        assert_eq!(aes.secret().len(), 16);
        assert_eq!(aes.to_base64(), "AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==");
        let k256 =
            CryptoKey::from_base64("AgAaMgJrPliqHiAAD+OswerT5Lxu2apPTRiVq7xwmYCangqeDczrjbSuVvA=")
                .unwrap();
        assert_eq!(k256.kind, KeyKind::Aes256k);
        assert_eq!(k256.secret().len(), 32);
        assert!(CryptoKey::from_base64("AQCHMgJr").is_err());
        assert!(CryptoKey::from_base64("not base64!").is_err());
    }
}
