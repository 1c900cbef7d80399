#!/usr/bin/env bash
# python-rados-vs-librados.sh: Python's rados module (Debian's, unchanged)
# on our librados.so.2 against Ceph's librados, on the cluster CEPH_CONF
# names, interleaved rounds (Ceph's, ours, Ceph's, ...), medians:
# 4 KiB aio writes and reads at 16 in flight, 4 MiB synchronous writes
# (ops/s, the process's CPU per op), the threads and resident memory a
# connected handle adds, and `ceph -s` wall time.
# Usage: CEPH_CONF=... [ROUNDS=5] [SECONDS=5] [POOL=test] \
#          scripts/bench/python-rados-vs-librados.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
: "${CEPH_CONF:?set CEPH_CONF}"
ROUNDS="${ROUNDS:-5}" SECS="${SECONDS_PER_RUN:-5}" POOL="${POOL:-test}"
WORK="$(mktemp -d /tmp/pybench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}" cargo build --release -p msgr-librados)
mkdir -p "$WORK/lib"
cp "${CARGO_TARGET_DIR:-$ROOT/target}/release/librados.so" "$WORK/lib/librados.so.2"
for r in $(seq "$ROUNDS"); do
    for which in ceph ours; do
        env=()
        [ "$which" = ours ] && env=(env "LD_LIBRARY_PATH=$WORK/lib")
        "${env[@]}" /usr/bin/python3 "$HERE/python_rados_bench.py" "$CEPH_CONF" "$POOL" "$SECS" \
            >> "$WORK/$which.jsonl"
        t0=$(date +%s%N)
        "${env[@]}" /usr/bin/ceph -c "$CEPH_CONF" -s > /dev/null
        echo $(( ($(date +%s%N) - t0) / 1000000 )) >> "$WORK/$which.ceph-s"
    done
    echo "round $r done" >&2
done
python3 - "$WORK" <<'PY'
import json, statistics, sys
w = sys.argv[1]
runs = {k: [json.loads(l) for l in open(f"{w}/{k}.jsonl")] for k in ("ceph", "ours")}
cs = {k: [int(l) for l in open(f"{w}/{k}.ceph-s")] for k in ("ceph", "ours")}
med = statistics.median
print(f"| metric | Ceph's librados | ours | ours/Ceph's |")
print(f"|---|---|---|---|")
for wl in ("aio_write_4k", "aio_read_4k", "write_4m"):
    ops = {k: med(r[wl]["ops"] / r[wl]["secs"] for r in v) for k, v in runs.items()}
    cpu = {k: med(r[wl]["cpu"] / r[wl]["ops"] * 1e6 for r in v) for k, v in runs.items()}
    print(f"| {wl} ops/s | {ops['ceph']:.0f} | {ops['ours']:.0f} | {ops['ours']/ops['ceph']:.2f}x |")
    print(f"| {wl} CPU µs/op | {cpu['ceph']:.0f} | {cpu['ours']:.0f} | {cpu['ours']/cpu['ceph']:.2f}x |")
for m, unit in (("threads", ""), ("rss_kib", " KiB")):
    v = {k: med(r[m] for r in runs[k]) for k in runs}
    print(f"| handle {m} | {v['ceph']:.0f}{unit} | {v['ours']:.0f}{unit} | {v['ours']/max(v['ceph'],1):.2f}x |")
v = {k: med(cs[k]) for k in cs}
print(f"| ceph -s wall ms | {v['ceph']:.0f} | {v['ours']:.0f} | {v['ours']/v['ceph']:.2f}x |")
print(f"({len(runs['ceph'])} interleaved rounds, medians)")
PY
