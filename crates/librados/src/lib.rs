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
//! # What is exported
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
//! - commands: `rados_mon_command`, `rados_buffer_free`;
//! - usage: `rados_ioctx_pool_stat` (at version `LIBRADOS_14.2.0`, as
//!   Ceph's default binding; see `capi_stat.rs`), `rados_cluster_stat`;
//! - asynchronous I/O: `rados_aio_create_completion`,
//!   `rados_aio_create_completion2`, `rados_aio_release`,
//!   `rados_aio_wait_for_complete`, `rados_aio_wait_for_safe`,
//!   `rados_aio_is_complete`, `rados_aio_is_safe`,
//!   `rados_aio_get_return_value`, `rados_aio_write`,
//!   `rados_aio_write_full`, `rados_aio_append`, `rados_aio_read`,
//!   `rados_aio_remove`, `rados_aio_stat`, `rados_aio_flush`;
//! - administration (`capi_admin.rs`): `rados_mon_command_target`,
//!   `rados_osd_command`, `rados_pg_command`, `rados_mgr_command`,
//!   `rados_mgr_command_target`, `rados_ping_monitor` (a monitor
//!   session of its own with the monitor named, as librados's),
//!   `rados_monitor_log`, `rados_monitor_log2` (callbacks on the
//!   finisher thread), `rados_pool_create_with_auid`,
//!   `rados_pool_create_with_crush_rule`, `rados_pool_create_with_all`,
//!   `rados_pool_get_base_tier`, `rados_ioctx_pool_requires_alignment2`,
//!   `rados_ioctx_pool_required_alignment2`, `rados_set_pool_full_try`,
//!   `rados_unset_pool_full_try`, `rados_blocklist_add`,
//!   `rados_getaddrs`, `rados_inconsistent_pg_list`,
//!   `rados_ioctx_get_cluster`, `rados_cct`, `rados_create_with_context`,
//!   `rados_application_enable`, `rados_application_list`,
//!   `rados_application_metadata_get`, `rados_application_metadata_set`,
//!   `rados_application_metadata_remove`,
//!   `rados_application_metadata_list`, `rados_service_register`,
//!   `rados_service_update_status` (the handle registers with the active
//!   mgr as a service daemon, MMgrOpen then an MMgrReport every 5 s, and
//!   shows in `ceph service dump` / `ceph -s`).
//!
//! An aio call returns 0 once its op is submitted; the op's result is the
//! completion's return value. A write's data is copied at submission
//! (the caller may reuse its buffer at once); a read's buffer and a
//! stat's outputs are written before the op completes and must stay
//! valid until then. When an op ends, its completion is marked complete
//! and its callbacks ("complete" then "safe", each at most once) run on
//! the handle's finisher thread. `rados_aio_wait_for_*` return once the
//! op is complete and its callbacks have returned (librados's return as
//! soon as it is complete, its callbacks possibly still running; only a
//! callback waiting for the waiting thread tells them apart, which
//! deadlocks with ours; called from a callback, they return at once).
//! A NULL handle or completion is -EINVAL (librados would crash).
//! `rados_aio_flush` waits until every write, append and
//! remove submitted on the context before it is complete. An op still in
//! flight at `rados_shutdown` completes with -ENOTCONN; its callbacks run
//! if the finisher is still up.
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
//! The first aio op starts the handle's finisher thread (Ceph's
//! librados's finisher too), which runs the completions' callbacks in the
//! order their ops ended, and ends at `rados_shutdown` after running what
//! was queued: a callback never runs on a runtime worker or a messenger
//! shard, so a callback may block or call the library.
//! Once connected, a handle and its I/O contexts may be used from any
//! number of threads at once, as librados documents.
//!
//! # What is missing
//! - The rest of the 153 functions Python's `rados` module imports (the
//!   other aio calls, e.g. `rados_aio_cancel`, `_and_cb` waits, aio
//!   xattrs and exec; watch/notify, the read/write op builders, listing,
//!   snapshots, locks): `import rados` needs all of them, so it does not
//!   load this library yet.
//! - `rados_ioctx_pool_stat`'s older "Base" binding (a shorter struct, for
//!   binaries linked before Nautilus) is not provided.
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
//! - `rados_mgr_command_target` to a mgr that is not the active one is
//!   -ENXIO at once (librados waits for a map naming it active, up to
//!   `rados_mon_op_timeout`).
//! - `rados_pg_command` for a PG past its pool's `pg_num` is -ENOENT
//!   (librados folds it onto an existing PG and asks that one's primary).
//! - `rados_create_with_context` copies the other handle's configuration
//!   (librados shares one context: later changes show in both).
//! - A service daemon's metadata has the host's name, kernel and
//!   architecture, not all of librados's system information (CPU,
//!   memory, distribution, Ceph version); its beacons carry no perf
//!   counters.
//! - `rados_application_list` and `rados_application_metadata_list`
//!   write the list's final NUL only when the buffer has room for it
//!   (librados writes it one byte past a buffer the list fills exactly).
//! - Unlike Ceph's, our `LIBRADOS_14.2.0` node does not name
//!   `LIBRADOS_PRIVATE` as its parent (the loader does not read it).
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod admin;
mod aio;
mod aio_io;
mod capi;
mod capi_admin;
mod capi_aio;
mod capi_stat;
mod cluster;
mod errno;

pub use admin::{AdminState, LogLine, Service};
pub use aio::{Callback, Completion, Finisher, Writes};
pub use capi::{IoctxT, RadosT, VERSION};
pub use capi_admin::{ConfigT, LogCallback, LogCallback2};
pub use capi_aio::CompletionT;
pub use capi_stat::{RadosClusterStatT, RadosPoolStatT};
pub use cluster::{
    block_on, Cluster, CommandOutput, Io, BLOCKING_THREADS, MON_COMMAND_TIMEOUT, WORKER_THREADS,
};
pub use errno::{errno_of, mon_errno};
