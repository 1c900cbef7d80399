//! `msgr rados`: the `rados` tool's object commands on our client: `-p
//! POOL [-N NSPACE] put OBJ FILE|-`, `get OBJ FILE|-`, `stat OBJ`, `rm OBJ`,
//! printing what `rados` prints.

use std::io::{Read, Write};

use bytes::Bytes;
use msgr_rados::{IoCtx, RadosError};

use crate::identity::ClusterOpts;

/// One command of `msgr rados`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RadosCmd {
    Put {
        obj: String,
        file: String,
    },
    Get {
        obj: String,
        file: String,
    },
    Stat {
        obj: String,
    },
    Rm {
        objs: Vec<String>,
    },
    SetXattr {
        obj: String,
        name: String,
        value: String,
    },
    GetXattr {
        obj: String,
        name: String,
    },
    ListXattr {
        obj: String,
    },
    RmXattr {
        obj: String,
        name: String,
    },
    SetOmapVal {
        obj: String,
        key: String,
        value: String,
    },
    ListOmapKeys {
        obj: String,
    },
    /// Our format: `KEY<TAB>VALUE` a line (values as text).
    ListOmapVals {
        obj: String,
    },
    RmOmapKey {
        obj: String,
        key: String,
    },
    /// `ls` (`--all`: every namespace, `NSPACE<TAB>NAME`).
    Ls {
        all: bool,
    },
    Bench(crate::rados_bench::BenchArgs),
    /// `watch`, `notify`, `listwatchers` (crate::rados_watch).
    Watch(crate::rados_watch::WatchCmd),
    /// `lock list|info|get|break ...` (crate::rados_lock).
    Lock(crate::rados_lock::LockCmd),
    /// `setomapheader`, `getomapheader`, `cmpext` (rados_ops.rs).
    Ops(crate::rados_ops::OpsCmd),
    /// `opbench COUNT MODE` (crate::rados_opbench).
    OpBench(crate::rados_opbench::OpBenchArgs),
}

impl RadosCmd {
    /// From the words after the options (`put OBJ FILE`, ...); `bench`
    /// and `ls` take their options from `opts` (`-t`, `-b`,
    /// `--no-cleanup`, `--format`, `--all`).
    pub fn parse(words: &[String], opts: &CmdOpts) -> Result<RadosCmd, String> {
        use crate::rados_bench::{BenchArgs, Mode};
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        if let Some(c) = crate::rados_watch::WatchCmd::parse(&w) {
            return Ok(RadosCmd::Watch(c));
        }
        if let Some(c) = crate::rados_opbench::OpBenchArgs::parse(&w, opts.concurrency_given) {
            return c.map(RadosCmd::OpBench);
        }
        Ok(match w.as_slice() {
            ["ls"] => RadosCmd::Ls { all: opts.all },
            ["lock", rest @ ..] => {
                RadosCmd::Lock(crate::rados_lock::LockCmd::parse(rest, &opts.lock)?)
            }
            ["setxattr", obj, name, value] => RadosCmd::SetXattr {
                obj: obj.to_string(),
                name: name.to_string(),
                value: value.to_string(),
            },
            ["getxattr", obj, name] => RadosCmd::GetXattr {
                obj: obj.to_string(),
                name: name.to_string(),
            },
            ["listxattr", obj] => RadosCmd::ListXattr {
                obj: obj.to_string(),
            },
            ["rmxattr", obj, name] => RadosCmd::RmXattr {
                obj: obj.to_string(),
                name: name.to_string(),
            },
            ["setomapval", obj, key, value] => RadosCmd::SetOmapVal {
                obj: obj.to_string(),
                key: key.to_string(),
                value: value.to_string(),
            },
            ["listomapkeys", obj] => RadosCmd::ListOmapKeys {
                obj: obj.to_string(),
            },
            ["listomapvals", obj] => RadosCmd::ListOmapVals {
                obj: obj.to_string(),
            },
            ["rmomapkey", obj, key] => RadosCmd::RmOmapKey {
                obj: obj.to_string(),
                key: key.to_string(),
            },
            ["bench", secs, mode] => RadosCmd::Bench(BenchArgs {
                seconds: secs
                    .parse()
                    .map_err(|_| format!("bench: {secs} is not a number of seconds"))?,
                mode: match *mode {
                    "write" => Mode::Write,
                    "seq" => Mode::Seq,
                    "rand" => Mode::Rand,
                    m => return Err(format!("bench: {m}: expected write, seq or rand")),
                },
                concurrency: opts.concurrency.max(1),
                op_size: opts.op_size,
                cleanup: !opts.no_cleanup,
                json: opts.json,
            }),
            ["put", obj, file] => RadosCmd::Put {
                obj: obj.to_string(),
                file: file.to_string(),
            },
            ["get", obj, file] => RadosCmd::Get {
                obj: obj.to_string(),
                file: file.to_string(),
            },
            ["stat", obj] => RadosCmd::Stat {
                obj: obj.to_string(),
            },
            ["rm", objs @ ..] if !objs.is_empty() => RadosCmd::Rm {
                objs: objs.iter().map(|s| s.to_string()).collect(),
            },
            w => match crate::rados_ops::OpsCmd::parse(w) {
                Some(c) => RadosCmd::Ops(c),
                None => {
                    return Err(
                        "expected put OBJ FILE|-, get OBJ FILE|-, stat OBJ or rm OBJ...".into(),
                    )
                }
            },
        })
    }
}

