//! Pool operations (MPoolOp): create and delete pools, pool snapshots and
//! self-managed snap ids, as librados's Objecter sends them to the
//! monitors (Objecter::pool_op_submit, handle_pool_op_reply). Each gets a
//! tid from the commands' counter, goes out on the session (again on each
//! new one until answered), is answered by the MPoolOpReply of its tid
//! only, and is done once the OSD map the core follows has reached the
//! reply's epoch (the change is then in the map).

use bytes::Bytes;
use msgr_messages::{MPoolOp, MPoolOpReply};

use super::{next_id, ConnId, MonCore, Outgoing};

/// What a pool operation asks ([`MonCore::add_pool_op`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOpRequest {
    /// A `POOL_OP_*` code (`msgr_messages::pool_op`).
    pub op: u32,
    /// The pool (0 to create one).
    pub pool: u32,
    /// The pool's name (create), the snapshot's (pool snap ops); empty
    /// otherwise.
    pub name: String,
    /// The self-managed snapshot DELETE_UNMANAGED_SNAP removes.
    pub snapid: u64,
    /// The CRUSH rule a new pool uses (-1: the monitors' default).
    pub crush_rule: i16,
}

/// The monitors' answer to a pool operation, once the map has its epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOpReply {
    /// 0 or a negative errno.
    pub r: i32,
    /// The OSD map epoch that holds the change.
    pub epoch: u32,
    /// The answer's data (CREATE_UNMANAGED_SNAP: the new snap id).
    pub data: Bytes,
}

pub(super) struct PendingPoolOp {
    req: PoolOpRequest,
    reply: Option<PoolOpReply>,
}

impl MonCore {
    /// A pool operation: sent on the session if there is one, and again on
    /// each new session until answered. Returns its tid.
    pub fn add_pool_op(&mut self, req: PoolOpRequest) -> u64 {
        let tid = next_id(&mut self.last_tid);
        self.pool_ops
            .insert(tid, PendingPoolOp { req, reply: None });
        if let Some(conn) = self.active() {
            self.send_pool_op(conn, tid);
        }
        tid
    }

    pub(super) fn send_pool_op(&mut self, conn: ConnId, tid: u64) {
        let Some(p) = self.pool_ops.get(&tid) else {
            return;
        };
        let m = MPoolOp {
            tid,
            // The map we have (`last_seen_osdmap_version`).
            version: self.osdmap.epoch().into(),
            fsid: self.monmap.as_ref().map(|m| m.fsid).unwrap_or_default(),
            pool: p.req.pool,
            op: p.req.op,
            auid: 0,
            snapid: p.req.snapid,
            name: p.req.name.clone(),
            crush_rule: p.req.crush_rule,
        };
        self.send(conn, Outgoing::PoolOp(m));
    }

    /// Sends the unanswered pool operations on a new session.
    pub(super) fn resend_pool_ops(&mut self, conn: ConnId) {
        let unanswered: Vec<u64> = self
            .pool_ops
            .iter()
            .filter(|(_, p)| p.reply.is_none())
            .map(|(t, _)| *t)
            .collect();
        for tid in unanswered {
            self.send_pool_op(conn, tid);
        }
    }

    /// An MPoolOpReply from the session: it answers the operation of its
    /// tid and no other (a tid not pending, or answered, is ignored). If
    /// the change is in a map newer than ours, that map is asked for.
    pub(super) fn on_pool_op_reply(&mut self, conn: ConnId, r: MPoolOpReply) {
        let Some(p) = self.pool_ops.get_mut(&r.tid) else {
            return;
        };
        if p.reply.is_some() {
            return;
        }
        p.reply = Some(PoolOpReply {
            r: r.reply_code,
            epoch: r.epoch,
            data: r.response_data.unwrap_or_default(),
        });
        let have = self.osdmap.epoch();
        if have < r.epoch {
            let from = match have {
                0 => 0,
                e => e.saturating_add(1),
            };
            self.request_osdmap_on(conn, from);
        }
    }

    /// The answer to pool operation `tid`, once, when the OSD map the core
    /// follows has its epoch (the operation is then forgotten).
    pub fn take_pool_op_reply(&mut self, tid: u64) -> Option<PoolOpReply> {
        let have = self.osdmap.epoch();
        let ready = self
            .pool_ops
            .get(&tid)?
            .reply
            .as_ref()
            .is_some_and(|r| r.r < 0 || have >= r.epoch);
        if !ready {
            return None;
        }
        self.pool_ops.remove(&tid).and_then(|p| p.reply)
    }

    /// Gives up on pool operation `tid`.
    pub fn forget_pool_op(&mut self, tid: u64) {
        self.pool_ops.remove(&tid);
    }
}
