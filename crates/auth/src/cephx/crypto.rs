//! What a cephx key encrypts with (src/auth/Crypto.cc; byte-level notes and
//! vectors in docs/research/cephx-crypto.md §3–5):
//!
//! - `aes` (type 1): AES-128-CBC, IV `"cephsageyudagreg"`, PKCS#7 padding
//!   (always 1–16 bytes). Like Ceph, decryption does not validate the
//!   padding (no padding oracle): a wrong key shows as a bad magic in the
//!   envelope one layer up. Key usages do not apply.
//! - `aes256k` (type 2): RFC 8009 aes256-cts-hmac-sha384-192 with Ceph's key
//!   usage numbers: `Ke`/`Ki` derived per usage, `C = AES-256-CBC-CS3(Ke,
//!   0^16, confounder || P)`, `H = HMAC-SHA384(Ki, 0^16 || C)[..24]`, output
//!   `C || H` (plaintext + 40 bytes).

use aws_lc_rs::cipher::{
    DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey, AES_128,
    AES_256,
};
use aws_lc_rs::hmac;
use aws_lc_rs::iv::FixedLength;

use super::key::{CryptoKey, KeyKind};
use crate::Random;

/// `CEPH_AES_IV`.
const CEPH_AES_IV: [u8; 16] = *b"cephsageyudagreg";
const BLOCK: usize = 16;
/// The truncated HMAC-SHA384 tag of aes256k.
const TAG_LEN: usize = 24;
const CONFOUNDER_LEN: usize = 16;
/// An HMAC-SHA384 tag, before truncation.
const SHA384_LEN: usize = 48;
/// aes256k's `Ke`: an AES-256 key.
const KE_LEN: usize = 32;
/// An `aes` key's AES-128 key.
const AES128_KEY_LEN: usize = 16;

/// Key usage numbers of aes256k (Ceph 20 CephxProtocol.h; Linux
/// auth_x_protocol.h). `aes` keys ignore them.
pub mod usage {
    /// The mon's encrypted connection secret (GET_AUTH_SESSION_KEY reply).
    pub const AUTH_CONNECTION_SECRET: u32 = 0x03;
    /// `CephXServiceTicket` (the client's half of a ticket).
    pub const TICKET_SESSION_KEY: u32 = 0x04;
    /// A ticket blob re-encrypted with the old session key.
    pub const TICKET_BLOB: u32 = 0x05;
    /// `CephXAuthorize` (authorizer part b).
    pub const AUTHORIZE: u32 = 0x10;
    /// `CephXAuthorizeChallenge`.
    pub const AUTHORIZE_CHALLENGE: u32 = 0x11;
    /// `CephXAuthorizeReply`.
    pub const AUTHORIZE_REPLY: u32 = 0x12;
    /// Rotating service secrets sent to daemons.
    pub const ROTATING_SECRET: u32 = 0x20;
    /// `CephXServiceTicketInfo` (the ticket blob's contents).
    pub const TICKET_INFO: u32 = 0x30;
}

/// Why decryption failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptoError {
    /// The ciphertext's length cannot be right for the key type.
    BadLength(usize),
    /// aes256k: the HMAC does not match (wrong key, wrong usage, tampering).
    BadTag,
    /// The key has no secret (`none`).
    NoKey,
}

impl std::fmt::Display for CryptoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CryptoError::BadLength(n) => write!(f, "ciphertext of {n} bytes has a bad length"),
            CryptoError::BadTag => f.write_str("integrity check failed (wrong key?)"),
            CryptoError::NoKey => f.write_str("the key has no secret"),
        }
    }
}

impl std::error::Error for CryptoError {}

fn aes_encrypting(alg: &'static aws_lc_rs::cipher::Algorithm, key: &[u8]) -> EncryptingKey {
    // The key lengths are fixed by the key kinds; aws-lc refuses only a
    // wrong length.
    EncryptingKey::cbc(UnboundCipherKey::new(alg, key).expect("AES key of the right length"))
        .expect("AES supports CBC")
}

