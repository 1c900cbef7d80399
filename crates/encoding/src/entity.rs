//! Entity types, names and addresses (src/msg/msg_types.{h,cc}).
//!
//! Wire forms, all from msg_types.h:
//! - `entity_name_t`: `u8 type, le64 num`.
//! - `entity_addr_t`, MSG_ADDR2 form (what msgr2 always writes): marker `1`,
//!   ENCODE_START(1, 1), `le32 type, le32 nonce, le32 elen`, then `elen`
//!   bytes of sockaddr whose family is a **little-endian** u16 followed by the
//!   kernel layout (big-endian port). IPv4 `elen` = 16, IPv6 = 28, blank
//!   (AF_UNSPEC) = 28.
//! - `entity_addr_t`, legacy form (decode only): marker `0` as the first byte
//!   of a 4-byte type, `le32 nonce`, a 128-byte `sockaddr_storage` whose family
//!   is **big-endian**.
//! - `entity_addrvec_t`: marker `2`, `le32 count`, the addresses; markers `0`
//!   and `1` are a single address (older encoders).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::str::FromStr;

use bytes::BufMut;

use crate::{
    decode_versioned, encode_versioned, Decode, DecodeError, DecodeResult, Decoder, Encode,
};

/// `CEPH_ENTITY_TYPE_*` (src/include/msgr.h).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EntityType(pub u8);

impl EntityType {
    /// `CEPH_ENTITY_TYPE_MON`: a monitor.
    pub const MON: EntityType = EntityType(0x01);
    /// `CEPH_ENTITY_TYPE_MDS`: a metadata server.
    pub const MDS: EntityType = EntityType(0x02);
    /// `CEPH_ENTITY_TYPE_OSD`: an object storage daemon.
    pub const OSD: EntityType = EntityType(0x04);
    /// `CEPH_ENTITY_TYPE_CLIENT`: a client.
    pub const CLIENT: EntityType = EntityType(0x08);
    /// `CEPH_ENTITY_TYPE_MGR`: a manager.
    pub const MGR: EntityType = EntityType(0x10);
    /// `CEPH_ENTITY_TYPE_AUTH`: the monitors' auth service, in cephx tickets.
    pub const AUTH: EntityType = EntityType(0x20);
    /// `CEPH_ENTITY_TYPE_ANY`: every type.
    pub const ANY: EntityType = EntityType(0xff);

    /// The name Ceph prints (`ceph_entity_type_name`), if the type is known.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            EntityType::MON => "mon",
            EntityType::MDS => "mds",
            EntityType::OSD => "osd",
            EntityType::CLIENT => "client",
            EntityType::MGR => "mgr",
            EntityType::AUTH => "auth",
            EntityType::ANY => "any",
            _ => return None,
        })
    }

    /// The type Ceph names `name` (`mon`, `osd`, `client`, ...), if any.
    pub fn from_name(name: &str) -> Option<EntityType> {
        [
            EntityType::MON,
            EntityType::MDS,
            EntityType::OSD,
            EntityType::CLIENT,
            EntityType::MGR,
            EntityType::AUTH,
            EntityType::ANY,
        ]
        .into_iter()
        .find(|t| t.name() == Some(name))
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "unknown({:#x})", self.0),
        }
    }
}

impl fmt::Debug for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Encode for EntityType {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.0);
    }
}
impl Decode for EntityType {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(EntityType(d.u8("entity type")?))
    }
}

/// `entity_name_t`: an entity type and number, e.g. `osd.0`, `client.4123`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EntityName {
    /// The entity type.
    pub kind: EntityType,
    /// `-1` (`entity_name_t::NEW`) means "not assigned yet".
    pub num: i64,
}

impl EntityName {
    /// The number of an entity not yet assigned one (`entity_name_t::NEW`).
    pub const NEW: i64 = -1;

    /// The name `kind.num`.
    pub fn new(kind: EntityType, num: i64) -> Self {
        EntityName { kind, num }
    }
}

