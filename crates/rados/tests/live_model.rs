//! A model-based randomized workload in the spirit of Ceph's
//! ceph_test_rados (RadosModel): random writes, appends, truncates, zeros,
//! removes, creates, xattrs and omap on a set of objects, each checked
//! against an in-memory model of what the object must hold; every read
//! (data, size, xattrs, omap) must match the model, and at the end every
//! acknowledged write must be there. Seeded and reproducible: the seed is
//! printed, and `MSGR_TEST_MODEL_SEED` replays a run. scripts/interop/
//! rados.sh runs it while it stops and restarts an OSD (see
//! tests/support/live.rs for how live tests run).
//!
//! `MSGR_TEST_MODEL_OPS`: operations in all (default 2000), spread over
//! `MSGR_TEST_MODEL_OBJECTS` objects (default 16), each object's
//! operations in order, the objects' concurrently.

mod support;

use std::collections::BTreeMap;

use bytes::Bytes;
use msgr_rados::{IoCtx, RadosError};
use support::live::{connect, unique};

const POOL: &str = "test";
const ENOENT: i32 = -2;
const EEXIST: i32 = -17;

/// splitmix64: a small, well-mixed, reproducible generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Up to `max` bytes (`min` at least).
    fn data(&mut self, min: u64, max: u64) -> Bytes {
        let len = (min + self.below(max - min + 1)) as usize;
        self.bytes(len)
    }

    fn bytes(&mut self, len: usize) -> Bytes {
        let seed = self.next();
        Bytes::from(
            (0..len)
                .map(|i| (seed.rotate_left((i % 64) as u32) as u8) ^ (i as u8))
                .collect::<Vec<u8>>(),
        )
    }
}

/// What an object must hold: `None` if it does not exist.
#[derive(Debug, Clone, Default, PartialEq)]
struct Contents {
    data: Vec<u8>,
    xattrs: BTreeMap<String, Bytes>,
    omap: BTreeMap<String, Bytes>,
}

/// One operation and what the model says it answers.
#[derive(Debug)]
enum Step {
    Write(u64, Bytes),
    WriteFull(Bytes),
    Append(Bytes),
    Truncate(u64),
    Zero(u64, u64),
    Remove,
    Create(bool),
    SetXattr(String, Bytes),
    RmXattr(String),
    OmapSet(String, Bytes),
    OmapRm(String),
    Check,
}

fn choose(rng: &mut Rng, model: &Option<Contents>) -> Step {
    const MAX: u64 = 256 << 10;
    let size = model.as_ref().map_or(0, |c| c.data.len() as u64);
    loop {
        return match rng.below(12) {
            0 | 1 => {
                let len = 1 + rng.below(64 << 10) as usize;
                Step::Write(rng.below(MAX), rng.bytes(len))
            }
            2 => Step::WriteFull(rng.data(0, 32 << 10)),
            3 => Step::Append(rng.data(1, 16 << 10)),
            4 if model.is_some() => Step::Truncate(rng.below(size.saturating_mul(2).max(1))),
            5 if size > 0 => {
                let off = rng.below(size);
                Step::Zero(off, 1 + rng.below(size - off))
            }
            6 => Step::Remove,
            7 => Step::Create(rng.below(2) == 0),
            8 => Step::SetXattr(format!("x{}", rng.below(6)), rng.data(0, 300)),
            9 => match model.as_ref().and_then(|c| c.xattrs.keys().next().cloned()) {
                Some(k) => Step::RmXattr(k),
                None => continue,
            },
            10 => match rng.below(3) {
                0 if model.is_some() => Step::OmapRm(format!("k{}", rng.below(10))),
                _ => Step::OmapSet(format!("k{}", rng.below(10)), rng.data(0, 200)),
            },
            11 => Step::Check,
            _ => continue,
        };
    }
}

/// A step as a failure lists it: data by its length.
fn describe(step: &Step) -> String {
    match step {
        Step::Write(off, d) => format!("write {} bytes at {off}", d.len()),
        Step::WriteFull(d) => format!("write_full {} bytes", d.len()),
        Step::Append(d) => format!("append {} bytes", d.len()),
        Step::SetXattr(k, v) => format!("setxattr {k} ({} bytes)", v.len()),
        Step::OmapSet(k, v) => format!("omap_set {k} ({} bytes)", v.len()),
        other => format!("{other:?}"),
    }
}

/// The model after `step`, and the errno the OSD must answer (0: none).
fn apply(model: &mut Option<Contents>, step: &Step) -> i32 {
    let exists = model.is_some();
    let c = model.get_or_insert_with(Contents::default);
    let grow = |d: &mut Vec<u8>, to: usize| {
        if d.len() < to {
            d.resize(to, 0);
        }
    };
    match step {
        Step::Write(off, data) => {
            let (off, end) = (*off as usize, *off as usize + data.len());
            grow(&mut c.data, end);
            c.data[off..end].copy_from_slice(data);
        }
        Step::WriteFull(data) => c.data = data.to_vec(),
        Step::Append(data) => c.data.extend_from_slice(data),
        Step::Truncate(size) => c.data.resize(*size as usize, 0),
        // A zero reaching the end truncates there (PrimaryLogPG's ZERO:
        // offset + length >= size truncates to offset).
        Step::Zero(off, len) if (*off + *len) as usize >= c.data.len() => {
            c.data.truncate(*off as usize)
        }
        Step::Zero(off, len) => c.data[*off as usize..(*off + *len) as usize].fill(0),
        Step::Remove => {
            *model = None;
            return if exists { 0 } else { ENOENT };
        }
        Step::Create(exclusive) => {
            if exists && *exclusive {
                return EEXIST;
            }
        }
        Step::SetXattr(k, v) => {
            c.xattrs.insert(k.clone(), v.clone());
        }
        Step::RmXattr(k) => {
            c.xattrs.remove(k);
        }
        Step::OmapSet(k, v) => {
            c.omap.insert(k.clone(), v.clone());
        }
        Step::OmapRm(k) => {
            c.omap.remove(k);
        }
        Step::Check => {
            if !exists {
                *model = None;
            }
        }
    }
    0
}

