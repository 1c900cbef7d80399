//! Ceph configuration, read the way the `ceph` CLI reads it
//! (src/common/config.cc, ConfUtils.cc, ceph_argparse.cc):
//!
//! - options from `CEPH_ARGS`, then the command line (later wins): `-c` /
//!   `--conf`, `-n` / `--name`, `--id` / `-i`, `-k` / `--keyring`, `-m` /
//!   `--mon-host`, `--cluster`, and any `--option value` / `--option=value`;
//! - the configuration file: `-c`, else `CEPH_CONF`, else the first of
//!   `/etc/ceph/$cluster.conf`, `~/.ceph/$cluster.conf`, `./$cluster.conf`
//!   that exists (none is fine: defaults apply);
//! - a value is looked up in the command-line options, then the sections
//!   `[TYPE.ID]`, `[TYPE]`, `[global]`, then built-in defaults; metavariables
//!   (`$cluster`, `$type`, `$id`, `$name`, `$host`, `$home`) are expanded.
//!
//! Everything but [`Config::load`] is pure: parsing and lookups take text
//! and an [`Env`], so they are testable without files.
// ceph.conf and CEPH_ARGS come from this host's administrator, not from a
// peer; their parser is fuzzed (fuzz/fuzz_targets/config.rs) for panics.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod conf;
mod mon_host;
mod options;
pub mod schema;

use std::path::{Path, PathBuf};

use msgr_encoding::{AuthName, EntityAddrvec};

pub use conf::{normalize_key, ConfFile, ConfParseError};
pub use mon_host::{parse_mon_host, MON_PORT_V1, MON_PORT_V2};
pub use options::{ConfigOptions, OptionsError};

