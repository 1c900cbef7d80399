//! msgr1, Ceph's classic protocol (`ceph v027`, ProtocolV1 of
//! src/msg/async/ProtocolV1.cc, the kernel's net/ceph/messenger_v1.c),
//! sans-IO: the banner and address exchange, `ceph_msg_connect` and its
//! reply, the tags, and an open session's stream of messages (header,
//! sections, footer), acks and keepalives. docs/research/msgr1-wire.md
//! has the layouts with their sources.
//!
//! The handshake, as the bytes go:
//!
//! | connector | acceptor |
//! |---|---|
//! | banner | banner, its address, the connector's address as it sees it ([`ServerHello`]) |
//! | its address (legacy `entity_addr_t`) | |
//! | [`Connect`], authorizer | |
//! | | [`ConnectReply`], authorizer (SEQ: then its le64 in_seq) |
//! | (after SEQ: its le64 in_seq) | |
//!
//! then each side's stream of items ([`StreamReader`]).

mod connect;
mod error;
pub mod handshake;
pub mod header;
mod stream;
mod tag;

use msgr_encoding::EntityAddr;

pub use connect::{Connect, ConnectReply, FLAG_LOSSY};
pub use error::{Section, WireError};
pub use header::{Footer, MsgHeader};
pub use stream::{write, Item, Msg, StreamReader};
pub use tag::Tag;

/// `CEPH_BANNER`: nine bytes, no terminator.
pub const BANNER: &[u8; 9] = b"ceph v027";

/// A legacy `entity_addr_t`, as the banner exchange carries addresses.
pub const ADDR_LEN: usize = EntityAddr::LEGACY_LEN;

/// The bytes of a fixed field (a constant range within a fixed-size
/// struct: never out of bounds; zeros if it were).
fn field<const N: usize>(b: &[u8], r: std::ops::Range<usize>) -> [u8; N] {
    b.get(r).and_then(|s| s.try_into().ok()).unwrap_or([0; N])
}

/// Checks the peer's nine banner bytes.
pub fn check_banner(b: &[u8; 9]) -> Result<(), WireError> {
    if b == BANNER {
        return Ok(());
    }
    Err(WireError::NotMsgr1 {
        msgr2: b.starts_with(b"ceph v2"),
    })
}

/// Decodes a legacy address of the banner exchange.
pub fn decode_addr(b: &[u8; ADDR_LEN]) -> Result<EntityAddr, WireError> {
    EntityAddr::decode_legacy(b).map_err(WireError::BadAddr)
}

/// What the acceptor sends first (ProtocolV1::send_server_banner): the
/// banner, its address, and the connector's address as it sees it (from
/// which a connector that does not know its own IP learns it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerHello {
    /// The acceptor's own address (legacy `entity_addr_t`).
    pub addr: EntityAddr,
    /// The connector's address as the acceptor sees it.
    pub peer_addr: EntityAddr,
}

impl ServerHello {
    /// Its length on the wire: the banner and two legacy addresses.
    pub const LEN: usize = BANNER.len() + 2 * ADDR_LEN;

    /// Its wire bytes.
    pub fn encode(&self) -> [u8; ServerHello::LEN] {
        let mut b = [0u8; ServerHello::LEN];
        let (banner, rest) = b.split_at_mut(BANNER.len());
        banner.copy_from_slice(BANNER);
        let (addr, peer) = rest.split_at_mut(ADDR_LEN);
        addr.copy_from_slice(&self.addr.encode_legacy());
        peer.copy_from_slice(&self.peer_addr.encode_legacy());
        b
    }

    /// The hello these bytes hold, or why they do not decode (not msgr1's
    /// banner, a bad address).
    pub fn decode(b: &[u8; ServerHello::LEN]) -> Result<ServerHello, WireError> {
        let (banner, rest) = b
            .split_first_chunk::<9>()
            .ok_or(WireError::NotMsgr1 { msgr2: false })?;
        check_banner(banner)?;
        let (addr, peer) = rest
            .split_first_chunk::<ADDR_LEN>()
            .ok_or(WireError::NotMsgr1 { msgr2: false })?;
        let peer = peer
            .first_chunk::<ADDR_LEN>()
            .ok_or(WireError::NotMsgr1 { msgr2: false })?;
        Ok(ServerHello {
            addr: decode_addr(addr)?,
            peer_addr: decode_addr(peer)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_and_hello() {
        assert_eq!(check_banner(b"ceph v027"), Ok(()));
        assert_eq!(
            check_banner(b"ceph v2\n\x10"),
            Err(WireError::NotMsgr1 { msgr2: true })
        );
        assert_eq!(
            check_banner(b"GET / HTT"),
            Err(WireError::NotMsgr1 { msgr2: false })
        );
        let h = ServerHello {
            addr: "v1:127.0.0.1:6789/0".parse().unwrap(),
            peer_addr: "v1:127.0.0.1:40000/0".parse().unwrap(),
        };
        let b = h.encode();
        assert_eq!(&b[..9], BANNER);
        assert_eq!(ServerHello::decode(&b), Ok(h));
    }
}
