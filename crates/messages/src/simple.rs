//! MPing (2), MCommand (97) and MCommandReply (98).

use bytes::{BufMut, Bytes};
use msgr_encoding::{Decode, Decoder, Encode, Uuid};
use msgr_protocol::Message;

use crate::typed::{check_type, MessageError, TypedMessage};

/// `CEPH_MSG_PING`: a ping (no payload).
pub const MSG_PING: u16 = 2;
/// `MSG_COMMAND`: [`MCommand`].
pub const MSG_COMMAND: u16 = 97;
/// `MSG_COMMAND_REPLY`: [`MCommandReply`].
pub const MSG_COMMAND_REPLY: u16 = 98;

/// `MPing`: no payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MPing;

impl TypedMessage for MPing {
    const TYPE: u16 = MSG_PING;

    fn to_message(&self, _: u64) -> Message {
        Message::new(MSG_PING, Bytes::new())
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_PING)?;
        Ok(MPing)
    }
}

/// `MCommand`: a command (usually one JSON string) for a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MCommand {
    /// The command's transaction id, echoed by the reply.
    pub tid: u64,
    /// The cluster's fsid.
    pub fsid: Uuid,
    /// The command, as JSON strings.
    pub cmd: Vec<String>,
    /// The command's input data.
    pub input: Bytes,
}

impl TypedMessage for MCommand {
    const TYPE: u16 = MSG_COMMAND;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.fsid.encode(&mut o);
        self.cmd.encode(&mut o);
        let mut m = Message::new(MSG_COMMAND, Bytes::from(o));
        m.tid = self.tid;
        m.data = self.input.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_COMMAND)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MCommand {
            tid: msg.tid,
            fsid: Uuid::decode(&mut d)?,
            cmd: Vec::<String>::decode(&mut d)?,
            input: msg.data.clone(),
        })
    }
}

/// `MCommandReply`: a result code, a status string, output data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MCommandReply {
    /// The command's transaction id.
    pub tid: u64,
    /// 0, or a negative errno.
    pub r: i32,
    /// The status string.
    pub rs: String,
    /// The command's output data.
    pub output: Bytes,
}

impl TypedMessage for MCommandReply {
    const TYPE: u16 = MSG_COMMAND_REPLY;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        o.put_i32_le(self.r);
        self.rs.encode(&mut o);
        let mut m = Message::new(MSG_COMMAND_REPLY, Bytes::from(o));
        m.tid = self.tid;
        m.data = self.output.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_COMMAND_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MCommandReply {
            tid: msg.tid,
            r: d.u32("MCommandReply.r")? as i32,
            rs: String::decode(&mut d)?,
            output: msg.data.clone(),
        })
    }
}
