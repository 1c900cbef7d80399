//! `msgr rados lock`: the `rados lock` commands on our client, with its
//! syntax, output and exit codes (src/tools/rados/rados.cc `do_lock_cmd`):
//!
//! - `lock list OBJ`: `{"objname":OBJ,"locks":[{"name":N},...]}`;
//! - `lock info OBJ NAME`: `{"name","type","tag","lockers":[{"name",
//!   "cookie","description","expiration","addr"},...]}`;
//! - `lock get OBJ NAME [--lock-type exclusive|shared] [--lock-cookie C]
//!   [--lock-tag T] [--lock-description D] [--lock-duration SECONDS]`;
//! - `lock break OBJ NAME LOCKER [--lock-cookie C]`.
//!
//! JSON as `rados`'s default formatter writes it (compact, no newline);
//! `-f json-pretty` as its pretty one. An error exits 1, as `rados` does.

use std::time::Duration;

use msgr_encoding::{EntityAddr, EntityName, UTime};
use msgr_rados::lock::{Lock, LockType};
use msgr_rados::{IoCtx, RadosError};

use crate::json::{Object, Value};

/// The `--lock-*` options (`rados`'s `opts` map).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockOpts {
    /// `--lock-tag`.
    pub tag: Option<String>,
    /// `--lock-cookie`.
    pub cookie: Option<String>,
    /// `--lock-description`.
    pub description: Option<String>,
    /// `--lock-duration`, seconds.
    pub duration: Option<String>,
    /// `--lock-type`: exclusive or shared.
    pub kind: Option<String>,
    /// `-f json-pretty`.
    pub pretty: bool,
}

/// One `rados lock` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockCmd {
    /// `lock list OBJ`.
    List {
        /// The object.
        obj: String,
        /// Pretty JSON.
        pretty: bool,
    },
    /// `lock info OBJ NAME`.
    Info {
        /// The object.
        obj: String,
        /// The lock.
        name: String,
        /// Pretty JSON.
        pretty: bool,
    },
    /// `lock get OBJ NAME`: the lock to take.
    Get {
        /// The object.
        obj: String,
        /// The lock.
        lock: Lock,
    },
    /// `lock break OBJ NAME LOCKER`.
    Break {
        /// The object.
        obj: String,
        /// The lock.
        name: String,
        /// The holder (`client.N`).
        locker: EntityName,
        /// Its cookie.
        cookie: String,
    },
}

const USAGE: &str = "lock list OBJ | lock info OBJ NAME | lock get OBJ NAME [--lock-type \
                     exclusive|shared] [--lock-cookie C] [--lock-tag T] [--lock-description D] \
                     [--lock-duration SECONDS] | lock break OBJ NAME LOCKER [--lock-cookie C]";

impl LockCmd {
    /// From the words after `lock` and the `--lock-*` options.
    pub fn parse(words: &[&str], opts: &LockOpts) -> Result<LockCmd, String> {
        let kind = match opts.kind.as_deref() {
            None | Some("exclusive") => LockType::Exclusive,
            Some("shared") => LockType::Shared,
            Some(other) => {
                return Err(format!(
                    "unknown lock type {other:?} was specified, aborting (exclusive or shared)"
                ))
            }
        };
        let duration = match opts.duration.as_deref() {
            None => 0,
            Some(d) => d
                .parse::<u32>()
                .map_err(|_| format!("--lock-duration {d}: expected whole seconds"))?,
        };
        let cookie = opts.cookie.clone().unwrap_or_default();
        let pretty = opts.pretty;
        Ok(match words {
            ["list", obj] => LockCmd::List {
                obj: obj.to_string(),
                pretty,
            },
            ["info", obj, name] => LockCmd::Info {
                obj: obj.to_string(),
                name: name.to_string(),
                pretty,
            },
            ["get", obj, name] => {
                let mut lock = Lock::new(name, kind)
                    .cookie(&cookie)
                    .tag(opts.tag.as_deref().unwrap_or(""))
                    .description(opts.description.as_deref().unwrap_or(""));
                lock = lock.duration(Duration::from_secs(duration.into()));
                LockCmd::Get {
                    obj: obj.to_string(),
                    lock,
                }
            }
            ["break", obj, name, locker] => LockCmd::Break {
                obj: obj.to_string(),
                name: name.to_string(),
                locker: locker
                    .parse()
                    .map_err(|_| format!("failed to parse locker name ({locker})"))?,
                cookie,
            },
            _ => return Err(format!("expected {USAGE}")),
        })
    }
}

