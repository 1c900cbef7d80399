//! Setting up a client as librados's C API does: create a handle for an
//! entity, read a configuration file, set options, connect
//! (`rados_create`, `rados_conf_read_file`, `rados_conf_set`,
//! `rados_conf_parse_argv`, `rados_connect`).

use std::path::Path;
use std::time::Duration;

use msgr_config::ConfFile;
use msgr_monc::identity::{ClusterOpts, Identity};
use msgr_transport::tcp::Tcp;
use msgr_transport::Transport;

use crate::client::Rados;
use crate::error::RadosError;
use crate::objecter::Limits;

/// How to reach a cluster and who to be there, built as a librados
/// program builds its `rados_t` before `rados_connect`.
///
/// Options are Ceph's (`mon_host`, `keyring`, `client_mount_timeout`,
/// `rados_osd_op_timeout`, `objecter_inflight_ops`, `ms_client_mode`, ...),
/// looked up as Ceph does: options set here, then the file's `[client.ID]`,
/// `[client]` and `[global]` sections. `CEPH_ARGS` and `CEPH_CONF` are read
/// at [`connect`](RadosConfig::connect), as `rados_conf_parse_env` and a
/// `rados_conf_read_file(NULL)` would.
///
/// ```no_run
/// use msgr_rados::RadosConfig;
///
/// # async fn run() -> Result<(), msgr_rados::RadosError> {
/// let rados = RadosConfig::with_id("admin")
///     .conf_read_file("/etc/ceph/ceph.conf")?
///     .conf_set("rados_osd_op_timeout", "30")
///     .connect()
///     .await?;
/// let io = rados.ioctx("rbd")?;
/// io.write_full(b"greeting", "hello".into()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct RadosConfig {
    opts: ClusterOpts,
    limits: Option<Limits>,
}

impl RadosConfig {
    /// `client.admin`, as `rados_create(&cluster, NULL)`.
    pub fn new() -> RadosConfig {
        RadosConfig::default()
    }

    /// `client.ID`, as `rados_create(&cluster, "ID")`.
    pub fn with_id(id: &str) -> RadosConfig {
        let mut c = RadosConfig::default();
        c.opts.conf.name = Some(msgr_encoding::AuthName::new(
            msgr_encoding::EntityType::CLIENT,
            id,
        ));
        c
    }

    /// Any entity by its full name (`client.foo`, `osd.3`), as
    /// `rados_create2`.
    pub fn with_name(name: &str) -> Result<RadosConfig, RadosError> {
        let mut c = RadosConfig::default();
        c.opts.conf.name = Some(name.parse().map_err(|e| {
            RadosError::Config(format!(
                "{name:?} is not an entity name (TYPE.ID, e.g. client.admin): {e}"
            ))
        })?);
        Ok(c)
    }

    /// Reads this configuration file (`rados_conf_read_file`); it must
    /// exist and parse, or the error says where it does not.
    pub fn conf_read_file(mut self, path: impl AsRef<Path>) -> Result<RadosConfig, RadosError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| RadosError::Config(format!("{}: {e}", path.display())))?;
        ConfFile::parse(&text)
            .map_err(|e| RadosError::Config(format!("{}: {e}", path.display())))?;
        self.opts.conf.conf = Some(path.display().to_string());
        Ok(self)
    }

    /// The configuration file read or named, if any.
    pub fn conf_file(&self) -> Option<&str> {
        self.opts.conf.conf.as_deref()
    }

    /// Sets option `key` (`mon_host`, `keyring`, `key`, ...), over what the
    /// file says (`rados_conf_set`). Dashes and underscores are the same,
    /// as in Ceph.
    pub fn conf_set(mut self, key: &str, value: &str) -> RadosConfig {
        let key = msgr_config::normalize_key(key);
        self.opts.conf.overrides.push((key, value.to_string()));
        self
    }

    /// Takes Ceph's options out of a command line (`-c`, `--id`, `-m`,
    /// `-k`, `--keyring`, `--OPTION value`, `--OPTION=value`) and returns
    /// the arguments that are not Ceph's, in order
    /// (`rados_conf_parse_argv_remainder`).
    ///
    /// ```
    /// use msgr_rados::RadosConfig;
    ///
    /// let args = ["--id", "backup", "put", "obj", "-m", "10.0.0.1:3300", "file"];
    /// let (config, rest) = RadosConfig::new().conf_parse_args(args)?;
    /// assert_eq!(rest, ["put", "obj", "file"]);
    /// // An option Ceph does not have, or one lacking its value, is an error.
    /// assert!(RadosConfig::new().conf_parse_args(["--id"]).is_err());
    /// # Ok::<(), msgr_rados::RadosError>(())
    /// ```
    pub fn conf_parse_args<I, S>(
        mut self,
        args: I,
    ) -> Result<(RadosConfig, Vec<String>), RadosError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut rest = Vec::new();
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let taken = self
                .opts
                .conf
                .take(&arg, &mut args)
                .map_err(|e| RadosError::Config(e.to_string()))?;
            if !taken {
                rest.push(arg);
            }
        }
        Ok((self, rest))
    }

    /// The value of option `key` as it stands, as `rados_conf_get` gives
    /// it: set here, in `CEPH_ARGS`, or in the file's `[client.ID]`,
    /// `[client]` or `[global]` sections, else librados's default;
    /// metavariables (`$cluster`, `$name`, ...) expanded, printed as its
    /// type prints (`2.5` as `2.500000` for a float). None if Ceph has no
    /// such option ([`msgr_config::schema`]).
    pub fn conf_get(&self, key: &str) -> Result<Option<String>, RadosError> {
        let cfg = msgr_config::Config::load(&self.opts.conf, &msgr_config::Env::from_process())
            .map_err(|e| RadosError::Config(e.to_string()))?;
        Ok(cfg.get_as_librados(key))
    }

    /// How long [`connect`](RadosConfig::connect) may take
    /// (`client_mount_timeout`; 30 s unless set).
    pub fn connect_timeout(self, timeout: Duration) -> RadosConfig {
        self.conf_set("client_mount_timeout", &timeout.as_secs_f64().to_string())
    }

    /// The objecter's in-flight limits, in place of `objecter_inflight_ops`
    /// and `objecter_inflight_op_bytes`.
    pub fn limits(mut self, limits: Limits) -> RadosConfig {
        self.limits = Some(limits);
        self
    }

    /// Resolves the configuration: reads the file, `CEPH_ARGS` and the
    /// keyring, as [`connect`](RadosConfig::connect) does first.
    pub fn identity(&self) -> Result<Identity, RadosError> {
        Identity::load(&self.opts).map_err(|e| RadosError::Config(e.to_string()))
    }

    /// Connects over TCP (`rados_connect`).
    pub async fn connect(&self) -> Result<Rados<Tcp>, RadosError> {
        self.connect_over(Tcp::default()).await
    }

    /// Connects over `transport`.
    pub async fn connect_over<T: Transport>(&self, transport: T) -> Result<Rados<T>, RadosError> {
        let id = self.identity()?;
        let limits = match self.limits {
            Some(l) => l,
            None => limits_of(&id)?,
        };
        Rados::connect_over(transport, &id, limits).await
    }
}

