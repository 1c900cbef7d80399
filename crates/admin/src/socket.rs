//! The admin socket: a UNIX socket answering `ceph --admin-daemon PATH
//! ...` as a Ceph daemon does (AdminSocket::do_accept;
//! docs/research/admin-socket.md §1). A client sends one command, JSON
//! ending in NUL or newline (at most 1023 bytes), or the old binary form
//! (a NUL, then three bytes whose last picks `0`, `perfcounters_dump` or
//! `perfcounters_schema`); the answer is a 4-byte big-endian length and
//! the body, then the socket closes. Failures are bodies too, `ERROR:
//! (errno) reason`, since the protocol has no other place for them.
//!
//! Ceph serves one client at a time on a thread of its own; this one
//! serves several at once on the caller's runtime, so it bounds what
//! clients can hold ([`SocketOptions`]): how many at once, how long each
//! may take to send its request and to take its answer. The socket file
//! gets its mode (Ceph's `admin_socket_mode`, owner-only by default) before
//! it appears at its path.

use std::collections::BTreeMap;
use std::fs::Permissions;
use std::future::Future;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::oneshot;

use crate::commands::{Answer, CommandError, Commands, Request};
use crate::json::Value;
use crate::private_dir::PrivateDir;

/// Ceph reads a request into 1024 bytes: 1023 and the terminator.
const MAX_REQUEST: usize = 1023;

/// How long the accept loop waits after a failed accept before accepting
/// again. EMFILE and ENFILE (no descriptor for the new socket), ENOBUFS
/// and ENOMEM leave the connection queued and the listener readable:
/// accepting again at once would spin on the runtime's thread, starving
/// the tasks that share it (a messenger's own accepts among them). The
/// messenger's listener waits the same.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// How an admin socket treats its file and its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// The socket file's permission bits, which decide who may connect
    /// (connecting needs write permission). Ceph's `admin_socket_mode`,
    /// read with [`parse_mode`]; by default 0600, the owner only.
    pub mode: u32,
    /// Clients held at once, waiting for their request or taking their
    /// answer (at least 1; default 16). One more that arrives closes the
    /// client that has waited longest for its request, or, when every
    /// client held is taking its answer, is itself closed at once.
    pub max_clients: usize,
    /// How long a client may take to send its request (default 10 s).
    pub read_timeout: Duration,
    /// How long a client may take to read its whole answer (default
    /// 10 s); one that reads too slowly, or not at all, is closed.
    pub write_timeout: Duration,
}

impl Default for SocketOptions {
    fn default() -> SocketOptions {
        SocketOptions {
            mode: 0o600,
            max_clients: 16,
            read_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// An `admin_socket_mode` that is not a mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeError(pub String);

impl std::fmt::Display for ModeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "admin_socket_mode {:?}: expected permission bits in octal, 0 to 0777 (e.g. \"0600\" or \"600\")",
            self.0
        )
    }
}

impl std::error::Error for ModeError {}

/// Reads Ceph's `admin_socket_mode`: permission bits in octal, with or
/// without a leading 0 ("0600", "600"). Ceph reads it with
/// strict_strtol(.., 8) and refuses bits outside ACCESSPERMS (0777), such
/// as setuid; this does too.
pub fn parse_mode(text: &str) -> Result<u32, ModeError> {
    let bad = || ModeError(text.to_string());
    if text.is_empty() || !text.bytes().all(|b| matches!(b, b'0'..=b'7')) {
        return Err(bad());
    }
    match u32::from_str_radix(text, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(bad()),
    }
}

/// A listening admin socket; closed, and its file removed, when dropped.
pub struct AdminSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl AdminSocket {
    /// Listens at `path`, answering with `commands`, on the current tokio
    /// runtime, with the default [`SocketOptions`] (the file owner-only).
    /// A file left there by a process that is gone is replaced; one that
    /// answers is not (AddrInUse).
    pub async fn bind(path: &Path, commands: Commands) -> io::Result<AdminSocket> {
        AdminSocket::bind_with(path, commands, SocketOptions::default()).await
    }

