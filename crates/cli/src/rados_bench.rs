//! `msgr rados bench SECONDS write|seq|rand`: `rados bench` on our client,
//! with its objects (names, contents, the metadata object), so that each
//! tool reads what the other wrote, and its output (src/common/
//! obj_bencher.cc; docs/research/rados-ops.md §6).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use msgr_rados::{IoCtx, Ops, RadosError};
use msgr_uring::rt::{self, JoinSet};

mod report;

pub use report::{g, BenchArgs, Mode, Totals};
use report::{header, json_summary, max, mean, min, summary, Second, MIB};

/// `BENCH_LASTRUN_METADATA`.
const METADATA: &str = "benchmark_last_metadata";
/// SEQUENTIAL_WRITE | SEQUENTIAL_READ | APPEND_ONLY | IMMUTABLE.
const HINT_FLAGS: u32 = 0x35;

fn hostname() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    h.trim().chars().take(29).collect()
}

/// `{prefix}_object{n}`, written without the formatting machinery, as the
/// header below: both are made per op, on the path whose CPU the bench
/// measures.
fn object_name(prefix: &str, n: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    const INFIX: &str = "_object";
    let mut name = String::with_capacity(prefix.len() + INFIX.len() + digits.len());
    name.push_str(prefix);
    name.push_str(INFIX);
    name.push_str(digits);
    name
}

/// An op's buffer: `'z'`s with `I'm the %16dth op!` (and its NUL) first.
pub fn contents(op_size: usize, index: u64) -> Bytes {
    let mut b = vec![b'z'; op_size];
    put_header(&mut b, index);
    Bytes::from(b)
}

