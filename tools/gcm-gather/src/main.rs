//! Sealing a scattered 1 MiB frame tail (front, data, epilogue) into a send
//! buffer, four ways, with the data taken in turn from 8 buffers (8 MiB, more
//! than L2) as a sender's messages would be. `cargo run --release [ITERS [ROUNDS]]`:
//! ROUNDS interleaved rounds of ITERS seals per case, best and median round.
//! A and C are checked against each other; B is timed only (its tag is
//! not a GCM tag: it shows the cost of CTR plus a separate GHASH pass).
use std::hint::black_box;
use std::time::Instant;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use aws_lc_rs::cipher::{EncryptionContext, StreamingEncryptingKey, UnboundCipherKey, AES_128};
use aws_lc_rs::iv::FixedLength;

const SIZE: usize = 1 << 20;
const FRONT: usize = 208;
const POOL: usize = 8;

/// Per-op microseconds of each case, one sample per round.
static SAMPLES: std::sync::Mutex<Vec<(&'static str, Vec<f64>)>> = std::sync::Mutex::new(Vec::new());

fn per_op(label: &'static str, iters: usize, mut f: impl FnMut(usize)) {
    for i in 0..POOL { f(i); }
    let t = Instant::now();
    for i in 0..iters { f(i % POOL); }
    let us = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let mut all = SAMPLES.lock().unwrap();
    match all.iter_mut().find(|(l, _)| *l == label) {
        Some((_, v)) => v.push(us),
        None => all.push((label, vec![us])),
    }
}

fn report() {
    for (label, v) in SAMPLES.lock().unwrap().iter_mut() {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (best, med) = (v[0], v[v.len() / 2]);
        println!("{label:40} best {best:7.1} us ({:5.2} GB/s)  median {med:7.1} us ({:5.2} GB/s)",
            SIZE as f64 / best / 1e3, SIZE as f64 / med / 1e3);
    }
}

fn main() {
    let key = [7u8; 16];
    let nonce = [9u8; 12];
    let iters: usize = std::env::args().nth(1).and_then(|v| v.parse().ok()).unwrap_or(100);
    let rounds: usize = std::env::args().nth(2).and_then(|v| v.parse().ok()).unwrap_or(15);
    let front = vec![3u8; FRONT];
    let epi = [0x0eu8; 16];
    let sources: Vec<Vec<u8>> = (0..POOL).map(|p| (0..SIZE).map(|i| (i * 31 + p) as u8).collect()).collect();
    let total = FRONT + SIZE + 16;
    let mut dst = vec![0u8; total + 16 + 16];
    let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).unwrap());

    // Reference: gather + seal in place.
    let mut reference = [0u8; 16];
    let gather = |dst: &mut Vec<u8>, src: &[u8]| -> [u8; 16] {
        dst[..FRONT].copy_from_slice(&front);
        dst[FRONT..FRONT + SIZE].copy_from_slice(src);
        dst[FRONT + SIZE..total].copy_from_slice(&epi);
        let t = k.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut dst[..total]).unwrap();
        let mut o = [0u8; 16]; o.copy_from_slice(t.as_ref()); o
    };
    reference.copy_from_slice(&gather(&mut dst, &sources[0]));
    let expect = dst[..total].to_vec();
    for _ in 0..rounds {
    per_op("A gather copy + seal in place", iters, |i| { black_box(gather(&mut dst, &sources[i])); });

    // D: two-piece out-of-place (data + epilogue only; no front): the API's limit.
    per_op("D seal_out_of_place_scatter (2 pieces)", iters, |i| {
        let (a, b) = dst.split_at_mut(SIZE);
        k.seal_out_of_place_scatter(Nonce::assume_unique_for_key(nonce), Aad::empty(), &sources[i], a, &epi, &mut b[..32]).unwrap();
        black_box(&dst);
    });

    // C: EVP streaming, one pass per piece.
    unsafe {
        use aws_lc_sys::*;
        let ctx = EVP_CIPHER_CTX_new();
        assert_eq!(1, EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), std::ptr::null_mut(), key.as_ptr(), std::ptr::null()));
        let run = |dst: &mut Vec<u8>, src: &[u8]| -> [u8; 16] {
            assert_eq!(1, EVP_EncryptInit_ex(ctx, std::ptr::null(), std::ptr::null_mut(), std::ptr::null(), nonce.as_ptr()));
            let mut outl = 0;
            let p = dst.as_mut_ptr();
            EVP_EncryptUpdate(ctx, p, &mut outl, front.as_ptr(), FRONT as i32);
            EVP_EncryptUpdate(ctx, p.add(FRONT), &mut outl, src.as_ptr(), SIZE as i32);
            EVP_EncryptUpdate(ctx, p.add(FRONT + SIZE), &mut outl, epi.as_ptr(), 16);
            EVP_EncryptFinal_ex(ctx, p.add(total), &mut outl);
            let mut tag = [0u8; 16];
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag.as_mut_ptr().cast());
            tag
        };
        let t = run(&mut dst, &sources[0]);
        assert_eq!(t, reference);
        assert_eq!(&dst[..total], &expect[..]);
        per_op("C EVP streaming (unsafe FFI)", iters, |i| { black_box(run(&mut dst, &sources[i])); });
    }

    // B: CTR out of place + GHASH through a seal whose AAD is the ciphertext.
    let mut j1 = [0u8; 16];
    j1[..12].copy_from_slice(&nonce);
    j1[15] = 2;
    per_op("B CTR (streaming) + GHASH via AAD", iters, |i| {
        let mut s = StreamingEncryptingKey::less_safe_ctr(
            UnboundCipherKey::new(&AES_128, &key).unwrap(),
            EncryptionContext::Iv128(FixedLength::from(j1)),
        ).unwrap();
        let (a, rest) = dst.split_at_mut(FRONT);
        let mut fb = [0u8; FRONT + 15];
        s.update(&front, &mut fb).unwrap();
        a.copy_from_slice(&fb[..FRONT]);
        s.update(&sources[i], &mut rest[..SIZE + 15]).unwrap();
        let mut eb = [0u8; 31];
        s.update(&epi, &mut eb).unwrap();
        rest[SIZE..SIZE + 16].copy_from_slice(&eb[..16]);
        let t = k.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(&dst[..total]), &mut []).unwrap();
        let _ = black_box(t);
    });
    }
    println!("1 MiB data + {FRONT} B front + 16 B epilogue, {rounds} interleaved rounds of {iters}:");
    report();
}
