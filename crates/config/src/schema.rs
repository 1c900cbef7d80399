//! Ceph's configuration options as librados knows them: each option's
//! name, type and the value a library handle has before anything sets it
//! (`data/options.tsv`, captured from Ceph 16.2.15's librados by
//! scripts/ceph/capture-options.py), and how librados parses a value
//! (`Option::parse_value`, src/common/options.cc) and prints it back
//! (`conf_stringify`), and which command-line arguments it takes
//! (`md_config_t::parse_argv`, src/common/config.cc).

use crate::normalize_key;

/// An option's type, as Ceph's schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text, taken as it is (also `addrvec`, `uuid`).
    Str,
    /// An address, printed as Ceph prints one (`127.0.0.1` is
    /// `v2:127.0.0.1:0/0`).
    Addr,
    /// `true`/`false`, `1`/`0` (any integer: non-zero is true).
    Bool,
    /// A signed integer.
    Int,
    /// An unsigned integer.
    Uint,
    /// A float, printed with six decimals (`0.970000`).
    Float,
    /// A byte count with an optional IEC suffix (`4K` is 4096).
    Size,
    /// Seconds, with an optional unit (`5m` is 300).
    Secs,
    /// Milliseconds, a plain integer.
    Millisecs,
    /// A log level, `N` or `N/M` (`1` is printed `1/1`).
    Subsys,
}

/// One option of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSchema {
    /// Its name, with underscores.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// A library handle's default, metavariables (`$name`, `$cluster`,
    /// `$id`) not yet expanded.
    pub default: &'static str,
}

const TABLE: &str = include_str!("../data/options.tsv");

fn kind_of(t: &str) -> Kind {
    match t {
        "bool" => Kind::Bool,
        "int" => Kind::Int,
        "uint" => Kind::Uint,
        "float" => Kind::Float,
        "size" => Kind::Size,
        "secs" => Kind::Secs,
        "millisecs" => Kind::Millisecs,
        "subsys" => Kind::Subsys,
        "addr" => Kind::Addr,
        _ => Kind::Str,
    }
}

fn table() -> &'static [OptionSchema] {
    static PARSED: std::sync::OnceLock<Vec<OptionSchema>> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| {
        let mut v: Vec<OptionSchema> = TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| {
                let mut f = l.splitn(3, '\t');
                let name = f.next()?;
                let kind = kind_of(f.next()?);
                let default = f.next().unwrap_or("");
                Some(OptionSchema {
                    name,
                    kind,
                    default,
                })
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(b.name));
        v
    })
}

/// The option named `name` (dashes or underscores, surrounding spaces
/// ignored, as Ceph normalizes names), if Ceph has it.
pub fn lookup(name: &str) -> Option<OptionSchema> {
    let key = normalize_key(name);
    let t = table();
    t.binary_search_by(|o| o.name.cmp(key.as_str()))
        .ok()
        .and_then(|i| t.get(i).copied())
}

/// Every option, sorted by name.
pub fn all() -> &'static [OptionSchema] {
    table()
}

impl Kind {
    /// `value` parsed as librados parses a value of this type and printed
    /// as `rados_conf_get` prints it; why not, if librados refuses it
    /// (its `rados_conf_set` then returns -EINVAL).
    pub fn normalize(self, value: &str) -> Result<String, String> {
        let v = value.trim();
        match self {
            Kind::Str => Ok(value.to_string()),
            Kind::Bool => {
                if v.eq_ignore_ascii_case("true") {
                    Ok("true".into())
                } else if v.eq_ignore_ascii_case("false") {
                    Ok("false".into())
                } else {
                    let n: i64 = v.parse().map_err(|_| format!("{v:?} is not a boolean"))?;
                    Ok(if n != 0 { "true" } else { "false" }.into())
                }
            }
            Kind::Int => v
                .parse::<i64>()
                .map(|n| n.to_string())
                .map_err(|_| format!("{v:?} is not an integer")),
            Kind::Uint | Kind::Millisecs => v
                .parse::<u64>()
                .map(|n| n.to_string())
                .map_err(|_| format!("{v:?} is not an unsigned integer")),
            Kind::Float => match v.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(format!("{f:.6}")),
                _ => Err(format!("{v:?} is not a number")),
            },
            Kind::Size => parse_size(v).map(|n| n.to_string()),
            Kind::Secs => parse_secs(v).map(|n| n.to_string()),
            Kind::Subsys => parse_subsys(v),
            Kind::Addr => parse_addr(v),
        }
    }
}