/// `objecter_inflight_ops` and `objecter_inflight_op_bytes`, or Ceph's
/// defaults.
fn limits_of(id: &Identity) -> Result<Limits, RadosError> {
    let mut l = Limits::default();
    if let Some(v) = id.config.get("objecter_inflight_ops") {
        l.ops = parse_option("objecter_inflight_ops", &v)?;
    }
    if let Some(v) = id.config.get("objecter_inflight_op_bytes") {
        l.bytes = parse_option("objecter_inflight_op_bytes", &v)?;
    }
    Ok(l)
}

pub(crate) fn parse_option<N: std::str::FromStr>(option: &str, v: &str) -> Result<N, RadosError> {
    v.trim()
        .parse()
        .map_err(|_| RadosError::Config(format!("{option}: {v:?} is not a number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::op_timeout;

    #[test]
    fn ceph_options_are_taken_out_of_a_command_line() {
        let (c, rest) = RadosConfig::new()
            .conf_parse_args([
                "put",
                "--id",
                "foo",
                "obj",
                "-m",
                "127.0.0.1:3300",
                "--rados-osd-op-timeout=5",
                "file",
            ])
            .unwrap();
        assert_eq!(rest, ["put", "obj", "file"]);
        assert_eq!(c.opts.conf.name.unwrap().to_string(), "client.foo");
        assert!(c
            .opts
            .conf
            .overrides
            .contains(&("mon_host".into(), "127.0.0.1:3300".into())));
        assert!(c
            .opts
            .conf
            .overrides
            .contains(&("rados_osd_op_timeout".into(), "5".into())));
    }

    #[test]
    fn a_missing_file_and_a_bad_name_say_so() {
        let e = RadosConfig::new()
            .conf_read_file("/nonexistent/ceph.conf")
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ceph.conf"), "{e}");
        let e = RadosConfig::with_name("admin").unwrap_err();
        assert!(e.to_string().contains("TYPE.ID"), "{e}");
    }

    #[test]
    fn options_set_reach_the_identity() {
        let dir = std::env::temp_dir().join(format!("msgr-rados-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("ceph.conf");
        std::fs::write(&conf, "[global]\nmon_host = 127.0.0.1:3300\nauth_client_required = none\n[client]\nobjecter_inflight_ops = 7\n").unwrap();
        let c = RadosConfig::new()
            .conf_read_file(&conf)
            .unwrap()
            .conf_set("rados-osd-op-timeout", "2.5")
            .connect_timeout(Duration::from_secs(4));
        let id = c.identity().unwrap();
        assert_eq!(id.mount_timeout, Duration::from_secs(4));
        assert_eq!(op_timeout(&id).unwrap(), Some(Duration::from_millis(2500)));
        assert_eq!(limits_of(&id).unwrap().ops, 7);
        assert_eq!(
            c.conf_get("objecter-inflight-ops").unwrap().as_deref(),
            Some("7")
        );
        assert_eq!(
            c.conf_get("rados_osd_op_timeout").unwrap().as_deref(),
            Some("2.5"),
            "a value librados refuses (seconds are whole) is given as it is"
        );
        assert_eq!(
            c.conf_get("rados_mon_op_timeout").unwrap().as_deref(),
            Some("0"),
            "librados's default"
        );
        assert_eq!(c.conf_get("no_such_option").unwrap(), None);
        let bad = c.clone().conf_set("objecter_inflight_ops", "many");
        let e = limits_of(&bad.identity().unwrap()).unwrap_err();
        assert!(e.to_string().contains("objecter_inflight_ops"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
