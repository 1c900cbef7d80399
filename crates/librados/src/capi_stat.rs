//! Usage statistics: `rados_ioctx_pool_stat` (bound to `LIBRADOS_14.2.0`,
//! as in Ceph's library) and `rados_cluster_stat`, with librados.h's
//! structs (Ceph 16).
//!
//! # Unsafe code
//! As in `capi`: handles are NULL or live; an output struct is NULL or
//! writable.
#![allow(unsafe_code)]

use std::ffi::c_int;

use crate::capi::{cluster, io, IoctxT, RadosT};
use crate::errno::errno_of;

/// Returns the errno of a failed step from the enclosing C function.
macro_rules! c_try {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => return errno,
        }
    };
}

/// librados.h's `struct rados_pool_stat_t` (the `LIBRADOS_14.2.0` one,
/// with the user bytes and compression counters).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RadosPoolStatT {
    /// Bytes allocated.
    pub num_bytes: u64,
    /// `num_bytes` in KiB.
    pub num_kb: u64,
    /// Objects.
    pub num_objects: u64,
    /// Clones.
    pub num_object_clones: u64,
    /// Objects times replicas.
    pub num_object_copies: u64,
    /// Objects missing on their primary.
    pub num_objects_missing_on_primary: u64,
    /// Unfound objects.
    pub num_objects_unfound: u64,
    /// Degraded objects.
    pub num_objects_degraded: u64,
    /// Read ops.
    pub num_rd: u64,
    /// KiB read.
    pub num_rd_kb: u64,
    /// Write ops.
    pub num_wr: u64,
    /// KiB written.
    pub num_wr_kb: u64,
    /// Bytes of user data.
    pub num_user_bytes: u64,
    /// Bytes before compression.
    pub compressed_bytes_orig: u64,
    /// Compressed bytes.
    pub compressed_bytes: u64,
    /// Bytes allocated to compressed data.
    pub compressed_bytes_alloc: u64,
}

impl From<&msgr_rados::PoolStats> for RadosPoolStatT {
    fn from(s: &msgr_rados::PoolStats) -> Self {
        RadosPoolStatT {
            num_bytes: s.num_bytes,
            num_kb: s.num_kb,
            num_objects: s.num_objects,
            num_object_clones: s.num_object_clones,
            num_object_copies: s.num_object_copies,
            num_objects_missing_on_primary: s.num_objects_missing_on_primary,
            num_objects_unfound: s.num_objects_unfound,
            num_objects_degraded: s.num_objects_degraded,
            num_rd: s.num_rd,
            num_rd_kb: s.num_rd_kb,
            num_wr: s.num_wr,
            num_wr_kb: s.num_wr_kb,
            num_user_bytes: s.num_user_bytes,
            compressed_bytes_orig: s.compressed_bytes_orig,
            compressed_bytes: s.compressed_bytes,
            compressed_bytes_alloc: s.compressed_bytes_alloc,
        }
    }
}

/// librados.h's `struct rados_cluster_stat_t`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RadosClusterStatT {
    /// Capacity (KiB).
    pub kb: u64,
    /// Used (KiB).
    pub kb_used: u64,
    /// Available (KiB).
    pub kb_avail: u64,
    /// Objects.
    pub num_objects: u64,
}

// The library's rados_ioctx_pool_stat is `pool_stat` at version
// LIBRADOS_14.2.0 (Ceph's default binding; its older "Base" one, for
// binaries linked before Nautilus, takes a shorter struct and is not
// provided). A version script cannot bind it (rustc's own script lists
// every exported function unversioned, and an exported Rust function would
// show beside it), so a symbol of our own jumps to the (unexported) Rust
// function and `.symver` gives it its versioned name.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
std::arch::global_asm!(
    ".pushsection .text.rados_ioctx_pool_stat_v14,\"ax\",@progbits",
    ".globl rados_ioctx_pool_stat_v14",
    ".type rados_ioctx_pool_stat_v14, @function",
    "rados_ioctx_pool_stat_v14:",
    "jmp {f}",
    ".size rados_ioctx_pool_stat_v14, . - rados_ioctx_pool_stat_v14",
    ".symver rados_ioctx_pool_stat_v14, rados_ioctx_pool_stat@@LIBRADOS_14.2.0",
    ".popsection",
    f = sym pool_stat,
);

/// `rados_ioctx_pool_stat` (exported as such at `LIBRADOS_14.2.0`): the
/// pool's usage as the monitors have it from the mgr (zeros before a mgr
/// reported it); -ENOENT if the pool is gone.
///
/// # Safety
/// `io` a live context; `stats` NULL or writable.
pub unsafe extern "C" fn pool_stat(io: IoctxT, stats: *mut RadosPoolStatT) -> c_int {
    // SAFETY: a live context.
    let io = c_try!(unsafe { self::io(io) });
    if stats.is_null() {
        return -libc::EINVAL;
    }
    let name = c_try!(io.pool_name());
    let rados = c_try!(io.rados());
    let st = c_try!(
        c_try!(io.block(async move { rados.pool_stat(&name).await })).map_err(|e| errno_of(&e))
    );
    // SAFETY: non-NULL and writable.
    unsafe { stats.write(RadosPoolStatT::from(&st)) };
    0
}

/// `rados_cluster_stat`: the cluster's capacity, use and objects as the
/// monitors have them from the mgr.
///
/// # Safety
/// `cluster` a live handle; `result` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rados_cluster_stat(
    cluster: RadosT,
    result: *mut RadosClusterStatT,
) -> c_int {
    // SAFETY: a live handle.
    let c = c_try!(unsafe { self::cluster(cluster) });
    if result.is_null() {
        return -libc::EINVAL;
    }
    let rados = c_try!(c.rados());
    let st = c_try!(
        c_try!(c.block(async move { rados.cluster_stat().await })).map_err(|e| errno_of(&e))
    );
    // SAFETY: non-NULL and writable.
    unsafe {
        result.write(RadosClusterStatT {
            kb: st.kb,
            kb_used: st.kb_used,
            kb_avail: st.kb_avail,
            num_objects: st.num_objects,
        })
    };
    0
}
