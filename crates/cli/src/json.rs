//! A minimal JSON value and writer for the tool's `--json` output.

use std::fmt::Write;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
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
            Value::F64(n) if n.is_finite() => {
                let _ = write!(out, "{n}");
            }
            Value::F64(_) => out.push_str("null"),
            Value::Str(s) => write_str(s, out),
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
