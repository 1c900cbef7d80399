//! A minimal JSON value, writer and parser: the `msgr` tool's `--json`
//! output, the monitor's JSON replies, and the admin socket's commands and
//! answers.
// The parser's position only moves forward over bytes it has seen, so it
// stays at most the input's length (no overflow), and every index is
// checked against that length first; the `config` fuzz target round-trips
// it. The writer counts nesting in a usize.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::fmt::Write;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    /// A number written as given (Ceph writes seconds as `S.NNNNNNNNN`).
    Raw(String),
    List(Vec<Value>),
    Object(Vec<(String, Value)>),
}

macro_rules! value_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from($v: $t) -> Self {
                $e
            }
        }
    )*};
}

value_from! {
    bool => |v| Value::Bool(v),
    u64 => |v| Value::U64(v),
    u32 => |v| Value::U64(v.into()),
    u16 => |v| Value::U64(v.into()),
    u8 => |v| Value::U64(v.into()),
    usize => |v| Value::U64(v as u64),
    i64 => |v| Value::I64(v),
    i32 => |v| Value::I64(v.into()),
    f64 => |v| Value::F64(v),
    &str => |v| Value::Str(v.to_string()),
    String => |v| Value::Str(v),
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Self {
        Value::List(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl Value {
    /// Compact JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::U64(n) => {
                let _ = write!(out, "{n}");
            }
            Value::I64(n) => {
                let _ = write!(out, "{n}");
            }
            // -0.0 as "0": "-0" would read back as the integer 0 (found by
            // the config fuzz target); JSON gives the sign no meaning.
            Value::F64(n) if *n == 0.0 => out.push('0'),
            Value::F64(n) if n.is_finite() => {
                let _ = write!(out, "{n}");
            }
            Value::F64(_) => out.push_str("null"),
            Value::Str(s) => write_str(s, out),
            Value::Raw(s) => out.push_str(s),
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Object(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// JSON text as Ceph's `json-pretty` writes it: four spaces a level,
    /// `"key": value`.
    pub fn to_json_pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, level: usize) {
        let pad = |out: &mut String, level: usize| {
            for _ in 0..level {
                out.push_str("    ");
            }
        };
        match self {
            Value::List(items) if !items.is_empty() => {
                out.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, level + 1);
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push(']');
            }
            Value::Object(fields) if !fields.is_empty() => {
                out.push_str("{\n");
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, level + 1);
                    write_str(k, out);
                    out.push_str(": ");
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push('}');
            }
            other => other.write(out),
        }
    }

    /// `key=value` text for humans: strings bare, lists in brackets.
    pub fn to_text(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(Value::to_text).collect();
                format!("[{}]", parts.join(","))
            }
            other => other.to_json(),
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An ordered JSON object under construction.
#[derive(Debug, Default, Clone)]
pub struct Object(pub Vec<(String, Value)>);

impl Object {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.0.push((key.to_string(), value.into()));
        self
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_nests() {
        let mut o = Object::new();
        o.set("a", "x\"y\n").set("n", 3u64).set("l", vec![1u64, 2]);
        o.set("none", None::<u64>);
        assert_eq!(
            o.into_value().to_json(),
            r#"{"a":"x\"y\n","n":3,"l":[1,2],"none":null}"#
        );
    }
}

/// Parses JSON text (RFC 8259) into a [`Value`]; numbers become `U64`,
/// `I64` or `F64`. Nesting is capped, so hostile input cannot exhaust the
/// stack.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("JSON: trailing data at byte {}", p.i));
    }
    Ok(v)
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A path of object keys, e.g. `["osdmap", "num_osds"]`.
    pub fn at(&self, path: &[&str]) -> Option<&Value> {
        path.iter().try_fold(self, |v, k| v.get(k))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::U64(n) => Some(*n),
            Value::I64(n) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    pub fn as_list(&self) -> &[Value] {
        match self {
            Value::List(l) => l,
            _ => &[],
        }
    }
}

