//! Streaming AES-128-GCM sealing for msgr2 secure mode.
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
//! # Unsafe code
//! This is the workspace's one crate with `unsafe`: foreign calls into
//! aws-lc (the C library aws-lc-rs already links) and the length update of
//! a `BytesMut` after aws-lc filled its spare capacity. Every block states
//! why it is sound; the public API is safe. The crate's tests check it
//! against aws-lc-rs's one-shot seal for random splits and lengths and
//! against NIST's GCM test vectors.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::os::raw::c_int;
use std::ptr::{self, NonNull};

use aws_lc_sys::{
    EVP_CIPHER_CTX_ctrl, EVP_CIPHER_CTX_free, EVP_CIPHER_CTX_new, EVP_EncryptFinal_ex,
    EVP_EncryptInit_ex, EVP_EncryptUpdate, EVP_aes_128_gcm, EVP_CIPHER_CTX, EVP_CTRL_GCM_GET_TAG,
};
use bytes::BytesMut;

pub const KEY_LEN: usize = 16;
pub const NONCE_LEN: usize = 12;
pub const TAG_LEN: usize = 16;

/// The most one `EVP_EncryptUpdate` call takes (its length is a C int);
/// longer pieces go in several calls.
const MAX_UPDATE: usize = 1 << 30;

/// Why aws-lc refused: both are local conditions, never a peer's doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcmError {
    /// The cipher context could not be allocated or keyed.
    Setup,
    /// aws-lc refused an operation: the message outgrew GCM's limit of
    /// 2^36 - 32 bytes under one nonce, or an earlier piece failed.
    Refused,
}

impl std::fmt::Display for GcmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GcmError::Setup => f.write_str("AES-GCM context setup failed"),
            GcmError::Refused => f.write_str("AES-GCM refused the input (length limit)"),
        }
    }
}

impl std::error::Error for GcmError {}

/// An AES-128-GCM key ready to seal messages, one nonce per message, with
/// no additional authenticated data (msgr2 uses none).
pub struct GcmSealer {
    /// Owned exclusively: created in `new`, freed in `drop`, never shared.
    ctx: NonNull<EVP_CIPHER_CTX>,
}

// SAFETY: the context is owned by this value alone and only used through
// `&mut self`, so it is never touched from two threads at once; aws-lc
// cipher contexts hold no thread-local state and may move between threads.
unsafe impl Send for GcmSealer {}

impl GcmSealer {
    /// Expands `key` once; every message reuses the schedule.
    pub fn new(key: &[u8; KEY_LEN]) -> Result<Self, GcmError> {
        // SAFETY: no arguments; a null return is handled.
        let ctx = NonNull::new(unsafe { EVP_CIPHER_CTX_new() }).ok_or(GcmError::Setup)?;
        let sealer = GcmSealer { ctx };
        // SAFETY: `ctx` is a fresh context; the cipher is aws-lc's static
        // AES-128-GCM; `key` points to the 16 bytes AES-128 reads; a null
        // IV defers it to `begin`.
        let ok = unsafe {
            EVP_EncryptInit_ex(
                sealer.ctx.as_ptr(),
                EVP_aes_128_gcm(),
                ptr::null_mut(),
                key.as_ptr(),
                ptr::null(),
            )
        };
        match ok {
            1 => Ok(sealer),
            _ => Err(GcmError::Setup),
        }
    }

    /// Starts a message under `nonce` (a 96-bit GCM IV). Feed the plaintext
    /// in order with [`Sealing::append`] or [`Sealing::in_place`], then take
    /// the tag with [`Sealing::finish`]. A `Sealing` dropped unfinished
    /// leaves nothing behind: the next `begin` restarts the context.
    pub fn begin(&mut self, nonce: &[u8; NONCE_LEN]) -> Result<Sealing<'_>, GcmError> {
        // SAFETY: `ctx` is keyed (`new`); null cipher and key keep both;
        // `nonce` points to the 12 bytes of GCM's default IV length.
        let ok = unsafe {
            EVP_EncryptInit_ex(
                self.ctx.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
                ptr::null(),
                nonce.as_ptr(),
            )
        };
        match ok {
            1 => Ok(Sealing { sealer: self }),
            _ => Err(GcmError::Setup),
        }
    }

    /// Encrypts `len` bytes from `input` to `output`.
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
                EVP_EncryptUpdate(
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

impl Drop for GcmSealer {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from `EVP_CIPHER_CTX_new` and is freed once.
        unsafe { EVP_CIPHER_CTX_free(self.ctx.as_ptr()) }
    }
}

/// One message being sealed: the plaintext goes in piece by piece, in
/// order; the ciphertext is as long as the plaintext.
pub struct Sealing<'a> {
    sealer: &'a mut GcmSealer,
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
            self.sealer.update(
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
        unsafe { self.sealer.update(p, p, buf.len()) }
    }

    /// Ends the message and returns its 16-byte tag.
    pub fn finish(self) -> Result<[u8; TAG_LEN], GcmError> {
        let ctx = self.sealer.ctx.as_ptr();
        let mut none = [0u8; TAG_LEN];
        let mut written: c_int = 0;
        // SAFETY: GCM's final step writes no output (`written` stays 0);
        // the buffer is there for the interface.
        if unsafe { EVP_EncryptFinal_ex(ctx, none.as_mut_ptr(), &mut written) } != 1 {
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
