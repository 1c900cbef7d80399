//! The tool's logs: the messenger's and the monitor client's `tracing`
//! events, on stderr, at the level Ceph's `debug_ms` names (msgr_messenger's
//! `log` module says what each level shows). The level comes from, first
//! to last: RUST_LOG (tracing's own filter syntax), `--debug-ms N` (or
//! `--debug_ms N`, `--debug-ms=N`) anywhere on the command line, `debug_ms`
//! in CEPH_ARGS or ceph.conf; by default 0, warnings only.

use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// `debug_ms` (Ceph's `N` or `N/M`, log level and memory level) as a
/// level: 0 warnings, 1–4 info, 5–14 debug, 15 and up trace.
pub fn level_of(debug_ms: &str) -> Option<LevelFilter> {
    let n: u32 = debug_ms.split('/').next()?.trim().parse().ok()?;
    Some(match n {
        0 => LevelFilter::WARN,
        1..=4 => LevelFilter::INFO,
        5..=14 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    })
}

/// Takes `--debug-ms N` out of `args` (it may come anywhere), returning
/// its value.
pub fn take_debug_ms(args: &mut Vec<std::ffi::OsString>) -> Option<String> {
    let mut found = None;
    let mut i = 0;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()).map(str::to_string) {
        let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        if flag != "--debug-ms" && flag != "--debug_ms" {
            i += 1;
            continue;
        }
        args.remove(i);
        found = match arg.split_once('=') {
            Some((_, v)) => Some(v.to_string()),
            None if i < args.len() => Some(args.remove(i).to_string_lossy().into_owned()),
            None => None,
        };
    }
    found
}

/// Starts the logs on stderr: RUST_LOG if set, else `debug_ms` (from the
/// command line, else CEPH_ARGS or ceph.conf).
pub fn init(debug_ms: Option<String>) -> Result<(), String> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(&spec).map_err(|e| format!("RUST_LOG: {e}"))?
        }
        _ => {
            let debug_ms = debug_ms
                .or_else(configured_debug_ms)
                .unwrap_or_else(|| "0".into());
            let level = level_of(&debug_ms)
                .ok_or_else(|| format!("debug_ms: {debug_ms:?} is not a level (0 to 20)"))?;
            EnvFilter::default().add_directive(level.into())
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init()
        .map_err(|e| e.to_string())
}

/// `debug_ms` from CEPH_ARGS or ceph.conf (the default paths, or CEPH_CONF).
fn configured_debug_ms() -> Option<String> {
    let env = msgr_config::Env::from_process();
    let config = msgr_config::Config::load(&Default::default(), &env).ok()?;
    config.get("debug_ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_ms_levels_and_where_the_flag_is() {
        assert_eq!(level_of("0"), Some(LevelFilter::WARN));
        assert_eq!(level_of("1/5"), Some(LevelFilter::INFO));
        assert_eq!(level_of("10"), Some(LevelFilter::DEBUG));
        assert_eq!(level_of("20"), Some(LevelFilter::TRACE));
        assert_eq!(level_of("x"), None);
        let mut args: Vec<std::ffi::OsString> =
            ["msgr", "ping", "--debug-ms", "5", "v2:127.0.0.1:1"]
                .iter()
                .map(Into::into)
                .collect();
        assert_eq!(take_debug_ms(&mut args).as_deref(), Some("5"));
        assert_eq!(args.len(), 3);
        let mut args: Vec<std::ffi::OsString> = ["msgr", "--debug_ms=1", "mon"]
            .iter()
            .map(Into::into)
            .collect();
        assert_eq!(take_debug_ms(&mut args).as_deref(), Some("1"));
        assert_eq!(args, ["msgr", "mon"]);
    }
}
