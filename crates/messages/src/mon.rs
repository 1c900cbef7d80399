//! What a client and a monitor say to each other (src/messages/MMon*.h,
//! MAuth*.h, MConfig.h, MOSDMap.h; layouts and captured bytes in
//! docs/research/mon-client.md §2–3).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use msgr_encoding::{Decode, DecodeResult, Decoder, Encode, Uuid};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_MON_MAP`: [`MMonMap`].
pub const MSG_MON_MAP: u16 = 4;
/// `CEPH_MSG_MON_GET_MAP`: a request for the monitor map.
pub const MSG_MON_GET_MAP: u16 = 5;
/// `CEPH_MSG_MON_SUBSCRIBE`: [`MMonSubscribe`].
pub const MSG_MON_SUBSCRIBE: u16 = 15;
/// `CEPH_MSG_MON_SUBSCRIBE_ACK`: the monitor took a subscription.
pub const MSG_MON_SUBSCRIBE_ACK: u16 = 16;
/// `CEPH_MSG_AUTH`: [`MAuth`].
pub const MSG_AUTH: u16 = 17;
/// `CEPH_MSG_AUTH_REPLY`: [`MAuthReply`].
pub const MSG_AUTH_REPLY: u16 = 18;
/// `CEPH_MSG_MON_GET_VERSION`: [`MMonGetVersion`].
pub const MSG_MON_GET_VERSION: u16 = 19;
/// `CEPH_MSG_MON_GET_VERSION_REPLY`: [`MMonGetVersionReply`].
pub const MSG_MON_GET_VERSION_REPLY: u16 = 20;
/// `CEPH_MSG_OSD_MAP`: [`MOSDMap`].
pub const MSG_OSD_MAP: u16 = 41;
/// `MSG_MON_COMMAND`: [`MMonCommand`].
pub const MSG_MON_COMMAND: u16 = 50;
/// `MSG_MON_COMMAND_ACK`: [`MMonCommandAck`].
pub const MSG_MON_COMMAND_ACK: u16 = 51;
/// `MSG_CONFIG`: [`MConfig`].
pub const MSG_CONFIG: u16 = 62;

/// `CEPH_SUBSCRIBE_ONETIME`.
pub const SUBSCRIBE_ONETIME: u8 = 1;

/// `PaxosServiceMessage`'s prefix (paxos_encode): `u64 version, i16
/// deprecated_session_mon, u64 deprecated_session_mon_tid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaxosHeader {
    /// The map version the sender has (`version`).
    pub version: u64,
}

impl PaxosHeader {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.version);
        out.put_i16_le(-1);
        out.put_u64_le(0);
    }

    fn decode(d: &mut Decoder<'_>) -> DecodeResult<PaxosHeader> {
        let version = d.u64("PaxosServiceMessage.version")?;
        d.skip(10, "PaxosServiceMessage.deprecated_session_mon")?;
        Ok(PaxosHeader { version })
    }
}

fn message(msg_type: u16, front: Vec<u8>, version: u16) -> Message {
    let mut m = Message::new(msg_type, Bytes::from(front));
    m.version = version;
    m.compat_version = 1;
    m
}

/// `MMonGetMap`: asks for the current monmap (empty front).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MMonGetMap;

impl TypedMessage for MMonGetMap {
    const TYPE: u16 = MSG_MON_GET_MAP;
    fn to_message(&self, _: u64) -> Message {
        message(MSG_MON_GET_MAP, Vec::new(), 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_GET_MAP)?;
        Ok(MMonGetMap)
    }
}

/// `MMonMap`: an encoded [`crate::monmap::MonMap`] (decoded separately, so a
/// map of an unknown version still arrives as bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMonMap {
    /// The encoded monitor map ([`crate::MonMap`]).
    pub monmap: Bytes,
}

impl TypedMessage for MMonMap {
    const TYPE: u16 = MSG_MON_MAP;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.monmap.encode(&mut o);
        message(MSG_MON_MAP, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_MAP)?;
        let mut d = Decoder::from_bytes(&msg.front);
        // Newer heads may append fields after the map; they are not read.
        Ok(MMonMap {
            monmap: Bytes::decode(&mut d)?,
        })
    }
}

/// One subscription: the first epoch wanted, and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubscribeItem {
    /// The first version wanted (`start`): the monitor sends maps from it on.
    pub start: u64,
    /// `CEPH_SUBSCRIBE_*` ([`SUBSCRIBE_ONETIME`]: once, not every new version).
    pub flags: u8,
}

impl Encode for SubscribeItem {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.start);
        out.put_u8(self.flags);
    }
}

impl Decode for SubscribeItem {
    const MIN_ENCODED_LEN: usize = 9;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(SubscribeItem {
            start: d.u64("subscribe start")?,
            flags: d.u8("subscribe flags")?,
        })
    }
}

