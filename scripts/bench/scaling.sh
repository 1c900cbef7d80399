#!/usr/bin/env bash
# scaling.sh CORES [ROUNDS] [SECONDS]
#
# The multi-core matrix of BENCHMARKS.md for a machine with CORES cores:
# the in-process `msgr bench` server on 1 shard, on CORES shards, and on
# one shard inside tokio's multi-threaded runtime of CORES workers, for
#   - one connection, 4 KiB, depth 128;
#   - 64 connections, 4 KiB, depth 8;
#   - 1024 connections, 4 KiB, depth 1.
# The configurations are interleaved, ROUNDS (5) times, SECONDS (3) each, so
# every ratio compares runs made side by side; it prints each run, then per
# workload the medians of msgs/s and of the server's CPU per message, and
# the ratios of those medians against 1 shard.
# No assertions: a benchmark, for BENCHMARKS.md. Runs unchanged on a bigger
# machine: `scripts/bench/scaling.sh 16`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CORES=${1:?usage: scaling.sh CORES [ROUNDS] [SECONDS]}
ROUNDS=${2:-5}
SECS=${3:-3}
cargo build --profile perf -q -p msgr-cli
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
WORKLOADS=("1:128" "64:8" "1024:1")
CONFIGS=("shards 1" "shards $CORES" "tokio-mt $CORES")
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do
    for c in "${CONFIGS[@]}"; do
      set -- $c
      case $1 in
        shards) flag=(--shards "$2") ;;
        tokio-mt) flag=(--server-tokio-mt "$2") ;;
      esac
      line=$(target/perf/msgr bench --conns "${w%%:*}" --depth "${w##*:}" \
        --duration "$SECS" --json "${flag[@]}")
      echo "{\"config\": \"$c\", \"run\": $line}" >> "$OUT"
    done
  done
done
python3 - "$OUT" "$CORES" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cores = sys.argv[2]
for key in sorted({(r["run"]["conns"], r["run"]["depth"]) for r in runs}):
    rs = [r for r in runs if (r["run"]["conns"], r["run"]["depth"]) == key]
    print(f"{key[0]} conn(s), 4 KiB, depth {key[1]}:")
    med = {}
    for c in dict.fromkeys(r["config"] for r in rs):
        cr = [r["run"] for r in rs if r["config"] == c]
        rate = st.median(r["msgs_per_sec"] for r in cr)
        cpu = st.median(r["server_cpu_us_per_msg"] for r in cr)
        med[c] = (rate, cpu)
        runs_txt = " ".join(f"{r['msgs_per_sec']:.0f}" for r in cr)
        print(f"  {c:12} msgs/s {rate:9.0f}  server cpu {cpu:6.2f} us/msg  (runs: {runs_txt})")
    base = med["shards 1"]
    for c, (rate, cpu) in med.items():
        if c != "shards 1":
            print(f"  {c:12} vs shards 1: msgs/s x{rate / base[0]:.3f}, server cpu/msg x{cpu / base[1]:.3f}")
PY
