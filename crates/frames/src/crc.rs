//! Ceph's crc32c convention (src/common/sctp_crc32.c, `ceph_crc32c`): the raw
//! reflected CRC-32C register update, seeded with the caller's value, with no
//! inversion before or after. msgr2 seeds the preamble crc with 0 and segment
//! crcs with 0xffff_ffff (frames_v2.cc).

use crc_fast::{CrcAlgorithm, Digest};

/// Seed of segment crcs (`bufferlist::crc32c(-1)`).
pub const SEGMENT_CRC_SEED: u32 = 0xffff_ffff;
/// Seed of the preamble crc.
pub const PREAMBLE_CRC_SEED: u32 = 0;

/// `ceph_crc32c(seed, data)`.
///
/// The register update is affine in the seed: `raw(s, d) = raw(!0, d) ^
/// raw(s ^ !0, zeros(len d))`, and `raw(!0, d)` is the standard CRC-32C
/// without its final inversion. So the common seeds take crc-fast's
/// specialised CRC-32C entry point (no per-call parameter copy, which costs
/// more than the crc itself on a 28-byte preamble); other seeds go through
/// a `Digest`.
#[inline]
pub fn ceph_crc32c(seed: u32, data: &[u8]) -> u32 {
    if seed == SEGMENT_CRC_SEED {
        return !crc_fast::crc32_iscsi(data);
    }
    let mut digest = Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, seed as u64);
    digest.update(data);
    digest.get_state() as u32
}

/// `ceph_crc32c(0, preamble[..28])`: the crc a preamble carries in its
/// last four bytes.
#[inline]
pub fn preamble_crc32c(preamble: &[u8; 32]) -> u32 {
    !crc_fast::crc32_iscsi(&preamble[..28]) ^ ZEROS28_FROM_ONES
}

/// `raw(!0, [0; 28])`: turns a seed-`!0` crc of 28 bytes into a seed-0 one.
const ZEROS28_FROM_ONES: u32 = raw_bitwise(!0, &[0; 28]);

/// Bit-at-a-time reflected CRC-32C register update (polynomial 0x82F63B78),
/// for constants.
const fn raw_bitwise(seed: u32, mut data: &[u8]) -> u32 {
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

    #[test]
    fn chains_like_a_bufferlist() {
        let whole = ceph_crc32c(SEGMENT_CRC_SEED, b"hello world");
        let part = ceph_crc32c(ceph_crc32c(SEGMENT_CRC_SEED, b"hello "), b"world");
        assert_eq!(whole, part);
        assert_eq!(ceph_crc32c(SEGMENT_CRC_SEED, b""), 0xffff_ffff);
    }

    #[test]
    fn fast_paths_agree_with_the_general_update() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in [0, 1, 7, 28, 41, 212, 300] {
            let d = &data[..len];
            assert_eq!(ceph_crc32c(!0, d), raw_bitwise(!0, d), "len {len}");
            assert_eq!(ceph_crc32c(0, d), raw_bitwise(0, d), "len {len}");
            assert_eq!(ceph_crc32c(1234, d), raw_bitwise(1234, d), "len {len}");
        }
        let pre: [u8; 32] = data[..32].try_into().unwrap();
        assert_eq!(preamble_crc32c(&pre), raw_bitwise(0, &pre[..28]));
    }
}
