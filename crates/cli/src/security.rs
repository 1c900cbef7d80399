//! Auth, connection mode and on-wire compression for `msgr serve` and
//! `msgr bench`: `--auth none|cephx`, `--keyring K`, `--mode crc|secure`,
//! `--compress none|force`, `--compress-algorithms LIST`.
//!
//! There is no monitor between a bench and a server, so the keyring holds
//! what one would: the client's key (`[client.admin]`) and the service
//! secret that seals tickets for the server (`[osd.]`, Ceph's fixed
//! service key, secret id -1). The client mints its own OSD ticket with
//! it, the server verifies authorizers with it. `msgr serve --auth cephx
//! --keyring K` writes such a keyring (aes256k keys) if K does not exist;
//! the in-process bench makes a temporary one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use msgr_auth::cephx::{
    key_server::SERVICE_TICKET_TTL, CephxClient, CephxProvider, CephxServer, CryptoKey, KeyKind,
    KeyServer, Keyring, KeyringEntry,
};
use msgr_auth::{AuthProvider, ConMode, NoneProvider, SystemRandom};
use msgr_encoding::{AuthName, EntityName, EntityType};
use msgr_frames::compression::Algorithm;
use msgr_protocol::CompressionConfig;

/// The options, as given.
#[derive(Debug, Clone, Default)]
pub struct SecurityOpts {
    pub cephx: bool,
    pub keyring: Option<PathBuf>,
    pub mode: Option<ConMode>,
    pub compress: bool,
    pub compress_algorithms: Vec<Algorithm>,
}

impl SecurityOpts {
    /// The options as the command line gave them.
    pub fn from_args(a: crate::args::SecurityArgs) -> Result<SecurityOpts, String> {
        let compress_algorithms = match a.compress_algorithms {
            None => Vec::new(),
            Some(list) => list
                .split([',', ' ', ';'])
                .filter(|s| !s.is_empty())
                .map(|name| {
                    Algorithm::from_name(name)
                        .ok_or_else(|| format!("unknown compression algorithm {name:?}"))
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(SecurityOpts {
            cephx: a.auth.as_deref() == Some("cephx"),
            keyring: a.keyring,
            mode: a.mode,
            compress: a.compress.as_deref() == Some("force"),
            compress_algorithms,
        })
    }

    /// Checks the combination and loads (or makes) the keys.
    pub fn resolve(&self, create_keyring: bool) -> Result<Security, String> {
        if !self.cephx && self.mode == Some(ConMode::SECURE) {
            return Err("secure mode needs --auth cephx (auth none has no keys)".into());
        }
        let keys = match (self.cephx, &self.keyring) {
            (false, _) => None,
            (true, None) => Some(Arc::new(CephxKeys::generate(KeyKind::Aes256k))),
            (true, Some(p)) => Some(Arc::new(CephxKeys::load(p, create_keyring)?)),
        };
        Ok(Security {
            keys,
            mode: self.mode,
            compress: self.compress,
            algorithms: match self.compress_algorithms.is_empty() {
                true => vec![Algorithm::Snappy],
                false => self.compress_algorithms.clone(),
            },
        })
    }
}

/// A cephx world without a monitor: the client's key and the service secret.
pub struct CephxKeys {
    pub keys: Arc<KeyServer>,
    pub ring: Keyring,
    pub client: AuthName,
}

impl std::fmt::Debug for CephxKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CephxKeys({})", self.client)
    }
}

impl CephxKeys {
    /// Fresh random keys of `kind`.
    pub fn generate(kind: KeyKind) -> CephxKeys {
        let rng = SystemRandom;
        let now = msgr_auth::system_clock()();
        let mut ring = Keyring::default();
        for name in ["client.admin", "osd."] {
            ring.insert(
                name.parse().expect("valid names"),
                KeyringEntry {
                    key: CryptoKey::random(kind, now, &rng),
                    caps: Default::default(),
                },
            );
        }
        Self::from_ring(ring)
    }

