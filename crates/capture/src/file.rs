//! pcap and pcapng files: the packets they hold and each packet's link type.
//!
//! pcap: a 24-byte header (magic a1b2c3d4 for microseconds or a1b23c4d for
//! nanoseconds, in either byte order; link type at offset 20), then records
//! of `ts_sec, ts_frac, incl_len, orig_len` and the bytes.
//! pcapng: blocks of `type, total_len, body, total_len`; a section header
//! (0x0a0d0d0a) fixes the byte order, interface descriptions (1) give link
//! types, enhanced (6) and simple (3) packet blocks carry packets.

use std::fmt;

/// One captured packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPacket<'a> {
    /// LINKTYPE_* of the interface it was captured on.
    pub linktype: u32,
    pub data: &'a [u8],
    /// Its length on the wire; more than `data.len()` when the snapshot
    /// length cut it.
    pub orig_len: u32,
}

/// Why a capture file could not be read (further).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureError {
    /// Neither a pcap nor a pcapng file.
    UnknownFormat,
    /// The file ends inside a header or a record: it was cut short.
    Truncated { offset: usize },
    /// A block or record claims an impossible length.
    BadLength { offset: usize, len: u64 },
    /// A pcapng packet names an interface that was never described.
    UnknownInterface { offset: usize, id: u32 },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::UnknownFormat => f.write_str("not a pcap or pcapng file"),
            CaptureError::Truncated { offset } => {
                write!(f, "capture file is truncated at byte {offset}")
            }
            CaptureError::BadLength { offset, len } => {
                write!(f, "bad record length {len} at byte {offset}")
            }
            CaptureError::UnknownInterface { offset, id } => {
                write!(f, "packet at byte {offset} names unknown interface {id}")
            }
        }
    }
}

impl std::error::Error for CaptureError {}

/// The packets of a capture, and the error that stopped reading early, if
/// any (packets before it are still returned).
pub fn read_packets(file: &[u8]) -> (Vec<RawPacket<'_>>, Option<CaptureError>) {
    if file.starts_with(&SECTION_HEADER) {
        read_pcapng(file)
    } else {
        read_pcap(file)
    }
}

/// The pcapng section header block's type, in either byte order.
const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

#[derive(Clone, Copy)]
struct Endian {
    big: bool,
}

impl Endian {
    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let a = *b.get(at..)?.first_chunk::<2>()?;
        Some(if self.big {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        })
    }
    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let a = *b.get(at..)?.first_chunk::<4>()?;
        Some(if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }
}

fn read_pcap(file: &[u8]) -> (Vec<RawPacket<'_>>, Option<CaptureError>) {
    let mut out = Vec::new();
    let Some(&magic) = file.first_chunk::<4>() else {
        return (out, Some(CaptureError::UnknownFormat));
    };
    let e = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => Endian { big: false },
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => Endian { big: true },
        _ => return (out, Some(CaptureError::UnknownFormat)),
    };
    let linktype = match e.u32(file, 20) {
        Some(l) => l & 0x0fff_ffff,
        None => return (out, Some(CaptureError::Truncated { offset: file.len() })),
    };
    let mut at = 24;
    // Each record: a 16-byte header, then `incl` bytes. Its end is checked
    // arithmetic: a hostile `incl` must not wrap it (32-bit targets).
    while let Some(record) = file.get(at..).filter(|r| !r.is_empty()) {
        let (Some(incl), Some(orig)) = (e.u32(record, 8), e.u32(record, 12)) else {
            return (out, Some(CaptureError::Truncated { offset: at }));
        };
        let (Some(data), Some(next)) = (
            record.get(16..).and_then(|r| r.get(..incl as usize)),
            at.checked_add(16)
                .and_then(|start| start.checked_add(incl as usize)),
        ) else {
            return (out, Some(CaptureError::Truncated { offset: at }));
        };
        out.push(RawPacket {
            linktype,
            data,
            orig_len: orig.max(incl),
        });
        at = next;
    }
    (out, None)
}

