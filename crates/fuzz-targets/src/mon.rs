//! Monitor messages and the MonMap: what decodes re-encodes to a value
//! that decodes equal.

use bytes::Bytes;
use msgr_encoding::Decoder;
use msgr_messages::*;
use msgr_protocol::Message;

pub(crate) fn check<T: TypedMessage + PartialEq + std::fmt::Debug>(msg: &Message) {
    if let Ok(v) = T::from_message(msg) {
        let again = T::from_message(&v.to_message(0)).expect("re-encoding decodes");
        assert_eq!(again, v);
    }
}

/// Byte 0 picks the message type, byte 1 the header version; the rest is
/// the front (the MonMap itself for type 0).
pub fn mon_messages(data: &[u8]) {
    let [sel, version, rest @ ..] = data else {
        return;
    };
    if *sel % 12 == 0 {
        if let Ok(m) = MonMap::decode(&mut Decoder::new(rest)) {
            let mut out = Vec::new();
            m.encode(&mut out);
            let again = MonMap::decode(&mut Decoder::new(&out)).expect("re-encoding decodes");
            // Re-encoded as v9 or v10: the fields those versions carry match
            // (a v9 map writes mon_info_t v5, which has no time_added, as
            // Ceph 16 does).
            let mut expected = m.mons.clone();
            if again.struct_v < 10 {
                for info in expected.values_mut() {
                    info.time_added = Default::default();
                }
            }
            assert_eq!(
                (again.fsid, again.epoch, &again.mons),
                (m.fsid, m.epoch, &expected)
            );
        }
        return;
    }
    let types = [
        MSG_MON_MAP,
        MSG_MON_GET_MAP,
        MSG_MON_SUBSCRIBE,
        MSG_AUTH,
        MSG_AUTH_REPLY,
        MSG_MON_GET_VERSION,
        MSG_MON_GET_VERSION_REPLY,
        MSG_OSD_MAP,
        MSG_MON_COMMAND,
        MSG_MON_COMMAND_ACK,
        MSG_CONFIG,
    ];
    let t = types[(*sel as usize - 1) % types.len()];
    let mut msg = Message::new(t, Bytes::copy_from_slice(rest));
    msg.version = *version as u16 % 12;
    match t {
        MSG_MON_MAP => check::<MMonMap>(&msg),
        MSG_MON_GET_MAP => check::<MMonGetMap>(&msg),
        MSG_MON_SUBSCRIBE if msg.version >= 3 => check::<MMonSubscribe>(&msg),
        MSG_MON_SUBSCRIBE => {
            let _ = MMonSubscribe::from_message(&msg);
        }
        MSG_AUTH => check::<MAuth>(&msg),
        MSG_AUTH_REPLY => check::<MAuthReply>(&msg),
        MSG_MON_GET_VERSION => check::<MMonGetVersion>(&msg),
        MSG_MON_GET_VERSION_REPLY if msg.version >= 2 => check::<MMonGetVersionReply>(&msg),
        MSG_MON_GET_VERSION_REPLY => {
            let _ = MMonGetVersionReply::from_message(&msg);
        }
        MSG_OSD_MAP if msg.version >= 2 => check::<MOSDMap>(&msg),
        MSG_OSD_MAP => {
            let _ = MOSDMap::from_message(&msg);
        }
        MSG_MON_COMMAND => check::<MMonCommand>(&msg),
        MSG_MON_COMMAND_ACK => check::<MMonCommandAck>(&msg),
        _ => check::<MConfig>(&msg),
    }
}
