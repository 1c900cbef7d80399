//! `hobject_t` and MOSDBackoff (61): an OSD telling a client to hold its
//! requests for a range of objects of a PG, and to send them again when it
//! lifts the block (src/messages/MOSDBackoff.h, src/common/hobject.cc;
//! docs/research/rados-ops.md §1–2).

use std::cmp::Ordering;

use bytes::{BufMut, Bytes};
use msgr_encoding::{decode_versioned, encode_versioned, Decode, DecodeResult, Decoder, Encode};
use msgr_protocol::Message;

use crate::osd_types::{SpgId, NOSNAP};
use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_OSD_BACKOFF`.
pub const MSG_OSD_BACKOFF: u16 = 61;

/// `CEPH_OSD_BACKOFF_OP_*`.
pub mod backoff_op {
    /// `CEPH_OSD_BACKOFF_OP_BLOCK`: the OSD asks the client to stop sending ops for the range.
    pub const BLOCK: u8 = 1;
    /// `CEPH_OSD_BACKOFF_OP_ACK_BLOCK`: the client acknowledges a block.
    pub const ACK_BLOCK: u8 = 2;
    /// `CEPH_OSD_BACKOFF_OP_UNBLOCK`: the client may send (and resend) ops for the range.
    pub const UNBLOCK: u8 = 3;
}

/// `hobject_t`: an object as a PG orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HObject {
    /// The object's locator key (empty: its name).
    pub key: Bytes,
    /// The object's name.
    pub oid: Bytes,
    /// The snapshot id (`CEPH_NOSNAP` for the head).
    pub snap: u64,
    /// The object's full hash (not bit-reversed).
    pub hash: u32,
    /// The end of every range.
    pub max: bool,
    /// The object's namespace.
    pub nspace: Bytes,
    /// The pool id.
    pub pool: i64,
}

impl Default for HObject {
    /// `hobject_t()`: the least object.
    fn default() -> Self {
        HObject {
            key: Bytes::new(),
            oid: Bytes::new(),
            snap: 0,
            hash: 0,
            max: false,
            nspace: Bytes::new(),
            pool: i64::MIN,
        }
    }
}

impl HObject {
    /// The head of object `oid` (locator `key`) with `hash` in `pool` and
    /// `nspace`: what a request is about.
    pub fn head(pool: i64, oid: Bytes, key: Bytes, nspace: Bytes, hash: u32) -> HObject {
        HObject {
            key,
            oid,
            snap: NOSNAP,
            hash,
            max: false,
            nspace,
            pool,
        }
    }

    /// `hobject_t::get_max()`.
    pub fn max() -> HObject {
        HObject {
            max: true,
            ..HObject::default()
        }
    }

    /// The start of a PG's range in bitwise order (`pg_t::get_hobj_start`).
    pub fn pg_start(pool: i64, seed: u32) -> HObject {
        HObject {
            hash: seed,
            pool,
            ..HObject::default()
        }
    }

    /// `get_bitwise_key`: the hash with its bits reversed, past every hash
    /// for the max object.
    fn bitwise_key(&self) -> u64 {
        if self.max {
            1 << 32
        } else {
            u64::from(self.hash.reverse_bits())
        }
    }

    /// The locator key, or the name if there is none.
    fn effective_key(&self) -> &Bytes {
        if self.key.is_empty() {
            &self.oid
        } else {
            &self.key
        }
    }
}

impl Ord for HObject {
    /// `cmp(hobject_t, hobject_t)`: max, pool, reversed hash, namespace,
    /// locator key (unless both have none), name, snap.
    fn cmp(&self, o: &Self) -> Ordering {
        let keys = if self.key.is_empty() && o.key.is_empty() {
            Ordering::Equal
        } else {
            self.effective_key().cmp(o.effective_key())
        };
        self.max
            .cmp(&o.max)
            .then(self.pool.cmp(&o.pool))
            .then(self.bitwise_key().cmp(&o.bitwise_key()))
            .then(self.nspace.cmp(&o.nspace))
            .then(keys)
            .then(self.oid.cmp(&o.oid))
            .then(self.snap.cmp(&o.snap))
    }
}

impl PartialOrd for HObject {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Encode for HObject {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 4, 3, |o| {
            self.key.encode(o);
            self.oid.encode(o);
            o.put_u64_le(self.snap);
            o.put_u32_le(self.hash);
            o.put_u8(u8::from(self.max));
            self.nspace.encode(o);
            o.put_i64_le(self.pool);
        });
    }
}

impl Decode for HObject {
    const MIN_ENCODED_LEN: usize = 6;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "hobject_t", 4, |d, v| {
            if v < 4 {
                return Err(msgr_encoding::DecodeError::VersionTooOld {
                    what: "hobject_t",
                    version: v,
                    oldest: 4,
                });
            }
            let h = HObject {
                key: Bytes::decode(d)?,
                oid: Bytes::decode(d)?,
                snap: d.u64("hobject_t.snap")?,
                hash: d.u32("hobject_t.hash")?,
                max: d.u8("hobject_t.max")? != 0,
                nspace: Bytes::decode(d)?,
                pool: d.u64("hobject_t.pool")? as i64,
            };
            // Every max object is the one max object.
            Ok(if h.max { HObject::max() } else { h })
        })
    }
}

/// MOSDBackoff (v1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MOSDBackoff {
    /// The PG (and shard) the backoff is for.
    pub pgid: SpgId,
    /// The OSD map epoch the OSD sent it at.
    pub map_epoch: u32,
    /// [`backoff_op`].
    pub op: u8,
    /// The backoff's id, which its unblock names.
    pub id: u64,
    /// `[begin, end)`, or the one object when they are equal.
    pub begin: HObject,
    /// The end of the range.
    pub end: HObject,
}

impl MOSDBackoff {
    /// Whether `h` is in the range.
    pub fn covers(&self, h: &HObject) -> bool {
        in_range(h, &self.begin, &self.end)
    }

    /// The acknowledgement a client sends for a BLOCK: the same PG, epoch,
    /// id and range.
    pub fn ack(&self) -> MOSDBackoff {
        MOSDBackoff {
            op: backoff_op::ACK_BLOCK,
            ..self.clone()
        }
    }
}

/// `h` in `[begin, end)`, or `h == begin` (a one-object range).
pub fn in_range(h: &HObject, begin: &HObject, end: &HObject) -> bool {
    match h.cmp(begin) {
        Ordering::Equal => true,
        Ordering::Greater => h < end,
        Ordering::Less => false,
    }
}

impl TypedMessage for MOSDBackoff {
    const TYPE: u16 = MSG_OSD_BACKOFF;

    fn to_message(&self, _features: u64) -> Message {
        let mut o = Vec::new();
        self.pgid.encode(&mut o);
        o.put_u32_le(self.map_epoch);
        o.put_u8(self.op);
        o.put_u64_le(self.id);
        self.begin.encode(&mut o);
        self.end.encode(&mut o);
        let mut m = Message::new(MSG_OSD_BACKOFF, Bytes::from(o));
        // As the objecter sends its ops.
        m.priority = 63;
        m.version = 1;
        m.compat_version = 1;
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_OSD_BACKOFF)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MOSDBackoff {
            pgid: SpgId::decode(&mut d)?,
            map_epoch: d.u32("MOSDBackoff.map_epoch")?,
            op: d.u8("MOSDBackoff.op")?,
            id: d.u64("MOSDBackoff.id")?,
            begin: HObject::decode(&mut d)?,
            end: HObject::decode(&mut d)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_max_encode_as_ceph_writes_them() {
        let mut o = Vec::new();
        HObject::default().encode(&mut o);
        let mut want = vec![4, 3, 0x21, 0, 0, 0];
        want.extend_from_slice(&[0; 4 + 4 + 8 + 4 + 1 + 4]);
        want.extend_from_slice(&i64::MIN.to_le_bytes());
        assert_eq!(o, want);
        let back = HObject::decode(&mut Decoder::new(&o)).expect("decodes");
        assert_eq!(back, HObject::default());
    }

    #[test]
    fn order_is_by_reversed_hash_then_names() {
        let h = |hash: u32, name: &'static [u8]| {
            HObject::head(
                1,
                Bytes::from_static(name),
                Bytes::new(),
                Bytes::new(),
                hash,
            )
        };
        // 0x1 reversed is 0x80000000: after 0x2 reversed (0x40000000).
        assert!(h(2, b"a") < h(1, b"a"));
        assert!(h(1, b"a") < h(1, b"b"));
        assert!(h(1, b"z") < HObject::max());
        assert!(HObject::default() < h(0, b""));
        let b = MOSDBackoff {
            pgid: SpgId::default(),
            map_epoch: 5,
            op: backoff_op::BLOCK,
            id: 1,
            begin: HObject::pg_start(1, 0),
            end: HObject::max(),
        };
        assert!(b.covers(&h(7, b"x")));
        let one = MOSDBackoff {
            end: h(3, b"x"),
            begin: h(3, b"x"),
            ..b.clone()
        };
        assert!(one.covers(&h(3, b"x")) && !one.covers(&h(3, b"y")));
        let m = b.ack().to_message(0);
        assert_eq!(MOSDBackoff::from_message(&m).expect("decodes"), b.ack());
    }
}
