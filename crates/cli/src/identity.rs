//! Who the tool is on a cluster, read the way the `ceph` CLI reads it:
//! `-c`/`--conf`, `-n`/`--name`/`--id`, `-k`/`--keyring`, `-m`/`--mon-host`,
//! `--cluster`, CEPH_ARGS and CEPH_CONF (msgr-config), then the key from the
//! `key` or `keyfile` option or the first keyring that holds the entity.

use std::sync::Arc;

use msgr_auth::cephx::{CephxClient, CryptoKey, Keyring};
use msgr_auth::{ConMode, SystemRandom};
use msgr_config::{Config, ConfigOptions, Env};
use msgr_encoding::EntityAddrvec;
use msgr_monc::{MonAuth, MonClientConfig};

/// The options a cluster command takes, before resolution.
#[derive(Debug, Clone, Default)]
pub struct ClusterOpts {
    pub conf: ConfigOptions,
    /// `--mode crc|secure`: both monitor and service connections.
    pub mode: Option<ConMode>,
    /// `--rev0`: offer msgr2.0 only.
    pub rev0: bool,
}

impl ClusterOpts {
    /// Takes the option `flag` (`-c`, `--conf`, ...) if it is one of ours,
    /// reading its value from `parser`.
    pub fn take(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        let mut value = || crate::common::option_value(parser);
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
            "--mode" => self.mode = Some(value()?.parse()?),
            "--rev0" => self.rev0 = true,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A resolved identity: configuration, monitors, credentials.
pub struct Identity {
    pub config: Config,
    /// auth_client_required allows none as well.
    pub none_allowed: bool,
    pub mons: Vec<EntityAddrvec>,
    /// `None` when auth none is in use.
    pub cephx: Option<Arc<CephxClient>>,
    pub rev1: bool,
}

impl Identity {
    pub fn load(opts: &ClusterOpts) -> Result<Identity, String> {
        let config = Config::load(&opts.conf, &Env::from_process()).map_err(|e| e.to_string())?;
        let mons = config.mon_host().map_err(|e| e.to_string())?;
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
                let modes = |option: &str| -> Result<Vec<ConMode>, String> {
                    match opts.mode {
                        Some(m) => Ok(vec![m]),
                        None => ConMode::parse_list(&config.get(option).unwrap_or_default()),
                    }
                };
                c.mon_modes = modes("ms_mon_client_mode")?;
                c.service_modes = modes("ms_client_mode")?;
                Some(Arc::new(c))
            }
            _ if methods.iter().any(|m| m == "none") => None,
            _ => {
                return Err(format!(
                    "no key for {} (looked in {}); auth_client_required is {:?}",
                    config.name,
                    config
                        .keyring_paths()
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    methods.join(",")
                ))
            }
        };
        Ok(Identity {
            none_allowed: methods.iter().any(|m| m == "none"),
            config,
            mons,
            cephx,
            rev1: !opts.rev0,
        })
    }

    /// The monitor client settings for this identity.
    pub fn mon_client_config(&self) -> MonClientConfig {
        let auth = match &self.cephx {
            Some(c) => MonAuth::Cephx(c.clone()),
            None => MonAuth::None,
        };
        let mut cfg = MonClientConfig::new(self.mons.clone(), auth);
        cfg.rev1 = self.rev1;
        cfg.none_fallback = self.none_allowed;
        cfg
    }
}

/// The entity's key: the `key` option, the `keyfile` option, or the first
/// keyring file that holds the entity (KeyRing::from_ceph_context).
fn find_key(config: &Config) -> Result<Option<CryptoKey>, String> {
    if let Some(k) = config.get("key").filter(|k| !k.is_empty()) {
        return CryptoKey::from_base64(&k)
            .map(Some)
            .map_err(|e| format!("option key: {e}"));
    }
    if let Some(f) = config.get("keyfile").filter(|k| !k.is_empty()) {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("keyfile {f}: {e}"))?;
        return CryptoKey::from_base64(text.trim())
            .map(Some)
            .map_err(|e| format!("keyfile {f}: {e}"));
    }
    for path in config.keyring_paths() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let ring = Keyring::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(e) = ring.get(&config.name) {
            return Ok(Some(e.key.clone()));
        }
    }
    Ok(None)
}