/// Why a configuration could not be loaded.
#[derive(Debug)]
pub enum ConfigError {
    /// A command-line or CEPH_ARGS option is malformed.
    Options(OptionsError),
    /// A file named with `-c` or CEPH_CONF could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// The configuration file is not valid.
    Parse {
        /// The file.
        path: PathBuf,
        /// The line and what is wrong with it.
        error: ConfParseError,
    },
    /// An option's value is not valid.
    BadValue {
        /// The option.
        key: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A required option is not set.
    Missing {
        /// The option.
        key: &'static str,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Options(e) => write!(f, "{e}"),
            ConfigError::Read { path, error } => write!(f, "{}: {error}", path.display()),
            ConfigError::Parse { path, error } => write!(f, "{}: {error}", path.display()),
            ConfigError::BadValue { key, value, reason } => {
                write!(f, "option {key} = {value:?}: {reason}")
            }
            ConfigError::Missing { key } => write!(
                f,
                "{key} is not set (no configuration file found, or it does not set it; use -c, -m or CEPH_ARGS)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<OptionsError> for ConfigError {
    fn from(e: OptionsError) -> Self {
        ConfigError::Options(e)
    }
}

/// What of the process environment configuration depends on.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `CEPH_CONF`: the configuration file to read, when set.
    pub ceph_conf: Option<String>,
    /// `CEPH_ARGS`: options read before the command line's.
    pub ceph_args: Option<String>,
    /// `HOME`, for `$home` in paths (the `$home/.ceph/$cluster.conf` search).
    pub home: Option<String>,
    /// The host name, for `$host` in option values.
    pub host: String,
}

impl Env {
    /// This process's environment.
    pub fn from_process() -> Env {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".to_string());
        Env {
            ceph_conf: std::env::var("CEPH_CONF").ok().filter(|s| !s.is_empty()),
            ceph_args: std::env::var("CEPH_ARGS").ok().filter(|s| !s.is_empty()),
            home: std::env::var("HOME").ok(),
            host,
        }
    }
}

/// Built-in defaults of the options this project reads (src/common/options).
const DEFAULTS: &[(&str, &str)] = &[
    (
        "keyring",
        "/etc/ceph/$cluster.$name.keyring,/etc/ceph/$cluster.keyring,/etc/ceph/keyring,/etc/ceph/keyring.bin",
    ),
    ("ms_mon_client_mode", "secure crc"),
    ("ms_client_mode", "crc secure"),
    ("ms_service_mode", "crc secure"),
    ("ms_mon_service_mode", "secure crc"),
    ("auth_client_required", "cephx, none"),
    ("auth_supported", ""),
];

/// A resolved configuration for one entity.
#[derive(Debug, Clone)]
pub struct Config {
    /// The entity the configuration is for (`client.admin`), whose sections apply.
    pub name: AuthName,
    /// The cluster's name (`ceph`), for `$cluster` in paths.
    pub cluster: String,
    /// The file read, if any.
    pub path: Option<PathBuf>,
    file: ConfFile,
    overrides: Vec<(String, String)>,
    env: Env,
}

impl Config {
    /// Resolves `opts` (the command line's options) with CEPH_ARGS and the
    /// configuration file.
    pub fn load(opts: &ConfigOptions, env: &Env) -> Result<Config, ConfigError> {
        let mut merged = match &env.ceph_args {
            Some(args) => ConfigOptions::parse_ceph_args(args)?,
            None => ConfigOptions::default(),
        };
        merged.merge(opts);
        let name = merged.name.clone().unwrap_or_else(AuthName::client_admin);
        let cluster = merged.cluster.clone().unwrap_or_else(|| "ceph".to_string());
        let mut cfg = Config {
            name,
            cluster,
            path: None,
            file: ConfFile::default(),
            overrides: merged.overrides.clone(),
            env: env.clone(),
        };
        let explicit = merged.conf.clone().or_else(|| env.ceph_conf.clone());
        let path = match explicit {
            Some(p) => Some(PathBuf::from(p)),
            None => [
                "/etc/ceph/$cluster.conf",
                "$home/.ceph/$cluster.conf",
                "$cluster.conf",
            ]
            .iter()
            .map(|p| PathBuf::from(cfg.expand(p)))
            .find(|p| p.is_file()),
        };
        if let Some(path) = path {
            let text = std::fs::read_to_string(&path).map_err(|error| ConfigError::Read {
                path: path.clone(),
                error,
            })?;
            cfg.file = ConfFile::parse(&text).map_err(|error| ConfigError::Parse {
                path: path.clone(),
                error,
            })?;
            cfg.path = Some(path);
        }
        Ok(cfg)
    }

    /// A configuration from text, for tests and tools.
    pub fn from_text(name: AuthName, text: &str, env: Env) -> Result<Config, ConfParseError> {
        Ok(Config {
            name,
            cluster: "ceph".to_string(),
            path: None,
            file: ConfFile::parse(text)?,
            overrides: Vec::new(),
            env,
        })
    }

    /// Sets an option as the command line would.
    pub fn set_override(&mut self, key: &str, value: &str) {
        let key = normalize_key(key);
        self.overrides.retain(|(k, _)| *k != key);
        self.overrides.push((key, value.to_string()));
    }

    /// The raw value of `key`: command line, `[TYPE.ID]`, `[TYPE]`,
    /// `[global]`, default.
    pub fn get_raw(&self, key: &str) -> Option<String> {
        let key = normalize_key(key);
        if let Some(v) = self.get_set(&key) {
            return Some(v);
        }
        DEFAULTS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    }

    /// The value of `key` as librados's `rados_conf_get` gives it: set
    /// on the command line, in the file's sections, else the library
    /// default of Ceph's schema ([`schema`]); metavariables expanded and
    /// printed as its type prints. None if Ceph has no such option.
    pub fn get_as_librados(&self, key: &str) -> Option<String> {
        let o = schema::lookup(key)?;
        let raw = self
            .get_set(o.name)
            .unwrap_or_else(|| o.default.to_string());
        let v = self.expand(&raw);
        Some(o.kind.normalize(&v).unwrap_or(v))
    }

    /// The value of `key` set on the command line or in the file, not a
    /// default.
    fn get_set(&self, key: &str) -> Option<String> {
        if let Some((_, v)) = self.overrides.iter().rev().find(|(k, _)| k == key) {
            return Some(v.clone());
        }
        let full = self.name.to_string();
        let kind = self.name.kind.to_string();
        [full.as_str(), kind.as_str(), "global"]
            .iter()
            .find_map(|section| self.file.get(section, key))
            .map(str::to_string)
    }

    /// The value of `key` with metavariables expanded.
    pub fn get(&self, key: &str) -> Option<String> {
        self.get_raw(key).map(|v| self.expand(&v))
    }

    /// Expands `$cluster`, `$type`, `$id`, `$name`, `$host`, `$home` (also
    /// as `${var}`); unknown variables are left as they are.
    pub fn expand(&self, value: &str) -> String {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (var, len) = match after.strip_prefix('{') {
                Some(b) => match b.find('}') {
                    Some(end) => (&b[..end], end + 2),
                    None => ("", 0),
                },
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            match self.var(var) {
                Some(v) if len > 0 => {
                    out.push_str(&v);
                    rest = &after[len..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    fn var(&self, var: &str) -> Option<String> {
        Some(match var {
            "cluster" => self.cluster.clone(),
            "type" => self.name.kind.to_string(),
            "id" => self.name.id.clone(),
            "name" => self.name.to_string(),
            "host" => self.env.host.clone(),
            "home" => self.env.home.clone().unwrap_or_default(),
            _ => return None,
        })
    }

    /// The monitors (`mon_host`), one address vector each.
    pub fn mon_host(&self) -> Result<Vec<EntityAddrvec>, ConfigError> {
        let value = self
            .get("mon_host")
            .filter(|v| !v.trim().is_empty())
            .ok_or(ConfigError::Missing { key: "mon_host" })?;
        parse_mon_host(&value).map_err(|reason| ConfigError::BadValue {
            key: "mon_host".to_string(),
            value,
            reason,
        })
    }

    /// The keyring files to try, in order (the `keyring` option, split on
    /// commas, semicolons and spaces).
    pub fn keyring_paths(&self) -> Vec<PathBuf> {
        self.get("keyring")
            .unwrap_or_default()
            .split([',', ';', ' ', '\t'])
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect()
    }

    /// A list option (`ms_mon_client_mode = secure crc`), split on commas,
    /// semicolons and whitespace.
    pub fn get_list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .unwrap_or_default()
            .split([',', ';', ' ', '\t'])
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The directory of the configuration file, if one was read.
    pub fn dir(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            host: "node1".into(),
            home: Some("/root".into()),
            ..Env::default()
        }
    }

    #[test]
    fn sections_in_order_of_precedence() {
        let name: AuthName = "client.legacy".parse().unwrap();
        let mut c = Config::from_text(
            name,
            "[global]\na = g\nb = g\nc = g\n[client]\nb = c\nc = c\n[client.legacy]\nc = cl\n",
            env(),
        )
        .unwrap();
        assert_eq!(c.get("a").as_deref(), Some("g"));
        assert_eq!(c.get("b").as_deref(), Some("c"));
        assert_eq!(c.get("c").as_deref(), Some("cl"));
        c.set_override("c", "cli");
        assert_eq!(c.get("c").as_deref(), Some("cli"));
        assert_eq!(c.get("nope"), None);
        assert_eq!(c.get("ms_mon_client_mode").as_deref(), Some("secure crc"));
    }

    #[test]
    fn metavariables_and_keyring_paths() {
        let c = Config::from_text(
            "client.admin".parse().unwrap(),
            "[global]\nkeyring = /k/$cluster.$name.keyring, ${home}/x\nlog = $type-$id@$host $nope $\n",
            env(),
        )
        .unwrap();
        assert_eq!(
            c.keyring_paths(),
            [
                PathBuf::from("/k/ceph.client.admin.keyring"),
                PathBuf::from("/root/x")
            ]
        );
        assert_eq!(c.get("log").unwrap(), "client-admin@node1 $nope $");
        let d = Config::from_text("client.admin".parse().unwrap(), "", env()).unwrap();
        assert_eq!(
            d.keyring_paths()[0],
            PathBuf::from("/etc/ceph/ceph.client.admin.keyring")
        );
    }

    #[test]
    fn mon_host_from_the_file() {
        let c = Config::from_text(
            "client.admin".parse().unwrap(),
            "[global]\nmon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]\n",
            env(),
        )
        .unwrap();
        assert_eq!(c.mon_host().unwrap().len(), 1);
        let none = Config::from_text("client.admin".parse().unwrap(), "", env()).unwrap();
        assert!(matches!(
            none.mon_host(),
            Err(ConfigError::Missing { key: "mon_host" })
        ));
    }

    #[test]
    fn load_reads_ceph_args_and_the_file() {
        let dir = std::env::temp_dir().join(format!("msgr-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("ceph.conf");
        std::fs::write(
            &conf,
            "[global]\nmon_host = 10.1.1.1\n[client.x]\nkeyring = /k\n",
        )
        .unwrap();
        let e = Env {
            ceph_args: Some(format!(
                "-c {} --name client.x --ms-mon-client-mode crc",
                conf.display()
            )),
            ..env()
        };
        let mut opts = ConfigOptions::default();
        opts.overrides
            .push(("ms_mon_client_mode".into(), "secure".into()));
        let c = Config::load(&opts, &e).unwrap();
        assert_eq!(c.name.to_string(), "client.x");
        assert_eq!(c.keyring_paths(), [PathBuf::from("/k")]);
        // The command line beats CEPH_ARGS.
        assert_eq!(c.get("ms_mon_client_mode").as_deref(), Some("secure"));
        assert_eq!(
            c.mon_host().unwrap()[0].to_string(),
            "[v2:10.1.1.1:3300/0,v1:10.1.1.1:6789/0]"
        );
        let missing = Env {
            ceph_conf: Some(dir.join("absent.conf").display().to_string()),
            ..env()
        };
        assert!(matches!(
            Config::load(&ConfigOptions::default(), &missing),
            Err(ConfigError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
