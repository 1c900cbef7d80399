//! Taking msgr1's handshake parts from the front of a buffer, whole: the
//! connector's hello (banner and address), the acceptor's hello (banner
//! and two addresses), a CONNECT with its authorizer, a CONNECT_REPLY with
//! its authorizer and, after SEQ, the acceptor's in_seq. Each returns its
//! raw bytes too (a capture's dump) and, while incomplete, leaves the
//! buffer alone; the `*_len` functions say how long each is in all, as far
//! as what is in tells, so a reader reads exactly that.

use bytes::{Bytes, BytesMut};
use msgr_encoding::EntityAddr;

use super::{
    check_banner, decode_addr, Connect, ConnectReply, ServerHello, Tag, WireError, ADDR_LEN, BANNER,
};

/// The connector's hello: its banner and its address.
pub const CLIENT_HELLO_LEN: usize = BANNER.len() + ADDR_LEN;

/// Where a CONNECT's and a reply's `authorizer_len` sit.
const CONNECT_AUTH_LEN_AT: usize = 28;
const REPLY_AUTH_LEN_AT: usize = 21;

fn le32_at(b: &[u8], at: usize) -> u32 {
    let w = b.get(at..at.saturating_add(4)).unwrap_or_default();
    u32::from_le_bytes(w.try_into().unwrap_or_default())
}

fn too_large(len: u32, max: u32) -> WireError {
    WireError::AuthorizerTooLarge { len, max }
}

/// The acceptor's hello, once its 281 bytes are in.
pub fn take_server_hello(buf: &mut BytesMut) -> Result<Option<(ServerHello, Bytes)>, WireError> {
    let Some(b) = buf.first_chunk::<{ ServerHello::LEN }>() else {
        return Ok(None);
    };
    let hello = ServerHello::decode(b)?;
    Ok(Some((hello, buf.split_to(ServerHello::LEN).freeze())))
}

/// The connector's hello (the address it claims), once its 145 bytes are in.
pub fn take_client_hello(buf: &mut BytesMut) -> Result<Option<(EntityAddr, Bytes)>, WireError> {
    let Some(b) = buf.first_chunk::<CLIENT_HELLO_LEN>() else {
        return Ok(None);
    };
    let (banner, addr) = b.split_first_chunk::<9>().unwrap_or((BANNER, &[]));
    check_banner(banner)?;
    let addr = decode_addr(addr.try_into().unwrap_or(&[0; ADDR_LEN]))?;
    Ok(Some((addr, buf.split_to(CLIENT_HELLO_LEN).freeze())))
}

/// A CONNECT's whole length as far as `buf` tells (its authorizer capped).
pub fn connect_len(buf: &[u8], max_authorizer: u32) -> usize {
    match buf.len() >= Connect::LEN {
        true => {
            let auth = le32_at(buf, CONNECT_AUTH_LEN_AT).min(max_authorizer);
            Connect::LEN.saturating_add(auth as usize)
        }
        false => Connect::LEN,
    }
}

/// A CONNECT and its authorizer (an authorizer beyond `max_authorizer` is
/// refused from the CONNECT's head).
pub fn take_connect(
    buf: &mut BytesMut,
    max_authorizer: u32,
) -> Result<Option<(Connect, Bytes, Bytes)>, WireError> {
    let Some(head) = buf.first_chunk::<{ Connect::LEN }>() else {
        return Ok(None);
    };
    let connect = Connect::decode(head);
    if connect.authorizer_len > max_authorizer {
        return Err(too_large(connect.authorizer_len, max_authorizer));
    }
    let len = connect_len(buf, max_authorizer);
    if buf.len() < len {
        return Ok(None);
    }
    let raw = buf.split_to(len).freeze();
    let authorizer = raw.slice(Connect::LEN..);
    Ok(Some((connect, authorizer, raw)))
}

