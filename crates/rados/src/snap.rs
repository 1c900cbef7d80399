//! Snapshots, as librados has them: pool snapshots (created and removed through the monitors, listed,
//! looked up, named and stamped from the pool's `pg_pool_t`); self-managed
//! snap ids; and the OSD ops on snapshots (ROLLBACK, LIST_SNAPS).
//!
//! A write to a pool with pool snapshots needs no snap context from us:
//! the OSD uses the pool's own (`pool.snapc` in PrimaryLogPG::execute_ctx
//! when the pool is in pool-snaps mode), as it does for librados, which
//! sends none either. Self-managed snapshots are the application's: its
//! writes carry [`IoCtx::set_write_snap_context`].

use bytes::Bytes;
use msgr_encoding::{Decode, UTime};
use msgr_messages::pool_op::{
    CREATE_SNAP, CREATE_UNMANAGED_SNAP, DELETE_SNAP, DELETE_UNMANAGED_SNAP,
};
use msgr_messages::SnapSet;
use msgr_monc::core::PoolOpRequest;
use msgr_transport::Transport;

use crate::client::Rados;
use crate::error::RadosError;
use crate::ioctx::{first_out, IoCtx};
use crate::objecter::ENOENT;
use crate::request::{Op, Ops};

/// `CEPH_SNAPDIR`: the object's snapshot directory, which LIST_SNAPS
/// reads.
pub const SNAPDIR: u64 = u64::MAX;
/// `CEPH_OSD_OP_LIST_SNAPS`.
pub const OP_LIST_SNAPS: u16 = 0x120a;
/// `CEPH_OSD_OP_ROLLBACK`.
pub const OP_ROLLBACK: u16 = 0x220e;
const EEXIST: i32 = -17;
const EINVAL: i32 = -22;

impl Ops {
    /// ROLLBACK: the object becomes what it was at snapshot `snapid`.
    pub fn rollback(self, snapid: u64) -> Ops {
        let mut o = Op::new(OP_ROLLBACK);
        o.op.args[..8].copy_from_slice(&snapid.to_le_bytes());
        self.push(o)
    }

    /// LIST_SNAPS: the object's clones ([`decode_snap_set`]); the request
    /// must read [`SNAPDIR`].
    pub fn list_snaps(self) -> Ops {
        self.push(Op::new(OP_LIST_SNAPS))
    }
}

/// LIST_SNAPS' output (`obj_list_snap_response_t`).
pub fn decode_snap_set(out: &[u8]) -> Result<SnapSet, msgr_encoding::DecodeError> {
    SnapSet::decode_exact(out, "obj_list_snap_response_t")
}

fn os(errno: i32, what: String) -> RadosError {
    RadosError::Os { errno, what }
}

impl<T: Transport> Rados<T> {
    /// The pool of `io`, for a pool operation.
    fn op_pool(&self, io: &IoCtx, what: &str) -> Result<u32, RadosError> {
        if !self.osdmap().pools.contains_key(&io.pool) {
            return Err(RadosError::NoPool(io.pool.to_string()));
        }
        u32::try_from(io.pool).map_err(|_| os(EINVAL, what.to_string()))
    }

    /// Takes pool snapshot `name` of `io`'s pool (`rados_ioctx_snap_create`).
    /// EEXIST if it exists; EINVAL from the monitors if the pool uses
    /// self-managed snapshots.
    ///
    /// ```no_run
    /// # async fn f(rados: &msgr_rados::Rados) -> Result<(), msgr_rados::RadosError> {
    /// let mut io = rados.ioctx("data")?;
    /// rados.snap_create(&io, "before").await?;
    /// io.write_full(b"obj", "after".into()).await?;
    /// io.set_read_snap(io.snap_lookup("before")?);
    /// let old = io.read(b"obj", 0, 0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn snap_create(&self, io: &IoCtx, name: &str) -> Result<(), RadosError> {
        let what = format!("creating snapshot {name}");
        let pool = self.op_pool(io, &what)?;
        if io.snap_lookup(name).is_ok() {
            return Err(os(EEXIST, what));
        }
        let req = PoolOpRequest {
            op: CREATE_SNAP,
            pool,
            name: name.to_string(),
            snapid: 0,
            crush_rule: 0,
        };
        self.pool_op(req, what).await.map(drop)
    }

    /// Removes pool snapshot `name` (`rados_ioctx_snap_remove`); ENOENT if
    /// there is none.
    pub async fn snap_remove(&self, io: &IoCtx, name: &str) -> Result<(), RadosError> {
        let what = format!("removing snapshot {name}");
        let pool = self.op_pool(io, &what)?;
        io.snap_lookup(name).map_err(|_| os(ENOENT, what.clone()))?;
        let req = PoolOpRequest {
            op: DELETE_SNAP,
            pool,
            name: name.to_string(),
            snapid: 0,
            crush_rule: 0,
        };
        self.pool_op(req, what).await.map(drop)
    }

    /// Allocates a self-managed snap id in `io`'s pool
    /// (`rados_ioctx_selfmanaged_snap_create`); EINVAL from the monitors if
    /// the pool has pool snapshots.
    pub async fn selfmanaged_snap_create(&self, io: &IoCtx) -> Result<u64, RadosError> {
        let what = "allocating a self-managed snapshot".to_string();
        let pool = self.op_pool(io, &what)?;
        let req = PoolOpRequest {
            op: CREATE_UNMANAGED_SNAP,
            pool,
            name: String::new(),
            snapid: 0,
            crush_rule: 0,
        };
        let reply = self.pool_op(req, what).await?;
        let id: [u8; 8] = reply.data.as_ref().try_into().map_err(|_| {
            RadosError::BadReply(format!(
                "the monitors' new self-managed snap id: expected 8 bytes, got {}",
                reply.data.len()
            ))
        })?;
        Ok(u64::from_le_bytes(id))
    }

    /// Removes self-managed snapshot `snapid` of `io`'s pool
    /// (`rados_ioctx_selfmanaged_snap_remove`): the OSDs trim its clones.
    pub async fn selfmanaged_snap_remove(&self, io: &IoCtx, snapid: u64) -> Result<(), RadosError> {
        let what = format!("removing self-managed snapshot {snapid}");
        let pool = self.op_pool(io, &what)?;
        let req = PoolOpRequest {
            op: DELETE_UNMANAGED_SNAP,
            pool,
            name: String::new(),
            snapid,
            crush_rule: 0,
        };
        self.pool_op(req, what).await.map(drop)
    }
}

