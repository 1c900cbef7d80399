//! msgr2's crcs (frames_v2.cc): Ceph's crc32c ([`ceph_crc32c`], from
//! msgr-encoding), seeded with 0 for the preamble and 0xffff_ffff for
//! segments, and a fast path for the preamble's.

pub use msgr_encoding::crc32c::ceph_crc32c;
use msgr_encoding::crc32c::ceph_crc32c_const;

/// Seed of segment crcs (`bufferlist::crc32c(-1)`).
pub const SEGMENT_CRC_SEED: u32 = 0xffff_ffff;
/// Seed of the preamble crc.
pub const PREAMBLE_CRC_SEED: u32 = 0;

/// `ceph_crc32c(0, preamble[..28])`: the crc a preamble carries in its
/// last four bytes. The update is affine in the seed (see
/// [`ceph_crc32c`]), so the seed-0 crc is the standard CRC-32C (seed `!0`,
/// crc-fast's specialised entry point, cheaper than a `Digest` on 28
/// bytes) turned by a constant.
#[inline]
pub fn preamble_crc32c(preamble: &[u8; 32]) -> u32 {
    !crc_fast::crc32_iscsi(&preamble[..28]) ^ ZEROS28_FROM_ONES
}

/// `raw(!0, [0; 28])`: turns a seed-`!0` crc of 28 bytes into a seed-0 one.
const ZEROS28_FROM_ONES: u32 = ceph_crc32c_const(!0, &[0; 28]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_crcs_chain_like_a_bufferlist() {
        let whole = ceph_crc32c(SEGMENT_CRC_SEED, b"hello world");
        let part = ceph_crc32c(ceph_crc32c(SEGMENT_CRC_SEED, b"hello "), b"world");
        assert_eq!(whole, part);
        assert_eq!(ceph_crc32c(SEGMENT_CRC_SEED, b""), 0xffff_ffff);
    }

    #[test]
    fn the_preamble_fast_path_agrees_with_the_general_update() {
        let data: Vec<u8> = (0..32u32).map(|i| (i * 7 + 3) as u8).collect();
        let pre: [u8; 32] = data[..32].try_into().unwrap();
        assert_eq!(
            preamble_crc32c(&pre),
            ceph_crc32c(PREAMBLE_CRC_SEED, &pre[..28])
        );
        assert_eq!(preamble_crc32c(&pre), ceph_crc32c_const(0, &pre[..28]));
    }
}
