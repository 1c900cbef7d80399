//! A service daemon's session with the mgr (librados's
//! `rados_service_register`, MgrClient): MMgrOpen (`MSG_MGR_OPEN`,
//! src/messages/MMgrOpen.h) registers the daemon with its metadata, and
//! MMgrReport (`MSG_MGR_REPORT`, MMgrReport.h) beacons it with its status.
//! The report is sent at version 3 (daemon, no perf counters, service and
//! status), which every mgr since Luminous reads (compat 1).

use bytes::Bytes;
use msgr_encoding::{Decode, Decoder, Encode};
use msgr_protocol::Message;
use std::collections::BTreeMap;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `MSG_MGR_OPEN`: [`MMgrOpen`].
pub const MSG_MGR_OPEN: u16 = 0x700;
/// `MSG_MGR_CONFIGURE`: the mgr's answer (stats period).
pub const MSG_MGR_CONFIGURE: u16 = 0x701;
/// `MSG_MGR_REPORT`: [`MMgrReport`].
pub const MSG_MGR_REPORT: u16 = 0x702;

/// `MMgrOpen` (v3): a session opens, as a service daemon when
/// `service_daemon`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MMgrOpen {
    /// The daemon's name within its service.
    pub daemon_name: String,
    /// The service (`rgw`).
    pub service_name: String,
    /// Whether it is a service daemon (then the maps below go).
    pub service_daemon: bool,
    /// Static metadata.
    pub daemon_metadata: BTreeMap<String, String>,
    /// Status.
    pub daemon_status: BTreeMap<String, String>,
}

impl TypedMessage for MMgrOpen {
    const TYPE: u16 = MSG_MGR_OPEN;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.daemon_name.encode(&mut o);
        self.service_name.encode(&mut o);
        self.service_daemon.encode(&mut o);
        if self.service_daemon {
            self.daemon_metadata.encode(&mut o);
            self.daemon_status.encode(&mut o);
        }
        // config_bl, config_defaults_bl: empty.
        Bytes::new().encode(&mut o);
        Bytes::new().encode(&mut o);
        let mut m = Message::new(MSG_MGR_OPEN, Bytes::from(o));
        m.version = 3;
        m.compat_version = 1;
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MGR_OPEN)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let daemon_name = String::decode(&mut d)?;
        let service_name = String::decode(&mut d)?;
        let service_daemon = bool::decode(&mut d)?;
        let (daemon_metadata, daemon_status) = if service_daemon {
            (BTreeMap::decode(&mut d)?, BTreeMap::decode(&mut d)?)
        } else {
            Default::default()
        };
        Ok(MMgrOpen {
            daemon_name,
            service_name,
            service_daemon,
            daemon_metadata,
            daemon_status,
        })
    }
}

/// MMgrReport's `packed` with no counters: `ENCODE_START(1, 1)` of
/// nothing (version, compat, a zero length).
pub const PACKED_NONE: [u8; 6] = [1, 1, 0, 0, 0, 0];

/// `MMgrReport` (v3): a beacon, with the status when it changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MMgrReport {
    /// The daemon's name within its service.
    pub daemon_name: String,
    /// The service.
    pub service_name: String,
    /// The status, if it is to be updated.
    pub daemon_status: Option<BTreeMap<String, String>>,
}

impl TypedMessage for MMgrReport {
    const TYPE: u16 = MSG_MGR_REPORT;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.daemon_name.encode(&mut o);
        // declare_types (none); packed: the counters' values in an
        // envelope of version 1, which the mgr opens even when it holds
        // no counter (DaemonPerfCounters::update's DECODE_START: an empty
        // bufferlist there throws, and aborts a Ceph 16 mgr);
        // undeclare_types (none).
        0u32.encode(&mut o);
        Bytes::from_static(&PACKED_NONE).encode(&mut o);
        0u32.encode(&mut o);
        self.service_name.encode(&mut o);
        self.daemon_status.encode(&mut o);
        let mut m = Message::new(MSG_MGR_REPORT, Bytes::from(o));
        m.version = 3;
        m.compat_version = 1;
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MGR_REPORT)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let daemon_name = String::decode(&mut d)?;
        let _types = u32::decode(&mut d)?;
        let packed = Bytes::decode(&mut d)?;
        if packed.as_ref() != PACKED_NONE {
            return Err(MessageError::Decode(
                msgr_encoding::DecodeError::InvalidValue {
                    what: "MMgrReport packed counters (none expected)",
                    value: packed.len() as u64,
                },
            ));
        }
        let _undeclared = u32::decode(&mut d)?;
        Ok(MMgrReport {
            daemon_name,
            service_name: String::decode(&mut d)?,
            daemon_status: Option::decode(&mut d)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let open = MMgrOpen {
            daemon_name: "gw1".into(),
            service_name: "rgw".into(),
            service_daemon: true,
            daemon_metadata: BTreeMap::from([("a".into(), "1".into())]),
            daemon_status: BTreeMap::new(),
        };
        let m = open.to_message(0);
        assert_eq!((m.version, m.compat_version), (3, 1));
        assert_eq!(MMgrOpen::from_message(&m).unwrap(), open);
        let report = MMgrReport {
            daemon_name: "gw1".into(),
            service_name: "rgw".into(),
            daemon_status: Some(BTreeMap::from([("s".into(), "ok".into())])),
        };
        let m = report.to_message(0);
        assert_eq!(MMgrReport::from_message(&m).unwrap(), report);
        // daemon name, no types, the packed envelope.
        let front = m.front.as_ref();
        assert_eq!(&front[..7], &[3, 0, 0, 0, b'g', b'w', b'1']);
        assert_eq!(&front[7..11], &[0, 0, 0, 0]);
        assert_eq!(&front[11..21], &[6, 0, 0, 0, 1, 1, 0, 0, 0, 0]);
    }
}
