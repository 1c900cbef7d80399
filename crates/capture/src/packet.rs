//! From a link-layer frame to its TCP segment: Ethernet (with VLAN tags),
//! Linux cooked captures (SLL, SLL2), BSD loopback (NULL) and raw IP, then
//! IPv4 or IPv6, then TCP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::RawPacket;

pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// TCP flag bits.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const ACK: u8 = 0x10;
}

/// A TCP segment, borrowed from its packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub flags: u8,
    pub payload: &'a [u8],
    /// The capture holds less payload than the packet carried.
    pub payload_cut: bool,
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: [u16; 2] = [0x8100, 0x88a8];

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(*b.get(at..)?.first_chunk()?))
}

/// A header length field counting 32-bit words (IPv4 IHL, TCP data
/// offset) in bytes: at most 15 × 4 = 60.
fn words_to_bytes(nibble: u8) -> usize {
    usize::from(nibble & 0x0f) << 2
}

/// The TCP segment in `packet`, or `None` if it is not TCP over IP (or too
/// short to tell).
pub fn tcp_segment<'a>(packet: &RawPacket<'a>) -> Option<TcpSegment<'a>> {
    let d = packet.data;
    let (ethertype, ip) = match packet.linktype {
        LINKTYPE_ETHERNET => {
            // From the ethertype on, past any 4-byte VLAN tags.
            let mut rest = d.get(12..)?;
            let mut t = be16(rest, 0)?;
            while ETHERTYPE_VLAN.contains(&t) {
                rest = rest.get(4..)?;
                t = be16(rest, 0)?;
            }
            (Some(t), rest.get(2..)?)
        }
        LINKTYPE_LINUX_SLL => (Some(be16(d, 14)?), d.get(16..)?),
        LINKTYPE_LINUX_SLL2 => (Some(be16(d, 0)?), d.get(20..)?),
        LINKTYPE_NULL => {
            let family = u32::from_le_bytes(d.get(..4)?.try_into().ok()?);
            let family = if family > 0xffff {
                family.swap_bytes()
            } else {
                family
            };
            let t = match family {
                2 => ETHERTYPE_IPV4,
                24 | 28 | 30 => ETHERTYPE_IPV6,
                _ => return None,
            };
            (Some(t), d.get(4..)?)
        }
        LINKTYPE_RAW | 12 | 14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => (None, d),
        _ => return None,
    };
    let version = ip.first()? >> 4;
    let lost = (packet.orig_len as usize).saturating_sub(packet.data.len());
    match (ethertype, version) {
        (Some(ETHERTYPE_IPV4) | None, 4) => ipv4(ip, lost),
        (Some(ETHERTYPE_IPV6) | None, 6) => ipv6(ip, lost),
        _ => None,
    }
}

fn ipv4(ip: &[u8], lost: usize) -> Option<TcpSegment<'_>> {
    let ihl = words_to_bytes(*ip.first()?);
    let total = be16(ip, 2)? as usize;
    let frag = be16(ip, 6)?;
    if ip.get(9)? != &6 || frag & 0x3fff != 0 || ihl < 20 || total < ihl {
        return None; // not TCP, or a fragment we do not reassemble
    }
    let src = Ipv4Addr::from(be32(ip, 12)?);
    let dst = Ipv4Addr::from(be32(ip, 16)?);
    // The IP length bounds the segment (Ethernet may pad short frames).
    let end = total.min(ip.len());
    tcp(
        IpAddr::V4(src),
        IpAddr::V4(dst),
        ip.get(ihl..end)?,
        lost > 0 || total > ip.len(),
    )
}

fn ipv6(ip: &[u8], lost: usize) -> Option<TcpSegment<'_>> {
    let payload_len = be16(ip, 4)? as usize;
    if *ip.get(6)? != 6 {
        return None; // extension headers are not followed
    }
    let mut a = [0u8; 16];
    a.copy_from_slice(ip.get(8..24)?);
    let src = Ipv6Addr::from(a);
    a.copy_from_slice(ip.get(24..40)?);
    let dst = Ipv6Addr::from(a);
    // The payload length bounds the segment, as in IPv4.
    let body = ip.get(40..)?;
    tcp(
        IpAddr::V6(src),
        IpAddr::V6(dst),
        body.get(..payload_len.min(body.len()))?,
        lost > 0 || payload_len > body.len(),
    )
}

fn tcp(src: IpAddr, dst: IpAddr, t: &[u8], cut: bool) -> Option<TcpSegment<'_>> {
    let data_off = words_to_bytes(*t.get(12)? >> 4);
    if data_off < 20 {
        return None;
    }
    Some(TcpSegment {
        src: SocketAddr::new(src, be16(t, 0)?),
        dst: SocketAddr::new(dst, be16(t, 2)?),
        seq: be32(t, 4)?,
        flags: *t.get(13)?,
        payload: t.get(data_off..).unwrap_or(&[]),
        payload_cut: cut,
    })
}

/// Builds an Ethernet + IPv4 + TCP packet (for tests and tools that write
/// captures).
pub fn build_ipv4_tcp(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) else {
        panic!("build_ipv4_tcp takes IPv4 addresses");
    };
    let mut p = vec![0u8; 12];
    p.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    // A slice holds at most isize::MAX bytes, so adding 40 cannot overflow.
    #[allow(clippy::arithmetic_side_effects)]
    let total = 20 + 20 + payload.len();
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    p.extend_from_slice(&s.octets());
    p.extend_from_slice(&d.octets());
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(payload);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_ipv4_tcp() {
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:3300".parse().unwrap();
        let mut p = build_ipv4_tcp(a, b, 77, flags::ACK, b"ceph v2\n");
        p.extend_from_slice(&[0; 6]); // Ethernet padding beyond the IP length
        let raw = RawPacket {
            linktype: LINKTYPE_ETHERNET,
            data: &p,
            orig_len: p.len() as u32,
        };
        let s = tcp_segment(&raw).unwrap();
        assert_eq!((s.src, s.dst, s.seq), (a, b, 77));
        assert_eq!(s.payload, b"ceph v2\n");
        assert!(!s.payload_cut);
    }

    #[test]
    fn short_and_foreign_packets_are_skipped() {
        for data in [&[][..], &[0u8; 13][..], &[0xffu8; 60][..]] {
            let raw = RawPacket {
                linktype: LINKTYPE_ETHERNET,
                data,
                orig_len: data.len() as u32,
            };
            assert_eq!(tcp_segment(&raw), None);
        }
    }

    #[test]
    fn raw_ipv6_tcp_is_bounded_by_its_payload_length() {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&23u16.to_be_bytes()); // TCP header + "abc"
        p.extend_from_slice(&[6, 64]);
        p.extend_from_slice(&[0; 15]);
        p.push(1); // ::1
        p.extend_from_slice(&[0; 15]);
        p.push(2); // ::2
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&3300u16.to_be_bytes());
        p.extend_from_slice(&9u32.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 0x50, flags::ACK, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(b"abcdef");
        let raw = RawPacket {
            linktype: LINKTYPE_RAW,
            data: &p,
            orig_len: p.len() as u32,
        };
        let s = tcp_segment(&raw).unwrap();
        assert_eq!(s.src, "[::1]:40000".parse().unwrap());
        assert_eq!((s.seq, s.payload, s.payload_cut), (9, &b"abc"[..], false));
        // Cut short of its payload length.
        let raw = RawPacket {
            data: &p[..61],
            ..raw
        };
        let s = tcp_segment(&raw).unwrap();
        assert_eq!((s.payload, s.payload_cut), (&b"a"[..], true));
    }
}