impl fmt::Display for EntityName {
    /// As Ceph prints it: `osd.0`, or `client.?` when unassigned.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num < 0 {
            write!(f, "{}.?", self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.num)
        }
    }
}

impl fmt::Debug for EntityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Error of parsing an entity name or address from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ParseError {}

impl FromStr for EntityName {
    type Err = ParseError;
    /// `TYPE.NUM`, e.g. `osd.0`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let err = || {
            ParseError(format!(
                "bad entity name {s:?}: expected TYPE.NUM, e.g. osd.0"
            ))
        };
        let (t, n) = s.split_once('.').ok_or_else(err)?;
        let kind = EntityType::from_name(t).ok_or_else(err)?;
        let num = n.parse::<i64>().map_err(|_| err())?;
        Ok(EntityName { kind, num })
    }
}

impl Encode for EntityName {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.kind.0);
        out.put_i64_le(self.num);
    }
}
impl Decode for EntityName {
    const MIN_ENCODED_LEN: usize = 9;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(EntityName {
            kind: EntityType(d.u8("entity_name_t.type")?),
            num: d.u64("entity_name_t.num")? as i64,
        })
    }
}

/// `entity_addr_t::type_t`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EntityAddrType(pub u32);

impl EntityAddrType {
    /// `TYPE_NONE`: no type (a blank address).
    pub const NONE: EntityAddrType = EntityAddrType(0);
    /// msgr1.
    pub const LEGACY: EntityAddrType = EntityAddrType(1);
    /// msgr2.
    pub const MSGR2: EntityAddrType = EntityAddrType(2);
    /// `TYPE_ANY`: either protocol.
    pub const ANY: EntityAddrType = EntityAddrType(3);
    /// `TYPE_CIDR`: a network (an address and a prefix length), in blocklists.
    pub const CIDR: EntityAddrType = EntityAddrType(4);

    /// The prefix Ceph prints and parses (`v1:`, `v2:`, `any:`, `cidr:`).
    pub fn prefix(self) -> &'static str {
        match self {
            EntityAddrType::LEGACY => "v1:",
            EntityAddrType::MSGR2 => "v2:",
            EntityAddrType::ANY => "any:",
            EntityAddrType::CIDR => "cidr:",
            _ => "",
        }
    }
}

impl fmt::Debug for EntityAddrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix() {
            "" => write!(f, "type({})", self.0),
            p => f.write_str(p.trim_end_matches(':')),
        }
    }
}

const AF_UNSPEC: u16 = 0;
const AF_INET: u16 = 2;
/// Linux's value; Ceph writes it on every platform (AF_INET6_LINUX).
const AF_INET6: u16 = 10;
const SOCKADDR_IN_LEN: u32 = 16;
const SOCKADDR_IN6_LEN: u32 = 28;
/// A blank sockaddr_in6 after its family.
const SOCKADDR_IN6_PAD: usize = SOCKADDR_IN6_LEN as usize - 2;
const SOCKADDR_STORAGE_LEN: usize = 128;

/// `entity_addr_t`: an address type, a nonce that tells instances at the same
/// IP and port apart, and a socket address (`None` is a blank address).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EntityAddr {
    /// The address type: which protocol it is for.
    pub kind: EntityAddrType,
    /// Tells instances at the same IP and port apart (a restarted daemon takes a new one).
    pub nonce: u32,
    /// The IP and port; None for a blank address.
    pub addr: Option<SocketAddr>,
}

impl EntityAddr {
    /// The fewest bytes the MSG_ADDR2 form takes (marker, envelope, 3 × le32).
    pub const MIN_LEN: usize = 1 + 6 + 12;

    /// An address of `kind` at `addr` with `nonce`.
    pub fn new(kind: EntityAddrType, addr: SocketAddr, nonce: u32) -> Self {
        EntityAddr {
            kind,
            nonce,
            addr: Some(addr),
        }
    }

