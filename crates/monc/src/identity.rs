//! Who a client is on a cluster, read the way the `ceph` CLI reads it:
//! `-c`/`--conf`, `-n`/`--name`/`--id`, `-k`/`--keyring`, `-m`/`--mon-host`,
//! `--cluster`, CEPH_ARGS and CEPH_CONF (msgr-config), then the key from the
//! `key` or `keyfile` option or the first keyring that holds the entity.

use std::sync::Arc;

use crate::config::{MonAuth, MonClientConfig};
use msgr_auth::cephx::{CephxClient, CephxProvider, CryptoKey, Keyring};
use msgr_auth::{AuthProvider, ConMode, NoneProvider, SystemRandom};
use msgr_config::{Config, ConfigOptions, Env};
use msgr_encoding::{EntityAddrvec, EntityName, EntityType};
use msgr_messenger::Options;
use msgr_protocol::{PolicySet, Timeouts};

/// The options a cluster command takes, before resolution.
#[derive(Debug, Clone, Default)]
pub struct ClusterOpts {
    /// The options that select and override configuration (`-c`, `--name`, `-m`, `--option value`, ...).
    pub conf: ConfigOptions,
    /// `--mode crc|secure`: both monitor and service connections.
    pub mode: Option<ConMode>,
    /// `--rev0`: offer msgr2.0 only.
    pub rev0: bool,
    /// `--auth-none-fallback`: with a key, still accept a monitor that
    /// offers only auth none. Off by default, since an active attacker can
    /// answer cephx with AUTH_BAD_METHOD for none and read everything.
    pub auth_none_fallback: bool,
}

impl ClusterOpts {
    /// Takes the command-line option `flag` (`-c`, `--conf`, ...), one of
    /// the `ceph` CLI's, calling `value` for its value: `Ok(true)`. An
    /// argument that is not an option (no leading `-`, or `-` alone) is
    /// left to the caller: `Ok(false)`. An option it does not know is an
    /// error naming the ones it does, so a typo is not taken for something
    /// else.
    pub fn take(
        &mut self,
        flag: &str,
        mut value: impl FnMut() -> Result<String, String>,
    ) -> Result<bool, String> {
        match flag {
            "-c" | "--conf" | "-n" | "--name" | "-i" | "--id" | "--user" | "-k" | "--keyring"
            | "-m" | "--mon-host" | "--mon_host" | "--cluster" => {
                let v = value()?;
                let key = match flag {
                    "--keyring" => "-k",
                    "--mon-host" | "--mon_host" => "-m",
                    f => f,
                };
                let mut rest = std::iter::once(v);
                self.conf.take(key, &mut rest).map_err(|e| e.to_string())?;
            }
            // Ceph's messenger options, as `ceph` takes them
            // (`--ms_bind_msgr2=false`, `--ms-bind-msgr2 false`).
            f if f.starts_with("--ms_") || f.starts_with("--ms-") => {
                let v = value()?;
                let mut rest = std::iter::once(v);
                self.conf.take(f, &mut rest).map_err(|e| e.to_string())?;
            }
            "--mode" => self.mode = Some(value()?.parse()?),
            "--rev0" => self.rev0 = true,
            "--auth-none-fallback" => self.auth_none_fallback = true,
            f if !f.starts_with('-') || f == "-" => return Ok(false),
            _ => {
                return Err(format!(
                    "unknown cluster option {flag:?}: expected one of -c/--conf, -n/--name, \
                     -i/--id/--user, -k/--keyring, -m/--mon-host, --cluster, --ms_* (Ceph's \
                     messenger options), --mode, --rev0, --auth-none-fallback"
                ))
            }
        }
        Ok(true)
    }
}

