//! `msgr rados`'s pool and snapshot commands, with `rados`'s syntax and
//! output (src/tools/rados/rados.cc): `-p POOL mksnap SNAP`, `rmsnap
//! SNAP`, `lssnap`, `rollback OBJ SNAP`, `listsnaps OBJ`; and `lspools`,
//! `mkpool POOL [CRUSH_RULE]`, `rmpool POOL POOL
//! --yes-i-really-really-mean-it` (the last two as `rados` had them
//! before it left pools to `ceph osd pool`).

use msgr_rados::{errno_name, IoCtx, Rados, RadosError, NOSNAP};
use msgr_uring::TcpOrUring;

use crate::identity::ClusterOpts;

/// A pool or snapshot command of `msgr rados`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapCmd {
    /// `mksnap SNAP`.
    MkSnap(String),
    /// `rmsnap SNAP`.
    RmSnap(String),
    /// `lssnap`.
    LsSnap,
    /// `rollback OBJ SNAP`.
    Rollback(String, String),
    /// `listsnaps OBJ`.
    ListSnaps(String),
    /// `lspools`.
    LsPools,
    /// `mkpool POOL [CRUSH_RULE]`.
    MkPool(String, Option<u8>),
    /// `rmpool POOL POOL --yes-i-really-really-mean-it`.
    RmPool(String),
}

/// What `rmpool` needs to go ahead, as `rados` did.
pub const REALLY: &str = "--yes-i-really-really-mean-it";

impl SnapCmd {
    /// The command of `words`, if it is one of these (`None`: not ours);
    /// an error for one of ours with the wrong arguments.
    pub fn parse(words: &[String]) -> Option<Result<SnapCmd, String>> {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let cmd = match w.as_slice() {
            ["mksnap", snap] => SnapCmd::MkSnap(snap.to_string()),
            ["rmsnap", snap] => SnapCmd::RmSnap(snap.to_string()),
            ["lssnap"] => SnapCmd::LsSnap,
            ["rollback", obj, snap] => SnapCmd::Rollback(obj.to_string(), snap.to_string()),
            ["listsnaps", obj] => SnapCmd::ListSnaps(obj.to_string()),
            ["lspools"] => SnapCmd::LsPools,
            ["mkpool", pool] => SnapCmd::MkPool(pool.to_string(), None),
            ["mkpool", pool, rule] => match rule.parse() {
                Ok(r) => SnapCmd::MkPool(pool.to_string(), Some(r)),
                Err(_) => return Some(Err(format!("mkpool: {rule}: not a CRUSH rule id"))),
            },
            ["rmpool", a, b, really] if a == b && *really == REALLY => {
                SnapCmd::RmPool(a.to_string())
            }
            ["rmpool", ..] => {
                return Some(Err(format!(
                    "rmpool: WARNING: this will *PERMANENTLY DESTROY* all data stored in the \
                     pool; give its name twice, then {REALLY}"
                )))
            }
            [c, ..]
                if [
                    "mksnap",
                    "rmsnap",
                    "lssnap",
                    "rollback",
                    "listsnaps",
                    "lspools",
                    "mkpool",
                ]
                .contains(c) =>
            {
                return Some(Err(format!("{c}: wrong arguments (msgr rados --help)")))
            }
            _ => return None,
        };
        Some(Ok(cmd))
    }

    /// Whether it works in a pool (`-p POOL` needed).
    pub fn needs_pool(&self) -> bool {
        !matches!(
            self,
            SnapCmd::LsPools | SnapCmd::MkPool(..) | SnapCmd::RmPool(_)
        )
    }
}

/// `cpp_strerror`'s text for an error: `(2) No such file or directory`.
fn strerror(e: &RadosError) -> String {
    let Some(n) = e.errno() else {
        return e.to_string();
    };
    let n = n.saturating_abs();
    let text = match n {
        1 => "Operation not permitted",
        2 => "No such file or directory",
        13 => "Permission denied",
        16 => "Device or resource busy",
        17 => "File exists",
        22 => "Invalid argument",
        34 => "Numerical result out of range",
        95 => "Operation not supported",
        110 => "Connection timed out",
        _ => errno_name(n),
    };
    format!("({n}) {text}")
}

