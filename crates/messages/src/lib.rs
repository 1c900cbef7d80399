//! Ceph message types carried in msgr2 MESSAGE frames. The messenger moves
//! a header and front / middle / data segments; this crate gives them
//! meaning.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod log;
pub mod mgr;
pub mod mgr_service;
pub mod mon;
pub mod monmap;
pub mod osd_backoff;
pub mod osd_op;
pub mod osd_types;
pub mod pool_op;
pub mod simple;
pub mod statfs;
mod typed;
mod types;
pub mod watch_notify;

pub use log::{LogEntry, MLog, MSG_LOG};
pub use mgr::{
    MMgrCommand, MMgrCommandReply, MMgrMap, MgrMap, MSG_MGR_COMMAND, MSG_MGR_COMMAND_REPLY,
    MSG_MGR_MAP,
};
pub use mon::*;
pub use monmap::{MonInfo, MonMap};
pub use osd_backoff::{HObject, MOSDBackoff, MSG_OSD_BACKOFF};
pub use osd_op::{MOSDOp, MOSDOpReply, RequestRedirect, MSG_OSD_OP, MSG_OSD_OPREPLY};
pub use pool_op::{CloneInfo, MPoolOp, MPoolOpReply, SnapSet, MSG_POOLOP, MSG_POOLOP_REPLY};
pub use simple::{MCommand, MCommandReply, MPing};
pub use statfs::{
    CephStatfs, MGetPoolStats, MGetPoolStatsReply, MStatfs, MStatfsReply, ObjectStatSum, PoolStat,
    StoreStatfs,
};
pub use typed::{MessageError, TypedMessage};
pub use types::{message_type_name, MESSAGE_TYPES};
pub use watch_notify::{MWatchNotify, MSG_WATCH_NOTIFY};

/// The request types that have a reply carrying the request's tid, as
/// `(request, reply)`: MOSDOp's MOSDOpReply, MCommand's MCommandReply,
/// MMonCommand's MMonCommandAck, MMgrCommand's MMgrCommandReply. A messenger given them
/// (msgr_messenger::MessageTypes) matches them in `Connection::call`.
pub const REPLY_TYPES: &[(u16, u16)] = &[
    (MSG_OSD_OP, MSG_OSD_OPREPLY),
    (simple::MSG_COMMAND, simple::MSG_COMMAND_REPLY),
    (mon::MSG_MON_COMMAND, mon::MSG_MON_COMMAND_ACK),
    (mgr::MSG_MGR_COMMAND, mgr::MSG_MGR_COMMAND_REPLY),
];

/// The reply type of a request type that has one ([`REPLY_TYPES`]).
pub fn reply_type(request: u16) -> Option<u16> {
    REPLY_TYPES
        .iter()
        .find(|&&(q, _)| q == request)
        .map(|&(_, r)| r)
}
