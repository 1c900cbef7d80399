//! `msgr rados -p POOL opbench COUNT notify|compound-write|compound-read
//! [-t N]`: latency and client CPU per op of watch/notify round trips and
//! 4 KiB compound operations, the same workloads as the librados program
//! scripts/bench/rados_ops_bench.c, printing the same line, so that
//! scripts/bench/rados-ops-vs-librados.sh compares the two on one cluster:
//!
//! - `notify`: one watch, whose task acknowledges each notify with a
//!   4-byte payload, and COUNT sequential notifies to the same object from
//!   the same client (notifier -> OSD -> watcher -> OSD -> notifier);
//! - `compound-write`: COUNT write operations on COUNT objects, each
//!   create (not exclusive) + setxattr (16 bytes) + write 4 KiB at 0 +
//!   omap_set of one key (16 bytes), N (`-t`, 1 unless given) in flight;
//! - `compound-read`: the same objects written first (not measured), then
//!   COUNT read operations, each stat + read 4 KiB + getxattrs (librados's
//!   C API has no single-xattr read op) + omap_get_vals_by_keys of the key.
//!
//! The objects are removed after (not measured). The line:
//! `tool=msgr mode=M ops=N in_flight=Q secs=S ops_per_s=R median_us=L
//! p99_us=P cpu_us_per_op=C`: each op's latency from its start to its
//! reply, CPU the process's user + system time (getrusage) over the
//! measured phase divided by the ops.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_rados::{IoCtx, RadosError, ReadOp, WatchEvent, WriteOp};
use tokio::task::JoinSet;

use crate::common::Latencies;

/// What `opbench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpMode {
    /// Watch/notify round trips.
    Notify,
    /// 4 KiB compound write operations.
    CompoundWrite,
    /// 4 KiB compound read operations.
    CompoundRead,
}

impl OpMode {
    fn name(self) -> &'static str {
        match self {
            OpMode::Notify => "notify",
            OpMode::CompoundWrite => "compound-write",
            OpMode::CompoundRead => "compound-read",
        }
    }
}

/// `opbench COUNT MODE` and its `-t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpBenchArgs {
    /// Operations (notifies) measured.
    pub count: u64,
    /// The workload.
    pub mode: OpMode,
    /// Operations in flight (notifies: always 1).
    pub in_flight: usize,
}

/// Bytes a compound op writes and reads.
const OP_SIZE: usize = 4096;
/// The xattr's name, the omap key, and their 16-byte value.
const XATTR: &str = "bench";
const OMAP_KEY: &str = "bench_key";
const VALUE: &[u8; 16] = b"0123456789abcdef";

impl OpBenchArgs {
    /// From the command's words (`opbench COUNT MODE`), if they are
    /// opbench's; `in_flight` is `-t` if it was given.
    pub fn parse(w: &[&str], in_flight: Option<usize>) -> Option<Result<OpBenchArgs, String>> {
        let ["opbench", rest @ ..] = w else {
            return None;
        };
        let [count, mode] = rest else {
            return Some(Err(
                "opbench: expected opbench COUNT notify|compound-write|compound-read".into(),
            ));
        };
        Some((|| {
            let count: u64 = count
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("opbench: {count} is not a positive count"))?;
            let mode = match *mode {
                "notify" => OpMode::Notify,
                "compound-write" => OpMode::CompoundWrite,
                "compound-read" => OpMode::CompoundRead,
                m => {
                    return Err(format!(
                        "opbench: {m}: expected notify, compound-write or compound-read"
                    ))
                }
            };
            let in_flight = match mode {
                OpMode::Notify => 1,
                _ => in_flight.unwrap_or(1).max(1),
            };
            Ok(OpBenchArgs {
                count,
                mode,
                in_flight,
            })
        })())
    }
}

fn cpu_now() -> Result<Duration, RadosError> {
    msgr_sys::process_cpu_time().map_err(|e| RadosError::Os {
        errno: -e.raw_os_error().unwrap_or(5),
        what: "getrusage".into(),
    })
}

