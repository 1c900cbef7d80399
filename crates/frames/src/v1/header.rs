//! `struct ceph_msg_header` and `struct ceph_msg_footer` (src/include/msgr.h,
//! packed, little-endian): what frames an msgr1 message. Unlike msgr2's
//! `ceph_msg_header2`, the header carries the sender's name, the three
//! section lengths and its own crc; the footer carries the sections' crcs
//! and, with CEPH_FEATURE_MSG_AUTH, a signature.

use msgr_encoding::{EntityName, EntityType};

use super::{field as get, Section, WireError};
use crate::crc::ceph_crc32c;

/// Field offsets of `ceph_msg_header`.
mod field {
    use std::ops::Range;
    pub const SEQ: Range<usize> = 0..8;
    pub const TID: Range<usize> = 8..16;
    pub const TYPE: Range<usize> = 16..18;
    pub const PRIORITY: Range<usize> = 18..20;
    pub const VERSION: Range<usize> = 20..22;
    pub const FRONT_LEN: Range<usize> = 22..26;
    pub const MIDDLE_LEN: Range<usize> = 26..30;
    pub const DATA_LEN: Range<usize> = 30..34;
    pub const DATA_OFF: Range<usize> = 34..36;
    pub const SRC_TYPE: usize = 36;
    pub const SRC_NUM: Range<usize> = 37..45;
    pub const COMPAT_VERSION: Range<usize> = 45..47;
    pub const RESERVED: Range<usize> = 47..49;
    /// `ceph_crc32c(0, header[..49])`.
    pub const CRC: Range<usize> = 49..53;
}

/// Field offsets of `ceph_msg_footer` (`ceph_msg_footer_old` has no SIG:
/// its flags sit at 12).
mod footer_field {
    use std::ops::Range;
    pub const FRONT_CRC: Range<usize> = 0..4;
    pub const MIDDLE_CRC: Range<usize> = 4..8;
    pub const DATA_CRC: Range<usize> = 8..12;
    pub const SIG: Range<usize> = 12..20;
    pub const FLAGS: usize = 20;
    pub const OLD_FLAGS: usize = 12;
}

/// `ceph_msg_header`, 53 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgHeader {
    /// The message's sequence number in its session (`seq`).
    pub seq: u64,
    /// The transaction id (`tid`) that matches a reply to its request.
    pub tid: u64,
    /// CEPH_MSG_* / MSG_* type number (`type`).
    pub msg_type: u16,
    /// CEPH_MSG_PRIO_*: higher is sent first (`priority`).
    pub priority: u16,
    /// The payload's encoding version (`version`).
    pub version: u16,
    /// The front section's length in bytes (`front_len`).
    pub front_len: u32,
    /// The middle section's length in bytes (`middle_len`).
    pub middle_len: u32,
    /// The data section's length in bytes (`data_len`).
    pub data_len: u32,
    /// The alignment hint of the data section (`data_off`).
    pub data_off: u16,
    /// The sender's entity name (`src`).
    pub src: EntityName,
    /// The oldest encoding version that can read the payload (`compat_version`).
    pub compat_version: u16,
    /// Unused (`reserved`), kept as received.
    pub reserved: u16,
    /// As received (decode) or as last computed (encode fills it).
    pub crc: u32,
}

impl MsgHeader {
    /// The header's length on the wire.
    pub const LEN: usize = 53;