/// The options of `ls` and `bench`.
#[derive(Debug, Clone)]
pub struct CmdOpts {
    pub all: bool,
    pub concurrency: usize,
    pub op_size: usize,
    pub no_cleanup: bool,
    pub json: bool,
    /// `-t` if it was given (`opbench` runs one at a time without it).
    pub concurrency_given: Option<usize>,
    /// `lock`'s `--lock-*` options.
    pub lock: crate::rados_lock::LockOpts,
}

impl Default for CmdOpts {
    /// `rados bench`'s: 16 in flight, 4 MiB.
    fn default() -> Self {
        CmdOpts {
            all: false,
            concurrency: 16,
            op_size: 4 << 20,
            no_cleanup: false,
            json: false,
            concurrency_given: None,
            lock: Default::default(),
        }
    }
}

async fn run_cmd(io: &IoCtx, pool: &str, cmd: &RadosCmd) -> Result<String, RadosError> {
    let io_err = |what: &str, e: std::io::Error| RadosError::Os {
        errno: -e.raw_os_error().unwrap_or(5),
        what: what.to_string(),
    };
    match cmd {
        RadosCmd::Put { obj, file } => {
            let mut data = Vec::new();
            match file.as_str() {
                "-" => std::io::stdin().read_to_end(&mut data).map(drop),
                f => std::fs::File::open(f)
                    .and_then(|mut h| h.read_to_end(&mut data))
                    .map(drop),
            }
            .map_err(|e| io_err(file, e))?;
            io.write_in_pieces(obj.as_bytes(), Bytes::from(data))
                .await?;
            Ok(String::new())
        }
        RadosCmd::Get { obj, file } => {
            let data = io.read_in_pieces(obj.as_bytes()).await?;
            match file.as_str() {
                "-" => std::io::stdout().write_all(&data),
                f => std::fs::write(f, &data),
            }
            .map_err(|e| io_err(file, e))?;
            Ok(String::new())
        }
        RadosCmd::Stat { obj } => {
            let st = io.stat(obj.as_bytes()).await?;
            // `rados stat` takes the time in whole seconds.
            let t = crate::utime::format_time(st.mtime.sec, 0);
            Ok(format!("{pool}/{obj} mtime {t}, size {}\n", st.size))
        }
        RadosCmd::Rm { objs } => {
            for o in objs {
                io.remove(o.as_bytes()).await?;
            }
            Ok(String::new())
        }
        RadosCmd::SetXattr { obj, name, value } => {
            io.setxattr(obj.as_bytes(), name, value.as_bytes()).await?;
            Ok(String::new())
        }
        RadosCmd::GetXattr { obj, name } => {
            let v = io.getxattr(obj.as_bytes(), name).await?;
            Ok(format!("{}\n", String::from_utf8_lossy(&v)))
        }
        RadosCmd::ListXattr { obj } => {
            let all = io.getxattrs(obj.as_bytes()).await?;
            Ok(all.keys().map(|k| format!("{k}\n")).collect())
        }
        RadosCmd::RmXattr { obj, name } => {
            io.rmxattr(obj.as_bytes(), name).await?;
            Ok(String::new())
        }
        RadosCmd::SetOmapVal { obj, key, value } => {
            let kv = [(key.clone(), Bytes::from(value.clone().into_bytes()))].into();
            io.omap_set(obj.as_bytes(), &kv).await?;
            Ok(String::new())
        }
        RadosCmd::ListOmapKeys { obj } => {
            let keys = io.omap_keys(obj.as_bytes()).await?;
            Ok(keys.iter().map(|k| format!("{k}\n")).collect())
        }
        RadosCmd::ListOmapVals { obj } => {
            let vals = io.omap_vals(obj.as_bytes()).await?;
            Ok(vals
                .iter()
                .map(|(k, v)| format!("{k}\t{}\n", String::from_utf8_lossy(v)))
                .collect())
        }
        RadosCmd::RmOmapKey { obj, key } => {
            io.omap_rm(obj.as_bytes(), std::slice::from_ref(key))
                .await?;
            Ok(String::new())
        }
        RadosCmd::Ls { all } => {
            let mut io = io.clone();
            if *all {
                io.set_namespace(msgr_rados::ALL_NAMESPACES);
            }
            let mut out = String::new();
            for o in io.list().await? {
                // As rados prints --all: the namespace (maybe empty), a tab.
                if *all {
                    out.push_str(&o.nspace);
                    out.push('\t');
                }
                out.push_str(&String::from_utf8_lossy(&o.name));
                out.push('\n');
            }
            Ok(out)
        }
        RadosCmd::Lock(c) => crate::rados_lock::run(io, c).await,
        RadosCmd::Ops(c) => crate::rados_ops::run(io, pool, c).await,
        RadosCmd::Bench(args) => {
            // Progress as it goes, as rados bench prints it; with --format
            // json on stderr, and the JSON summary alone on stdout.
            let json = args.json;
            let mut print = |s: &str| {
                let _ = match json && !s.starts_with('{') {
                    true => std::io::stderr().write_all(s.as_bytes()),
                    false => std::io::stdout().write_all(s.as_bytes()),
                };
                let _ = std::io::stdout().flush();
            };
            crate::rados_bench::run(io, args, &mut print).await?;
            Ok(String::new())
        }
        RadosCmd::Watch(c) => crate::rados_watch::run(io, pool, c).await,
        RadosCmd::OpBench(args) => crate::rados_opbench::run(io, args).await,
    }
}

