//! MOSDOp (42) and MOSDOpReply (43), as Ceph 16 and 20 encode them over
//! msgr2 (src/messages/MOSDOp.h, MOSDOpReply.h; layouts and captured bytes in
//! docs/research/messages-osdop.md §2–3).

use bytes::{BufMut, Bytes};
use msgr_encoding::{Decode, Decoder, Encode, UTime};
use msgr_protocol::features::{self, has};
use msgr_protocol::Message;

use crate::osd_types::*;
use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_OSD_OP`.
pub const MSG_OSD_OP: u16 = 42;
/// `CEPH_MSG_OSD_OPREPLY`.
pub const MSG_OSD_OPREPLY: u16 = 43;

/// An OSD request: which object, which ops, and the ops' input data (the
/// message's data segment, `payload_len` bytes per op in op order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MOSDOp {
    /// The request's transaction id, echoed by the reply.
    pub tid: u64,
    /// The message priority (`CEPH_MSG_PRIO_*`).
    pub priority: u16,
    /// The PG (and shard) the object maps to.
    pub pgid: SpgId,
    /// The object's full 32-bit hash.
    pub hash: u32,
    /// The OSD map epoch the client computed the target at.
    pub osdmap_epoch: u32,
    /// CEPH_OSD_FLAG_*.
    pub flags: u32,
    /// The request's id: client name, tid and incarnation.
    pub reqid: ReqId,
    /// The blkin trace (empty unless tracing).
    pub trace: BlkinTrace,
    /// v9 only.
    pub otel: OtelTrace,
    /// The client's incarnation.
    pub client_inc: u32,
    /// The modification time for writes.
    pub mtime: UTime,
    /// The object's locator: pool, key, namespace.
    pub oloc: ObjectLocator,
    /// The object's name: a byte string, as Ceph's are (a `std::string`
    /// with no encoding; not necessarily UTF-8). Decoded without a copy.
    pub oid: Bytes,
    /// The ops, run in order on the object.
    pub ops: Vec<OsdOp>,
    /// The snapshot to read (`CEPH_NOSNAP`: the head).
    pub snapid: u64,
    /// The write's snap context: the newest snapshot sequence.
    pub snap_seq: u64,
    /// The write's snap context: the existing snapshots, newest first.
    pub snaps: Vec<u64>,
    /// How many times the request was resent (0: first send).
    pub retry_attempt: i32,
    /// The sender's connection features (Ceph writes the features the
    /// message was encoded for).
    pub features: u64,
    /// The ops' input data, each op's share in order (`payload_len`).
    pub data: Bytes,
}

impl MOSDOp {
    /// A write of `data` at `offset` into `oid` in pool `pool` (the shape
    /// of ceph_perf_msgr_client's requests when `perf_style`: payload_len 0,
    /// like `MOSDOp::write`; otherwise Objecter's, payload_len = data).
    pub fn write(
        tid: u64,
        pool: u64,
        oid: &str,
        offset: u64,
        data: Bytes,
        perf_style: bool,
    ) -> MOSDOp {
        let mut op = OsdOp::extent(op::WRITE, offset, data.len() as u64);
        if !perf_style {
            op.payload_len = data.len() as u32;
        }
        MOSDOp {
            tid,
            priority: 127,
            pgid: SpgId {
                pgid: PgId { pool, seed: 0 },
                shard: -1,
            },
            hash: 0,
            osdmap_epoch: 0,
            flags: 0,
            reqid: ReqId::default(),
            trace: [0; 24],
            otel: OtelTrace::default(),
            client_inc: 0,
            mtime: UTime::default(),
            oloc: ObjectLocator {
                pool: pool as i64,
                ..Default::default()
            },
            oid: Bytes::copy_from_slice(oid.as_bytes()),
            ops: vec![op],
            snapid: NOSNAP,
            snap_seq: 0,
            snaps: Vec::new(),
            retry_attempt: -1,
            features: 0,
            data,
        }
    }

    fn version_for(features: u64) -> u16 {
        if has(features, features::SERVER_SQUID) {
            9
        } else {
            8
        }
    }

    /// The encoded length of the front for `version`: the front is built in
    /// a buffer of exactly this size, which `Bytes` then owns without a
    /// separate allocation for its reference count. Saturates at
    /// `usize::MAX`, which only a message too large to encode would reach
    /// (its variable parts are buffers held in memory).
    pub fn front_len(&self, version: u16) -> usize {
        const SPG_T: usize = ENVELOPE + 17 + 1;
        const REQID: usize = ENVELOPE + 9 + 8 + 4;
        const ENVELOPE: usize = msgr_encoding::ENVELOPE_HEADER_LEN;
        let otel = if version >= 9 { self.otel.0.len() } else { 0 };
        [
            SPG_T,
            12,
            REQID,
            24,
            otel,
            4,
            8,
            // oloc: envelope, pool, preferred, key, namespace, hash
            ENVELOPE + 8 + 4 + 4,
            self.oloc.key.len(),
            4,
            self.oloc.nspace.len(),
            8,
            4,
            self.oid.len(),
            2,
            self.ops.len().saturating_mul(OsdOp::LEN),
            16,
            4,
            self.snaps.len().saturating_mul(8),
            4,
            8,
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }

    /// The front (payload) as encoded for `version` 8 or 9.
    pub fn encode_front(&self, version: u16, conn_features: u64) -> Bytes {
        let len = self.front_len(version);
        let mut o = Vec::with_capacity(len);
        self.pgid.encode(&mut o);
        o.put_u32_le(self.hash);
        o.put_u32_le(self.osdmap_epoch);
        o.put_u32_le(self.flags);
        self.reqid.encode(&mut o);
        o.put_slice(&self.trace);
        if version >= 9 {
            self.otel.encode(&mut o);
        }
        o.put_u32_le(self.client_inc);
        self.mtime.encode(&mut o);
        self.oloc.encode(&mut o);
        self.oid.encode(&mut o);
        o.put_u16_le(self.ops.len() as u16);
        for op in &self.ops {
            op.encode(&mut o);
        }
        o.put_u64_le(self.snapid);
        o.put_u64_le(self.snap_seq);
        self.snaps.encode(&mut o);
        o.put_i32_le(self.retry_attempt);
        let f = if self.features != 0 {
            self.features
        } else {
            conn_features
        };
        o.put_u64_le(f);
        debug_assert_eq!(o.len(), len, "MOSDOp::front_len");
        Bytes::from(o)
    }
}

impl TypedMessage for MOSDOp {
    const TYPE: u16 = MSG_OSD_OP;

    fn to_message(&self, features: u64) -> Message {
        let version = Self::version_for(features);
        let mut m = Message::new(MSG_OSD_OP, self.encode_front(version, features));
        m.tid = self.tid;
        m.priority = self.priority;
        m.version = version;
        m.compat_version = 3;
        m.data = self.data.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_OSD_OP)?;
        if !(8..=9).contains(&msg.version) {
            return Err(MessageError::UnsupportedVersion {
                msg_type: MSG_OSD_OP,
                version: msg.version,
            });
        }
        let mut d = Decoder::from_bytes(&msg.front);
        let pgid = SpgId::decode(&mut d)?;
        let hash = d.u32("MOSDOp.hash")?;
        let osdmap_epoch = d.u32("MOSDOp.osdmap_epoch")?;
        let flags = d.u32("MOSDOp.flags")?;
        let reqid = ReqId::decode(&mut d)?;
        let trace = d.array("MOSDOp.trace")?;
        let otel = if msg.version >= 9 {
            OtelTrace::decode(&mut d)?
        } else {
            OtelTrace::default()
        };
        let client_inc = d.u32("MOSDOp.client_inc")?;
        let mtime = UTime::decode(&mut d)?;
        let oloc = ObjectLocator::decode(&mut d)?;
        let oid = Bytes::decode(&mut d)?;
        let num_ops = d.u16("MOSDOp.num_ops")? as usize;
        if num_ops > d.remaining() / OsdOp::LEN {
            return Err(msgr_encoding::DecodeError::LengthTooLarge {
                what: "MOSDOp.ops",
                claimed: num_ops as u64,
                max: (d.remaining() / OsdOp::LEN) as u64,
            }
            .into());
        }
        let ops = (0..num_ops)
            .map(|_| OsdOp::decode(&mut d))
            .collect::<Result<Vec<_>, _>>()?;
        let snapid = d.u64("MOSDOp.snapid")?;
        let snap_seq = d.u64("MOSDOp.snap_seq")?;
        let snaps = Vec::<u64>::decode(&mut d)?;
        let retry_attempt = d.u32("MOSDOp.retry_attempt")? as i32;
        let features = d.u64("MOSDOp.features")?;
        Ok(MOSDOp {
            tid: msg.tid,
            priority: msg.priority,
            pgid,
            hash,
            osdmap_epoch,
            flags,
            reqid,
            trace,
            otel,
            client_inc,
            mtime,
            oloc,
            oid,
            ops,
            snapid,
            snap_seq,
            snaps,
            retry_attempt,
            features,
            data: msg.data.clone(),
        })
    }
}

/// An OSD's answer (v8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MOSDOpReply {
    /// The request's transaction id.
    pub tid: u64,
    /// The message priority (`CEPH_MSG_PRIO_*`).
    pub priority: u16,
    /// The object's name (bytes, as in [`MOSDOp::oid`]).
    pub oid: Bytes,
    /// The PG that answered.
    pub pgid: PgId,
    /// The request's `CEPH_OSD_FLAG_*` (ACK, ONDISK, ...).
    pub flags: i64,
    /// 0, or a negative errno for the request as a whole.
    pub result: i32,
    /// Unused (`bad_replay_version`), kept as received.
    pub bad_replay_version: Eversion,
    /// The OSD map epoch the OSD answered at.
    pub osdmap_epoch: u32,
    /// The ops with their results (`rval`) and output lengths.
    pub ops: Vec<OsdOp>,
    /// The request's retry_attempt, echoed.
    pub retry_attempt: i32,
    /// The PG log version the write was given (`replay_version`).
    pub replay_version: Eversion,
    /// The object's user-visible version after the op.
    pub user_version: u64,
    /// `do_redirect`: the OSD sends the request elsewhere (a cache tier's
    /// forwarding modes send reads to the base pool).
    pub redirect: Option<RequestRedirect>,
    /// The blkin trace (empty unless tracing).
    pub trace: BlkinTrace,
    /// The ops' output data, each op's share in order (`payload_len`).
    pub data: Bytes,
}

/// `request_redirect_t` (src/osd/osd_types.h): where to send a request
/// instead, `ENCODE_START(1, 1)`: the locator, the object's name (empty:
/// the same), and the legacy `osd_instructions` (a bufferlist, written
/// empty, skipped).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestRedirect {
    /// Where to send the request instead: pool, key, namespace.
    pub locator: ObjectLocator,
    /// The object's name there (empty: the same).
    pub object: Bytes,
}

impl Encode for RequestRedirect {
    fn encode(&self, out: &mut Vec<u8>) {
        msgr_encoding::encode_versioned(out, 1, 1, |o| {
            self.locator.encode(o);
            self.object.encode(o);
            o.put_u32_le(0);
        });
    }
}

impl Decode for RequestRedirect {
    fn decode(d: &mut Decoder<'_>) -> msgr_encoding::DecodeResult<Self> {
        msgr_encoding::decode_versioned(d, "request_redirect_t", 1, |d, _| {
            let locator = ObjectLocator::decode(d)?;
            let object = Bytes::decode(d)?;
            let instructions = d.length("request_redirect_t.osd_instructions", 1)?;
            d.skip(instructions, "request_redirect_t.osd_instructions")?;
            Ok(RequestRedirect { locator, object })
        })
    }
}

impl MOSDOpReply {
    /// The reply ceph_perf_msgr_server sends (`MOSDOpReply(req, 0, 0, 0,
    /// false)` over a request it never fully decoded): no ops, no name.
    pub fn perf_reply(req_tid: u64, pgid: PgId, req_flags: u32) -> MOSDOpReply {
        MOSDOpReply {
            tid: req_tid,
            priority: 127,
            oid: Bytes::new(),
            pgid,
            flags: (req_flags as i64) & !0x7,
            result: 0,
            bad_replay_version: Eversion::default(),
            osdmap_epoch: 0,
            ops: Vec::new(),
            retry_attempt: -1,
            replay_version: Eversion::default(),
            user_version: 0,
            redirect: None,
            trace: [0; 24],
            data: Bytes::new(),
        }
    }

    /// A real OSD's reply to `req` with `result`, echoing its ops (their
    /// input data dropped). Takes the request: its name and ops move into
    /// the reply.
    pub fn answering(req: MOSDOp, result: i32) -> MOSDOpReply {
        let mut ops = req.ops;
        for o in &mut ops {
            o.payload_len = 0;
            o.rval = 0;
        }
        MOSDOpReply {
            tid: req.tid,
            priority: 127,
            oid: req.oid,
            pgid: req.pgid.pgid,
            flags: ((req.flags as i64) & !0x7) | 0x5,
            result,
            bad_replay_version: Eversion::default(),
            osdmap_epoch: req.osdmap_epoch,
            ops,
            retry_attempt: req.retry_attempt,
            replay_version: Eversion::default(),
            user_version: 0,
            redirect: None,
            trace: [0; 24],
            data: Bytes::new(),
        }
    }
}