/// `MMonSubscribe` (v3): maps to receive, from which epoch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MMonSubscribe {
    /// The subscriptions, by map name (`monmap`, `osdmap`, `config`, ...).
    pub what: BTreeMap<String, SubscribeItem>,
    /// The sender's host name.
    pub hostname: String,
}

impl TypedMessage for MMonSubscribe {
    const TYPE: u16 = MSG_MON_SUBSCRIBE;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.what.encode(&mut o);
        self.hostname.encode(&mut o);
        message(MSG_MON_SUBSCRIBE, o, 3)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_SUBSCRIBE)?;
        if msg.version < 2 {
            return Err(MessageError::UnsupportedVersion {
                msg_type: MSG_MON_SUBSCRIBE,
                version: msg.version,
            });
        }
        let mut d = Decoder::from_bytes(&msg.front);
        let what = BTreeMap::decode(&mut d)?;
        let hostname = match msg.version >= 3 {
            true => String::decode(&mut d)?,
            false => String::new(),
        };
        Ok(MMonSubscribe { what, hostname })
    }
}

/// `MConfig`: the monitor's configuration for this entity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MConfig {
    /// The configuration options the monitors hold for us, by name.
    pub config: BTreeMap<String, String>,
}

impl TypedMessage for MConfig {
    const TYPE: u16 = MSG_CONFIG;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.config.encode(&mut o);
        message(MSG_CONFIG, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_CONFIG)?;
        Ok(MConfig {
            config: BTreeMap::decode(&mut Decoder::from_bytes(&msg.front))?,
        })
    }
}

/// `MMonCommand`: a command (one JSON string) for the monitors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMonCommand {
    /// The command's transaction id, echoed by the ack.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The command, as JSON strings.
    pub cmd: Vec<String>,
    /// The command's input data.
    pub input: Bytes,
}

impl TypedMessage for MMonCommand {
    const TYPE: u16 = MSG_MON_COMMAND;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        PaxosHeader { version: 0 }.encode(&mut o);
        self.fsid.encode(&mut o);
        self.cmd.encode(&mut o);
        let mut m = message(MSG_MON_COMMAND, o, 1);
        m.tid = self.tid;
        m.data = self.input.clone();
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_COMMAND)?;
        let mut d = Decoder::from_bytes(&msg.front);
        PaxosHeader::decode(&mut d)?;
        Ok(MMonCommand {
            tid: msg.tid,
            fsid: Uuid::decode(&mut d)?,
            cmd: Vec::decode(&mut d)?,
            input: msg.data.clone(),
        })
    }
}

/// `MMonCommandAck`: result code, status string, the command, output data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMonCommandAck {
    /// The command's transaction id.
    pub tid: u64,
    /// 0, or a negative errno.
    pub r: i32,
    /// The status string.
    pub rs: String,
    /// The command it answers.
    pub cmd: Vec<String>,
    /// The command's output data.
    pub output: Bytes,
}

impl TypedMessage for MMonCommandAck {
    const TYPE: u16 = MSG_MON_COMMAND_ACK;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        PaxosHeader { version: 0 }.encode(&mut o);
        o.put_i32_le(self.r);
        self.rs.encode(&mut o);
        self.cmd.encode(&mut o);
        let mut m = message(MSG_MON_COMMAND_ACK, o, 1);
        m.tid = self.tid;
        m.data = self.output.clone();
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_COMMAND_ACK)?;
        let mut d = Decoder::from_bytes(&msg.front);
        PaxosHeader::decode(&mut d)?;
        Ok(MMonCommandAck {
            tid: msg.tid,
            r: d.u32("MMonCommandAck.r")? as i32,
            rs: String::decode(&mut d)?,
            cmd: Vec::decode(&mut d)?,
            output: msg.data.clone(),
        })
    }
}

/// `MAuth`: an auth request on an established monitor session (ticket
/// renewal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MAuth {
    /// The auth method (`CEPH_AUTH_*`); 0 in the first, which lists the
    /// methods the client supports.
    pub protocol: u32,
    /// The method's request.
    pub payload: Bytes,
    /// The monitor map epoch the client has.
    pub monmap_epoch: u32,
}

impl TypedMessage for MAuth {
    const TYPE: u16 = MSG_AUTH;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        PaxosHeader { version: 0 }.encode(&mut o);
        o.put_u32_le(self.protocol);
        self.payload.encode(&mut o);
        o.put_u32_le(self.monmap_epoch);
        message(MSG_AUTH, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_AUTH)?;
        let mut d = Decoder::from_bytes(&msg.front);
        PaxosHeader::decode(&mut d)?;
        let protocol = d.u32("MAuth.protocol")?;
        let payload = Bytes::decode(&mut d)?;
        let monmap_epoch = match d.remaining() >= 4 {
            true => d.u32("MAuth.monmap_epoch")?,
            false => 0,
        };
        Ok(MAuth {
            protocol,
            payload,
            monmap_epoch,
        })
    }
}

