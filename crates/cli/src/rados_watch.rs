//! `msgr rados watch OBJ`, `notify OBJ MSG`, `listwatchers OBJ`: the
//! `rados` tool's watch/notify commands (src/tools/rados/rados.cc) on our
//! client, printing what it prints: `watch` prints each notify (`NOTIFY
//! cookie C notify_id N from G` and the payload's hexdump) and
//! acknowledges it with its own payload until a line (or the end) on
//! stdin; `notify` sends MSG encoded as a string, waits 10 s and prints
//! each watcher's reply (`reply client.G cookie C : N bytes`, its
//! hexdump) and those that timed out (`timeout client.G cookie C`), then
//! fails if any did; `listwatchers` prints `watcher=ADDR client.G
//! cookie=C` a watcher.

use std::io::Write;
use std::time::Duration;

use msgr_rados::{IoCtx, RadosError, WatchEvent};

/// One watch/notify command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchCmd {
    Watch { obj: String },
    Notify { obj: String, msg: String },
    ListWatchers { obj: String },
}

impl WatchCmd {
    /// From the command's words, if they are one of these.
    pub fn parse(w: &[&str]) -> Option<WatchCmd> {
        Some(match w {
            ["watch", obj] => WatchCmd::Watch {
                obj: obj.to_string(),
            },
            ["notify", obj, msg] => WatchCmd::Notify {
                obj: obj.to_string(),
                msg: msg.to_string(),
            },
            ["listwatchers", obj] => WatchCmd::ListWatchers {
                obj: obj.to_string(),
            },
            _ => return None,
        })
    }
}

/// `cpp_strerror`: `(N) text`.
pub fn strerror(errno: i32) -> String {
    let n = errno.saturating_abs();
    let text = std::io::Error::from_raw_os_error(n).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("({n}) {text}")
}

fn print(s: &str) {
    let mut out = std::io::stdout();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// Runs `cmd` in `io` (pool `pool`): what is left to print, or the error.
pub async fn run(io: &IoCtx, pool: &str, cmd: &WatchCmd) -> Result<String, RadosError> {
    match cmd {
        WatchCmd::Watch { obj } => {
            let mut watch = io.watch(obj.as_bytes()).await?;
            print("press enter to exit...\n");
            // A line (or the end) on stdin ends it, read on a thread of
            // its own (a blocking read).
            let (tx, mut enter) = tokio::sync::oneshot::channel::<()>();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
                let _ = tx.send(());
            });
            loop {
                tokio::select! {
                    _ = &mut enter => break,
                    e = watch.next_event() => match e {
                        Some(WatchEvent::Notify { notify_id, cookie, notifier_gid, payload }) => {
                            print(&format!(
                                "NOTIFY cookie {cookie} notify_id {notify_id} from {notifier_gid}\n{}",
                                crate::hexdump::hexdump(&payload)
                            ));
                            watch.notify_ack(notify_id, &payload).await?;
                        }
                        Some(WatchEvent::Error { err }) => {
                            print(&format!("ERROR cookie {} err {}\n", watch.cookie(), strerror(err)));
                        }
                        None => break,
                    },
                }
            }
            watch.unwatch().await?;
            Ok(String::new())
        }
        WatchCmd::Notify { obj, msg } => {
            // `encode(std::string)`: its length, then its bytes.
            let mut payload = (msg.len() as u32).to_le_bytes().to_vec();
            payload.extend_from_slice(msg.as_bytes());
            let r = io
                .notify(obj.as_bytes(), &payload, Duration::from_secs(10))
                .await?;
            let mut out = String::new();
            for (gid, cookie, reply) in &r.acks {
                out.push_str(&format!(
                    "reply client.{gid} cookie {cookie} : {} bytes\n",
                    reply.len()
                ));
                if !reply.is_empty() {
                    out.push_str(&crate::hexdump::hexdump(reply));
                }
            }
            for (gid, cookie) in &r.timeouts {
                out.push_str(&format!("timeout client.{gid} cookie {cookie}\n"));
            }
            if r.timeouts.is_empty() {
                return Ok(out);
            }
            print(&out);
            Err(RadosError::Os {
                errno: -110,
                what: format!("error calling notify on {pool}/{obj}"),
            })
        }
        WatchCmd::ListWatchers { obj } => {
            let ws = io.list_watchers(obj.as_bytes()).await?;
            Ok(ws
                .iter()
                .map(|w| {
                    format!(
                        "watcher={} client.{} cookie={}\n",
                        w.addr, w.watcher_id, w.cookie
                    )
                })
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_as_ceph_prints_them() {
        assert_eq!(strerror(-110), "(110) Connection timed out");
    }

    #[test]
    fn parses_the_three_commands() {
        assert_eq!(
            WatchCmd::parse(&["notify", "o", "m"]),
            Some(WatchCmd::Notify {
                obj: "o".into(),
                msg: "m".into()
            })
        );
        assert_eq!(WatchCmd::parse(&["watch"]), None);
    }
}
