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
#[inline]
pub fn ceph_crc32c(seed: u32, data: &[u8]) -> u32 {
    let mut digest = Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, seed as u64);
    digest.update(data);
    digest.get_state() as u32
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
}
