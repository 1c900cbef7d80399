//! Pool operations and snapshot listings: MPoolOp, MPoolOpReply and
//! LIST_SNAPS' `obj_list_snap_response_t`; what decodes re-encodes to a
//! value that decodes equal.

use bytes::Bytes;
use msgr_encoding::{Decode, Decoder, Encode};
use msgr_messages::{MPoolOp, MPoolOpReply, SnapSet, MSG_POOLOP, MSG_POOLOP_REPLY};
use msgr_protocol::Message;

use crate::mon::check;

/// Byte 0 picks what (reply, request, snap listing), byte 1 the header
/// version; the rest is the front (or the listing's bytes).
pub fn snap(data: &[u8]) {
    let [sel, version, rest @ ..] = data else {
        return;
    };
    match sel % 3 {
        0 => {
            let mut msg = Message::new(MSG_POOLOP_REPLY, Bytes::copy_from_slice(rest));
            msg.version = u16::from(*version % 4);
            check::<MPoolOpReply>(&msg);
        }
        1 => {
            let mut msg = Message::new(MSG_POOLOP, Bytes::copy_from_slice(rest));
            msg.version = u16::from(*version % 6);
            // Re-encoded as v4: equal from v4 (v2 and v3 carry the rule
            // differently).
            if msg.version >= 4 {
                check::<MPoolOp>(&msg);
            } else {
                let _ = <MPoolOp as msgr_messages::TypedMessage>::from_message(&msg);
            }
        }
        _ => {
            if let Ok(s) = SnapSet::decode(&mut Decoder::new(rest)) {
                let again = SnapSet::decode_exact(&s.to_bytes(), "re-encoded")
                    .expect("re-encoding decodes");
                assert_eq!(again, s);
            }
        }
    }
}
