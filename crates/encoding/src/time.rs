//! `utime_t` / `ceph_timespec` and `uuid_d`.

use bytes::BufMut;

use crate::{Decode, DecodeResult, Decoder, Encode};

/// `utime_t` (src/include/utime.h) and `struct ceph_timespec`: le32 seconds,
/// le32 nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UTime {
    /// Seconds since the Unix epoch (or of a duration).
    pub sec: u32,
    /// Nanoseconds past `sec`.
    pub nsec: u32,
}

impl UTime {
    /// The time `sec` seconds and `nsec` nanoseconds.
    pub fn new(sec: u32, nsec: u32) -> Self {
        UTime { sec, nsec }
    }

    /// From a duration since the Unix epoch (seconds past 2106 wrap, as in Ceph).
    pub fn from_duration(d: std::time::Duration) -> Self {
        UTime {
            sec: d.as_secs() as u32,
            nsec: d.subsec_nanos(),
        }
    }

    /// The time as a duration since the Unix epoch (nanoseconds past a second clamped).
    pub fn as_duration(&self) -> std::time::Duration {
        std::time::Duration::new(self.sec as u64, self.nsec.min(999_999_999))
    }
}

impl Encode for UTime {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.sec);
        out.put_u32_le(self.nsec);
    }
}
impl Decode for UTime {
    const MIN_ENCODED_LEN: usize = 8;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(UTime {
            sec: d.u32("utime.sec")?,
            nsec: d.u32("utime.nsec")?,
        })
    }
}

impl std::fmt::Display for UTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:09}", self.sec, self.nsec)
    }
}

/// `uuid_d` (src/include/uuid.h): 16 raw bytes in RFC 4122 order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid(pub [u8; 16]);

impl Encode for Uuid {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}
impl Decode for Uuid {
    const MIN_ENCODED_LEN: usize = 16;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(Uuid(d.array("uuid")?))
    }
}

impl std::fmt::Display for Uuid {
    /// The canonical 8-4-4-4-12 form Ceph prints (`ceph fsid`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_is_two_le32() {
        let t = UTime::new(0x01020304, 5);
        assert_eq!(&t.to_bytes()[..], &[4, 3, 2, 1, 5, 0, 0, 0]);
        assert_eq!(UTime::decode_exact(&t.to_bytes(), "t").unwrap(), t);
    }

    #[test]
    fn uuid_prints_canonically() {
        let u = Uuid([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ]);
        assert_eq!(u.to_string(), "12345678-9abc-def0-0123-456789abcdef");
    }
}