/// A byte count: digits and an optional K, M, G, T, P or E (powers of
/// 1024, also spelled Ki, Mi...), optionally followed by B.
fn parse_size(v: &str) -> Result<u64, String> {
    let bad = || format!("{v:?} is not a size (a number, optionally K, M, G, T, P or E)");
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(digits);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let unit = unit.strip_suffix('B').unwrap_or(unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        "P" => 50,
        "E" => 60,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// Seconds: an integer, or integers each with a unit (`1h 30m`).
fn parse_secs(v: &str) -> Result<u64, String> {
    let bad = || format!("{v:?} is not a time span (seconds, or e.g. 5m, 1h, 2d)");
    if let Ok(n) = v.parse::<u64>() {
        return Ok(n);
    }
    let mut total = 0u64;
    let mut rest = v.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(digits);
        let n: u64 = num.parse().map_err(|_| bad())?;
        let after = after.trim_start();
        let end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (unit, tail) = after.split_at(end);
        let mult = match unit {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86400,
            "w" | "wk" | "wks" | "week" | "weeks" => 7 * 86400,
            "mo" | "month" | "months" => 30 * 86400,
            "y" | "yr" | "yrs" | "year" | "years" => 365 * 86400,
            _ => return Err(bad()),
        };
        total = n
            .checked_mul(mult)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        rest = tail.trim_start();
    }
    Ok(total)
}

/// An address: `[TYPE:]IP[:PORT][/NONCE]` (IPv6 in brackets), printed
/// `TYPE:IP:PORT/NONCE` with v2, port 0 and nonce 0 when not given; `-`
/// (no address) as it is.
fn parse_addr(v: &str) -> Result<String, String> {
    if v == "-" || v.is_empty() {
        return Ok("-".to_string());
    }
    let bad = || format!("{v:?} is not an address ([v1:|v2:]IP[:PORT][/NONCE])");
    let (kind, rest) = match v.split_once(':') {
        Some((k @ ("v1" | "v2" | "any"), r)) => (k, r),
        _ => ("v2", v),
    };
    let (hostport, nonce) = match rest.split_once('/') {
        Some((h, n)) => (h, n.parse::<u32>().map_err(|_| bad())?),
        None => (rest, 0),
    };
    let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or_else(bad)?;
        h.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse::<u16>().map_err(|_| bad())?,
            None if after.is_empty() => 0,
            None => return Err(bad()),
        };
        (format!("[{h}]"), port)
    } else {
        let (h, p) = match hostport.split_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| bad())?),
            None => (hostport, 0),
        };
        h.parse::<std::net::Ipv4Addr>().map_err(|_| bad())?;
        (h.to_string(), p)
    };
    Ok(format!("{kind}:{host}:{port}/{nonce}"))
}

/// A log level: `N` (printed `N/N`) or `N/M`.
fn parse_subsys(v: &str) -> Result<String, String> {
    let bad = || format!("{v:?} is not a log level (N or N/M)");
    let level = |s: &str| s.trim().parse::<i32>().map_err(|_| bad());
    match v.split_once('/') {
        Some((a, b)) => Ok(format!("{}/{}", level(a)?, level(b)?)),
        None => {
            let n = level(v)?;
            Ok(format!("{n}/{n}"))
        }
    }
}

/// What [`parse_argv`] took from a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Argv {
    /// Options set, in order: (option name, value as given).
    pub set: Vec<(String, String)>,
    /// The indices of the arguments left (not Ceph's options), in order.
    pub rest: Vec<usize>,
}

/// Why [`parse_argv`] refused a command line: an option's value librados
/// would not take (its `rados_conf_parse_argv` returns -EINVAL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvError {
    /// The option.
    pub option: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for ArgvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{}: {}", self.option, self.reason)
    }
}

impl std::error::Error for ArgvError {}

