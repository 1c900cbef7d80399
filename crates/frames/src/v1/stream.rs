//! An open msgr1 session's stream, sans-IO: what follows the handshake in
//! each direction is a sequence of items, each a tag and what that tag
//! carries (ProtocolV1's read_event / handle_tag):
//!
//! | tag | then |
//! |---|---|
//! | MSG | `ceph_msg_header` (53), front, middle, data, the footer (21, or 13 without MSG_AUTH) |
//! | ACK | le64 seq: the last message the sender received |
//! | KEEPALIVE | nothing |
//! | KEEPALIVE2, KEEPALIVE2_ACK | `ceph_timespec` (le32 sec, le32 nsec) |
//! | CLOSE | nothing |
//!
//! [`StreamReader`] takes items from the front of a caller's buffer and
//! says how many more bytes the item at hand needs, so a runtime reads
//! exactly that. Lengths are capped by [`FrameLimits`] before anything is
//! allocated; crcs are checked as Ceph checks them.

use bytes::{Bytes, BytesMut};
use msgr_encoding::UTime;

use super::header::{footer_flags, section_crc, Footer, MsgHeader};
use super::{Section, Tag, WireError};
use crate::FrameLimits;

/// A message as msgr1 moves it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Msg {
    /// The message's header (`ceph_msg_header`).
    pub header: MsgHeader,
    /// The front section: the message's encoded fields.
    pub front: Bytes,
    /// The middle section (rarely used; most types leave it empty).
    pub middle: Bytes,
    /// The data section: bulk bytes such as an object's contents.
    pub data: Bytes,
    /// The footer: the sections' crcs, the signature, the flags.
    pub footer: Footer,
}

impl Msg {
    /// The sender wrote it whole; Ceph drops a message whose footer lacks
    /// CEPH_MSG_FOOTER_COMPLETE (an aborted send), and so should a caller.
    pub fn complete(&self) -> bool {
        self.footer.flags & footer_flags::COMPLETE != 0
    }

    /// Front and middle crcs always, data unless the sender says it did
    /// not compute it (Message.cc decode_message with MSG_CRC_DATA, Ceph's
    /// default).
    pub fn check_crcs(&self) -> Result<(), WireError> {
        let nocrc = self.footer.flags & footer_flags::NOCRC != 0;
        for (section, bytes) in [
            (Section::Front, &self.front),
            (Section::Middle, &self.middle),
            (Section::Data, &self.data),
        ] {
            if section == Section::Data && nocrc {
                continue;
            }
            let computed = section_crc(bytes);
            let expected = self.footer.crc(section);
            if computed != expected {
                return Err(WireError::BadCrc {
                    section,
                    expected,
                    computed,
                });
            }
        }
        Ok(())
    }
}

/// One item of an open session's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A MSG: a whole message.
    Msg(Box<Msg>),
    /// An ACK: every message up to this sequence number arrived.
    Ack(u64),
    /// A KEEPALIVE (no payload; from old peers).
    Keepalive,
    /// A KEEPALIVE2 with the sender's clock.
    Keepalive2(UTime),
    /// A KEEPALIVE2_ACK echoing the KEEPALIVE2's timestamp.
    Keepalive2Ack(UTime),
    /// A CLOSE: the peer ends the session.
    Close,
}

impl Item {
    /// The tag the item is written with.
    pub fn tag(&self) -> Tag {
        match self {
            Item::Msg(_) => Tag::Msg,
            Item::Ack(_) => Tag::Ack,
            Item::Keepalive => Tag::Keepalive,
            Item::Keepalive2(_) => Tag::Keepalive2,
            Item::Keepalive2Ack(_) => Tag::Keepalive2Ack,
            Item::Close => Tag::Close,
        }
    }
}

const EXPECT: &str =
    "an open session's tag (MSG, ACK, KEEPALIVE, KEEPALIVE2, KEEPALIVE2_ACK, CLOSE)";
/// The tag byte and a message header.
const MSG_HEAD_LEN: usize = 1 + MsgHeader::LEN;

