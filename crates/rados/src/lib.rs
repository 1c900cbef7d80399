//! A native RADOS client on the messenger (librados's data path):
//!
//! - [`request`]: ops on one object (`ObjectOperation`) and what their
//!   replies hold;
//! - [`objecter`]: the sans-IO objecter: targets from the OSD map, resends
//!   on map changes and connection resets, in-flight limits, timeouts;
//! - [`Rados`] / [`IoCtx`]: the async client, a monitor session keeping the
//!   OSD map current and a messenger to the OSDs.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod client;
pub mod objecter;
pub mod request;

pub use client::{IoCtx, Rados, RadosError, ALL_NAMESPACES, OP_SIZE};
pub use objecter::{Limits, Object, Objecter, Request};
pub use request::{Listed, Ops, Reply, Stat};
