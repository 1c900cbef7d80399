//! Runs one frame roundtrip case in a loop, for profilers:
//! `frame-profile MODE SIZE ITERS` (MODE 0..3: crc rev0, crc rev1, secure
//! rev0, secure rev1).
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use msgr_bench::{message, Roundtrip, MODES};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("number"))
        .collect();
    let (mode, size, iters) = (args[0], args[1], args[2]);
    let mut rt = Roundtrip::new(MODES[mode]);
    let segments = message(size);
    for _ in 0..iters {
        std::hint::black_box(rt.run(&segments));
    }
}
