//! Bytes as Ceph's tools print them (`bufferlist::hexdump`): `rados
//! getomapheader`, `rados watch` and `rados notify`.

use std::fmt::Write;

/// `bufferlist::hexdump` with its trailing newline, as `hexdump -C`
/// prints: 16 bytes a row (offset, two groups of eight, the printable
/// characters), a run of rows of one repeated byte as `*`, then the length.
/// Nothing for no bytes.
pub fn hexdump(data: &[u8]) -> String {
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

    /// As `rados watch` printed a notify of "hello" (Ceph 16).
    #[test]
    fn hexdump_prints_as_ceph() {
        assert_eq!(
            hexdump(b"\x05\0\0\0hello"),
            "00000000  05 00 00 00 68 65 6c 6c  6f                       |....hello|\n00000009\n"
        );
        assert_eq!(hexdump(b""), "");
        // Rows of one same byte: the first, then a star.
        let a = [b'a'; 40];
        assert_eq!(
            hexdump(&a),
            "00000000  61 61 61 61 61 61 61 61  61 61 61 61 61 61 61 61  |aaaaaaaaaaaaaaaa|\n\
             *\n\
             00000020  61 61 61 61 61 61 61 61                           |aaaaaaaa|\n00000028\n"
        );
    }
}
