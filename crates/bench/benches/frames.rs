//! Frame encode + decode in each mode, beside the raw throughput of the
//! primitives they are made of: `cargo bench -p msgr-bench --features bench`.

use divan::counter::BytesCount;
use divan::Bencher;
use msgr_bench::{message, Roundtrip, MODES, SIZES};
use msgr_frames::crc::ceph_crc32c;
use msgr_frames::crypto::{RxCipher, TxCipher};

fn main() {
    divan::main();
}

#[divan::bench(args = SIZES)]
fn raw_memcpy(b: Bencher, size: usize) {
    let src = vec![5u8; size];
    let mut dst = vec![0u8; size];
    b.counter(BytesCount::new(size))
        .bench_local(|| dst.copy_from_slice(divan::black_box(&src)));
}

#[divan::bench(args = SIZES)]
fn raw_crc32c(b: Bencher, size: usize) {
    let src = vec![5u8; size];
    b.counter(BytesCount::new(size))
        .bench_local(|| ceph_crc32c(0xffff_ffff, divan::black_box(&src)));
}

/// The physical minimum of crc mode: checksum the payload once and copy it
/// once.
#[divan::bench(args = SIZES)]
fn raw_crc32c_and_memcpy(b: Bencher, size: usize) {
    let src = vec![5u8; size];
    let mut dst = vec![0u8; size];
    b.counter(BytesCount::new(size)).bench_local(|| {
        dst.copy_from_slice(divan::black_box(&src));
        ceph_crc32c(0xffff_ffff, &dst)
    });
}

/// The primitives a crc frame cannot avoid end to end: the sender's and
/// the receiver's checksum, and one copy of the bytes.
#[divan::bench(args = SIZES)]
fn raw_crc32c_twice_and_memcpy(b: Bencher, size: usize) {
    let src = vec![5u8; size];
    let mut dst = vec![0u8; size];
    b.counter(BytesCount::new(size)).bench_local(|| {
        let tx = ceph_crc32c(0xffff_ffff, divan::black_box(&src));
        dst.copy_from_slice(&src);
        (tx, ceph_crc32c(0xffff_ffff, &dst))
    });
}

/// The physical minimum of secure mode: encrypt and decrypt the payload in
/// place with AES-128-GCM (aws-lc-rs).
#[divan::bench(args = SIZES)]
fn raw_aes_gcm_seal_open(b: Bencher, size: usize) {
    let key = [1u8; 16];
    let mut tx = TxCipher::new(&key, [2; 12], true);
    let mut rx = RxCipher::new(&key, [2; 12], true);
    let mut buf = vec![5u8; size + 16];
    b.counter(BytesCount::new(size)).bench_local(|| {
        let tag = tx.seal(&mut buf[..size]).expect("seal");
        buf[size..].copy_from_slice(&tag);
        rx.open(&mut buf).expect("open");
    });
}

#[divan::bench(args = SIZES)]
fn crc_rev0(b: Bencher, size: usize) {
    frame(b, 0, size);
}

#[divan::bench(args = SIZES)]
fn crc_rev1(b: Bencher, size: usize) {
    frame(b, 1, size);
}

#[divan::bench(args = SIZES)]
fn secure_rev0(b: Bencher, size: usize) {
    frame(b, 2, size);
}

#[divan::bench(args = SIZES)]
fn secure_rev1(b: Bencher, size: usize) {
    frame(b, 3, size);
}

fn frame(b: Bencher, mode: usize, size: usize) {
    let mut rt = Roundtrip::new(MODES[mode]);
    let segments = message(size);
    b.counter(BytesCount::new(size))
        .bench_local(|| assert_eq!(rt.run(&segments), size));
}