const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("JSON: {what} at byte {}", self.i))
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.s.get(self.i) {
            None => self.err("unexpected end"),
            Some(b'{') => self.nested(|p| p.object()),
            Some(b'[') => self.nested(|p| p.list()),
            Some(b'"') => self.string().map(Value::Str),
            Some(b't') if self.eat("true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(Value::Bool(false)),
            Some(b'n') if self.eat("null") => Ok(Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.err("unexpected character"),
        }
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Value, String>,
    ) -> Result<Value, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn object(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.eat("}") {
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return self.err("expected a member name");
            }
            let k = self.string()?;
            self.ws();
            if !self.eat(":") {
                return self.err("expected ':'");
            }
            self.ws();
            let v = self.value()?;
            members.push((k, v));
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("}") {
                return Ok(Value::Object(members));
            }
            return self.err("expected ',' or '}'");
        }
    }

    fn list(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat("]") {
            return Ok(Value::List(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("]") {
                return Ok(Value::List(items));
            }
            return self.err("expected ',' or ']'");
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i] != b'"' && self.s[self.i] != b'\\' {
                if self.s[self.i] < 0x20 {
                    return self.err("control character in a string");
                }
                self.i += 1;
            }
            out.push_str(
                std::str::from_utf8(&self.s[start..self.i]).map_err(|_| "JSON: invalid UTF-8")?,
            );
            match self.s.get(self.i) {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {}
            }
            self.i += 1;
            let c = match self.s.get(self.i) {
                Some(b'"') => '"',
                Some(b'\\') => '\\',
                Some(b'/') => '/',
                Some(b'b') => '\u{8}',
                Some(b'f') => '\u{c}',
                Some(b'n') => '\n',
                Some(b'r') => '\r',
                Some(b't') => '\t',
                Some(b'u') => {
                    let hi = self.hex4()?;
                    let cp = if (0xD800..0xDC00).contains(&hi)
                        && self.s[self.i + 1..].starts_with(b"\\u")
                    {
                        self.i += 2;
                        let lo = self.hex4()?;
                        0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3ff)
                    } else {
                        hi
                    };
                    char::from_u32(cp).unwrap_or('\u{fffd}')
                }
                _ => return self.err("bad escape"),
            };
            out.push(c);
            self.i += 1;
        }
    }

    /// Reads the 4 hex digits after `\u` (self.i on the `u` or the last
    /// digit read); leaves self.i on the last digit.
    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .s
            .get(self.i + 1..self.i + 5)
            .ok_or("JSON: short \\u escape")?;
        let text = std::str::from_utf8(digits).map_err(|_| "JSON: bad \\u escape")?;
        let v = u32::from_str_radix(text, 16).map_err(|_| "JSON: bad \\u escape")?;
        self.i += 4;
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(
                self.s[self.i],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| "JSON: bad number")?;
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Value::U64(n));
        }
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::I64(n));
        }
        text.parse::<f64>()
            .map(Value::F64)
            .map_err(|_| format!("JSON: bad number {text:?}"))
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn parses_what_monitors_answer() {
        let v = parse(
            r#" {"fsid": "1-2", "health": {"status": "HEALTH_OK", "checks": {}},
            "quorum": [0], "osdmap": {"num_osds": 1, "x": -2, "f": 1.5e3},
            "s": "a\"b\\n\u00e9\ud83d\ude00", "t": true, "n": null, "e": []} "#,
        )
        .unwrap();
        assert_eq!(
            v.at(&["health", "status"]).and_then(Value::as_str),
            Some("HEALTH_OK")
        );
        assert_eq!(
            v.at(&["osdmap", "num_osds"]).and_then(Value::as_u64),
            Some(1)
        );
        assert_eq!(v.at(&["osdmap", "x"]), Some(&Value::I64(-2)));
        assert_eq!(v.at(&["osdmap", "f"]), Some(&Value::F64(1500.0)));
        assert_eq!(
            v.get("s").and_then(Value::as_str),
            Some("a\"b\\n\u{e9}\u{1f600}")
        );
        assert_eq!(
            v.get("quorum").map(Value::as_list).map(|l| l.len()),
            Some(1)
        );
        assert_eq!(parse(&v.to_json()).unwrap().to_json(), v.to_json());
    }

    /// Found by the config fuzz target: -0.0 wrote "-0", which read back
    /// as the integer 0 and so wrote "0".
    #[test]
    fn negative_zero_writes_back_the_same() {
        let v = parse("-0.0").unwrap();
        assert_eq!(v.to_json(), "0");
        assert_eq!(parse(&v.to_json()).unwrap().to_json(), "0");
    }

    #[test]
    fn bad_json_is_an_error() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\" 1}",
            "\"\\u12\"",
            "01x",
            "[1] 2",
            "\"\u{1}\"",
            "{\"a\":}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).is_err());
    }
}
