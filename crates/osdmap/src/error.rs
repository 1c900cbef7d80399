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
    /// A map that encodes another epoch than the one it was sent as (its
    /// key in MOSDMap, or the epoch of the incremental carrying it).
    EpochMismatch {
        what: &'static str,
        sent_as: u32,
        encoded: u32,
    },
    /// A message that would take the map further past its epoch than a
    /// map is followed ([`crate::MAX_EPOCH_JUMP`]).
    EpochJump { epoch: u32, got: u32, max: u32 },
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
            OsdMapError::EpochMismatch {
                what,
                sent_as,
                encoded,
            } => write!(
                f,
                "osdmap: {what} sent as epoch {sent_as} encodes epoch {encoded}"
            ),
            OsdMapError::EpochJump { epoch, got, max } => write!(
                f,
                "osdmap: a map of epoch {got} sent to a client at epoch {epoch}, more than \
                 {max} epochs ahead: not followed (the sender's epoch is bogus, or this \
                 client is that far behind and must be started again)"
            ),
        }
    }
}

impl std::error::Error for OsdMapError {}
