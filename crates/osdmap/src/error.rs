//! Why a map could not be read or applied. Every variant is the sender's
//! fault (the monitor's, or whoever handed us the bytes), and says what was
//! expected against what arrived.

use msgr_crush::CrushError;
use msgr_encoding::DecodeError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OsdMapError {
    /// The bytes do not describe a map.
    Decode(DecodeError),
    /// The CRUSH map inside it is malformed, or too costly to map with.
    Crush(CrushError),
    /// The crc the map carries is not the crc of its bytes.
    BadCrc {
        what: &'static str,
        carried: u32,
        computed: u32,
    },
    /// The pre-Firefly encoding, which no Ceph we speak to sends.
    ClassicEncoding { version: u8 },
    /// Two fields that must agree do not (a per-OSD vector of another
    /// length than max_osd, say).
    Inconsistent {
        what: &'static str,
        got: u64,
        expected: u64,
    },
    /// A count larger than we hold for a peer.
    TooLarge {
        what: &'static str,
        got: i64,
        max: i64,
    },
    /// An incremental that names an OSD the map (after the incremental's
    /// new max_osd) does not have.
    NoSuchOsd {
        what: &'static str,
        osd: i32,
        max_osd: i32,
    },
    /// An incremental for another cluster.
    WrongFsid,
    /// An incremental that does not follow the map's epoch.
    NotNext { epoch: u32, got: u32 },
}

impl From<DecodeError> for OsdMapError {
    fn from(e: DecodeError) -> Self {
        OsdMapError::Decode(e)
    }
}

impl From<CrushError> for OsdMapError {
    fn from(e: CrushError) -> Self {
        OsdMapError::Crush(e)
    }
}

impl std::fmt::Display for OsdMapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OsdMapError::Decode(e) => write!(f, "osdmap: {e}"),
            OsdMapError::Crush(e) => write!(f, "osdmap: {e}"),
            OsdMapError::BadCrc {
                what,
                carried,
                computed,
            } => write!(
                f,
                "osdmap: {what} carries crc {carried:#010x}, its bytes give {computed:#010x}"
            ),
            OsdMapError::ClassicEncoding { version } => write!(
                f,
                "osdmap: version {version} is the pre-Firefly encoding, which is not read"
            ),
            OsdMapError::Inconsistent {
                what,
                got,
                expected,
            } => write!(f, "osdmap: {what} is {got}, expected {expected}"),
            OsdMapError::TooLarge { what, got, max } => {
                write!(f, "osdmap: {what} is {got}, at most {max} is held")
            }
            OsdMapError::NoSuchOsd { what, osd, max_osd } => write!(
                f,
                "osdmap incremental: {what} names osd.{osd}, the map has {max_osd}"
            ),
            OsdMapError::WrongFsid => write!(f, "osdmap incremental: for another cluster (fsid)"),
            OsdMapError::NotNext { epoch, got } => write!(
                f,
                "osdmap incremental: epoch {got} does not follow the map's {epoch}"
            ),
        }
    }
}

impl std::error::Error for OsdMapError {}