    /// An msgr2 (`v2:`) address at `addr` with `nonce`.
    pub fn msgr2(addr: SocketAddr, nonce: u32) -> Self {
        Self::new(EntityAddrType::MSGR2, addr, nonce)
    }

    /// True for a blank address (no IP, or the unspecified IP and port 0).
    pub fn is_blank_ip(&self) -> bool {
        match self.addr {
            None => true,
            Some(a) => a.ip().is_unspecified(),
        }
    }

    /// The port; 0 for a blank address.
    pub fn port(&self) -> u16 {
        self.addr.map_or(0, |a| a.port())
    }

    /// The struct's bytes as they sit in a little-endian Ceph process: le32
    /// type, le32 nonce, then the 28-byte sockaddr union (host-order family,
    /// network-order port and address).
    pub fn memory_image(&self) -> [u8; 36] {
        let mut m = [0u8; 36];
        m[..4].copy_from_slice(&self.kind.0.to_le_bytes());
        m[4..8].copy_from_slice(&self.nonce.to_le_bytes());
        match self.addr {
            None => {}
            Some(SocketAddr::V4(a)) => {
                m[8..10].copy_from_slice(&AF_INET.to_le_bytes());
                m[10..12].copy_from_slice(&a.port().to_be_bytes());
                m[12..16].copy_from_slice(&a.ip().octets());
            }
            Some(SocketAddr::V6(a)) => {
                m[8..10].copy_from_slice(&AF_INET6.to_le_bytes());
                m[10..12].copy_from_slice(&a.port().to_be_bytes());
                m[12..16].copy_from_slice(&a.flowinfo().to_be_bytes());
                m[16..32].copy_from_slice(&a.ip().octets());
                m[32..36].copy_from_slice(&a.scope_id().to_le_bytes());
            }
        }
        m
    }

    /// Ceph's `operator<` on entity_addr_t: a memcmp of the structs. Both
    /// ends of a connection race must order addresses the same way, so this
    /// is byte for byte what a Ceph peer computes.
    pub fn ceph_less(&self, other: &EntityAddr) -> bool {
        self.memory_image() < other.memory_image()
    }

    fn encode_sockaddr(&self, out: &mut Vec<u8>) {
        match self.addr {
            None => {
                out.put_u32_le(SOCKADDR_IN6_LEN);
                out.put_u16_le(AF_UNSPEC);
                out.put_bytes(0, SOCKADDR_IN6_PAD);
            }
            Some(SocketAddr::V4(a)) => {
                out.put_u32_le(SOCKADDR_IN_LEN);
                out.put_u16_le(AF_INET);
                out.put_u16(a.port());
                out.put_slice(&a.ip().octets());
                out.put_bytes(0, 8);
            }
            Some(SocketAddr::V6(a)) => {
                out.put_u32_le(SOCKADDR_IN6_LEN);
                out.put_u16_le(AF_INET6);
                out.put_u16(a.port());
                out.put_u32(a.flowinfo());
                out.put_slice(&a.ip().octets());
                out.put_u32_le(a.scope_id());
            }
        }
    }

