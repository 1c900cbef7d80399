#!/usr/bin/env bash
# secure-vs-crc.sh [ROUNDS] [SECONDS]
#
# cephx at both ends, secure mode against crc mode in the same run
# (`msgr bench --auth cephx --mode secure --vs-crc`: the crc run, then the
# secure run, against the same in-process server), at 1 MiB (depth 4) and
# 4 KiB (depth 128), ROUNDS times each (5), SECONDS per run (3). Prints
# each run and the medians of the secure/crc ratio, of each mode's
# handshake time (connect to READY: banner, cephx authorizer with its
# challenge round, idents) and of the per-message CPU. No assertions: a
# benchmark, for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-5}
SECS=${2:-3}
cargo build --profile perf -q -p msgr-cli
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  for spec in "1048576 4" "4096 128"; do
    set -- $spec
    target/perf/msgr bench --auth cephx --mode secure --vs-crc --size "$1" --depth "$2" \
      --duration "$SECS" --json >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for size in sorted({r["size"] for r in runs}, reverse=True):
    rs = [r for r in runs if r["size"] == size]
    print(f"size {size} B, depth {rs[0]['depth']}, {len(rs)} runs:")
    for r in rs:
        c = r["crc"]
        print(f"  crc {c['mb_per_sec']:8.1f} MB/s {c['msgs_per_sec']:9.0f} msg/s | secure {r['mb_per_sec']:8.1f} MB/s "
              f"{r['msgs_per_sec']:9.0f} msg/s | ratio {r['ratio_vs_crc_mb_per_sec']:.2f} | "
              f"handshake crc {c['handshake_us']} us secure {r['handshake_us']} us")
    med = lambda f: st.median(f(r) for r in rs)
    print(f"  median secure/crc: {med(lambda r: r['ratio_vs_crc_mb_per_sec']):.2f}x; "
          f"median handshake: crc {med(lambda r: r['crc']['handshake_us']):.0f} us, "
          f"secure {med(lambda r: r['handshake_us']):.0f} us; "
          f"cpu us/msg client+server: crc {med(lambda r: r['crc']['client_cpu_us_per_msg'] + r['crc']['server_cpu_us_per_msg']):.1f}, "
          f"secure {med(lambda r: r['client_cpu_us_per_msg'] + r['server_cpu_us_per_msg']):.1f}")
PY