impl IoCtx {
    /// The pool's snapshots' ids, oldest first (`rados_ioctx_snap_list`).
    pub fn snap_list(&self) -> Result<Vec<u64>, RadosError> {
        self.with_pool(|p| p.snaps.keys().copied().collect())
    }

    /// The id of pool snapshot `name` (`rados_ioctx_snap_lookup`); ENOENT
    /// if there is none.
    pub fn snap_lookup(&self, name: &str) -> Result<u64, RadosError> {
        let id = self.with_pool(|p| p.snaps.iter().find(|(_, n)| *n == name).map(|(i, _)| *i))?;
        id.ok_or_else(|| os(ENOENT, format!("snapshot {name}")))
    }

    /// The name of pool snapshot `snapid` (`rados_ioctx_snap_get_name`).
    pub fn snap_get_name(&self, snapid: u64) -> Result<String, RadosError> {
        let name = self.with_pool(|p| p.snaps.get(&snapid).cloned())?;
        name.ok_or_else(|| os(ENOENT, format!("snapshot {snapid}")))
    }

    /// When pool snapshot `snapid` was taken (`rados_ioctx_snap_get_stamp`).
    pub fn snap_get_stamp(&self, snapid: u64) -> Result<UTime, RadosError> {
        let stamp = self.with_pool(|p| p.snap_stamps.get(&snapid).copied())?;
        stamp.ok_or_else(|| os(ENOENT, format!("snapshot {snapid}")))
    }

    /// Rolls object `name` back to pool snapshot `snap`
    /// (`rados_ioctx_snap_rollback`); ENOENT if there is no such snapshot.
    pub async fn snap_rollback(&self, name: &[u8], snap: &str) -> Result<(), RadosError> {
        let id = self.snap_lookup(snap)?;
        self.selfmanaged_snap_rollback(name, id).await
    }

    /// Rolls object `name` back to snapshot `snapid` with this context's
    /// snap context (`rados_ioctx_selfmanaged_snap_rollback`).
    pub async fn selfmanaged_snap_rollback(
        &self,
        name: &[u8],
        snapid: u64,
    ) -> Result<(), RadosError> {
        self.operate(name, Ops::new().rollback(snapid))
            .await
            .map(drop)
    }

    /// Object `name`'s clones and snap sequence (LIST_SNAPS, read at
    /// [`SNAPDIR`], as `IoCtx::list_snaps` does; `rados listsnaps`).
    pub async fn list_snaps(&self, name: &[u8]) -> Result<SnapSet, RadosError> {
        let mut dir = self.clone();
        dir.read_snap = SNAPDIR;
        let r = dir
            .submit(Bytes::copy_from_slice(name), None, Ops::new().list_snaps())
            .await?;
        decode_snap_set(&first_out(&r)).map_err(|e| {
            RadosError::BadReply(format!(
                "list_snaps of {}: {e}",
                String::from_utf8_lossy(name)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROLLBACK carries the snap id in the op's `snap` member (its first
    /// 8 bytes) and writes; LIST_SNAPS reads.
    #[test]
    fn ops_as_ceph_lays_them_out() {
        let ops = Ops::new().rollback(0x0102_0304_0506_0708).list_snaps();
        let (rb, ls) = (&ops.0[0], &ops.0[1]);
        assert_eq!(rb.op.op, 0x220e);
        assert_eq!(rb.op.args[..8], 0x0102_0304_0506_0708u64.to_le_bytes());
        assert!(rb.writes());
        assert_eq!(ls.op.op, 0x120a);
        assert!(!ls.writes());
        assert!(ops.writes(), "a request with a rollback is a write");
    }

    /// A listing cut short, or with bytes after it, is an error.
    #[test]
    fn malformed_listings_are_errors() {
        let set = SnapSet {
            clones: vec![msgr_messages::CloneInfo {
                cloneid: 3,
                snaps: vec![3],
                overlap: vec![(0, 1)],
                size: 1,
            }],
            seq: 3,
        };
        let b = msgr_encoding::Encode::to_bytes(&set);
        assert_eq!(decode_snap_set(&b).expect("whole"), set);
        for cut in 0..b.len() {
            assert!(decode_snap_set(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = b.to_vec();
        longer.push(0);
        assert!(decode_snap_set(&longer).is_err());
    }
}
