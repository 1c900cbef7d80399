//! The ceph.conf file format (src/common/ConfUtils.cc, `ConfFile::parse_buffer`).
//!
//! - `[section]` headers; `key = value` lines; blank lines.
//! - Comments start with `#` or `;` and run to the end of the line, except
//!   inside a double-quoted value.
//! - A value is either double-quoted (with `\"` and `\\` escapes) or the
//!   rest of the line, trimmed; a backslash at the end of a line continues
//!   the value on the next line.
//! - Key names are normalized (`ConfFile::normalize_key_name`): trimmed, and
//!   spaces, dashes and underscores are one and the same, so `mon host`,
//!   `mon-host` and `mon_host` name the same option.
//! - A later value for the same key in the same section wins.
//! - Anything else (a line without `=` outside a header, a header without
//!   `]`, an unterminated quote) is an error naming the line.

use std::fmt;

/// A parsed configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfFile {
    sections: Vec<Section>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    name: String,
    entries: Vec<(String, String)>,
}

/// A line of a ceph.conf that is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfParseError {
    /// The line's number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ConfParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ConfParseError {}

/// `ConfFile::normalize_key_name`: trimmed, with runs of spaces, dashes and
/// underscores turned into one underscore.
pub fn normalize_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut sep = false;
    for c in key.trim().chars() {
        if c == ' ' || c == '\t' || c == '-' || c == '_' {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('_');
            }
            sep = false;
            out.push(c);
        }
    }
    out
}

impl ConfFile {
    /// Parses the text of a ceph.conf.
    pub fn parse(text: &str) -> Result<ConfFile, ConfParseError> {
        let mut conf = ConfFile::default();
        // Keys before any header belong to "global", as Ceph treats them.
        let mut current = String::from("global");
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let number = i + 1;
            let mut line = strip_bom(lines[i], i).to_string();
            i += 1;
            let body = line.trim_start();
            if body.is_empty() || body.starts_with('#') || body.starts_with(';') {
                continue;
            }
            if let Some(rest) = body.strip_prefix('[') {
                let (name, after) = rest.split_once(']').ok_or(ConfParseError {
                    line: number,
                    reason: "section header without ']'",
                })?;
                if !is_blank_or_comment(after) {
                    return Err(ConfParseError {
                        line: number,
                        reason: "text after a section header",
                    });
                }
                let name = name.trim();
                if name.is_empty() {
                    return Err(ConfParseError {
                        line: number,
                        reason: "empty section name",
                    });
                }
                current = name.to_string();
                conf.section_mut(&current);
                continue;
            }
            // Join continuation lines (a trailing backslash outside quotes).
            while ends_with_continuation(&line) && i < lines.len() {
                line.pop();
                line.push_str(lines[i]);
                i += 1;
            }
            let (key, raw_value) = line.split_once('=').ok_or(ConfParseError {
                line: number,
                reason: "expected `key = value`, a [section] or a comment",
            })?;
            let key = normalize_key(key);
            if key.is_empty() {
                return Err(ConfParseError {
                    line: number,
                    reason: "empty key name",
                });
            }
            let value = parse_value(raw_value).map_err(|reason| ConfParseError {
                line: number,
                reason,
            })?;
            conf.set(&current, &key, value);
        }
        Ok(conf)
    }

    fn section_mut(&mut self, name: &str) -> &mut Section {
        let at = match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(Section {
                    name: name.to_string(),
                    entries: Vec::new(),
                });
                self.sections.len() - 1
            }
        };
        &mut self.sections[at]
    }

    /// Sets `key` (normalized) in `section`.
    pub fn set(&mut self, section: &str, key: &str, value: String) {
        let key = normalize_key(key);
        let s = self.section_mut(section);
        match s.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = value,
            None => s.entries.push((key, value)),
        }
    }

    /// The raw (unexpanded) value of `key` in `section`.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        let key = normalize_key(key);
        self.sections
            .iter()
            .find(|s| s.name == section)?
            .entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Section names, in file order.
    pub fn sections(&self) -> impl Iterator<Item = &str> {
        self.sections.iter().map(|s| s.name.as_str())
    }
}

fn strip_bom(line: &str, index: usize) -> &str {
    match index {
        0 => line.strip_prefix('\u{feff}').unwrap_or(line),
        _ => line,
    }
}

fn is_blank_or_comment(s: &str) -> bool {
    let t = s.trim_start();
    t.is_empty() || t.starts_with('#') || t.starts_with(';')
}

/// A trailing backslash that is not inside quotes and not in a comment.
fn ends_with_continuation(line: &str) -> bool {
    let mut in_quotes = false;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => in_quotes = !in_quotes,
            '#' | ';' if !in_quotes => return false,
            _ => {}
        }
    }
    escaped && !in_quotes
}

/// The value after `=`: quoted, or up to a comment, trimmed.
fn parse_value(raw: &str) -> Result<String, &'static str> {
    let t = raw.trim_start();
    if let Some(rest) = t.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        loop {
            match chars.next() {
                None => return Err("unterminated quoted value"),
                Some('"') => break,
                Some('\\') => match chars.next() {
                    Some(c) => out.push(c),
                    None => return Err("unterminated quoted value"),
                },
                Some(c) => out.push(c),
            }
        }
        if !is_blank_or_comment(chars.as_str()) {
            return Err("text after a quoted value");
        }
        return Ok(out);
    }
    let end = t.find(['#', ';']).unwrap_or(t.len());
    Ok(t[..end].trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keys_comments_and_normalization() {
        let c = ConfFile::parse(
            "; leading comment\n\
             fsid = 1234\n\
             [global]\n\
             \tmon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]  # the mon\n\
             auth-cluster-required=cephx\n\
             [client.admin]\n\
             keyring = \"/tmp/with # hash\"\n\
             log file = /var/log/$name.log ; comment\n\
             [osd]\n\
             osd_data = /a\\\n\
             /b\n",
        )
        .unwrap();
        assert_eq!(c.get("global", "fsid"), Some("1234"));
        assert_eq!(
            c.get("global", "mon_host"),
            Some("[v2:127.0.0.1:3300,v1:127.0.0.1:6789]")
        );
        assert_eq!(c.get("global", "mon-host"), c.get("global", "mon host"));
        assert_eq!(c.get("global", "auth_cluster_required"), Some("cephx"));
        assert_eq!(c.get("client.admin", "keyring"), Some("/tmp/with # hash"));
        assert_eq!(
            c.get("client.admin", "log_file"),
            Some("/var/log/$name.log")
        );
        assert_eq!(c.get("osd", "osd data"), Some("/a/b"));
        assert_eq!(
            c.sections().collect::<Vec<_>>(),
            ["global", "client.admin", "osd"]
        );
    }

    #[test]
    fn later_values_win_and_errors_name_the_line() {
        let c = ConfFile::parse("[global]\na = 1\na = 2\n").unwrap();
        assert_eq!(c.get("global", "a"), Some("2"));
        assert_eq!(ConfFile::parse("[global]\njunk\n").unwrap_err().line, 2);
        assert!(ConfFile::parse("[global\n").is_err());
        assert!(ConfFile::parse("a = \"open\n").is_err());
        assert!(ConfFile::parse(" = 3\n").is_err());
    }

    #[test]
    fn normalize_collapses_separators() {
        assert_eq!(normalize_key("  mon   host "), "mon_host");
        assert_eq!(normalize_key("ms-mon_client mode"), "ms_mon_client_mode");
    }
}
