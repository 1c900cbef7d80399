//! Perf counters as Ceph keeps them (common/perf_counters.h): loggers
//! ("AsyncMessenger::Worker-0", ...) of named counters, each a plain
//! number (a counter that only grows, or a gauge), or an average (a sum
//! and a count, of nanoseconds or of a quantity). They are atomics, so
//! any thread counts and any thread reads; `perf dump` and `perf schema`
//! render them as Ceph does, so its tools and exporters read them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::json::{self, Object, Value};

/// What a counter holds (perfcounter_type_d's combinations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Grows only (PERFCOUNTER_U64 | PERFCOUNTER_COUNTER).
    Counter,
    /// Goes up and down (PERFCOUNTER_U64).
    Gauge,
    /// A sum of durations and how many (PERFCOUNTER_TIME |
    /// PERFCOUNTER_LONGRUNAVG).
    TimeAvg,
    /// A sum of quantities and how many (PERFCOUNTER_U64 |
    /// PERFCOUNTER_LONGRUNAVG).
    U64Avg,
    /// A duration summed (PERFCOUNTER_TIME: Ceph's add_time, a gauge).
    Time,
}

/// PERFCOUNTER_TIME, PERFCOUNTER_U64, PERFCOUNTER_LONGRUNAVG,
/// PERFCOUNTER_COUNTER.
const TIME: u8 = 0x1;
const U64: u8 = 0x2;
const LONGRUNAVG: u8 = 0x4;
const COUNTER: u8 = 0x8;

impl Kind {
    /// The schema's `type` bits.
    pub fn type_bits(self) -> u8 {
        match self {
            Kind::Counter => U64 | COUNTER,
            Kind::Gauge => U64,
            Kind::TimeAvg => TIME | LONGRUNAVG,
            Kind::U64Avg => U64 | LONGRUNAVG,
            Kind::Time => TIME,
        }
    }
}

/// What a counter's values measure (unit_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain count.
    None,
    /// A count of bytes.
    Bytes,
}

/// Ceph's priorities (PerfCountersBuilder::PRIO_*): what the manager
/// collects and shows first.
pub const PRIO_CRITICAL: u8 = 10;
/// PRIO_INTERESTING.
pub const PRIO_INTERESTING: u8 = 8;
/// PRIO_USEFUL.
pub const PRIO_USEFUL: u8 = 5;
/// PRIO_UNINTERESTING.
pub const PRIO_UNINTERESTING: u8 = 2;
/// PRIO_DEBUGONLY.
pub const PRIO_DEBUGONLY: u8 = 0;

/// One counter's description, as the schema shows it.
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    /// The counter's name, a key of the dump.
    pub name: &'static str,
    /// What kind of counter it is.
    pub kind: Kind,
    /// What it counts, for people.
    pub description: &'static str,
    /// A short name for tables (`ceph daemonperf`).
    pub nick: &'static str,
    /// One of the `PRIO_*` priorities.
    pub priority: u8,
    /// What its values measure.
    pub unit: Unit,
}

/// A logger: named counters, their values, and their descriptions.
pub struct Logger {
    name: String,
    descs: &'static [Desc],
    /// A plain counter's value, or an average's sum.
    values: Cells,
    /// An average's count.
    counts: Cells,
    /// Sets the gauges read from elsewhere (a throttle's level), before
    /// each dump: they cost nothing between dumps.
    refresh: Option<Refresh>,
}

/// A logger's counters, on cache lines no other allocation shares: a
/// messenger's shards each count into a logger of their own, allocated one
/// after another on one thread, and counters packed into small
/// allocations would share lines across shards (every message's count a
/// transfer between cores).
struct Cells(Box<[Line]>);

/// 128 bytes: adjacent-line prefetchers pull lines in pairs.
#[repr(align(128))]
#[derive(Default)]
struct Line([AtomicU64; Line::CELLS]);

