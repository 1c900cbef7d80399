//! Memory a server holds per idle connection: connections opened to it in
//! steps, each from a one-shard client messenger of its own; one counts
//! once it is READY, a keepalive came back and one 4 KiB MOSDOp write was
//! answered. After each step, once the connections have been idle for a
//! while, the server's resident memory is read from /proc. Used by the
//! `idle-conns` tool and by msgr-cli's test that holds 10000 idle
//! connections against `msgr serve`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use msgr_admin::private_dir::PrivateDir;
use msgr_auth::cephx::key_server::SERVICE_TICKET_TTL;
use msgr_auth::cephx::{CephxClient, CephxProvider, KeyServer, Keyring};
use msgr_auth::{AuthProvider, ConMode, NoneProvider, SystemRandom};
use msgr_encoding::{AuthName, EntityAddrvec, EntityName, EntityType};
use msgr_messages::{MOSDOp, TypedMessage, MSG_OSD_OPREPLY};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;

/// How long connections sit idle before the server is measured: past the
/// second after which a connection trims its queues (Timeouts::trim).
const SETTLE: Duration = Duration::from_secs(2);
/// How long a step may take to come up and be answered.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The server measured: `msgr serve` started here, or one already running.
pub struct Server {
    child: Option<Child>,
    pub addr: EntityAddrvec,
    pub pid: u32,
    /// A keyring made for this run, in a directory of its own (removed
    /// when the server is dropped).
    made_keyring: Option<RunKeyring>,
}

impl Server {
    /// Starts `bin serve` on loopback, on `shards` shards, in `mode` (secure
    /// mode with cephx, and a keyring made for the run).
    pub fn spawn(bin: &Path, shards: Option<usize>, mode: ConMode) -> Result<Server, String> {
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--bind", "v2:127.0.0.1:0"]);
        let mut made_keyring = None;
        if mode == ConMode::SECURE {
            let k = RunKeyring::new()?;
            cmd.args(["--auth", "cephx", "--mode", "secure", "--keyring"])
                .arg(k.path());
            made_keyring = Some(k);
        }
        if let Some(s) = shards {
            cmd.args(["--shards", &s.to_string()]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let mut first = String::new();
        let stdout = child.stdout.take().ok_or("serve's stdout")?;
        BufReader::new(stdout)
            .read_line(&mut first)
            .map_err(|e| format!("serve's first line: {e}"))?;
        let addr = first
            .split_whitespace()
            .find(|w| w.starts_with("v2:"))
            .ok_or_else(|| format!("serve printed no address: {first:?}"))?
            .parse()
            .map_err(|e| format!("serve's address: {e}"))?;
        Ok(Server {
            pid: child.id(),
            child: Some(child),
            addr,
            made_keyring,
        })
    }

    /// A server already running (Ceph's, or ours under a profiler).
    pub fn running(addr: EntityAddrvec, pid: u32) -> Server {
        Server {
            child: None,
            addr,
            pid,
            made_keyring: None,
        }
    }

    /// The keyring a client of this server uses, if the run made one.
    pub fn keyring(&self) -> Option<&Path> {
        self.made_keyring.as_ref().map(RunKeyring::path)
    }

    /// The server's resident memory, in KiB (0 if it cannot be read).
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // made_keyring goes next, with its directory.
    }
}

/// Where `msgr serve` writes the keyring of a secure run: a path in a
/// directory made for it that only this user may enter, so that nothing
/// can be there before the server writes it (serve loads a keyring it
/// finds at that path).
struct RunKeyring {
    /// Held for its removal when the keyring is dropped.
    _dir: PrivateDir,
    path: PathBuf,
}

impl RunKeyring {
    fn new() -> Result<RunKeyring, String> {
        let dir = PrivateDir::new("msgr-idle")
            .map_err(|e| format!("a directory for the run's keyring: {e}"))?;
        let path = dir.join("keyring");
        Ok(RunKeyring { _dir: dir, path })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// How the measuring clients connect: in `mode`, with cephx when there is
/// a keyring (the server's: the client's key and the service secret, from
/// which each client mints its own ticket, as there is no monitor).
pub struct ClientNet {
    mode: ConMode,
    keys: Option<Arc<KeyServer>>,
}

/// Client settings for `mode`: cephx with `keyring` (the server's) when
/// given, which secure mode needs.
pub fn client_net(mode: ConMode, keyring: Option<&Path>) -> Result<ClientNet, String> {
    let keys = match keyring {
        None if mode == ConMode::SECURE => {
            return Err("secure mode needs cephx: the server's keyring (--keyring)".into())
        }
        None => None,
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let ring = Keyring::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(Arc::new(KeyServer::new(ring)))
        }
    };
    Ok(ClientNet { mode, keys })
}

impl ClientNet {
    /// The auth provider of client `me`: none, or cephx as `client.admin`
    /// with an OSD ticket for `me`'s number minted from the service secret.
    fn provider(&self, me: EntityName) -> Result<Arc<dyn AuthProvider>, String> {
        let Some(keys) = &self.keys else {
            return Ok(Arc::new(NoneProvider));
        };
        let principal = AuthName::client_admin();
        let key = keys
            .entity_key(&principal)
            .ok_or("the keyring has no [client.admin] key")?;
        let rng = Arc::new(SystemRandom);
        let clock = msgr_auth::system_clock();
        let mut client = CephxClient::new(principal, key.clone(), rng, clock);
        client.service_modes = vec![self.mode];
        let gid = u64::try_from(me.num).map_err(|_| format!("{me}: a negative number"))?;
        client
            .grant_from(keys, EntityType::OSD, gid, SERVICE_TICKET_TTL)
            .ok_or("the keyring has no [osd.] service secret to mint a ticket with")?;
        Ok(Arc::new(CephxProvider {
            client: Some(Arc::new(client)),
            server: None,
        }))
    }

