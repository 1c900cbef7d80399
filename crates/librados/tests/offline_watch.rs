//! Watch/notify, locks, listing and snapshots before a cluster is
//! involved: the errnos of calls given NULL handles or made unconnected,
//! and `rados_decode_notify_response` on buffers built here.
//! (scripts/interop/librados-c.sh runs them against a cluster, beside
//! Ceph's librados, with tests/c/watch.c.)
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rados::*;

extern "C" {
    fn rados_create(pcluster: *mut RadosT, id: *const c_char) -> i32;
    fn rados_shutdown(cluster: RadosT);
    fn rados_watch3(
        io: IoctxT,
        o: *const c_char,
        cookie: *mut u64,
        cb: Option<WatchCb2>,
        errcb: Option<WatchErrCb>,
        timeout: u32,
        arg: *mut c_void,
    ) -> c_int;
    fn rados_watch_check(io: IoctxT, cookie: u64) -> c_int;
    fn rados_unwatch2(io: IoctxT, cookie: u64) -> c_int;
    fn rados_watch_flush(cluster: RadosT) -> c_int;
    fn rados_notify2(
        io: IoctxT,
        o: *const c_char,
        buf: *const c_char,
        len: c_int,
        timeout_ms: u64,
        reply: *mut *mut c_char,
        reply_len: *mut usize,
    ) -> c_int;
    fn rados_notify_ack(
        io: IoctxT,
        o: *const c_char,
        notify_id: u64,
        cookie: u64,
        buf: *const c_char,
        len: c_int,
    ) -> c_int;
    fn rados_decode_notify_response(
        buf: *mut c_char,
        len: usize,
        acks: *mut *mut NotifyAckT,
        nr_acks: *mut usize,
        timeouts: *mut *mut NotifyTimeoutT,
        nr_timeouts: *mut usize,
    ) -> c_int;
    fn rados_free_notify_response(
        acks: *mut NotifyAckT,
        nr_acks: usize,
        timeouts: *mut NotifyTimeoutT,
    );
    fn rados_lock_exclusive(
        io: IoctxT,
        o: *const c_char,
        name: *const c_char,
        cookie: *const c_char,
        desc: *const c_char,
        duration: *mut libc::timeval,
        flags: u8,
    ) -> c_int;
    fn rados_unlock(
        io: IoctxT,
        o: *const c_char,
        name: *const c_char,
        cookie: *const c_char,
    ) -> c_int;
    fn rados_nobjects_list_open(io: IoctxT, ctx: *mut *mut c_void) -> c_int;
    fn rados_nobjects_list_next(
        ctx: *mut c_void,
        entry: *mut *const c_char,
        key: *mut *const c_char,
        nspace: *mut *const c_char,
    ) -> c_int;
    fn rados_nobjects_list_close(ctx: *mut c_void);
    fn rados_nobjects_list_get_pg_hash_position(ctx: *mut c_void) -> u32;
    fn rados_nobjects_list_seek(ctx: *mut c_void, pos: u32) -> u32;
    fn rados_nobjects_list_get_cursor(ctx: *mut c_void, cursor: *mut *mut c_void) -> c_int;
    fn rados_nobjects_list_seek_cursor(ctx: *mut c_void, cursor: *mut c_void) -> u32;
    fn rados_object_list_cursor_free(io: IoctxT, cursor: *mut c_void);
    fn rados_ioctx_snap_create(io: IoctxT, name: *const c_char) -> c_int;
    fn rados_ioctx_snap_list(io: IoctxT, snaps: *mut u64, maxlen: c_int) -> c_int;
    fn rados_ioctx_snap_lookup(io: IoctxT, name: *const c_char, id: *mut u64) -> c_int;
    fn rados_ioctx_snap_set_read(io: IoctxT, snap: u64);
    fn rados_ioctx_selfmanaged_snap_create(io: IoctxT, id: *mut u64) -> c_int;
    fn rados_ioctx_selfmanaged_snap_set_write_ctx(
        io: IoctxT,
        seq: u64,
        snaps: *mut u64,
        n: c_int,
    ) -> c_int;
}

const OBJ: *const c_char = c"obj".as_ptr();

#[test]
fn io_calls_with_a_null_context_are_einval() {
    let null = ptr::null_mut();
    let mut cookie = 0u64;
    let mut id = 0u64;
    let mut ctx: *mut c_void = null;
    unsafe {
        assert_eq!(
            rados_watch3(null, OBJ, &mut cookie, None, None, 0, null),
            -libc::EINVAL
        );
        assert_eq!(rados_watch_check(null, 1), -libc::EINVAL);
        assert_eq!(rados_unwatch2(null, 1), -libc::EINVAL);
        assert_eq!(
            rados_notify2(
                null,
                OBJ,
                ptr::null(),
                0,
                0,
                ptr::null_mut(),
                ptr::null_mut()
            ),
            -libc::EINVAL
        );
        assert_eq!(
            rados_notify_ack(null, OBJ, 1, 1, ptr::null(), 0),
            -libc::EINVAL
        );
        let n = c"lk".as_ptr();
        assert_eq!(
            rados_lock_exclusive(null, OBJ, n, n, ptr::null(), ptr::null_mut(), 0),
            -libc::EINVAL
        );
        assert_eq!(rados_unlock(null, OBJ, n, n), -libc::EINVAL);
        assert_eq!(rados_nobjects_list_open(null, &mut ctx), -libc::EINVAL);
        assert_eq!(rados_ioctx_snap_create(null, n), -libc::EINVAL);
        assert_eq!(rados_ioctx_snap_list(null, &mut id, 1), -libc::EINVAL);
        assert_eq!(rados_ioctx_snap_lookup(null, n, &mut id), -libc::EINVAL);
        rados_ioctx_snap_set_read(null, 1);
        assert_eq!(
            rados_ioctx_selfmanaged_snap_create(null, &mut id),
            -libc::EINVAL
        );
        assert_eq!(
            rados_ioctx_selfmanaged_snap_set_write_ctx(null, 1, ptr::null_mut(), 0),
            -libc::EINVAL
        );
    }
}