/// Writes op `index`'s `I'm the %16dth op!` and its NUL at the start of
/// `b`, cut as snprintf cuts it (at most `b.len() - 1` characters and the
/// NUL); returns how many bytes that is.
fn put_header(b: &mut [u8], index: u64) -> usize {
    const HEAD: &[u8] = b"I'm the ";
    const TAIL: &[u8] = b"th op!\0";
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(index).as_bytes();
    // `%16d`: right-aligned in 16 columns, wider when it needs more (a
    // u64 has up to 20 digits).
    let pad = 16usize.saturating_sub(digits.len());
    let mut text = [b' '; HEAD.len() + 20 + TAIL.len()];
    let mut at = 0;
    for part in [HEAD, &[b' '; 16][..pad], digits, TAIL] {
        text[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    let n = at.min(b.len());
    if n > 0 {
        b[..n - 1].copy_from_slice(&text[..n - 1]);
        b[n - 1] = 0;
    }
    n
}

/// Whether `got` is op `index`'s buffer of `op_size` bytes (read back
/// without building the expected buffer).
fn is_contents(got: &[u8], op_size: usize, index: u64) -> bool {
    let mut head = [b'z'; 40];
    let n = put_header(&mut head[..op_size.min(40)], index);
    // The filler compared a block at a time (memcmp), not a byte at a time.
    const FILL: [u8; 256] = [b'z'; 256];
    got.len() == op_size
        && got[..n] == head[..n]
        && got[n..].chunks(FILL.len()).all(|c| c == &FILL[..c.len()])
}

/// Write buffers, reused once nothing else holds them, as rados bench
/// rewrites its `contents[slot]`: a fresh buffer costs its fill and, at
/// 4 MiB, its pages' faults on every op (a quarter of the client's CPU).
/// A buffer comes back when its op completes, often while the messenger
/// still holds it (a sent message is kept until the OSD acknowledges it,
/// which may come after the reply); it is taken once it is free.
#[derive(Default)]
struct Recycler(Mutex<Vec<Bytes>>);

/// Buffers kept at most: more than the ops in flight and the messages
/// awaiting acknowledgement.
const RECYCLED: usize = 1024;

impl Recycler {
    fn buffers(&self) -> std::sync::MutexGuard<'_, Vec<Bytes>> {
        lock(&self.0)
    }

    /// Op `index`'s buffer: a returned one nothing else holds, with its
    /// header rewritten, or a new one.
    fn contents(&self, op_size: usize, index: u64) -> Bytes {
        let free = {
            let mut kept = self.buffers();
            let at = kept
                .iter()
                .position(|b| b.len() == op_size && b.is_unique());
            at.map(|i| kept.swap_remove(i))
        };
        match free.map(Bytes::try_into_mut) {
            Some(Ok(mut b)) => {
                put_header(&mut b, index);
                b.freeze()
            }
            _ => contents(op_size, index),
        }
    }

    /// Takes back the buffer of an op that completed.
    fn give_back(&self, b: Bytes) {
        let mut kept = self.buffers();
        if kept.len() < RECYCLED {
            kept.push(b);
        }
    }
}

/// What the engine runs next: the object, its ops, the op index a read
/// checks its data against, and the write buffer to take back after.
type Next = Option<(String, Ops, Option<u64>, Option<Bytes>)>;

/// What a bench's workers share: the op source, and what they did.
struct Progress<N> {
    next: N,
    started: u64,
    finished: u64,
    lat: Vec<f64>,
    /// The first op that failed ends the run.
    failed: Option<RadosError>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One of the bench's `concurrency` slots: starts the next op as its last
/// one completes (as rados bench's completions do), until the time is up,
/// the source has no more or an op failed. A task per slot, not per op:
/// an op's completion then wakes only its slot, not the loop that prints.
async fn worker<N>(
    io: IoCtx,
    progress: Arc<Mutex<Progress<N>>>,
    recycler: Arc<Recycler>,
    end: Instant,
    op_size: usize,
) where
    N: FnMut(u64, &Recycler) -> Next,
{
    loop {
        let (name, ops, verify, keep) = {
            let mut p = lock(&progress);
            if p.failed.is_some() || Instant::now() >= end {
                return;
            }
            let index = p.started;
            let Some(op) = (p.next)(index, &recycler) else {
                return;
            };
            p.started += 1;
            op
        };
        let at = Instant::now();
        let r = io.operate(name.as_bytes(), ops).await;
        let lat = at.elapsed().as_secs_f64();
        if let Some(b) = keep {
            recycler.give_back(b);
        }
        // Reads check what they got against the op index it was written by.
        let r = r.and_then(|reply| {
            let Some(index) = verify else { return Ok(()) };
            let got = reply
                .ops
                .first()
                .map(|o| &o.outdata[..])
                .unwrap_or_default();
            if is_contents(got, op_size, index) {
                Ok(())
            } else {
                eprintln!("{name} is not correct!");
                Err(RadosError::Os {
                    errno: -5,
                    what: name.clone(),
                })
            }
        });
        let mut p = lock(&progress);
        match r {
            Ok(()) => {
                p.finished += 1;
                p.lat.push(lat);
            }
            Err(e) => {
                p.failed.get_or_insert(e);
                return;
            }
        }
    }
}

/// The engine: keeps `concurrency` ops going until the time is up or
/// `next` has no more, printing a row a second.
async fn run_ops<N>(
    args: &BenchArgs,
    io: &IoCtx,
    next: N,
    out: &mut impl FnMut(&str),
) -> Result<Totals, RadosError>
where
    N: FnMut(u64, &Recycler) -> Next + Send + 'static,
{
    let start = Instant::now();
    let end = start + Duration::from_secs(args.seconds);
    let mut t = Totals::default();
    let recycler = Arc::new(Recycler::default());
    let progress = Arc::new(Mutex::new(Progress {
        next,
        started: 0,
        finished: 0,
        lat: Vec::new(),
        failed: None,
    }));
    let mut set = JoinSet::new();
    for _ in 0..args.concurrency {
        let slot = worker(
            io.clone(),
            progress.clone(),
            recycler.clone(),
            end,
            args.op_size,
        );
        set.spawn(slot);
    }
    // Let the slots start their first ops before the first row.
    tokio::task::yield_now().await;
    // Once a second from the start (a late row's seconds come at once, as
    // tokio's interval does).
    let mut tick_at = start + Duration::from_secs(1);
    let mut tick = rt::sleep_until(tick_at);
    let (mut sec, mut prev_finished, mut cycles) = (0u64, 0u64, 1u64);
    let row = |t: &mut Totals, r: Second, out: &mut dyn FnMut(&str)| {
        if !args.json {
            out(&r.text());
        }
        t.seconds_rows.push(r);
    };
    if !args.json {
        out(&header());
    }
    let first = {
        let p = lock(&progress);
        Second {
            sec: 0,
            cur_ops: (p.started - p.finished) as usize,
            started: p.started,
            finished: 0,
            avg_bw: 0.0,
            cur_bw: 0.0,
            last_lat: None,
            avg_lat: 0.0,
        }
    };
    row(&mut t, first, out);
    while !set.is_empty() {
        tokio::select! {
            _ = set.join_next() => {
                // A slot stopped: the time is up, the ops ran out, or one
                // failed, which ends the run (the other slots' ops dropped).
                if let Some(e) = lock(&progress).failed.take() {
                    return Err(e);
                }
            }
            _ = &mut tick => {
                tick_at += Duration::from_secs(1);
                tick.reset(tick_at);
                sec += 1;
                let p = lock(&progress);
                if sec % 20 == 0 && !args.json {
                    out(&format!("min lat: {} max lat: {} avg lat: {}\n", g(min(&p.lat)), g(max(&p.lat)), g(mean(&p.lat))));
                    out(&header());
                }
                let elapsed = start.elapsed().as_secs_f64();
                let ops = p.finished;
                let mut r = Second {
                    sec,
                    cur_ops: (p.started - ops) as usize,
                    started: p.started,
                    finished: ops,
                    avg_bw: ops as f64 * args.op_size as f64 / elapsed / MIB,
                    cur_bw: 0.0,
                    last_lat: None,
                    avg_lat: mean(&p.lat),
                };
                if ops != prev_finished {
                    r.cur_bw = (ops - prev_finished) as f64 * args.op_size as f64 / MIB / cycles as f64;
                    r.last_lat = Some(p.lat.last().copied().unwrap_or(0.0));
                    t.bw_samples.push(r.cur_bw);
                    t.iops_samples.push((ops - prev_finished) as f64 / cycles as f64);
                    prev_finished = ops;
                    cycles = 1;
                } else {
                    cycles += 1;
                }
                drop(p);
                row(&mut t, r, out);
            }
        }
    }
    {
        let mut p = lock(&progress);
        t.ops = p.finished;
        t.lat = std::mem::take(&mut p.lat);
    }
    t.seconds = start.elapsed().as_secs_f64();
    if t.iops_samples.is_empty() {
        let iops = t.ops as f64 / t.seconds;
        t.iops_samples.push(iops);
        t.bw_samples.push(iops * args.op_size as f64 / MIB);
    }
    Ok(t)
}

/// The metadata object: object size, ops finished, the writer's pid, op
/// size.
fn metadata(object_size: u64, ops: u64, pid: u32, op_size: u64) -> Bytes {
    let mut b = Vec::with_capacity(24);
    b.put_u64_le(object_size);
    b.put_i32_le(ops as i32);
    b.put_i32_le(pid as i32);
    b.put_u64_le(op_size);
    Bytes::from(b)
}

/// Runs a bench, printing as it goes through `out` (with `json`, the
/// summary is one line of JSON, the only one starting with `{`).
pub async fn run(
    io: &IoCtx,
    args: &BenchArgs,
    out: &mut impl FnMut(&str),
) -> Result<Totals, RadosError> {
    let host = hostname();
    out("hints = 1\n");
    match args.mode {
        Mode::Write => {
            let pid = std::process::id();
            let prefix = format!("benchmark_data_{host}_{pid}");
            if !args.json {
                out(&format!(
                    "Maintaining {} concurrent writes of {} bytes to objects of size {} for up to {} seconds or 0 objects\n",
                    args.concurrency, args.op_size, args.op_size, args.seconds
                ));
                out(&format!("Object prefix: {prefix}\n"));
            }
            let size = args.op_size;
            let names = prefix.clone();
            let t = run_ops(
                args,
                io,
                move |i, buffers| {
                    let data = buffers.contents(size, i);
                    let ops = Ops::new()
                        .alloc_hint(size as u64, size as u64, HINT_FLAGS)
                        .write(0, data.clone());
                    Some((object_name(&names, i), ops, None, Some(data)))
                },
                out,
            )
            .await?;
            out(&match args.json {
                true => json_summary(args, &t, size, Some(&prefix)),
                false => summary(args, &t, size),
            });
            io.write_full(
                METADATA.as_bytes(),
                metadata(size as u64, t.ops, pid, size as u64),
            )
            .await?;
            if args.cleanup {
                let begin = Instant::now();
                out("Cleaning up (deleting benchmark objects)\n");
                remove_objects(io, &prefix, t.ops, args.concurrency).await?;
                out(&format!(
                    "Removed {} object{}\n",
                    t.ops,
                    if t.ops == 1 { "" } else { "s" }
                ));
                io.remove(METADATA.as_bytes()).await?;
                out(&format!(
                    "Clean up completed and total clean up time :{}\n",
                    g(begin.elapsed().as_secs_f64())
                ));
            }
            Ok(t)
        }
        Mode::Seq | Mode::Rand => {
            let meta = match io.read(METADATA.as_bytes(), 0, 24).await {
                Ok(m) if m.len() >= 16 => m,
                Ok(_) | Err(_) => {
                    eprintln!("Must write data before running a read benchmark!");
                    return Err(RadosError::Os {
                        errno: -2,
                        what: METADATA.into(),
                    });
                }
            };
            let u64_at =
                |at: usize| u64::from_le_bytes(meta[at..at + 8].try_into().unwrap_or([0; 8]));
            let object_size = u64_at(0) as usize;
            let num_ops = u64::from(u32::from_le_bytes(meta[8..12].try_into().unwrap_or([0; 4])));
            let pid = u32::from_le_bytes(meta[12..16].try_into().unwrap_or([0; 4]));
            let op_size = if meta.len() >= 24 {
                u64_at(16) as usize
            } else {
                object_size
            };
            let prefix = format!("benchmark_data_{host}_{pid}");
            let per_object = (object_size / op_size.max(1)).max(1) as u64;
            let args = BenchArgs {
                op_size,
                ..args.clone()
            };
            let mut rng = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1;
            let mode = args.mode;
            let names = prefix.clone();
            let t = run_ops(
                &args,
                io,
                move |i, _| {
                    let index = match mode {
                        Mode::Seq if i >= num_ops => return None,
                        Mode::Seq => i,
                        _ => {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            rng % num_ops.max(1)
                        }
                    };
                    let off = op_size as u64 * (index % per_object);
                    let ops = Ops::new().read(off, op_size as u64);
                    Some((
                        object_name(&names, index / per_object),
                        ops,
                        Some(index),
                        None,
                    ))
                },
                out,
            )
            .await?;
            out(&match args.json {
                true => json_summary(&args, &t, object_size, None),
                false => summary(&args, &t, object_size),
            });
            Ok(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes Ceph's obj_bencher writes: `snprintf(contents, op_size,
    /// "I'm the %16dth op!", index)`, and its object names.
    #[test]
    fn headers_and_names_are_rados_bench_s() {
        let mut b = [b'z'; 40];
        assert_eq!(put_header(&mut b, 7), 31);
        assert_eq!(&b[..32], b"I'm the                7th op!\0z");
        assert_eq!(put_header(&mut b, 12345678901234567), 32);
        assert_eq!(&b[..32], b"I'm the 12345678901234567th op!\0");
        let mut short = [b'z'; 10];
        assert_eq!(put_header(&mut short, 7), 10);
        assert_eq!(&short, b"I'm the  \0");
        assert_eq!(put_header(&mut [], 7), 0);
        let mut wide = [0u8; 40];
        assert_eq!(put_header(&mut wide, u64::MAX), 35);
        assert_eq!(&wide[..35], b"I'm the 18446744073709551615th op!\0");
        assert_eq!(
            object_name("benchmark_data_h_1", 42),
            "benchmark_data_h_1_object42"
        );
    }

    #[test]
    fn contents_are_recognised_and_buffers_reused_only_when_free() {
        for size in [0usize, 1, 10, 31, 4096] {
            assert!(is_contents(&contents(size, 7), size, 7), "{size}");
        }
        assert!(!is_contents(&contents(4096, 7), 4096, 8));
        assert!(!is_contents(&contents(4096, 7), 4095, 7));
        // One wrong byte anywhere in the filler, a partial last block too.
        for (size, at) in [(4096, 40), (4096, 4095), (1000, 999), (1000, 300)] {
            let mut bad = contents(size, 7).to_vec();
            bad[at] = b'y';
            assert!(!is_contents(&bad, size, 7), "{size} {at}");
        }
        let r = Recycler::default();
        r.give_back(r.contents(4096, 1));
        let b = r.contents(4096, 123);
        assert_eq!(b, contents(4096, 123), "a reused buffer is op 123's");
        let held = b.clone();
        r.give_back(b);
        let other = r.contents(4096, 5);
        assert_ne!(
            other.as_ptr(),
            held.as_ptr(),
            "a buffer held elsewhere is not taken"
        );
        drop(held);
        let freed = r.contents(4096, 6);
        assert_eq!(freed, contents(4096, 6), "taken once free");
        assert!(r.buffers().is_empty());
        drop(other);
    }
}

/// Removes the benchmark's objects `0..count` with `concurrency` removals
/// in flight, as ObjBencher::clean_up keeps `-t` aio removes going; one
/// already gone is no error.
async fn remove_objects(
    io: &IoCtx,
    prefix: &str,
    count: u64,
    concurrency: usize,
) -> Result<(), RadosError> {
    let mut flying = JoinSet::new();
    let mut next = 0u64;
    loop {
        while next < count && flying.len() < concurrency.max(1) {
            let (io, name) = (io.clone(), object_name(prefix, next));
            flying.spawn(async move { io.remove(name.as_bytes()).await });
            next += 1;
        }
        match flying.join_next().await {
            None => return Ok(()),
            Some(Ok(Err(e))) if e.errno() != Some(-2) => return Err(e),
            Some(Ok(_)) => {}
            Some(Err(join)) => {
                return Err(RadosError::Os {
                    errno: -5,
                    what: format!("removing benchmark objects: {join}"),
                })
            }
        }
    }
}
