//! AES-128-GCM for msgr2 secure mode: streaming sealing, opening, and
//! the bare keystream, all from one key schedule.
//!
//! A secure frame's tail is one GCM message made of several pieces: each
//! segment, its zero padding, and the epilogue (msgr2 document, "secure
//! mode"; `FrameAssembler::asm_secure_rev1` in frames_v2.cc, which streams
//! them through OpenSSL's `EVP_EncryptUpdate`, crypto_onwire.cc). The safe
//! wrapper the rest of the workspace uses, aws-lc-rs, seals a message only
//! in one call and from at most two plaintext pieces, so the frame had to
//! be gathered into one buffer first. For a 1 MiB data segment that copy
//! cost as much as the encryption itself (BENCHMARKS.md, "secure mode").
//! This crate streams the pieces through aws-lc's `EVP_CIPHER` interface
//! instead, encrypting each straight from where it lies into the send
//! buffer, as Ceph does.
//!
//! Both directions of a msgr2 connection use the same key, with different
//! nonces (`rxtx_t::create_handler_pair`). One [`GcmContext`] therefore
//! serves both: it seals, opens, and (for msgr2.0's preamble, read before
//! its tag has arrived) applies GCM's keystream alone. A key schedule and
//! its GHASH table cost about 900 bytes of aws-lc's memory; a secure
//! connection holding one instead of two (and a third, a CTR key, for
//! msgr2.0) is what keeps it within its idle-memory budget.
//!
//! On CPUs without AVX-512, ring's GCM is the faster (BENCHMARKS.md,
//! "crc32c and AES-GCM without AVX-512"): [`WholeKey`] seals and opens
//! with it, one call over contiguous bytes
//! (`whole.rs`), and [`whole_is_faster`] says which of the two to use.
//!
//! # Unsafe code
//! One of the workspace's three crates with `unsafe` (with msgr-sys and
//! msgr-uring), here only foreign calls into
//! aws-lc (the C library aws-lc-rs already links), the length update of
//! a `BytesMut` after aws-lc filled its spare capacity, and the wipe of
//! ring's expanded key when a [`WholeKey`] is dropped. Every block states
//! why it is sound; the public API is safe. The crate's tests check both
//! against aws-lc-rs's one-shot seal and open for random splits and
//! lengths and against NIST's GCM test vectors.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::os::raw::c_int;
use std::ptr::{self, NonNull};

use aws_lc_sys::{
    EVP_CIPHER_CTX_ctrl, EVP_CIPHER_CTX_free, EVP_CIPHER_CTX_new, EVP_CipherFinal_ex,
    EVP_CipherInit_ex, EVP_CipherUpdate, EVP_aes_128_gcm, EVP_CIPHER_CTX, EVP_CTRL_GCM_GET_TAG,
    EVP_CTRL_GCM_SET_TAG,
};
use bytes::BytesMut;

mod whole;
pub use whole::{whole_is_faster, WholeKey};

/// An AES-128 key's length in bytes.
pub const KEY_LEN: usize = 16;
/// A GCM nonce's length in bytes (msgr2's 96-bit nonce).
pub const NONCE_LEN: usize = 12;
/// A GCM authentication tag's length in bytes.
pub const TAG_LEN: usize = 16;

/// The most one `EVP_CipherUpdate` call takes (its length is a C int);
/// longer pieces go in several calls.
const MAX_UPDATE: usize = 1 << 30;

/// Why an operation failed. `Setup` and `Refused` are local conditions;
/// `Unauthentic` is the peer's (or the wire's) doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcmError {
    /// The cipher context could not be allocated or keyed.
    Setup,
    /// aws-lc refused an operation: the message outgrew GCM's limit of
    /// 2^36 - 32 bytes under one nonce, or an earlier piece failed.
    Refused,
    /// The tag did not match: the ciphertext or the tag was altered, or it
    /// was sealed under another key or nonce.
    Unauthentic,
    /// A bare keystream was asked of ring's [`WholeKey`], which has none:
    /// msgr2.0's secure mode, the one that reads it, takes aws-lc's
    /// streaming [`GcmContext`].
    NoKeystream,
}

impl std::fmt::Display for GcmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GcmError::Setup => f.write_str("AES-GCM context setup failed"),
            GcmError::Refused => f.write_str("AES-GCM refused the input (length limit)"),
            GcmError::Unauthentic => f.write_str("AES-GCM tag mismatch"),
            GcmError::NoKeystream => f.write_str(
                "this AES-GCM key has no bare keystream (msgr2.0 secure mode needs aws-lc's streaming context)",
            ),
        }
    }
}

impl std::error::Error for GcmError {}

