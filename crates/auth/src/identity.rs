//! Who a peer authenticated as: what Ceph's AuthServer::handle_auth_request
//! leaves in a connection's `peer_name`, `peer_global_id` and
//! `peer_caps_info`, and the rules that bind a peer's other claims (its
//! HELLO type, its ident's gid, the sessions it may take over) to it.

use bytes::Bytes;
use msgr_encoding::{AuthName, EntityType};

/// `AuthCapsInfo`: what the peer may do, as its ticket (or key entry) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caps {
    /// `allow_all`: auth none grants everything.
    pub allow_all: bool,
    /// The caps as the ticket carries them: for a service ticket, the
    /// encoded caps string of that service (`allow *`, `allow rwx pool=x`).
    pub caps: Bytes,
}

impl Caps {
    /// The caps string, when `caps` holds one encoded string (Ceph's
    /// service tickets do).
    pub fn text(&self) -> Option<String> {
        use msgr_encoding::Decode;
        String::decode_exact(&self.caps, "caps").ok()
    }
}

/// Who a peer is, as its authentication established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The entity it authenticated as (`client.admin`, `osd.3`).
    pub name: AuthName,
    /// Its global id (the monitor's number for its auth session).
    pub global_id: u64,
    /// What it may do, as its key's caps say.
    pub caps: Caps,
    /// The method proved it (cephx), or the peer only said so (auth none,
    /// which authenticates nobody).
    pub proven: bool,
}

impl Identity {
    /// Whether the `entity_name_t` number a peer announces (CLIENT_IDENT's
    /// gid) belongs to this identity. Ceph's entities number themselves by
    /// their global id (clients, MDSs, managers: `entity_name_t::CLIENT(
    /// global_id)` after authenticating), except OSDs, which use their id
    /// (`osd.3` is `entity_name_t::OSD(3)`), and monitors, which use their
    /// rank: a monitor authenticates with the cluster's `mon.` key, whose
    /// holder can mint any ticket, so binding its rank adds nothing.
    pub fn owns_gid(&self, gid: u64) -> bool {
        gid == self.global_id
            || self.name.id.parse::<u64>().is_ok_and(|id| id == gid)
            || self.name.kind == EntityType::MON
    }

    /// Whether a peer saying HELLO as `hello` may be this identity: the
    /// entity type must be the one authenticated (the authorize handler
    /// Ceph verifies a ticket with is chosen by the HELLO type).
    pub fn matches_type(&self, hello: EntityType) -> bool {
        self.name.kind == hello
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (global id {}", self.name, self.global_id)?;
        if !self.proven {
            f.write_str(", unauthenticated")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str, global_id: u64) -> Identity {
        Identity {
            name: name.parse().unwrap(),
            global_id,
            caps: Caps::default(),
            proven: true,
        }
    }

    #[test]
    fn gids_bind_to_the_name_or_the_global_id() {
        let client = id("client.admin", 4123);
        assert!(client.owns_gid(4123));
        assert!(!client.owns_gid(4124));
        let osd = id("osd.3", 4200);
        assert!(osd.owns_gid(3), "an OSD numbers itself by its id");
        assert!(osd.owns_gid(4200));
        assert!(!osd.owns_gid(1));
        assert!(id("mon.a", 1).owns_gid(0), "a monitor by its rank");
        assert!(osd.matches_type(EntityType::OSD));
        assert!(!client.matches_type(EntityType::OSD));
        assert_eq!(client.to_string(), "client.admin (global id 4123)");
    }

    #[test]
    fn caps_text() {
        use msgr_encoding::Encode;
        let caps = Caps {
            allow_all: false,
            caps: "allow *".to_string().to_bytes(),
        };
        assert_eq!(caps.text().as_deref(), Some("allow *"));
        assert_eq!(Caps::default().text(), None);
    }
}