/// `MAuthReply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MAuthReply {
    /// The auth method (`CEPH_AUTH_*`).
    pub protocol: u32,
    /// 0, or a negative errno.
    pub result: i32,
    /// The global id the monitors gave the client.
    pub global_id: u64,
    /// The method's reply.
    pub payload: Bytes,
    /// A text explanation of a failure.
    pub message: String,
}

impl TypedMessage for MAuthReply {
    const TYPE: u16 = MSG_AUTH_REPLY;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        o.put_u32_le(self.protocol);
        o.put_i32_le(self.result);
        o.put_u64_le(self.global_id);
        self.payload.encode(&mut o);
        self.message.encode(&mut o);
        message(MSG_AUTH_REPLY, o, 1)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_AUTH_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MAuthReply {
            protocol: d.u32("MAuthReply.protocol")?,
            result: d.u32("MAuthReply.result")? as i32,
            global_id: d.u64("MAuthReply.global_id")?,
            payload: Bytes::decode(&mut d)?,
            message: String::decode(&mut d)?,
        })
    }
}

/// `MMonGetVersion`: the newest epoch of a map (`osdmap`, `monmap`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMonGetVersion {
    /// The request's id, echoed by the reply.
    pub handle: u64,
    /// The map asked about (`osdmap`, `mdsmap`, ...).
    pub what: String,
}

impl TypedMessage for MMonGetVersion {
    const TYPE: u16 = MSG_MON_GET_VERSION;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        o.put_u64_le(self.handle);
        self.what.encode(&mut o);
        let mut m = message(MSG_MON_GET_VERSION, o, 1);
        m.tid = self.handle;
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_GET_VERSION)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MMonGetVersion {
            handle: d.u64("MMonGetVersion.handle")?,
            what: String::decode(&mut d)?,
        })
    }
}

/// `MMonGetVersionReply` (v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MMonGetVersionReply {
    /// The request's id.
    pub handle: u64,
    /// The map's newest version.
    pub version: u64,
    /// The oldest version the monitors still hold.
    pub oldest_version: u64,
}

impl TypedMessage for MMonGetVersionReply {
    const TYPE: u16 = MSG_MON_GET_VERSION_REPLY;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        o.put_u64_le(self.handle);
        o.put_u64_le(self.version);
        o.put_u64_le(self.oldest_version);
        message(MSG_MON_GET_VERSION_REPLY, o, 2)
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MON_GET_VERSION_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let handle = d.u64("MMonGetVersionReply.handle")?;
        let version = d.u64("MMonGetVersionReply.version")?;
        let oldest_version = match msg.version >= 2 {
            true => d.u64("MMonGetVersionReply.oldest_version")?,
            false => 0,
        };
        Ok(MMonGetVersionReply {
            handle,
            version,
            oldest_version,
        })
    }
}

/// `MOSDMap`, read only as far as the epochs it carries (the OSDMap
/// encodings themselves are kept as bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MOSDMap {
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// Incrementals by epoch.
    pub incremental_maps: BTreeMap<u32, Bytes>,
    /// Full maps by epoch.
    pub maps: BTreeMap<u32, Bytes>,
    /// The oldest map epoch the cluster holds (`cluster_osdmap_trim_lower_bound`).
    pub oldest_map: u32,
    /// The newest map epoch.
    pub newest_map: u32,
}

impl MOSDMap {
    /// The newest epoch this message tells of.
    pub fn newest_epoch(&self) -> u32 {
        let keys = self.maps.keys().chain(self.incremental_maps.keys());
        keys.copied().max().unwrap_or(0).max(self.newest_map)
    }
}

impl TypedMessage for MOSDMap {
    const TYPE: u16 = MSG_OSD_MAP;
    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.fsid.encode(&mut o);
        self.incremental_maps.encode(&mut o);
        self.maps.encode(&mut o);
        o.put_u32_le(self.oldest_map);
        o.put_u32_le(self.newest_map);
        o.put_u32_le(0); // gap_removed_snaps: empty
        let mut m = message(MSG_OSD_MAP, o, 4);
        m.compat_version = 3;
        m
    }
    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_OSD_MAP)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let fsid = Uuid::decode(&mut d)?;
        let incremental_maps = BTreeMap::decode(&mut d)?;
        let maps = BTreeMap::decode(&mut d)?;
        let (oldest_map, newest_map) = match msg.version >= 2 {
            true => (d.u32("MOSDMap.oldest")?, d.u32("MOSDMap.newest")?),
            false => (0, 0),
        };
        Ok(MOSDMap {
            fsid,
            incremental_maps,
            maps,
            oldest_map,
            newest_map,
        })
    }
}
