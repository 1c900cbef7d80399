//! Usage messages (MStatfs, MStatfsReply, MGetPoolStats,
//! MGetPoolStatsReply with pool_stat_t v5-7 and object_stat_sum_t
//! v14-20) and the cluster log's MLog (LogEntry v5): what decodes
//! re-encodes to a value that decodes equal.

use bytes::Bytes;
use msgr_messages::statfs::*;
use msgr_protocol::Message;

use crate::mon::check;

/// Byte 0 picks the message type, byte 1 the header version; the rest is
/// the front.
pub fn stats_messages(data: &[u8]) {
    let [sel, version, rest @ ..] = data else {
        return;
    };
    let mut msg = Message::new(0, Bytes::copy_from_slice(rest));
    msg.version = *version as u16 % 4;
    match sel % 5 {
        0 => {
            msg.msg_type = MSG_STATFS;
            // A v1 request has no data_pool: re-encoded as v2 it has none.
            check::<MStatfs>(&msg);
        }
        1 => {
            msg.msg_type = MSG_STATFS_REPLY;
            check::<MStatfsReply>(&msg);
        }
        2 => {
            msg.msg_type = MSG_GETPOOLSTATS;
            check::<MGetPoolStats>(&msg);
        }
        3 => {
            msg.msg_type = MSG_GETPOOLSTATSREPLY;
            check::<MGetPoolStatsReply>(&msg);
        }
        _ => {
            msg.msg_type = msgr_messages::log::MSG_LOG;
            check::<msgr_messages::log::MLog>(&msg);
        }
    }
}
