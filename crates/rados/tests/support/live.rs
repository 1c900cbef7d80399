//! What the live tests (`tests/live_*.rs`) share: a client on the cluster
//! `CEPH_CONF` names and Ceph's own tools for the same cluster, to check
//! each feature against librados both ways.
//!
//! The live tests are `#[ignore]`d: `cargo test` alone has no cluster.
//! scripts/interop/rados.sh runs them against its Ceph 16 and Ceph 20
//! clusters (`cargo test --release -p msgr-rados --test 'live_*' --
//! --ignored`) with:
//! - `CEPH_CONF`: the cluster's ceph.conf (client.admin's keyring in it);
//! - `MSGR_TEST_RADOS`: a shell command running Ceph's `rados` on it
//!   (arguments appended);
//! - `MSGR_TEST_PYTHON`: a shell command running a Python with Ceph's
//!   `rados` module (`-` and arguments appended, the script on stdin; it
//!   finds the ceph.conf in `CEPH_CONF`, which the command passes on);
//! - `MSGR_TEST_MSGR`: our `msgr` binary (for the `msgr rados` commands);
//! - `MSGR_TEST_RELEASE`: `pacific` or `tentacle`.
//!
//! Run by hand against a cluster of scripts/ceph/pacific-cluster.sh:
//! `CEPH_CONF=DIR/ceph.conf MSGR_TEST_RADOS="rados -c DIR/ceph.conf"
//! MSGR_TEST_PYTHON=/usr/bin/python3 MSGR_TEST_MSGR=target/release/msgr
//! MSGR_TEST_RELEASE=pacific cargo test --release -p msgr-rados --test
//! 'live_*' -- --ignored`.
#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use msgr_monc::identity::{ClusterOpts, Identity};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_rados::{IoCtx, Limits, Rados};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: live tests run against a cluster (see tests/support/live.rs)")
    })
}

/// The release under test (`pacific`, `tentacle`).
pub fn release() -> String {
    env("MSGR_TEST_RELEASE")
}

/// A client of the cluster, as client.admin. With `RUST_LOG` set (e.g.
/// `msgr::rados=debug`), the client's log goes to stderr.
pub async fn connect() -> Rados {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let _ = env("CEPH_CONF");
    let id = Identity::load(&ClusterOpts::default()).expect("the identity from CEPH_CONF");
    Rados::connect(&id, Limits::default())
        .await
        .expect("connected to the cluster")
}

/// A name no other run or test uses: `what`, the process id and a count.
pub fn unique(what: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{what}-{}-{n}", std::process::id())
}

fn shell(prefix: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("{prefix} \"$@\""))
        .arg("sh")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("the shell runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(data) = stdin {
        input.write_all(data).expect("stdin written");
    }
    drop(input);
    child.wait_with_output().expect("the command ran")
}

/// Ceph's `rados` with `args`, on the cluster under test.
pub fn rados_cli(args: &[&str]) -> Output {
    shell(&env("MSGR_TEST_RADOS"), args, None)
}

/// Ceph's `rados` with `args` and `stdin`.
pub fn rados_cli_in(args: &[&str], stdin: &[u8]) -> Output {
    shell(&env("MSGR_TEST_RADOS"), args, Some(stdin))
}

/// `rados` with `args`, which must succeed: its stdout.
pub fn rados_ok(args: &[&str]) -> Vec<u8> {
    succeeded("rados", args, rados_cli(args))
}

/// The stdout of `what` run with `args`, which must have succeeded.
fn succeeded(what: &str, args: &[&str], out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "{what} {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Our `msgr` with `args` (e.g. `rados -p POOL lock list OBJ`), on the
/// cluster under test (`-c` and the ceph.conf are put first).
pub fn msgr_cli(args: &[&str]) -> Output {
    let conf = env("CEPH_CONF");
    let mut all: Vec<&str> = Vec::new();
    all.extend_from_slice(args);
    all.push("-c");
    all.push(&conf);
    Command::new(env("MSGR_TEST_MSGR"))
        .args(&all)
        .output()
        .expect("msgr runs")
}

/// Put before each script: every `rados.Rados` handle is shut down when
/// the script ends. A handle left to the interpreter's teardown can crash
/// librados 16 there (a segfault).
const PYTHON_PRELUDE: &str = "\
import atexit as _atexit, rados as _rados
class _Handle(_rados.Rados):
    _all = []
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        _Handle._all.append(self)
def _shutdown_all():
    for h in _Handle._all:
        try:
            h.shutdown()
        except Exception:
            pass
_atexit.register(_shutdown_all)
_rados.Rados = _Handle
";

/// Python with Ceph's `rados` module running `script` (its text) with
/// `args` (`sys.argv[1:]`); the script reads the ceph.conf from
/// `os.environ["CEPH_CONF"]`. Its handles are shut down at its end
/// ([`PYTHON_PRELUDE`]).
pub fn python(script: &str, args: &[&str]) -> Output {
    let mut all = vec!["-"];
    all.extend_from_slice(args);
    let text = format!("{PYTHON_PRELUDE}{script}");
    shell(&env("MSGR_TEST_PYTHON"), &all, Some(text.as_bytes()))
}

/// [`python`], which must succeed: its stdout.
pub fn python_ok(script: &str, args: &[&str]) -> Vec<u8> {
    succeeded("python", args, python(script, args))
}

/// Ceph's `rados` with `args`, its stdin closed after `after` (for `rados
/// watch`, which runs until a line or the end of its input).
pub fn rados_cli_in_after(args: &[&str], after: std::time::Duration) -> Output {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "sleep {} | {} \"$@\"",
            after.as_secs_f64(),
            env("MSGR_TEST_RADOS")
        ))
        .arg("sh")
        .args(args);
    cmd.output().expect("the command ran")
}

/// Waits until `ok` holds of our client (its map follows the monitors').
pub async fn eventually(rados: &Rados, what: &str, ok: impl Fn(&Rados) -> bool) {
    let start = Instant::now();
    while !ok(rados) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not seen in 30 s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pool `WHAT-...` of 8 PGs and size 2 (as rados.sh's `test`),
/// made through monitor commands; its I/O context.
pub async fn scratch_pool(rados: &Rados, what: &str) -> (String, IoCtx) {
    let name = unique(what);
    for cmd in [
        format!(r#"{{"prefix": "osd pool create", "pool": "{name}", "pg_num": 8, "pgp_num": 8}}"#),
        format!(r#"{{"prefix": "osd pool set", "pool": "{name}", "var": "size", "val": "2"}}"#),
    ] {
        let r = rados
            .mon()
            .command(&cmd, Bytes::new(), Duration::from_secs(60))
            .await
            .expect("monitor command");
        assert_eq!(r.r, 0, "{cmd}: {}", r.rs);
    }
    eventually(rados, "the new pool", |r| r.pool_lookup(&name).is_some()).await;
    let io = rados.ioctx(&name).expect("the new pool");
    (name, io)
}
