//! On-wire compression (msgr2 "Compression" and "Post-compression frame
//! format"; src/msg/async/compression_onwire.cc, frames_v2.cc asm_compress /
//! disassemble_decompress).
//!
//! After COMPRESSION_DONE agreed on an algorithm, a sender compresses a whole
//! frame when its logical length reaches the minimum size
//! (`ms_osd_compress_min_size`, 1024): each non-empty segment separately,
//! with the preamble carrying the compressed lengths and the
//! `FRAME_EARLY_DATA_COMPRESSED` flag. Compression comes before crc or
//! encryption; decompression after. There is no "did it shrink" check.
//!
//! Each segment is exactly what Ceph's compressor plugin produces
//! (src/compressor/*):
//! - snappy: a raw snappy block (varint length, elements), no framing.
//! - zlib: one variation byte (0 zlib, 1 ISA-L; ignored on decode), then a
//!   raw deflate stream (window bits -15), no zlib header.
//! - zstd: le32 uncompressed length, then one zstd frame.
//! - lz4: le32 count, count × (le32 original, le32 compressed), then the raw
//!   LZ4 blocks, each of which may refer back into earlier blocks' output
//!   (LZ4_compress_fast_continue).
//!
//! Every decompression is capped: the claimed or produced size may not exceed
//! the caller's limit, checked before allocating.

use std::fmt;

use crate::FrameError;

pub(crate) mod algorithm;
pub use algorithm::Algorithm;

/// `compressor_zlib_level`'s default.
const ZLIB_LEVEL: u8 = 5;
/// The zlib plugin's variation mark for plain zlib.
const ZLIB_MARK: u8 = 0;

fn decompress_error(algorithm: Algorithm, reason: impl fmt::Display) -> FrameError {
    FrameError::Decompress {
        algorithm,
        reason: reason.to_string(),
    }
}

fn check_cap(len: u64, max: usize) -> Result<(), FrameError> {
    if len > max as u64 {
        return Err(FrameError::DecompressedTooLarge {
            len,
            max: max as u64,
        });
    }
    Ok(())
}

/// Compresses one segment in `algorithm`'s Ceph plugin format, appending to
/// `out`.
pub fn compress(algorithm: Algorithm, input: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
    match algorithm {
        Algorithm::None => out.extend_from_slice(input),
        Algorithm::Snappy => {
            let error = |reason: &dyn fmt::Display| FrameError::Compress {
                algorithm,
                reason: reason.to_string(),
            };
            let start = out.len();
            let end = start
                .checked_add(snap::raw::max_compress_len(input.len()))
                .ok_or_else(|| error(&"output length overflows"))?;
            out.resize(end, 0);
            let n = snap::raw::Encoder::new()
                .compress(input, out.get_mut(start..).unwrap_or_default())
                .map_err(|e| error(&e))?;
            // `n` is at most `end - start`.
            out.truncate(start.saturating_add(n));
        }
        Algorithm::Zlib => {
            out.push(ZLIB_MARK);
            out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(input, ZLIB_LEVEL));
        }
        Algorithm::Zstd => {
            out.extend_from_slice(&(input.len() as u32).to_le_bytes());
            ruzstd::encoding::compress(
                input,
                &mut *out,
                ruzstd::encoding::CompressionLevel::Fastest,
            );
        }
        Algorithm::Lz4 => {
            // One block: a valid container for Ceph's decoder.
            let block = lz4_flex::block::compress(input);
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&(input.len() as u32).to_le_bytes());
            out.extend_from_slice(&(block.len() as u32).to_le_bytes());
            out.extend_from_slice(&block);
        }
    }
    Ok(())
}

