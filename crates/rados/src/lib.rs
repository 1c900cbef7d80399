//! A native RADOS client on the messenger (librados's data path):
//!
//! - [`request`]: ops on one object (`ObjectOperation`) and what their
//!   replies hold;
//! - [`compound`]: librados's write and read operations ([`WriteOp`],
//!   [`ReadOp`]), each op's result read through its [`Handle`];
//! - [`objecter`]: the sans-IO objecter: targets from the OSD map, resends
//!   on map changes and connection resets, in-flight limits, timeouts,
//!   cancellation;
//! - [`Rados`] / [`IoCtx`]: the async client, a monitor session keeping the
//!   OSD map current and a messenger to the OSDs; each request is a future
//!   that cancels its op when dropped;
//! - [`cls`]: object class calls (`IoCtx::exec`), and [`lock`]: cls_lock's
//!   advisory locks on them.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod client;
pub mod cls;
pub mod compound;
mod config;
mod error;
mod ioctx;
mod listing;
pub mod lock;
mod object;
pub mod objecter;
mod paging;
mod pool;
pub mod request;
mod shared;
mod snap;
mod watch;
mod watch_state;

pub use client::admin::{ClusterStat, PoolStats, ADMIN_TIMEOUT};
pub use client::Rados;
pub use compound::{Handle, OpResults, ReadOp, WriteOp};
pub use config::RadosConfig;
pub use error::{errno_name, RadosError};
pub use ioctx::{IoCtx, ALL_NAMESPACES, OMAP_BATCH, OP_SIZE};
pub use listing::ObjectList;
/// An object's clones (LIST_SNAPS: [`IoCtx::list_snaps`]).
pub use msgr_messages::{CloneInfo, HObject, SnapSet};
pub use object::{io_error, ObjectHandle, OBJECT_CHUNK, OBJECT_WINDOW};
pub use objecter::{Limits, Object, Objecter, Request};
pub use pool::POOL_OP_TIMEOUT;
pub use request::{Listed, Ops, Reply, SnapContext, Stat};
pub use snap::{decode_snap_set, SNAPDIR};
pub use watch::{NotifyReply, Watch, WatchEvent, Watcher, WATCH_EVENT_QUEUE};

/// The byte buffers objects are read into and written from.
pub use bytes::Bytes;
/// A time as Ceph encodes it (`utime_t`): [`Stat::mtime`].
pub use msgr_encoding::UTime;
/// `CEPH_NOSNAP`: the head of an object, not a snapshot.
pub use msgr_messages::osd_types::NOSNAP;