/// Why who we are on a cluster could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityError {
    /// ceph.conf, CEPH_ARGS or an option could not be read (or names no
    /// monitor).
    Config(String),
    /// cephx is required and no key for the entity was found: the option
    /// `key`, `keyfile`, or any of these keyrings.
    NoKey {
        /// The entity whose key was looked for.
        entity: String,
        /// The keyrings searched.
        keyrings: Vec<std::path::PathBuf>,
        /// The auth methods the configuration requires.
        auth_client_required: Vec<String>,
    },
    /// A key was found but does not decode (where it came from, why).
    BadKey {
        /// Where the key came from.
        source: String,
        /// Why it does not decode.
        why: String,
    },
    /// An option's value is not one it takes.
    BadOption {
        /// The option's name.
        option: String,
        /// The value given.
        value: String,
    },
}

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdentityError::Config(why) => f.write_str(why),
            IdentityError::NoKey {
                entity,
                keyrings,
                auth_client_required,
            } => {
                let paths: Vec<String> = keyrings.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "no key for {entity} (looked in {}); auth_client_required is {:?}: \
                     add {entity}'s key to a keyring, give one with -k, or name another \
                     entity with -n",
                    paths.join(", "),
                    auth_client_required.join(",")
                )
            }
            IdentityError::BadKey { source, why } => write!(f, "{source}: {why}"),
            IdentityError::BadOption { option, value } => {
                write!(f, "{option}: {value:?} is not a value it takes")
            }
        }
    }
}

impl std::error::Error for IdentityError {}

/// The CLI's errors are strings.
impl From<IdentityError> for String {
    fn from(e: IdentityError) -> String {
        e.to_string()
    }
}

/// A resolved identity: configuration, monitors, credentials.
///
/// ```
/// use msgr_monc::identity::{ClusterOpts, Identity, IdentityError};
///
/// # use std::hash::{BuildHasher, Hasher};
/// # use std::os::unix::fs::DirBuilderExt;
/// // A new directory only we may enter, so no one else's file is there.
/// # let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
/// let dir = std::env::temp_dir().join(format!("identity-doc-{random:016x}"));
/// std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
/// let keyring = dir.join("keyring");
/// std::fs::write(&keyring, "[client.app]\n\tkey = AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==\n").unwrap();
/// let conf = dir.join("ceph.conf");
/// std::fs::write(&conf, format!(
///     "[global]\nmon_host = 10.0.0.1,10.0.0.2\nkeyring = {}\nms_client_mode = secure\nauth_client_required = cephx\n",
///     keyring.display(),
/// )).unwrap();
///
/// // As `ceph -c CONF -n client.app` reads them (CEPH_ARGS too).
/// let mut opts = ClusterOpts::default();
/// opts.take("-c", || Ok(conf.display().to_string()))?;
/// opts.take("-n", || Ok("client.app".into()))?;
/// let id = Identity::load(&opts)?;
/// // Each monitor at its msgr2 and msgr1 ports, as Ceph expands mon_host.
/// assert_eq!(id.mons.len(), 2);
/// assert_eq!(id.mons[0].to_string(), "[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]");
/// let cephx = id.cephx.as_ref().expect("a key, so cephx");
/// assert_eq!(cephx.service_modes, [msgr_auth::ConMode::SECURE]);
///
/// // Another entity has no key there, and cephx is required (Ceph's
/// // default, "cephx, none", would fall back to auth none): the error
/// // says where we looked.
/// let mut other = ClusterOpts::default();
/// other.take("-c", || Ok(conf.display().to_string()))?;
/// other.take("-n", || Ok("client.other".into()))?;
/// match Identity::load(&other) {
///     Err(IdentityError::NoKey { entity, keyrings, .. }) => {
///         assert_eq!((entity.as_str(), keyrings), ("client.other", vec![keyring]));
///     }
///     other => panic!("{:?}", other.err()),
/// }
/// # std::fs::remove_dir_all(dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Identity {
    /// The resolved configuration.
    pub config: Config,
    /// Fall back to auth none from cephx: only when asked for
    /// (`--auth-none-fallback`) and auth_client_required allows none.
    /// Without a key, auth none is what is used where it is allowed.
    pub none_fallback: bool,
    /// The monitors to hunt among (mon_host).
    pub mons: Vec<EntityAddrvec>,
    /// `None` when auth none is in use.
    pub cephx: Option<Arc<CephxClient>>,
    /// Offer msgr2.1 (false with `--rev0`: msgr2.0 only).
    pub rev1: bool,
    /// ms_bind_msgr2 (default true): false dials msgr1 (`v1:`) addresses.
    pub msgr2: bool,
    /// cephx_sign_messages (default true): msgr1 messages signed.
    pub sign_messages: bool,
    /// cephx_require_version (default 2): msgr1 peers with a cephx
    /// session must sign in CEPHX_V2's format.
    pub cephx_require_version: u32,
    /// client_mount_timeout: how long connecting (a monitor session and
    /// the first maps) may take before it fails. [`DEFAULT_MOUNT_TIMEOUT`]
    /// unless ceph.conf or an option sets it.
    pub mount_timeout: std::time::Duration,
    /// The messenger's timers, from Ceph's ms_connection_ready_timeout,
    /// ms_connection_idle_timeout, ms_initial_backoff and ms_max_backoff,
    /// and our ms_path_stall_timeout and ms_path_probe_interval (the path
    /// check, [`Timeouts::stall`] and [`Timeouts::probe`]; Ceph ignores
    /// options it does not know, so one ceph.conf serves both).
    pub timeouts: Timeouts,
}

