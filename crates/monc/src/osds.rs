//! Where the OSDs listen, as the monitors' OSD map says (`osd dump`):
//! what a client needs to dial an OSD by its id, or to complete an
//! address given without its nonce (a daemon refuses a client that names
//! it with another nonce than its own).

use std::time::Duration;

use bytes::Bytes;
use msgr_admin::json::{self, Value};
use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec};
use msgr_transport::Transport;

use crate::error::MonError;
use crate::MonClient;

/// One OSD's addresses in the OSD map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsdAddrs {
    /// The OSD's id (osd.N).
    pub id: u64,
    /// Whether the map has it up.
    pub up: bool,
    /// Where clients reach it.
    pub public: EntityAddrvec,
    /// Where its peers replicate to it.
    pub cluster: EntityAddrvec,
    /// Its back (cluster-side) heartbeat addresses.
    pub heartbeat_back: EntityAddrvec,
    /// Its front (public-side) heartbeat addresses.
    pub heartbeat_front: EntityAddrvec,
}

impl OsdAddrs {
    /// Every address vector it has, public first.
    pub fn all(&self) -> [&EntityAddrvec; 4] {
        [
            &self.public,
            &self.cluster,
            &self.heartbeat_back,
            &self.heartbeat_front,
        ]
    }
}

impl<T: Transport> MonClient<T> {
    /// Every OSD of the current OSD map, from `osd dump`.
    pub async fn osds(&self, timeout: Duration) -> Result<Vec<OsdAddrs>, MonError> {
        const CMD: &str = r#"{"prefix": "osd dump", "format": "json"}"#;
        let r = self.command(CMD, Bytes::new(), timeout).await?;
        if r.r < 0 {
            return Err(MonError::Command {
                cmd: CMD.into(),
                r: r.r,
                rs: r.rs,
            });
        }
        let text = String::from_utf8_lossy(&r.output);
        parse_osd_dump(&text).map_err(|e| MonError::BadReply(format!("osd dump: {e}")))
    }

    /// Where clients reach `osd.{id}`.
    pub async fn osd_addrs(&self, id: u64, timeout: Duration) -> Result<EntityAddrvec, MonError> {
        let osds = self.osds(timeout).await?;
        match osds.into_iter().find(|o| o.id == id) {
            Some(o) if !o.public.0.is_empty() => Ok(o.public),
            _ => Err(MonError::NoSuchOsd(id)),
        }
    }

    /// `given` completed with the OSD map's nonces: the address vector of
    /// the OSD that listens on one of its addresses (`None` if no OSD
    /// does).
    pub async fn osd_at(
        &self,
        given: &EntityAddrvec,
        timeout: Duration,
    ) -> Result<Option<EntityAddrvec>, MonError> {
        let osds = self.osds(timeout).await?;
        let at = |v: &EntityAddrvec| v.0.iter().any(|x| given.0.iter().any(|y| x.addr == y.addr));
        let found = osds.iter().flat_map(|o| o.all()).find(|v| at(v));
        Ok(found.cloned())
    }
}

/// The OSDs of `osd dump`'s JSON.
pub fn parse_osd_dump(text: &str) -> Result<Vec<OsdAddrs>, String> {
    let dump = json::parse(text)?;
    let osds = dump
        .get("osds")
        .and_then(Value::as_array)
        .ok_or("no \"osds\" list in the OSD map")?;
    osds.iter()
        .map(|osd| {
            let id = osd
                .get("osd")
                .and_then(Value::as_u64)
                .ok_or("an OSD without its id")?;
            Ok(OsdAddrs {
                id,
                up: osd.get("up").and_then(Value::as_u64) == Some(1),
                public: addrvec_of(osd.get("public_addrs")),
                cluster: addrvec_of(osd.get("cluster_addrs")),
                heartbeat_back: addrvec_of(osd.get("heartbeat_back_addrs")),
                heartbeat_front: addrvec_of(osd.get("heartbeat_front_addrs")),
            })
        })
        .collect()
}

/// An `addrvec` of Ceph's JSON (`{"addrvec": [{"type", "addr", "nonce"}]}`);
/// entries of other types (`any`, `none`) are left out.
fn addrvec_of(v: Option<&Value>) -> EntityAddrvec {
    let mut out = Vec::new();
    for a in v
        .and_then(|v| v.get("addrvec"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = match a.get("type").and_then(Value::as_str) {
            Some("v2") => EntityAddrType::MSGR2,
            Some("v1") => EntityAddrType::LEGACY,
            _ => continue,
        };
        let (Some(addr), Some(nonce)) = (
            a.get("addr")
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok()),
            a.get("nonce")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
        ) else {
            continue;
        };
        out.push(EntityAddr::new(kind, addr, nonce));
    }
    EntityAddrvec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trimmed from `ceph osd dump --format json` of the Ceph 20 test
    /// cluster (one OSD up; a second destroyed, with no addresses).
    const DUMP: &str = r#"{"epoch": 9, "osds": [
      {"osd": 0, "up": 1, "in": 1,
       "public_addrs": {"addrvec": [{"type": "v2", "addr": "127.0.0.1:6900", "nonce": 1207},
                                    {"type": "v1", "addr": "127.0.0.1:6901", "nonce": 1207}]},
       "cluster_addrs": {"addrvec": [{"type": "v2", "addr": "127.0.0.1:6902", "nonce": 1207}]},
       "heartbeat_back_addrs": {"addrvec": []},
       "heartbeat_front_addrs": {"addrvec": [{"type": "v2", "addr": "127.0.0.1:6904", "nonce": 1207}]}},
      {"osd": 1, "up": 0, "in": 0, "public_addrs": {"addrvec": []}}]}"#;

    #[test]
    fn an_osd_dump_gives_each_osds_addresses() {
        let osds = parse_osd_dump(DUMP).unwrap();
        assert_eq!(osds.len(), 2);
        assert_eq!(
            osds[0].public,
            "[v2:127.0.0.1:6900/1207,v1:127.0.0.1:6901/1207]"
                .parse()
                .unwrap()
        );
        assert!(osds[0].up && !osds[1].up);
        assert_eq!(osds[0].heartbeat_front.0[0].nonce, 1207);
        assert!(osds[1].public.0.is_empty());
    }

    #[test]
    fn what_is_not_an_osd_dump_is_an_error() {
        assert!(parse_osd_dump("{}").unwrap_err().contains("osds"));
        assert!(parse_osd_dump(r#"{"osds": [{"up": 1}]}"#).is_err());
        assert!(parse_osd_dump("[").is_err());
    }
}
