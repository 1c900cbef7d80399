//! Ceph's crc32c convention (src/common/sctp_crc32.c, `ceph_crc32c`): the raw
//! reflected CRC-32C register update, seeded with the caller's value, with no
//! inversion before or after. Encoded structures carry it (an OSDMap's
//! crc, msgr1's header and footer crcs, msgr2's frames), so it lives with
//! the encoding.

use crc_fast::{CrcAlgorithm, Digest};

/// `ceph_crc32c(seed, data)`.
///
/// Two implementations, each where it measured fastest (BENCHMARKS.md,
/// "Dependencies chosen by measurement" and "crc32c and AES-GCM without
/// AVX-512"):
/// - crc-fast folds with carry-less multiplies. With AVX-512 it outruns
///   the `crc32` instruction at every length; without it, its SSE folding
///   is slower than three interleaved `crc32` streams on anything over
///   256 bytes.
/// - Up to 256 bytes (headers, preambles, small fronts), crc-fast's own
///   short path (`crc32` instructions, one stream) is the faster on both.
///
/// So inputs over 256 bytes go to the `crc32c` crate where crc-fast would
/// not fold with AVX-512; everything else to crc-fast.
#[inline]
pub fn ceph_crc32c(seed: u32, data: &[u8]) -> u32 {
    if data.len() > FOLD_SHORT && !folds_wide() {
        return by_crc32_streams(seed, data);
    }
    by_folding(seed, data)
}

/// The longest input crc-fast takes its short path for.
const FOLD_SHORT: usize = 256;

/// Whether crc-fast folds with AVX-512 on this CPU (its fast path; the
/// features it checks for it). Elsewhere than x86-64, crc-fast as chosen.
#[inline]
fn folds_wide() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// `ceph_crc32c` by the `crc32c` crate, which inverts before and after:
/// `crc32c_append(!seed, d)` is `!raw(seed, d)`.
#[inline]
fn by_crc32_streams(seed: u32, data: &[u8]) -> u32 {
    !crc32c::crc32c_append(!seed, data)
}

/// `ceph_crc32c` by crc-fast.
///
/// The register update is affine in the seed: `raw(s, d) = raw(!0, d) ^
/// raw(s ^ !0, zeros(len d))`, and `raw(!0, d)` is the standard CRC-32C
/// without its final inversion. So seed `!0` (a bufferlist's
/// `crc32c(-1)`, the common one) takes crc-fast's specialised CRC-32C
/// entry point (no per-call parameter copy, which costs more than the crc
/// itself on short inputs); other seeds go through a `Digest`.
#[inline]
fn by_folding(seed: u32, data: &[u8]) -> u32 {
    if seed == u32::MAX {
        return !crc_fast::crc32_iscsi(data);
    }
    let mut digest = Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, seed as u64);
    digest.update(data);
    digest.get_state() as u32
}

/// `ceph_crc32c(seed, data)` a bit at a time (polynomial 0x82F63B78), for
/// constants: slow, but usable in a `const`.
pub const fn ceph_crc32c_const(seed: u32, mut data: &[u8]) -> u32 {
    let mut crc = seed;
    while let [byte, rest @ ..] = data {
        crc ^= *byte as u32;
        // Eight rounds, one per bit: `rounds` loses a bit each time.
        let mut rounds: u8 = 0xff;
        while rounds != 0 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
            rounds >>= 1;
        }
        data = rest;
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors of src/test/common/test_crc32c.cc (TEST(Crc32c, Small),
    /// PartialWord, Big).
    #[test]
    fn matches_ceph_test_vectors() {
        assert_eq!(ceph_crc32c(0, b"foo bar baz"), 4119623852);
        assert_eq!(ceph_crc32c(1234, b"foo bar baz"), 881700046);
        assert_eq!(ceph_crc32c(0, b"whiz bang boom"), 2360230088);
        assert_eq!(ceph_crc32c(5678, b"whiz bang boom"), 3743019208);
        assert_eq!(ceph_crc32c(0, &[1u8; 5]), 2715569182);
        assert_eq!(ceph_crc32c(0, &[1u8; 35]), 440531800);
        let big = vec![1u8; 4096000];
        assert_eq!(ceph_crc32c(0, &big), 31583199);
        assert_eq!(ceph_crc32c(1234, &big), 1400919119);
    }

    /// Both implementations, whichever this CPU picks, against the bitwise
    /// update: lengths either side of the short path's end and of the
    /// `crc32c` crate's interleaved blocks, unaligned starts, three seeds.
    #[test]
    fn both_implementations_agree_with_the_bitwise_update() {
        let data: Vec<u8> = (0..9000u32).map(|i| (i * 131 + 7) as u8).collect();
        for len in [
            0, 1, 7, 8, 255, 256, 257, 300, 767, 768, 769, 4096, 8191, 8999,
        ] {
            for start in [0, 1, 5] {
                let d = &data[start..start + len.min(data.len() - start)];
                for seed in [0, !0, 0x1234_5678] {
                    let want = ceph_crc32c_const(seed, d);
                    assert_eq!(
                        by_folding(seed, d),
                        want,
                        "folding, len {len}, seed {seed:#x}"
                    );
                    assert_eq!(
                        by_crc32_streams(seed, d),
                        want,
                        "streams, len {len}, seed {seed:#x}"
                    );
                    assert_eq!(ceph_crc32c(seed, d), want, "len {len}, seed {seed:#x}");
                }
            }
        }
    }

    #[test]
    fn chains_like_a_bufferlist() {
        let whole = ceph_crc32c(u32::MAX, b"hello world");
        let part = ceph_crc32c(ceph_crc32c(u32::MAX, b"hello "), b"world");
        assert_eq!(whole, part);
        assert_eq!(ceph_crc32c(u32::MAX, b""), 0xffff_ffff);
    }

    #[test]
    fn the_fast_path_agrees_with_the_bitwise_update() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in [0, 1, 7, 28, 41, 212, 300] {
            let d = &data[..len];
            assert_eq!(ceph_crc32c(!0, d), ceph_crc32c_const(!0, d), "len {len}");
            assert_eq!(ceph_crc32c(0, d), ceph_crc32c_const(0, d), "len {len}");
            assert_eq!(
                ceph_crc32c(1234, d),
                ceph_crc32c_const(1234, d),
                "len {len}"
            );
        }
    }
}