fn aes_decrypting(
    alg: &'static aws_lc_rs::cipher::Algorithm,
    key: &[u8],
    ecb: bool,
) -> DecryptingKey {
    let k = UnboundCipherKey::new(alg, key).expect("AES key of the right length");
    match ecb {
        true => DecryptingKey::ecb(k),
        false => DecryptingKey::cbc(k),
    }
    .expect("AES supports CBC and ECB")
}

fn cbc_encrypt(
    alg: &'static aws_lc_rs::cipher::Algorithm,
    key: &[u8],
    iv: [u8; 16],
    buf: &mut [u8],
) {
    aes_encrypting(alg, key)
        .less_safe_encrypt(buf, EncryptionContext::Iv128(FixedLength::from(iv)))
        .expect("whole blocks");
}

fn cbc_decrypt(
    alg: &'static aws_lc_rs::cipher::Algorithm,
    key: &[u8],
    iv: [u8; 16],
    buf: &mut [u8],
) {
    aes_decrypting(alg, key, false)
        .decrypt(buf, DecryptionContext::Iv128(FixedLength::from(iv)))
        .expect("whole blocks");
}

/// HMAC-SHA384 of `parts`, concatenated.
fn hmac_sha384(key: &[u8], parts: &[&[u8]]) -> [u8; SHA384_LEN] {
    let key = hmac::Key::new(hmac::HMAC_SHA384, key);
    let mut ctx = hmac::Context::with_key(&key);
    for p in parts {
        ctx.update(p);
    }
    let mut out = [0u8; SHA384_LEN];
    // A SHA-384 tag is always SHA384_LEN bytes.
    out.copy_from_slice(ctx.sign().as_ref());
    out
}

/// KDF-HMAC-SHA2 of RFC 8009 §3 for one usage and label byte: the first
/// `N` bytes of HMAC-SHA384(secret, be32(1) | be32(usage) | label | 0 |
/// be32(N * 8)).
fn kdf<const N: usize>(secret: &[u8], usage: u32, label: u8) -> [u8; N] {
    const { assert!(N <= SHA384_LEN) };
    let mut input = [0u8; 14];
    input[..4].copy_from_slice(&1u32.to_be_bytes());
    input[4..8].copy_from_slice(&usage.to_be_bytes());
    input[8] = label;
    input[10..].copy_from_slice(&const { (N * 8) as u32 }.to_be_bytes());
    let tag = hmac_sha384(secret, &[&input]);
    let mut out = [0u8; N];
    // N <= SHA384_LEN: every byte of `out` is set.
    out.iter_mut().zip(tag).for_each(|(o, t)| *o = t);
    out
}

/// `Ke` and `Ki` of an aes256k key for `usage`.
fn derive(secret: &[u8], usage: u32) -> ([u8; KE_LEN], [u8; TAG_LEN]) {
    (kdf(secret, usage, 0xAA), kdf(secret, usage, 0x55))
}

/// CBC-CS3 encryption (RFC 8009 §5, docs/research/cephx-crypto.md §5): CBC
/// over the data zero-padded to whole blocks, then the last two blocks
/// swapped and the output cut to the data's length. `data` is at least one
/// block (the confounder guarantees it).
fn cts_encrypt(ke: &[u8], data: &mut Vec<u8>) {
    let n = data.len();
    debug_assert!(n >= BLOCK);
    // A Vec holds at most isize::MAX bytes: the next multiple fits.
    data.resize(n.next_multiple_of(BLOCK), 0);
    cbc_encrypt(&AES_256, ke, [0; 16], data);
    // One block is plain CBC; from two on, C(m-1) and Cm trade places.
    if let Some(last_two) = data.last_chunk_mut::<{ 2 * BLOCK }>() {
        last_two.rotate_left(BLOCK);
    }
    data.truncate(n);
}

