//! Secrets, the session key and the AUTH_SIGNATURE HMAC.

use aws_lc_rs::hmac;

use crate::secret::{ct_eq, Secret};

/// A session key's raw secret (the cephx session key; empty for auth
/// none). It keys AUTH_SIGNATURE: HMAC-SHA256 over every byte received
/// before it (ProtocolV2::finish_auth, CryptoKey::hmac_sha256).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SessionKey(Secret);

impl SessionKey {
    /// The session key with these secret bytes.
    pub fn new(secret: Vec<u8>) -> Self {
        SessionKey(Secret(secret))
    }

    /// Whether there is no key (auth none): AUTH_SIGNATURE is then 32 zero
    /// bytes, as in Ceph.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key's bytes.
    pub fn secret(&self) -> &[u8] {
        self.0.expose()
    }

    /// The AUTH_SIGNATURE of `parts` (concatenated): HMAC-SHA256 keyed by the
    /// secret, or 32 zero bytes without a key.
    pub fn signature<'a>(&self, parts: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
        let mut out = [0u8; 32];
        if self.0.is_empty() {
            return out;
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, self.0.expose());
        let mut ctx = hmac::Context::with_key(&key);
        for p in parts {
            ctx.update(p);
        }
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// Whether `signature` is the AUTH_SIGNATURE of `parts`, compared in
    /// constant time (Ceph memcmp()s it; the kernel uses crypto_memneq).
    pub fn verify<'a>(&self, parts: impl IntoIterator<Item = &'a [u8]>, signature: &[u8]) -> bool {
        ct_eq(&self.signature(parts), signature)
    }

    /// The msgr1 message signer of this key (CephxSessionHandler), or
    /// `None` without a cephx key (16 bytes: AES-128; 32: aes256k).
    pub fn msgr1_signer(&self) -> Option<Msgr1Signer> {
        use crate::cephx::{CryptoKey, KeyKind};
        let secret = self.0.expose();
        let kind = match secret.len() {
            16 => KeyKind::Aes128,
            32 => KeyKind::Aes256k,
            _ => return None,
        };
        let key = CryptoKey::new(kind, Default::default(), secret.to_vec()).ok()?;
        Some(Msgr1Signer { key, kind })
    }
}

/// Signs msgr1 messages with a cephx session key, made once per session.
pub struct Msgr1Signer {
    key: crate::cephx::CryptoKey,
    kind: crate::cephx::KeyKind,
}

impl Msgr1Signer {
    /// The signature (CephxSessionHandler::_calc_signature) of `block`,
    /// the message's crcs and lengths as msgr1 lays them out
    /// (docs/research/msgr1-wire.md §5.2). With CEPHX_V2 (`v2`): the XOR
    /// of the four little-endian words of the block's first 32 encrypted
    /// bytes (AES-128-CBC with Ceph's IV), or of its HMAC-SHA256 (aes256k).
    /// Before CEPHX_V2: the first 8 encrypted bytes.
    pub fn sign(&self, block: &[u8], v2: bool) -> u64 {
        use crate::cephx::KeyKind;
        let bytes: Vec<u8> = match self.kind {
            KeyKind::Aes256k => self.key.hmac_sha256(&[block]).to_vec(),
            _ => self
                .key
                .encrypt_with_confounder(0, block, &Default::default()),
        };
        let word = |i: usize| {
            let w = bytes.get(i..i.saturating_add(8)).unwrap_or_default();
            u64::from_le_bytes(w.try_into().unwrap_or_default())
        };
        match v2 {
            true => word(0) ^ word(8) ^ word(16) ^ word(24),
            false => word(0),
        }
    }
}

impl std::fmt::Debug for Msgr1Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msgr1Signer")
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
    use msgr_encoding::{Decode, Encode};

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

    #[test]
    fn secrets_compare_in_constant_time_and_never_print() {
        let a = Secret::new(vec![7; 64]);
        assert_eq!(a, Secret::new(vec![7; 64]));
        assert_ne!(a, Secret::new(vec![7; 63]));
        assert_eq!(format!("{a:?}"), "Secret(64 bytes)");
        let k = SessionKey::new(b"Jefe".to_vec());
        let sig = k.signature([&b"what do ya want for nothing?"[..]]);
        assert!(k.verify([&b"what do ya want for nothing?"[..]], &sig));
        assert!(!k.verify([&b"what do ya want for nothing!"[..]], &sig));
        assert!(!k.verify([&b"what do ya want for nothing?"[..]], &sig[..31]));
        let bytes = a.to_bytes();
        assert_eq!(Secret::decode_exact(&bytes, "secret").unwrap(), a);
    }
}

#[cfg(test)]
mod msgr1_tests {
    use super::SessionKey;

    fn h(s: &str) -> Vec<u8> {
        msgr_encoding::hex::decode(&s.replace(' ', "")).unwrap()
    }

    /// The signatures of the first MOSDOp of pacific-v1-rados-put-get.pcap
    /// (AES-128 session key) and tentacle-v1-rados-put-get.pcap (aes256k),
    /// with the keys recovered from those captures
    /// (docs/research/msgr1-wire.md §5.2).
    #[test]
    fn msgr1_signatures_match_ceph_16_and_20() {
        let aes = SessionKey::new(h("219cc025d193c8c36e7d20950fe176cc"));
        let block = h("095f80fc a7881b32 d4000000 00000000 00000000 9f71aaf4 00280000 01000000");
        let sign = |k: &SessionKey, block: &[u8]| k.msgr1_signer().map(|s| s.sign(block, true));
        assert_eq!(sign(&aes, &block), Some(0xe2c9_a317_cb67_6404));
        let aes256k = SessionKey::new(h(
            "9cd968d97a52cb99534ddbb319d709153295f87e4ad34e4a91bd708cf60853dc",
        ));
        let block = h("4cbf0b77 81c2553d db000000 00000000 00000000 9f71aaf4 00280000 01000000");
        assert_eq!(sign(&aes256k, &block), Some(0x2176_da76_feab_dc66));
        assert_eq!(sign(&SessionKey::default(), &block), None);
    }

    /// The format before CEPHX_V2, which no Ceph 16 or 20 peer (nor a
    /// kernel since 4.19) negotiates, so no capture has it: the same
    /// message's old block (version 1, AUTH_ENC_MAGIC, length 16, the four
    /// crcs), signed with the first 8 bytes of its AES-128-CBC encryption.
    /// The expected value comes from OpenSSL, not from our AES:
    /// `openssl enc -aes-128-cbc -K 219cc0…76cc -iv $(printf cephsageyudagreg | xxd -p)`.
    #[test]
    fn msgr1_signature_before_cephx_v2_matches_openssl() {
        let aes = SessionKey::new(h("219cc025d193c8c36e7d20950fe176cc"));
        let block = h("01 55aa2688ad9c00ff 10000000 095f80fc a7881b32 00000000 9f71aaf4");
        let sig = aes.msgr1_signer().map(|s| s.sign(&block, false));
        assert_eq!(sig, Some(0x1b72_0554_c900_8a04));
    }
}
