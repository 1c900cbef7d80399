//! Why a map could not be read or applied. Every variant is the sender's
//! fault (the monitor's, or whoever handed us the bytes), and says what was
//! expected against what arrived.

use msgr_crush::CrushError;
use msgr_encoding::DecodeError;

/// Why a map or incremental could not be read or applied (the sender's
/// fault, always).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OsdMapError {
    /// The bytes do not describe a map.
    Decode(DecodeError),
    /// The CRUSH map inside it is malformed, or too costly to map with.
    Crush(CrushError),
    /// The crc the map carries is not the crc of its bytes.
    BadCrc {
        /// Which crc: the full map's or the incremental's.
        what: &'static str,
        /// The crc the map carries.
        carried: u32,
        /// The crc of its bytes.
        computed: u32,
    },
    /// The pre-Firefly encoding, which no Ceph we speak to sends.
    ClassicEncoding {
        /// The encoding version the map has.
        version: u8,
    },
    /// Two fields that must agree do not (a per-OSD vector of another
    /// length than max_osd, say).
    Inconsistent {
        /// Which fields disagree.
        what: &'static str,
        /// The value that arrived.
        got: u64,
        /// The value the other field implies.
        expected: u64,
    },
    /// A count larger than we hold for a peer.
    TooLarge {
        /// What was counted.
        what: &'static str,
        /// The count that arrived.
        got: i64,
        /// The most we hold.
        max: i64,
    },
    /// An incremental that names an OSD the map (after the incremental's
    /// new max_osd) does not have.
    NoSuchOsd {
        /// Which change names it.
        what: &'static str,
        /// The OSD id.
        osd: i32,
        /// The map's max_osd (ids run below it).
        max_osd: i32,
    },
    /// An incremental for another cluster.
    WrongFsid,
    /// An incremental that does not follow the map's epoch.
    NotNext {
        /// The map's epoch.
        epoch: u32,
        /// The incremental's epoch (it must be the map's plus one).
        got: u32,
    },
    /// A map that encodes another epoch than the one it was sent as (its
    /// key in MOSDMap, or the epoch of the incremental carrying it).
    EpochMismatch {
        /// What carried the map.
        what: &'static str,
        /// The epoch it was sent as.
        sent_as: u32,
        /// The epoch it encodes.
        encoded: u32,
    },
    /// A message that would take the map further past its epoch than a
    /// map is followed ([`crate::MAX_EPOCH_JUMP`]).
    EpochJump {
        /// The map's epoch.
        epoch: u32,
        /// The epoch the message would take it to.
        got: u32,
        /// The furthest past its epoch a map is followed.
        max: u32,
    },
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