async fn run(io: &IoCtx, name: &[u8], step: &Step) -> Result<(), RadosError> {
    match step {
        Step::Write(off, data) => io.write(name, *off, data.clone()).await,
        Step::WriteFull(data) => io.write_full(name, data.clone()).await,
        Step::Append(data) => io.append(name, data.clone()).await,
        Step::Truncate(size) => io.truncate(name, *size).await,
        Step::Zero(off, len) => io.zero(name, *off, *len).await,
        Step::Remove => io.remove(name).await,
        Step::Create(exclusive) => io.create(name, *exclusive).await,
        Step::SetXattr(k, v) => io.setxattr(name, k, v).await,
        Step::RmXattr(k) => io.rmxattr(name, k).await,
        Step::OmapSet(k, v) => {
            io.omap_set(name, &BTreeMap::from([(k.clone(), v.clone())]))
                .await
        }
        Step::OmapRm(k) => io.omap_rm(name, std::slice::from_ref(k)).await,
        Step::Check => Ok(()),
    }
}

/// Reads the object whole and compares it with the model.
async fn check(io: &IoCtx, name: &[u8], model: &Option<Contents>) -> Result<(), String> {
    let Some(want) = model else {
        return match io.stat(name).await {
            Err(e) if e.errno() == Some(ENOENT) => Ok(()),
            other => Err(format!("a removed object: stat answered {other:?}")),
        };
    };
    let stat = io.stat(name).await.map_err(|e| format!("stat: {e}"))?;
    if stat.size != want.data.len() as u64 {
        return Err(format!(
            "size {} where the model has {}",
            stat.size,
            want.data.len()
        ));
    }
    let data = io
        .read(name, 0, 0)
        .await
        .map_err(|e| format!("read: {e}"))?;
    if data[..] != want.data[..] {
        let at = data.iter().zip(&want.data).position(|(a, b)| a != b);
        return Err(format!(
            "data differs (read {} bytes, first difference at {at:?})",
            data.len()
        ));
    }
    let xattrs = io
        .getxattrs(name)
        .await
        .map_err(|e| format!("getxattrs: {e}"))?;
    if xattrs != want.xattrs {
        return Err(format!(
            "xattrs {:?} where the model has {:?}",
            xattrs.keys(),
            want.xattrs.keys()
        ));
    }
    let omap = io.omap_vals(name).await.map_err(|e| format!("omap: {e}"))?;
    if omap != want.omap {
        return Err(format!(
            "omap {:?} where the model has {:?}",
            omap.keys(),
            want.omap.keys()
        ));
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Each object's operations in order against the model, the objects
/// concurrently; every answer and every read as the model says, and every
/// object as the model says at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn random_operations_match_the_model() {
    let seed = env_number("MSGR_TEST_MODEL_SEED", 0x5EED);
    let total = env_number("MSGR_TEST_MODEL_OPS", 2000);
    let objects = env_number("MSGR_TEST_MODEL_OBJECTS", 16).max(1);
    println!("model workload: seed {seed}, {total} ops on {objects} objects");
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");
    let prefix = unique("model");
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..objects {
        let io = io.clone();
        let name = format!("{prefix}-{n}");
        let ops = total / objects + u64::from(n < total % objects);
        let mut rng = Rng(seed ^ n.wrapping_mul(0x100_0000_01B3));
        tasks.spawn(async move {
            let mut model: Option<Contents> = None;
            let mut history = Vec::new();
            for i in 0..ops {
                let step = choose(&mut rng, &model);
                let want = apply(&mut model, &step);
                let got = run(&io, name.as_bytes(), &step).await;
                let errno = got.as_ref().err().and_then(RadosError::errno).unwrap_or(0);
                history.push(describe(&step));
                if got.is_err() && errno == 0 || errno != want {
                    return Err(format!(
                        "{name} op {i} {}: answered {got:?}, the model expects errno {want}; \
                         the object's last ops: {:?}",
                        describe(&step),
                        &history[history.len().saturating_sub(8)..]
                    ));
                }
                if matches!(step, Step::Check) || rng.below(8) == 0 {
                    check(&io, name.as_bytes(), &model).await.map_err(|e| {
                        format!(
                            "{name} after op {i}: {e}; the object's last ops: {:?}",
                            &history[history.len().saturating_sub(8)..]
                        )
                    })?;
                }
            }
            check(&io, name.as_bytes(), &model)
                .await
                .map_err(|e| format!("{name} at the end: {e}"))?;
            if model.is_some() {
                io.remove(name.as_bytes())
                    .await
                    .map_err(|e| format!("{name}: cleanup: {e}"))?;
            }
            Ok::<u64, String>(ops)
        });
    }
    let mut done = 0;
    let mut failures = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r.expect("a task") {
            Ok(n) => done += n,
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
    assert_eq!(done, total);
    println!("model workload: seed {seed}: {done} ops, every read as the model says");
    rados.shutdown().await;
}
