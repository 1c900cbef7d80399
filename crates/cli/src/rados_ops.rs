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
                    hexdump(&header)
                )),
            }
        }
    }
}

/// `bufferlist::hexdump` with its trailing newline, as `hexdump -C`
/// prints: 16 bytes a row (offset, two groups of eight, the printable
/// characters), a run of rows of one repeated byte as `*`, then the length.
/// Nothing for no bytes.
pub fn hexdump(data: &[u8]) -> String {
    use std::fmt::Write;
    const PER: usize = 16;
    let mut out = String::new();
    let Some(&first) = data.first() else {
        return out;
    };
    let mut last_row_char = first;
    let (mut was_same, mut did_star) = (false, false);
    for o in (0..data.len()).step_by(PER) {
        let end = o.saturating_add(PER);
        let row = data.get(o..end.min(data.len())).unwrap_or_default();
        if end < data.len() {
            let mut row_is_same = true;
            for (i, &c) in row.iter().enumerate() {
                if c != last_row_char {
                    if i == 0 {
                        last_row_char = c;
                        was_same = false;
                        did_star = false;
                    } else {
                        row_is_same = false;
                    }
                }
            }
            if row_is_same {
                if was_same {
                    if !did_star {
                        out.push_str("\n*");
                        did_star = true;
                    }
                    continue;
                }
                was_same = true;
            } else {
                was_same = false;
                did_star = false;
            }
        }
        if o > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{o:08x} ");
        for i in 0..PER {
            if i == 8 {
                out.push(' ');
            }
            match row.get(i) {
                Some(b) => {
                    let _ = write!(out, " {b:02x}");
                }
                None => out.push_str("   "),
            }
        }
        out.push_str("  |");
        for &c in row {
            out.push(if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '.'
            });
        }
        out.push('|');
    }
    let _ = write!(out, "\n{:08x}\n", data.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexdump_prints_as_rados_does() {
        // `rados getomapheader` of "hello world, this is a longer header!".
        let want = "\
00000000  68 65 6c 6c 6f 20 77 6f  72 6c 64 2c 20 74 68 69  |hello world, thi|
00000010  73 20 69 73 20 61 20 6c  6f 6e 67 65 72 20 68 65  |s is a longer he|
00000020  61 64 65 72 21                                    |ader!|
00000025
";
        assert_eq!(hexdump(b"hello world, this is a longer header!"), want);
        assert_eq!(hexdump(b""), "");
    }

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
