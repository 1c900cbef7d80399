//! `msgr mon status | monmap | command JSON`: talks to a cluster's
//! monitors as the `ceph` CLI does (hunt, authenticate, monmap), then prints
//! the cluster status, the monmap, or any command's reply.

use std::time::Duration;

use bytes::Bytes;
use msgr_messages::MonMap;
use msgr_monc::{MonClient, MonError};

use crate::identity::{ClusterOpts, Identity};
use crate::json::{self, Value};

/// What to ask.
#[derive(Debug, Clone)]
pub enum MonAction {
    Status,
    Monmap,
    /// Any monitor command, as JSON (`{"prefix": "osd dump"}`).
    Command(String),
}

/// A finished request: text for stdout, text for stderr, an exit code.
pub struct MonOutput {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

impl MonOutput {
    /// A command's reply as `ceph` prints it: the output on stdout, the
    /// status on stderr, the errno as the exit code.
    pub fn of_reply(r: i32, rs: &str, output: &[u8]) -> MonOutput {
        MonOutput {
            stdout: String::from_utf8_lossy(output).into_owned(),
            stderr: match rs.is_empty() {
                true => String::new(),
                false => format!("{rs}\n"),
            },
            code: if r < 0 { (-r).min(255) as u8 } else { 0 },
        }
    }
}

const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn run(
    opts: &ClusterOpts,
    action: MonAction,
    as_json: bool,
) -> Result<MonOutput, String> {
    let id = Identity::load(opts)?;
    let mut cfg = id.mon_client_config();
    cfg.connect_timeout = Duration::from_secs(20);
    let mc = MonClient::connect(cfg).await.map_err(describe)?;
    let out = match action {
        MonAction::Status => status(&mc, as_json).await,
        MonAction::Monmap => Ok(monmap(&mc.monmap(), as_json)),
        MonAction::Command(cmd) => command(&mc, &cmd).await,
    };
    mc.shutdown().await;
    out
}

fn describe(e: MonError) -> String {
    match e {
        MonError::AuthFailed(why) => format!("authentication failed: {why}"),
        other => other.to_string(),
    }
}

async fn command(mc: &MonClient, cmd: &str) -> Result<MonOutput, String> {
    json::parse(cmd).map_err(|e| format!("the command is not JSON: {e}"))?;
    let r = mc
        .command(cmd, Bytes::new(), COMMAND_TIMEOUT)
        .await
        .map_err(describe)?;
    Ok(MonOutput::of_reply(r.r, &r.rs, &r.output))
}

async fn status(mc: &MonClient, as_json: bool) -> Result<MonOutput, String> {
    let r = mc
        .command(
            r#"{"prefix": "status", "format": "json"}"#,
            Bytes::new(),
            COMMAND_TIMEOUT,
        )
        .await
        .map_err(describe)?;
    if r.r < 0 {
        return Err(format!("status: error {}: {}", r.r, r.rs));
    }
    let text = String::from_utf8_lossy(&r.output).into_owned();
    if as_json {
        return Ok(MonOutput {
            stdout: text,
            stderr: String::new(),
            code: 0,
        });
    }
    let v = json::parse(&text)?;
    Ok(MonOutput {
        stdout: render_status(&v, session_line(mc)),
        stderr: String::new(),
        code: 0,
    })
}

/// The parts of `ceph -s` a status JSON holds: cluster id and health, the
/// monitors and the OSDs.
/// How the monitor session runs: `msgr2 crc mode`, `msgr2 secure mode`,
/// or `msgr1`.
fn session_line(mc: &msgr_monc::MonClient) -> Option<String> {
    match mc.is_msgr1() {
        true => Some("msgr1".into()),
        false => mc.con_mode().map(|m| format!("msgr2 {m} mode")),
    }
}

pub fn render_status(v: &Value, mode: Option<String>) -> String {
    let s = |path: &str| {
        v.pointer(path)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let n = |path: &str| v.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let quorum: Vec<&str> = v
        .get("quorum_names")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut checks = Vec::new();
    if let Some(Value::Object(m)) = v.pointer("/health/checks") {
        for (code, c) in m {
            let muted = matches!(c.get("muted"), Some(Value::Bool(true)));
            let msg = c
                .pointer("/summary/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            checks.push(format!(
                "            {code}{}: {msg}",
                if muted { " (muted)" } else { "" }
            ));
        }
    }
    let mut out = String::new();
    out.push_str("  cluster:\n");
    out.push_str(&format!("    id:     {}\n", s("/fsid")));
    out.push_str(&format!("    health: {}\n", s("/health/status")));
    for c in checks {
        out.push_str(&c);
        out.push('\n');
    }
    out.push_str("\n  services:\n");
    out.push_str(&format!(
        "    mon: {} daemons, quorum {}\n",
        n("/monmap/num_mons"),
        quorum.join(",")
    ));
    out.push_str(&format!(
        "    osd: {} osds: {} up, {} in\n",
        n("/osdmap/num_osds"),
        n("/osdmap/num_up_osds"),
        n("/osdmap/num_in_osds")
    ));
    if let Some(m) = mode {
        out.push_str(&format!("\n  session: {m}\n"));
    }
    out
}

fn monmap(m: &MonMap, as_json: bool) -> MonOutput {
    let mons: Vec<(String, String)> = m
        .addrs_by_rank()
        .into_iter()
        .map(|(n, a)| (n, a.to_string()))
        .collect();
    let stdout = if as_json {
        let mut o = json::Object::new();
        o.set("epoch", m.epoch)
            .set("fsid", m.fsid.to_string())
            .set("min_mon_release", m.min_mon_release)
            .set(
                "min_mon_release_name",
                MonMap::release_name(m.min_mon_release),
            )
            .set(
                "mons",
                Value::Array(
                    mons.iter()
                        .enumerate()
                        .map(|(rank, (name, addrs))| {
                            let mut e = json::Object::new();
                            e.set("rank", rank)
                                .set("name", name.as_str())
                                .set("addrs", addrs.as_str());
                            e.into_value()
                        })
                        .collect(),
                ),
            );
        o.into_value().to_string() + "\n"
    } else {
        let mut s = format!(
            "epoch {}\nfsid {}\nmin_mon_release {} ({})\n",
            m.epoch,
            m.fsid,
            m.min_mon_release,
            MonMap::release_name(m.min_mon_release)
        );
        for (rank, (name, addrs)) in mons.iter().enumerate() {
            s.push_str(&format!("{rank}: {addrs} mon.{name}\n"));
        }
        s
    };
    MonOutput {
        stdout,
        stderr: String::new(),
        code: 0,
    }
}