    /// The 53 bytes, with the crc of the first 49 (and `self.crc` ignored).
    pub fn encode(&self) -> [u8; MsgHeader::LEN] {
        use field::*;
        let mut b = [0u8; MsgHeader::LEN];
        b[SEQ].copy_from_slice(&self.seq.to_le_bytes());
        b[TID].copy_from_slice(&self.tid.to_le_bytes());
        b[TYPE].copy_from_slice(&self.msg_type.to_le_bytes());
        b[PRIORITY].copy_from_slice(&self.priority.to_le_bytes());
        b[VERSION].copy_from_slice(&self.version.to_le_bytes());
        b[FRONT_LEN].copy_from_slice(&self.front_len.to_le_bytes());
        b[MIDDLE_LEN].copy_from_slice(&self.middle_len.to_le_bytes());
        b[DATA_LEN].copy_from_slice(&self.data_len.to_le_bytes());
        b[DATA_OFF].copy_from_slice(&self.data_off.to_le_bytes());
        b[SRC_TYPE] = self.src.kind.0;
        b[SRC_NUM].copy_from_slice(&self.src.num.to_le_bytes());
        b[COMPAT_VERSION].copy_from_slice(&self.compat_version.to_le_bytes());
        b[RESERVED].copy_from_slice(&self.reserved.to_le_bytes());
        let crc = ceph_crc32c(0, &b[..CRC.start]);
        b[CRC].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header and checks its crc (ProtocolV1's
    /// handle_message_header, with MSG_CRC_HEADER, Ceph's default).
    pub fn decode(b: &[u8; MsgHeader::LEN]) -> Result<MsgHeader, WireError> {
        use field::*;
        let h = MsgHeader {
            seq: u64::from_le_bytes(get(b, SEQ)),
            tid: u64::from_le_bytes(get(b, TID)),
            msg_type: u16::from_le_bytes(get(b, TYPE)),
            priority: u16::from_le_bytes(get(b, PRIORITY)),
            version: u16::from_le_bytes(get(b, VERSION)),
            front_len: u32::from_le_bytes(get(b, FRONT_LEN)),
            middle_len: u32::from_le_bytes(get(b, MIDDLE_LEN)),
            data_len: u32::from_le_bytes(get(b, DATA_LEN)),
            data_off: u16::from_le_bytes(get(b, DATA_OFF)),
            src: EntityName::new(EntityType(b[SRC_TYPE]), i64::from_le_bytes(get(b, SRC_NUM))),
            compat_version: u16::from_le_bytes(get(b, COMPAT_VERSION)),
            reserved: u16::from_le_bytes(get(b, RESERVED)),
            crc: u32::from_le_bytes(get(b, CRC)),
        };
        let computed = ceph_crc32c(0, &b[..CRC.start]);
        if computed != h.crc {
            return Err(WireError::BadHeaderCrc {
                expected: h.crc,
                computed,
            });
        }
        Ok(h)
    }

    /// Front, middle and data together, in bytes.
    pub fn payload_len(&self) -> u64 {
        u64::from(self.front_len)
            .saturating_add(u64::from(self.middle_len))
            .saturating_add(u64::from(self.data_len))
    }

    /// The length in bytes of section `s`, as the header announces it.
    pub fn section_len(&self, s: Section) -> u32 {
        match s {
            Section::Front => self.front_len,
            Section::Middle => self.middle_len,
            Section::Data => self.data_len,
        }
    }
}

/// `CEPH_MSG_FOOTER_*`.
pub mod footer_flags {
    /// The sender wrote the whole message (an aborted one is dropped).
    pub const COMPLETE: u8 = 1 << 0;
    /// The data crc is not computed (ms_crc_data off on the sender).
    pub const NOCRC: u8 = 1 << 1;
    /// `sig` holds a signature.
    pub const SIGNED: u8 = 1 << 2;
}

/// `ceph_msg_footer` (21 bytes) or, to a peer without
/// CEPH_FEATURE_MSG_AUTH, `ceph_msg_footer_old` (13 bytes: no signature).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footer {
    /// The crc32c of the front section (`front_crc`).
    pub front_crc: u32,
    /// The crc32c of the middle section (`middle_crc`).
    pub middle_crc: u32,
    /// The crc32c of the data section (`data_crc`), 0 when NOCRC.
    pub data_crc: u32,
    /// The message's signature (cephx), 0 when unsigned or old.
    pub sig: u64,
    /// CEPH_MSG_FOOTER_* ([`footer_flags`]).
    pub flags: u8,
}

impl Footer {
    /// The footer's length with a signature (`ceph_msg_footer`).
    pub const LEN: usize = 21;
    /// The footer's length without one (`ceph_msg_footer_old`).
    pub const OLD_LEN: usize = 13;

    /// The footer's length: with a signature field when MSG_AUTH was
    /// negotiated.
    pub fn len(msg_auth: bool) -> usize {
        if msg_auth {
            Footer::LEN
        } else {
            Footer::OLD_LEN
        }
    }

    /// The 21-byte form.
    pub fn encode(&self) -> [u8; Footer::LEN] {
        use footer_field::*;
        let mut b = [0u8; Footer::LEN];
        b[FRONT_CRC].copy_from_slice(&self.front_crc.to_le_bytes());
        b[MIDDLE_CRC].copy_from_slice(&self.middle_crc.to_le_bytes());
        b[DATA_CRC].copy_from_slice(&self.data_crc.to_le_bytes());
        b[SIG].copy_from_slice(&self.sig.to_le_bytes());
        b[FLAGS] = self.flags;
        b
    }

