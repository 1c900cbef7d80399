#!/usr/bin/env bash
# msgr-vs-raw.sh [ROUNDS] [SECONDS] [SIZE:DEPTH ...]
#
# `msgr bench --raw` ROUNDS times (5) per size and depth (default 4096:128
# and 1048576:4), SECONDS each (3): each run measures the raw TCP baseline
# and then the messenger, so every ratio is from one run. Prints each run,
# the median of the runs' ratios, the ratio of the best runs (fastest msgr
# over fastest raw: each side's capacity when the host's neighbours
# interfered least) and the medians of the per-message CPU of both sides.
# The host's noise (steal time) moves single runs a lot: use many short
# rounds and read the medians and the best.
# No assertions: a benchmark, for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-5}
SECS=${2:-3}
shift 2 2>/dev/null || shift $#
SPECS=("$@")
[ ${#SPECS[@]} -gt 0 ] || SPECS=(4096:128 1048576:4)
cargo build --profile perf -q -p msgr-cli
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  for spec in "${SPECS[@]}"; do
    target/perf/msgr bench --raw --size "${spec%%:*}" --depth "${spec##*:}" \
      --duration "$SECS" --json >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for key in sorted({(r["size"], r["depth"]) for r in runs}):
    rs = [r for r in runs if (r["size"], r["depth"]) == key]
    print(f"size {key[0]} B, depth {key[1]}, {len(rs)} runs:")
    for r in rs:
        w = r["raw"]
        print(f"  raw {w['msgs_per_sec']:9.0f} msg/s {w['mb_per_sec']:8.1f} MB/s cpu {w['client_cpu_us_per_msg']:.2f}/{w['server_cpu_us_per_msg']:.2f} us"
              f" | msgr {r['msgs_per_sec']:9.0f} msg/s {r['mb_per_sec']:8.1f} MB/s cpu {r['client_cpu_us_per_msg']:.2f}/{r['server_cpu_us_per_msg']:.2f} us"
              f" | ratio {r['ratio_msgs_per_sec']:.3f}")
    med = lambda f: st.median(f(r) for r in rs)
    best = max(r["msgs_per_sec"] for r in rs) / max(r["raw"]["msgs_per_sec"] for r in rs)
    print(f"  median ratio {med(lambda r: r['ratio_msgs_per_sec']):.3f}; best-run ratio {best:.3f}; median cpu us/msg client/server:"
          f" msgr {med(lambda r: r['client_cpu_us_per_msg']):.2f}/{med(lambda r: r['server_cpu_us_per_msg']):.2f},"
          f" raw {med(lambda r: r['raw']['client_cpu_us_per_msg']):.2f}/{med(lambda r: r['raw']['server_cpu_us_per_msg']):.2f}")
PY
