//! `crush_ln`: 2^44 · log2(x + 1) in fixed point, from Ceph's tables
//! (mapper.c; the tables are Ceph's exactly, whatever their comments say:
//! docs/research/crush-mapper.md §6).

use crate::ln_table::{LL_TBL, RH_LH_TBL};

/// `crush_ln(xin)` for `xin` up to 0xffff (straw2 passes 16 bits of a
/// hash).
pub fn crush_ln(xin: u32) -> u64 {
    let mut x = (xin & 0xffff) + 1;
    // Normalise to [0x8000, 0x10000].
    let mut iexpon: u32 = 15;
    if x & 0x18000 == 0 {
        let bits = (x & 0x1ffff).leading_zeros() - 16;
        x <<= bits;
        iexpon = 15 - bits;
    }
    let index1 = ((x >> 8) << 1) as usize;
    // x in [0x8000, 0x10000]: index1 in [256, 512], both reads in range.
    let at = |t: &[i64], i: usize| t.get(i).map_or(0, |v| *v as u64);
    let rh = at(&RH_LH_TBL, index1 - 256);
    let lh = at(&RH_LH_TBL, index1 + 1 - 256);
    let xl64 = u64::from(x).wrapping_mul(rh) >> 48;
    let result = u64::from(iexpon) << 44;
    let ll = at(&LL_TBL, (xl64 & 0xff) as usize);
    result + ((lh + ll) >> 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(crush_ln(0), 0);
        assert_eq!(crush_ln(1), 0x1000_0000_0000);
        assert_eq!(crush_ln(0x7fff), 0xf000_0000_0000);
        assert_eq!(crush_ln(0xffff), 0xffff_f000_0000);
        assert_eq!((0..=0xffff).map(crush_ln).max(), Some(0xffff_fd61_ad10));
    }
}