/// A reply's whole length as far as `buf` tells: its authorizer (capped),
/// and after SEQ the acceptor's in_seq.
pub fn reply_len(buf: &[u8], max_authorizer: u32) -> usize {
    if buf.len() < ConnectReply::LEN {
        return ConnectReply::LEN;
    }
    let auth = le32_at(buf, REPLY_AUTH_LEN_AT).min(max_authorizer);
    let seq = if buf.first() == Some(&(Tag::Seq as u8)) {
        8
    } else {
        0
    };
    ConnectReply::LEN
        .saturating_add(auth as usize)
        .saturating_add(seq)
}

/// A CONNECT_REPLY as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyIn {
    /// The reply's fixed part.
    pub reply: ConnectReply,
    /// The authorizer reply that follows it (`authorizer_len` bytes).
    pub authorizer: Bytes,
    /// After SEQ: the acceptor's in_seq.
    pub in_seq: Option<u64>,
    /// The reply's bytes as they arrived, authorizer reply and in_seq included (for a capture's
    /// dump).
    pub raw: Bytes,
}

/// A CONNECT_REPLY, its authorizer and (SEQ) the acceptor's in_seq.
pub fn take_reply(buf: &mut BytesMut, max_authorizer: u32) -> Result<Option<ReplyIn>, WireError> {
    let Some(head) = buf.first_chunk::<{ ConnectReply::LEN }>() else {
        return Ok(None);
    };
    let reply = ConnectReply::decode(head)?;
    if reply.authorizer_len > max_authorizer {
        return Err(too_large(reply.authorizer_len, max_authorizer));
    }
    let len = reply_len(buf, max_authorizer);
    if buf.len() < len {
        return Ok(None);
    }
    let raw = buf.split_to(len).freeze();
    // The authorizer was capped above: it ends within the reply.
    let after = ConnectReply::LEN.saturating_add(reply.authorizer_len as usize);
    let authorizer = raw.slice(ConnectReply::LEN..after);
    let in_seq = (reply.tag == Tag::Seq).then(|| {
        let b = raw.get(after..).unwrap_or_default();
        u64::from_le_bytes(b.try_into().unwrap_or_default())
    });
    Ok(Some(ReplyIn {
        reply,
        authorizer,
        in_seq,
        raw,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_taken_whole_and_lengths_capped() {
        let c = Connect {
            authorizer_len: 5,
            ..Default::default()
        };
        let mut wire = c.encode().to_vec();
        wire.extend_from_slice(b"abcde");
        let mut buf = BytesMut::from(&wire[..36]);
        assert_eq!(connect_len(&buf, 4096), 38);
        assert_eq!(take_connect(&mut buf, 4096).unwrap(), None);
        assert_eq!(buf.len(), 36, "an incomplete part stays");
        buf.extend_from_slice(&wire[36..]);
        let (got, auth, raw) = take_connect(&mut buf, 4096).unwrap().unwrap();
        assert_eq!((got, &auth[..], &raw[..]), (c, &b"abcde"[..], &wire[..]));

        let r = ConnectReply {
            tag: Tag::Seq,
            features: 1,
            global_seq: 2,
            connect_seq: 3,
            protocol_version: 24,
            authorizer_len: 2,
            flags: 1,
        };
        let mut wire = r.encode().to_vec();
        wire.extend_from_slice(b"xy");
        wire.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(reply_len(&wire, 4096), 36);
        let got = take_reply(&mut BytesMut::from(&wire[..]), 4096)
            .unwrap()
            .unwrap();
        assert_eq!(
            (got.reply, &got.authorizer[..], got.in_seq),
            (r, &b"xy"[..], Some(7))
        );

        let huge = Connect {
            authorizer_len: u32::MAX,
            ..Default::default()
        };
        assert!(matches!(
            take_connect(&mut BytesMut::from(&huge.encode()[..]), 4096),
            Err(WireError::AuthorizerTooLarge { .. })
        ));
    }
}
