//! Pool operations a client asks of the monitors (src/messages/MPoolOp.h,
//! MPoolOpReply.h; `POOL_OP_*` from src/include/rados.h), and what an OSD
//! says about an object's snapshots (`obj_list_snap_response_t`,
//! src/osd/osd_types.h).

use bytes::{BufMut, Bytes};
use msgr_encoding::{decode_versioned, encode_versioned, Decode, Decoder, Encode, Uuid};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_POOLOP_REPLY`: [`MPoolOpReply`].
pub const MSG_POOLOP_REPLY: u16 = 48;
/// `CEPH_MSG_POOLOP`: [`MPoolOp`].
pub const MSG_POOLOP: u16 = 49;

// `POOL_OP_*`: what an [`MPoolOp`] asks.

/// `POOL_OP_CREATE`: create pool `name`.
pub const CREATE: u32 = 0x01;
/// `POOL_OP_DELETE`: delete the pool.
pub const DELETE: u32 = 0x02;
/// `POOL_OP_AUID_CHANGE` (obsolete).
pub const AUID_CHANGE: u32 = 0x03;
/// `POOL_OP_CREATE_SNAP`: pool snapshot `name`.
pub const CREATE_SNAP: u32 = 0x11;
/// `POOL_OP_DELETE_SNAP`: remove pool snapshot `name`.
pub const DELETE_SNAP: u32 = 0x12;
/// `POOL_OP_CREATE_UNMANAGED_SNAP`: allocate a self-managed snap id
/// (the reply's data is the id).
pub const CREATE_UNMANAGED_SNAP: u32 = 0x21;
/// `POOL_OP_DELETE_UNMANAGED_SNAP`: remove self-managed snap `snapid`.
pub const DELETE_UNMANAGED_SNAP: u32 = 0x22;

/// `ceph_pool_op_name`: a [`MPoolOp`] code's name.
pub fn op_name(op: u32) -> &'static str {
    match op {
        CREATE => "create",
        DELETE => "delete",
        AUID_CHANGE => "auid change",
        CREATE_SNAP => "create snap",
        DELETE_SNAP => "delete snap",
        CREATE_UNMANAGED_SNAP => "create unmanaged snap",
        DELETE_UNMANAGED_SNAP => "delete unmanaged snap",
        _ => "???",
    }
}

/// `PaxosServiceMessage`'s prefix: the map version the sender has, then
/// the deprecated session monitor (-1) and its tid (0).
fn paxos_encode(out: &mut Vec<u8>, version: u64) {
    out.put_u64_le(version);
    out.put_i16_le(-1);
    out.put_u64_le(0);
}

fn paxos_decode(d: &mut Decoder<'_>) -> Result<u64, MessageError> {
    let version = d.u64("PaxosServiceMessage.version")?;
    d.skip(10, "PaxosServiceMessage.deprecated_session_mon")?;
    Ok(version)
}

/// `MPoolOp` (v4, compat 2): a pool operation for the monitors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MPoolOp {
    /// The request's id, echoed by the reply.
    pub tid: u64,
    /// The OSD map epoch the client has (`PaxosServiceMessage::version`).
    pub version: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The pool (0 for a create).
    pub pool: u32,
    /// A `POOL_OP_*` code ([`CREATE`], [`CREATE_SNAP`], ...).
    pub op: u32,
    /// Obsolete owner id (0).
    pub auid: u64,
    /// The self-managed snapshot a DELETE_UNMANAGED_SNAP removes.
    pub snapid: u64,
    /// The pool's name (create), the snapshot's (snap ops), or "delete".
    pub name: String,
    /// The CRUSH rule a created pool uses (-1 or 0: the default).
    pub crush_rule: i16,
}

impl TypedMessage for MPoolOp {
    const TYPE: u16 = MSG_POOLOP;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        paxos_encode(&mut o, self.version);
        self.fsid.encode(&mut o);
        o.put_u32_le(self.pool);
        o.put_u32_le(self.op);
        o.put_u64_le(self.auid);
        o.put_u64_le(self.snapid);
        self.name.encode(&mut o);
        o.put_u8(0); // pad, for the v3 -> v4 change
        o.put_i16_le(self.crush_rule);
        let mut m = Message::new(MSG_POOLOP, Bytes::from(o));
        m.version = 4;
        m.compat_version = 2;
        m.tid = self.tid;
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_POOLOP)?;
        if msg.version < 2 {
            return Err(MessageError::UnsupportedVersion {
                msg_type: MSG_POOLOP,
                version: msg.version,
            });
        }
        let mut d = Decoder::from_bytes(&msg.front);
        let version = paxos_decode(&mut d)?;
        let fsid = Uuid::decode(&mut d)?;
        let pool = d.u32("MPoolOp.pool")?;
        let op = d.u32("MPoolOp.op")?;
        let auid = d.u64("MPoolOp.auid")?;
        let snapid = d.u64("MPoolOp.snapid")?;
        let name = String::decode(&mut d)?;
        let crush_rule = match msg.version {
            2 => -1,
            3 => i16::from(d.u8("MPoolOp.crush_rule")?),
            _ => {
                d.skip(1, "MPoolOp pad")?;
                i16::decode(&mut d)?
            }
        };
        Ok(MPoolOp {
            tid: msg.tid,
            version,
            fsid,
            pool,
            op,
            auid,
            snapid,
            name,
            crush_rule,
        })
    }
}

/// `MPoolOpReply` (v1): the monitors' answer to an [`MPoolOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MPoolOpReply {
    /// The request's id.
    pub tid: u64,
    /// The monitors' OSD map version (`PaxosServiceMessage::version`).
    pub version: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// 0 or a negative errno (`replyCode`).
    pub reply_code: i32,
    /// The OSD map epoch the change is in: the client's map must reach it
    /// before the operation is done.
    pub epoch: u32,
    /// The answer's data (CREATE_UNMANAGED_SNAP: the new snap id), if any.
    pub response_data: Option<Bytes>,
}

