//! MWatchNotify (44): an OSD telling a watcher of a notify, a notifier of
//! its notify's end, or a watcher that its watch is gone
//! (src/messages/MWatchNotify.h); and what the watch ops return: a
//! notify's collected replies (`Notify::maybe_complete_notify`,
//! `rados_decode_notify_response`) and LIST_WATCHERS' list
//! (`obj_list_watch_response_t`, `watch_item_t` in src/osd/osd_types.h).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use msgr_encoding::{decode_versioned, Decode, DecodeResult, Decoder, EntityAddr, EntityName};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_WATCH_NOTIFY`.
pub const MSG_WATCH_NOTIFY: u16 = 44;

/// `CEPH_WATCH_EVENT_*`: what an MWatchNotify says.
pub mod event {
    /// `CEPH_WATCH_EVENT_NOTIFY`: a notify for a watcher, to acknowledge.
    pub const NOTIFY: u8 = 1;
    /// `CEPH_WATCH_EVENT_NOTIFY_COMPLETE`: a notify's end, to its notifier,
    /// with every watcher's reply (in the message's data).
    pub const NOTIFY_COMPLETE: u8 = 2;
    /// `CEPH_WATCH_EVENT_DISCONNECT`: the watch is gone (the object was
    /// deleted, the watch timed out).
    pub const DISCONNECT: u8 = 3;
}

/// MWatchNotify, header version 3 (compat 1): version 1 has no return code,
/// 2 no notifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MWatchNotify {
    /// [`event`]: what happened.
    pub opcode: u8,
    /// The watch's (or the notify's) cookie.
    pub cookie: u64,
    /// The object's version (unused by clients).
    pub ver: u64,
    /// The notify's id (what a watcher acknowledges).
    pub notify_id: u64,
    /// A notify's payload, for a watcher.
    pub payload: Bytes,
    /// A completed notify's result (`-ETIMEDOUT` if a watcher did not
    /// acknowledge in time).
    pub return_code: i32,
    /// The notifier's global id (`client.N`).
    pub notifier_gid: u64,
    /// The message's data: a completed notify's replies
    /// ([`NotifyResponse`]).
    pub data: Bytes,
}

impl TypedMessage for MWatchNotify {
    const TYPE: u16 = MSG_WATCH_NOTIFY;

    fn to_message(&self, _features: u64) -> Message {
        let mut o = Vec::with_capacity(49usize.saturating_add(self.payload.len()));
        // The payload's own version byte: 1 (the payload follows).
        o.put_u8(1);
        o.put_u8(self.opcode);
        o.put_u64_le(self.cookie);
        o.put_u64_le(self.ver);
        o.put_u64_le(self.notify_id);
        o.put_u32_le(self.payload.len() as u32);
        o.extend_from_slice(&self.payload);
        o.put_i32_le(self.return_code);
        o.put_u64_le(self.notifier_gid);
        let mut m = Message::new(MSG_WATCH_NOTIFY, Bytes::from(o));
        m.version = 3;
        m.compat_version = 1;
        m.data = self.data.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_WATCH_NOTIFY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let msg_ver = d.u8("MWatchNotify.msg_ver")?;
        let opcode = d.u8("MWatchNotify.opcode")?;
        let cookie = d.u64("MWatchNotify.cookie")?;
        let ver = d.u64("MWatchNotify.ver")?;
        let notify_id = d.u64("MWatchNotify.notify_id")?;
        let payload = match msg_ver >= 1 {
            true => Bytes::decode(&mut d)?,
            false => Bytes::new(),
        };
        let return_code = match msg.version >= 2 {
            true => d.u32("MWatchNotify.return_code")? as i32,
            false => 0,
        };
        let notifier_gid = match msg.version >= 3 {
            true => d.u64("MWatchNotify.notifier_gid")?,
            false => 0,
        };
        Ok(MWatchNotify {
            opcode,
            cookie,
            ver,
            notify_id,
            payload,
            return_code,
            notifier_gid,
            data: msg.data.clone(),
        })
    }
}

/// A watcher, as a notify's replies name it: its client's global id and
/// its watch's cookie.
pub type WatcherId = (u64, u64);

/// What a completed notify collected: each watcher's reply payload, and
/// the watchers that did not acknowledge in time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyResponse {
    /// `(gid, cookie)` to the watcher's reply, in Ceph's order.
    pub acks: BTreeMap<WatcherId, Bytes>,
    /// The watchers that timed out.
    pub timeouts: Vec<WatcherId>,
}

impl NotifyResponse {
    /// Decodes `map<pair<u64,u64>, bufferlist>` then the timed-out
    /// watchers (`set` or `vector` of `pair<u64,u64>`, encoded alike);
    /// an empty buffer is an empty response (no watcher).
    pub fn decode(data: &Bytes) -> DecodeResult<NotifyResponse> {
        if data.is_empty() {
            return Ok(NotifyResponse::default());
        }
        let mut d = Decoder::from_bytes(data);
        let n = d.length("notify acks", 20)?;
        let mut acks = BTreeMap::new();
        for _ in 0..n {
            let gid = d.u64("notify ack gid")?;
            let cookie = d.u64("notify ack cookie")?;
            let reply = Bytes::decode(&mut d)?;
            acks.insert((gid, cookie), reply);
        }
        let n = d.length("notify timeouts", 16)?;
        let mut timeouts = Vec::with_capacity(n);
        for _ in 0..n {
            let gid = d.u64("notify timeout gid")?;
            let cookie = d.u64("notify timeout cookie")?;
            timeouts.push((gid, cookie));
        }
        Ok(NotifyResponse { acks, timeouts })
    }

