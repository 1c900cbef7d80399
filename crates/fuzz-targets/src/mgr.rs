//! The mgr's messages: MMgrMap (MgrMap v1..v14, read as far as a client
//! needs and the rest skipped by its length), MMgrCommand and
//! MMgrCommandReply. What decodes re-encodes to a value that decodes
//! equal (an MgrMap re-encoded as v9).

use bytes::Bytes;
use msgr_messages::mgr::*;
use msgr_messages::TypedMessage;
use msgr_protocol::Message;

use crate::mon::check;

/// Byte 0 picks the message; the rest is its front.
pub fn mgr_messages(data: &[u8]) {
    let [sel, rest @ ..] = data else {
        return;
    };
    let msg = |t| Message::new(t, Bytes::copy_from_slice(rest));
    match sel % 3 {
        0 => {
            let Ok(m) = MMgrMap::from_message(&msg(MSG_MGR_MAP)) else {
                return;
            };
            let again = MMgrMap::from_message(&m.to_message(0)).expect("re-encoding decodes");
            let mut expected = m.map;
            expected.struct_v = 9;
            assert_eq!(again.map, expected);
        }
        1 => check::<MMgrCommand>(&msg(MSG_MGR_COMMAND)),
        _ => check::<MMgrCommandReply>(&msg(MSG_MGR_COMMAND_REPLY)),
    }
}