/// Decompresses one segment produced by `algorithm`'s Ceph plugin, refusing
/// to produce more than `max` bytes.
pub fn decompress(algorithm: Algorithm, input: &[u8], max: usize) -> Result<Vec<u8>, FrameError> {
    match algorithm {
        Algorithm::None => {
            check_cap(input.len() as u64, max)?;
            Ok(input.to_vec())
        }
        Algorithm::Snappy => {
            let len =
                snap::raw::decompress_len(input).map_err(|e| decompress_error(algorithm, e))?;
            check_cap(len as u64, max)?;
            snap::raw::Decoder::new()
                .decompress_vec(input)
                .map_err(|e| decompress_error(algorithm, e))
        }
        Algorithm::Zlib => {
            let deflate = input
                .get(1..)
                .ok_or_else(|| decompress_error(algorithm, "missing variation byte"))?;
            miniz_oxide::inflate::decompress_to_vec_with_limit(deflate, max).map_err(|e| {
                match e.status {
                    miniz_oxide::inflate::TINFLStatus::HasMoreOutput => {
                        FrameError::DecompressedTooLarge {
                            len: (max as u64).saturating_add(1),
                            max: max as u64,
                        }
                    }
                    status => decompress_error(algorithm, format!("inflate: {status:?}")),
                }
            })
        }
        Algorithm::Zstd => {
            let (len, frame) = input
                .split_first_chunk::<4>()
                .ok_or_else(|| decompress_error(algorithm, "missing length prefix"))?;
            let len = u32::from_le_bytes(*len) as usize;
            check_cap(len as u64, max)?;
            let mut out = vec![0u8; len];
            let n = ruzstd::decoding::FrameDecoder::new()
                .decode_all(frame, &mut out)
                .map_err(|e| decompress_error(algorithm, e))?;
            if n != len {
                return Err(decompress_error(
                    algorithm,
                    format!("frame holds {n} bytes, prefix says {len}"),
                ));
            }
            Ok(out)
        }
        Algorithm::Lz4 => decompress_lz4(input, max),
    }
}

fn decompress_lz4(input: &[u8], max: usize) -> Result<Vec<u8>, FrameError> {
    let alg = Algorithm::Lz4;
    let mut d = msgr_encoding::Decoder::new(input);
    let count = d
        .length("lz4 block count", 8)
        .map_err(|e| decompress_error(alg, e))?;
    let mut blocks = Vec::with_capacity(count);
    // Fewer than 2^32 terms below 2^32 each: the sums fit, and checked
    // adds make that explicit.
    let overflow = || decompress_error(alg, "block lengths overflow");
    let (mut total_out, mut total_in) = (0u64, 0u64);
    for _ in 0..count {
        let original = d.u32("lz4 length").map_err(|e| decompress_error(alg, e))?;
        let compressed = d.u32("lz4 length").map_err(|e| decompress_error(alg, e))?;
        total_out = total_out
            .checked_add(original.into())
            .ok_or_else(overflow)?;
        total_in = total_in
            .checked_add(compressed.into())
            .ok_or_else(overflow)?;
        blocks.push((original as usize, compressed as usize));
    }
    check_cap(total_out, max)?;
    if total_in != d.remaining() as u64 {
        return Err(decompress_error(
            alg,
            format!("blocks claim {total_in} bytes, {} present", d.remaining()),
        ));
    }
    let mut out = vec![0u8; total_out as usize];
    // The blocks fill `out` exactly and take the rest of `input` (both
    // totals were checked above), so the ranges below are in bounds.
    let mut at_out = 0usize;
    for (original, compressed) in blocks {
        let block = d
            .take(compressed, "lz4 block")
            .map_err(|e| decompress_error(alg, e))?;
        // Earlier output is this block's dictionary (LZ4_decompress_safe_continue).
        let (dict, rest) = out.split_at_mut_checked(at_out).ok_or_else(overflow)?;
        let dst = rest.get_mut(..original).ok_or_else(overflow)?;
        let n = lz4_flex::block::decompress_into_with_dict(block, dst, dict)
            .map_err(|e| decompress_error(alg, e))?;
        if n != original {
            return Err(decompress_error(
                alg,
                format!("block holds {n} bytes, header says {original}"),
            ));
        }
        at_out = at_out.checked_add(original).ok_or_else(overflow)?;
    }
    Ok(out)
}

/// What a sender does after COMPRESSION_DONE (compression_onwire::TxHandler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxCompression {
    /// The algorithm COMPRESSION_DONE chose.
    pub algorithm: Algorithm,
    /// Frames whose segments add up to less are sent uncompressed.
    pub min_frame_len: usize,
}

impl TxCompression {
    /// `ms_osd_compress_min_size`'s default.
    pub const DEFAULT_MIN_FRAME_LEN: usize = 1024;