/// `utime_t` seconds as rados's lssnap prints them,
/// `YYYY.MM.DD HH:MM:SS` (in UTC: rados prints local time).
fn snap_time(sec: u32) -> String {
    let t = crate::utime::format_time(sec, 0);
    // 2026-11-22T00:08:48.000000+0000
    let (date, rest) = t.split_once('T').unwrap_or((&t, ""));
    format!(
        "{} {}",
        date.replace('-', "."),
        rest.get(..8).unwrap_or(rest)
    )
}

/// The first release whose `rados listsnaps` names the object's snap
/// sequence (`OBJ (seq:N):`): Ceph 16's does not, Ceph 20's does; the
/// releases between are taken to do as 20 (not checked against them).
pub const LISTSNAPS_SEQ_RELEASE: u8 = 17;

/// `rados listsnaps`' text for `obj`'s clones; `with_seq`: as releases
/// from [`LISTSNAPS_SEQ_RELEASE`] print it.
pub fn format_listsnaps(obj: &str, set: &msgr_rados::SnapSet, with_seq: bool) -> String {
    let mut out = match with_seq {
        true => format!("{obj} (seq:{}):\n", set.seq),
        false => format!("{obj}:\n"),
    };
    out.push_str("cloneid\tsnaps\tsize\toverlap\n");
    for c in &set.clones {
        match c.cloneid {
            NOSNAP => out.push_str("head"),
            id => out.push_str(&id.to_string()),
        }
        out.push('\t');
        if c.snaps.is_empty() {
            out.push('-');
        }
        let snaps: Vec<String> = c.snaps.iter().map(u64::to_string).collect();
        out.push_str(&snaps.join(","));
        out.push_str(&format!("\t{}", c.size));
        if c.cloneid != NOSNAP {
            let o: Vec<String> = c.overlap.iter().map(|(a, l)| format!("{a}~{l}")).collect();
            out.push_str(&format!("\t[{}]\n", o.join(",")));
        }
    }
    out.push('\n');
    out
}

async fn run_in_pool(
    rados: &Rados<TcpOrUring>,
    io: &IoCtx,
    pool: &str,
    cmd: &SnapCmd,
) -> Result<String, String> {
    match cmd {
        SnapCmd::MkSnap(s) => match rados.snap_create(io, s).await {
            Ok(()) => Ok(format!("created pool {pool} snap {s}\n")),
            Err(e) => Err(format!(
                "error creating pool {pool} snapshot {s}: {}",
                strerror(&e)
            )),
        },
        SnapCmd::RmSnap(s) => match rados.snap_remove(io, s).await {
            Ok(()) => Ok(format!("removed pool {pool} snap {s}\n")),
            Err(e) => Err(format!(
                "error removing pool {pool} snapshot {s}: {}",
                strerror(&e)
            )),
        },
        SnapCmd::LsSnap => {
            let mut out = String::new();
            let snaps = io.snap_list().map_err(|e| e.to_string())?;
            for id in &snaps {
                let (Ok(name), Ok(stamp)) = (io.snap_get_name(*id), io.snap_get_stamp(*id)) else {
                    continue;
                };
                out.push_str(&format!("{id}\t{name}\t{}\n", snap_time(stamp.sec)));
            }
            out.push_str(&format!("{} snaps\n", snaps.len()));
            Ok(out)
        }
        SnapCmd::Rollback(obj, s) => match io.snap_rollback(obj.as_bytes(), s).await {
            Ok(()) => Ok(format!("rolled back pool {pool} to snapshot {s}\n")),
            Err(e) => Err(format!(
                "error rolling back pool {pool} to snapshot {s}: {}",
                strerror(&e)
            )),
        },
        SnapCmd::ListSnaps(obj) => match io.list_snaps(obj.as_bytes()).await {
            Ok(set) => {
                // As the cluster's release prints it.
                let release = rados.mon().monmap().min_mon_release;
                Ok(format_listsnaps(
                    obj,
                    &set,
                    release >= LISTSNAPS_SEQ_RELEASE,
                ))
            }
            Err(e) => Err(format!(
                "error listing snap shots {pool}/{obj}: {}",
                strerror(&e)
            )),
        },
        _ => Err("not a pool command".into()),
    }
}