impl TypedMessage for MPoolOpReply {
    const TYPE: u16 = MSG_POOLOP_REPLY;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        paxos_encode(&mut o, self.version);
        self.fsid.encode(&mut o);
        o.put_i32_le(self.reply_code);
        o.put_u32_le(self.epoch);
        match &self.response_data {
            Some(b) => {
                true.encode(&mut o);
                b.encode(&mut o);
            }
            None => false.encode(&mut o),
        }
        let mut m = Message::new(MSG_POOLOP_REPLY, Bytes::from(o));
        m.version = 1;
        m.compat_version = 1;
        m.tid = self.tid;
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_POOLOP_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let version = paxos_decode(&mut d)?;
        let fsid = Uuid::decode(&mut d)?;
        let reply_code = i32::decode(&mut d)?;
        let epoch = d.u32("MPoolOpReply.epoch")?;
        let response_data = match bool::decode(&mut d)? {
            true => Some(Bytes::decode(&mut d)?),
            false => None,
        };
        Ok(MPoolOpReply {
            tid: msg.tid,
            version,
            fsid,
            reply_code,
            epoch,
            response_data,
        })
    }
}

/// One clone of an object (`clone_info`): the head is the clone
/// [`crate::osd_types::NOSNAP`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneInfo {
    /// The clone's snap id (`NOSNAP`: the head).
    pub cloneid: u64,
    /// The snapshots the clone stands for, oldest first.
    pub snaps: Vec<u64>,
    /// The extents it shares with the next newer clone, `(offset, length)`.
    pub overlap: Vec<(u64, u64)>,
    /// Its size in bytes.
    pub size: u64,
}

/// LIST_SNAPS' output (`obj_list_snap_response_t`): an object's clones,
/// oldest first, and the newest snap sequence it has seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapSet {
    /// The clones, ascending, the head last.
    pub clones: Vec<CloneInfo>,
    /// The object's snap sequence (`NOSNAP` from a v1 encoding).
    pub seq: u64,
}

impl Encode for CloneInfo {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 1, 1, |o| {
            o.put_u64_le(self.cloneid);
            self.snaps.encode(o);
            self.overlap.encode(o);
            o.put_u64_le(self.size);
        });
    }
}

