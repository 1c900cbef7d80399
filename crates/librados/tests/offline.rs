//! The C API before a cluster is involved: the lifecycle errors, the
//! configuration calls and the buffer conventions, called as C calls them.
//! (scripts/interop/librados-c.sh runs the rest against a cluster, beside
//! Ceph's librados.)
#![allow(unsafe_code)]

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use rados::*;

extern "C" {
    fn rados_create(pcluster: *mut RadosT, id: *const c_char) -> i32;
    fn rados_create2(
        pcluster: *mut RadosT,
        cluster: *const c_char,
        name: *const c_char,
        flags: u64,
    ) -> i32;
    fn rados_conf_set(cluster: RadosT, option: *const c_char, value: *const c_char) -> i32;
    fn rados_conf_get(cluster: RadosT, option: *const c_char, buf: *mut c_char, len: usize) -> i32;
    fn rados_conf_read_file(cluster: RadosT, path: *const c_char) -> i32;
    fn rados_conf_parse_argv_remainder(
        cluster: RadosT,
        argc: i32,
        argv: *const *const c_char,
        remargv: *mut *const c_char,
    ) -> i32;
    fn rados_pool_lookup(cluster: RadosT, name: *const c_char) -> i64;
    fn rados_ioctx_create(cluster: RadosT, name: *const c_char, io: *mut IoctxT) -> i32;
    fn rados_cluster_fsid(cluster: RadosT, buf: *mut c_char, len: usize) -> i32;
    fn rados_get_instance_id(cluster: RadosT) -> u64;
    fn rados_mon_command(
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
    fn rados_version(major: *mut i32, minor: *mut i32, extra: *mut i32);
    fn rados_shutdown(cluster: RadosT);
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn create(name: &str) -> RadosT {
    let mut h: RadosT = ptr::null_mut();
    let name = c(name);
    assert_eq!(
        unsafe { rados_create2(&mut h, ptr::null(), name.as_ptr(), 0) },
        0
    );
    assert!(!h.is_null());
    h
}

#[test]
fn version_and_names() {
    let (mut a, mut b, mut e) = (0, 0, 0);
    unsafe { rados_version(&mut a, &mut b, &mut e) };
    assert_eq!((a, b, e), (3, 0, 0));
    unsafe { rados_version(ptr::null_mut(), ptr::null_mut(), ptr::null_mut()) };

    let mut h: RadosT = ptr::null_mut();
    let bad = c("admin");
    assert_eq!(
        unsafe { rados_create2(&mut h, ptr::null(), bad.as_ptr(), 0) },
        -libc::EINVAL
    );
    assert!(h.is_null(), "no handle on failure");
    assert_eq!(
        unsafe { rados_create2(&mut h, ptr::null(), ptr::null(), 0) },
        -libc::EINVAL
    );
    assert_eq!(unsafe { rados_create(&mut h, ptr::null()) }, 0);
    unsafe { rados_shutdown(h) };
}

#[test]
fn a_handle_not_connected_says_so() {
    let h = create("client.admin");
    let test = c("test");
    assert_eq!(
        unsafe { rados_pool_lookup(h, test.as_ptr()) },
        i64::from(-libc::ENOTCONN)
    );
    let mut io: IoctxT = ptr::null_mut();
    assert_eq!(
        unsafe { rados_ioctx_create(h, test.as_ptr(), &mut io) },
        -libc::ENOTCONN
    );
    assert!(io.is_null());
    assert_eq!(unsafe { rados_get_instance_id(h) }, 0);
    let mut buf = [0 as c_char; 64];
    assert_eq!(
        unsafe { rados_cluster_fsid(h, buf.as_mut_ptr(), buf.len()) },
        36
    );
    let fsid = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
    assert_eq!(fsid, "00000000-0000-0000-0000-000000000000");
    assert_eq!(
        unsafe { rados_cluster_fsid(h, buf.as_mut_ptr(), 36) },
        -libc::ERANGE
    );

    // A monitor command: ENOTCONN, and the outputs set empty.
    let cmd = c(r#"{"prefix": "status"}"#);
    let cmds = [cmd.as_ptr()];
    let (mut out, mut outs) = (1 as *mut c_char, 1 as *mut c_char);
    let (mut outlen, mut outslen) = (7usize, 7usize);
    let r = unsafe {
        rados_mon_command(
            h,
            cmds.as_ptr(),
            1,
            ptr::null(),
            0,
            &mut out,
            &mut outlen,
            &mut outs,
            &mut outslen,
        )
    };
    assert_eq!(r, -libc::ENOTCONN);
    assert!(out.is_null() && outs.is_null());
    assert_eq!((outlen, outslen), (0, 0));
    unsafe { rados_shutdown(h) };
}

#[test]
fn options_set_read_back_and_too_long() {
    let h = create("client.librados-test");
    // A float, printed as librados prints it.
    let (k, v) = (c("mon_client_ping_interval"), c("12.5"));
    assert_eq!(unsafe { rados_conf_set(h, k.as_ptr(), v.as_ptr()) }, 0);
    let mut buf = [0 as c_char; 16];
    assert_eq!(
        unsafe { rados_conf_get(h, k.as_ptr(), buf.as_mut_ptr(), buf.len()) },
        0
    );
    assert_eq!(
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(),
        b"12.500000"
    );
    // Not an option of Ceph's: -ENOENT; not a value of its type: -EINVAL.
    let (bogus, secs, half) = (c("no_such_option"), c("rados_osd_op_timeout"), c("1.5"));
    assert_eq!(
        unsafe { rados_conf_set(h, bogus.as_ptr(), v.as_ptr()) },
        -libc::ENOENT
    );
    assert_eq!(
        unsafe { rados_conf_set(h, secs.as_ptr(), half.as_ptr()) },
        -libc::EINVAL
    );
    // Room for "12.5" but not its NUL: what fits, and ENAMETOOLONG.
    assert_eq!(
        unsafe { rados_conf_get(h, k.as_ptr(), buf.as_mut_ptr(), 4) },
        -libc::ENAMETOOLONG
    );
    assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(), b"12.");
    let unset = c("no_such_option_set_anywhere");
    assert_eq!(
        unsafe { rados_conf_get(h, unset.as_ptr(), buf.as_mut_ptr(), buf.len()) },
        -libc::ENOENT
    );
    let missing = c("/nonexistent/ceph.conf");
    assert_eq!(
        unsafe { rados_conf_read_file(h, missing.as_ptr()) },
        -libc::ENOENT
    );

    // $name expands in what is read back.
    let dir = std::env::temp_dir().join(format!("librados-offline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("ceph.conf");
    std::fs::write(
        &conf,
        "[global]\nmon_host = 127.0.0.1:1\n[client]\nkeyring = /k/$name.keyring\n",
    )
    .unwrap();
    let list = c(&format!("/nonexistent/a.conf,{}", conf.display()));
    assert_eq!(unsafe { rados_conf_read_file(h, list.as_ptr()) }, 0);
    let key = c("keyring");
    let mut buf = [0 as c_char; 64];
    assert_eq!(
        unsafe { rados_conf_get(h, key.as_ptr(), buf.as_mut_ptr(), buf.len()) },
        0
    );
    assert_eq!(
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(),
        b"/k/client.librados-test.keyring"
    );
    std::fs::remove_dir_all(dir).unwrap();
    unsafe { rados_shutdown(h) };
}

#[test]
fn the_remainder_points_into_argv() {
    let h = create("client.admin");
    let args: Vec<CString> = ["prog", "--id", "other", "put", "-m", "127.0.0.1:1", "obj"]
        .iter()
        .map(|a| c(a))
        .collect();
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let mut rem = vec![1 as *const c_char; argv.len()];
    let n = i32::try_from(argv.len()).unwrap();
    assert_eq!(
        unsafe { rados_conf_parse_argv_remainder(h, n, argv.as_ptr(), rem.as_mut_ptr()) },
        0
    );
    // As librados: --id is not one of the options it parses (the ceph
    // tool takes it itself), so it stays.
    assert_eq!(rem[..5], [argv[0], argv[1], argv[2], argv[3], argv[6]]);
    assert!(rem[5..].iter().all(|p| p.is_null()));
    // The options were taken: mon_host is set.
    let key = c("mon_host");
    let mut buf = [0 as c_char; 32];
    assert_eq!(
        unsafe { rados_conf_get(h, key.as_ptr(), buf.as_mut_ptr(), buf.len()) },
        0
    );
    assert_eq!(
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(),
        b"127.0.0.1:1"
    );
    // An option without its value: EINVAL.
    let args = [c("prog"), c("--keyring")];
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let mut rem = [ptr::null(); 2];
    assert_eq!(
        unsafe { rados_conf_parse_argv_remainder(h, 2, argv.as_ptr(), rem.as_mut_ptr()) },
        -libc::EINVAL
    );
    unsafe { rados_shutdown(h) };
}
