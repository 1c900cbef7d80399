//! `msgr decode CAPTURE [--json] [--keys FILE]`: prints every msgr2 frame
//! and msgr1 item of a pcap or pcapng capture, per connection and
//! direction.

use std::io::Write;

use crate::describe::{frame_fields, msgr1_fields};
use crate::{analyze, KeyLog, Record};
use msgr_admin::json::Object;

/// Counts of what a decode saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// TCP connections seen.
    pub connections: usize,
    /// Frames decoded.
    pub frames: usize,
    /// Secure-mode chunks that could not be decrypted.
    pub encrypted_chunks: usize,
    /// Problems recorded.
    pub problems: usize,
}

/// Decodes `capture` and writes one line per record to `out`.
pub fn decode(
    capture: &[u8],
    keys: &KeyLog,
    json: bool,
    out: &mut dyn Write,
) -> std::io::Result<Summary> {
    let mut summary = Summary::default();
    let mut io_result = Ok(());
    analyze(capture, keys, |record| {
        if io_result.is_err() {
            return;
        }
        let (text, obj) = render(&record, &mut summary);
        io_result = if json {
            writeln!(out, "{}", obj.into_value())
        } else {
            writeln!(out, "{text}")
        };
    });
    io_result.map(|_| summary)
}

fn render(record: &Record, summary: &mut Summary) -> (String, Object) {
    let mut o = Object::new();
    let text = match record {
        Record::Connection {
            conn,
            client,
            server,
            roles_known,
        } => {
            summary.connections = summary.connections.saturating_add(1);
            o.set("conn", *conn)
                .set("event", "connection")
                .set("client", client.to_string())
                .set("server", server.to_string())
                .set("roles_known", *roles_known);
            let guess = if *roles_known {
                ""
            } else {
                " (roles guessed: no SYN captured)"
            };
            format!("conn {conn}: {client} -> {server}{guess}")
        }
        Record::Banner { conn, dir, banner } => {
            o.set("conn", *conn)
                .set("dir", dir.short())
                .set("event", "banner")
                .set("supported", banner.supported)
                .set("required", banner.required);
            format!(
                "conn {conn} {} banner supported={:#x} required={:#x}",
                dir.short(),
                banner.supported,
                banner.required
            )
        }
        Record::Frame(f) => {
            summary.frames = summary.frames.saturating_add(1);
            let p = &f.frame.preamble;
            let lens: Vec<u32> = p.used().iter().map(|s| s.len).collect();
            o.set("protocol", "msgr2")
                .set("conn", f.conn)
                .set("dir", f.dir.short())
                .set("tag", f.frame.tag.to_string())
                .set("encrypted", f.format.secure)
                .set("mode", f.format.to_string())
                .set("segments", lens.clone())
                .set("compressed", p.is_compressed());
            if p.is_compressed() {
                let full: Vec<usize> = f
                    .frame
                    .segments
                    .iter()
                    .take(f.frame.num_segments())
                    .map(|s| s.len())
                    .collect();
                o.set("decompressed_segments", full);
            }
            let fixed = o.0.len();
            frame_fields(&f.frame, &mut o);
            let mut line = format!(
                "conn {} {} {} {:?}{}{}",
                f.conn,
                f.dir.short(),
                f.frame.tag,
                lens,
                if f.format.secure { " [decrypted]" } else { "" },
                if p.is_compressed() {
                    " [compressed]"
                } else {
                    ""
                }
            );
            for (k, v) in o.0.iter().skip(fixed) {
                if matches!(v, msgr_admin::json::Value::Null) {
                    continue;
                }
                line.push_str(&format!(" {k}={}", msgr_admin::json::text(v)));
            }
            line
        }
        Record::Msgr1 {
            conn,
            dir,
            event,
            raw,
        } => {
            summary.frames = summary.frames.saturating_add(1);
            o.set("protocol", "msgr1")
                .set("conn", *conn)
                .set("dir", dir.short())
                .set("tag", event.tag_name())
                .set("bytes", raw.len());
            let fixed = o.0.len();
            msgr1_fields(event, &mut o);
            let mut line = format!("conn {conn} {} msgr1 {}", dir.short(), event.tag_name());
            for (k, v) in o.0.iter().skip(fixed) {
                if matches!(v, msgr_admin::json::Value::Null) {
                    continue;
                }
                line.push_str(&format!(" {k}={}", msgr_admin::json::text(v)));
            }
            line
        }
        Record::Encrypted { conn, dir, bytes } => {
            summary.encrypted_chunks = summary.encrypted_chunks.saturating_add(1);
            o.set("protocol", "msgr2")
                .set("conn", *conn)
                .set("dir", dir.short())
                .set("tag", None::<&str>)
                .set("encrypted", true)
                .set("bytes", *bytes);
            format!(
                "conn {conn} {} [encrypted: {bytes} bytes; --keys decrypts]",
                dir.short()
            )
        }
        Record::Problem { conn, dir, problem } => {
            summary.problems = summary.problems.saturating_add(1);
            if let Some(c) = conn {
                o.set("conn", *c);
            }
            if let Some(d) = dir {
                o.set("dir", d.short());
            }
            o.set("event", "error")
                .set("kind", problem.kind())
                .set("error", problem.to_string());
            match (conn, dir) {
                (None, _) => format!("capture: {problem}"),
                (Some(c), Some(d)) => format!("conn {c} {} error: {problem}", d.short()),
                (Some(c), None) => format!("conn {c} error: {problem}"),
            }
        }
    };
    (text, o)
}