    fn from_ring(ring: Keyring) -> CephxKeys {
        CephxKeys {
            keys: Arc::new(KeyServer::new(ring.clone())),
            ring,
            client: AuthName::client_admin(),
        }
    }

    /// Reads `path`; with `create`, writes a new keyring there if there is none.
    pub fn load(path: &Path, create: bool) -> Result<CephxKeys, String> {
        if create && !path.exists() {
            let k = CephxKeys::generate(KeyKind::Aes256k);
            write_private(path, k.ring.to_text().as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("msgr: wrote a new keyring to {}", path.display());
            return Ok(k);
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let ring = Keyring::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if ring.get(&"osd.".parse().expect("valid")).is_none() {
            return Err(format!(
                "{}: no [osd.] entry (the service secret that seals tickets for the server)",
                path.display()
            ));
        }
        Ok(Self::from_ring(ring))
    }
}

/// Writes a new file only its owner can read (mode 0600, as
/// ceph-authtool's keyrings), refusing to overwrite one.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Resolved settings.
#[derive(Debug, Clone, Default)]
pub struct Security {
    pub keys: Option<Arc<CephxKeys>>,
    pub mode: Option<ConMode>,
    pub compress: bool,
    pub algorithms: Vec<Algorithm>,
}

impl Security {
    fn modes(&self) -> Vec<ConMode> {
        match self.mode {
            Some(m) => vec![m],
            None => vec![ConMode::CRC, ConMode::SECURE],
        }
    }

    /// The auth provider of a messenger named `me`: as a client, a ticket
    /// for OSDs minted from the keyring; as a server, a verifier for
    /// authorizers to `me`'s type.
    ///
    /// The ticket is `me`'s own, since a server holds a peer to the entity
    /// it authenticated as: a client is `client.admin` numbered by its
    /// global id (Ceph's clients take `client.GLOBAL_ID` as their name on
    /// the wire), so the ticket's global id is `me`'s number; any other
    /// type authenticates as itself (`osd.1` with the keyring's `[osd.1]`).
    pub fn provider(&self, me: EntityName) -> Arc<dyn AuthProvider> {
        let Some(k) = &self.keys else {
            return Arc::new(NoneProvider);
        };
        let rng = Arc::new(SystemRandom);
        let clock = msgr_auth::system_clock();
        let principal = match me.kind {
            EntityType::CLIENT => k.client.clone(),
            kind => AuthName::new(kind, me.num.to_string()),
        };
        let client = k.keys.entity_key(&principal).map(|key| {
            let mut c =
                CephxClient::new(principal.clone(), key.clone(), rng.clone(), clock.clone());
            c.service_modes = self.modes();
            let gid = u64::try_from(me.num).unwrap_or_else(|_| k.keys.assign_global_id());
            c.grant_from(&k.keys, EntityType::OSD, gid, SERVICE_TICKET_TTL);
            Arc::new(c)
        });
        let mut server = CephxServer::new(k.keys.clone(), me.kind, rng, clock);
        server.service_modes = self.modes();
        server.mon_modes = self.modes();
        Arc::new(CephxProvider {
            client,
            server: Some(Arc::new(server)),
        })
    }

    /// On-wire compression: `serve` grants it to any peer that asks,
    /// a client asks OSDs for it.
    pub fn compression(&self, all_peers: bool) -> CompressionConfig {
        CompressionConfig {
            force: self.compress,
            algorithms: self.algorithms.clone(),
            all_peers,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_keyring_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        // A directory of the test's own: load() reads a keyring it finds.
        let dir =
            msgr_admin::private_dir::PrivateDir::new("msgr-keyring-test").expect("a directory");
        let path = dir.join("keyring");
        let made = CephxKeys::load(&path, true).expect("a new keyring");
        let mode = std::fs::metadata(&path)
            .expect("stat the keyring")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // And it is read back as written.
        let again = CephxKeys::load(&path, true).expect("the keyring read back");
        assert_eq!(again.ring, made.ring);
    }
}