/// Where in [`Timeouts`] an option's value goes.
type TimeoutField = fn(&mut Timeouts) -> &mut std::time::Duration;

/// The ceph.conf options that set [`Timeouts`], in seconds, and where each
/// goes.
const TIMEOUT_OPTIONS: [(&str, TimeoutField); 6] = [
    ("ms_connection_ready_timeout", |t| &mut t.connect),
    ("ms_connection_idle_timeout", |t| &mut t.idle),
    ("ms_initial_backoff", |t| &mut t.backoff_initial),
    ("ms_max_backoff", |t| &mut t.backoff_max),
    ("ms_path_stall_timeout", |t| &mut t.stall),
    ("ms_path_probe_interval", |t| &mut t.probe),
];

/// A positive number of seconds (Ceph's float and secs options), as
/// option `option` gives it.
fn seconds(option: &str, v: String) -> Result<std::time::Duration, IdentityError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or(IdentityError::BadOption {
            option: option.into(),
            value: v,
        })
}

/// [`Timeouts`] as ceph.conf sets them, the defaults where it does not.
fn timeouts(config: &Config) -> Result<Timeouts, IdentityError> {
    let mut t = Timeouts::default();
    for (option, field) in TIMEOUT_OPTIONS {
        if let Some(v) = config.get(option) {
            *field(&mut t) = seconds(option, v)?;
        }
    }
    Ok(t)
}