/// An AES-128-GCM key, expanded once, that seals and opens messages, one
/// nonce per message, with no additional authenticated data (msgr2 uses
/// none). One operation at a time: each starts by setting its nonce and
/// direction, so an operation left unfinished leaves nothing behind.
pub struct GcmContext {
    /// Owned exclusively: created in `new`, freed in `drop`, never shared.
    ctx: NonNull<EVP_CIPHER_CTX>,
}

// SAFETY: the context is owned by this value alone and only used through
// `&mut self`, so it is never touched from two threads at once; aws-lc
// cipher contexts hold no thread-local state and may move between threads.
unsafe impl Send for GcmContext {}

/// `EVP_CipherInit_ex`'s direction argument.
const ENCRYPT: c_int = 1;
const DECRYPT: c_int = 0;

impl GcmContext {
    /// Expands `key` once; every message reuses the schedule.
    pub fn new(key: &[u8; KEY_LEN]) -> Result<Self, GcmError> {
        // SAFETY: no arguments; a null return is handled.
        let ctx = NonNull::new(unsafe { EVP_CIPHER_CTX_new() }).ok_or(GcmError::Setup)?;
        let gcm = GcmContext { ctx };
        // SAFETY: `ctx` is a fresh context; the cipher is aws-lc's static
        // AES-128-GCM; `key` points to the 16 bytes AES-128 reads; a null
        // IV defers it to `start`.
        let ok = unsafe {
            EVP_CipherInit_ex(
                gcm.ctx.as_ptr(),
                EVP_aes_128_gcm(),
                ptr::null_mut(),
                key.as_ptr(),
                ptr::null(),
                ENCRYPT,
            )
        };
        match ok {
            1 => Ok(gcm),
            _ => Err(GcmError::Setup),
        }
    }

    /// Starts a message under `nonce` (a 96-bit GCM IV) in direction
    /// `enc`, keeping the key schedule.
    fn start(&mut self, nonce: &[u8; NONCE_LEN], enc: c_int) -> Result<(), GcmError> {
        // SAFETY: `ctx` is keyed (`new`); null cipher and key keep both;
        // `nonce` points to the 12 bytes of GCM's default IV length. GCM's
        // keystream is AES encryption in both directions, so the schedule
        // serves either.
        let ok = unsafe {
            EVP_CipherInit_ex(
                self.ctx.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
                ptr::null(),
                nonce.as_ptr(),
                enc,
            )
        };
        match ok {
            1 => Ok(()),
            _ => Err(GcmError::Setup),
        }
    }

    /// Starts sealing a message under `nonce`. Feed the plaintext in order
    /// with [`Sealing::append`] or [`Sealing::in_place`], then take the tag
    /// with [`Sealing::finish`].
    pub fn begin(&mut self, nonce: &[u8; NONCE_LEN]) -> Result<Sealing<'_>, GcmError> {
        self.start(nonce, ENCRYPT)?;
        Ok(Sealing { gcm: self })
    }

    /// Authenticates and decrypts, in place, a message sealed under
    /// `nonce` with `tag`. On any error `in_out` is zeroed: none of the
    /// unauthenticated plaintext is left to be read.
    pub fn open(
        &mut self,
        nonce: &[u8; NONCE_LEN],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), GcmError> {
        let opened = self.open_unchecked(nonce, in_out, tag);
        if opened.is_err() {
            in_out.fill(0);
        }
        opened
    }

    fn open_unchecked(
        &mut self,
        nonce: &[u8; NONCE_LEN],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), GcmError> {
        self.keystream(nonce, in_out)?;
        let mut expected = *tag;
        // SAFETY: SET_TAG copies `TAG_LEN` bytes from `expected`, which has
        // them; the context is decrypting (`keystream`), as SET_TAG needs.
        let ok = unsafe {
            EVP_CIPHER_CTX_ctrl(
                self.ctx.as_ptr(),
                EVP_CTRL_GCM_SET_TAG as c_int,
                TAG_LEN as c_int,
                expected.as_mut_ptr().cast(),
            )
        };
        if ok != 1 {
            return Err(GcmError::Refused);
        }
        let mut none = [0u8; TAG_LEN];
        let mut written: c_int = 0;
        // SAFETY: GCM's final step writes no output (`written` stays 0);
        // the buffer is there for the interface. It compares the tag in
        // constant time and fails on a mismatch.
        match unsafe { EVP_CipherFinal_ex(self.ctx.as_ptr(), none.as_mut_ptr(), &mut written) } {
            1 => Ok(()),
            _ => Err(GcmError::Unauthentic),
        }
    }

    /// Applies the keystream of a message under `nonce` to `buf` where it
    /// lies, without authenticating it: AES-CTR from counter 2, which is
    /// how GCM encrypts. msgr2.0 secure mode reads a frame's preamble this
    /// way, before the tag at the frame's end has arrived; the frame is
    /// opened as a whole afterwards.
    pub fn keystream(&mut self, nonce: &[u8; NONCE_LEN], buf: &mut [u8]) -> Result<(), GcmError> {
        self.start(nonce, DECRYPT)?;
        if buf.is_empty() {
            return Ok(());
        }
        let p = buf.as_mut_ptr();
        // SAFETY: a non-empty slice: valid, non-null, and input and output
        // are the same bytes, which GCM allows.
        unsafe { self.update(p, p, buf.len()) }
    }

    /// Encrypts or decrypts (as `start` set) `len` bytes from `input` to
    /// `output`.
    ///
    /// # Safety
    /// `input` must be valid for reads and `output` for writes of `len`
    /// bytes, `output` non-null (aws-lc takes a null output as AAD), and
    /// the two either equal or not overlapping.
    unsafe fn update(
        &mut self,
        input: *const u8,
        output: *mut u8,
        len: usize,
    ) -> Result<(), GcmError> {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(MAX_UPDATE);
            let mut written: c_int = 0;
            // SAFETY: the caller's contract covers `done..done + n`; `n`
            // fits a C int; GCM writes exactly `n` bytes (checked below).
            let ok = unsafe {
                EVP_CipherUpdate(
                    self.ctx.as_ptr(),
                    output.add(done),
                    &mut written,
                    input.add(done),
                    n as c_int,
                )
            };
            if ok != 1 || written as usize != n {
                return Err(GcmError::Refused);
            }
            done += n;
        }
        Ok(())
    }
}

