//! `mon_host`: where the monitors are (src/mon/MonMap.cc `init_with_ips`,
//! `_add_ambiguous_addr`; entity_addrvec_t parsing in msg_types.cc).
//!
//! The value lists monitors separated by commas, semicolons or spaces; each
//! is an address (`v2:1.2.3.4:3300`, `1.2.3.4`, `[::1]:6789`) or a bracketed
//! address vector of one monitor (`[v2:1.2.3.4:3300,v1:1.2.3.4:6789]`).
//! A prefix-less address is disambiguated by its port: 6789 is msgr1, 3300
//! msgr2, no port means both (3300 for v2, 6789 for v1), and any other port
//! is taken as msgr2 (TYPE_ANY). A typed address without a port gets its
//! type's default port.

use std::net::SocketAddr;

use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec};

/// The IANA msgr2 monitor port.
pub const MON_PORT_V2: u16 = 3300;
/// The legacy msgr1 monitor port.
pub const MON_PORT_V1: u16 = 6789;

/// Parses a `mon_host` value into one address vector per monitor.
pub fn parse_mon_host(value: &str) -> Result<Vec<EntityAddrvec>, String> {
    let mut mons: Vec<EntityAddrvec> = Vec::new();
    for item in split_items(value)? {
        let vec = match item.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            // A bracketed vector, unless it is a bare bracketed IPv6 address
            // (`[::1]` has no ',' and no type prefix).
            Some(inner) if inner.contains(',') || has_type_prefix(inner) => {
                let addrs = inner
                    .split(',')
                    .map(|a| parse_one(a.trim()))
                    .collect::<Result<Vec<_>, _>>()?;
                EntityAddrvec(addrs.into_iter().flatten().collect())
            }
            _ => EntityAddrvec(parse_one(item)?),
        };
        if vec.0.is_empty() {
            continue;
        }
        if !mons.contains(&vec) {
            mons.push(vec);
        }
    }
    if mons.is_empty() {
        return Err(format!("mon_host {value:?} names no monitor"));
    }
    Ok(mons)
}

fn has_type_prefix(s: &str) -> bool {
    s.starts_with("v1:") || s.starts_with("v2:") || s.starts_with("any:")
}

/// Splits on separators outside brackets.
fn split_items(value: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in value.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced ']' in mon_host {value:?}"));
                }
            }
            ',' | ';' | ' ' | '\t' if depth == 0 => {
                items.push(&value[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '[' in mon_host {value:?}"));
    }
    items.push(&value[start..]);
    Ok(items
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect())
}

/// One address as `_add_ambiguous_addr` resolves it: one or two addresses.
fn parse_one(text: &str) -> Result<Vec<EntityAddr>, String> {
    let typed = has_type_prefix(text) && !text.starts_with("any:");
    let untyped = text.strip_prefix("any:").unwrap_or(text);
    let a: EntityAddr = if typed { text } else { untyped }
        .parse()
        .map_err(|e: msgr_encoding::entity::ParseError| e.to_string())?;
    let sock: SocketAddr = a
        .addr
        .ok_or_else(|| format!("mon_host address {text:?} has no IP"))?;
    let with = |kind: EntityAddrType, port: u16| {
        let mut s = sock;
        s.set_port(port);
        EntityAddr::new(kind, s, 0)
    };
    Ok(match (typed, a.kind, sock.port()) {
        (true, EntityAddrType::LEGACY, 0) => vec![with(EntityAddrType::LEGACY, MON_PORT_V1)],
        (true, EntityAddrType::MSGR2, 0) => vec![with(EntityAddrType::MSGR2, MON_PORT_V2)],
        (true, kind, port) => vec![with(kind, port)],
        (false, _, MON_PORT_V1) => vec![with(EntityAddrType::LEGACY, MON_PORT_V1)],
        (false, _, 0) => vec![
            with(EntityAddrType::MSGR2, MON_PORT_V2),
            with(EntityAddrType::LEGACY, MON_PORT_V1),
        ],
        (false, _, port) => vec![with(EntityAddrType::MSGR2, port)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(v: &[EntityAddrvec]) -> Vec<String> {
        v.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_forms_ceph_accepts() {
        assert_eq!(
            show(&parse_mon_host("[v2:127.0.0.1:3300,v1:127.0.0.1:6789]").unwrap()),
            ["[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]"]
        );
        assert_eq!(
            show(&parse_mon_host("v2:127.0.0.1:3301, v1:127.0.0.1:6790").unwrap()),
            ["v2:127.0.0.1:3301/0", "v1:127.0.0.1:6790/0"]
        );
        assert_eq!(
            show(&parse_mon_host("10.0.0.1").unwrap()),
            ["[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]"]
        );
        assert_eq!(
            show(&parse_mon_host("10.0.0.1:6789;10.0.0.2:3300 10.0.0.3:7000").unwrap()),
            [
                "v1:10.0.0.1:6789/0",
                "v2:10.0.0.2:3300/0",
                "v2:10.0.0.3:7000/0"
            ]
        );
        assert_eq!(
            show(&parse_mon_host("[::1]:3300,[v2:[::1]:3301,v1:[::1]:6790]").unwrap()),
            ["v2:[::1]:3300/0", "[v2:[::1]:3301/0,v1:[::1]:6790/0]"]
        );
        assert_eq!(
            show(&parse_mon_host("v2:10.0.0.1").unwrap()),
            ["v2:10.0.0.1:3300/0"]
        );
    }

    #[test]
    fn nonsense_is_an_error() {
        assert!(parse_mon_host("").is_err());
        assert!(parse_mon_host("[v2:1.2.3.4:3300").is_err());
        assert!(parse_mon_host("mon.example").is_err());
    }
}
