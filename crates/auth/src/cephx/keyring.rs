//! Keyring files (src/auth/KeyRing.cc): INI-like sections named by entity
//! (`[client.admin]`), each with `key = BASE64` and `caps TYPE = "..."`
//! lines. Comments start with `#` or `;`.

use std::collections::BTreeMap;

use msgr_encoding::AuthName;

use super::key::CryptoKey;

/// One entity's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyringEntry {
    /// The entity's secret key.
    pub key: CryptoKey,
    /// `caps mon = "allow *"` → ("mon", "allow *").
    pub caps: BTreeMap<String, String>,
}

/// A parsed keyring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyring {
    entries: BTreeMap<AuthName, KeyringEntry>,
}

impl Keyring {
    /// Parses keyring text; errors name the line.
    pub fn parse(text: &str) -> Result<Keyring, String> {
        let mut ring = Keyring::default();
        let mut current: Option<AuthName> = None;
        let mut key: Option<CryptoKey> = None;
        let mut caps = BTreeMap::new();
        let finish = |ring: &mut Keyring,
                      name: Option<AuthName>,
                      key: Option<CryptoKey>,
                      caps: BTreeMap<String, String>|
         -> Result<(), String> {
            if let Some(name) = name {
                let key = key.ok_or_else(|| format!("[{name}] has no key"))?;
                ring.entries.insert(name, KeyringEntry { key, caps });
            }
            Ok(())
        };
        for (line_no, raw) in (1usize..).zip(text.lines()) {
            let line = raw.trim();
            let at = |why: String| format!("keyring line {line_no}: {why}");
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .ok_or_else(|| at("section header without ']'".into()))?;
                finish(
                    &mut ring,
                    current.take(),
                    key.take(),
                    std::mem::take(&mut caps),
                )
                .map_err(at)?;
                current = Some(name.trim().parse().map_err(|e| at(format!("{e}")))?);
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| at("expected `key = value`".into()))?;
            if current.is_none() {
                return Err(at("a value outside any [entity] section".into()));
            }
            let k = crate::cephx::keyring::normalize(k);
            let v = unquote(v.trim());
            if k == "key" {
                key = Some(CryptoKey::from_base64(&v).map_err(at)?);
            } else if let Some(service) = k.strip_prefix("caps_") {
                if service.is_empty() {
                    return Err(at("caps without a service name".into()));
                }
                caps.insert(service.to_string(), v);
            }
            // Other fields (auid, ...) are ignored, as Ceph does for unknown ones.
        }
        finish(&mut ring, current, key, caps).map_err(|e| format!("keyring: {e}"))?;
        Ok(ring)
    }

    /// The entry of `name`, if the keyring has one.
    pub fn get(&self, name: &AuthName) -> Option<&KeyringEntry> {
        self.entries.get(name)
    }

    /// Adds or replaces the entry of `name`.
    pub fn insert(&mut self, name: AuthName, entry: KeyringEntry) {
        self.entries.insert(name, entry);
    }

    /// Every entry, by entity name.
    pub fn iter(&self) -> impl Iterator<Item = (&AuthName, &KeyringEntry)> {
        self.entries.iter()
    }

    /// The keyring text Ceph's tools write.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, e) in &self.entries {
            out.push_str(&format!("[{name}]\n\tkey = {}\n", e.key.to_base64()));
            for (svc, cap) in &e.caps {
                out.push_str(&format!("\tcaps {svc} = \"{cap}\"\n"));
            }
        }
        out
    }
}

fn normalize(key: &str) -> String {
    key.split_whitespace().collect::<Vec<_>>().join("_")
}

fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_ceph_authtool_writes() {
        let text = "[client.admin]\n\tkey = AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==\n\tcaps mds = \"allow *\"\n\tcaps mon = \"allow *\"\n[mon.]\n\tkey = AQCHMgJrQr/1LxAAkgPVUSS/0axb1Sk6/RPD8g==\n\tcaps mon = \"allow *\"\n";
        let ring = Keyring::parse(text).unwrap();
        let admin = ring.get(&AuthName::client_admin()).unwrap();
        assert_eq!(admin.caps["mon"], "allow *");
        assert_eq!(admin.caps.len(), 2);
        assert!(ring.get(&"mon.".parse().unwrap()).is_some());
        assert_eq!(Keyring::parse(&ring.to_text()).unwrap(), ring);
    }

    #[test]
    fn errors_name_the_line() {
        assert!(Keyring::parse("key = AQCH\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(Keyring::parse("[client.a]\n\tkey = zz\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(Keyring::parse("[client.a]\n\tcaps mon = \"x\"\n").is_err());
        // Found by the cephx fuzz target: `caps_ = x` named no service, and
        // its text form `caps  = "x"` did not read back.
        let no_service =
            "[client.a]\n\tkey = AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==\n\tcaps_ = \"x\"\n";
        assert!(Keyring::parse(no_service).is_err());
    }
}
