//! Frame encode + decode against the raw primitives, measured interleaved
//! in one run so that the machine's drift hits both sides alike: for each
//! size, rounds of every case back to back, keeping each case's best
//! per-operation time. Prints a Markdown table of GB/s and ratios.
//! `cargo run --release -p msgr-bench --bin frame-ratios [ROUNDS]`
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use msgr_bench::{message, Roundtrip, MODES, SIZES};
use msgr_frames::crc::ceph_crc32c;
use msgr_frames::crypto::{RxCipher, TxCipher};

/// Best time per call of `f` over batches lasting about `slice`.
fn best_per_op(slice: Duration, best: &mut f64, mut f: impl FnMut()) {
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < slice {
        let t = Instant::now();
        f();
        let dt = t.elapsed().as_secs_f64();
        if dt < *best {
            *best = dt;
        }
        n += 1;
    }
    black_box(n);
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let slice = Duration::from_millis(15);
    let names = [
        "memcpy",
        "crc32c+memcpy",
        "2×crc32c+memcpy",
        "AES-GCM seal+open",
        "msgr2.0-crc",
        "msgr2.1-crc",
        "msgr2.0-secure",
        "msgr2.1-secure",
    ];
    println!("| size | {} | crc rev1 / crc32c+memcpy | crc rev1 / 2×crc32c+memcpy | secure rev1 / AES-GCM |", names.join(" | "));
    println!("|---|{}---|---|---|", "---|".repeat(names.len()));
    for size in SIZES {
        let src = vec![5u8; size];
        let mut dst = vec![0u8; size];
        let key = [1u8; 16];
        let mut tx = TxCipher::new(&key, [2; 12], true);
        let mut rx = RxCipher::new(&key, [2; 12], true);
        let mut sealed = vec![5u8; size + 16];
        let segments = message(size);
        let mut trips: Vec<Roundtrip> = MODES.iter().map(|m| Roundtrip::new(*m)).collect();
        let mut best = [f64::MAX; 8];
        for _ in 0..rounds {
            best_per_op(slice, &mut best[0], || dst.copy_from_slice(black_box(&src)));
            best_per_op(slice, &mut best[1], || {
                dst.copy_from_slice(black_box(&src));
                black_box(ceph_crc32c(!0, &dst));
            });
            best_per_op(slice, &mut best[2], || {
                black_box(ceph_crc32c(!0, black_box(&src)));
                dst.copy_from_slice(&src);
                black_box(ceph_crc32c(!0, &dst));
            });
            best_per_op(slice, &mut best[3], || {
                let tag = tx.seal(&mut sealed[..size]).expect("seal");
                sealed[size..].copy_from_slice(&tag);
                rx.open(&mut sealed).expect("open");
            });
            // MODES order: crc rev0, crc rev1, secure rev0, secure rev1.
            for (i, t) in trips.iter_mut().enumerate() {
                best_per_op(slice, &mut best[4 + i], || {
                    black_box(t.run(&segments));
                });
            }
        }
        let gbps: Vec<f64> = best.iter().map(|t| size as f64 / t / 1e9).collect();
        let cells: Vec<String> = gbps.iter().map(|g| format!("{g:.2}")).collect();
        println!(
            "| {} KiB | {} | {:.2} | {:.2} | {:.2} |",
            size / 1024,
            cells.join(" | "),
            gbps[5] / gbps[1],
            gbps[5] / gbps[2],
            gbps[7] / gbps[3]
        );
    }
}