impl Line {
    const CELLS: usize = 16;
}

impl Cells {
    fn new(n: usize) -> Cells {
        Cells(
            (0..n.div_ceil(Line::CELLS))
                .map(|_| Line::default())
                .collect(),
        )
    }

    fn get(&self, i: usize) -> Option<&AtomicU64> {
        self.0.get(i / Line::CELLS)?.0.get(i % Line::CELLS)
    }
}

/// A logger's refresh (Logger::refreshed_by).
pub type Refresh = Box<dyn Fn(&Logger) + Send + Sync>;

impl Logger {
    /// A logger named `name` (a section of `perf dump`) with `descs`' counters.
    pub fn new(name: impl Into<String>, descs: &'static [Desc]) -> Logger {
        let zeros = || Cells::new(descs.len());
        Logger {
            name: name.into(),
            descs,
            values: zeros(),
            counts: zeros(),
            refresh: None,
        }
    }

    /// The logger, with `refresh` run before each dump to set the gauges
    /// it reads from elsewhere.
    pub fn refreshed_by(mut self, refresh: Refresh) -> Logger {
        self.refresh = Some(refresh);
        self
    }

    /// The logger's name (its section in `perf dump`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds `n` to counter (or gauge) `i`.
    pub fn inc(&self, i: usize, n: u64) {
        if let Some(v) = self.values.get(i) {
            v.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds a sample `n` to average `i` (its sum, and one to its count).
    pub fn avg_add(&self, i: usize, n: u64) {
        self.inc(i, n);
        if let Some(c) = self.counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes `n` from gauge `i`.
    pub fn dec(&self, i: usize, n: u64) {
        if let Some(v) = self.values.get(i) {
            v.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Sets gauge `i`.
    pub fn set(&self, i: usize, n: u64) {
        if let Some(v) = self.values.get(i) {
            v.store(n, Ordering::Relaxed);
        }
    }

    /// Adds a duration to time counter `i`, or a sample to time average `i`.
    pub fn tinc(&self, i: usize, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        match self.is_avg(i) {
            true => self.avg_add(i, ns),
            false => self.inc(i, ns),
        }
    }

    /// Counter `i`'s value (an average's sum).
    pub fn get(&self, i: usize) -> u64 {
        self.values.get(i).map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// Average `i`'s (sum, count).
    pub fn avg(&self, i: usize) -> (u64, u64) {
        let count = self.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed));
        (self.get(i), count)
    }

    fn is_avg(&self, i: usize) -> bool {
        self.descs
            .get(i)
            .is_some_and(|d| matches!(d.kind, Kind::TimeAvg | Kind::U64Avg))
    }

    /// This logger's section of `perf dump`.
    pub fn dump(&self) -> Value {
        dump_summed(std::slice::from_ref(&self))
    }

    fn refresh(&self) {
        if let Some(r) = &self.refresh {
            r(self);
        }
    }

    /// This logger's section of `perf schema`.
    pub fn schema(&self) -> Value {
        let mut o = Object::new();
        for d in self.descs {
            let mut s = Object::new();
            let value_type = match d.kind {
                Kind::Counter | Kind::Gauge => "integer",
                Kind::Time => "real",
                Kind::TimeAvg => "real-integer-pair",
                Kind::U64Avg => "integer-integer-pair",
            };
            let metric = match d.kind {
                Kind::Counter => "counter",
                _ => "gauge",
            };
            s.set("type", u64::from(d.kind.type_bits()))
                .set("metric_type", metric)
                .set("value_type", value_type)
                .set("description", d.description)
                .set("nick", d.nick)
                .set("priority", u64::from(d.priority))
                .set(
                    "units",
                    match d.unit {
                        Unit::None => "none",
                        Unit::Bytes => "bytes",
                    },
                );
            o.set(d.name, s.into_value());
        }
        o.into_value()
    }
}

/// The `perf dump` section of loggers of one name and kind, summed (each
/// messenger of a program has its own workers' loggers; Ceph's workers
/// are the program's, so a dump shows each worker once).
fn dump_summed(group: &[&Logger]) -> Value {
    let Some(first) = group.first() else {
        return Object::new().into_value();
    };
    for l in group {
        l.refresh();
    }
    let sum = |i: usize| -> (u64, u64) {
        group.iter().fold((0, 0), |(s, c), l| {
            let (v, n) = l.avg(i);
            (s.wrapping_add(v), c.wrapping_add(n))
        })
    };
    let mut o = Object::new();
    for (i, d) in first.descs.iter().enumerate() {
        let (v, count) = sum(i);
        let value: Value = match d.kind {
            Kind::Counter | Kind::Gauge => v.into(),
            Kind::Time => seconds(v),
            Kind::U64Avg => {
                let mut a = Object::new();
                a.set("avgcount", count).set("sum", v);
                a.into_value()
            }
            Kind::TimeAvg => {
                let mut a = Object::new();
                a.set("avgcount", count)
                    .set("sum", seconds(v))
                    .set("avgtime", seconds(v.checked_div(count).unwrap_or(0)));
                a.into_value()
            }
        };
        o.set(d.name, value);
    }
    o.into_value()
}

/// Nanoseconds as seconds, as Ceph writes them (`%ld.%09ld`).
fn seconds(ns: u64) -> Value {
    let text = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    // Digits, a point and digits are always a JSON number.
    json::number(&text).unwrap_or(Value::Null)
}

/// The loggers a program shows (CephContext's PerfCountersCollection).
///
/// ```
/// use std::sync::Arc;
/// use msgr_admin::json;
/// use msgr_admin::perf::{Collection, Desc, Kind, Logger, Unit, PRIO_USEFUL};
///
/// static DESCS: [Desc; 1] = [Desc {
///     name: "ops",
///     kind: Kind::Counter,
///     description: "Operations done",
///     nick: "ops",
///     priority: PRIO_USEFUL,
///     unit: Unit::None,
/// }];
/// let perf = Collection::new();
/// let logger = Arc::new(Logger::new("myapp", &DESCS));
/// perf.add(logger.clone());
/// logger.inc(0, 3);
/// // What `ceph daemon ... perf dump` prints, and Ceph's exporters read.
/// let dump = json::parse(&perf.dump(None, None).to_string())?;
/// assert_eq!(dump.pointer("/myapp/ops").and_then(json::Value::as_u64), Some(3));
/// # Ok::<(), String>(())
/// ```
#[derive(Default, Clone)]
pub struct Collection {
    loggers: Arc<Mutex<Vec<Arc<Logger>>>>,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().iter().map(|l| l.name.clone()).collect();
        f.debug_struct("Collection")
            .field("loggers", &names)
            .finish()
    }
}

impl Collection {
    /// An empty collection.
    pub fn new() -> Collection {
        Collection::default()
    }

    /// Add `logger` to what `perf dump` and `perf schema` show.
    pub fn add(&self, logger: Arc<Logger>) {
        self.lock().push(logger);
    }

    /// Stop showing `logger`.
    pub fn remove(&self, logger: &Arc<Logger>) {
        self.lock().retain(|l| !Arc::ptr_eq(l, logger));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Logger>>> {
        self.loggers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `perf dump [LOGGER [COUNTER]]`: every logger's counters, by name;
    /// loggers of one name are summed into one section.
    pub fn dump(&self, logger: Option<&str>, counter: Option<&str>) -> Value {
        self.render(logger, counter, dump_summed)
    }

    /// `perf schema` (Ceph's takes no filters; these are for callers).
    pub fn schema(&self, logger: Option<&str>, counter: Option<&str>) -> Value {
        self.render(logger, counter, |group| {
            group.first().map_or(Value::Null, |l| l.schema())
        })
    }

    fn render(
        &self,
        logger: Option<&str>,
        counter: Option<&str>,
        f: fn(&[&Logger]) -> Value,
    ) -> Value {
        let all: Vec<Arc<Logger>> = self.lock().clone();
        let mut names: Vec<&str> = all.iter().map(|l| l.name()).collect();
        names.sort_unstable();
        names.dedup();
        let mut o = Object::new();
        for name in names
            .into_iter()
            .filter(|n| logger.is_none_or(|want| want == *n))
        {
            let group: Vec<&Logger> = all
                .iter()
                .filter(|l| l.name == name)
                .map(|l| &**l)
                .collect();
            let mut section = f(&group);
            if let (Some(c), Value::Object(fields)) = (counter, &mut section) {
                fields.retain(|k, _| k == c);
            }
            o.set(name, section);
        }
        o.into_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static DESCS: [Desc; 3] = [
        Desc {
            name: "msgs",
            kind: Kind::Counter,
            description: "Messages",
            nick: "msg",
            priority: PRIO_USEFUL,
            unit: Unit::None,
        },
        Desc {
            name: "active",
            kind: Kind::Gauge,
            description: "Active",
            nick: "",
            priority: PRIO_DEBUGONLY,
            unit: Unit::None,
        },
        Desc {
            name: "lat",
            kind: Kind::TimeAvg,
            description: "Latency",
            nick: "",
            priority: PRIO_DEBUGONLY,
            unit: Unit::None,
        },
    ];

    #[test]
    fn loggers_made_one_after_another_share_no_cache_line() {
        let loggers: Vec<Logger> = (0..4)
            .map(|i| Logger::new(format!("w{i}"), &DESCS))
            .collect();
        let lines = |l: &Logger| {
            let cells =
                [&l.values, &l.counts].map(|c| c.get(0).map(|a| std::ptr::from_ref(a) as usize));
            cells.map(|a| a.unwrap() / 128)
        };
        let mut seen = std::collections::HashSet::new();
        for l in &loggers {
            for line in lines(l) {
                assert!(seen.insert(line), "line {line:#x} shared");
            }
            l.inc(2, 1);
            assert_eq!(l.get(2), 1);
        }
        // Past the first line's 16 counters, the next line.
        let many: &'static [Desc] = Box::leak(vec![DESCS[0]; 17].into_boxed_slice());
        let l = Logger::new("many", many);
        l.inc(16, 5);
        assert_eq!((l.get(16), l.get(15), l.get(17)), (5, 0, 0));
    }

    #[test]
    fn dump_and_schema_as_ceph_renders_them() {
        let l = Arc::new(Logger::new("w-0", &DESCS));
        l.inc(0, 3);
        l.inc(1, 2);
        l.dec(1, 1);
        l.tinc(2, Duration::from_millis(1500));
        l.tinc(2, Duration::from_millis(500));
        let c = Collection::new();
        c.add(l.clone());
        assert_eq!(
            c.dump(None, None).to_string(),
            r#"{"w-0":{"msgs":3,"active":1,"lat":{"avgcount":2,"sum":2.000000000,"avgtime":1.000000000}}}"#
        );
        assert_eq!(
            c.schema(Some("w-0"), Some("msgs")).to_string(),
            r#"{"w-0":{"msgs":{"type":10,"metric_type":"counter","value_type":"integer","description":"Messages","nick":"msg","priority":5,"units":"none"}}}"#
        );
        // A second logger of the same name is summed into the same section.
        let twin = Arc::new(Logger::new("w-0", &DESCS));
        twin.inc(0, 4);
        c.add(twin);
        assert_eq!(
            c.dump(None, Some("msgs")).to_string(),
            r#"{"w-0":{"msgs":7}}"#
        );
        c.remove(&l);
        assert_eq!(
            c.dump(None, Some("msgs")).to_string(),
            r#"{"w-0":{"msgs":4}}"#
        );
    }
}