    /// The sockaddr bytes after the family: kernel layout, big-endian port.
    fn sockaddr_from(family: u16, data: &[u8]) -> DecodeResult<Option<SocketAddr>> {
        let too_short = || DecodeError::InvalidValue {
            what: "entity_addr_t sockaddr length",
            // With the family's two bytes; a slice is at most isize::MAX
            // bytes, so this never saturates.
            value: (data.len() as u64).saturating_add(2),
        };
        match family {
            AF_UNSPEC => Ok(None),
            AF_INET => {
                let &[p0, p1, a, b, c, d] = data.first_chunk::<6>().ok_or_else(too_short)?;
                let ip = Ipv4Addr::new(a, b, c, d);
                let port = u16::from_be_bytes([p0, p1]);
                Ok(Some(SocketAddr::V4(SocketAddrV4::new(ip, port))))
            }
            AF_INET6 => {
                let s = data.first_chunk::<26>().ok_or_else(too_short)?;
                let port = u16::from_be_bytes([s[0], s[1]]);
                let flow = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&s[6..22]);
                let scope = u32::from_le_bytes([s[22], s[23], s[24], s[25]]);
                Ok(Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(ip),
                    port,
                    flow,
                    scope,
                ))))
            }
            other => Err(DecodeError::InvalidValue {
                what: "entity_addr_t address family",
                value: other as u64,
            }),
        }
    }

    /// The legacy form's length: le32 0 (the marker and what was once a
    /// type), le32 nonce, a 128-byte `sockaddr_storage`.
    pub const LEGACY_LEN: usize = 8 + SOCKADDR_STORAGE_LEN;

    /// The legacy form (`entity_addr_t::encode` without MSG_ADDR2), as
    /// msgr1's banner exchange always writes it: the sockaddr as it sits
    /// in memory but for its family, which is in network order.
    pub fn encode_legacy(&self) -> [u8; EntityAddr::LEGACY_LEN] {
        let mut b = [0u8; EntityAddr::LEGACY_LEN];
        let image = self.memory_image();
        b[4..8].copy_from_slice(&self.nonce.to_le_bytes());
        let family = u16::from_le_bytes([image[8], image[9]]);
        b[8..10].copy_from_slice(&family.to_be_bytes());
        b[10..36].copy_from_slice(&image[10..36]);
        b
    }

    /// Decodes the legacy form (any marker: Ceph ignores its first four
    /// bytes); the type is LEGACY, or NONE for a blank address.
    pub fn decode_legacy(b: &[u8; EntityAddr::LEGACY_LEN]) -> DecodeResult<Self> {
        let mut d = Decoder::new(&b[1..]);
        Self::decode_legacy_after_marker(&mut d)
    }

    /// The legacy form after its marker byte (`decode_legacy_addr_after_marker`).
    fn decode_legacy_after_marker(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        d.skip(3, "legacy entity_addr_t type")?;
        let nonce = d.u32("legacy entity_addr_t nonce")?;
        let [f0, f1, ss @ ..] = d.array::<SOCKADDR_STORAGE_LEN>("legacy entity_addr_t sockaddr")?;
        let addr = Self::sockaddr_from(u16::from_be_bytes([f0, f1]), &ss)?;
        let kind = match addr {
            None => EntityAddrType::NONE,
            Some(_) => EntityAddrType::LEGACY,
        };
        Ok(EntityAddr { kind, nonce, addr })
    }

    /// The MSG_ADDR2 form after its marker byte.
    fn decode_v2_after_marker(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "entity_addr_t", 1, |d, _| {
            let kind = EntityAddrType(d.u32("entity_addr_t.type")?);
            let nonce = d.u32("entity_addr_t.nonce")?;
            let elen = d.u32("entity_addr_t.elen")?;
            // The sockaddr: its family's two bytes, then the rest.
            let addr = match elen.checked_sub(2) {
                None if elen == 0 => None,
                None => {
                    return Err(DecodeError::InvalidValue {
                        what: "entity_addr_t sockaddr length",
                        value: elen as u64,
                    })
                }
                Some(_) if elen > SOCKADDR_IN6_LEN => {
                    return Err(DecodeError::LengthTooLarge {
                        what: "entity_addr_t sockaddr",
                        claimed: elen as u64,
                        max: SOCKADDR_IN6_LEN as u64,
                    });
                }
                Some(rest_len) => {
                    let family = d.u16("entity_addr_t.family")?;
                    let data = d.take(rest_len as usize, "entity_addr_t sockaddr")?;
                    Self::sockaddr_from(family, data)?
                }
            };
            Ok(EntityAddr { kind, nonce, addr })
        })
    }
}

