//! The compression algorithms msgr2 names on the wire.

use std::fmt;

/// `Compressor::CompressionAlgorithm` (src/compressor/Compressor.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// No compression.
    None = 0,
    /// Snappy.
    Snappy = 1,
    /// zlib (deflate).
    Zlib = 2,
    /// Zstandard.
    Zstd = 3,
    /// LZ4.
    Lz4 = 4,
}

impl Algorithm {
    /// The algorithms this implementation can compress and decompress.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Snappy,
        Algorithm::Zlib,
        Algorithm::Zstd,
        Algorithm::Lz4,
    ];

    /// From the number on the wire; `None` for unknown (e.g. brotli, 5).
    pub fn from_wire(v: u32) -> Option<Algorithm> {
        Some(match v {
            0 => Algorithm::None,
            1 => Algorithm::Snappy,
            2 => Algorithm::Zlib,
            3 => Algorithm::Zstd,
            4 => Algorithm::Lz4,
            _ => return None,
        })
    }

    /// The name Ceph's options spell it with (`ms_osd_compression_algorithm`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::None => "none",
            Algorithm::Snappy => "snappy",
            Algorithm::Zlib => "zlib",
            Algorithm::Zstd => "zstd",
            Algorithm::Lz4 => "lz4",
        }
    }

    /// The algorithm Ceph's options name `name`, if any.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        [Algorithm::None]
            .into_iter()
            .chain(Algorithm::ALL)
            .find(|a| a.name() == name)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
