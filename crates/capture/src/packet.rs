//! From a link-layer frame to its TCP segment: Ethernet (with VLAN tags),
//! Linux cooked captures (SLL, SLL2), BSD loopback (NULL) and raw IP, then
//! IPv4 or IPv6, then TCP. The IP and TCP headers (and Ethernet's, with
//! its VLAN tags) are etherparse's to read, in its lax mode: a packet the
//! snapshot length cut still gives the part of its segment it holds.

use std::net::{IpAddr, SocketAddr};

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};

use crate::RawPacket;

/// LINKTYPE_NULL: BSD loopback, a host-order address family first.
pub const LINKTYPE_NULL: u32 = 0;
/// LINKTYPE_ETHERNET: Ethernet II frames.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: bare IPv4 or IPv6 packets.
pub const LINKTYPE_RAW: u32 = 101;
/// LINKTYPE_LINUX_SLL: Linux "cooked" capture, version 1.
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// LINKTYPE_IPV4: bare IPv4 packets.
pub const LINKTYPE_IPV4: u32 = 228;
/// LINKTYPE_IPV6: bare IPv6 packets.
pub const LINKTYPE_IPV6: u32 = 229;
/// LINKTYPE_LINUX_SLL2: Linux "cooked" capture, version 2.
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// TCP flag bits.
pub mod flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
    /// URG.
    pub const URG: u8 = 0x20;
    /// ECE.
    pub const ECE: u8 = 0x40;
    /// CWR.
    pub const CWR: u8 = 0x80;
}

/// A TCP segment, borrowed from its packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// The sender's address.
    pub src: SocketAddr,
    /// The receiver's address.
    pub dst: SocketAddr,
    /// The sequence number of the first payload byte.
    pub seq: u32,
    /// The TCP flag bits ([`flags`]).
    pub flags: u8,
    /// The payload the capture holds.
    pub payload: &'a [u8],
    /// The capture holds less payload than the packet carried.
    pub payload_cut: bool,
}

/// The big-endian u16 at `at` (a cooked capture's protocol field).
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk()?))
}

/// The TCP segment in `packet`, or `None` if it is not TCP over IP (or too
/// short to tell, or an IP fragment, which is not reassembled).
pub fn tcp_segment<'a>(packet: &RawPacket<'a>) -> Option<TcpSegment<'a>> {
    let d = packet.data;
    let sliced = match packet.linktype {
        LINKTYPE_ETHERNET => LaxSlicedPacket::from_ethernet(d).ok()?,
        // Cooked captures: the protocol (an ethertype) at 14 of a 16-byte
        // header (SLL), at 0 of a 20-byte one (SLL2).
        LINKTYPE_LINUX_SLL => {
            LaxSlicedPacket::from_ether_type(EtherType(be16(d, 14)?), d.get(16..)?)
        }
        LINKTYPE_LINUX_SLL2 => {
            LaxSlicedPacket::from_ether_type(EtherType(be16(d, 0)?), d.get(20..)?)
        }
        LINKTYPE_NULL => {
            // The address family, in the capturing host's byte order.
            let family = u32::from_le_bytes(*d.first_chunk()?);
            let family = if family > 0xffff {
                family.swap_bytes()
            } else {
                family
            };
            if !matches!(family, 2 | 24 | 28 | 30) {
                return None;
            }
            LaxSlicedPacket::from_ip(d.get(4..)?).ok()?
        }
        LINKTYPE_RAW | 12 | 14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            LaxSlicedPacket::from_ip(d).ok()?
        }
        _ => return None,
    };
    let (src, dst, ip_payload_cut) = match sliced.net.as_ref()? {
        LaxNetSlice::Ipv4(ip) => (
            IpAddr::V4(ip.header().source_addr()),
            IpAddr::V4(ip.header().destination_addr()),
            ip.payload().incomplete,
        ),
        LaxNetSlice::Ipv6(ip) => (
            IpAddr::V6(ip.header().source_addr()),
            IpAddr::V6(ip.header().destination_addr()),
            ip.payload().incomplete,
        ),
        LaxNetSlice::Arp(_) => return None,
    };
    let Some(TransportSlice::Tcp(tcp)) = sliced.transport else {
        return None;
    };
    let bits = [
        (tcp.fin(), flags::FIN),
        (tcp.syn(), flags::SYN),
        (tcp.rst(), flags::RST),
        (tcp.psh(), flags::PSH),
        (tcp.ack(), flags::ACK),
        (tcp.urg(), flags::URG),
        (tcp.ece(), flags::ECE),
        (tcp.cwr(), flags::CWR),
    ];
    let lost = usize::try_from(packet.orig_len).is_ok_and(|orig| orig > d.len());
    Some(TcpSegment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        flags: bits
            .iter()
            .filter(|(set, _)| *set)
            .fold(0, |f, (_, bit)| f | bit),
        payload: tcp.payload(),
        payload_cut: lost || ip_payload_cut,
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
    p.extend_from_slice(&EtherType::IPV4.0.to_be_bytes());
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
