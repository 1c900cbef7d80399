//! Ceph's generic command-line options (src/common/ceph_argparse.cc), as
//! they appear on a command line or in `CEPH_ARGS`.

use msgr_encoding::{AuthName, EntityType};

use crate::conf::normalize_key;

/// The options that select and override configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigOptions {
    /// `-c` / `--conf`.
    pub conf: Option<String>,
    /// `-n` / `--name`, or `client.` + `--id` / `-i`.
    pub name: Option<AuthName>,
    /// `--cluster` (default `ceph`).
    pub cluster: Option<String>,
    /// Every other `--option value`, `-k`, `-m`, with normalized keys, in
    /// order (later wins).
    pub overrides: Vec<(String, String)>,
}

/// A malformed option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionsError(pub String);

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OptionsError {}

impl ConfigOptions {
    /// Parses `CEPH_ARGS`: whitespace-separated Ceph options. Anything that
    /// is not a Ceph option is an error.
    pub fn parse_ceph_args(text: &str) -> Result<ConfigOptions, OptionsError> {
        let mut opts = ConfigOptions::default();
        let mut args = text.split_whitespace().map(str::to_string);
        while let Some(arg) = args.next() {
            if !opts.take(&arg, &mut args)? {
                return Err(OptionsError(format!(
                    "CEPH_ARGS: {arg:?} is not a Ceph option"
                )));
            }
        }
        Ok(opts)
    }

    /// Consumes `arg` (and its value from `rest`) if it is a Ceph option;
    /// returns whether it was.
    pub fn take(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, OptionsError> {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = |what: &str| -> Result<String, OptionsError> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => rest
                    .next()
                    .ok_or_else(|| OptionsError(format!("{what} needs a value"))),
            }
        };
        match flag {
            "-c" | "--conf" => self.conf = Some(value(flag)?),
            "-n" | "--name" => {
                let v = value(flag)?;
                self.name = Some(
                    v.parse()
                        .map_err(|e| OptionsError(format!("{flag}: {e}")))?,
                );
            }
            "-i" | "--id" | "--user" => {
                self.name = Some(AuthName::new(EntityType::CLIENT, value(flag)?));
            }
            "--cluster" => self.cluster = Some(value(flag)?),
            "-k" => self.overrides.push(("keyring".into(), value(flag)?)),
            "-m" => self.overrides.push(("mon_host".into(), value(flag)?)),
            f if f.starts_with("--") && f.len() > 2 => {
                let key = normalize_key(&f[2..]);
                self.overrides.push((key, value(f)?));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies `later` on top of these options.
    pub fn merge(&mut self, later: &ConfigOptions) {
        if later.conf.is_some() {
            self.conf = later.conf.clone();
        }
        if later.name.is_some() {
            self.name = later.name.clone();
        }
        if later.cluster.is_some() {
            self.cluster = later.cluster.clone();
        }
        self.overrides.extend(later.overrides.iter().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceph_args_forms() {
        let o = ConfigOptions::parse_ceph_args(
            "-c /e/c.conf --id legacy -k /k --mon-host=v2:1.2.3.4:3300 --debug_ms 1 -m 10.0.0.1",
        )
        .unwrap();
        assert_eq!(o.conf.as_deref(), Some("/e/c.conf"));
        assert_eq!(o.name.as_ref().unwrap().to_string(), "client.legacy");
        assert_eq!(
            o.overrides,
            [
                ("keyring".to_string(), "/k".to_string()),
                ("mon_host".to_string(), "v2:1.2.3.4:3300".to_string()),
                ("debug_ms".to_string(), "1".to_string()),
                ("mon_host".to_string(), "10.0.0.1".to_string()),
            ]
        );
        assert!(ConfigOptions::parse_ceph_args("--name").is_err());
        assert!(ConfigOptions::parse_ceph_args("--name bogus").is_err());
        assert!(ConfigOptions::parse_ceph_args("status").is_err());
    }
}
