//! Watch/notify: MWatchNotify at every header version (what decodes
//! re-encodes to a value that decodes equal), a notify's collected
//! replies and LIST_WATCHERS' list (bounded, never a panic).

use bytes::Bytes;
use msgr_messages::watch_notify::{decode_watchers, NotifyResponse};
use msgr_messages::{MWatchNotify, TypedMessage, MSG_WATCH_NOTIFY};
use msgr_protocol::Message;

/// Byte 0 picks what is decoded (and MWatchNotify's header version); the
/// rest is the input.
pub fn watch_notify(data: &[u8]) {
    let [sel, rest @ ..] = data else {
        return;
    };
    let rest = Bytes::copy_from_slice(rest);
    match sel % 3 {
        0 => {
            let mut msg = Message::new(MSG_WATCH_NOTIFY, rest);
            msg.version = u16::from(sel / 3 % 4);
            let Ok(m) = MWatchNotify::from_message(&msg) else {
                return;
            };
            // Re-encoded at version 3 it reads back the same.
            let again = MWatchNotify::from_message(&m.to_message(0)).expect("re-encoding decodes");
            assert_eq!(again, m);
        }
        1 => {
            if let Ok(r) = NotifyResponse::decode(&rest) {
                assert_eq!(
                    NotifyResponse::decode(&r.encode()).expect("re-encoding decodes"),
                    r
                );
            }
        }
        _ => {
            let _ = decode_watchers(&rest);
        }
    }
}
