//! The pieces of the `msgr` tool, as a library so that tests can drive
//! them: the OSD-like server (`msgr serve`), the benchmark (`msgr bench`),
//! keepalive pings (`msgr ping`), the cluster commands (`msgr mon`, `osd`,
//! `rados`, `crush`). Capture analysis (`msgr decode`) is msgr-inspect's.
// Arithmetic and indexing are checked where peers' bytes are parsed (the
// protocol crates); this tool counts and formats its own measurements.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]

pub mod args;
pub mod bench;
pub mod common;
pub mod crush_cmd;
pub use msgr_admin::json;
pub use msgr_monc::identity;
pub mod hexdump;
pub mod logging;
pub mod mgr_cmd;
pub mod mon;
pub mod osd;
pub mod out;
pub mod ping;
pub mod rados_bench;
pub mod rados_cmd;
pub mod rados_df;
pub mod rados_lock;
pub mod rados_opbench;
pub mod rados_ops;
pub mod rados_snap;
pub mod rados_watch;
pub mod raw;
pub mod security;
pub mod serve;
pub mod utime;
pub mod workload;