impl Decode for CloneInfo {
    // Envelope (6), id, two empty vectors, size.
    const MIN_ENCODED_LEN: usize = 30;
    fn decode(d: &mut Decoder<'_>) -> msgr_encoding::DecodeResult<CloneInfo> {
        decode_versioned(d, "clone_info", 1, |d, _| {
            Ok(CloneInfo {
                cloneid: d.u64("clone_info cloneid")?,
                snaps: Vec::decode(d)?,
                overlap: Vec::decode(d)?,
                size: d.u64("clone_info size")?,
            })
        })
    }
}

impl Encode for SnapSet {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 2, 1, |o| {
            self.clones.encode(o);
            o.put_u64_le(self.seq);
        });
    }
}

impl Decode for SnapSet {
    const MIN_ENCODED_LEN: usize = 10;
    fn decode(d: &mut Decoder<'_>) -> msgr_encoding::DecodeResult<SnapSet> {
        decode_versioned(d, "obj_list_snap_response_t", 2, |d, v| {
            let clones = Vec::decode(d)?;
            let seq = match v >= 2 {
                true => d.u64("obj_list_snap_response_t seq")?,
                false => crate::osd_types::NOSNAP,
            };
            Ok(SnapSet { clones, seq })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::osd_types::NOSNAP;

    /// The bytes a Ceph 16 `rados mksnap` sends, laid out by hand from
    /// MPoolOp::encode_payload.
    #[test]
    fn pool_op_layout() {
        let m = MPoolOp {
            tid: 7,
            version: 42,
            fsid: Uuid([1; 16]),
            pool: 3,
            op: CREATE_SNAP,
            auid: 0,
            snapid: 0,
            name: "s1".into(),
            crush_rule: 0,
        };
        let msg = m.to_message(0);
        assert_eq!((msg.version, msg.compat_version, msg.tid), (4, 2, 7));
        let mut want = Vec::new();
        want.extend_from_slice(&42u64.to_le_bytes());
        want.extend_from_slice(&(-1i16).to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        want.extend_from_slice(&[1; 16]);
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&0x11u32.to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(b"s1");
        want.push(0);
        want.extend_from_slice(&0i16.to_le_bytes());
        assert_eq!(&msg.front[..], &want[..]);
        assert_eq!(MPoolOp::from_message(&msg).unwrap(), m);
    }

    #[test]
    fn reply_with_and_without_data() {
        for data in [None, Some(Bytes::copy_from_slice(&5u64.to_le_bytes()))] {
            let r = MPoolOpReply {
                tid: 9,
                version: 50,
                fsid: Uuid([2; 16]),
                reply_code: -17,
                epoch: 51,
                response_data: data,
            };
            assert_eq!(MPoolOpReply::from_message(&r.to_message(0)).unwrap(), r);
        }
    }

    #[test]
    fn truncated_reply_is_an_error() {
        let r = MPoolOpReply {
            tid: 9,
            version: 50,
            fsid: Uuid([2; 16]),
            reply_code: 0,
            epoch: 51,
            response_data: Some(Bytes::from_static(b"12345678")),
        };
        let msg = r.to_message(0);
        for cut in 0..msg.front.len() {
            let mut m = msg.clone();
            m.front = msg.front.slice(..cut);
            assert!(MPoolOpReply::from_message(&m).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn snap_set_round_trip_and_v1() {
        let s = SnapSet {
            clones: vec![
                CloneInfo {
                    cloneid: 4,
                    snaps: vec![3, 4],
                    overlap: vec![(0, 4096)],
                    size: 8192,
                },
                CloneInfo {
                    cloneid: NOSNAP,
                    snaps: vec![],
                    overlap: vec![],
                    size: 10,
                },
            ],
            seq: 4,
        };
        let b = s.to_bytes();
        assert_eq!(SnapSet::decode_exact(&b, "snaps").unwrap(), s);
        // A v1 encoding has no seq: NOSNAP.
        let mut v1 = Vec::new();
        encode_versioned(&mut v1, 1, 1, |o| Vec::<CloneInfo>::new().encode(o));
        let got = SnapSet::decode_exact(&v1, "snaps").unwrap();
        assert_eq!(got.seq, NOSNAP);
        // A count larger than the bytes: refused before allocating.
        let mut big = Vec::new();
        encode_versioned(&mut big, 2, 1, |o| o.put_u32_le(u32::MAX));
        assert!(SnapSet::decode_exact(&big, "snaps").is_err());
    }
}