/// CBC-CS3 decryption, the inverse of [`cts_encrypt`]: the data is C1..C(m-2),
/// Cm, then the first `r` bytes of C(m-1). C(m-1) is rebuilt and the blocks
/// put back in order, for a plain CBC decryption.
fn cts_decrypt(ke: &[u8], data: &mut Vec<u8>) {
    let n = data.len();
    debug_assert!(n >= BLOCK);
    // The bytes of the last, maybe partial, block.
    let r = data.chunks(BLOCK).last().map_or(0, <[u8]>::len);
    // A Vec holds at most isize::MAX bytes: the next multiple fits.
    data.resize(n.next_multiple_of(BLOCK), 0);
    if let Some(last_two) = data.last_chunk_mut::<{ 2 * BLOCK }>() {
        // D = AES-decrypt(Cm) = (Pm || 0) ^ C(m-1): past `r` it is C(m-1).
        let mut d = [0u8; BLOCK];
        d.copy_from_slice(&last_two[..BLOCK]);
        aes_decrypting(&AES_256, ke, true)
            .decrypt(&mut d, DecryptionContext::None)
            .expect("one block");
        for (c, x) in last_two[BLOCK..].iter_mut().zip(d).skip(r) {
            *c = x;
        }
        last_two.rotate_left(BLOCK);
    }
    cbc_decrypt(&AES_256, ke, [0; 16], data);
    data.truncate(n);
}

fn aes256k_tag(ki: &[u8], ciphertext: &[u8]) -> [u8; TAG_LEN] {
    let tag = hmac_sha384(ki, &[&[0u8; BLOCK], ciphertext]);
    let mut out = [0u8; TAG_LEN];
    out.copy_from_slice(&tag[..TAG_LEN]);
    out
}

impl CryptoKey {
    /// An `aes` key's AES-128 key: its secret, which every constructor makes
    /// 16 bytes for this kind. A shorter one (only a changed `kind` could
    /// pair it with `Aes128`) is passed whole, for aws-lc to refuse.
    fn aes128_key(&self) -> &[u8] {
        let secret = self.secret();
        secret.get(..AES128_KEY_LEN).unwrap_or(secret)
    }

    /// Encrypts `plaintext` for key usage `usage` (ignored by `aes`).
    pub fn encrypt(&self, usage: u32, plaintext: &[u8], rng: &dyn Random) -> Vec<u8> {
        let mut confounder = [0u8; CONFOUNDER_LEN];
        if self.kind == KeyKind::Aes256k {
            rng.fill(&mut confounder);
        }
        self.encrypt_with_confounder(usage, plaintext, &confounder)
    }

    /// [`CryptoKey::encrypt`] with a given aes256k confounder (test vectors).
    pub fn encrypt_with_confounder(
        &self,
        usage: u32,
        plaintext: &[u8],
        confounder: &[u8; CONFOUNDER_LEN],
    ) -> Vec<u8> {
        match self.kind {
            KeyKind::None => plaintext.to_vec(),
            KeyKind::Aes128 => {
                // PKCS#7: 1 to BLOCK bytes, each holding the count (the
                // remainder is below BLOCK: never saturates).
                let pad = BLOCK.saturating_sub(plaintext.len() % BLOCK);
                let mut buf = Vec::with_capacity(plaintext.len().saturating_add(pad));
                buf.extend_from_slice(plaintext);
                buf.extend(std::iter::repeat_n(pad as u8, pad));
                cbc_encrypt(&AES_128, self.aes128_key(), CEPH_AES_IV, &mut buf);
                buf
            }
            KeyKind::Aes256k => {
                let (ke, ki) = derive(self.secret(), usage);
                // Room for the confounder, CTS's padding and the tag.
                let mut buf = Vec::with_capacity(
                    plaintext
                        .len()
                        .saturating_add(const { CONFOUNDER_LEN + BLOCK + TAG_LEN }),
                );
                buf.extend_from_slice(confounder);
                buf.extend_from_slice(plaintext);
                cts_encrypt(&ke, &mut buf);
                let tag = aes256k_tag(&ki, &buf);
                buf.extend_from_slice(&tag);
                buf
            }
        }
    }

