//! Key material that wipes itself when dropped.

use msgr_encoding::{Decode, DecodeResult, Decoder, Encode};
use zeroize::Zeroize;

/// Bytes that must not outlive their use: wiped when dropped, never
/// printed, compared in constant time (connection secrets, key material).
#[derive(Clone, Default)]
pub struct Secret(pub(crate) Vec<u8>);

impl Secret {
    /// Takes `bytes` as a secret.
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(bytes)
    }

    /// `len` bytes from `rng`.
    pub fn random(len: usize, rng: &dyn crate::Random) -> Secret {
        let mut s = Secret(vec![0u8; len]);
        rng.fill(&mut s.0);
        s
    }

    /// The bytes, for the code that uses them as a key.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// How many bytes the secret has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the secret has no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u8>> for Secret {
    fn from(v: Vec<u8>) -> Secret {
        Secret(v)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        ct_eq(&self.0, &other.0)
    }
}

impl Eq for Secret {}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Encoded as a bufferlist (u32 length, bytes), as Ceph's are.
impl Encode for Secret {
    fn encode(&self, out: &mut Vec<u8>) {
        use bytes::BufMut;
        // Secrets are 16 to 64 bytes: the length fits.
        out.put_u32_le(u32::try_from(self.0.len()).unwrap_or(u32::MAX));
        out.extend_from_slice(&self.0);
    }
}

impl Decode for Secret {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let len = d.length("secret", 1)?;
        Ok(Secret(d.take(len, "secret")?.to_vec()))
    }
}

/// Whether `a` and `b` are equal, in time that does not depend on where
/// they differ (MACs, signatures, challenge answers).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}
