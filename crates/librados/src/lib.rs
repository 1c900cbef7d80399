//! `librados.so.2` on the native RADOS client: Ceph's C API
//! (`include/rados/librados.h` of Ceph 16), so that a program or binding
//! built against Ceph's librados loads this library unchanged
//! (`LD_LIBRARY_PATH=target/release`, which holds `librados.so.2` after
//! `scripts/interop/librados-c.sh`, or `-l:librados.so.2`).
//!
//! # The library
//! The cdylib's soname is `librados.so.2` and it defines Ceph's version
//! nodes (`LIBRADOS_PRIVATE`, `LIBRADOS_14.2.0`; see `build.rs` and
//! `librados.map`). Every C function is exported unversioned ("Base" in
//! `objdump -T`), as Ceph's are; nothing else is exported. The staticlib
//! (`librados.a`, named after the library, `rados`) is the same code for
//! static linking.
//!
//! # What is exported (this first slice)
//! - the handle: `rados_version`, `rados_create`, `rados_create2`,
//!   `rados_conf_read_file`, `rados_conf_set`, `rados_conf_get`,
//!   `rados_conf_parse_argv`, `rados_conf_parse_argv_remainder`,
//!   `rados_conf_parse_env`, `rados_connect`, `rados_shutdown`,
//!   `rados_get_instance_id`, `rados_cluster_fsid`,
//!   `rados_wait_for_latest_osdmap`;
//! - pools: `rados_pool_lookup`, `rados_pool_reverse_lookup`,
//!   `rados_pool_list`, `rados_pool_create`, `rados_pool_delete`;
//! - I/O contexts: `rados_ioctx_create`, `rados_ioctx_create2`,
//!   `rados_ioctx_destroy`, `rados_ioctx_get_id`,
//!   `rados_ioctx_get_pool_name`, `rados_ioctx_set_namespace`,
//!   `rados_ioctx_locator_set_key`;
//! - objects: `rados_write`, `rados_write_full`, `rados_append`,
//!   `rados_read`, `rados_remove`, `rados_trunc`, `rados_stat`,
//!   `rados_getxattr`, `rados_setxattr`, `rados_rmxattr`;
//! - commands: `rados_mon_command`, `rados_buffer_free`.
//!
//! Each returns what librados returns (src/librados/librados_c.cc): 0 or
//! a length, or a negative errno (-ENOTCONN before `rados_connect`,
//! -EISCONN connecting twice, -ERANGE for a caller's buffer too small,
//! -E2BIG for a write past UINT_MAX/2 bytes, the OSD's or monitor's errno).
//!
//! # Threads
//! Each `rados_t` owns a tokio runtime built at `rados_create*`:
//! [`WORKER_THREADS`] (2) workers, and a blocking pool of at most
//! [`BLOCKING_THREADS`] (2) threads started on demand (the objecter's
//! placements after a map change). Connected, the handle also runs one
//! messenger shard thread for its monitor session and one for its OSD
//! sessions. No thread per connection. (Ceph's librados starts more than
//! a dozen per handle.) A C call runs its work on the handle's runtime and
//! waits for it on the caller's thread, never running the client on the
//! caller's thread, so a caller inside a runtime of its own is fine.
//! Once connected, a handle and its I/O contexts may be used from any
//! number of threads at once, as librados documents.
//!
//! # What is missing
//! - The rest of the 153 functions Python's `rados` module imports (aio
//!   and completions with their finisher thread, watch/notify, the
//!   read/write op builders, listing, snapshots, locks, the other
//!   commands, stats): `import rados` needs all of them, so it does not
//!   load this library yet.
//! - `rados_conf_set` takes any option name (librados answers -ENOENT
//!   for an option it does not know); `rados_conf_get` answers -ENOENT for
//!   an option nothing sets, where librados returns Ceph's default (only
//!   a few defaults are known here), nor does it see the options the
//!   monitors' configuration database sets (MConfig) once connected.
//! - `rados_conf_parse_argv*` takes every `--name value` as an option, as
//!   [`msgr_rados::RadosConfig::conf_parse_args`] does, where librados
//!   leaves the ones it does not know (`--format json`) in the remainder.
//! - `CEPH_ARGS` is read at `rados_connect` even without
//!   `rados_conf_parse_env`.
//! - `rados_get_instance_id` is 0 on a cluster with auth none (the global
//!   id is kept from cephx only).
//! - Namespaces and locator keys that are not UTF-8 are taken lossily.
//! - `rados_ioctx_pool_stat` must be bound to `LIBRADOS_14.2.0` (Python's
//!   module asks for it there): a version script cannot do it here (rustc
//!   adds its own script, which lists every exported function
//!   unversioned), but `.symver` can: `global_asm!(".symver
//!   _rados_ioctx_pool_stat, rados_ioctx_pool_stat@@LIBRADOS_14.2.0")`
//!   binds an exported `_rados_ioctx_pool_stat` there (tried: `objdump
//!   -T` then shows `LIBRADOS_14.2.0 rados_ioctx_pool_stat`). Also
//!   unlike Ceph's, our `LIBRADOS_14.2.0` node does not name
//!   `LIBRADOS_PRIVATE` as its parent (the loader does not read it).
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod aio;
mod capi;
mod capi_aio;
mod capi_stat;
mod cluster;

pub use aio::{Callback, Completion, Finisher, Writes};
pub use capi::{IoctxT, RadosT, VERSION};
pub use capi_aio::CompletionT;
pub use capi_stat::{RadosClusterStatT, RadosPoolStatT};
pub use cluster::{
    block_on, errno_of, mon_errno, Cluster, CommandOutput, Io, BLOCKING_THREADS,
    MON_COMMAND_TIMEOUT, WORKER_THREADS,
};
