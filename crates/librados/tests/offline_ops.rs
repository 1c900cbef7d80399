//! The compound ops, iterators and the other object calls before a
//! cluster is involved: op objects' lives, what a builder writes at once
//! (an iterator, `*pmore` cleared), NULL arguments, and -ENOTCONN before
//! `rados_connect`. (scripts/interop/librados-c.sh runs them against a
//! cluster, beside Ceph's librados, with tests/c/ops.c.)
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rados::*;

extern "C" {
    fn rados_create(pcluster: *mut RadosT, id: *const c_char) -> i32;
    fn rados_shutdown(cluster: RadosT);
    fn rados_ioctx_create(cluster: RadosT, name: *const c_char, io: *mut IoctxT) -> i32;
    fn rados_create_write_op() -> OpT;
    fn rados_release_write_op(op: OpT);
    fn rados_write_op_write_full(op: OpT, buf: *const c_char, len: usize);
    fn rados_write_op_set_flags(op: OpT, flags: c_int);
    fn rados_write_op_cmpext(op: OpT, buf: *const c_char, len: usize, off: u64, prval: *mut c_int);
    fn rados_write_op_operate(
        op: OpT,
        io: IoctxT,
        oid: *const c_char,
        mtime: *mut libc::time_t,
        flags: c_int,
    ) -> i32;
    fn rados_create_read_op() -> OpT;
    fn rados_release_read_op(op: OpT);
    fn rados_read_op_stat(op: OpT, psize: *mut u64, pmtime: *mut libc::time_t, prval: *mut c_int);
    fn rados_read_op_omap_get_vals2(
        op: OpT,
        start_after: *const c_char,
        filter_prefix: *const c_char,
        max: u64,
        iter: *mut IterT,
        pmore: *mut u8,
        prval: *mut c_int,
    );
    fn rados_read_op_getxattrs(op: OpT, iter: *mut IterT, prval: *mut c_int);
    fn rados_read_op_operate(op: OpT, io: IoctxT, oid: *const c_char, flags: c_int) -> i32;
    fn rados_omap_get_next2(
        iter: IterT,
        key: *mut *mut c_char,
        val: *mut *mut c_char,
        key_len: *mut usize,
        val_len: *mut usize,
    ) -> i32;
    fn rados_omap_iter_size(iter: IterT) -> u32;
    fn rados_omap_get_end(iter: IterT);
    fn rados_getxattrs(io: IoctxT, oid: *const c_char, iter: *mut IterT) -> i32;
    fn rados_getxattrs_next(
        iter: IterT,
        name: *mut *const c_char,
        val: *mut *const c_char,
        len: *mut usize,
    ) -> i32;
    fn rados_getxattrs_end(iter: IterT);
    fn rados_exec(
        io: IoctxT,
        oid: *const c_char,
        cls: *const c_char,
        method: *const c_char,
        inbuf: *const c_char,
        in_len: usize,
        buf: *mut c_char,
        out_len: usize,
    ) -> i32;
    fn rados_cmpext(
        io: IoctxT,
        oid: *const c_char,
        buf: *const c_char,
        len: usize,
        off: u64,
    ) -> i32;
    fn rados_writesame(
        io: IoctxT,
        oid: *const c_char,
        buf: *const c_char,
        data_len: usize,
        write_len: usize,
        off: u64,
    ) -> i32;
    fn rados_get_last_version(io: IoctxT) -> u64;
    fn rados_aio_create_completion2(
        arg: *mut c_void,
        complete: Option<Callback>,
        pc: *mut CompletionT,
    ) -> i32;
    fn rados_aio_release(c: CompletionT);
    fn rados_aio_is_complete_and_cb(c: CompletionT) -> i32;
    fn rados_aio_is_safe_and_cb(c: CompletionT) -> i32;
    fn rados_aio_wait_for_complete_and_cb(c: CompletionT) -> i32;
    fn rados_aio_cmpext(
        io: IoctxT,
        oid: *const c_char,
        c: CompletionT,
        buf: *const c_char,
        len: usize,
        off: u64,
    ) -> i32;
    fn rados_aio_setxattr(
        io: IoctxT,
        oid: *const c_char,
        c: CompletionT,
        name: *const c_char,
        buf: *const c_char,
        len: usize,
    ) -> i32;
    fn rados_aio_write_op_operate(
        op: OpT,
        io: IoctxT,
        c: CompletionT,
        oid: *const c_char,
        mtime: *mut libc::time_t,
        flags: c_int,
    ) -> i32;
    fn rados_aio_read_op_operate(
        op: OpT,
        io: IoctxT,
        c: CompletionT,
        oid: *const c_char,
        flags: c_int,
    ) -> i32;
}