/// Reads at pool snapshot `snap` from now on, saying so as `rados -s`
/// does (`selected snap ID 'NAME'`, before the command's output).
fn select_snap(io: &mut IoCtx, snap: Option<&str>) -> Result<(), String> {
    let Some(name) = snap else {
        return Ok(());
    };
    let id = io
        .snap_lookup(name)
        .map_err(|e| format!("error looking up snap '{name}': {e}"))?;
    io.set_read_snap(id);
    crate::out::write(format_args!("selected snap {id} '{name}'"), true);
    Ok(())
}

/// Connects, runs `cmd` in `pool` (namespace `nspace`; reading at pool
/// snapshot `snap`, said first as `rados -s` says it), and returns what
/// to print.
pub async fn run(
    opts: &ClusterOpts,
    uring: bool,
    pool: &str,
    nspace: &str,
    snap: Option<&str>,
    cmd: &RadosCmd,
) -> Result<String, String> {
    let rados = crate::common::rados_client(opts, uring).await?;
    let out = match rados.ioctx(pool) {
        Ok(mut io) => {
            io.set_namespace(nspace);
            match select_snap(&mut io, snap) {
                Ok(()) => run_cmd(&io, pool, cmd).await.map_err(|e| e.to_string()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e.to_string()),
    };
    rados.shutdown().await;
    out
}