fn read_pcapng(file: &[u8]) -> (Vec<RawPacket<'_>>, Option<CaptureError>) {
    let mut out = Vec::new();
    let mut e = Endian { big: false };
    let mut interfaces: Vec<(u32, u32)> = Vec::new(); // (linktype, snaplen)
    let mut at = 0;
    while let Some(rest) = file.get(at..).filter(|r| !r.is_empty()) {
        // A section header sets the byte order before its length is read.
        if rest.starts_with(&SECTION_HEADER) {
            match rest.get(8..12) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => e = Endian { big: false },
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => e = Endian { big: true },
                Some(_) => return (out, Some(CaptureError::UnknownFormat)),
                None => return (out, Some(CaptureError::Truncated { offset: at })),
            }
            interfaces.clear();
        }
        let (Some(kind), Some(len)) = (e.u32(rest, 0), e.u32(rest, 4)) else {
            return (out, Some(CaptureError::Truncated { offset: at }));
        };
        let len = len as usize;
        if len < 12 || len % 4 != 0 {
            return (
                out,
                Some(CaptureError::BadLength {
                    offset: at,
                    len: len as u64,
                }),
            );
        }
        // The body: the block less its 8-byte head and 4-byte trailing
        // length (`len >= 12`, so it exists once the block does).
        let (Some(body), Some(next)) = (
            rest.get(..len)
                .and_then(|block| block.get(8..)?.split_last_chunk::<4>())
                .map(|(body, _)| body),
            at.checked_add(len),
        ) else {
            return (out, Some(CaptureError::Truncated { offset: at }));
        };
        match kind {
            1 => {
                let (Some(lt), Some(snap)) = (e.u16(body, 0), e.u32(body, 4)) else {
                    return (out, Some(CaptureError::Truncated { offset: at }));
                };
                interfaces.push((lt as u32, snap));
            }
            6 => {
                let (Some(id), Some(cap), Some(orig)) =
                    (e.u32(body, 0), e.u32(body, 12), e.u32(body, 16))
                else {
                    return (out, Some(CaptureError::Truncated { offset: at }));
                };
                let Some(&(linktype, _)) = interfaces.get(id as usize) else {
                    return (out, Some(CaptureError::UnknownInterface { offset: at, id }));
                };
                let Some(data) = body.get(20..).and_then(|d| d.get(..cap as usize)) else {
                    return (
                        out,
                        Some(CaptureError::BadLength {
                            offset: at,
                            len: cap as u64,
                        }),
                    );
                };
                out.push(RawPacket {
                    linktype,
                    data,
                    orig_len: orig.max(cap),
                });
            }
            3 => {
                let Some(&(linktype, snap)) = interfaces.first() else {
                    return (
                        out,
                        Some(CaptureError::UnknownInterface { offset: at, id: 0 }),
                    );
                };
                let Some(orig) = e.u32(body, 0) else {
                    return (out, Some(CaptureError::Truncated { offset: at }));
                };
                let cap = match snap {
                    0 => orig,
                    s => orig.min(s),
                } as usize;
                let Some(data) = body.get(4..).and_then(|d| d.get(..cap)) else {
                    return (
                        out,
                        Some(CaptureError::BadLength {
                            offset: at,
                            len: cap as u64,
                        }),
                    );
                };
                out.push(RawPacket {
                    linktype,
                    data,
                    orig_len: orig,
                });
            }
            _ => {}
        }
        at = next;
    }
    (out, None)
}

/// A pcap file (microsecond timestamps, all zero) holding `packets` of link
/// type `linktype`: for tests and tools that make captures.
pub fn write_pcap(linktype: u32, packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    for p in packets {
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap(packets: &[&[u8]]) -> Vec<u8> {
        write_pcap(1, &packets.iter().map(|p| p.to_vec()).collect::<Vec<_>>())
    }

    #[test]
    fn pcap_records_and_truncation() {
        let f = pcap(&[b"abc", b"defg"]);
        let (p, err) = read_packets(&f);
        assert_eq!(err, None);
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].data, b"defg");
        assert_eq!(p[0].linktype, 1);
        let (p, err) = read_packets(&f[..f.len() - 2]);
        assert_eq!(p.len(), 1);
        assert!(matches!(err, Some(CaptureError::Truncated { .. })));
    }

    #[test]
    fn pcapng_blocks() {
        let mut f = Vec::new();
        let block = |f: &mut Vec<u8>, kind: u32, body: &[u8]| {
            let len = 12 + body.len().div_ceil(4) * 4;
            f.extend_from_slice(&kind.to_le_bytes());
            f.extend_from_slice(&(len as u32).to_le_bytes());
            f.extend_from_slice(body);
            f.resize(f.len() + (len - 12 - body.len()), 0);
            f.extend_from_slice(&(len as u32).to_le_bytes());
        };
        let mut shb = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        block(&mut f, 0x0a0d0d0a, &shb);
        let mut idb = 113u16.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&0u32.to_le_bytes());
        block(&mut f, 1, &idb);
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&[0; 8]);
        epb.extend_from_slice(&5u32.to_le_bytes());
        epb.extend_from_slice(&9u32.to_le_bytes());
        epb.extend_from_slice(b"hello");
        block(&mut f, 6, &epb);
        let (p, err) = read_packets(&f);
        assert_eq!(err, None);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].linktype, 113);
        assert_eq!(p[0].data, b"hello");
        assert_eq!(p[0].orig_len, 9);
    }

    #[test]
    fn garbage_is_reported() {
        assert_eq!(
            read_packets(b"GET / HTTP/1.1").1,
            Some(CaptureError::UnknownFormat)
        );
        assert_eq!(read_packets(b"").1, Some(CaptureError::UnknownFormat));
    }

    #[test]
    fn hostile_lengths_are_errors() {
        // A pcap record claiming u32::MAX bytes, after a good one.
        let mut f = pcap(&[b"abc"]);
        let bad_at = f.len();
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        f.extend_from_slice(b"xyz");
        let (p, err) = read_packets(&f);
        assert_eq!(p.len(), 1);
        assert_eq!(err, Some(CaptureError::Truncated { offset: bad_at }));

        // A pcapng block whose length runs past the file, and an enhanced
        // packet block whose captured length runs past its block.
        let mut f = vec![0x0a, 0x0d, 0x0d, 0x0a];
        f.extend_from_slice(&28u32.to_le_bytes());
        f.extend_from_slice(&[0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0]);
        f.extend_from_slice(&u64::MAX.to_le_bytes());
        f.extend_from_slice(&28u32.to_le_bytes());
        let shb = f.clone();
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&0xffff_fffcu32.to_le_bytes());
        assert_eq!(
            read_packets(&f).1,
            Some(CaptureError::Truncated { offset: 28 })
        );
        let mut f = shb;
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&20u32.to_le_bytes());
        f.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0]);
        f.extend_from_slice(&6u32.to_le_bytes());
        f.extend_from_slice(&32u32.to_le_bytes());
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        f.extend_from_slice(&32u32.to_le_bytes());
        assert_eq!(
            read_packets(&f).1,
            Some(CaptureError::BadLength {
                offset: 48,
                len: u32::MAX as u64
            })
        );
    }
}
