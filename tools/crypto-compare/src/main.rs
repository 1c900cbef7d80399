//! Raw throughput of the candidate crc32c and AES-128-GCM crates, single core.
//! `cargo run --release` from this folder; prints one line per candidate.
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 5] = [256, 1024, 4096, 65536, 1 << 20];

/// Runs `f` over `bytes` repeatedly for about `budget`, returns GB/s (1e9 B/s).
fn rate(bytes: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for _ in 0..8 {
            f();
        }
        n += 8;
    }
    (n as f64 * bytes as f64) / start.elapsed().as_secs_f64() / 1e9
}

fn main() {
    let budget = Duration::from_millis(
        std::env::var("BUDGET_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(700),
    );
    let key = [7u8; 16];
    let nonce = [9u8; 12];
    for &size in &SIZES {
        let data: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
        let mut dst = vec![0u8; size];
        println!("== {size} bytes (GB/s)");
        println!("memcpy            {:6.2}", rate(size, budget, || {
            dst.copy_from_slice(black_box(&data));
            black_box(&dst);
        }));
        println!("crc32c (crc32c)   {:6.2}", rate(size, budget, || {
            black_box(crc32c::crc32c_append(0, black_box(&data)));
        }));
        println!("crc32c (crc-fast) {:6.2}", rate(size, budget, || {
            black_box(crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, black_box(&data)));
        }));
        // The entry point msgr-encoding calls (no per-call parameter copy).
        println!("crc32c (crc-fast, crc32_iscsi) {:6.2}", rate(size, budget, || {
            black_box(crc_fast::crc32_iscsi(black_box(&data)));
        }));

        // ring: seal + open in place (one encrypt and one decrypt per iteration).
        {
            use ring::aead::*;
            let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).unwrap());
            let mut buf = data.clone();
            println!("aes-gcm ring      {:6.2}", rate(size, budget, || {
                let tag = k
                    .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
                    .unwrap();
                k.open_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), tag, &mut buf, 0..)
                    .unwrap();
            }));
        }
        {
            use aws_lc_rs::aead::*;
            let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).unwrap());
            let mut buf = data.clone();
            println!("aes-gcm aws-lc-rs {:6.2}", rate(size, budget, || {
                let tag = k
                    .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
                    .unwrap();
                let mut with_tag = std::mem::take(&mut buf);
                with_tag.extend_from_slice(tag.as_ref());
                let len = k
                    .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut with_tag)
                    .unwrap()
                    .len();
                with_tag.truncate(len);
                buf = with_tag;
            }));
        }
        {
            use aes_gcm::aead::{AeadInPlace, KeyInit};
            let k = aes_gcm::Aes128Gcm::new_from_slice(&key).unwrap();
            let mut buf = data.clone();
            println!("aes-gcm RustCrypto{:6.2}", rate(size, budget, || {
                let tag = k.encrypt_in_place_detached((&nonce).into(), b"", &mut buf).unwrap();
                k.decrypt_in_place_detached((&nonce).into(), b"", &mut buf, &tag).unwrap();
            }));
        }
    }
}
