//! What each op of a [`ReadOp`](super::ReadOp) returns, decoded from its
//! output (bounded by it): the [`Output`] trait and the types it reads.

use std::collections::BTreeMap;

use bytes::Bytes;
use msgr_encoding::{Decode, DecodeError, Decoder};
use msgr_messages::osd_types::OsdOp;
use msgr_messages::SnapSet;

use crate::request::{decode_omap_keys, decode_omap_vals, decode_stat, decode_xattrs, Stat};
use crate::snap::decode_snap_set;

/// Checksum algorithms (`CEPH_OSD_CHECKSUM_OP_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChecksumType {
    /// xxHash32, a 4-byte seed and sums.
    XxHash32 = 0,
    /// xxHash64, an 8-byte seed and sums.
    XxHash64 = 1,
    /// CRC-32C, a 4-byte seed and sums.
    Crc32c = 2,
}

impl ChecksumType {
    /// The byte width of the seed and of each sum.
    pub fn width(self) -> usize {
        match self {
            ChecksumType::XxHash64 => 8,
            _ => 4,
        }
    }
}

/// An op's output, decoded from what the OSD returned for it.
pub trait Output: Sized {
    /// Decodes `out`, the output of `op`; bounded by `out`.
    fn decode_output(op: &OsdOp, out: &Bytes) -> Result<Self, DecodeError>;
}

/// Ops whose output is nothing to read (writes, asserts): only the rval.
impl Output for () {
    fn decode_output(_: &OsdOp, _: &Bytes) -> Result<(), DecodeError> {
        Ok(())
    }
}

/// Raw output (READ, GETXATTR, OMAPGETHEADER).
impl Output for Bytes {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Bytes, DecodeError> {
        Ok(out.clone())
    }
}

impl Output for Stat {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Stat, DecodeError> {
        decode_stat(out)
    }
}

/// GETXATTRS, OMAPGETVALSBYKEYS: `map<string, bufferlist>`.
impl Output for BTreeMap<String, Bytes> {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        decode_xattrs(out)
    }
}

/// A page of omap keys (OMAPGETKEYS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OmapKeys {
    /// The keys, in order.
    pub keys: Vec<String>,
    /// Whether more follow the last (ask again after it).
    pub more: bool,
}

impl Output for OmapKeys {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        let (keys, more) = decode_omap_keys(out)?;
        Ok(OmapKeys { keys, more })
    }
}

/// A page of omap entries (OMAPGETVALS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OmapVals {
    /// The entries.
    pub vals: BTreeMap<String, Bytes>,
    /// Whether more follow the last (ask again after it).
    pub more: bool,
}

impl Output for OmapVals {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        let (vals, more) = decode_omap_vals(out)?;
        Ok(OmapVals { vals, more })
    }
}

/// SPARSE_READ's output: the extents that hold data, and their data
/// back to back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseRead {
    /// `(offset, length)` of each extent, in order.
    pub extents: Vec<(u64, u64)>,
    /// The extents' data, concatenated.
    pub data: Bytes,
}

impl SparseRead {
    /// The data of each extent, with its offset (`None` if the extents
    /// claim more than the data holds).
    pub fn pieces(&self) -> Option<Vec<(u64, Bytes)>> {
        let mut at = 0usize;
        self.extents
            .iter()
            .map(|&(off, len)| {
                let end = at.checked_add(usize::try_from(len).ok()?)?;
                let piece = self.data.get(at..end).map(|_| self.data.slice(at..end))?;
                at = end;
                Some((off, piece))
            })
            .collect()
    }
}

/// SPARSE_READ's output: `map<u64,u64>` extents, then the data as a
/// bufferlist.
pub fn decode_sparse_read(out: &[u8]) -> Result<SparseRead, DecodeError> {
    let mut d = Decoder::new(out);
    let extents = BTreeMap::<u64, u64>::decode(&mut d)?.into_iter().collect();
    let data = Bytes::decode(&mut d)?;
    Ok(SparseRead { extents, data })
}

impl Output for SparseRead {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        decode_sparse_read(out)
    }
}

/// CHECKSUM's output: one sum per chunk (each `ChecksumType::width`
/// bytes, little-endian).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksums(pub Vec<u64>);

/// CHECKSUM's output: `u32` count, then the sums raw, `width` bytes each.
pub fn decode_checksums(width: usize, out: &[u8]) -> Result<Checksums, DecodeError> {
    let mut d = Decoder::new(out);
    let n = d.length("checksum count", width.max(1))?;
    let mut sums = Vec::with_capacity(n);
    for _ in 0..n {
        sums.push(match width {
            8 => d.u64("checksum")?,
            _ => u64::from(d.u32("checksum")?),
        });
    }
    Ok(Checksums(sums))
}

impl Output for Checksums {
    fn decode_output(op: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        let width = match op.args[20] {
            1 => 8,
            _ => 4,
        };
        decode_checksums(width, out)
    }
}

impl Output for SnapSet {
    fn decode_output(_: &OsdOp, out: &Bytes) -> Result<Self, DecodeError> {
        decode_snap_set(out)
    }
}
