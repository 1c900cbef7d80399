//! Connection modes (`CEPH_CON_MODE_*`) and how a server picks one.

use std::fmt;
use std::str::FromStr;

/// crc or secure (src/include/ceph_fs.h CEPH_CON_MODE_*).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ConMode(pub u32);

impl ConMode {
    /// `CEPH_CON_MODE_UNKNOWN`: none chosen.
    pub const UNKNOWN: ConMode = ConMode(0);
    /// `CEPH_CON_MODE_CRC`: frames checked by crc32c, in the clear.
    pub const CRC: ConMode = ConMode(1);
    /// `CEPH_CON_MODE_SECURE`: frames encrypted and authenticated (AES-128-GCM).
    pub const SECURE: ConMode = ConMode(2);

    /// The mode as Ceph's options spell it (`crc`, `secure`).
    pub fn name(self) -> &'static str {
        match self {
            ConMode::CRC => "crc",
            ConMode::SECURE => "secure",
            _ => "unknown",
        }
    }

    /// Parses a preference list like Ceph's `ms_client_mode` ("secure crc").
    pub fn parse_list(s: &str) -> Result<Vec<ConMode>, String> {
        s.split([' ', ',', ';', '\t'])
            .filter(|w| !w.is_empty())
            .map(str::parse)
            .collect()
    }
}

impl FromStr for ConMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "crc" => Ok(ConMode::CRC),
            "secure" => Ok(ConMode::SECURE),
            other => Err(format!("unknown connection mode {other:?} (crc or secure)")),
        }
    }
}

impl fmt::Display for ConMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for ConMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The server's choice (AuthRegistry::pick_mode): the first of its own
/// allowed modes, in its order, that the client also offered.
pub fn pick_mode(server_allowed: &[ConMode], client_preferred: &[ConMode]) -> Option<ConMode> {
    server_allowed
        .iter()
        .copied()
        .find(|m| client_preferred.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_order_wins() {
        let server = ConMode::parse_list("secure crc").unwrap();
        assert_eq!(
            pick_mode(&server, &[ConMode::CRC, ConMode::SECURE]),
            Some(ConMode::SECURE)
        );
        assert_eq!(pick_mode(&server, &[ConMode::CRC]), Some(ConMode::CRC));
        assert_eq!(pick_mode(&[ConMode::SECURE], &[ConMode::CRC]), None);
        assert!(ConMode::parse_list("crc bogus").is_err());
    }
}