impl Encode for EntityAddr {
    /// Always the MSG_ADDR2 form, as msgr2 frames do (`msgr2_frame_assumed`).
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(1);
        encode_versioned(out, 1, 1, |out| {
            out.put_u32_le(self.kind.0);
            out.put_u32_le(self.nonce);
            self.encode_sockaddr(out);
        });
    }
}

impl Decode for EntityAddr {
    const MIN_ENCODED_LEN: usize = EntityAddr::MIN_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        match d.u8("entity_addr_t marker")? {
            0 => Self::decode_legacy_after_marker(d),
            1 => Self::decode_v2_after_marker(d),
            m => Err(DecodeError::InvalidValue {
                what: "entity_addr_t marker",
                value: m as u64,
            }),
        }
    }
}

impl fmt::Display for EntityAddr {
    /// As Ceph prints it: `v2:127.0.0.1:3300/0`, `-` for a typeless address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == EntityAddrType::NONE {
            return f.write_str("-");
        }
        f.write_str(self.kind.prefix())?;
        match self.addr {
            Some(a) => write!(f, "{a}/{}", self.nonce),
            None => write!(f, "(unspec)/{}", self.nonce),
        }
    }
}

impl fmt::Debug for EntityAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for EntityAddr {
    type Err = ParseError;
    /// `[v1:|v2:|any:]IP[:PORT][/NONCE]`; no prefix means msgr2 (Ceph's
    /// TYPE_DEFAULT); IPv6 in brackets. The port defaults to 0.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let err = |why: &str| ParseError(format!("bad address {s:?}: {why}"));
        let (kind, rest) = [
            EntityAddrType::MSGR2,
            EntityAddrType::LEGACY,
            EntityAddrType::ANY,
        ]
        .into_iter()
        .find_map(|k| s.strip_prefix(k.prefix()).map(|r| (k, r)))
        .unwrap_or((EntityAddrType::MSGR2, s));
        let (hostport, nonce) = match rest.rsplit_once('/') {
            Some((hp, n)) => (hp, n.parse::<u32>().map_err(|_| err("bad nonce"))?),
            None => (rest, 0),
        };
        let addr = if let Ok(a) = hostport.parse::<SocketAddr>() {
            a
        } else if let Ok(ip) = hostport.parse::<IpAddr>() {
            SocketAddr::new(ip, 0)
        } else if let Some(ip6) = hostport.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            SocketAddr::new(IpAddr::V6(ip6.parse().map_err(|_| err("bad IPv6"))?), 0)
        } else {
            return Err(err("expected IP[:PORT]"));
        };
        Ok(EntityAddr::new(kind, addr, nonce))
    }
}

/// `entity_addrvec_t`: the addresses an entity is reachable at, e.g. a
/// monitor's `[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]`.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct EntityAddrvec(pub Vec<EntityAddr>);

impl EntityAddrvec {
    /// A vector of the one address `addr`.
    pub fn single(addr: EntityAddr) -> Self {
        EntityAddrvec(vec![addr])
    }

    /// The first msgr2 address, as Ceph's `get_msgr2()`.
    pub fn msgr2(&self) -> Option<&EntityAddr> {
        self.0.iter().find(|a| a.kind == EntityAddrType::MSGR2)
    }

    /// The first msgr1 address, as Ceph's `get_legacy_addr()`... or any.
    pub fn legacy(&self) -> Option<&EntityAddr> {
        self.0.iter().find(|a| a.kind == EntityAddrType::LEGACY)
    }
}

impl Encode for EntityAddrvec {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(2);
        self.0.encode(out);
    }
}

impl Decode for EntityAddrvec {
    const MIN_ENCODED_LEN: usize = 5;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        match d.u8("entity_addrvec_t marker")? {
            0 => Ok(Self::single(EntityAddr::decode_legacy_after_marker(d)?)),
            1 => Ok(Self::single(EntityAddr::decode_v2_after_marker(d)?)),
            2 => Ok(EntityAddrvec(Vec::decode(d)?)),
            m => Err(DecodeError::InvalidValue {
                what: "entity_addrvec_t marker",
                value: m as u64,
            }),
        }
    }
}

