//! JSON as Ceph's tools write and read it, on serde_json: the `msgr`
//! tool's `--json` output, the monitor's JSON replies, and the admin
//! socket's commands and answers.
//!
//! serde_json is built with `preserve_order`, so objects keep the order
//! their members were set or read in (Ceph's dumps are ordered), and with
//! `arbitrary_precision`, so a number keeps the text it was made from:
//! Ceph writes seconds as `S.NNNNNNNNN` (`2.000000000`, not `2.0`), and
//! [`number`] makes such a value.
//!
//! Parsing untrusted text ([`parse`]) is bounded by serde_json's
//! recursion limit (128 levels): deeper nesting is an error, not a stack
//! overflow.

use std::str::FromStr;

use serde::Serialize;
pub use serde_json::{Map, Number, Value};

/// Parses JSON text (RFC 8259) into a [`Value`]; the error names what was
/// wrong and where (line and column).
pub fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("JSON: {e}"))
}

/// The number written as `text` (e.g. Ceph's `%ld.%09ld` seconds), kept as
/// written; None if `text` is not a JSON number.
pub fn number(text: &str) -> Option<Value> {
    Number::from_str(text).ok().map(Value::Number)
}

/// JSON text as Ceph's `json-pretty` writes it: four spaces a level,
/// `"key": value`, empty objects and lists as `{}` and `[]`.
pub fn pretty(v: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Writing a Value into memory cannot fail (its keys are strings and a
    // Vec takes every write); were it to, the compact text is the same
    // value.
    if v.serialize(&mut ser).is_err() {
        return v.to_string();
    }
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `key=value` text for humans: strings bare, lists in brackets, the rest
/// as compact JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(text).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// An ordered JSON object under construction, set member by member.
#[derive(Debug, Default, Clone)]
pub struct Object(pub Map<String, Value>);

impl Object {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets member `key` (in place, if it was set before).
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.0.insert(key.to_string(), value.into());
        self
    }

    /// The object as a JSON value.
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
            o.into_value().to_string(),
            r#"{"a":"x\"y\n","n":3,"l":[1,2],"none":null}"#
        );
    }

    /// Ceph's json-pretty layout, and Ceph's seconds kept as written.
    #[test]
    fn pretty_as_ceph_writes_it() {
        let mut inner = Object::new();
        inner
            .set("avgcount", 2u64)
            .set("sum", number("2.000000000"))
            .set("empty", Value::Array(Vec::new()))
            .set("none", Object::new().into_value());
        let mut o = Object::new();
        o.set("lat", inner.into_value()).set("l", vec!["a", "b"]);
        assert_eq!(
            pretty(&o.into_value()),
            "{\n    \"lat\": {\n        \"avgcount\": 2,\n        \"sum\": 2.000000000,\n        \
             \"empty\": [],\n        \"none\": {}\n    },\n    \"l\": [\n        \"a\",\n        \
             \"b\"\n    ]\n}"
        );
        assert_eq!(number("1.5x"), None);
    }

    #[test]
    fn text_for_humans() {
        let v = parse(r#"["a", 1, {"k": "v"}]"#).unwrap();
        assert_eq!(text(&v), r#"[a,1,{"k":"v"}]"#);
    }

    #[test]
    fn parses_what_monitors_answer() {
        let v = parse(
            r#" {"fsid": "1-2", "health": {"status": "HEALTH_OK", "checks": {}},
            "quorum": [0], "osdmap": {"num_osds": 1, "x": -2, "f": 1.5e3},
            "s": "a\"b\\n\u00e9\ud83d\ude00", "t": true, "n": null, "e": []} "#,
        )
        .unwrap();
        assert_eq!(
            v.pointer("/health/status").and_then(Value::as_str),
            Some("HEALTH_OK")
        );
        assert_eq!(
            v.pointer("/osdmap/num_osds").and_then(Value::as_u64),
            Some(1)
        );
        assert_eq!(v.pointer("/osdmap/x").and_then(Value::as_i64), Some(-2));
        assert_eq!(v.pointer("/osdmap/f").and_then(Value::as_f64), Some(1500.0));
        assert_eq!(
            v.get("s").and_then(Value::as_str),
            Some("a\"b\\n\u{e9}\u{1f600}")
        );
        assert_eq!(
            v.get("quorum").and_then(Value::as_array).map(Vec::len),
            Some(1)
        );
        assert_eq!(parse(&v.to_string()).unwrap().to_string(), v.to_string());
    }

    /// Found by the config fuzz target on the parser serde_json replaced:
    /// a negative zero must write back as it reads.
    #[test]
    fn negative_zero_writes_back_the_same() {
        for text in ["-0.0", "-0"] {
            let v = parse(text).unwrap();
            assert_eq!(parse(&v.to_string()).unwrap().to_string(), v.to_string());
        }
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
        assert!(parse(&deep).unwrap_err().contains("recursion limit"));
    }
}
