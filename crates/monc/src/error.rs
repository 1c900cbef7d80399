//! Why a monitor client failed.

use std::time::Duration;

use msgr_encoding::EntityAddrvec;

/// Why the client failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonError {
    /// Every monitor refused our credentials.
    AuthFailed(String),
    /// No monitor session within the timeout; the last problem seen.
    Timeout(String),
    /// No monitor session within `after` (the connect timeout): each
    /// monitor of mon_host, and why it failed.
    Unreachable {
        /// Each monitor tried, and why it failed.
        tried: Vec<(EntityAddrvec, String)>,
        /// The connect timeout that ran out.
        after: Duration,
    },
    /// The configuration names no monitor we can reach over msgr2.
    NoMonitors,
    /// The client was shut down.
    Shutdown,
    /// A monitor command failed (its errno and status line).
    Command {
        /// The command sent.
        cmd: String,
        /// The negative errno the monitor returned.
        r: i32,
        /// The monitor's status line.
        rs: String,
    },
    /// A monitor's reply could not be read.
    BadReply(String),
    /// The OSD map has no OSD of this id (or it has no address).
    NoSuchOsd(u64),
    /// The caller asked for a timeout so long that its deadline is past
    /// what the clock can represent (the caller's mistake).
    TimeoutTooLong(Duration),
}

impl std::fmt::Display for MonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MonError::AuthFailed(why) => write!(f, "authentication failed: {why}"),
            MonError::Timeout(why) => write!(f, "timed out: {why}"),
            MonError::Unreachable { tried, after } => {
                write!(f, "no monitor session within {after:?}; tried")?;
                for (i, (addr, why)) in tried.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}{addr} ({why})")?;
                }
                f.write_str(": check mon_host and that the monitors are up")
            }
            MonError::NoMonitors => {
                f.write_str("no monitor address to dial (v2:, or v1: with msgr2 off or alone)")
            }
            MonError::Shutdown => f.write_str("the monitor client was shut down"),
            MonError::TimeoutTooLong(t) => write!(f, "timeout {t:?} is too long"),
            MonError::Command { cmd, r, rs } => write!(f, "{cmd}: error {r}: {rs}"),
            MonError::BadReply(why) => write!(f, "unreadable reply from the monitor: {why}"),
            MonError::NoSuchOsd(id) => write!(f, "osd.{id} is not in the OSD map"),
        }
    }
}

impl std::error::Error for MonError {}