    /// A one-shard lossless client messenger named `me`.
    fn messenger(
        &self,
        me: EntityName,
        dispatcher: Arc<dyn Dispatcher>,
    ) -> Result<Messenger<Tcp>, String> {
        let mut o = Options::new(
            me,
            PolicySet::new(PolicyName::LosslessClient.policy()),
            self.provider(me)?,
        );
        o.shards = 1;
        Ok(Messenger::new(Tcp::default(), o, dispatcher))
    }
}

/// The server's size after a step, and how long the step's connections
/// took to come up (connect, handshake, keepalive and write answered).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub conns: usize,
    pub rss_kib: u64,
    pub up: Duration,
}

/// Counts the write replies that came back.
#[derive(Default)]
struct Replies {
    count: AtomicUsize,
    arrived: tokio::sync::Notify,
}

impl Dispatcher for Replies {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        if msg.msg_type == MSG_OSD_OPREPLY {
            self.count.fetch_add(1, Ordering::AcqRel);
            self.arrived.notify_waiters();
        }
    }
}

/// Opens connections to `server` up to each of `steps` in turn, measuring
/// the server after each (`each` sees it at once); the connections are
/// held until all steps are done. Errors if a connection does not come up
/// or a write is not answered.
pub async fn hold(
    server: &Server,
    net: &ClientNet,
    steps: &[usize],
    mut each: impl FnMut(Step),
) -> Result<Vec<Step>, String> {
    let replies = Arc::new(Replies::default());
    let data = Bytes::from(vec![0x5a; 4096]);
    let mut held: Vec<(Messenger<Tcp>, Connection)> = Vec::new();
    let mut out = Vec::new();
    let result = async {
        for &n in steps {
            let from = held.len();
            let started = std::time::Instant::now();
            while held.len() < n {
                let name = EntityName::new(EntityType::CLIENT, held.len() as i64 + 1);
                let m = net.messenger(name, replies.clone())?;
                let c = m.connect(&server.addr, EntityType::OSD);
                held.push((m, c));
            }
            let answered = async {
                for (_, c) in held.get(from..).unwrap_or_default() {
                    if c.keepalive_roundtrip(STEP_TIMEOUT).await.is_none() {
                        return Err(format!("connection {} did not come up", c.id()));
                    }
                    let op = MOSDOp::write(1, 1, "idle", 0, data.clone(), false);
                    c.send_nowait(op.to_message(c.features()));
                }
                while replies.count.load(Ordering::Acquire) < n {
                    let arrived = replies.arrived.notified();
                    if replies.count.load(Ordering::Acquire) >= n {
                        break;
                    }
                    arrived.await;
                }
                Ok(())
            };
            tokio::time::timeout(STEP_TIMEOUT, answered)
                .await
                .map_err(|_| format!("the writes of step {n} were not all answered"))??;
            let up = started.elapsed();
            tokio::time::sleep(SETTLE).await;
            let step = Step {
                conns: n,
                rss_kib: server.rss_kib(),
                up,
            };
            each(step);
            out.push(step);
        }
        Ok(())
    }
    .await;
    for (m, _) in &held {
        m.shutdown().await;
    }
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyring of a secure run is not yet there, in a directory made
    /// for it that only this user may enter (not the shared temporary
    /// directory, where another user could have put one first), and gone
    /// with it.
    #[test]
    fn a_run_keyring_is_in_a_new_directory_of_its_own() {
        use std::os::unix::fs::PermissionsExt;
        let k = RunKeyring::new().expect("a keyring path");
        assert!(
            !k.path().exists(),
            "{} is there already",
            k.path().display()
        );
        let dir = k.path().parent().expect("a directory").to_path_buf();
        assert_ne!(dir, std::env::temp_dir());
        let meta = std::fs::symlink_metadata(&dir).expect("stat the directory");
        assert!(meta.is_dir(), "{}", dir.display());
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o700,
            "{}",
            dir.display()
        );
        let other = RunKeyring::new().expect("another keyring path");
        assert_ne!(other.path().parent(), Some(dir.as_path()));
        drop(k);
        assert!(!dir.exists());
    }
}
