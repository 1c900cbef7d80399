//! Configuration text: ceph.conf, mon_host, CEPH_ARGS, and the JSON the
//! monitors answer with.

use msgr_config::{parse_mon_host, ConfFile, ConfigOptions};

/// The first byte picks the parser.
pub fn config(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match sel % 4 {
        0 => {
            if let Ok(c) = ConfFile::parse(text) {
                // Every section parsed can be looked up.
                for s in c.sections() {
                    let _ = c.get(s, "mon_host");
                }
            }
        }
        1 => {
            if let Ok(mons) = parse_mon_host(text) {
                assert!(!mons.is_empty());
                for m in mons {
                    assert!(!m.0.is_empty());
                }
            }
        }
        2 => {
            let _ = ConfigOptions::parse_ceph_args(text);
        }
        _ => {
            if let Ok(v) = msgr_admin::json::parse(text) {
                let once = v.to_string();
                let again = msgr_admin::json::parse(&once).expect("own output parses");
                assert_eq!(again.to_string(), once);
                let pretty = msgr_admin::json::pretty(&v);
                let from_pretty = msgr_admin::json::parse(&pretty).expect("own output parses");
                assert_eq!(from_pretty.to_string(), once);
            }
        }
    }
}
