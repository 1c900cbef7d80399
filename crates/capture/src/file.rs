//! pcap and pcapng files: the packets they hold and each packet's link
//! type, read with pcap-parser (rusticata's parser of both formats,
//! borrowing from the file: a record's claimed length is checked against
//! the bytes there, never allocated).
//!
//! pcap: a 24-byte header (magic a1b2c3d4 for microseconds, a1b23c4d for
//! nanoseconds, a1b2cd34 for the "modified" format, in either byte order),
//! then records. pcapng: blocks; a section header fixes the byte order,
//! interface descriptions give link types, enhanced and simple packet
//! blocks carry packets.

use std::fmt;

use pcap_parser::nom;
use pcap_parser::pcapng::{self, Block};
use pcap_parser::{LegacyPcapBlock, PcapError};

/// One captured packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPacket<'a> {
    /// LINKTYPE_* of the interface it was captured on.
    pub linktype: u32,
    /// The bytes captured (at most the snapshot length).
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
    Truncated {
        /// Where in the file the cut record starts.
        offset: usize,
    },
    /// A record or block that the file holds whole, but whose contents
    /// do not parse: a length inside it runs past its end or is impossible.
    Malformed {
        /// Where in the file the record starts.
        offset: usize,
    },
    /// A pcapng packet names an interface that was never described.
    UnknownInterface {
        /// Where in the file the packet's block starts.
        offset: usize,
        /// The interface id it names.
        id: u32,
    },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::UnknownFormat => f.write_str("not a pcap or pcapng file"),
            CaptureError::Truncated { offset } => {
                write!(f, "capture file is truncated at byte {offset}")
            }
            CaptureError::Malformed { offset } => write!(
                f,
                "capture file has a malformed record at byte {offset}: a length in it \
                 runs past its end or is impossible"
            ),
            CaptureError::UnknownInterface { offset, id } => {
                write!(f, "packet at byte {offset} names unknown interface {id}")
            }
        }
    }
}

impl std::error::Error for CaptureError {}

type Parsed<'a, T> = nom::IResult<&'a [u8], T, PcapError<&'a [u8]>>;

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

/// Where `rest`, a suffix of `file`, starts in it.
fn offset(file: &[u8], rest: &[u8]) -> usize {
    file.len().saturating_sub(rest.len())
}

fn read_pcap(file: &[u8]) -> (Vec<RawPacket<'_>>, Option<CaptureError>) {
    let mut out = Vec::new();
    let (mut rest, header) = match pcap_parser::parse_pcap_header(file) {
        Ok(parsed) => parsed,
        // Too short to hold even the magic: not a capture at all.
        Err(nom::Err::Incomplete(_)) if file.len() < 4 => {
            return (out, Some(CaptureError::UnknownFormat))
        }
        Err(nom::Err::Incomplete(_)) => {
            return (out, Some(CaptureError::Truncated { offset: file.len() }))
        }
        Err(_) => return (out, Some(CaptureError::UnknownFormat)),
    };
    // The upper bits carry the FCS length, not the link type.
    let linktype = header.network.0 as u32 & 0x0fff_ffff;
    let record: fn(&[u8]) -> Parsed<'_, LegacyPcapBlock<'_>> = if header.is_modified_format() {
        pcap_parser::parse_pcap_frame_modified
    } else if header.is_bigendian() {
        pcap_parser::parse_pcap_frame_be
    } else {
        pcap_parser::parse_pcap_frame
    };
    while !rest.is_empty() {
        match record(rest) {
            Ok((next, r)) => {
                out.push(RawPacket {
                    linktype,
                    data: r.data,
                    orig_len: r.origlen.max(r.caplen),
                });
                rest = next;
            }
            Err(nom::Err::Incomplete(_)) => {
                let offset = offset(file, rest);
                return (out, Some(CaptureError::Truncated { offset }));
            }
            Err(_) => {
                let offset = offset(file, rest);
                return (out, Some(CaptureError::Malformed { offset }));
            }
        }
    }
    (out, None)
}

fn read_pcapng(file: &[u8]) -> (Vec<RawPacket<'_>>, Option<CaptureError>) {
    let mut out = Vec::new();
    let mut big_endian = false;
    let mut interfaces: Vec<(u32, u32)> = Vec::new(); // (linktype, snaplen)
    let mut rest = file;
    while !rest.is_empty() {
        let at = offset(file, rest);
        // A section header sets the byte order of the blocks after it.
        let parsed = if rest.starts_with(&SECTION_HEADER) {
            pcapng::parse_sectionheaderblock(rest).map(|(r, b)| (r, Block::SectionHeader(b)))
        } else if big_endian {
            pcapng::parse_block_be(rest)
        } else {
            pcapng::parse_block_le(rest)
        };
        let block = match parsed {
            Ok((next, block)) => {
                rest = next;
                block
            }
            Err(e) => return (out, Some(block_error(e, rest, at, big_endian))),
        };
        match block {
            Block::SectionHeader(shb) => {
                big_endian = shb.big_endian();
                interfaces.clear();
            }
            Block::InterfaceDescription(idb) => {
                interfaces.push((idb.linktype.0 as u32, idb.snaplen));
            }
            Block::EnhancedPacket(epb) => {
                let Some(&(linktype, _)) = usize::try_from(epb.if_id)
                    .ok()
                    .and_then(|i| interfaces.get(i))
                else {
                    let id = epb.if_id;
                    return (out, Some(CaptureError::UnknownInterface { offset: at, id }));
                };
                // The block's data is padded to 4 bytes; the packet is its
                // first caplen (pcap-parser checked they are there).
                let caplen = usize::try_from(epb.caplen).unwrap_or(usize::MAX);
                out.push(RawPacket {
                    linktype,
                    data: epb.data.get(..caplen).unwrap_or(epb.data),
                    orig_len: epb.origlen.max(epb.caplen),
                });
            }
            Block::SimplePacket(spb) => {
                let Some(&(linktype, snap)) = interfaces.first() else {
                    let e = CaptureError::UnknownInterface { offset: at, id: 0 };
                    return (out, Some(e));
                };
                // Its captured length is the original, cut to the snapshot
                // length (the block has no field of its own for it); the
                // rest of its padded data is padding.
                let orig = usize::try_from(spb.origlen).unwrap_or(usize::MAX);
                let cap = match usize::try_from(snap).unwrap_or(usize::MAX) {
                    0 => orig,
                    s => orig.min(s),
                };
                out.push(RawPacket {
                    linktype,
                    data: spb.data.get(..cap).unwrap_or(spb.data),
                    orig_len: spb.origlen,
                });
            }
            _ => {}
        }
    }
    (out, None)
}

/// What a block that did not parse at `at` means: one cut short by the
/// file's end is a truncation; one the file holds whole (its generic
/// layout parses) is malformed inside; a section header of neither byte
/// order is not pcapng.
fn block_error(
    e: nom::Err<PcapError<&[u8]>>,
    rest: &[u8],
    at: usize,
    big_endian: bool,
) -> CaptureError {
    let whole = match big_endian {
        true => pcapng::parse_unknownblock_be(rest).is_ok(),
        false => pcapng::parse_unknownblock_le(rest).is_ok(),
    };
    match e {
        nom::Err::Error(PcapError::HeaderNotRecognized) => CaptureError::UnknownFormat,
        nom::Err::Incomplete(_) if !whole => CaptureError::Truncated { offset: at },
        _ => CaptureError::Malformed { offset: at },
    }
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
            Some(CaptureError::Malformed { offset: 48 })
        );
    }
}
