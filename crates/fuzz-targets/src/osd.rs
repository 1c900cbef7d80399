//! OSD and daemon-command messages (MOSDOp v8 and v9, MOSDOpReply,
//! MCommand, MCommandReply): what decodes re-encodes to a value that
//! decodes equal, through the exact-size front buffers.

use bytes::Bytes;
use msgr_messages::simple::{MCommand, MCommandReply, MSG_COMMAND, MSG_COMMAND_REPLY};
use msgr_messages::*;
use msgr_protocol::features::SERVER_SQUID;
use msgr_protocol::Message;

use crate::mon::check;

/// Byte 0 picks the message type, byte 1 the header version; the rest is
/// the front.
pub fn osd_messages(data: &[u8]) {
    let [sel, version, rest @ ..] = data else {
        return;
    };
    let mut msg = Message::new(0, Bytes::copy_from_slice(rest));
    msg.version = *version as u16 % 12;
    match sel % 4 {
        0 => {
            msg.msg_type = MSG_OSD_OP;
            let Ok(op) = MOSDOp::from_message(&msg) else {
                return;
            };
            // The version follows the connection's features; an op that
            // carried no features of its own is re-encoded with those.
            let features = if msg.version >= 9 { SERVER_SQUID } else { 0 };
            let again =
                MOSDOp::from_message(&op.to_message(features)).expect("re-encoding decodes");
            let mut expected = op;
            if expected.features == 0 {
                expected.features = features;
            }
            assert_eq!(again, expected);
        }
        1 => {
            msg.msg_type = MSG_OSD_OPREPLY;
            check::<MOSDOpReply>(&msg);
        }
        2 => {
            msg.msg_type = MSG_COMMAND;
            check::<MCommand>(&msg);
        }
        _ => {
            msg.msg_type = MSG_COMMAND_REPLY;
            check::<MCommandReply>(&msg);
        }
    }
}
