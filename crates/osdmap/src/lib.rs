//! The OSDMap as a client keeps it (src/osd/OSDMap.cc, the kernel's
//! net/ceph/osdmap.c; docs/research/osdmap.md):
//!
//! - [`OsdMap::decode`]: a full map as Ceph 16 and Ceph 20 monitors send
//!   it (crc checked), with its pools ([`Pool`], `pg_pool_t` v29–v32) and
//!   its CRUSH map;
//! - [`Incremental::decode`] and [`OsdMap::apply`]: one epoch's changes,
//!   checked whole before any is applied;
//! - [`MapFollower`]: a map kept current from MOSDMap messages;
//! - placement ([`OsdMap::place`], [`OsdMap::pg_to_up_acting`]): object →
//!   pg by the pool's hash → placement seed → CRUSH → up set after upmaps
//!   and primary affinity → acting set after pg_temp and primary_temp.
//!
//! Sans-IO. A map is a peer's input: every count is bounded by the bytes
//! that carry it, `max_osd` by [`MAX_OSD`], and a CRUSH map's work per
//! mapping by `CrushMap::check_work`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod follow;
pub mod hash;
mod incremental;
mod map;
mod placement;
pub mod pool;

pub use error::OsdMapError;
pub use follow::{Followed, MapFollower, MAX_EPOCH_JUMP};
pub use incremental::Incremental;
pub use map::{flag, state, OsdMap, DEFAULT_PRIMARY_AFFINITY, MAX_OSD, WEIGHT_IN};
pub use msgr_messages::osd_types::PgId;
pub use placement::{Placement, UpActing};
pub use pool::Pool;
