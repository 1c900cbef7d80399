//! The cluster log a client follows (librados's `rados_monitor_log`):
//! `MLog` (52) carrying `LogEntry`s, sent by the monitors to a session
//! subscribed to `log-debug`, `log-info`, `log-warn`, `log-error` or
//! `log-sec` (src/messages/MLog.h, src/common/LogEntry.{h,cc}).

use bytes::{BufMut, Bytes};
use msgr_encoding::{
    decode_versioned, encode_versioned, AuthName, Decode, DecodeError, DecodeResult, Decoder,
    Encode, EntityAddrvec, EntityName, UTime, Uuid, ENVELOPE_HEADER_LEN,
};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `MSG_LOG`: [`MLog`].
pub const MSG_LOG: u16 = 52;

/// `clog_type`: a log entry's priority.
pub mod prio {
    /// `CLOG_DEBUG`.
    pub const DEBUG: u16 = 0;
    /// `CLOG_INFO`.
    pub const INFO: u16 = 1;
    /// `CLOG_SEC`.
    pub const SEC: u16 = 2;
    /// `CLOG_WARN`.
    pub const WARN: u16 = 3;
    /// `CLOG_ERROR`.
    pub const ERROR: u16 = 4;
}

/// `LogEntry` (v5, Nautilus on): one line of the cluster log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Who logged it, by its auth name (`client.admin`, `mon.a`).
    pub name: AuthName,
    /// Its entity name (`client.4123`).
    pub rank: EntityName,
    /// Its addresses.
    pub addrs: EntityAddrvec,
    /// When.
    pub stamp: UTime,
    /// Its sequence number at the sender.
    pub seq: u64,
    /// Its priority ([`prio`]).
    pub prio: u16,
    /// The text.
    pub msg: String,
    /// The channel (`cluster`, `audit`).
    pub channel: String,
}

impl Encode for LogEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 5, 5, |o| {
            self.name.encode(o);
            self.rank.encode(o);
            self.addrs.encode(o);
            self.stamp.encode(o);
            o.put_u64_le(self.seq);
            o.put_u16_le(self.prio);
            self.msg.encode(o);
            self.channel.encode(o);
        });
    }
}

impl Decode for LogEntry {
    const MIN_ENCODED_LEN: usize = ENVELOPE_HEADER_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "LogEntry", 5, |d, v| {
            if v < 5 {
                // Pre-Nautilus entries (an entity_inst_t): no monitor we
                // speak to sends them.
                return Err(DecodeError::InvalidValue {
                    what: "LogEntry version (5 or newer expected)",
                    value: v.into(),
                });
            }
            Ok(LogEntry {
                name: AuthName::decode(d)?,
                rank: EntityName::decode(d)?,
                addrs: EntityAddrvec::decode(d)?,
                stamp: UTime::decode(d)?,
                seq: d.u64("LogEntry.seq")?,
                prio: d.u16("LogEntry.prio")?,
                msg: String::decode(d)?,
                channel: String::decode(d)?,
            })
        })
    }
}

/// `MLog`: log entries (to a subscriber, from the monitors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MLog {
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The entries, oldest first.
    pub entries: Vec<LogEntry>,
}

impl TypedMessage for MLog {
    const TYPE: u16 = MSG_LOG;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        // PaxosServiceMessage: version, deprecated session mon and tid.
        o.put_u64_le(0);
        o.put_i16_le(-1);
        o.put_u64_le(0);
        self.fsid.encode(&mut o);
        self.entries.encode(&mut o);
        let mut m = Message::new(MSG_LOG, Bytes::from(o));
        m.version = 1;
        m.compat_version = 1;
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_LOG)?;
        let mut d = Decoder::from_bytes(&msg.front);
        d.skip(18, "PaxosServiceMessage")?;
        Ok(MLog {
            fsid: Uuid::decode(&mut d)?,
            entries: Vec::decode(&mut d)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::EntityType;

    pub(crate) fn entry(seq: u64, msg: &str) -> LogEntry {
        LogEntry {
            name: AuthName {
                kind: EntityType::CLIENT,
                id: "admin".into(),
            },
            rank: EntityName::new(EntityType::CLIENT, 4123),
            addrs: "v2:127.0.0.1:0/77".parse().unwrap(),
            stamp: UTime { sec: 5, nsec: 6 },
            seq,
            prio: prio::INFO,
            msg: msg.into(),
            channel: "cluster".into(),
        }
    }

    #[test]
    fn an_mlog_round_trips_and_refuses_what_is_cut() {
        let m = MLog {
            fsid: Uuid([9; 16]),
            entries: vec![entry(1, "hello"), entry(2, "world")],
        };
        let raw = m.to_message(0);
        assert_eq!(MLog::from_message(&raw).unwrap(), m);
        for cut in 0..raw.front.len() {
            let mut short = raw.clone();
            short.front = raw.front.slice(..cut);
            assert!(MLog::from_message(&short).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn an_old_entry_is_a_typed_error() {
        let mut o = Vec::new();
        entry(1, "x").encode(&mut o);
        o[0] = 4;
        assert!(LogEntry::decode(&mut Decoder::new(&o)).is_err());
    }
}