/// `utime_t`'s `operator<<`: under ten years of seconds a relative time
/// (`S.UUUUUU`), else the date (UTC).
pub fn format_utime(t: UTime) -> String {
    if t.sec < 60 * 60 * 24 * 365 * 10 {
        format!("{}.{:06}", t.sec, t.nsec / 1000)
    } else {
        crate::utime::format_time(t.sec, t.nsec)
    }
}

/// `entity_addr_t::get_legacy_str`: the socket address and the nonce,
/// without the type prefix (`127.0.0.1:0/3339203723`).
pub fn legacy_addr(a: &EntityAddr) -> String {
    match a.addr {
        Some(std::net::SocketAddr::V4(s)) => format!("{}:{}/{}", s.ip(), s.port(), a.nonce),
        Some(std::net::SocketAddr::V6(s)) => format!("[{}]:{}/{}", s.ip(), s.port(), a.nonce),
        None => format!("(unrecognized address family 0)/{}", a.nonce),
    }
}

fn render(v: Value, pretty: bool) -> String {
    match pretty {
        true => format!("{}\n", crate::json::pretty(&v)),
        false => v.to_string(),
    }
}

/// Runs `cmd` on `io`: what to print.
pub async fn run(io: &IoCtx, cmd: &LockCmd) -> Result<String, RadosError> {
    match cmd {
        LockCmd::List { obj, pretty } => {
            let locks = io.list_locks(obj.as_bytes()).await?;
            let list: Vec<Value> = locks
                .into_iter()
                .map(|n| {
                    let mut o = Object::new();
                    o.set("name", n);
                    o.into_value()
                })
                .collect();
            let mut o = Object::new();
            o.set("objname", obj.as_str()).set("locks", list);
            Ok(render(o.into_value(), *pretty))
        }
        LockCmd::Info { obj, name, pretty } => {
            let info = io.lock_info(obj.as_bytes(), name).await?;
            let lockers: Vec<Value> = info
                .lockers
                .iter()
                .map(|l| {
                    let mut o = Object::new();
                    o.set("name", l.locker.to_string())
                        .set("cookie", l.cookie.as_str())
                        .set("description", l.description.as_str())
                        .set("expiration", format_utime(l.expiration))
                        .set("addr", legacy_addr(&l.addr));
                    o.into_value()
                })
                .collect();
            let mut o = Object::new();
            o.set("name", name.as_str())
                .set("type", info.kind.as_str())
                .set("tag", info.tag.as_str())
                .set("lockers", lockers);
            Ok(render(o.into_value(), *pretty))
        }
        LockCmd::Get { obj, lock } => {
            io.lock(obj.as_bytes(), lock).await?;
            Ok(String::new())
        }
        LockCmd::Break {
            obj,
            name,
            locker,
            cookie,
        } => {
            io.break_lock(obj.as_bytes(), name, locker, cookie).await?;
            Ok(String::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        s.split(' ').collect()
    }

    #[test]
    fn commands_parse_as_rados_takes_them() {
        let opts = LockOpts {
            cookie: Some("c".into()),
            duration: Some("30".into()),
            kind: Some("shared".into()),
            ..Default::default()
        };
        let LockCmd::Get { obj, lock } = LockCmd::parse(&words("get o L"), &opts).unwrap() else {
            panic!("a get");
        };
        assert_eq!(obj, "o");
        assert_eq!(lock.kind, LockType::Shared);
        assert_eq!(lock.cookie, "c");
        assert_eq!(lock.duration, UTime::new(30, 0));
        let b = LockCmd::parse(&words("break o L client.4152"), &opts).unwrap();
        assert!(matches!(b, LockCmd::Break { locker, .. } if locker.to_string() == "client.4152"));
        assert!(LockCmd::parse(&words("break o L nobody"), &opts).is_err());
        assert!(LockCmd::parse(&words("info o"), &opts).is_err());
        let bad = LockOpts {
            kind: Some("weird".into()),
            ..Default::default()
        };
        assert!(LockCmd::parse(&words("get o L"), &bad).is_err());
    }

    #[test]
    fn times_and_addresses_print_as_ceph_prints_them() {
        assert_eq!(format_utime(UTime::new(0, 0)), "0.000000");
        assert_eq!(
            format_utime(UTime::new(1_795_306_128, 929_448_737)),
            "2026-11-22T00:08:48.929448+0000"
        );
        let a: EntityAddr = "v2:127.0.0.1:0/3339203723".parse().unwrap();
        assert_eq!(legacy_addr(&a), "127.0.0.1:0/3339203723");
    }
}
