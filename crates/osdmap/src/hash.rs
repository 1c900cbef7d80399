//! The hashes that place an object: `ceph_str_hash` (src/common/ceph_hash.cc)
//! and `ceph_stable_mod` (src/include/rados.h); docs/research/osdmap.md §6.1–6.2.

/// `CEPH_STR_HASH_LINUX`.
pub const STR_HASH_LINUX: u8 = 1;
/// `CEPH_STR_HASH_RJENKINS`, what pools are created with.
pub const STR_HASH_RJENKINS: u8 = 2;

use msgr_crush::jenkins_mix as mix;

/// Up to four bytes little-endian, as the hash's tail `switch` adds them.
fn le(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .rev()
        .fold(0u32, |acc, &b| (acc << 8) | u32::from(b))
}

/// `ceph_str_hash_rjenkins`.
pub fn str_hash_rjenkins(s: &[u8]) -> u32 {
    let mut a: u32 = 0x9e37_79b9;
    let mut b = a;
    let mut c: u32 = 0;
    let mut chunks = s.chunks_exact(12);
    for k in &mut chunks {
        let (ka, rest) = k.split_at(4);
        let (kb, kc) = rest.split_at(4);
        a = a.wrapping_add(le(ka));
        b = b.wrapping_add(le(kb));
        c = c.wrapping_add(le(kc));
        mix(&mut a, &mut b, &mut c);
    }
    // The total length goes into c's low byte; the tail's bytes 8..11
    // land above it ("the first byte of c is reserved for the length").
    c = c.wrapping_add(s.len() as u32);
    let tail = chunks.remainder();
    let (ta, rest) = tail.split_at(tail.len().min(4));
    let (tb, tc) = rest.split_at(rest.len().min(4));
    a = a.wrapping_add(le(ta));
    b = b.wrapping_add(le(tb));
    c = c.wrapping_add(le(tc) << 8);
    mix(&mut a, &mut b, &mut c);
    c
}

/// `ceph_str_hash_linux` (the dcache hash, its low 32 bits).
pub fn str_hash_linux(s: &[u8]) -> u32 {
    s.iter().fold(0u32, |hash, &c| {
        let c = u32::from(c);
        hash.wrapping_add(c << 4)
            .wrapping_add(c >> 4)
            .wrapping_mul(11)
    })
}

/// `ceph_str_hash(type, s)`: an unknown type hashes everything to
/// `(unsigned)-1`, as Ceph does.
pub fn str_hash(kind: u8, s: &[u8]) -> u32 {
    match kind {
        STR_HASH_LINUX => str_hash_linux(s),
        STR_HASH_RJENKINS => str_hash_rjenkins(s),
        _ => u32::MAX,
    }
}

/// `ceph_stable_mod(x, b, bmask)`: `x` reduced to one of `b` buckets so
/// that growing `b` moves as few values as possible.
pub fn stable_mod(x: u32, b: u32, bmask: u32) -> u32 {
    if x & bmask < b {
        x & bmask
    } else {
        x & (bmask >> 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/research/osdmap.md §6.11: values `ceph osd map` printed on
    /// Ceph 16 and 20 (the raw pg's seed is the hash).
    #[test]
    fn rjenkins_matches_ceph() {
        for (s, h) in [
            (&b"obj"[..], 0xaabc_5e21),
            (b"ns1\x1fobj", 0x37ed_a02a),
            (b"foo", 0x7fc1_f406),
            (b"ns\x1ffoo", 0xac17_f0b6),
            (b"a", 0x29ee_c818),
            (b"obj with space", 0x7082_3215),
            (b"abcdefghijkl", 0x0b1b_3ea5),
            (b"abcdefghijklm", 0x3122_b031),
            (b"", 0xbd49_d10d),
        ] {
            assert_eq!(str_hash_rjenkins(s), h, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn linux_hash_and_unknown_kind() {
        assert_eq!(str_hash(STR_HASH_LINUX, b"obj"), 0x0027_621a);
        assert_eq!(str_hash(9, b"obj"), u32::MAX);
    }

    #[test]
    fn stable_mod_folds_into_the_lower_half() {
        // pg_num 12, mask 15: 13 is past 12, so it folds to 13 & 7 = 5.
        assert_eq!(stable_mod(13, 12, 15), 5);
        assert_eq!(stable_mod(11, 12, 15), 11);
        assert_eq!(stable_mod(0xaabc_5e21, 8, 7), 1);
    }
}