    /// Compression with `algorithm` for frames of at least
    /// [`TxCompression::DEFAULT_MIN_FRAME_LEN`] bytes.
    pub fn new(algorithm: Algorithm) -> Self {
        TxCompression {
            algorithm,
            min_frame_len: Self::DEFAULT_MIN_FRAME_LEN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn every_algorithm_roundtrips() {
        for alg in Algorithm::ALL {
            for len in [1, 100, 4096, 200_000] {
                let input = sample(len);
                let mut c = Vec::new();
                compress(alg, &input, &mut c).unwrap();
                assert_eq!(decompress(alg, &c, len).unwrap(), input, "{alg} {len}");
            }
        }
    }

    #[test]
    fn formats_carry_cephs_headers() {
        let input = vec![7u8; 3000];
        let mut z = Vec::new();
        compress(Algorithm::Zlib, &input, &mut z).unwrap();
        assert_eq!(z[0], 0, "zlib variation mark");
        // ISA-L mark is accepted too.
        z[0] = 1;
        assert_eq!(decompress(Algorithm::Zlib, &z, 3000).unwrap(), input);

        let mut s = Vec::new();
        compress(Algorithm::Zstd, &input, &mut s).unwrap();
        assert_eq!(&s[..4], &3000u32.to_le_bytes());
        assert_eq!(&s[4..8], &[0x28, 0xb5, 0x2f, 0xfd], "zstd magic");

        let mut l = Vec::new();
        compress(Algorithm::Lz4, &input, &mut l).unwrap();
        assert_eq!(&l[..8], &[1, 0, 0, 0, 0xb8, 0x0b, 0, 0]);
    }

    #[test]
    fn lz4_blocks_may_refer_to_earlier_blocks() {
        // Two blocks where the second is a back-reference into the first:
        // literal "abcdefgh" then a match of offset 8, length 8.
        let first = lz4_flex::block::compress(b"abcdefgh");
        // Token: 0 literals, match len 8 (4 + 4); offset 8; then the
        // mandatory last-literals sequence of 0 bytes is not allowed to be
        // a match, so build: [0x04] offset [8,0], then a final literal token.
        let second = [0x04u8, 8, 0, 0x10, b'z'];
        let mut wire = Vec::new();
        wire.extend_from_slice(&2u32.to_le_bytes());
        wire.extend_from_slice(&8u32.to_le_bytes());
        wire.extend_from_slice(&(first.len() as u32).to_le_bytes());
        wire.extend_from_slice(&9u32.to_le_bytes());
        wire.extend_from_slice(&(second.len() as u32).to_le_bytes());
        wire.extend_from_slice(&first);
        wire.extend_from_slice(&second);
        assert_eq!(
            decompress(Algorithm::Lz4, &wire, 100).unwrap(),
            b"abcdefghabcdefghz"
        );
    }

    #[test]
    fn bombs_are_refused_before_allocating() {
        for alg in Algorithm::ALL {
            let input = vec![0u8; 1 << 20];
            let mut c = Vec::new();
            compress(alg, &input, &mut c).unwrap();
            assert!(
                matches!(
                    decompress(alg, &c, 4096),
                    Err(FrameError::DecompressedTooLarge { .. })
                ),
                "{alg}"
            );
        }
        // Claims of 4 GiB with no data behind them.
        let zstd = [0xff, 0xff, 0xff, 0xff, 0x28, 0xb5, 0x2f, 0xfd];
        assert!(matches!(
            decompress(Algorithm::Zstd, &zstd, 1 << 20),
            Err(FrameError::DecompressedTooLarge { .. })
        ));
        let lz4 = [1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0];
        assert!(matches!(
            decompress(Algorithm::Lz4, &lz4, 1 << 20),
            Err(FrameError::DecompressedTooLarge { .. })
        ));
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let junk = [0x55u8; 64];
        for alg in Algorithm::ALL {
            assert!(decompress(alg, &junk, 1 << 20).is_err(), "{alg}");
            assert!(decompress(alg, &[], 1 << 20).is_err(), "{alg} empty");
        }
    }

    #[test]
    fn wire_numbers() {
        assert_eq!(Algorithm::from_wire(4), Some(Algorithm::Lz4));
        assert_eq!(Algorithm::from_wire(5), None);
        assert_eq!(Algorithm::from_name("zstd"), Some(Algorithm::Zstd));
    }
}
