//! `msgr rados setomapheader OBJ VALUE` and `getomapheader OBJ [FILE]`,
//! as Ceph's `rados` does them (src/tools/rados/rados.cc): the header set
//! from the argument's bytes; read back as `header (N bytes) :` and a
//! hexdump (`bufferlist::hexdump`), or written raw to FILE with `Writing
//! to FILE` on stderr. And `cmpext OBJ OFFSET FILE|-`, which Ceph's
//! `rados` lacks (librados's `rados_cmpext`): the object's bytes from
//! OFFSET compared with the file's, in one CMPEXT op; nothing printed and
//! status 0 when they match, the first differing byte and status 1 when
//! they do not (or the OSD's error).

use bytes::Bytes;
use msgr_rados::compound::{cmpext_mismatch, ReadOp, WriteOp};
use msgr_rados::{IoCtx, RadosError};

/// An omap header command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpsCmd {
    /// `setomapheader OBJ VALUE`.
    SetOmapHeader { obj: String, value: String },
    /// `getomapheader OBJ [FILE]`.
    GetOmapHeader { obj: String, file: Option<String> },
    /// `cmpext OBJ OFFSET FILE|-`.
    CmpExt {
        obj: String,
        offset: String,
        file: String,
    },
}

impl OpsCmd {
    /// From the command's words, if they are one of these commands.
    pub fn parse(words: &[&str]) -> Option<OpsCmd> {
        Some(match words {
            ["setomapheader", obj, value] => OpsCmd::SetOmapHeader {
                obj: obj.to_string(),
                value: value.to_string(),
            },
            ["getomapheader", obj] => OpsCmd::GetOmapHeader {
                obj: obj.to_string(),
                file: None,
            },
            ["getomapheader", obj, file] => OpsCmd::GetOmapHeader {
                obj: obj.to_string(),
                file: Some(file.to_string()),
            },
            ["cmpext", obj, offset, file] => OpsCmd::CmpExt {
                obj: obj.to_string(),
                offset: offset.to_string(),
                file: file.to_string(),
            },
            _ => return None,
        })
    }
}

/// ECANCELED: what a mismatch is reported as (with its offset).
const ECANCELED: i32 = -125;

/// Runs `cmd` in `io` (pool `pool`): what to print.
pub async fn run(io: &IoCtx, pool: &str, cmd: &OpsCmd) -> Result<String, RadosError> {
    // rados's own words for a failure, with the OSD's errno.
    let failed = |doing: &str, obj: &str, e: RadosError| match e.errno() {
        Some(errno) => RadosError::Os {
            errno,
            what: format!("error {doing} {pool}/{obj}"),
        },
        None => e,
    };
    match cmd {
        OpsCmd::SetOmapHeader { obj, value } => {
            let mut w = WriteOp::new();
            w.omap_set_header(Bytes::from(value.clone().into_bytes()));
            io.operate_write(obj.as_bytes(), &w)
                .await
                .map_err(|e| failed("setting omap value", obj, e))?;
            Ok(String::new())
        }
        OpsCmd::GetOmapHeader { obj, file } => {
            let mut r = ReadOp::new();
            let h = r.omap_get_header();
            let header = io
                .operate_read(obj.as_bytes(), &r)
                .await
                .and_then(|out| out.get(h))
                .map_err(|e| failed("getting omap header", obj, e))?;
            match file {
                Some(f) => {
                    eprintln!("Writing to {f}");
                    let written = match f.as_str() {
                        "-" => std::io::Write::write_all(&mut std::io::stdout(), &header),
                        f => std::fs::write(f, &header),
                    };
                    written.map_err(|e| RadosError::Os {
                        errno: -e.raw_os_error().unwrap_or(5),
                        what: format!("writing {f}"),
                    })?;
                    Ok(String::new())
                }
                None => Ok(format!(
                    "header ({} bytes) :\n{}\n",
                    header.len(),
                    crate::hexdump::hexdump(&header)
                )),
            }
        }
        OpsCmd::CmpExt { obj, offset, file } => {
            let off: u64 = offset.parse().map_err(|_| RadosError::Os {
                errno: -22,
                what: format!("cmpext: offset {offset:?} is not a number of bytes"),
            })?;
            let data = match file.as_str() {
                "-" => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map(|_| v)
                }
                f => std::fs::read(f),
            }
            .map_err(|e| RadosError::Os {
                errno: -e.raw_os_error().unwrap_or(5),
                what: format!("reading {file}"),
            })?;
            let mut r = ReadOp::new();
            r.cmpext(off, Bytes::from(data));
            match io.operate_read(obj.as_bytes(), &r).await {
                Ok(_) => Ok(String::new()),
                Err(e) => match e.errno().and_then(cmpext_mismatch) {
                    Some(at) => Err(RadosError::Os {
                        errno: ECANCELED,
                        what: format!(
                            "{pool}/{obj} differs from {file} at byte {} (offset {at} of the compare)",
                            off.saturating_add(at)
                        ),
                    }),
                    None => Err(failed("comparing", obj, e)),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_header_and_cmpext_commands_only() {
        assert_eq!(
            OpsCmd::parse(&["getomapheader", "o", "f"]),
            Some(OpsCmd::GetOmapHeader {
                obj: "o".into(),
                file: Some("f".into())
            })
        );
        assert_eq!(OpsCmd::parse(&["setomapheader", "o"]), None);
        assert_eq!(
            OpsCmd::parse(&["cmpext", "o", "4", "-"]),
            Some(OpsCmd::CmpExt {
                obj: "o".into(),
                offset: "4".into(),
                file: "-".into()
            })
        );
        assert_eq!(OpsCmd::parse(&["stat", "o"]), None);
    }
}