/// How long a library client waits to connect when `client_mount_timeout`
/// is not set: 30 s (Ceph's own default, 300 s, leaves a typo in mon_host
/// unreported for five minutes).
pub const DEFAULT_MOUNT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Identity {
    /// Resolve `opts` into an identity: read ceph.conf, CEPH_ARGS and the keyring.
    pub fn load(opts: &ClusterOpts) -> Result<Identity, IdentityError> {
        let config_error = |e: &dyn std::fmt::Display| IdentityError::Config(e.to_string());
        let config =
            Config::load(&opts.conf, &Env::from_process()).map_err(|e| config_error(&e))?;
        let mons = config.mon_host().map_err(|e| config_error(&e))?;
        let methods = config.get_list("auth_client_required");
        let key = find_key(&config)?;
        let cephx = match key {
            Some(key) if methods.iter().any(|m| m == "cephx") => {
                let mut c = CephxClient::new(
                    config.name.clone(),
                    key,
                    Arc::new(SystemRandom),
                    msgr_auth::system_clock(),
                );
                let modes = |option: &str| -> Result<Vec<ConMode>, IdentityError> {
                    match opts.mode {
                        Some(m) => Ok(vec![m]),
                        None => {
                            let v = config.get(option).unwrap_or_default();
                            ConMode::parse_list(&v).map_err(|_| IdentityError::BadOption {
                                option: option.into(),
                                value: v,
                            })
                        }
                    }
                };
                c.mon_modes = modes("ms_mon_client_mode")?;
                c.service_modes = modes("ms_client_mode")?;
                Some(Arc::new(c))
            }
            _ if methods.iter().any(|m| m == "none") => None,
            _ => {
                return Err(IdentityError::NoKey {
                    entity: config.name.to_string(),
                    keyrings: config.keyring_paths(),
                    auth_client_required: methods,
                })
            }
        };
        let flag = |option: &str, default: bool| match config.get(option) {
            None => Ok(default),
            Some(v) => parse_bool(&v).ok_or(IdentityError::BadOption {
                option: option.into(),
                value: v,
            }),
        };
        Ok(Identity {
            msgr2: flag("ms_bind_msgr2", true)?,
            sign_messages: flag("cephx_sign_messages", true)?,
            cephx_require_version: match config.get("cephx_require_version") {
                None => 2,
                Some(v) => v.trim().parse().map_err(|_| IdentityError::BadOption {
                    option: "cephx_require_version".into(),
                    value: v,
                })?,
            },
            mount_timeout: match config.get("client_mount_timeout") {
                None => DEFAULT_MOUNT_TIMEOUT,
                Some(v) => seconds("client_mount_timeout", v)?,
            },
            timeouts: timeouts(&config)?,
            none_fallback: opts.auth_none_fallback && methods.iter().any(|m| m == "none"),
            config,
            mons,
            cephx,
            rev1: !opts.rev0,
        })
    }

    /// What a messenger of this identity presents to daemons: cephx
    /// authorizers made from the tickets its monitor session fetched, or
    /// auth none.
    pub fn auth_provider(&self) -> Arc<dyn AuthProvider> {
        match &self.cephx {
            Some(cx) => Arc::new(CephxProvider {
                client: Some(cx.clone()),
                server: None,
            }),
            None => Arc::new(NoneProvider),
        }
    }

    /// Options for a client messenger of this identity, to talk to daemons
    /// once a [`crate::MonClient`] of it has authenticated: named
    /// `client.GLOBAL_ID` as librados names its messenger (what a daemon
    /// that checks it expects), with this identity's authentication and
    /// ceph.conf's messenger settings.
    pub fn client_options(&self, policies: PolicySet) -> Options {
        let num = self
            .cephx
            .as_ref()
            .and_then(|cx| i64::try_from(cx.global_id()).ok())
            .filter(|g| *g != 0)
            .unwrap_or(EntityName::NEW);
        let mut o = Options::new(
            EntityName::new(EntityType::CLIENT, num),
            policies,
            self.auth_provider(),
        );
        o.rev1 = self.rev1;
        o.msgr2 = self.msgr2;
        o.sign_messages = self.sign_messages;
        o.cephx_require_version = self.cephx_require_version;
        // The nonce stays Options::new's random one (librados's
        // get_random_nonce): the OSDs tell clients apart by address, and a
        // second client in the process with the same nonce would replace
        // the first one's sessions.
        o.message_types = crate::CEPH_MESSAGE_TYPES;
        o.timeouts = self.timeouts;
        o
    }

    /// The monitor client settings for this identity.
    pub fn mon_client_config(&self) -> MonClientConfig {
        let auth = match &self.cephx {
            Some(c) => MonAuth::Cephx(c.clone()),
            None => MonAuth::None,
        };
        let mut cfg = MonClientConfig::new(self.mons.clone(), auth);
        cfg.rev1 = self.rev1;
        cfg.msgr2 = self.msgr2;
        cfg.name = self.config.name.clone();
        cfg.none_fallback = self.cephx.is_some() && self.none_fallback;
        cfg.connect_timeout = self.mount_timeout;
        cfg.timeouts = self.timeouts;
        cfg
    }
}