    /// Decrypts what [`CryptoKey::encrypt`] made with the same usage.
    pub fn decrypt(&self, usage: u32, ciphertext: &[u8]) -> Result<Vec<u8>, CryptoError> {
        match self.kind {
            KeyKind::None => Err(CryptoError::NoKey),
            KeyKind::Aes128 => {
                let n = ciphertext.len();
                if n < BLOCK || n % BLOCK != 0 {
                    return Err(CryptoError::BadLength(n));
                }
                let mut buf = ciphertext.to_vec();
                cbc_decrypt(&AES_128, self.aes128_key(), CEPH_AES_IV, &mut buf);
                // As CryptoAESKeyHandler::decrypt: strip min(last, 16), unchecked
                // (n >= BLOCK: never saturates).
                let pad = buf.last().map_or(0, |&last| (last as usize).min(BLOCK));
                buf.truncate(n.saturating_sub(pad));
                Ok(buf)
            }
            KeyKind::Aes256k => {
                let n = ciphertext.len();
                let (body, tag) = match ciphertext.split_last_chunk::<TAG_LEN>() {
                    Some((body, tag)) if body.len() >= CONFOUNDER_LEN => (body, tag),
                    _ => return Err(CryptoError::BadLength(n)),
                };
                let (ke, ki) = derive(self.secret(), usage);
                let expected = aes256k_tag(&ki, body);
                if aws_lc_rs::constant_time::verify_slices_are_equal(&expected, tag).is_err() {
                    return Err(CryptoError::BadTag);
                }
                let mut buf = body.to_vec();
                cts_decrypt(&ke, &mut buf);
                buf.drain(..CONFOUNDER_LEN);
                Ok(buf)
            }
        }
    }