    /// Encodes as the OSD does (for tests and scripted OSDs).
    pub fn encode(&self) -> Bytes {
        let mut o = Vec::new();
        o.put_u32_le(self.acks.len() as u32);
        for ((gid, cookie), reply) in &self.acks {
            o.put_u64_le(*gid);
            o.put_u64_le(*cookie);
            o.put_u32_le(reply.len() as u32);
            o.extend_from_slice(reply);
        }
        o.put_u32_le(self.timeouts.len() as u32);
        for (gid, cookie) in &self.timeouts {
            o.put_u64_le(*gid);
            o.put_u64_le(*cookie);
        }
        Bytes::from(o)
    }
}

/// One watcher of an object (`watch_item_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchItem {
    /// The watching entity (`client.N`).
    pub name: EntityName,
    /// Its watch's cookie.
    pub cookie: u64,
    /// The watch's timeout, in seconds.
    pub timeout_seconds: u32,
    /// The watcher's address (version 2 on).
    pub addr: Option<EntityAddr>,
}

/// Decodes LIST_WATCHERS' output (`obj_list_watch_response_t`: a
/// versioned list of versioned `watch_item_t`).
pub fn decode_watchers(data: &Bytes) -> DecodeResult<Vec<WatchItem>> {
    let mut d = Decoder::from_bytes(data);
    decode_versioned(&mut d, "obj_list_watch_response_t", 1, |d, _| {
        // A watch_item_t is at least its 6-byte envelope, a 9-byte name,
        // a cookie and a timeout.
        let n = d.length("watchers", 27)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(decode_versioned(d, "watch_item_t", 2, |d, v| {
                let name = EntityName::decode(d)?;
                let cookie = d.u64("watch_item_t.cookie")?;
                let timeout_seconds = d.u32("watch_item_t.timeout_seconds")?;
                let addr = match v >= 2 {
                    true => Some(EntityAddr::decode(d)?),
                    false => None,
                };
                Ok(WatchItem {
                    name,
                    cookie,
                    timeout_seconds,
                    addr,
                })
            })?);
        }
        Ok(items)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A notify as Ceph 16 and later send it (version 3), read back.
    #[test]
    fn round_trips_at_version_3() {
        let m = MWatchNotify {
            opcode: event::NOTIFY,
            cookie: 0x55aa,
            ver: 7,
            notify_id: 1234,
            payload: Bytes::from_static(b"hello"),
            return_code: -110,
            notifier_gid: 4242,
            data: Bytes::new(),
        };
        let raw = m.to_message(0);
        assert_eq!(raw.version, 3);
        // msg_ver, opcode, cookie, ver, notify_id, bl, return_code, gid.
        assert_eq!(raw.front.len(), 1 + 1 + 8 + 8 + 8 + 4 + 5 + 4 + 8);
        assert_eq!(&raw.front[..2], &[1, event::NOTIFY]);
        assert_eq!(MWatchNotify::from_message(&raw).unwrap(), m);
    }

    /// Version 1 carries neither return code nor notifier.
    #[test]
    fn older_versions_leave_out_the_later_fields() {
        let m = MWatchNotify {
            opcode: event::DISCONNECT,
            cookie: 1,
            ver: 0,
            notify_id: 0,
            payload: Bytes::new(),
            return_code: -5,
            notifier_gid: 9,
            data: Bytes::new(),
        };
        let mut raw = m.to_message(0);
        raw.version = 1;
        let got = MWatchNotify::from_message(&raw).unwrap();
        assert_eq!((got.return_code, got.notifier_gid), (0, 0));
        assert_eq!(got.opcode, event::DISCONNECT);
    }

    #[test]
    fn truncated_front_is_an_error() {
        let raw = Message::new(MSG_WATCH_NOTIFY, Bytes::from_static(&[1, 1, 0, 0]));
        assert!(MWatchNotify::from_message(&raw).is_err());
    }

    #[test]
    fn notify_response_round_trips_and_refuses_hostile_counts() {
        let mut r = NotifyResponse::default();
        r.acks.insert((4100, 1), Bytes::from_static(b"pong"));
        r.acks.insert((4101, 2), Bytes::new());
        r.timeouts.push((4102, 3));
        assert_eq!(NotifyResponse::decode(&r.encode()).unwrap(), r);
        let hostile = Bytes::from_static(&[0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]);
        assert!(NotifyResponse::decode(&hostile).is_err());
        assert_eq!(
            NotifyResponse::decode(&Bytes::new()).unwrap(),
            NotifyResponse::default()
        );
    }

    #[test]
    fn watchers_decode_versions_1_and_2() {
        // Version 1 item: name (type 8 = client, num 4100), cookie, timeout.
        let mut item = Vec::new();
        item.put_u8(8);
        item.put_i64_le(4100);
        item.put_u64_le(77);
        item.put_u32_le(30);
        let mut list = Vec::new();
        list.put_u32_le(1);
        list.extend_from_slice(&[1, 1]);
        list.put_u32_le(item.len() as u32);
        list.extend_from_slice(&item);
        let mut all = vec![1, 1];
        all.put_u32_le(list.len() as u32);
        all.extend_from_slice(&list);
        let got = decode_watchers(&Bytes::from(all)).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].name.num, got[0].cookie, got[0].timeout_seconds),
            (4100, 77, 30)
        );
        assert!(got[0].addr.is_none());
        // A count past what the buffer holds is refused.
        let hostile = Bytes::from_static(&[1, 1, 4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert!(decode_watchers(&hostile).is_err());
    }
}