    /// The 13-byte form (no signature).
    pub fn encode_old(&self) -> [u8; Footer::OLD_LEN] {
        let full = self.encode();
        let mut b = [0u8; Footer::OLD_LEN];
        b[..footer_field::SIG.start].copy_from_slice(&full[..footer_field::SIG.start]);
        b[footer_field::OLD_FLAGS] = self.flags;
        b
    }

    /// Decodes either form, by its length (`Footer::len(msg_auth)`).
    pub fn decode(b: &[u8]) -> Footer {
        use footer_field::*;
        let crc = |r| u32::from_le_bytes(get(b, r));
        let (sig, flags) = if b.len() >= Footer::LEN {
            (u64::from_le_bytes(get(b, SIG)), b.get(FLAGS))
        } else {
            (0, b.get(OLD_FLAGS))
        };
        let flags = flags.copied().unwrap_or(0);
        Footer {
            front_crc: crc(FRONT_CRC),
            middle_crc: crc(MIDDLE_CRC),
            data_crc: crc(DATA_CRC),
            sig,
            flags,
        }
    }

    /// The crc the footer gives for `s`.
    pub fn crc(&self, s: Section) -> u32 {
        match s {
            Section::Front => self.front_crc,
            Section::Middle => self.middle_crc,
            Section::Data => self.data_crc,
        }
    }
}

/// `AUTH_ENC_MAGIC`, the head of a cephx encryption envelope.
const AUTH_ENC_MAGIC: u64 = 0xff00_9cad_8826_aa55;

/// What a cephx signature of a message covers (CephxSessionHandler::
/// _calc_signature; docs/research/msgr1-wire.md §5.2): with CEPHX_V2,
/// the header crc, each section's crc and length, and the low word of the
/// sequence number (32 bytes); before it, an encryption envelope of the
/// four crcs (29 bytes).
pub fn signature_block(header: &MsgHeader, footer: &Footer, cephx_v2: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(32);
    if cephx_v2 {
        for w in [
            header.crc,
            footer.front_crc,
            header.front_len,
            footer.middle_crc,
            header.middle_len,
            footer.data_crc,
            header.data_len,
            header.seq as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
    } else {
        b.push(1);
        b.extend_from_slice(&AUTH_ENC_MAGIC.to_le_bytes());
        b.extend_from_slice(&16u32.to_le_bytes());
        for w in [
            header.crc,
            footer.front_crc,
            footer.middle_crc,
            footer.data_crc,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
    }
    b
}

/// A section's crc as msgr1 computes it (`bufferlist::crc32c(0)`).
pub fn section_crc(bytes: &[u8]) -> u32 {
    ceph_crc32c(0, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::hex;

    #[test]
    fn header_matches_a_ceph_20_mosdop() {
        // tentacle-v1-perf-msgr.pcap: the first MOSDOp's header (seq 1,
        // type 42, front 227, data 4096, from client.0, compat 3).
        let wire = hex::decode(
            "0100000000000000 0000000000000000 2a00 7f00 0900 e3000000 00000000 00100000 0000 \
             08 0000000000000000 0300 0000 db41a280",
        )
        .unwrap();
        let b: &[u8; MsgHeader::LEN] = wire.as_slice().try_into().unwrap();
        let h = MsgHeader::decode(b).unwrap();
        assert_eq!(
            (h.seq, h.tid, h.msg_type, h.priority, h.version),
            (1, 0, 42, 127, 9)
        );
        assert_eq!((h.front_len, h.middle_len, h.data_len), (227, 0, 4096));
        assert_eq!(h.src, EntityName::new(EntityType::CLIENT, 0));
        assert_eq!(h.compat_version, 3);
        assert_eq!(&h.encode()[..], &wire[..]);

        let mut bad = *b;
        bad[0] ^= 1;
        assert!(matches!(
            MsgHeader::decode(&bad),
            Err(WireError::BadHeaderCrc { .. })
        ));
    }

    #[test]
    fn footer_forms() {
        let f = Footer {
            front_crc: 1,
            middle_crc: 2,
            data_crc: 3,
            sig: 0x0102_0304_0506_0708,
            flags: footer_flags::COMPLETE | footer_flags::SIGNED,
        };
        assert_eq!(Footer::decode(&f.encode()), f);
        let old = Footer::decode(&f.encode_old());
        assert_eq!(old, Footer { sig: 0, ..f });
        assert_eq!((Footer::len(true), Footer::len(false)), (21, 13));
    }
}
