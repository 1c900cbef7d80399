//! The asynchronous C API before a cluster is involved: a completion's
//! life (no callbacks before an op, release), the errnos of a call that
//! cannot be submitted, and `rados_cluster_stat` unconnected.
//! (scripts/interop/librados-c.sh runs the ops against a cluster, beside
//! Ceph's librados, with tests/c/aio.c.)
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use rados::*;

extern "C" {
    fn rados_create(pcluster: *mut RadosT, id: *const c_char) -> i32;
    fn rados_shutdown(cluster: RadosT);
    fn rados_cluster_stat(cluster: RadosT, result: *mut RadosClusterStatT) -> i32;
    fn rados_aio_create_completion(
        arg: *mut c_void,
        complete: Option<Callback>,
        safe: Option<Callback>,
        pc: *mut CompletionT,
    ) -> i32;
    fn rados_aio_create_completion2(
        arg: *mut c_void,
        complete: Option<Callback>,
        pc: *mut CompletionT,
    ) -> i32;
    fn rados_aio_release(c: CompletionT);
    fn rados_aio_is_complete(c: CompletionT) -> i32;
    fn rados_aio_is_safe(c: CompletionT) -> i32;
    fn rados_aio_get_return_value(c: CompletionT) -> i32;
    fn rados_aio_write(
        io: IoctxT,
        oid: *const c_char,
        c: CompletionT,
        buf: *const c_char,
        len: usize,
        off: u64,
    ) -> i32;
    fn rados_aio_read(
        io: IoctxT,
        oid: *const c_char,
        c: CompletionT,
        buf: *mut c_char,
        len: usize,
        off: u64,
    ) -> i32;
    fn rados_aio_flush(io: IoctxT) -> i32;
}

static CALLED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn called(_c: *mut c_void, _arg: *mut c_void) {
    CALLED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_completion_without_an_op() {
    let mut c: CompletionT = ptr::null_mut();
    unsafe {
        assert_eq!(
            rados_aio_create_completion(ptr::null_mut(), Some(called), Some(called), &mut c),
            0
        );
        assert!(!c.is_null());
        assert_eq!(rados_aio_is_complete(c), 0);
        assert_eq!(rados_aio_is_safe(c), 0);
        assert_eq!(rados_aio_get_return_value(c), 0);
        rados_aio_release(c);
        let mut c2: CompletionT = ptr::null_mut();
        assert_eq!(
            rados_aio_create_completion2(ptr::null_mut(), None, &mut c2),
            0
        );
        assert_eq!(rados_aio_is_complete(c2), 0);
        rados_aio_release(c2);
        assert_eq!(
            rados_aio_create_completion2(ptr::null_mut(), None, ptr::null_mut()),
            -libc::EINVAL
        );
        // NULL handles are -EINVAL (librados would crash), not a crash.
        assert_eq!(rados_aio_is_complete(ptr::null_mut()), -libc::EINVAL);
        rados_aio_release(ptr::null_mut());
    }
    assert_eq!(CALLED.load(Ordering::SeqCst), 0, "no op, no callback");
}

#[test]
fn ops_that_cannot_be_submitted() {
    let oid = c"obj";
    let mut buf = [0 as c_char; 8];
    let mut c: CompletionT = ptr::null_mut();
    unsafe {
        assert_eq!(
            rados_aio_create_completion(ptr::null_mut(), None, None, &mut c),
            0
        );
        // No I/O context.
        assert_eq!(
            rados_aio_write(ptr::null_mut(), oid.as_ptr(), c, buf.as_ptr(), 8, 0),
            -libc::EINVAL
        );
        assert_eq!(
            rados_aio_read(ptr::null_mut(), oid.as_ptr(), c, buf.as_mut_ptr(), 8, 0),
            -libc::EINVAL
        );
        assert_eq!(rados_aio_flush(ptr::null_mut()), -libc::EINVAL);
        // Longer than librados takes (checked before anything is read).
        assert_eq!(
            rados_aio_write(
                ptr::null_mut(),
                oid.as_ptr(),
                c,
                buf.as_ptr(),
                usize::MAX,
                0
            ),
            -libc::E2BIG
        );
        // Nothing was submitted: the completion never completes.
        assert_eq!(rados_aio_is_complete(c), 0);
        rados_aio_release(c);
    }
}

#[test]
fn cluster_stat_unconnected() {
    let mut h: RadosT = ptr::null_mut();
    let mut st = RadosClusterStatT::default();
    unsafe {
        assert_eq!(rados_create(&mut h, ptr::null()), 0);
        assert_eq!(rados_cluster_stat(h, &mut st), -libc::ENOTCONN);
        assert_eq!(rados_cluster_stat(h, ptr::null_mut()), -libc::EINVAL);
        rados_shutdown(h);
    }
}
