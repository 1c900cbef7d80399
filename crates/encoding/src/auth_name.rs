//! `EntityName` of src/common/entity_name.h: the name an entity
//! authenticates as and looks up its configuration and keys by, a type and
//! an id string (`client.admin`, `osd.0`, `mon.`, `client.legacy`). Not to
//! be confused with `entity_name_t` ([`crate::EntityName`]), a type and a
//! number, which messages carry.
//!
//! Encoding: `u32 type, string id` (EntityName::encode).

use std::fmt;
use std::str::FromStr;

use bytes::BufMut;

use crate::entity::ParseError;
use crate::{Decode, DecodeResult, Decoder, Encode, EntityType};

/// A type and an id string, e.g. `client.admin`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AuthName {
    /// The entity type (`client`, `osd`, ...).
    pub kind: EntityType,
    /// The id after the dot (`admin` in `client.admin`, `3` in `osd.3`).
    pub id: String,
}

impl AuthName {
    /// The name `kind.id`.
    pub fn new(kind: EntityType, id: impl Into<String>) -> AuthName {
        AuthName {
            kind,
            id: id.into(),
        }
    }

    /// `client.admin`, Ceph's default name.
    pub fn client_admin() -> AuthName {
        AuthName::new(EntityType::CLIENT, "admin")
    }
}

impl fmt::Display for AuthName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind, self.id)
    }
}

impl fmt::Debug for AuthName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for AuthName {
    type Err = ParseError;
    /// `TYPE.ID` (EntityName::from_str): the type is one of Ceph's entity
    /// type names; the id is any string, possibly empty (`mon.`).
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let err = || {
            ParseError(format!(
                "bad entity name {s:?}: expected TYPE.ID, e.g. client.admin"
            ))
        };
        let (t, id) = s.split_once('.').ok_or_else(err)?;
        let kind = EntityType::from_name(t).ok_or_else(err)?;
        Ok(AuthName::new(kind, id))
    }
}

impl Encode for AuthName {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.kind.0 as u32);
        self.id.encode(out);
    }
}

impl Decode for AuthName {
    const MIN_ENCODED_LEN: usize = 8;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let kind = d.u32("EntityName.type")?;
        let kind = u8::try_from(kind).map_err(|_| crate::DecodeError::InvalidValue {
            what: "EntityName.type",
            value: kind as u64,
        })?;
        Ok(AuthName {
            kind: EntityType(kind),
            id: String::decode(d)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prints_and_encodes() {
        let n: AuthName = "client.admin".parse().unwrap();
        assert_eq!(n, AuthName::client_admin());
        assert_eq!(n.to_string(), "client.admin");
        assert_eq!(
            crate::hex::encode(&n.to_bytes()),
            "08000000050000006164 6d696e".replace(' ', "")
        );
        assert_eq!(AuthName::decode_exact(&n.to_bytes(), "n").unwrap(), n);
        let mon: AuthName = "mon.".parse().unwrap();
        assert_eq!(mon.id, "");
        assert!("admin".parse::<AuthName>().is_err());
        assert!("bogus.x".parse::<AuthName>().is_err());
    }
}
