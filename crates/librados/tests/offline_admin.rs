//! The administrative calls (capi_admin.rs) without a cluster: what each
//! answers before `rados_connect` (-ENOTCONN, as librados), for NULL
//! arguments, and what needs no cluster (service registration's checks,
//! a handle made from another's configuration). scripts/interop/
//! librados-c.sh runs tests/c/admin.c against a cluster.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

use rados::*;

extern "C" {
    fn rados_create2(
        pcluster: *mut RadosT,
        cluster: *const c_char,
        name: *const c_char,
        flags: u64,
    ) -> i32;
    fn rados_conf_set(cluster: RadosT, option: *const c_char, value: *const c_char) -> i32;
    fn rados_conf_get(cluster: RadosT, option: *const c_char, buf: *mut c_char, len: usize) -> i32;
    fn rados_shutdown(cluster: RadosT);
    fn rados_mon_command_target(
        cluster: RadosT,
        name: *const c_char,
        cmd: *const *const c_char,
        cmdlen: usize,
        inbuf: *const c_char,
        inbuflen: usize,
        outbuf: *mut *mut c_char,
        outbuflen: *mut usize,
        outs: *mut *mut c_char,
        outslen: *mut usize,
    ) -> i32;
    fn rados_osd_command(
        cluster: RadosT,
        osdid: i32,
        cmd: *const *const c_char,
        cmdlen: usize,
        inbuf: *const c_char,
        inbuflen: usize,
        outbuf: *mut *mut c_char,
        outbuflen: *mut usize,
        outs: *mut *mut c_char,
        outslen: *mut usize,
    ) -> i32;
    fn rados_pg_command(
        cluster: RadosT,
        pgstr: *const c_char,
        cmd: *const *const c_char,
        cmdlen: usize,
        inbuf: *const c_char,
        inbuflen: usize,
        outbuf: *mut *mut c_char,
        outbuflen: *mut usize,
        outs: *mut *mut c_char,
        outslen: *mut usize,
    ) -> i32;
    fn rados_mgr_command(
        cluster: RadosT,
        cmd: *const *const c_char,
        cmdlen: usize,
        inbuf: *const c_char,
        inbuflen: usize,
        outbuf: *mut *mut c_char,
        outbuflen: *mut usize,
        outs: *mut *mut c_char,
        outslen: *mut usize,
    ) -> i32;
    fn rados_ping_monitor(
        cluster: RadosT,
        mon_id: *const c_char,
        outstr: *mut *mut c_char,
        outstrlen: *mut usize,
    ) -> i32;
    fn rados_monitor_log(
        cluster: RadosT,
        level: *const c_char,
        cb: Option<LogCallback>,
        arg: *mut c_void,
    ) -> i32;
    fn rados_monitor_log2(
        cluster: RadosT,
        level: *const c_char,
        cb: Option<LogCallback2>,
        arg: *mut c_void,
    ) -> i32;
    fn rados_pool_create_with_auid(cluster: RadosT, name: *const c_char, auid: u64) -> i32;
    fn rados_pool_create_with_crush_rule(cluster: RadosT, name: *const c_char, rule: u8) -> i32;
    fn rados_pool_create_with_all(cluster: RadosT, name: *const c_char, auid: u64, rule: u8)
        -> i32;
    fn rados_pool_get_base_tier(cluster: RadosT, pool: i64, base_tier: *mut i64) -> i32;
    fn rados_blocklist_add(cluster: RadosT, addr: *mut c_char, expire: u32) -> i32;
    fn rados_getaddrs(cluster: RadosT, addrs: *mut *mut c_char) -> i32;
    fn rados_inconsistent_pg_list(cluster: RadosT, pool: i64, buf: *mut c_char, len: usize) -> i32;
    fn rados_ioctx_get_cluster(io: IoctxT) -> RadosT;
    fn rados_cct(cluster: RadosT) -> ConfigT;
    fn rados_create_with_context(pcluster: *mut RadosT, cct: ConfigT) -> i32;
    fn rados_set_pool_full_try(io: IoctxT);
    fn rados_unset_pool_full_try(io: IoctxT);
    fn rados_service_register(
        cluster: RadosT,
        service: *const c_char,
        daemon: *const c_char,
        metadata: *const c_char,
    ) -> i32;
    fn rados_service_update_status(cluster: RadosT, status: *const c_char) -> i32;
}

