//! A message as the messenger moves it: Ceph's `Message` minus the typed
//! payload. The header fields a sender chooses, and the three payload
//! parts; the session fills in the sequence numbers.

use bytes::Bytes;
use msgr_encoding::EntityName;
use msgr_frames::message::{footer_flags, priority};
use msgr_frames::{MessageFrame, MsgHeader2};

/// An outgoing or received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// CEPH_MSG_* / MSG_* type number.
    pub msg_type: u16,
    /// CEPH_MSG_PRIO_*: higher is sent first.
    pub priority: u16,
    /// Encoding version of the payload, and the oldest that can read it.
    pub version: u16,
    /// The oldest encoding version that can decode the payload
    /// (`header.compat_version`).
    pub compat_version: u16,
    /// Transaction id.
    pub tid: u64,
    /// Alignment hint of the data part (`header.data_off`).
    pub data_off: u16,
    /// The front payload: the message's encoded fields.
    pub front: Bytes,
    /// The middle payload (rarely used: most message types leave it empty).
    pub middle: Bytes,
    /// The data payload: bulk bytes such as an object's contents.
    pub data: Bytes,
    /// Assigned by the session when sent; on a received message, its seq.
    pub seq: u64,
    /// On a received message: who sent it (from the ident exchange).
    pub source: Option<EntityName>,
}

impl Message {
    /// A message of type `msg_type` with front payload `front`, at encoding
    /// version 1, default priority, no tid, middle or data.
    pub fn new(msg_type: u16, front: Bytes) -> Message {
        Message {
            msg_type,
            priority: priority::DEFAULT,
            version: 1,
            compat_version: 1,
            tid: 0,
            data_off: 0,
            front,
            middle: Bytes::new(),
            data: Bytes::new(),
            seq: 0,
            source: None,
        }
    }

    /// Bytes of payload (front + middle + data): what throttles count.
    pub fn payload_len(&self) -> usize {
        self.front
            .len()
            .saturating_add(self.middle.len())
            .saturating_add(self.data.len())
    }

    /// The MESSAGE frame of this message as sequence number `seq`,
    /// acknowledging `ack_seq` (ProtocolV2::write_message). msgr2 never
    /// sends the msgr1 footer crcs: flags are COMPLETE | NOCRC.
    pub fn to_frame(&self, seq: u64, ack_seq: u64) -> MessageFrame {
        MessageFrame {
            header: MsgHeader2 {
                seq,
                tid: self.tid,
                msg_type: self.msg_type,
                priority: self.priority,
                version: self.version,
                data_pre_padding_len: 0,
                data_off: self.data_off,
                ack_seq,
                flags: footer_flags::COMPLETE | footer_flags::NOCRC,
                compat_version: self.compat_version,
                reserved: 0,
            },
            front: self.front.clone(),
            middle: self.middle.clone(),
            data: self.data.clone(),
        }
    }

    /// The packed `ceph_msg_header2` of this message as sequence number
    /// `seq`, acknowledging `ack_seq`.
    pub fn header2(&self, seq: u64, ack_seq: u64) -> [u8; 41] {
        MsgHeader2 {
            seq,
            tid: self.tid,
            msg_type: self.msg_type,
            priority: self.priority,
            version: self.version,
            data_pre_padding_len: 0,
            data_off: self.data_off,
            ack_seq,
            flags: footer_flags::COMPLETE | footer_flags::NOCRC,
            compat_version: self.compat_version,
            reserved: 0,
        }
        .to_array()
    }

    /// A received MESSAGE frame as a message from `source`.
    pub fn from_frame(frame: MessageFrame, source: EntityName) -> Message {
        let h = frame.header;
        Message {
            msg_type: h.msg_type,
            priority: h.priority,
            version: h.version,
            compat_version: h.compat_version,
            tid: h.tid,
            data_off: h.data_off,
            front: frame.front,
            middle: frame.middle,
            data: frame.data,
            seq: h.seq,
            source: Some(source),
        }
    }
}
