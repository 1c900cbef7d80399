//! `msgr serve --admin-socket PATH` makes the socket file with the mode
//! Ceph's `admin_socket_mode` gives (the command line's, or CEPH_ARGS'),
//! owner-only (0600) when it is unset, whatever the umask it runs under;
//! a mode that is not one stops it before it serves.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use msgr_admin::private_dir::PrivateDir;

const MSGR: &str = env!("CARGO_BIN_EXE_msgr");

/// `msgr serve` with an admin socket at `asok`, run by a shell under umask
/// 000 (a socket bound without a mode of its own would be 0777); killed
/// when dropped.
struct Serve(Child);

impl Serve {
    fn start(asok: &Path, extra: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg("umask 000 && exec \"$0\" \"$@\"")
            .arg(MSGR)
            .args(["serve", "--bind", "v2:127.0.0.1:0", "--admin-socket"])
            .arg(asok)
            .args(extra)
            .env_remove("CEPH_ARGS")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start msgr serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("serve's stdout"))
            .read_line(&mut line)
            .expect("serve's first line");
        assert!(line.contains("listening on"), "serve said {line:?}");
        Serve(child)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The socket file's permission bits, once it is there (within 10 s), and
/// that it answers `{"prefix": "0"}`.
fn mode_of_socket(asok: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let meta = loop {
        match std::fs::symlink_metadata(asok) {
            Ok(meta) => break meta,
            Err(e) if Instant::now() > deadline => panic!("{}: {e}", asok.display()),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    assert!(meta.file_type().is_socket(), "{}", asok.display());
    let mut s = UnixStream::connect(asok).expect("connect to the admin socket");
    s.write_all(b"{\"prefix\": \"0\"}\0").expect("ask");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).expect("read the answer");
    assert_eq!(answer, b"\0\0\0\x012");
    meta.permissions().mode() & 0o7777
}

#[test]
fn the_admin_socket_is_its_owners_only_unless_admin_socket_mode_says() {
    let dir = PrivateDir::new("msgr-asok-cli").expect("a private directory");
    let unset = dir.join("unset.asok");
    let _a = Serve::start(&unset, &[], &[]);
    assert_eq!(mode_of_socket(&unset), 0o600);

    let flag = dir.join("flag.asok");
    let _b = Serve::start(&flag, &["--admin_socket_mode", "0640"], &[]);
    assert_eq!(mode_of_socket(&flag), 0o640);

    let env = dir.join("env.asok");
    let _c = Serve::start(&env, &[], &[("CEPH_ARGS", "--admin-socket-mode=660")]);
    assert_eq!(mode_of_socket(&env), 0o660);
}

#[test]
fn a_mode_that_is_not_one_stops_serve() {
    let dir = PrivateDir::new("msgr-asok-cli").expect("a private directory");
    let asok = dir.join("a.asok");
    let out = Command::new(MSGR)
        .args(["serve", "--bind", "v2:127.0.0.1:0", "--admin-socket"])
        .arg(&asok)
        .args(["--admin_socket_mode", "0800", "--duration", "5"])
        .env_remove("CEPH_ARGS")
        .output()
        .expect("run msgr serve");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("admin_socket_mode \"0800\""), "{err}");
    assert!(!asok.exists());
}
