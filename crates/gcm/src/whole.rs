//! AES-128-GCM through ring, one call per message over contiguous bytes.
//!
//! Which implementation is faster depends on the CPU (BENCHMARKS.md,
//! "Dependencies chosen by measurement", "crc32c and AES-GCM without
//! AVX-512" and "On an AMD EPYC with AVX-512"):
//! - with AVX-512, aws-lc's GCM (the streaming [`crate::GcmContext`])
//!   leads on large messages, where secure mode's cost is the cipher's;
//! - without it, ring's VAES/AVX2 code leads at every size: aws-lc's GCM
//!   there has no vector AES.
//!
//! ring seals a message in one call over one buffer, so a frame's
//! scattered pieces are first gathered where the ciphertext goes (a copy
//! at memory speed, far below the difference), and it has no bare
//! keystream, which msgr2.0's secure mode needs to read a preamble before
//! its tag (that mode keeps the streaming context).

use std::mem::MaybeUninit;

use bytes::BytesMut;
use ring::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey, AES_128_GCM};

use crate::{GcmError, KEY_LEN, NONCE_LEN, TAG_LEN};

/// Whether [`WholeKey`] is the faster of the two on this CPU: on x86-64
/// without AVX-512. Elsewhere aws-lc, as first chosen.
pub fn whole_is_faster() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// An AES-128-GCM key, expanded once, that seals and opens whole
/// messages, one nonce per message, with no additional authenticated
/// data. Shared freely: every operation takes `&self`.
///
/// The expanded key is wiped when the value is dropped (ring does not
/// wipe it; aws-lc cleanses what it frees).
pub struct WholeKey {
    /// Always initialized until `drop`, which wipes it: `MaybeUninit`
    /// so that its bytes may be overwritten with zeros there.
    key: MaybeUninit<LessSafeKey>,
}

impl WholeKey {
    /// Expands `key` once; every message reuses the schedule.
    pub fn new(key: &[u8; KEY_LEN]) -> Result<Self, GcmError> {
        let unbound = UnboundKey::new(&AES_128_GCM, key).map_err(|_| GcmError::Setup)?;
        Ok(WholeKey {
            key: MaybeUninit::new(LessSafeKey::new(unbound)),
        })
    }

    fn key(&self) -> &LessSafeKey {
        // SAFETY: initialized in `new` and only uninitialized by `drop`.
        unsafe { self.key.assume_init_ref() }
    }

    /// Encrypts `buf` where it lies and returns its tag.
    pub fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN], GcmError> {
        let tag = self
            .key()
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::empty(), buf)
            .map_err(|_| GcmError::Refused)?;
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(tag.as_ref());
        Ok(out)
    }

    /// Seals the concatenation of `pieces` as one message: appends the
    /// ciphertext and then the tag to `out`. On an error `out` is as it
    /// was.
    pub fn seal_pieces(
        &self,
        nonce: &[u8; NONCE_LEN],
        pieces: &[&[u8]],
        out: &mut BytesMut,
    ) -> Result<(), GcmError> {
        let start = out.len();
        let len = pieces.iter().map(|p| p.len()).sum::<usize>();
        out.reserve(len.saturating_add(TAG_LEN));
        for p in pieces {
            out.extend_from_slice(p);
        }
        match self.seal_in_place(nonce, &mut out[start..]) {
            Ok(tag) => {
                out.extend_from_slice(&tag);
                Ok(())
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Authenticates and decrypts, in place, a message sealed under
    /// `nonce` with `tag`. On any error `in_out` is zeroed: none of the
    /// unauthenticated plaintext is left to be read.
    pub fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), GcmError> {
        let opened = self.key().open_in_place_separate_tag(
            Nonce::assume_unique_for_key(*nonce),
            Aad::empty(),
            Tag::from(*tag),
            in_out,
            0..,
        );
        if opened.is_err() {
            in_out.fill(0);
            return Err(GcmError::Unauthentic);
        }
        Ok(())
    }
}

impl Drop for WholeKey {
    fn drop(&mut self) {
        // SAFETY: initialized (see `key`); dropped once, here, and never
        // read again.
        unsafe { self.key.assume_init_drop() };
        let p = self.key.as_mut_ptr().cast::<u8>();
        for i in 0..std::mem::size_of::<LessSafeKey>() {
            // SAFETY: `p` points to the `size_of::<LessSafeKey>()` bytes
            // of `self.key`, which a `MaybeUninit` may hold any value in;
            // volatile so that the wipe of memory about to be freed (or
            // reused) is kept.
            unsafe { p.add(i).write_volatile(0) };
        }
    }
}

impl std::fmt::Debug for WholeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WholeKey(..)")
    }
}