async fn run_on(
    rados: &Rados<TcpOrUring>,
    pool: Option<&str>,
    cmd: &SnapCmd,
) -> Result<String, String> {
    match cmd {
        SnapCmd::LsPools => Ok(rados
            .pool_list()
            .into_iter()
            .map(|(_, n)| format!("{n}\n"))
            .collect()),
        SnapCmd::MkPool(name, rule) => match rados.pool_create(name, *rule).await {
            Ok(_) => Ok(format!("successfully created pool {name}\n")),
            Err(e) => Err(format!("error creating pool {name}: {}", strerror(&e))),
        },
        SnapCmd::RmPool(name) => match rados.pool_delete(name).await {
            Ok(()) => Ok(format!("successfully deleted pool {name}\n")),
            Err(e) => Err(format!(
                "pool {name} could not be removed: {}",
                strerror(&e)
            )),
        },
        _ => {
            let pool = pool.ok_or("-p POOL is needed")?;
            let io = rados
                .ioctx(pool)
                .map_err(|_| format!("error opening pool {pool}: (2) No such file or directory"))?;
            run_in_pool(rados, &io, pool, cmd).await
        }
    }
}

/// Connects, runs `cmd` (in `pool` for the snapshot commands), and
/// returns what to print, or `rados`'s error line.
pub async fn run(
    opts: &ClusterOpts,
    uring: bool,
    pool: Option<&str>,
    cmd: &SnapCmd,
) -> Result<String, String> {
    let rados = crate::common::rados_client(opts, uring).await?;
    let out = run_on(&rados, pool, cmd).await;
    rados.shutdown().await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_rados::{CloneInfo, SnapSet};

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_rados_syntax() {
        let p = |s: &str| SnapCmd::parse(&words(s));
        assert_eq!(p("mksnap s1"), Some(Ok(SnapCmd::MkSnap("s1".into()))));
        assert_eq!(
            p("rollback o s1"),
            Some(Ok(SnapCmd::Rollback("o".into(), "s1".into())))
        );
        assert_eq!(
            p("mkpool p 0"),
            Some(Ok(SnapCmd::MkPool("p".into(), Some(0))))
        );
        assert!(matches!(p("mkpool p x"), Some(Err(_))));
        assert_eq!(
            p(&format!("rmpool p p {REALLY}")),
            Some(Ok(SnapCmd::RmPool("p".into())))
        );
        assert!(matches!(p(&format!("rmpool p q {REALLY}")), Some(Err(_))));
        assert!(matches!(p("rmpool p p"), Some(Err(_))));
        assert!(matches!(p("mksnap"), Some(Err(_))));
        assert_eq!(p("put o -"), None);
        assert!(!SnapCmd::LsPools.needs_pool());
        assert!(SnapCmd::LsSnap.needs_pool());
    }

    #[test]
    fn listsnaps_prints_as_rados() {
        let set = SnapSet {
            clones: vec![
                CloneInfo {
                    cloneid: 3,
                    snaps: vec![2, 3],
                    overlap: vec![(0, 4), (8, 2)],
                    size: 10,
                },
                CloneInfo {
                    cloneid: NOSNAP,
                    snaps: vec![],
                    overlap: vec![],
                    size: 5,
                },
            ],
            seq: 3,
        };
        let table = "cloneid\tsnaps\tsize\toverlap\n3\t2,3\t10\t[0~4,8~2]\nhead\t-\t5\n";
        assert_eq!(
            format_listsnaps("obj", &set, false),
            format!("obj:\n{table}")
        );
        assert_eq!(
            format_listsnaps("obj", &set, true),
            format!("obj (seq:3):\n{table}")
        );
        assert_eq!(snap_time(951_782_400), "2000.02.29 00:00:00");
    }
}