#[test]
fn a_null_list_context() {
    let null = ptr::null_mut();
    let mut entry: *const c_char = ptr::null();
    unsafe {
        assert_eq!(
            rados_nobjects_list_next(null, &mut entry, ptr::null_mut(), ptr::null_mut()),
            -libc::EINVAL
        );
        assert_eq!(rados_nobjects_list_get_pg_hash_position(null), 0);
        assert_eq!(rados_nobjects_list_seek(null, 7), 7);
        let mut cursor: *mut c_void = null;
        assert_eq!(
            rados_nobjects_list_get_cursor(null, &mut cursor),
            -libc::EINVAL
        );
        assert_eq!(rados_nobjects_list_seek_cursor(null, null), 0);
        rados_object_list_cursor_free(null, null);
        rados_nobjects_list_close(null);
    }
}

#[test]
fn watch_flush_needs_a_connected_handle() {
    let mut c: RadosT = ptr::null_mut();
    unsafe {
        assert_eq!(rados_watch_flush(ptr::null_mut()), -libc::EINVAL);
        assert_eq!(rados_create(&mut c, ptr::null()), 0);
        assert_eq!(rados_watch_flush(c), -libc::ENOTCONN);
        rados_shutdown(c);
    }
}

/// A notify's reply as an OSD encodes it: the acks' map, the timeouts' set.
fn reply(acks: &[(u64, u64, &[u8])], timeouts: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(acks.len() as u32).to_le_bytes());
    for (gid, cookie, payload) in acks {
        v.extend_from_slice(&gid.to_le_bytes());
        v.extend_from_slice(&cookie.to_le_bytes());
        v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        v.extend_from_slice(payload);
    }
    v.extend_from_slice(&(timeouts.len() as u32).to_le_bytes());
    for (gid, cookie) in timeouts {
        v.extend_from_slice(&gid.to_le_bytes());
        v.extend_from_slice(&cookie.to_le_bytes());
    }
    v
}

#[test]
fn decode_notify_response_gives_the_acks_and_timeouts() {
    let mut buf = reply(&[(4100, 7, b"pong"), (4200, 9, b"")], &[(4300, 11)]);
    let (mut acks, mut timeouts) = (ptr::null_mut(), ptr::null_mut());
    let (mut na, mut nt) = (0usize, 0usize);
    unsafe {
        let r = rados_decode_notify_response(
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut acks,
            &mut na,
            &mut timeouts,
            &mut nt,
        );
        assert_eq!(r, 0);
        assert_eq!((na, nt), (2, 1));
        let a = std::slice::from_raw_parts(acks, na);
        assert_eq!(
            (a[0].notifier_id, a[0].cookie, a[0].payload_len),
            (4100, 7, 4)
        );
        assert_eq!(
            std::slice::from_raw_parts(a[0].payload.cast::<u8>(), 4),
            b"pong"
        );
        assert_eq!(
            (a[1].notifier_id, a[1].cookie, a[1].payload_len),
            (4200, 9, 0)
        );
        assert!(a[1].payload.is_null());
        assert_eq!(
            *timeouts,
            NotifyTimeoutT {
                notifier_id: 4300,
                cookie: 11
            }
        );
        rados_free_notify_response(acks, na, timeouts);
        rados_free_notify_response(ptr::null_mut(), 0, ptr::null_mut());
    }
}

#[test]
fn decode_notify_response_refuses_what_does_not_decode() {
    let (mut acks, mut timeouts) = (ptr::null_mut(), ptr::null_mut());
    let (mut na, mut nt) = (0usize, 0usize);
    let whole = reply(&[(1, 2, b"abc")], &[]);
    unsafe {
        assert_eq!(
            rados_decode_notify_response(
                ptr::null_mut(),
                0,
                &mut acks,
                &mut na,
                &mut timeouts,
                &mut nt
            ),
            -libc::EINVAL
        );
        for cut in 1..whole.len() {
            let mut b = whole[..cut].to_vec();
            let r = rados_decode_notify_response(
                b.as_mut_ptr().cast(),
                b.len(),
                &mut acks,
                &mut na,
                &mut timeouts,
                &mut nt,
            );
            assert_eq!(r, -libc::EINVAL, "cut at {cut}");
        }
        let mut empty = reply(&[], &[]);
        assert_eq!(
            rados_decode_notify_response(
                empty.as_mut_ptr().cast(),
                empty.len(),
                &mut acks,
                &mut na,
                &mut timeouts,
                &mut nt
            ),
            0
        );
        assert_eq!((na, nt), (0, 0));
        assert!(acks.is_null() && timeouts.is_null());
    }
}

#[test]
fn decode_notify_reply_is_bounded_by_its_input() {
    // A count far past what the buffer holds is an error, not an
    // allocation.
    let mut b = u32::MAX.to_le_bytes().to_vec();
    b.extend_from_slice(&[0; 8]);
    assert!(decode_notify_reply(&b).is_none());
}
