//! Each op's encoding against the bytes librados's `ObjectOperation`
//! produces (src/osdc/Objecter.h: the `ceph_osd_op` union member it fills,
//! its input data), and the output decoders against Ceph's encodings.

use super::*;

fn u64s(args: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(args[at..at + 8].try_into().unwrap())
}

fn u32s(args: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(args[at..at + 4].try_into().unwrap())
}