impl Drop for GcmContext {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from `EVP_CIPHER_CTX_new` and is freed once.
        unsafe { EVP_CIPHER_CTX_free(self.ctx.as_ptr()) }
    }
}

/// One message being sealed: the plaintext goes in piece by piece, in
/// order; the ciphertext is as long as the plaintext.
pub struct Sealing<'a> {
    gcm: &'a mut GcmContext,
}

impl Sealing<'_> {
    /// Encrypts `plaintext` and appends the ciphertext to `out`, without
    /// first copying or zero-filling anything.
    pub fn append(&mut self, plaintext: &[u8], out: &mut BytesMut) -> Result<(), GcmError> {
        if plaintext.is_empty() {
            return Ok(());
        }
        out.reserve(plaintext.len());
        let spare = out.spare_capacity_mut();
        // SAFETY: `reserve` made `spare` at least `plaintext.len()` bytes,
        // non-null; `plaintext` is a shared borrow while `out` is borrowed
        // mutably, so it cannot lie in `out`'s spare capacity.
        unsafe {
            self.gcm.update(
                plaintext.as_ptr(),
                spare.as_mut_ptr().cast(),
                plaintext.len(),
            )?;
        }
        // SAFETY: `update` succeeded, so it initialized exactly the first
        // `plaintext.len()` bytes of the spare capacity.
        unsafe { out.set_len(out.len() + plaintext.len()) };
        Ok(())
    }

    /// Encrypts `buf` where it lies.
    pub fn in_place(&mut self, buf: &mut [u8]) -> Result<(), GcmError> {
        if buf.is_empty() {
            return Ok(());
        }
        let p = buf.as_mut_ptr();
        // SAFETY: a non-empty slice: valid, non-null, and input and output
        // are the same bytes, which GCM allows.
        unsafe { self.gcm.update(p, p, buf.len()) }
    }

    /// Ends the message and returns its 16-byte tag.
    pub fn finish(self) -> Result<[u8; TAG_LEN], GcmError> {
        let ctx = self.gcm.ctx.as_ptr();
        let mut none = [0u8; TAG_LEN];
        let mut written: c_int = 0;
        // SAFETY: GCM's final step writes no output (`written` stays 0);
        // the buffer is there for the interface.
        if unsafe { EVP_CipherFinal_ex(ctx, none.as_mut_ptr(), &mut written) } != 1 {
            return Err(GcmError::Refused);
        }
        let mut tag = [0u8; TAG_LEN];
        // SAFETY: GET_TAG copies `TAG_LEN` bytes into `tag`, which has them.
        let ok = unsafe {
            EVP_CIPHER_CTX_ctrl(
                ctx,
                EVP_CTRL_GCM_GET_TAG as c_int,
                TAG_LEN as c_int,
                tag.as_mut_ptr().cast(),
            )
        };
        match ok {
            1 => Ok(tag),
            _ => Err(GcmError::Refused),
        }
    }
}

#[cfg(test)]
mod tests;
