//! MESSAGE frames: `ceph_msg_header2` (src/include/msgr.h) in segment 0,
//! then the message's front, middle and data (`MessageFrame` in
//! src/msg/async/frames_v2.h; alignments 8, 8, 8, 4096).

use bytes::Bytes;
use msgr_encoding::{encoding, Decode, Encode};

use crate::{FrameError, Received, Tag};

encoding! {
    /// `struct ceph_msg_header2`, 41 bytes, packed. Unlike msgr1's header it
    /// has no source (known from the ident exchange), no lengths (they are
    /// the segment lengths) and no crc; it adds the piggy-backed `ack_seq`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct MsgHeader2 {
        /// Sequence number within the session.
        pub seq: u64,
        /// Transaction id.
        pub tid: u64,
        /// Message type (CEPH_MSG_* / MSG_*).
        pub msg_type: u16,
        /// CEPH_MSG_PRIO_*.
        pub priority: u16,
        /// Encoding version of the message.
        pub version: u16,
        /// Padding before the data segment (`data_pre_padding_len`).
        pub data_pre_padding_len: u32,
        /// The alignment hint of the data (`data_off`): the object offset it belongs at.
        pub data_off: u16,
        /// The last sequence number the sender received.
        pub ack_seq: u64,
        /// msgr1's footer flags (CEPH_MSG_FOOTER_*).
        pub flags: u8,
        /// Oldest decoder version that can read the message (0: unknown).
        pub compat_version: u16,
        /// Unused (`reserved`), kept as received.
        pub reserved: u16,
    }
}

impl MsgHeader2 {
    /// The header's length on the wire.
    pub const LEN: usize = 41;

    /// The packed 41 bytes, without allocating.
    pub fn to_array(&self) -> [u8; 41] {
        let mut b = [0u8; 41];
        b[0..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.tid.to_le_bytes());
        b[16..18].copy_from_slice(&self.msg_type.to_le_bytes());
        b[18..20].copy_from_slice(&self.priority.to_le_bytes());
        b[20..22].copy_from_slice(&self.version.to_le_bytes());
        b[22..26].copy_from_slice(&self.data_pre_padding_len.to_le_bytes());
        b[26..28].copy_from_slice(&self.data_off.to_le_bytes());
        b[28..36].copy_from_slice(&self.ack_seq.to_le_bytes());
        b[36] = self.flags;
        b[37..39].copy_from_slice(&self.compat_version.to_le_bytes());
        b[39..41].copy_from_slice(&self.reserved.to_le_bytes());
        b
    }
}

/// `CEPH_MSG_PRIO_*`.
pub mod priority {
    /// `CEPH_MSG_PRIO_LOW`: background work.
    pub const LOW: u16 = 64;
    /// `CEPH_MSG_PRIO_DEFAULT`: most messages.
    pub const DEFAULT: u16 = 127;
    /// `CEPH_MSG_PRIO_HIGH`: e.g. OSD heartbeats.
    pub const HIGH: u16 = 196;
    /// `CEPH_MSG_PRIO_HIGHEST`: sent before anything else.
    pub const HIGHEST: u16 = 255;
}

/// `CEPH_MSG_FOOTER_*`, carried in `MsgHeader2::flags`.
pub mod footer_flags {
    /// The sender wrote the whole message (an aborted one is dropped).
    pub const COMPLETE: u8 = 1 << 0;
    /// The data crc is not computed.
    pub const NOCRC: u8 = 1 << 1;
    /// The message carries a signature (msgr1).
    pub const SIGNED: u8 = 1 << 2;
}

/// A message as msgr2 moves it: header and three payload parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MessageFrame {
    /// The header (segment 0).
    pub header: MsgHeader2,
    /// The front (segment 1): the message's encoded fields.
    pub front: Bytes,
    /// The middle (segment 2; rarely used).
    pub middle: Bytes,
    /// The data (segment 3): bulk bytes such as an object's contents.
    pub data: Bytes,
}

impl MessageFrame {
    /// The four segments to hand to the encoder.
    pub fn segments(&self) -> [Bytes; 4] {
        [
            self.header.to_bytes(),
            self.front.clone(),
            self.middle.clone(),
            self.data.clone(),
        ]
    }

    /// A received MESSAGE frame's parts, moved out of the frame.
    pub fn from_received_owned(mut frame: Received) -> Result<MessageFrame, FrameError> {
        if frame.tag != Tag::MESSAGE {
            return Err(FrameError::UnexpectedSegments {
                tag: frame.tag,
                count: frame.num_segments(),
            });
        }
        let header =
            MsgHeader2::decode_exact(&frame.segments[0], "ceph_msg_header2").map_err(|error| {
                FrameError::BadPayload {
                    tag: Tag::MESSAGE,
                    error,
                }
            })?;
        let [_, front, middle, data] = std::mem::take(&mut frame.segments);
        Ok(MessageFrame {
            header,
            front,
            middle,
            data,
        })
    }

    /// A received MESSAGE frame's parts.
    pub fn from_received(frame: &Received) -> Result<MessageFrame, FrameError> {
        if frame.tag != Tag::MESSAGE {
            return Err(FrameError::UnexpectedSegments {
                tag: frame.tag,
                count: frame.num_segments(),
            });
        }
        let header =
            MsgHeader2::decode_exact(&frame.segments[0], "ceph_msg_header2").map_err(|error| {
                FrameError::BadPayload {
                    tag: Tag::MESSAGE,
                    error,
                }
            })?;
        Ok(MessageFrame {
            header,
            front: frame.segments[1].clone(),
            middle: frame.segments[2].clone(),
            data: frame.segments[3].clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header2_is_41_packed_bytes() {
        let h = MsgHeader2 {
            seq: 1,
            tid: 2,
            msg_type: 42,
            priority: priority::DEFAULT,
            version: 8,
            data_pre_padding_len: 0,
            data_off: 0,
            ack_seq: 3,
            flags: footer_flags::COMPLETE,
            compat_version: 3,
            reserved: 0,
        };
        let b = h.to_bytes();
        assert_eq!(b.len(), MsgHeader2::LEN);
        assert_eq!(MsgHeader2::MIN_ENCODED_LEN, MsgHeader2::LEN);
        assert_eq!(&b[16..18], &42u16.to_le_bytes());
        assert_eq!(&b[28..36], &3u64.to_le_bytes());
        assert_eq!(b[36], 1);
        assert_eq!(&b[37..39], &3u16.to_le_bytes());
        assert_eq!(MsgHeader2::decode_exact(&b, "h").unwrap(), h);
        assert_eq!(&h.to_array()[..], &b[..]);
    }
}