    /// HMAC-SHA256 keyed by the raw secret (CryptoKeyHandler::hmac_sha256;
    /// AUTH_SIGNATURE and the aes256k challenge).
    pub fn hmac_sha256(&self, parts: &[&[u8]]) -> [u8; 32] {
        let key = hmac::Key::new(hmac::HMAC_SHA256, self.secret());
        let mut ctx = hmac::Context::with_key(&key);
        for p in parts {
            ctx.update(p);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::hex;
    use msgr_encoding::UTime;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(&s.replace(' ', "")).unwrap()
    }

    #[test]
    fn aes128_vector_of_ceph_test_crypto() {
        // src/test/crypto.cc TEST(AES, Encrypt).
        let k = CryptoKey::new(
            KeyKind::Aes128,
            UTime::default(),
            h("000102030405060708090a0b0c0d0e0f"),
        )
        .unwrap();
        let pt = h("00112233445566778899aabbccddeeff");
        let ct = k.encrypt(0, &pt, &crate::SystemRandom);
        assert_eq!(
            hex::encode(&ct),
            "b38f5bc9354cf8c61315666f37d7793a11907be9d83c3570587b979b03d2a501"
        );
        assert_eq!(k.decrypt(0, &ct).unwrap(), pt);
        assert_eq!(k.decrypt(0, &ct[..17]), Err(CryptoError::BadLength(17)));
    }

    #[test]
    fn rfc8009_aes256_key_derivation() {
        let base = h("6D404D37FAF79F9DF0D33568D320669800EB4836472EA8A026D16B7182460C52");
        assert_eq!(
            hex::encode(&kdf::<24>(&base, 2, 0x99)).to_uppercase(),
            "EF5718BE86CC84963D8BBB5031E9F5C4BA41F28FAF69E73D"
        );
        let (ke, ki) = derive(&base, 2);
        assert_eq!(
            hex::encode(&ke).to_uppercase(),
            "56AB22BEE63D82D7BC5227F6773F8EA7A5EB1C825160C38312980C442E5C7E49"
        );
        assert_eq!(
            hex::encode(&ki).to_uppercase(),
            "69B16514E3CD8E56B82010D5C73012B622C4D00FFC23ED1F"
        );
    }

    #[test]
    fn rfc8009_aes256_encryptions_as_ceph_test_crypto() {
        // RFC 8009 Appendix A = src/test/crypto.cc TEST(AES256KRB5, Encrypt).
        let key = CryptoKey::new(
            KeyKind::Aes256k,
            UTime::default(),
            h("6D404D37FAF79F9DF0D33568D320669800EB4836472EA8A026D16B7182460C52"),
        )
        .unwrap();
        let cases = [
            ("", "F764E9FA15C276478B2C7D0C4E5F58E4", "41F53FA5BFE7026D91FAF9BE959195A058707273A96A40F0A01960621AC612748B9BBFBE7EB4CE3C"),
            ("000102030405", "B80D3251C1F6471494256FFE712D0B9A", "4ED7B37C2BCAC8F74F23C1CF07E62BC7B75FB3F637B9F559C7F664F69EAB7B6092237526EA0D1F61CB20D69D10F2"),
            ("000102030405060708090A0B0C0D0E0F", "53BF8A0D105265D4E276428624CE5E63", "BC47FFEC7998EB91E8115CF8D19DAC4BBBE2E163E87DD37F49BECA92027764F68CF51F14D798C2273F35DF574D1F932E40C4FF255B36A266"),
            ("000102030405060708090A0B0C0D0E0F1011121314", "763E65367E864F02F55153C7E3B58AF1", "40013E2DF58E8751957D2878BCD2D6FE101CCFD556CB1EAE79DB3C3EE86429F2B2A602AC86FEF6ECB647D6295FAE077A1FEB517508D2C16B4192E01F62"),
        ];
        for (pt, conf, ct) in cases {
            let pt = h(pt);
            let conf: [u8; 16] = h(conf).try_into().unwrap();
            let out = key.encrypt_with_confounder(2, &pt, &conf);
            assert_eq!(hex::encode(&out).to_uppercase(), ct);
            assert_eq!(key.decrypt(2, &out).unwrap(), pt);
            // Another usage derives other keys: the tag does not match.
            assert_eq!(key.decrypt(3, &out), Err(CryptoError::BadTag));
            let mut bad = out.clone();
            bad[0] ^= 1;
            assert_eq!(key.decrypt(2, &bad), Err(CryptoError::BadTag));
        }
        // Shorter than a confounder and a tag: refused before any HMAC.
        assert_eq!(key.decrypt(2, &[0; 39]), Err(CryptoError::BadLength(39)));
        assert_eq!(key.decrypt(2, &[0; 40]), Err(CryptoError::BadTag));
    }

    #[test]
    fn cts_round_trips_every_length() {
        let rng = crate::SeededRandom::new(7);
        let key = CryptoKey::random(KeyKind::Aes256k, UTime::default(), &rng);
        for len in 0..100 {
            let pt: Vec<u8> = (0..len as u8).collect();
            let ct = key.encrypt(4, &pt, &rng);
            assert_eq!(ct.len(), len + 40);
            assert_eq!(key.decrypt(4, &ct).unwrap(), pt, "len {len}");
        }
    }

    #[test]
    fn captured_tentacle_ticket_decrypts() {
        // docs/research/cephx-crypto.md §4.4: the first CephXServiceTicket of
        // testdata/captures/tentacle-ceph-s.pcap, client.admin's secret, usage 4.
        let key = CryptoKey::new(
            KeyKind::Aes256k,
            UTime::default(),
            h("f8bc79b89604385a20824da7879fccab8ee379649ddeafb721f37f5d3b6a8cd2"),
        )
        .unwrap();
        let ct = h("dac85db71dba483ad7cb54b28b5d80817fb0117514ef0e971169b21f17da4c47c41eafbc8453507282c0b70d49c041647d25820bf017f3d431559408d44475e559febc332e1068673ae82b4f944074e1394eda4ba7c8e47c67ed1b7c5d8e587eabec6578943f");
        let pt = key.decrypt(usage::TICKET_SESSION_KEY, &ct).unwrap();
        assert_eq!(
            hex::encode(&pt),
            "0155aa2688ad9c00ff0102009c32026bef35c4352000a82141498b0d4e53a4819a53e863e55804df85f9bf8179cadc50fe75d69ae14b80f4030000000000"
        );
        let conf: [u8; 16] = h("c749244cfbec7e0a2a49cb88c4c3b172").try_into().unwrap();
        assert_eq!(key.encrypt_with_confounder(4, &pt, &conf), ct);
    }

    #[test]
    fn hmac_sha256_vector_of_ceph_test_crypto() {
        let k = CryptoKey::new(
            KeyKind::Aes128,
            UTime::default(),
            h("00112233445566778899aabbccddeeff"),
        )
        .unwrap();
        assert_eq!(
            hex::encode(&k.hmac_sha256(&[b"blabla", b"bla"])),
            "42c7027e8be06dca2c0b444373fefdbeac5b4034eca44a69de3a291634ed8df9"
        );
    }
}