impl MOSDOpReply {
    /// The encoded length of the front (v8), for an exact-size buffer.
    /// Saturates at `usize::MAX`, as [`MOSDOp::front_len`] does.
    pub fn front_len(&self) -> usize {
        [
            4,
            self.oid.len(),
            17,
            8,
            4,
            12,
            4,
            4,
            self.ops.len().saturating_mul(OsdOp::LEN + 4),
            4,
            12,
            8,
            1,
            self.redirect.as_ref().map_or(0, |r| {
                // Rare (cache tiers only): measured by encoding it.
                let mut v = Vec::new();
                r.encode(&mut v);
                v.len()
            }),
            24,
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }
}

impl TypedMessage for MOSDOpReply {
    const TYPE: u16 = MSG_OSD_OPREPLY;

    fn to_message(&self, _features: u64) -> Message {
        let len = self.front_len();
        let mut o = Vec::with_capacity(len);
        self.oid.encode(&mut o);
        self.pgid.encode(&mut o);
        o.put_i64_le(self.flags);
        o.put_i32_le(self.result);
        self.bad_replay_version.encode(&mut o);
        o.put_u32_le(self.osdmap_epoch);
        o.put_u32_le(self.ops.len() as u32);
        for op in &self.ops {
            op.encode(&mut o);
        }
        o.put_i32_le(self.retry_attempt);
        for op in &self.ops {
            o.put_i32_le(op.rval);
        }
        self.replay_version.encode(&mut o);
        o.put_u64_le(self.user_version);
        match &self.redirect {
            None => o.put_u8(0),
            Some(r) => {
                o.put_u8(1);
                r.encode(&mut o);
            }
        }
        o.put_slice(&self.trace);
        debug_assert_eq!(o.len(), len, "MOSDOpReply::front_len");
        let mut m = Message::new(MSG_OSD_OPREPLY, Bytes::from(o));
        m.tid = self.tid;
        m.priority = self.priority;
        m.version = 8;
        m.compat_version = 2;
        m.data = self.data.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_OSD_OPREPLY)?;
        if msg.version != 8 {
            return Err(MessageError::UnsupportedVersion {
                msg_type: MSG_OSD_OPREPLY,
                version: msg.version,
            });
        }
        let mut d = Decoder::from_bytes(&msg.front);
        let oid = Bytes::decode(&mut d)?;
        let pgid = PgId::decode(&mut d)?;
        let flags = d.u64("MOSDOpReply.flags")? as i64;
        let result = d.u32("MOSDOpReply.result")? as i32;
        let bad_replay_version = Eversion::decode(&mut d)?;
        let osdmap_epoch = d.u32("MOSDOpReply.osdmap_epoch")?;
        let num_ops = d.length("MOSDOpReply.ops", OsdOp::LEN + 4)?;
        let mut ops = (0..num_ops)
            .map(|_| OsdOp::decode(&mut d))
            .collect::<Result<Vec<_>, _>>()?;
        let retry_attempt = d.u32("MOSDOpReply.retry_attempt")? as i32;
        for op in &mut ops {
            op.rval = d.u32("MOSDOpReply.rval")? as i32;
        }
        let replay_version = Eversion::decode(&mut d)?;
        let user_version = d.u64("MOSDOpReply.user_version")?;
        let redirect = match d.u8("MOSDOpReply.do_redirect")? {
            0 => None,
            _ => Some(RequestRedirect::decode(&mut d)?),
        };
        let trace = d.array("MOSDOpReply.trace")?;
        Ok(MOSDOpReply {
            tid: msg.tid,
            priority: msg.priority,
            oid,
            pgid,
            flags,
            result,
            bad_replay_version,
            osdmap_epoch,
            ops,
            retry_attempt,
            replay_version,
            user_version,
            redirect,
            trace,
            data: msg.data.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact-size buffers: `front_len` is what encoding writes, for
    /// every variable part (name, locator key and namespace, trace, ops,
    /// snaps) and both MOSDOp versions.
    #[test]
    fn front_lengths_are_exact() {
        let mut op = MOSDOp::write(7, 3, "an-object", 0, Bytes::from_static(b"data"), false);
        for round in 0..4 {
            for version in [8u16, 9] {
                let features = if version == 9 {
                    features::SERVER_SQUID
                } else {
                    0
                };
                let m = op.to_message(features);
                assert_eq!(m.version, version);
                assert_eq!(
                    m.front.len(),
                    op.front_len(version),
                    "round {round} v{version}"
                );
                let back = MOSDOp::from_message(&m).unwrap();
                let reply = MOSDOpReply::answering(back, -2);
                assert_eq!(reply.to_message(0).front.len(), reply.front_len());
            }
            op.oid = Bytes::from([&op.oid[..], b"-longer\xff"].concat());
            op.oloc.key.push_str("key");
            op.oloc.nspace.push_str("ns");
            op.snaps.push(round);
            op.ops.push(OsdOp::extent(op::READ, 0, 4096));
            op.otel = OtelTrace(Bytes::from_static(&[1, 1, 3, 0, 0, 0, 9, 9, 9]));
        }
    }

    /// A redirect (`do_redirect` 1 and a `request_redirect_t`) round-trips
    /// at the length `front_len` says; its legacy instructions are skipped.
    #[test]
    fn a_redirect_reply_round_trips() {
        let op = MOSDOp::write(7, 3, "obj", 0, Bytes::new(), false);
        let mut reply = MOSDOpReply::answering(op, 0);
        reply.redirect = Some(RequestRedirect {
            locator: ObjectLocator {
                pool: 1,
                key: "k".into(),
                nspace: "ns".into(),
                hash: -1,
            },
            object: Bytes::new(),
        });
        let m = reply.to_message(0);
        assert_eq!(m.front.len(), reply.front_len());
        assert_eq!(MOSDOpReply::from_message(&m).unwrap(), reply);

        let mut with_instructions = Vec::new();
        msgr_encoding::encode_versioned(&mut with_instructions, 1, 1, |o| {
            ObjectLocator::default().encode(o);
            Bytes::from_static(b"other").encode(o);
            o.put_u32_le(3);
            o.put_slice(b"xyz");
        });
        let mut d = Decoder::new(&with_instructions);
        let r = RequestRedirect::decode(&mut d).unwrap();
        assert_eq!(&r.object[..], b"other");
        assert!(d.is_empty());
    }

    #[test]
    fn an_op_count_past_the_front_is_refused() {
        let op = MOSDOp::write(7, 3, "obj", 0, Bytes::new(), false);
        let mut m = op.to_message(0);
        // The count precedes one op, snapid, snap_seq, the snap count,
        // retry_attempt and features.
        let at = m.front.len() - (OsdOp::LEN + 16 + 4 + 4 + 8) - 2;
        let mut front = m.front.to_vec();
        front[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
        m.front = Bytes::from(front);
        assert!(matches!(
            MOSDOp::from_message(&m),
            Err(MessageError::Decode(
                msgr_encoding::DecodeError::LengthTooLarge {
                    what: "MOSDOp.ops",
                    claimed: 65535,
                    ..
                }
            ))
        ));
    }
}
