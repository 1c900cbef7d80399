//! The admin socket: a UNIX socket answering `ceph --admin-daemon PATH
//! ...` as a Ceph daemon does (AdminSocket::do_accept;
//! docs/research/admin-socket.md §1). A client sends one command, JSON
//! ending in NUL or newline (at most 1023 bytes), or the old binary form
//! (a NUL, then three bytes whose last picks `0`, `perfcounters_dump` or
//! `perfcounters_schema`); the answer is a 4-byte big-endian length and
//! the body, then the socket closes. Failures are bodies too, `ERROR:
//! (errno) reason`, since the protocol has no other place for them.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use crate::commands::{Answer, CommandError, Commands, Request};
use crate::json::Value;

/// Ceph reads a request into 1024 bytes: 1023 and the terminator.
const MAX_REQUEST: usize = 1023;

/// A client that sends nothing for this long is dropped (Ceph's single
/// thread would wait; ours serves others meanwhile).
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A listening admin socket; closed, and its file removed, when dropped.
pub struct AdminSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl AdminSocket {
    /// Listens at `path`, answering with `commands`, on the current tokio
    /// runtime. A file left there by a process that is gone is replaced;
    /// one that answers is not (AddrInUse).
    pub async fn bind(path: &Path, commands: Commands) -> io::Result<AdminSocket> {
        if path.exists() {
            if UnixStream::connect(path).await.is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{}: another process answers there", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let commands = commands.clone();
                tokio::spawn(async move {
                    let _ = serve_one(stream, &commands).await;
                });
            }
        });
        Ok(AdminSocket {
            path: path.to_path_buf(),
            task,
        })
    }

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

/// One connection: one command read, answered, and the socket closed. A
/// request too long, or cut short, is closed without an answer, as Ceph
/// does.
async fn serve_one(mut stream: UnixStream, commands: &Commands) -> io::Result<()> {
    let read = tokio::time::timeout(READ_TIMEOUT, read_request(&mut stream)).await;
    let Ok(Some(text)) = read.map_err(|_| io::ErrorKind::TimedOut)? else {
        return Ok(());
    };
    let body = answer(&text, commands);
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
        Ok(Answer::Json(v)) if format.as_deref() == Some("json") => v.to_json(),
        Ok(Answer::Json(v)) => {
            let mut s = v.to_json_pretty();
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
            ("prefix", Value::Str(s)) => req.prefix = s,
            ("format", Value::Str(s)) => format = Some(s),
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
    use super::*;
    use crate::commands::Version;
    use crate::perf::Collection;

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
        let dir = std::env::temp_dir().join(format!("msgr-asok-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.asok");
        let sock = AdminSocket::bind(&path, commands()).await.unwrap();
        let ask = |bytes: &'static [u8]| {
            let path = path.clone();
            async move {
                let mut s = UnixStream::connect(&path).await.unwrap();
                // A request too long is reset unread, as Ceph's is.
                let _ = s.write_all(bytes).await;
                let mut out = Vec::new();
                let _ = s.read_to_end(&mut out).await;
                out
            }
        };
        let got = ask(b"{\"prefix\": \"0\"}\0trailing bytes are not read").await;
        assert_eq!(got, b"\0\0\0\x012");
        // The old binary form.
        assert_eq!(ask(b"\0\0\0\0").await, b"\0\0\0\x012");
        // Too long: closed without an answer.
        assert!(ask(&[b'x'; 1100]).await.is_empty());
        // A second bind while this one answers is refused; after it is
        // dropped, its file is gone.
        assert!(AdminSocket::bind(&path, commands()).await.is_err());
        drop(sock);
        assert!(!path.exists());
        let _ = std::fs::remove_dir(&dir);
    }
}