const EINVAL: i32 = -22;
const OID: *const c_char = c"obj".as_ptr();

#[test]
fn op_objects_live_and_die() {
    // SAFETY: op objects from this library, each released once; NULL is
    // accepted everywhere.
    unsafe {
        let w = rados_create_write_op();
        assert!(!w.is_null());
        rados_write_op_write_full(w, c"data".as_ptr(), 4);
        rados_write_op_set_flags(w, 0x2);
        let mut prval = 777;
        rados_write_op_cmpext(w, c"d".as_ptr(), 1, 0, &mut prval);
        assert_eq!(prval, 777, "prval is written when the op completes");
        // No context: nothing runs.
        assert_eq!(
            rados_write_op_operate(w, ptr::null_mut(), OID, ptr::null_mut(), 0),
            EINVAL
        );
        rados_release_write_op(w);

        // Builders and release on NULL do nothing.
        rados_write_op_write_full(ptr::null_mut(), c"x".as_ptr(), 1);
        rados_write_op_set_flags(ptr::null_mut(), 1);
        rados_release_write_op(ptr::null_mut());
        rados_release_read_op(ptr::null_mut());

        let r = rados_create_read_op();
        let (mut size, mut mtime, mut prval) = (5u64, 6 as libc::time_t, 7);
        rados_read_op_stat(r, &mut size, &mut mtime, &mut prval);
        assert_eq!(
            (size, mtime, prval),
            (5, 6, 7),
            "written at completion only"
        );
        assert_eq!(rados_read_op_operate(r, ptr::null_mut(), OID, 0), EINVAL);
        rados_release_read_op(r);
        assert_eq!(
            rados_read_op_operate(ptr::null_mut(), ptr::null_mut(), OID, 0),
            EINVAL
        );
    }
}

#[test]
fn an_iterator_exists_empty_from_the_builder_on() {
    // SAFETY: op objects and iterators from this library, each ended once.
    unsafe {
        let r = rados_create_read_op();
        let mut it: IterT = ptr::null_mut();
        let mut more = 7u8;
        let mut prval = 777;
        rados_read_op_omap_get_vals2(
            r,
            ptr::null(),
            ptr::null(),
            10,
            &mut it,
            &mut more,
            &mut prval,
        );
        assert!(!it.is_null(), "the iterator is handed out by the builder");
        assert_eq!(more, 0, "*pmore is cleared by the builder, as librados's");
        assert_eq!(prval, 777);
        assert_eq!(rados_omap_iter_size(it), 0);
        let (mut k, mut v) = (1usize as *mut c_char, 1usize as *mut c_char);
        let (mut kl, mut vl) = (9usize, 9usize);
        assert_eq!(
            rados_omap_get_next2(it, &mut k, &mut v, &mut kl, &mut vl),
            0
        );
        assert!(k.is_null() && v.is_null() && kl == 0 && vl == 0, "the end");
        // The op object may go first: the iterator is the caller's.
        rados_release_read_op(r);
        assert_eq!(rados_omap_iter_size(it), 0);
        rados_omap_get_end(it);

        let r = rados_create_read_op();
        let mut xi: IterT = ptr::null_mut();
        rados_read_op_getxattrs(r, &mut xi, ptr::null_mut());
        assert!(!xi.is_null());
        let (mut n, mut val, mut len) = (1usize as *const c_char, 1usize as *const c_char, 9usize);
        assert_eq!(rados_getxattrs_next(xi, &mut n, &mut val, &mut len), 0);
        assert!(n.is_null() && val.is_null() && len == 0);
        rados_getxattrs_end(xi);
        rados_release_read_op(r);

        // NULL iterators.
        assert_eq!(
            rados_omap_get_next2(ptr::null_mut(), &mut k, &mut v, &mut kl, &mut vl),
            EINVAL
        );
        assert_eq!(rados_omap_iter_size(ptr::null_mut()), 0);
        rados_omap_get_end(ptr::null_mut());
        assert_eq!(
            rados_getxattrs_next(ptr::null_mut(), &mut n, &mut val, &mut len),
            EINVAL
        );
        rados_getxattrs_end(ptr::null_mut());
    }
}