/// Reads an open session's items from a caller's buffer.
#[derive(Debug)]
pub struct StreamReader {
    limits: FrameLimits,
    footer_len: usize,
    /// The header of the message being read, once in (checked once).
    head: Option<MsgHeader>,
    /// Whether a complete message's section crcs are checked here.
    check_crcs: bool,
    /// The first error; the stream stays failed.
    failed: Option<WireError>,
}

impl StreamReader {
    /// A reader for a session whose features include MSG_AUTH
    /// (`msg_auth`: footers carry a signature) or not.
    pub fn new(limits: FrameLimits, msg_auth: bool) -> StreamReader {
        StreamReader {
            limits,
            footer_len: Footer::len(msg_auth),
            head: None,
            check_crcs: true,
            failed: None,
        }
    }

    /// Leaves the section crcs to the caller ([`Msg::check_crcs`]), e.g. a
    /// capture decoder that reports a bad crc and goes on (the header's
    /// crc, which guards the lengths, is always checked).
    pub fn without_crc_check(mut self) -> StreamReader {
        self.check_crcs = false;
        self
    }

    /// New caps, from the next message on (a session's, once its
    /// handshake is done).
    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
    }

    /// The length of the footers this reader expects.
    pub fn footer_len(&self) -> usize {
        self.footer_len
    }

    /// How many more bytes the item at the front of a buffer holding
    /// `buf` needs (at least one while the tag is not in).
    pub fn bytes_needed(&self, buf: &[u8]) -> usize {
        self.item_len(buf).saturating_sub(buf.len())
    }

    /// The header of the message being read, once it is in.
    pub fn pending_header(&self) -> Option<&MsgHeader> {
        self.head.as_ref()
    }

    /// The whole length of the item at the front of `buf`, as far as known.
    fn item_len(&self, buf: &[u8]) -> usize {
        match buf.first().map(|&t| Tag::from_u8(t)) {
            None => 1,
            Some(Some(Tag::Msg)) => match &self.head {
                Some(h) => self.msg_len(h),
                None => MSG_HEAD_LEN,
            },
            Some(Some(Tag::Ack | Tag::Keepalive2 | Tag::Keepalive2Ack)) => 9,
            Some(_) => 1,
        }
    }

    /// A message's whole length: its caps make it fit a usize.
    fn msg_len(&self, h: &MsgHeader) -> usize {
        let rest = h.payload_len().saturating_add(self.footer_len as u64);
        usize::try_from(rest)
            .unwrap_or(usize::MAX)
            .saturating_add(MSG_HEAD_LEN)
    }

    /// Takes the next whole item from the front of `buf`, `Ok(None)` when
    /// more bytes are needed. After an error every later call fails the
    /// same way.
    pub fn next(&mut self, buf: &mut BytesMut) -> Result<Option<Item>, WireError> {
        Ok(self.next_raw(buf)?.map(|(item, _)| item))
    }

    /// [`StreamReader::next`], with the item's bytes as they were on the
    /// wire (the message's sections are slices of them: no copy).
    pub fn next_raw(&mut self, buf: &mut BytesMut) -> Result<Option<(Item, Bytes)>, WireError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.take(buf);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    fn take(&mut self, buf: &mut BytesMut) -> Result<Option<(Item, Bytes)>, WireError> {
        let Some(&tag) = buf.first() else {
            return Ok(None);
        };
        let tag = Tag::from_u8(tag).ok_or(WireError::UnexpectedTag {
            expect: EXPECT,
            got: tag,
        })?;
        let item = match tag {
            Tag::Msg => return self.take_msg(buf),
            Tag::Keepalive => Item::Keepalive,
            Tag::Close => Item::Close,
            Tag::Ack | Tag::Keepalive2 | Tag::Keepalive2Ack => {
                let Some(&[_, ref body @ ..]) = buf.first_chunk::<9>() else {
                    return Ok(None);
                };
                let v = u64::from_le_bytes(*body);
                let stamp = UTime::new(v as u32, (v >> 32) as u32);
                match tag {
                    Tag::Ack => Item::Ack(v),
                    Tag::Keepalive2 => Item::Keepalive2(stamp),
                    _ => Item::Keepalive2Ack(stamp),
                }
            }
            other => {
                return Err(WireError::UnexpectedTag {
                    expect: EXPECT,
                    got: other as u8,
                })
            }
        };
        let len = if matches!(item, Item::Keepalive | Item::Close) {
            1
        } else {
            9
        };
        Ok(Some((item, buf.split_to(len).freeze())))
    }

    fn take_msg(&mut self, buf: &mut BytesMut) -> Result<Option<(Item, Bytes)>, WireError> {
        let header = match self.head {
            Some(h) => h,
            None => {
                let Some(&[_, ref raw @ ..]) = buf.first_chunk::<MSG_HEAD_LEN>() else {
                    return Ok(None);
                };
                let h = MsgHeader::decode(raw)?;
                self.check_lengths(&h)?;
                self.head = Some(h);
                h
            }
        };
        let len = self.msg_len(&header);
        if buf.len() < len {
            return Ok(None);
        }
        self.head = None;
        // `len` covers the head, the three sections and the footer.
        let raw = buf.split_to(len).freeze();
        let mut rest = raw.slice(MSG_HEAD_LEN..);
        let front = rest.split_to(header.front_len as usize);
        let middle = rest.split_to(header.middle_len as usize);
        let data = rest.split_to(header.data_len as usize);
        let msg = Msg {
            header,
            front,
            middle,
            data,
            footer: Footer::decode(&rest),
        };
        if self.check_crcs && msg.complete() {
            msg.check_crcs()?;
        }
        Ok(Some((Item::Msg(Box::new(msg)), raw)))
    }

    fn check_lengths(&self, h: &MsgHeader) -> Result<(), WireError> {
        let max = self.limits.max_segment_len;
        for s in [Section::Front, Section::Middle, Section::Data] {
            let len = h.section_len(s);
            if len > max {
                return Err(WireError::SectionTooLarge {
                    section: s,
                    len,
                    max,
                });
            }
        }
        if h.payload_len() > self.limits.max_frame_len {
            return Err(WireError::MessageTooLarge {
                len: h.payload_len(),
                max: self.limits.max_frame_len,
            });
        }
        Ok(())
    }
}