/// Takes Ceph's options out of a command line as librados's
/// `rados_conf_parse_argv` does: `--OPTION value`, `--OPTION=value` for
/// every option of the schema (dashes or underscores), `--BOOL` and
/// `--no-BOOL` for booleans, `--default-OPTION value`, and `-m`, `-k` /
/// `--keyring`, `-M` / `--monmap`, `--bind`, `-r`. Anything else, `--id`
/// and `-c` among them (the `ceph` tool handles those itself), is left;
/// a `--` ends the options (and is left too). Values are checked against
/// their option's type; an option without its value is an error.
pub fn parse_argv(args: &[&str]) -> Result<Argv, ArgvError> {
    let mut out = Argv::default();
    let mut i = 0usize;
    let check = |o: OptionSchema, v: &str| -> Result<(String, String), ArgvError> {
        o.kind.normalize(v).map_err(|reason| ArgvError {
            option: o.name.to_string(),
            reason,
        })?;
        Ok((o.name.to_string(), v.to_string()))
    };
    while let Some(&arg) = args.get(i) {
        if arg == "--" {
            out.rest.extend(i..args.len());
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg, None),
        };
        let alias = match flag {
            "-m" => Some("mon_host"),
            "-k" | "--keyring" => Some("keyring"),
            "-M" | "--monmap" => Some("monmap"),
            "--bind" => Some("public_addr"),
            "-r" => Some("client_mountpoint"),
            _ => None,
        };
        let (name, default) = match flag.strip_prefix("--default-") {
            Some(n) => (n, true),
            None => (flag.strip_prefix("--").unwrap_or(""), false),
        };
        let option = match alias {
            Some(a) => lookup(a),
            None if flag.starts_with("--") && !name.is_empty() => lookup(name),
            None => None,
        };
        // The value of an option that takes one: inline, else the next
        // argument. None left is an error (librados's parse_argv returns
        // -EINVAL for a schema option; for -m or --keyring it exits the
        // process, which a library must not).
        let value = |i: &mut usize| -> Option<String> {
            match inline {
                Some(v) => Some(v.to_string()),
                None => {
                    let v = args.get(*i + 1)?;
                    *i += 1;
                    Some((*v).to_string())
                }
            }
        };
        match option {
            Some(o) if o.kind == Kind::Bool && !default && alias.is_none() => {
                let v = inline.unwrap_or("true");
                out.set.push(check(o, v)?);
            }
            Some(o) => match value(&mut i) {
                Some(v) => out.set.push(check(o, &v)?),
                None => {
                    return Err(ArgvError {
                        option: o.name.to_string(),
                        reason: format!("{flag} needs a value"),
                    })
                }
            },
            None => match name.strip_prefix("no-").and_then(lookup) {
                Some(o) if o.kind == Kind::Bool && inline.is_none() && !default => {
                    out.set.push((o.name.to_string(), "false".to_string()));
                }
                _ => out.rest.push(i),
            },
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_cephs_options_typed() {
        assert!(all().len() > 1700);
        let o = lookup("rados-osd-op-timeout").expect("known");
        assert_eq!((o.kind, o.default), (Kind::Secs, "0"));
        assert_eq!(lookup("debug_ms").map(|o| o.kind), Some(Kind::Subsys));
        assert_eq!(
            lookup("keyring").map(|o| o.default.starts_with("/etc/ceph/$cluster.$name")),
            Some(true)
        );
        assert!(lookup("bogus_option").is_none());
    }

    #[test]
    fn values_print_as_librados_prints_them() {
        // Each pair as Debian's librados 16.2.15 answered conf_set then
        // conf_get; None where it refused the value with -EINVAL.
        let cases = [
            (Kind::Uint, "3K", None),
            (Kind::Secs, "1.5", None),
            (Kind::Bool, "yes", None),
            (Kind::Bool, "0", Some("false")),
            (Kind::Size, "1M", Some("1048576")),
            (Kind::Float, "3", Some("3.000000")),
            (Kind::Secs, "5m", Some("300")),
            (Kind::Uint, "abc", None),
            (Kind::Subsys, "1", Some("1/1")),
            (Kind::Addr, "127.0.0.1", Some("v2:127.0.0.1:0/0")),
        ];
        for (kind, v, want) in cases {
            assert_eq!(kind.normalize(v).ok().as_deref(), want, "{kind:?} {v}");
        }
    }

    #[test]
    fn a_command_line_keeps_what_is_not_cephs() {
        // As librados 16.2.15's rados_conf_parse_argv_remainder left it.
        let args = [
            "prog",
            "--debug-ms",
            "1",
            "--id",
            "x",
            "--format",
            "json",
            "--log_to_stderr",
            "--no-log-to-syslog",
            "osd",
            "--ms_crc_data=false",
            "-m",
            "1.2.3.4",
        ];
        let got = parse_argv(&args).expect("parses");
        let rest: Vec<&str> = got.rest.iter().map(|&i| args[i]).collect();
        assert_eq!(rest, ["prog", "--id", "x", "--format", "json", "osd"]);
        assert_eq!(
            got.set,
            [
                ("debug_ms", "1"),
                ("log_to_stderr", "true"),
                ("log_to_syslog", "false"),
                ("ms_crc_data", "false"),
                ("mon_host", "1.2.3.4"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert!(parse_argv(&["--osd_pool_default_size", "x"]).is_err());
        assert!(parse_argv(&["--debug_ms"]).is_err());
        assert!(parse_argv(&["--log_to_stderr=maybe"]).is_err());
        let d = parse_argv(&["--default-debug-ms", "3", "x", "--no-log_to_stderr=1"]);
        assert_eq!(d.map(|a| a.rest), Ok(vec![2, 3]));
        assert_eq!(
            parse_argv(&["--", "--debug_ms", "1"]).map(|a| a.rest),
            Ok(vec![0, 1, 2])
        );
    }
}
