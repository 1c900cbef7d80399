//! What a `msgr rados bench` run is asked ([`BenchArgs`]) and measured
//! ([`Totals`]), and what it prints of them: the per-second table, the
//! summary and the `--format json` document, as `rados bench` prints them
//! (src/common/obj_bencher.cc).

use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Write,
    Seq,
    Rand,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchArgs {
    pub seconds: u64,
    pub mode: Mode,
    /// `-t`.
    pub concurrency: usize,
    /// `-b`.
    pub op_size: usize,
    pub cleanup: bool,
    pub json: bool,
}

/// What a run measured.
#[derive(Debug, Default)]
pub struct Totals {
    pub ops: u64,
    pub seconds: f64,
    pub lat: Vec<f64>,
    pub(super) bw_samples: Vec<f64>,
    pub(super) iops_samples: Vec<f64>,
    /// The per-second rows (`--format json`'s `datas`).
    pub(super) seconds_rows: Vec<Second>,
}

/// One second's row of the table (`status_printer`); `last_lat` None when
/// nothing finished in that second.
#[derive(Debug, Clone, Copy)]
pub(super) struct Second {
    pub sec: u64,
    pub cur_ops: usize,
    pub started: u64,
    pub finished: u64,
    pub avg_bw: f64,
    pub cur_bw: f64,
    pub last_lat: Option<f64>,
    pub avg_lat: f64,
}

impl Second {
    pub(super) fn text(&self) -> String {
        let (cur_bw, last) = match self.last_lat {
            Some(l) => (g(self.cur_bw), g(l)),
            None => ("0".into(), "-".into()),
        };
        format!(
            "{:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}\n",
            self.sec,
            self.cur_ops,
            self.started,
            self.finished,
            g(self.avg_bw),
            cur_bw,
            last,
            g(self.avg_lat)
        )
    }

    /// As Ceph's formatter writes it: every value a string, floats `%f`.
    pub(super) fn json(&self) -> crate::json::Value {
        let mut j = crate::json::Object::new();
        j.set("sec", self.sec.to_string())
            .set("cur_ops", self.cur_ops.to_string())
            .set("started", self.started.to_string())
            .set("finished", self.finished.to_string())
            .set("avg_bw", format!("{:.6}", self.avg_bw))
            .set("cur_bw", format!("{:.6}", self.cur_bw))
            .set("last_lat", format!("{:.6}", self.last_lat.unwrap_or(0.0)))
            .set("avg_lat", format!("{:.6}", self.avg_lat));
        j.into_value()
    }
}

/// C++ iostream's default float format (`%g`, 6 significant digits).
pub fn g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v == 0.0 {
            "0".into()
        } else {
            "inf".into()
        };
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        let s = format!("{:.5e}", v);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = trim(m);
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim(&format!("{v:.decimals$}")).to_string()
}

fn trim(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

pub(super) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The sample standard deviation (n - 1), as Ceph's running variance.
pub(super) fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

pub(super) fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

pub(super) fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

pub(super) const MIB: f64 = 1048576.0;

/// The per-second table's header.
pub(super) fn header() -> String {
    format!(
        "{:>5}{:>8}{:>10}{:>10}{:>10}{:>10}{:>12}{:>12}\n",
        "sec",
        "Cur ops",
        "started",
        "finished",
        "avg MB/s",
        "cur MB/s",
        "last lat(s)",
        "avg lat(s)"
    )
}

/// What `rados bench --format json` writes: the run's settings (writes
/// only), the per-second rows (`datas`) and the summary, every value a
/// string as Ceph's formatter writes them (`%d`, `%f`). One line, after
/// the run (Ceph streams it as it goes).
pub(super) fn json_summary(
    args: &BenchArgs,
    t: &Totals,
    object_size: usize,
    prefix: Option<&str>,
) -> String {
    let bw = t.ops as f64 * args.op_size as f64 / t.seconds / MIB;
    let f = |v: f64| format!("{v:.6}");
    let mut j = crate::json::Object::new();
    if let Some(prefix) = prefix {
        j.set("concurrent_ios", args.concurrency.to_string())
            .set("object_size", object_size.to_string())
            .set("op_size", args.op_size.to_string())
            .set("seconds_to_run", args.seconds.to_string())
            .set("max_objects", "0")
            .set("object_prefix", prefix);
    }
    let rows: Vec<crate::json::Value> = t.seconds_rows.iter().map(Second::json).collect();
    let writes = args.mode == Mode::Write;
    let (made, size) = match writes {
        true => ("total_writes_made", "write_size"),
        false => ("total_reads_made", "read_size"),
    };
    j.set("datas", crate::json::Value::Array(rows))
        .set("total_time_run", f(t.seconds))
        .set(made, t.ops.to_string())
        .set(size, args.op_size.to_string())
        .set("object_size", object_size.to_string())
        .set("bandwidth", f(bw));
    if writes {
        j.set("stddev_bandwidth", f(stddev(&t.bw_samples)))
            .set("max_bandwidth", f(max(&t.bw_samples)))
            .set("min_bandwidth", f(min(&t.bw_samples)));
    }
    // Ceph writes stddev_iops with %d from a double (garbage); ours is
    // the value it means, whole.
    j.set(
        "average_iops",
        ((t.ops as f64 / t.seconds) as u64).to_string(),
    )
    .set("stddev_iops", (stddev(&t.iops_samples) as u64).to_string())
    .set("max_iops", (max(&t.iops_samples) as u64).to_string())
    .set("min_iops", (min(&t.iops_samples) as u64).to_string())
    .set("average_latency", f(mean(&t.lat)));
    if writes {
        j.set("stddev_latency", f(stddev(&t.lat)));
    }
    j.set("max_latency", f(max(&t.lat)))
        .set("min_latency", f(min(&t.lat)));
    let mut s = j.into_value().to_string();
    s.push('\n');
    s
}

/// The summary `rados bench` prints after a run.
pub(super) fn summary(args: &BenchArgs, t: &Totals, object_size: usize) -> String {
    let bw = t.ops as f64 * args.op_size as f64 / t.seconds / MIB;
    let iops = (t.ops as f64 / t.seconds) as u64;
    let mut s = String::new();
    let w = if args.mode == Mode::Write { 24 } else { 22 };
    let mut line = |label: &str, v: String| {
        let _ = writeln!(s, "{:<w$}{v}", format!("{label}:"));
    };
    let (kind, size) = match args.mode {
        Mode::Write => ("writes", "Write size"),
        _ => ("reads", "Read size"),
    };
    line("Total time run", g(t.seconds));
    line(&format!("Total {kind} made"), t.ops.to_string());
    line(size, args.op_size.to_string());
    line("Object size", object_size.to_string());
    line("Bandwidth (MB/sec)", g(bw));
    if args.mode == Mode::Write {
        line("Stddev Bandwidth", g(stddev(&t.bw_samples)));
        line("Max bandwidth (MB/sec)", g(max(&t.bw_samples)));
        line("Min bandwidth (MB/sec)", g(min(&t.bw_samples)));
    }
    line("Average IOPS", iops.to_string());
    line("Stddev IOPS", g(stddev(&t.iops_samples)));
    line("Max IOPS", (max(&t.iops_samples) as u64).to_string());
    line("Min IOPS", (min(&t.iops_samples) as u64).to_string());
    line("Average Latency(s)", g(mean(&t.lat)));
    if args.mode == Mode::Write {
        line("Stddev Latency(s)", g(stddev(&t.lat)));
    }
    line("Max latency(s)", g(max(&t.lat)));
    line("Min latency(s)", g(min(&t.lat)));
    s
}