    /// As [`AdminSocket::bind`], with `options`: the file's mode, and the
    /// bounds on clients.
    pub async fn bind_with(
        path: &Path,
        commands: Commands,
        options: SocketOptions,
    ) -> io::Result<AdminSocket> {
        if options.mode > 0o777 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "admin socket {}: mode {:o} has bits beyond 0777",
                    path.display(),
                    options.mode
                ),
            ));
        }
        if options.max_clients == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "admin socket {}: max_clients is 0, expected at least 1",
                    path.display()
                ),
            ));
        }
        if std::fs::symlink_metadata(path).is_ok() {
            if UnixStream::connect(path).await.is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{}: another process answers there", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = bind_with_mode(path, options.mode)?;
        let clients = Arc::new(Clients::new(options.max_clients));
        let task = tokio::spawn(async move {
            let listener = &listener;
            accept_loop(
                move || async move { listener.accept().await.map(|(stream, _)| stream) },
                ACCEPT_BACKOFF,
                |stream| {
                    let Some((client, close)) = clients.admit() else {
                        // Every client held is taking its answer: this one
                        // is closed at once, unread.
                        return drop(stream);
                    };
                    let commands = commands.clone();
                    tokio::spawn(async move {
                        serve_one(stream, &commands, client, close, &options).await;
                    });
                },
            )
            .await;
        });
        Ok(AdminSocket {
            path: path.to_path_buf(),
            task,
        })
    }

    /// Where the socket listens.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for AdminSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds a listening socket that appears at `path` with `mode` and never
/// with another. bind(2) creates the file with 0777 less the process's
/// umask, which a library cannot change for its process (the umask is
/// every thread's, and changing it needs unsafe code), and a chmod after
/// binding would leave a moment in which the umask's mode lets others
/// connect. So the socket is bound in a fresh directory beside `path` that
/// only this user may enter, given `mode` there, and linked to `path` (a
/// hard link: it fails, rather than replaces, if something appeared at
/// `path` meanwhile); the directory is then removed.
fn bind_with_mode(path: &Path, mode: u32) -> io::Result<UnixListener> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let context = |what: &str, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("admin socket {}: {what}: {e}", path.display()),
        )
    };
    let dir = PrivateDir::new_in(parent, ".asok").map_err(|e| context("a private directory", e))?;
    let staged = dir.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&staged)
            .map_err(|e| context(&format!("binding {}", staged.display()), e))?;
        std::fs::set_permissions(&staged, Permissions::from_mode(mode))
            .map_err(|e| context(&format!("setting mode {mode:o}"), e))?;
        std::fs::hard_link(&staged, path).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{}: another socket appeared there", path.display()),
            ),
            _ => context("linking it into place", e),
        })?;
        Ok(listener)
    })();
    // The directory goes when dropped, with the staged name.
    drop(dir);
    bound
}

/// Accepts with `accept` until the task ends, handing each stream to
/// `serve`. After a failed accept it waits `backoff` before the next (see
/// [`ACCEPT_BACKOFF`]); a failure is not the listener's end.
async fn accept_loop<S, A, F>(mut accept: A, backoff: Duration, mut serve: impl FnMut(S))
where
    A: FnMut() -> F,
    F: Future<Output = io::Result<S>>,
{
    loop {
        match accept().await {
            Ok(stream) => serve(stream),
            Err(_) => tokio::time::sleep(backoff).await,
        }
    }
}

/// The clients an admin socket holds: at most `max`, each waiting for its
/// request or taking its answer.
struct Clients {
    max: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Numbers the clients in the order they came.
    next: u64,
    /// The clients waiting for their request, oldest first; dropping one's
    /// sender tells it to close.
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
    /// The clients taking their answer.
    answering: usize,
}

