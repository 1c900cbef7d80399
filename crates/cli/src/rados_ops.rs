//! `msgr rados setomapheader OBJ VALUE` and `getomapheader OBJ [FILE]`,
//! as Ceph's `rados` does them (src/tools/rados/rados.cc): the header set
//! from the argument's bytes; read back as `header (N bytes) :` and a
//! hexdump (`bufferlist::hexdump`), or written raw to FILE with `Writing
//! to FILE` on stderr. Ceph's `rados` has no cmpext command (cmpext is an
//! op of compound operations: `msgr_rados::compound`).

use bytes::Bytes;
use msgr_rados::compound::{ReadOp, WriteOp};
use msgr_rados::{IoCtx, RadosError};

/// An omap header command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpsCmd {
    /// `setomapheader OBJ VALUE`.
    SetOmapHeader { obj: String, value: String },
    /// `getomapheader OBJ [FILE]`.
    GetOmapHeader { obj: String, file: Option<String> },
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
            _ => return None,
        })
    }
}

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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_header_commands_only() {
        assert_eq!(
            OpsCmd::parse(&["getomapheader", "o", "f"]),
            Some(OpsCmd::GetOmapHeader {
                obj: "o".into(),
                file: Some("f".into())
            })
        );
        assert_eq!(OpsCmd::parse(&["setomapheader", "o"]), None);
        assert_eq!(OpsCmd::parse(&["stat", "o"]), None);
    }
}