impl fmt::Display for EntityAddrvec {
    /// As Ceph prints it: a single address bare, several in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                f.write_str("[")?;
                for (i, a) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl fmt::Debug for EntityAddrvec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for EntityAddrvec {
    type Err = ParseError;
    /// One address, or `[ADDR,ADDR,...]`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Some(inner) => inner
                .split(',')
                .map(|a| a.trim().parse())
                .collect::<Result<Vec<_>, _>>()
                .map(EntityAddrvec),
            None => Ok(Self::single(s.parse()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        crate::hex::decode(s).unwrap()
    }

    #[test]
    fn ipv4_addr2_form_matches_ceph() {
        // v2:10.0.0.1:3300/0x12345678, as msg_types.h encodes it.
        let a: EntityAddr = "v2:10.0.0.1:3300/305419896".parse().unwrap();
        let wire =
            hex("01 01011c000000 02000000 78563412 10000000 0200 0ce4 0a000001 0000000000000000");
        assert_eq!(&a.to_bytes()[..], &wire[..]);
        assert_eq!(EntityAddr::decode_exact(&wire, "a").unwrap(), a);
        assert_eq!(a.to_string(), "v2:10.0.0.1:3300/305419896");
    }

    #[test]
    fn legacy_form_matches_a_ceph_v1_banner() {
        // The acceptor's address in tentacle-v1-perf-msgr.pcap's banner
        // (ceph_perf_msgr_server at v1:127.0.0.1:26901, nonce 0) and the
        // connector's (nonce 0x119a, port 0: as the acceptor saw it, no port).
        let server = hex("00000000 00000000 0002 6915 7f000001");
        let client = hex("00000000 9a110000 0002 0000 7f000001");
        for (head, text) in [
            (server, "v1:127.0.0.1:26901/0"),
            (client, "v1:127.0.0.1:0/4506"),
        ] {
            let mut wire = [0u8; EntityAddr::LEGACY_LEN];
            wire[..head.len()].copy_from_slice(&head);
            let a: EntityAddr = text.parse().unwrap();
            assert_eq!(a.encode_legacy(), wire);
            assert_eq!(EntityAddr::decode_legacy(&wire).unwrap(), a);
        }
        let v6: EntityAddr = "v1:[fe80::1]:6789/7".parse().unwrap();
        assert_eq!(EntityAddr::decode_legacy(&v6.encode_legacy()).unwrap(), v6);
        let blank = EntityAddr::decode_legacy(&[0; EntityAddr::LEGACY_LEN]).unwrap();
        assert_eq!((blank.kind, blank.addr), (EntityAddrType::NONE, None));
    }

    #[test]
    fn ipv6_and_blank_roundtrip() {
        let a: EntityAddr = "v1:[::1]:6789/7".parse().unwrap();
        let wire = a.to_bytes();
        assert_eq!(wire.len(), 47);
        assert_eq!(EntityAddr::decode_exact(&wire, "a").unwrap(), a);

        let blank = EntityAddr {
            kind: EntityAddrType::ANY,
            nonce: 0,
            addr: None,
        };
        let wire = blank.to_bytes();
        assert_eq!(wire.len(), 47);
        assert_eq!(EntityAddr::decode_exact(&wire, "a").unwrap(), blank);
    }

    #[test]
    fn legacy_form_decodes() {
        let mut wire = vec![0u8, 0, 0, 0];
        wire.extend_from_slice(&9u32.to_le_bytes());
        let mut ss = [0u8; 128];
        ss[..2].copy_from_slice(&2u16.to_be_bytes());
        ss[2..4].copy_from_slice(&6789u16.to_be_bytes());
        ss[4..8].copy_from_slice(&[127, 0, 0, 1]);
        wire.extend_from_slice(&ss);
        let a = EntityAddr::decode_exact(&wire, "a").unwrap();
        assert_eq!(a.to_string(), "v1:127.0.0.1:6789/9");
        // The same address as a singleton addrvec.
        assert_eq!(EntityAddrvec::decode_exact(&wire, "v").unwrap().0, vec![a]);
    }

    #[test]
    fn addrvec_forms() {
        let v: EntityAddrvec = "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]".parse().unwrap();
        assert_eq!(v.0.len(), 2);
        let wire = v.to_bytes();
        assert_eq!(wire[0], 2);
        assert_eq!(EntityAddrvec::decode_exact(&wire, "v").unwrap(), v);
        assert_eq!(v.to_string(), "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]");
        // Marker 1: a bare entity_addr_t.
        let one = v.0[0].to_bytes();
        assert_eq!(
            EntityAddrvec::decode_exact(&one, "v").unwrap().0,
            vec![v.0[0]]
        );
    }

    #[test]
    fn bad_addresses_are_typed_errors() {
        assert!(matches!(
            EntityAddr::decode_exact(&[7], "a"),
            Err(DecodeError::InvalidValue {
                what: "entity_addr_t marker",
                value: 7
            })
        ));
        // elen larger than any sockaddr.
        let mut w = Vec::new();
        w.put_u8(1);
        encode_versioned(&mut w, 1, 1, |o| {
            o.put_u32_le(2);
            o.put_u32_le(0);
            o.put_u32_le(4000);
        });
        assert!(matches!(
            EntityAddr::decode_exact(&w, "a"),
            Err(DecodeError::LengthTooLarge { .. })
        ));
        // elen 1 cannot even hold the family; elen 4 is AF_INET cut short.
        let with_sockaddr = |elen: u32, sockaddr: &[u8]| {
            let mut w = Vec::new();
            w.put_u8(1);
            encode_versioned(&mut w, 1, 1, |o| {
                o.put_u32_le(2);
                o.put_u32_le(0);
                o.put_u32_le(elen);
                o.put_slice(sockaddr);
            });
            EntityAddr::decode_exact(&w, "a")
        };
        assert_eq!(
            with_sockaddr(1, &[0]),
            Err(DecodeError::InvalidValue {
                what: "entity_addr_t sockaddr length",
                value: 1
            })
        );
        assert_eq!(
            with_sockaddr(4, &[2, 0, 0x1a, 0x90]),
            Err(DecodeError::InvalidValue {
                what: "entity_addr_t sockaddr length",
                value: 4
            })
        );
    }

    #[test]
    fn ordering_is_cephs_memcmp() {
        let a: EntityAddr = "v2:10.0.0.2:6800/1".parse().unwrap();
        let b: EntityAddr = "v2:10.0.0.1:6800/2".parse().unwrap();
        // The nonce comes first in memory: a (nonce 1) < b (nonce 2).
        assert!(a.ceph_less(&b));
        // Little-endian nonce bytes: 256 (00 01) sorts before 1 (01 00).
        let c: EntityAddr = "v2:10.0.0.1:6800/256".parse().unwrap();
        let d: EntityAddr = "v2:10.0.0.1:6800/1".parse().unwrap();
        assert!(c.ceph_less(&d));
        let e: EntityAddr = "v2:10.0.0.1:6800/0".parse().unwrap();
        let f: EntityAddr = "v2:10.0.0.2:6800/0".parse().unwrap();
        assert!(e.ceph_less(&f) && !f.ceph_less(&e));
    }

    #[test]
    fn entity_names() {
        let n: EntityName = "osd.3".parse().unwrap();
        assert_eq!(&n.to_bytes()[..], &[4, 3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            EntityName::new(EntityType::CLIENT, -1).to_string(),
            "client.?"
        );
        assert!("bogus".parse::<EntityName>().is_err());
    }
}