impl Clients {
    fn new(max: usize) -> Clients {
        Clients {
            max,
            held: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Room for a new client: its place, and what tells it to close. At
    /// the limit the client waiting longest for its request is closed to
    /// make room, so that clients that connect and send nothing cannot
    /// keep one that asks from being answered; when every client held is
    /// taking its answer there is no room (None).
    fn admit(self: &Arc<Clients>) -> Option<(Client, oneshot::Receiver<()>)> {
        let mut held = self.lock();
        if held.waiting.len().saturating_add(held.answering) >= self.max {
            // Dropping the sender closes that client.
            held.waiting.pop_first()?;
        }
        let id = held.next;
        held.next = id.wrapping_add(1);
        let (close, closed) = oneshot::channel();
        held.waiting.insert(id, close);
        Some((
            Client {
                clients: self.clone(),
                id,
                answering: false,
            },
            closed,
        ))
    }
}

/// A client's place among the held ones, given up when dropped.
struct Client {
    clients: Arc<Clients>,
    id: u64,
    answering: bool,
}

impl Client {
    /// Moves this client from waiting to answering; false if it was closed
    /// to make room meanwhile.
    fn answer(&mut self) -> bool {
        let mut held = self.clients.lock();
        if held.waiting.remove(&self.id).is_none() {
            return false;
        }
        held.answering = held.answering.saturating_add(1);
        self.answering = true;
        true
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let mut held = self.clients.lock();
        if self.answering {
            held.answering = held.answering.saturating_sub(1);
        } else {
            held.waiting.remove(&self.id);
        }
    }
}

/// One connection: one command read, answered, and the socket closed. A
/// request too long, or cut short, or not sent within the read timeout, is
/// closed without an answer, as Ceph does; so is a client closed to make
/// room (`close`) before its request came. An answer not taken within the
/// write timeout is cut off.
async fn serve_one(
    mut stream: UnixStream,
    commands: &Commands,
    mut client: Client,
    close: oneshot::Receiver<()>,
    options: &SocketOptions,
) {
    let read = tokio::select! {
        read = tokio::time::timeout(options.read_timeout, read_request(&mut stream)) => read,
        _ = close => return,
    };
    let Ok(Ok(Some(text))) = read else {
        return;
    };
    if !client.answer() {
        return;
    }
    let body = answer(&text, commands);
    let _ = tokio::time::timeout(options.write_timeout, write_answer(&mut stream, &body)).await;
}

/// The answer on the wire: its length (big-endian u32), the body, and the
/// end of the stream.
async fn write_answer(stream: &mut UnixStream, body: &str) -> io::Result<()> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// The request's command text, or None when it ended early or ran too
/// long.
async fn read_request(stream: &mut UnixStream) -> io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    loop {
        if stream.read(&mut byte).await? == 0 {
            return Ok(None);
        }
        let [b] = byte;
        if buf.is_empty() && b == 0 {
            // The old binary form: three more bytes, the last picks.
            let mut rest = [0u8; 3];
            stream.read_exact(&mut rest).await?;
            let old = match rest[2] {
                0 => "0",
                1 => "perfcounters_dump",
                2 => "perfcounters_schema",
                _ => "foo",
            };
            return Ok(Some(format!(r#"{{"prefix": "{old}"}}"#)));
        }
        if b == 0 || b == b'\n' {
            return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
        }
        if buf.len() == MAX_REQUEST {
            return Ok(None);
        }
        buf.push(b);
    }
}

/// The body answering `text`: the command's output in the asked format
/// (`json` compact; anything else, or none, `json-pretty` with a final
/// newline, as Ceph's Formatter::create falls back), or its error.
pub fn answer(text: &str, commands: &Commands) -> String {
    let (req, format) = match parse_request(text) {
        Ok(r) => r,
        Err(e) => return e.body(),
    };
    match commands.execute(&req) {
        Ok(Answer::Raw(s)) => s,
        Ok(Answer::Json(v)) if format.as_deref() == Some("json") => v.to_string(),
        Ok(Answer::Json(v)) => {
            let mut s = crate::json::pretty(&v);
            s.push('\n');
            s
        }
        Err(e) => e.body(),
    }
}

/// A request's prefix, arguments and format (cmdmap_from_json, then the
/// prefix and format read as strings).
fn parse_request(text: &str) -> Result<(Request, Option<String>), CommandError> {
    let Ok(Value::Object(fields)) = crate::json::parse(text) else {
        return Err(CommandError::invalid("invalid json"));
    };
    let mut req = Request::default();
    let mut format = None;
    for (k, v) in fields {
        match (k.as_str(), v) {
            ("prefix", Value::String(s)) => req.prefix = s,
            ("format", Value::String(s)) => format = Some(s),
            ("prefix" | "format", _) => {
                return Err(CommandError::invalid(
                    "invalid json, missing format and/or prefix",
                ))
            }
            // Nested objects are not command arguments in Ceph.
            (_, Value::Object(_)) => return Err(CommandError::invalid("invalid json")),
            (_, v) => req.args.push((k, v)),
        }
    }
    Ok((req, format))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

    use tokio::time::Instant;

    use super::*;
    use crate::commands::Version;
    use crate::perf::Collection;

    /// Sends `bytes` on a new connection to `path`; what came back until
    /// the server closed.
    async fn ask(path: &Path, bytes: &[u8]) -> Vec<u8> {
        let mut s = UnixStream::connect(path)
            .await
            .expect("connect to the admin socket");
        // A request too long is reset unread, as Ceph's is.
        let _ = s.write_all(bytes).await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        out
    }

    /// What `{"prefix": "0"}` gets: the protocol's version, 2.
    const VERSION_ANSWER: &[u8] = b"\0\0\0\x012";

    /// Commands whose `config show` answer is some MiB, more than a
    /// socket's buffers take.
    fn commands_with_a_large_answer() -> Commands {
        let c = commands();
        c.set_config("large", "x".repeat(4 << 20));
        c
    }

    /// Reads until the server closes (or resets): the bytes that came.
    async fn read_until_closed(s: &mut UnixStream) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
            }
        }
    }

    /// The length an answer announces, and the body that followed it.
    fn split_answer(got: &[u8]) -> (usize, &[u8]) {
        let (len, body) = got.split_at(4.min(got.len()));
        let len: [u8; 4] = len.try_into().expect("a 4-byte length");
        (u32::from_be_bytes(len) as usize, body)
    }

    fn commands() -> Commands {
        Commands::new(
            Collection::new(),
            Version {
                version: "1.2.3".into(),
                release: "msgr".into(),
                release_type: "dev".into(),
                git_version: "abc".into(),
            },
        )
    }

    #[test]
    fn answers_as_ceph_does() {
        let c = commands();
        assert_eq!(
            answer(r#"{"prefix": "version", "format": "json"}"#, &c),
            r#"{"version":"1.2.3","release":"msgr","release_type":"dev"}"#
        );
        assert_eq!(
            answer(r#"{"prefix": "git_version"}"#, &c),
            "{\n    \"git_version\": \"abc\"\n}\n"
        );
        assert_eq!(answer(r#"{"prefix": "0"}"#, &c), "2");
        assert_eq!(
            answer("version", &c),
            "ERROR: (22) Invalid argument\ninvalid json\n"
        );
        assert_eq!(
            answer("[1]", &c),
            "ERROR: (22) Invalid argument\ninvalid json\n"
        );
        assert_eq!(
            answer("{}", &c),
            "ERROR: (22) Invalid argument\nunknown command prefix \n"
        );
        assert_eq!(
            answer(r#"{"prefix": 5}"#, &c),
            "ERROR: (22) Invalid argument\ninvalid json, missing format and/or prefix\n"
        );
    }

    #[tokio::test]
    async fn serves_one_command_per_connection() {
        let dir = PrivateDir::new("msgr-asok-test").expect("a private directory");
        let path = dir.join("a.asok");
        let sock = AdminSocket::bind(&path, commands())
            .await
            .expect("bind the admin socket");
        let got = ask(&path, b"{\"prefix\": \"0\"}\0trailing bytes are not read").await;
        assert_eq!(got, VERSION_ANSWER);
        // The old binary form.
        assert_eq!(ask(&path, b"\0\0\0\0").await, VERSION_ANSWER);
        // Too long: closed without an answer.
        assert!(ask(&path, &[b'x'; 1100]).await.is_empty());
        // A second bind while this one answers is refused; after it is
        // dropped, its file is gone.
        assert!(AdminSocket::bind(&path, commands()).await.is_err());
        drop(sock);
        assert!(!path.exists());
    }

    #[test]
    fn reads_admin_socket_mode_as_ceph_does() {
        assert_eq!(parse_mode("0600"), Ok(0o600));
        assert_eq!(parse_mode("600"), Ok(0o600));
        assert_eq!(parse_mode("0755"), Ok(0o755));
        assert_eq!(parse_mode("0"), Ok(0));
        assert_eq!(parse_mode("00777"), Ok(0o777));
        // Not octal, or bits beyond the permissions (setuid, sticky).
        for bad in [
            "", "0800", "9", "rw", "-600", " 600", "0x180", "1777", "4755",
        ] {
            assert_eq!(parse_mode(bad), Err(ModeError(bad.into())), "{bad:?}");
        }
        assert_eq!(
            parse_mode("0800").map_err(|e| e.to_string()),
            Err("admin_socket_mode \"0800\": expected permission bits in octal, 0 to 0777 (e.g. \"0600\" or \"600\")".into())
        );
    }

    /// Set when this test binary runs again under a umask of its own.
    const MODE_CHILD: &str = "MSGR_ADMIN_SOCKET_MODE_CHILD";

    /// The socket file's mode is the one asked for (0600 unless set)
    /// whatever the process's umask: the test runs again in a child
    /// process under umask 000 (which would leave a bound socket 0777),
    /// 022 and 077, set by a shell that then runs this binary.
    #[test]
    fn the_socket_file_has_its_mode_whatever_the_umask() {
        if std::env::var_os(MODE_CHILD).is_some() {
            return modes_under_this_umask();
        }
        let me = std::env::current_exe().expect("this test binary's path");
        let name = "socket::tests::the_socket_file_has_its_mode_whatever_the_umask";
        for umask in ["000", "022", "077"] {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
                .arg(&me)
                .args([name, "--exact", "--test-threads=1"])
                .env(MODE_CHILD, "1")
                .output()
                .expect("run this test again under a umask");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "under umask {umask}: {}\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    fn modes_under_this_umask() {
        let mode_of = |path: &Path| {
            let meta = std::fs::symlink_metadata(path).expect("stat the socket file");
            assert!(meta.file_type().is_socket(), "{}", path.display());
            meta.permissions().mode() & 0o7777
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let dir = PrivateDir::new("msgr-asok-test").expect("a private directory");
            let default = dir.join("default.asok");
            let _a = AdminSocket::bind(&default, commands())
                .await
                .expect("bind with the default mode");
            assert_eq!(mode_of(&default), 0o600);
            let set = dir.join("set.asok");
            let options = SocketOptions {
                mode: parse_mode("0664").expect("a mode"),
                ..SocketOptions::default()
            };
            let _b = AdminSocket::bind_with(&set, commands(), options)
                .await
                .expect("bind with mode 0664");
            assert_eq!(mode_of(&set), 0o664);
            // Both answer at their paths, and the directories they were
            // bound in are gone.
            assert_eq!(
                ask(&default, b"{\"prefix\": \"0\"}\0").await,
                VERSION_ANSWER
            );
            assert_eq!(ask(&set, b"{\"prefix\": \"0\"}\0").await, VERSION_ANSWER);
            let mut names: Vec<String> = std::fs::read_dir(dir.path())
                .expect("list the test directory")
                .map(|e| {
                    e.expect("an entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            names.sort();
            assert_eq!(names, ["default.asok", "set.asok"]);
        });
    }

    /// Ten clients that connect and send nothing against a cap of four:
    /// one that asks is still answered at once, the seven idle ones that
    /// came first are closed to make room, and the three held are still
    /// answered when they ask.
    #[tokio::test(start_paused = true)]
    async fn idle_clients_beyond_the_cap_do_not_keep_out_one_that_asks() {
        let dir = PrivateDir::new("msgr-asok-test").expect("a private directory");
        let path = dir.join("a.asok");
        let options = SocketOptions {
            max_clients: 4,
            read_timeout: Duration::from_secs(600),
            ..SocketOptions::default()
        };
        let _sock = AdminSocket::bind_with(&path, commands(), options)
            .await
            .expect("bind the admin socket");
        let mut idle = Vec::new();
        for _ in 0..10 {
            idle.push(
                UnixStream::connect(&path)
                    .await
                    .expect("connect an idle client"),
            );
        }
        // The socket accepts in order: the idle ones are in before this.
        let got =
            tokio::time::timeout(Duration::from_secs(5), ask(&path, b"{\"prefix\": \"0\"}\0"))
                .await
                .expect("the client that asks is answered within 5 s");
        assert_eq!(got, VERSION_ANSWER);
        let (closed, held) = idle.split_at_mut(7);
        for (i, s) in closed.iter_mut().enumerate() {
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(Duration::from_secs(5), s.read(&mut byte))
                .await
                .unwrap_or_else(|_| panic!("idle client {i} still open after 5 s (cap 4)"));
            assert!(matches!(read, Ok(0) | Err(_)), "idle client {i}: {read:?}");
        }
        for (i, s) in held.iter_mut().enumerate() {
            s.write_all(b"{\"prefix\": \"0\"}\0")
                .await
                .unwrap_or_else(|e| panic!("held client {i}: {e}"));
            let got = tokio::time::timeout(Duration::from_secs(5), read_until_closed(s))
                .await
                .unwrap_or_else(|_| panic!("held client {i} not answered within 5 s"));
            assert_eq!(got, VERSION_ANSWER, "held client {i}");
        }
    }

    /// With every place taken by clients taking their answers, one more
    /// is closed at once, and they still get their whole answers.
    #[tokio::test(start_paused = true)]
    async fn a_client_beyond_a_cap_of_answering_ones_is_closed_at_once() {
        let dir = PrivateDir::new("msgr-asok-test").expect("a private directory");
        let path = dir.join("a.asok");
        let options = SocketOptions {
            max_clients: 2,
            write_timeout: Duration::from_secs(600),
            ..SocketOptions::default()
        };
        let _sock = AdminSocket::bind_with(&path, commands_with_a_large_answer(), options)
            .await
            .expect("bind the admin socket");
        let mut slow = Vec::new();
        for _ in 0..2 {
            let mut s = UnixStream::connect(&path)
                .await
                .expect("connect a slow reader");
            s.write_all(b"{\"prefix\": \"config show\"}\n")
                .await
                .expect("send config show");
            slow.push(s);
        }
        // Time for both to be read and answered as far as their buffers go.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut extra = UnixStream::connect(&path).await.expect("connect one more");
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), extra.read(&mut byte))
            .await
            .expect("the client beyond the cap is closed within 5 s");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        for (i, s) in slow.iter_mut().enumerate() {
            let got = read_until_closed(s).await;
            let (len, body) = split_answer(&got);
            assert!(len > 4 << 20, "slow reader {i}: a {len}-byte answer");
            assert_eq!(body.len(), len, "slow reader {i}");
        }
    }

    /// A client that asks for a large answer and does not read it is
    /// closed once the write timeout passes: what it reads afterwards
    /// falls short of the length announced.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_take_its_answer_is_closed_after_the_write_timeout() {
        let dir = PrivateDir::new("msgr-asok-test").expect("a private directory");
        let path = dir.join("a.asok");
        let options = SocketOptions {
            write_timeout: Duration::from_secs(1),
            ..SocketOptions::default()
        };
        let _sock = AdminSocket::bind_with(&path, commands_with_a_large_answer(), options)
            .await
            .expect("bind the admin socket");
        let mut s = UnixStream::connect(&path).await.expect("connect");
        s.write_all(b"{\"prefix\": \"config show\"}\n")
            .await
            .expect("send config show");
        tokio::time::sleep(Duration::from_secs(30)).await;
        let got = tokio::time::timeout(Duration::from_secs(5), read_until_closed(&mut s))
            .await
            .expect("the connection ends within 5 s");
        let (len, body) = split_answer(&got);
        assert!(len > 4 << 20, "a {len}-byte answer announced");
        assert!(
            body.len() < len,
            "the whole answer ({len} bytes) was kept for a client that read nothing for 30 s"
        );
    }

    /// After a failed accept (EMFILE here) the loop waits the back-off
    /// before accepting again; after a good one it does not wait.
    #[tokio::test(start_paused = true)]
    async fn accept_errors_are_retried_after_a_pause() {
        let backoff = Duration::from_millis(10);
        let mut calls: Vec<Instant> = Vec::new();
        let mut served = 0;
        let accept = || {
            calls.push(Instant::now());
            let n = calls.len();
            async move {
                match n {
                    1..=5 => Err(io::Error::from_raw_os_error(24)),
                    6 => Ok(()),
                    _ => std::future::pending().await,
                }
            }
        };
        let run = accept_loop(accept, backoff, |()| served += 1);
        assert!(tokio::time::timeout(Duration::from_secs(1), run)
            .await
            .is_err());
        assert_eq!(served, 1);
        assert_eq!(calls.len(), 7);
        let gaps: Vec<Duration> = calls
            .iter()
            .zip(calls.iter().skip(1))
            .map(|(a, b)| b.duration_since(*a))
            .collect();
        for (i, gap) in gaps.iter().take(5).enumerate() {
            assert!(*gap >= backoff, "after failed accept {i}: {gap:?}");
        }
        assert_eq!(
            gaps.get(5),
            Some(&Duration::ZERO),
            "a pause after a good accept"
        );
    }
}