/// A Ceph boolean option's value (`true`/`false`, `1`/`0`, `yes`/`no`).
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The entity's key: the `key` option, the `keyfile` option, or the first
/// keyring file that holds the entity (KeyRing::from_ceph_context).
fn find_key(config: &Config) -> Result<Option<CryptoKey>, IdentityError> {
    let bad = |source: String, e: &dyn std::fmt::Display| IdentityError::BadKey {
        source,
        why: e.to_string(),
    };
    if let Some(k) = config.get("key").filter(|k| !k.is_empty()) {
        return CryptoKey::from_base64(&k)
            .map(Some)
            .map_err(|e| bad("option key".into(), &e));
    }
    if let Some(f) = config.get("keyfile").filter(|k| !k.is_empty()) {
        let text = std::fs::read_to_string(&f).map_err(|e| bad(format!("keyfile {f}"), &e))?;
        return CryptoKey::from_base64(text.trim())
            .map(Some)
            .map_err(|e| bad(format!("keyfile {f}"), &e));
    }
    for path in config.keyring_paths() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let ring = Keyring::parse(&text).map_err(|e| bad(path.display().to_string(), &e))?;
        if let Some(e) = ring.get(&config.name) {
            return Ok(Some(e.key.clone()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_auth::cephx::{KeyKind, KeyringEntry};

    #[test]
    fn the_messengers_timers_come_from_ceph_conf() {
        let conf = |text: &str| {
            let name = msgr_encoding::AuthName::new(EntityType::CLIENT, "admin");
            Config::from_text(name, text, Env::default()).unwrap()
        };
        assert_eq!(timeouts(&conf("[global]\n")), Ok(Timeouts::default()));
        let t = timeouts(&conf(
            "[global]\nms connection ready timeout = 4\nms_max_backoff = 2.5\n\
             [client]\nms_path_stall_timeout = 0.5\nms_path_probe_interval = 0.25\n",
        ))
        .unwrap();
        assert_eq!(t.connect, std::time::Duration::from_secs(4));
        assert_eq!(t.backoff_max, std::time::Duration::from_millis(2500));
        assert_eq!(t.stall, std::time::Duration::from_millis(500));
        assert_eq!(t.probe, std::time::Duration::from_millis(250));
        assert_eq!(t.idle, Timeouts::default().idle);
        for bad in ["0", "-1", "soon", "inf"] {
            let e = timeouts(&conf(&format!("[global]\nms_path_stall_timeout = {bad}\n")));
            assert_eq!(
                e,
                Err(IdentityError::BadOption {
                    option: "ms_path_stall_timeout".into(),
                    value: bad.into()
                })
            );
        }
    }

    #[test]
    fn an_unknown_cluster_option_is_an_error() {
        let mut o = ClusterOpts::default();
        assert_eq!(
            o.take("--mon-host", || Ok("127.0.0.1:3300".into())),
            Ok(true)
        );
        assert_eq!(
            o.take("--rev0", || unreachable!("takes no value")),
            Ok(true)
        );
        assert!(o.rev0);
        assert_eq!(
            o.take("3", || unreachable!("a positional argument")),
            Ok(false)
        );
        let e = o
            .take("--keyrnig", || Ok("/etc/ceph/keyring".into()))
            .expect_err("a typo");
        assert!(e.contains("unknown cluster option \"--keyrnig\""), "{e}");
        assert!(e.contains("-k/--keyring"), "{e}");
    }

    /// A conf and a keyring holding client.admin in a fresh directory,
    /// under a random name, that only this user may enter (creation fails
    /// rather than reuse one someone else made first).
    fn cluster_files(auth_client_required: &str) -> (std::path::PathBuf, ClusterOpts) {
        use std::hash::{BuildHasher, Hasher};
        use std::os::unix::fs::DirBuilderExt;
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let dir = std::env::temp_dir().join(format!("msgr-identity-{random:016x}"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .expect("a new private directory");
        let mut ring = Keyring::default();
        ring.insert(
            "client.admin".parse().unwrap(),
            KeyringEntry {
                key: CryptoKey::random(KeyKind::Aes128, Default::default(), &SystemRandom),
                caps: Default::default(),
            },
        );
        let keyring = dir.join("keyring");
        std::fs::write(&keyring, ring.to_text()).unwrap();
        let conf = dir.join("ceph.conf");
        std::fs::write(
            &conf,
            format!(
                "[global]\nmon_host = v2:127.0.0.1:3300\nkeyring = {}\nauth_client_required = {auth_client_required}\n",
                keyring.display()
            ),
        )
        .unwrap();
        let mut opts = ClusterOpts::default();
        let mut v = std::iter::once(conf.display().to_string());
        opts.conf.take("-c", &mut v).unwrap();
        (dir, opts)
    }

    #[test]
    fn with_a_key_cephx_is_required_unless_falling_back_is_asked_for() {
        let (dir, mut opts) = cluster_files("cephx, none");
        let id = Identity::load(&opts).unwrap();
        assert!(id.cephx.is_some());
        assert!(
            !id.mon_client_config().none_fallback,
            "Ceph's default auth_client_required allows none; with a key we do not fall back"
        );
        opts.auth_none_fallback = true;
        assert!(
            Identity::load(&opts)
                .unwrap()
                .mon_client_config()
                .none_fallback
        );
        std::fs::remove_dir_all(dir).unwrap();

        let (dir, mut opts) = cluster_files("cephx");
        opts.auth_none_fallback = true;
        assert!(
            !Identity::load(&opts)
                .unwrap()
                .mon_client_config()
                .none_fallback,
            "not where auth_client_required forbids none"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