fn prefix() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("opbench_{}_{}", host.trim(), std::process::id())
}

fn object(prefix: &str, i: u64) -> String {
    format!("{prefix}_obj{i}")
}

/// The line both tools print.
fn line(args: &OpBenchArgs, secs: f64, cpu: Duration, lat: &mut Latencies) -> String {
    let n = args.count as f64;
    format!(
        "tool=msgr mode={} ops={} in_flight={} secs={secs:.3} ops_per_s={:.1} median_us={} \
         p99_us={} cpu_us_per_op={:.2}\n",
        args.mode.name(),
        args.count,
        args.in_flight,
        n / secs,
        lat.percentile(50.0),
        lat.percentile(99.0),
        cpu.as_secs_f64() * 1e6 / n,
    )
}

/// Runs the bench in `io`; returns its line.
pub async fn run(io: &IoCtx, args: &OpBenchArgs) -> Result<String, RadosError> {
    let prefix = prefix();
    match args.mode {
        OpMode::Notify => notify(io, &prefix, args).await,
        OpMode::CompoundWrite | OpMode::CompoundRead => {
            let data = Bytes::from(vec![b'z'; OP_SIZE]);
            let read = args.mode == OpMode::CompoundRead;
            let mut lat = Latencies::default();
            let r = async {
                if read {
                    run_ops(io, &prefix, args, false, &data, &mut Latencies::default()).await?;
                }
                let cpu0 = cpu_now()?;
                let start = Instant::now();
                run_ops(io, &prefix, args, read, &data, &mut lat).await?;
                let secs = start.elapsed().as_secs_f64();
                Ok::<_, RadosError>((secs, cpu_now()? - cpu0))
            }
            .await;
            // Remove what was written, also after a failure (an object
            // never written is not an error).
            for i in 0..args.count {
                match io.remove(object(&prefix, i).as_bytes()).await {
                    Ok(()) | Err(RadosError::Os { errno: -2, .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let (secs, cpu) = r?;
            Ok(line(args, secs, cpu, &mut lat))
        }
    }
}

async fn notify(io: &IoCtx, prefix: &str, args: &OpBenchArgs) -> Result<String, RadosError> {
    let obj = format!("{prefix}_notify");
    io.write_full(obj.as_bytes(), Bytes::new()).await?;
    let mut watch = io.watch(obj.as_bytes()).await?;
    let cookie = watch.cookie();
    // The watcher: acknowledges each notify with "pong", as the C
    // program's callback does, until the bench drops its end.
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let watcher = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                e = watch.next_event() => match e {
                    Some(WatchEvent::Notify { notify_id, .. }) => {
                        watch.notify_ack(notify_id, b"pong").await?;
                    }
                    Some(WatchEvent::Error { err }) => {
                        return Err(RadosError::Os { errno: err, what: "the bench's watch".into() });
                    }
                    None => break,
                },
            }
        }
        watch.unwatch().await
    });
    let mut lat = Latencies::default();
    let cpu0 = cpu_now()?;
    let start = Instant::now();
    let mut result = Ok(());
    for _ in 0..args.count {
        let at = Instant::now();
        match io
            .notify(obj.as_bytes(), b"ping", Duration::from_secs(10))
            .await
        {
            Ok(reply) if reply.acks.len() == 1 && reply.timeouts.is_empty() => {
                lat.record(at.elapsed());
            }
            Ok(reply) => {
                result = Err(RadosError::Os {
                    errno: -110,
                    what: format!(
                        "notify {obj}: {} acks and {} timeouts where the bench's one watch \
                         (cookie {cookie}) should have acknowledged",
                        reply.acks.len(),
                        reply.timeouts.len()
                    ),
                });
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_now()? - cpu0;
    let _ = stop.send(());
    let unwatched = watcher.await.map_err(|e| RadosError::Os {
        errno: -5,
        what: format!("the bench's watcher task: {e}"),
    })?;
    io.remove(obj.as_bytes()).await?;
    result?;
    unwatched?;
    Ok(line(args, secs, cpu, &mut lat))
}

/// One compound op on object `name`: the write or the read, its outputs
/// checked; returns its latency.
async fn one_op(io: IoCtx, name: String, read: bool, data: Bytes) -> Result<Duration, RadosError> {
    let at = Instant::now();
    if read {
        let mut op = ReadOp::new();
        let stat = op.stat();
        let bytes = op.read(0, OP_SIZE as u64);
        let xattrs = op.getxattrs();
        let keys: BTreeSet<String> = [OMAP_KEY.to_string()].into();
        let omap = op.omap_get_vals_by_keys(&keys);
        let r = io.operate_read(name.as_bytes(), &op).await?;
        let lat = at.elapsed();
        let (stat, bytes, xattrs, omap) =
            (r.get(stat)?, r.get(bytes)?, r.get(xattrs)?, r.get(omap)?);
        if stat.size != OP_SIZE as u64
            || bytes.len() != OP_SIZE
            || xattrs.len() != 1
            || omap.len() != 1
        {
            return Err(RadosError::Os {
                errno: -5,
                what: format!(
                    "{name}: read back size {}, {} bytes, {} xattrs, {} omap keys where the \
                     bench wrote {OP_SIZE}, {OP_SIZE}, 1 and 1",
                    stat.size,
                    bytes.len(),
                    xattrs.len(),
                    omap.len()
                ),
            });
        }
        Ok(lat)
    } else {
        let mut op = WriteOp::new();
        op.create(false);
        op.setxattr(XATTR, VALUE);
        op.write(0, data);
        let kv: BTreeMap<String, Bytes> =
            [(OMAP_KEY.to_string(), Bytes::from_static(VALUE))].into();
        op.omap_set(&kv);
        io.operate_write(name.as_bytes(), &op).await?;
        Ok(at.elapsed())
    }
}

/// Runs `args.count` ops on objects 0..count, `args.in_flight` at a time.
async fn run_ops(
    io: &IoCtx,
    prefix: &str,
    args: &OpBenchArgs,
    read: bool,
    data: &Bytes,
    lat: &mut Latencies,
) -> Result<(), RadosError> {
    if args.in_flight <= 1 {
        for i in 0..args.count {
            lat.record(one_op(io.clone(), object(prefix, i), read, data.clone()).await?);
        }
        return Ok(());
    }
    // N in flight: a new one as each completes.
    let mut set = JoinSet::new();
    let mut next = 0u64;
    while next < args.count && set.len() < args.in_flight {
        set.spawn(one_op(io.clone(), object(prefix, next), read, data.clone()));
        next += 1;
    }
    while let Some(done) = set.join_next().await {
        let done = done.map_err(|e| RadosError::Os {
            errno: -5,
            what: format!("a bench op's task: {e}"),
        })?;
        lat.record(done?);
        if next < args.count {
            set.spawn(one_op(io.clone(), object(prefix, next), read, data.clone()));
            next += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_its_words() {
        let p = |w: &[&str], t| OpBenchArgs::parse(w, t);
        assert_eq!(p(&["bench", "1", "write"], None), None);
        assert_eq!(
            p(&["opbench", "100", "compound-read"], Some(8)),
            Some(Ok(OpBenchArgs {
                count: 100,
                mode: OpMode::CompoundRead,
                in_flight: 8
            }))
        );
        // notifies are sequential whatever -t says; -t defaults to 1
        assert_eq!(
            p(&["opbench", "5", "notify"], Some(8))
                .unwrap()
                .unwrap()
                .in_flight,
            1
        );
        assert_eq!(
            p(&["opbench", "5", "compound-write"], None)
                .unwrap()
                .unwrap()
                .in_flight,
            1
        );
        assert!(p(&["opbench", "0", "notify"], None).unwrap().is_err());
        assert!(p(&["opbench", "5", "rand"], None).unwrap().is_err());
        assert!(p(&["opbench", "5"], None).unwrap().is_err());
    }
}
