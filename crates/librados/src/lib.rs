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
//! - compound ops, iterators and the other object calls (`capi_op.rs`,
//!   `capi_iter.rs`, `capi_aio2.rs`): `rados_create_write_op`,
//!   `rados_release_write_op`, `rados_write_op_set_flags`,
//!   `rados_write_op_assert_exists`, `rados_write_op_assert_version`,
//!   `rados_write_op_cmpext`, `rados_write_op_cmpxattr`,
//!   `rados_write_op_omap_cmp`, `rados_write_op_omap_cmp2`,
//!   `rados_write_op_setxattr`, `rados_write_op_rmxattr`,
//!   `rados_write_op_create`, `rados_write_op_write`,
//!   `rados_write_op_write_full`, `rados_write_op_writesame`,
//!   `rados_write_op_append`, `rados_write_op_remove`,
//!   `rados_write_op_truncate`, `rados_write_op_zero`,
//!   `rados_write_op_exec`, `rados_write_op_omap_set`,
//!   `rados_write_op_omap_set2`, `rados_write_op_omap_rm_keys`,
//!   `rados_write_op_omap_rm_keys2`, `rados_write_op_omap_rm_range2`,
//!   `rados_write_op_omap_clear`, `rados_write_op_set_alloc_hint`,
//!   `rados_write_op_set_alloc_hint2`, `rados_write_op_operate`,
//!   `rados_write_op_operate2`, `rados_aio_write_op_operate`,
//!   `rados_create_read_op`, `rados_release_read_op`,
//!   `rados_read_op_set_flags`, `rados_read_op_assert_exists`,
//!   `rados_read_op_assert_version`, `rados_read_op_cmpext`,
//!   `rados_read_op_cmpxattr`, `rados_read_op_omap_cmp`,
//!   `rados_read_op_omap_cmp2`, `rados_read_op_stat`,
//!   `rados_read_op_read`, `rados_read_op_checksum`,
//!   `rados_read_op_exec`, `rados_read_op_exec_user_buf`,
//!   `rados_read_op_getxattrs`, `rados_read_op_omap_get_vals`,
//!   `rados_read_op_omap_get_vals2`, `rados_read_op_omap_get_keys`,
//!   `rados_read_op_omap_get_keys2`,
//!   `rados_read_op_omap_get_vals_by_keys`,
//!   `rados_read_op_omap_get_vals_by_keys2`, `rados_read_op_operate`,
//!   `rados_aio_read_op_operate`, `rados_omap_get_next`,
//!   `rados_omap_get_next2`, `rados_omap_iter_size`,
//!   `rados_omap_get_end`, `rados_getxattrs`, `rados_getxattrs_next`,
//!   `rados_getxattrs_end`, `rados_exec`, `rados_cmpext`,
//!   `rados_writesame`, `rados_checksum`, `rados_get_last_version`,
//!   `rados_aio_cmpext`, `rados_aio_exec`, `rados_aio_writesame`,
//!   `rados_aio_setxattr`, `rados_aio_rmxattr`, `rados_aio_getxattr`,
//!   `rados_aio_getxattrs`, `rados_aio_flush_async`,
//!   `rados_aio_wait_for_complete_and_cb`,
//!   `rados_aio_wait_for_safe_and_cb`, `rados_aio_is_complete_and_cb`,
//!   `rados_aio_is_safe_and_cb`. An op's outputs (`prval`, buffers,
//!   iterators, `pmore`) are written when its operation completes, as
//!   librados's Objecter writes them (see `capi_op.rs`); a run takes the
//!   op object's ops, as librados's does;
//! - watch/notify, locks, listing, snapshots (`capi_watch.rs`,
//!   `capi_lock.rs`, `capi_list.rs`, `capi_snap.rs`): `rados_watch`,
//!   `rados_watch2`, `rados_watch3`, `rados_aio_watch`, `rados_aio_watch2`,
//!   `rados_unwatch`, `rados_unwatch2`, `rados_aio_unwatch`,
//!   `rados_watch_check`, `rados_watch_flush`, `rados_notify2`,
//!   `rados_aio_notify`, `rados_notify_ack`, `rados_decode_notify_response`,
//!   `rados_free_notify_response`; `rados_lock_exclusive`,
//!   `rados_lock_shared`, `rados_unlock`, `rados_break_lock`,
//!   `rados_list_lockers`; `rados_nobjects_list_open`,
//!   `rados_nobjects_list_next`, `rados_nobjects_list_next2`,
//!   `rados_nobjects_list_close`, `rados_nobjects_list_seek`,
//!   `rados_nobjects_list_get_pg_hash_position`,
//!   `rados_nobjects_list_get_cursor`, `rados_nobjects_list_seek_cursor`,
//!   `rados_object_list_cursor_free` (a `rados_object_list_cursor` is a
//!   boxed [`msgr_rados::HObject`]); `rados_ioctx_snap_create`,
//!   `rados_ioctx_snap_remove`, `rados_ioctx_snap_rollback`,
//!   `rados_rollback`, `rados_ioctx_snap_list`, `rados_ioctx_snap_lookup`,
//!   `rados_ioctx_snap_get_name`, `rados_ioctx_snap_get_stamp`,
//!   `rados_ioctx_snap_set_read`, `rados_ioctx_selfmanaged_snap_create`,
//!   `rados_ioctx_selfmanaged_snap_remove`,
//!   `rados_ioctx_selfmanaged_snap_rollback`,
//!   `rados_ioctx_selfmanaged_snap_set_write_ctx`,
//!   `rados_aio_ioctx_selfmanaged_snap_create`,
//!   `rados_aio_ioctx_selfmanaged_snap_remove`. A watch's callbacks run on
//!   the handle's finisher thread; `rados_unwatch2` returns once none of
//!   the watch's is running on another thread (librados 16 returns while
//!   one still runs) and does not wait when called from a callback;
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
//! - Of the `rados_object_list_*` enumeration, only
//!   `rados_object_list_cursor_free` is provided (for the cursors of
//!   `rados_nobjects_list_get_cursor`).
//! - A write (or a write op, `rados_writesame`) while the context reads
//!   at a snapshot (`rados_ioctx_snap_set_read`) is sent, and the OSD
//!   answers -EINVAL; librados refuses it with -EROFS without sending it.
//! - A watch handle this library did not give (or already unwatched) is
//!   -ENOTCONN for `rados_watch_check` and `rados_unwatch2` (librados
//!   takes it as a pointer). A watch still registered at `rados_shutdown`
//!   keeps a small record for the rest of the process.
//! - `rados_aio_cancel` and `rados_aio_get_version` are not provided.
//! - `rados_aio_exec` given an output longer than `out_len` completes
//!   with -ERANGE (librados copies it past the buffer and returns its
//!   length).
//! - An op builder given a NULL buffer with a non-zero length (librados
//!   crashes) adds nothing and makes its operation fail with -EINVAL.
//! - Omap keys and xattr names that are not UTF-8 are taken lossily (the
//!   Rust client's keys are `String`s).
//! - `rados_ioctx_pool_stat`'s older "Base" binding (a shorter struct, for
//!   binaries linked before Nautilus) is not provided.
//! - Options are Ceph 16's (`msgr_config::schema`, captured from
//!   Debian's librados): `rados_conf_set` and `rados_conf_parse_argv*`
//!   check names and values against it and `rados_conf_get` gives its
//!   defaults, as librados does; but the values the monitors'
//!   configuration database sends (MConfig) once connected are not seen,
//!   a change after `rados_connect` is taken (librados refuses one to an
//!   option it cannot change at run time, -EPERM), metavariables other than
//!   `$cluster`, `$type`, `$id`, `$name`, `$host`, `$home` are not
//!   expanded, and an option missing its value on the command line is
//!   -EINVAL (librados exits the process for `-m` and `-k`).
//! - `CEPH_ARGS` is read, as librados reads it at `rados_create`, but
//!   its `--id`/`--name` name the client (librados leaves them).
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
mod capi_aio2;
mod capi_iter;
mod capi_list;
mod capi_lock;
mod capi_op;
mod capi_snap;
mod capi_stat;
mod capi_watch;
mod cluster;
mod errno;
mod runtime;
mod service;

pub use admin::{AdminState, LogLine, Service};
pub use aio::{Callback, Completion, Finisher, Writes};
pub use capi::{IoctxT, RadosT, VERSION};
pub use capi_admin::{ConfigT, LogCallback, LogCallback2};
pub use capi_aio::CompletionT;
pub use capi_iter::{Iter, IterT};
pub use capi_op::{OpT, ReadOpC, WriteOpC};
pub use capi_stat::{RadosClusterStatT, RadosPoolStatT};
pub use capi_watch::{
    decode_notify_reply, NotifyAckT, NotifyTimeoutT, WatchCb, WatchCb2, WatchErrCb, NOTIFY_TIMEOUT,
};
pub use cluster::{
    Cluster, CommandOutput, Io, BLOCKING_THREADS, MON_COMMAND_TIMEOUT, WORKER_THREADS,
};
pub use errno::{errno_of, mon_errno};
pub use runtime::block_on;