/// Writes items as a sender does.
pub mod write {
    use super::*;

    /// A message's tag and header (its crc filled in); the sections and
    /// [`footer`] follow.
    pub fn msg_head(h: &MsgHeader) -> [u8; MSG_HEAD_LEN] {
        let mut b = [0u8; MSG_HEAD_LEN];
        b[0] = Tag::Msg as u8;
        b[1..].copy_from_slice(&h.encode());
        b
    }

    /// The footer for sections `front`, `middle`, `data`, in the form the
    /// session's features ask for (`msg_auth`), COMPLETE and, with a
    /// signature, SIGNED.
    pub fn footer(
        front: &[u8],
        middle: &[u8],
        data: &[u8],
        sig: Option<u64>,
        msg_auth: bool,
    ) -> (Footer, Vec<u8>) {
        let mut f = Footer {
            front_crc: section_crc(front),
            middle_crc: section_crc(middle),
            data_crc: section_crc(data),
            sig: sig.unwrap_or(0),
            flags: footer_flags::COMPLETE,
        };
        if sig.is_some() {
            f.flags |= footer_flags::SIGNED;
        }
        let bytes = if msg_auth {
            f.encode().to_vec()
        } else {
            f.encode_old().to_vec()
        };
        (f, bytes)
    }

    /// ACK, KEEPALIVE2 and KEEPALIVE2_ACK: a tag and eight bytes.
    pub fn tagged_u64(tag: Tag, v: u64) -> [u8; 9] {
        let mut b = [0u8; 9];
        b[0] = tag as u8;
        b[1..].copy_from_slice(&v.to_le_bytes());
        b
    }