#[test]
fn object_calls_without_a_context() {
    let mut buf = [0 as c_char; 16];
    // SAFETY: NULL contexts; buffers of the lengths given.
    unsafe {
        let mut it: IterT = ptr::null_mut();
        assert_eq!(rados_getxattrs(ptr::null_mut(), OID, &mut it), EINVAL);
        assert!(it.is_null());
        assert_eq!(
            rados_exec(
                ptr::null_mut(),
                OID,
                c"hello".as_ptr(),
                c"say_hello".as_ptr(),
                ptr::null(),
                0,
                buf.as_mut_ptr(),
                buf.len()
            ),
            EINVAL
        );
        assert_eq!(
            rados_cmpext(ptr::null_mut(), OID, c"a".as_ptr(), 1, 0),
            EINVAL
        );
        assert_eq!(
            rados_writesame(ptr::null_mut(), OID, c"ab".as_ptr(), 2, 4, 0),
            EINVAL
        );
        assert_eq!(rados_get_last_version(ptr::null_mut()), 0);
    }
}

#[test]
fn the_and_cb_checks() {
    // SAFETY: a completion from this library, released once.
    unsafe {
        let mut c: CompletionT = ptr::null_mut();
        assert_eq!(
            rados_aio_create_completion2(ptr::null_mut(), None, &mut c),
            0
        );
        assert_eq!(rados_aio_is_complete_and_cb(c), 0, "no op yet");
        assert_eq!(rados_aio_is_safe_and_cb(c), 0);
        // Ops that cannot be submitted: no context.
        assert_eq!(
            rados_aio_cmpext(ptr::null_mut(), OID, c, c"a".as_ptr(), 1, 0),
            EINVAL
        );
        assert_eq!(
            rados_aio_setxattr(ptr::null_mut(), OID, c, c"n".as_ptr(), c"v".as_ptr(), 1),
            EINVAL
        );
        let w = rados_create_write_op();
        assert_eq!(
            rados_aio_write_op_operate(w, ptr::null_mut(), c, OID, ptr::null_mut(), 0),
            EINVAL
        );
        rados_release_write_op(w);
        let r = rados_create_read_op();
        assert_eq!(
            rados_aio_read_op_operate(r, ptr::null_mut(), c, OID, 0),
            EINVAL
        );
        rados_release_read_op(r);
        assert_eq!(rados_aio_is_complete_and_cb(c), 0);
        rados_aio_release(c);
        assert_eq!(rados_aio_is_complete_and_cb(ptr::null_mut()), EINVAL);
        assert_eq!(rados_aio_wait_for_complete_and_cb(ptr::null_mut()), EINVAL);
    }
}

#[test]
fn no_context_before_connect() {
    // SAFETY: a handle from rados_create, shut down once.
    unsafe {
        let mut cluster: RadosT = ptr::null_mut();
        assert_eq!(rados_create(&mut cluster, ptr::null()), 0);
        let mut io: IoctxT = ptr::null_mut();
        assert_eq!(
            rados_ioctx_create(cluster, c"test".as_ptr(), &mut io),
            -libc::ENOTCONN,
            "every object call needs a context, which needs a connection"
        );
        assert!(io.is_null());
        rados_shutdown(cluster);
    }
}