const ENOTCONN: i32 = -libc::ENOTCONN;
const EINVAL: i32 = -libc::EINVAL;

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL inside")
}

fn create() -> RadosT {
    let mut h: RadosT = ptr::null_mut();
    let name = c("client.admin");
    assert_eq!(
        unsafe { rados_create2(&mut h, ptr::null(), name.as_ptr(), 0) },
        0
    );
    h
}

unsafe extern "C" fn never(
    _arg: *mut c_void,
    _line: *const c_char,
    _who: *const c_char,
    _sec: u64,
    _nsec: u64,
    _seq: u64,
    _level: *const c_char,
    _msg: *const c_char,
) {
    panic!("no log entry comes without a cluster");
}

unsafe extern "C" fn never2(
    _arg: *mut c_void,
    _line: *const c_char,
    _channel: *const c_char,
    _who: *const c_char,
    _name: *const c_char,
    _sec: u64,
    _nsec: u64,
    _seq: u64,
    _level: *const c_char,
    _msg: *const c_char,
) {
    panic!("no log entry comes without a cluster");
}

#[test]
fn commands_before_connect_are_enotconn_and_leave_empty_outputs() {
    let h = create();
    let cmd = c(r#"{"prefix": "version"}"#);
    let cmds = [cmd.as_ptr()];
    let (mut out, mut outlen, mut outs, mut outslen) =
        (ptr::null_mut(), 7usize, ptr::null_mut(), 7usize);
    unsafe {
        let target = c("a");
        assert_eq!(
            rados_mon_command_target(
                h,
                target.as_ptr(),
                cmds.as_ptr(),
                1,
                ptr::null(),
                0,
                &mut out,
                &mut outlen,
                &mut outs,
                &mut outslen
            ),
            ENOTCONN
        );
        assert!(out.is_null() && outs.is_null());
        assert_eq!((outlen, outslen), (0, 0));
        let r = rados_osd_command(
            h,
            0,
            cmds.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(r, ENOTCONN);
        let pg = c("1.0");
        let r = rados_pg_command(
            h,
            pg.as_ptr(),
            cmds.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(r, ENOTCONN);
        // A PG id that does not parse is -EINVAL first, as librados.
        let bad = c("one.zero");
        let r = rados_pg_command(
            h,
            bad.as_ptr(),
            cmds.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(r, EINVAL);
        let r = rados_mgr_command(
            h,
            cmds.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(r, ENOTCONN);
        // cmd NULL with parts: -EINVAL.
        let r = rados_mgr_command(
            h,
            ptr::null(),
            1,
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(r, EINVAL);
        let mon = c("a");
        let mut s = ptr::null_mut();
        let mut n = 0usize;
        assert_eq!(
            rados_ping_monitor(h, mon.as_ptr(), &mut s, &mut n),
            ENOTCONN
        );
        assert_eq!(rados_ping_monitor(h, ptr::null(), &mut s, &mut n), EINVAL);
        let mut addrs = ptr::null_mut();
        assert_eq!(rados_getaddrs(h, &mut addrs), ENOTCONN);
        let mut buf = [0 as c_char; 16];
        assert_eq!(
            rados_inconsistent_pg_list(h, 1, buf.as_mut_ptr(), buf.len()),
            ENOTCONN
        );
        let addr = c("127.0.0.1:0/1");
        assert_eq!(
            rados_blocklist_add(h, addr.as_ptr().cast_mut(), 1),
            ENOTCONN
        );
        let mut tier = 0i64;
        assert_eq!(rados_pool_get_base_tier(h, 1, &mut tier), ENOTCONN);
        rados_shutdown(h);
    }
}

#[test]
fn pools_before_connect_and_the_auid_rule() {
    let h = create();
    let name = c("offline-admin-pool");
    unsafe {
        // A non-default auid is refused before anything else.
        assert_eq!(rados_pool_create_with_auid(h, name.as_ptr(), 5), EINVAL);
        assert_eq!(rados_pool_create_with_all(h, name.as_ptr(), 5, 0), EINVAL);
        assert_eq!(
            rados_pool_create_with_auid(h, name.as_ptr(), u64::MAX),
            ENOTCONN
        );
        assert_eq!(
            rados_pool_create_with_all(h, name.as_ptr(), u64::MAX, 0),
            ENOTCONN
        );
        assert_eq!(
            rados_pool_create_with_crush_rule(h, name.as_ptr(), 0),
            ENOTCONN
        );
        assert_eq!(rados_pool_create_with_crush_rule(h, ptr::null(), 0), EINVAL);
        rados_shutdown(h);
    }
}

#[test]
fn the_cluster_log_needs_a_connection_and_a_known_level() {
    let h = create();
    let info = c("info");
    unsafe {
        assert_eq!(
            rados_monitor_log(h, info.as_ptr(), Some(never), ptr::null_mut()),
            ENOTCONN
        );
        assert_eq!(
            rados_monitor_log2(h, info.as_ptr(), Some(never2), ptr::null_mut()),
            ENOTCONN
        );
        assert_eq!(
            rados_monitor_log(ptr::null_mut(), info.as_ptr(), None, ptr::null_mut()),
            EINVAL
        );
        rados_shutdown(h);
    }
}

#[test]
fn service_registration_is_checked_as_librados_does() {
    let h = create();
    let (rgw, osd, empty, gw) = (c("rgw"), c("osd"), c(""), c("gw1"));
    let meta = b"zone\0a\0\0";
    unsafe {
        assert_eq!(
            rados_service_update_status(h, [b'a', 0, b'b', 0, 0].as_ptr().cast()),
            ENOTCONN
        );
        assert_eq!(
            rados_service_register(h, osd.as_ptr(), gw.as_ptr(), meta.as_ptr().cast()),
            EINVAL
        );
        assert_eq!(
            rados_service_register(h, rgw.as_ptr(), empty.as_ptr(), meta.as_ptr().cast()),
            EINVAL
        );
        assert_eq!(
            rados_service_register(h, empty.as_ptr(), gw.as_ptr(), ptr::null()),
            EINVAL
        );
        // Before connecting: recorded (the beacons start at connect).
        assert_eq!(
            rados_service_register(h, rgw.as_ptr(), gw.as_ptr(), meta.as_ptr().cast()),
            0
        );
        assert_eq!(
            rados_service_register(h, rgw.as_ptr(), gw.as_ptr(), ptr::null()),
            -libc::EEXIST
        );
        rados_shutdown(h);
    }
}

#[test]
fn a_handle_from_another_handles_configuration() {
    let h = create();
    let (opt, val) = (c("rados_mon_op_timeout"), c("17"));
    unsafe {
        assert_eq!(rados_conf_set(h, opt.as_ptr(), val.as_ptr()), 0);
        let cct = rados_cct(h);
        assert!(!cct.is_null());
        let mut h2: RadosT = ptr::null_mut();
        assert_eq!(rados_create_with_context(&mut h2, cct), 0);
        assert!(!h2.is_null() && h2 != h);
        let mut buf = [0 as c_char; 32];
        assert_eq!(
            rados_conf_get(h2, opt.as_ptr(), buf.as_mut_ptr(), buf.len()),
            0
        );
        assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str().expect("UTF-8"), "17");
        assert_eq!(rados_create_with_context(&mut h2, ptr::null_mut()), EINVAL);
        rados_shutdown(h2);
        rados_shutdown(h);
    }
}

#[test]
fn null_contexts_are_harmless() {
    unsafe {
        assert!(rados_ioctx_get_cluster(ptr::null_mut()).is_null());
        rados_set_pool_full_try(ptr::null_mut());
        rados_unset_pool_full_try(ptr::null_mut());
    }
}