    /// A `ceph_timespec` as the u64 `tagged_u64` writes.
    pub fn stamp(t: UTime) -> u64 {
        u64::from(t.sec) | u64::from(t.nsec) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg_bytes(front: &[u8], data: &[u8], msg_auth: bool) -> Vec<u8> {
        let h = MsgHeader {
            seq: 5,
            msg_type: 42,
            front_len: front.len() as u32,
            data_len: data.len() as u32,
            ..Default::default()
        };
        let mut out = write::msg_head(&h).to_vec();
        out.extend_from_slice(front);
        out.extend_from_slice(data);
        out.extend_from_slice(&write::footer(front, &[], data, Some(7), msg_auth).1);
        out
    }

    #[test]
    fn items_come_out_whole_byte_by_byte() {
        for msg_auth in [true, false] {
            let mut wire = msg_bytes(b"front", &[9u8; 4096], msg_auth);
            wire.extend_from_slice(&write::tagged_u64(Tag::Ack, 5));
            wire.push(Tag::Keepalive as u8);
            let stamp = UTime::new(100, 200);
            wire.extend_from_slice(&write::tagged_u64(Tag::Keepalive2, write::stamp(stamp)));
            wire.push(Tag::Close as u8);

            let mut r = StreamReader::new(FrameLimits::default(), msg_auth);
            let mut buf = BytesMut::new();
            let mut items = Vec::new();
            for b in &wire {
                assert!(r.bytes_needed(&buf) >= 1);
                buf.extend_from_slice(&[*b]);
                while let Some(item) = r.next(&mut buf).unwrap() {
                    items.push(item);
                }
            }
            assert!(buf.is_empty());
            let [Item::Msg(m), Item::Ack(5), Item::Keepalive, Item::Keepalive2(s), Item::Close] =
                &items[..]
            else {
                panic!("{items:?}");
            };
            assert_eq!(
                (&m.front[..], m.data.len(), m.header.seq),
                (&b"front"[..], 4096, 5)
            );
            assert!(m.complete());
            assert_eq!(m.footer.sig, if msg_auth { 7 } else { 0 });
            assert_eq!(*s, stamp);
        }
    }

    #[test]
    fn bytes_needed_is_the_rest_of_the_message_once_its_header_is_in() {
        let wire = msg_bytes(b"f", &[0u8; 1000], true);
        let mut r = StreamReader::new(FrameLimits::default(), true);
        let mut buf = BytesMut::from(&wire[..MSG_HEAD_LEN]);
        assert_eq!(r.next(&mut buf).unwrap(), None);
        assert_eq!(r.bytes_needed(&buf), 1 + 1000 + 21);
        assert!(r.pending_header().is_some());
    }

    #[test]
    fn bad_crcs_and_lengths_fail_the_stream() {
        let mut wire = msg_bytes(b"front", b"data", true);
        let at = MSG_HEAD_LEN + 1;
        wire[at] ^= 1;
        let mut r = StreamReader::new(FrameLimits::default(), true);
        let mut buf = BytesMut::from(&wire[..]);
        let e = r.next(&mut buf).unwrap_err();
        assert!(
            matches!(
                e,
                WireError::BadCrc {
                    section: Section::Front,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(r.next(&mut BytesMut::new()).unwrap_err(), e);

        // A header claiming 4 GiB is refused from its 54 bytes alone.
        let h = MsgHeader {
            data_len: u32::MAX,
            ..Default::default()
        };
        let mut buf = BytesMut::from(&write::msg_head(&h)[..]);
        let mut r = StreamReader::new(FrameLimits::default(), true);
        assert!(matches!(
            r.next(&mut buf),
            Err(WireError::SectionTooLarge {
                section: Section::Data,
                ..
            })
        ));

        for bad in [0u8, Tag::Ready as u8, Tag::Seq as u8, 99] {
            let mut r = StreamReader::new(FrameLimits::default(), true);
            let mut buf = BytesMut::from(&[bad][..]);
            assert!(
                matches!(r.next(&mut buf), Err(WireError::UnexpectedTag { got, .. }) if got == bad)
            );
        }
    }

    #[test]
    fn an_aborted_message_is_returned_unchecked_for_the_caller_to_drop() {
        let mut wire = msg_bytes(b"front", b"", true);
        let n = wire.len();
        wire[n - 1] = 0; // flags: not COMPLETE
        wire[MSG_HEAD_LEN] ^= 1; // and a front that no longer matches its crc
        let mut r = StreamReader::new(FrameLimits::default(), true);
        let Some(Item::Msg(m)) = r.next(&mut BytesMut::from(&wire[..])).unwrap() else {
            panic!()
        };
        assert!(!m.complete());
    }
}
