#!/usr/bin/env bash
# rados-ops-vs-librados.sh [ROUNDS] [COUNT]
#
# Benchmark (not a test): watch/notify round trips and 4 KiB compound
# operations, `msgr rados opbench` against librados (the C program
# scripts/bench/rados_ops_bench.c, built here against Debian's librados-dev,
# which this installs if missing), on the same running cluster, in the same
# run, interleaved msgr, librados, msgr, librados... ROUNDS times (5), COUNT
# ops each (2000; notifies COUNT/2). Workloads (WORKLOADS, default all):
#   notify      one watch acknowledging, sequential notifies from the same client
#   cw1, cr1    compound write (create + setxattr + write 4 KiB + omap_set)
#               and read (stat + read 4 KiB + getxattrs + omap_get_vals_by_keys),
#               one at a time
#   cw16, cr16  the same, 16 in flight
# Per run: the tool's line (ops/s, median and p99 latency, the process's
# user + system CPU per op from getrusage over the measured ops); then per
# workload the medians over the rounds and the msgr/librados ratios.
#
# The cluster: CEPH_CONF (required; its client.admin keyring), pool POOL
# (test). Each run writes COUNT 4 KiB objects at most and removes them.
# TENTACLE_CHROOT=DIR runs the C program inside that Ceph 20 chroot
# (scripts/ceph/tentacle.sh run), so that it uses Ceph 20's librados; the
# conf's directory and the program's are bound in. MSGR (this tree's
# release build) picks our binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-5}
COUNT=${2:-2000}
POOL=${POOL:-test}
: "${CEPH_CONF:?set CEPH_CONF to the ceph.conf of the cluster}"
CONF=$(readlink -f "$CEPH_CONF")

if [[ ! -e /usr/include/rados/librados.h ]]; then
  echo "installing librados-dev (the C program's headers)" >&2
  apt-get install -y librados-dev >/dev/null
fi
BIN=$PWD/target/librados-bench
mkdir -p "$BIN"
gcc -O2 -Wall -Wextra -o "$BIN/rados_ops_bench" scripts/bench/rados_ops_bench.c -lrados -lpthread
if [[ -z ${MSGR:-} ]]; then
  cargo build --release -q -p msgr-cli
  MSGR=$PWD/target/release/msgr
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
RESULTS=$OUT/results

librados() {
  if [[ -n ${TENTACLE_CHROOT:-} ]]; then
    TENTACLE_BIND="$(dirname "$CONF") $BIN:ro" TENTACLE_CHROOT=$TENTACLE_CHROOT \
      timeout 600 scripts/ceph/tentacle.sh run "$BIN/rados_ops_bench" -c "$CONF" -p "$POOL" "$@"
  else
    timeout 600 "$BIN/rados_ops_bench" -c "$CONF" -p "$POOL" "$@"
  fi
}

# one TOOL WORKLOAD: a run; its line.
one() {
  local tool=$1 w=$2 n=$COUNT q=1 mode
  case $w in
    notify) mode=notify; n=$((COUNT / 2)) ;;
    cw1) mode=compound-write ;;
    cr1) mode=compound-read ;;
    cw16) mode=compound-write; q=16 ;;
    cr16) mode=compound-read; q=16 ;;
    *) echo "unknown workload $w" >&2; exit 2 ;;
  esac
  case $tool in
    msgr) timeout 600 "$MSGR" rados -c "$CONF" -p "$POOL" -t "$q" opbench "$n" "$mode" ;;
    librados) librados -n "$n" -t "$q" "$mode" ;;
  esac
}

for w in ${WORKLOADS:-notify cw1 cr1 cw16 cr16}; do
  for round in $(seq 1 "$ROUNDS"); do
    for tool in msgr librados; do
      line=$(one "$tool" "$w") || { echo "$w $round $tool: failed" >&2; continue; }
      echo "$w $round $line" | tee -a "$RESULTS"
    done
  done
done

echo
echo "medians over the rounds (workload: msgr / librados = ratio)"
python3 - "$RESULTS" <<'PY'
import sys, statistics as st
rows = []
for l in open(sys.argv[1]):
    w, rnd, *kv = l.split()
    d = dict(x.split("=", 1) for x in kv)
    d["round"] = rnd
    rows.append((w, d))
order = ["notify", "cw1", "cr1", "cw16", "cr16"]
for w in sorted({r[0] for r in rows}, key=lambda w: order.index(w) if w in order else 99):
    m = {}
    for tool in ("msgr", "librados"):
        rs = [d for x, d in rows if x == w and d["tool"] == tool]
        if not rs:
            break
        m[tool] = {k: st.median(float(d[k]) for d in rs) for k in ("ops_per_s", "median_us", "p99_us", "cpu_us_per_op")}
        m[tool]["n"] = len(rs)
    if len(m) < 2:
        print(f"{w:6}: a tool has no run"); continue
    a, b = m["msgr"], m["librados"]
    r = lambda k: a[k] / b[k] if b[k] else float("nan")
    print(f"{w:6} ({a['n']}/{b['n']} runs): median latency {a['median_us']:.0f} / {b['median_us']:.0f} us = x{r('median_us'):.2f}; "
          f"p99 {a['p99_us']:.0f} / {b['p99_us']:.0f} us = x{r('p99_us'):.2f}; "
          f"ops/s {a['ops_per_s']:.0f} / {b['ops_per_s']:.0f} = x{r('ops_per_s'):.2f}; "
          f"CPU/op {a['cpu_us_per_op']:.1f} / {b['cpu_us_per_op']:.1f} us = x{r('cpu_us_per_op'):.2f}")
    # The load moves both tools of a round together: the ratio round by
    # round, its median and range.
    by = {(d["tool"], d["round"]): d for x, d in rows if x == w}
    pairs = [float(by["msgr", n]["cpu_us_per_op"]) / float(by["librados", n]["cpu_us_per_op"])
             for t, n in by if t == "msgr" and ("librados", n) in by]
    if pairs:
        print(f"{'':6}  CPU/op ratio round by round: median x{st.median(pairs):.2f}, "
              f"x{min(pairs):.2f} to x{max(pairs):.2f} over {len(pairs)} rounds")
PY
