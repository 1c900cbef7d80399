#!/usr/bin/env bash
# rados-vs-librados.sh [ROUNDS] [SECONDS]
#
# Benchmark (not a test): `msgr rados bench` against Ceph 16's `rados bench`
# (librados on AsyncMessenger) on the same cluster, in the same run,
# interleaved ROUNDS times (3), SECONDS each (8): 4 KiB writes and random
# reads with 16 in flight, and 4 MiB writes with 16 in flight, in crc and in
# secure mode. The cluster: 3 memstore OSDs on 2 CRUSH hosts, pool size 2,
# started and stopped here (mon 3300, OSDs from 6800: no other cluster may
# run). Per run: IOPS and average latency as the tool prints them, and the
# client's CPU per op (user + system time of the process, /usr/bin/time,
# over the ops it made). Prints each run, then per workload the medians
# and msgr/rados ratios. The OSDs and the client share this machine's
# cores: IOPS say as much about the OSDs as about the client.
# MODES ("crc secure") and WORKLOADS ("4k-write 4k-rand 4m-write") pick a
# part; MEMSTORE_GIB (3) sizes each OSD's store. MSGR_BASE=PATH adds another
# `msgr` build as tool "base", run in the same rounds (a before/after check).
# URING=1 adds ours with `--transport uring` as tool "uring"; RING=1 ours
# with `--transport ring` (the whole client on a loop that waits in its
# own io_uring) as tool "ring".
# PIN=1 gives the client a core of its own: the cluster's daemons on CPU 0,
# every client on CPU 1 (as a client on a host apart from its OSDs, whose
# caches the OSDs do not take between two of its ops).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-3}
SECS=${2:-8}
cargo build --profile perf -q -p msgr-cli
MSGR=$PWD/target/perf/msgr
# A new private directory for the cluster (its keyring and ceph.conf must not
# be somewhere another user could have made first).
DIR=$(mktemp -d /tmp/msgr-bench-rados.XXXXXX)
OUT=$(mktemp -d)
trap 'scripts/ceph/pacific-cluster.sh stop "$DIR" --purge >/dev/null 2>&1 || true; rmdir "$DIR" 2>/dev/null || true; rm -rf "$OUT"' EXIT
# memstore's page sets take 64 KiB pages by default: a 4 KiB object held
# 64 KiB, and the OSDs grew to 6-10 GiB each over a run (out of memory).
CEPH_TEST_NUM_OSDS=3 CEPH_TEST_NUM_HOSTS=2 CEPH_TEST_POOL_SIZE=2 CEPH_TEST_PG_NUM=32 \
  CEPH_TEST_MEMSTORE_BYTES=$((${MEMSTORE_GIB:-3} << 30)) \
  CEPH_TEST_EXTRA_CONF=$'[osd]\nmemstore_page_size = 4096' \
  scripts/ceph/pacific-cluster.sh start "$DIR" --fresh > "$OUT/env" 2>/dev/null
CONF=$DIR/ceph.conf
CLIENT=()
if [[ ${PIN:-} == 1 ]]; then
  for pf in "$DIR"/run/*.pid; do taskset -apc 0 "$(cat "$pf")" > /dev/null; done
  CLIENT=(taskset -c 1)
fi

# one TOOL MODE WORKLOAD: a bench run; prints "iops lat cpu_us_per_op".
one() {
  local tool=$1 mode=$2 w=$3 args
  case $w in
    4k-write) args=(bench "$SECS" write -t 16 -b 4096 --no-cleanup) ;;
    4k-rand) args=(bench "$SECS" rand -t 16) ;;
    4m-write) args=(bench "$SECS" write -t 16 -b 4194304) ;;
  esac
  local cmd
  case $tool in
    base) cmd=("$MSGR_BASE" rados -c "$CONF" --mode "$mode" -p test "${args[@]}") ;;
    msgr) cmd=("$MSGR" rados -c "$CONF" --mode "$mode" -p test "${args[@]}") ;;
    uring) cmd=("$MSGR" rados -c "$CONF" --mode "$mode" --transport uring -p test "${args[@]}") ;;
    ring) cmd=("$MSGR" rados -c "$CONF" --mode "$mode" --transport ring -p test "${args[@]}") ;;
    rados) cmd=(rados -c "$CONF" --ms_client_mode "$mode" -p test "${args[@]}") ;;
  esac
  /usr/bin/time -f "%U %S" -o "$OUT/time" "${CLIENT[@]}" "${cmd[@]}" > "$OUT/run" 2>&1 || { echo "0 0 0"; return; }
  local ops iops lat cpu
  ops=$(sed -n 's/^Total \(writes\|reads\) made: *//p' "$OUT/run")
  iops=$(sed -n 's/^Average IOPS: *//p' "$OUT/run")
  lat=$(sed -n 's/^Average Latency(s): *//p' "$OUT/run")
  cpu=$(awk -v ops="$ops" '{printf "%.1f", ($1 + $2) * 1e6 / ops}' "$OUT/time")
  echo "$iops $lat $cpu"
}

RESULTS=$OUT/results
for mode in ${MODES:-crc secure}; do
  for w in ${WORKLOADS:-4k-write 4k-rand 4m-write}; do
    for round in $(seq 1 "$ROUNDS"); do
      for tool in ${MSGR_BASE:+base} msgr ${URING:+uring} ${RING:+ring} rados; do
        # rand reads the objects the last 4k-write of the same tool left
        [[ $w == 4k-rand ]] || rados -c "$CONF" -p test cleanup >/dev/null 2>&1 || true
        if [[ $w == 4k-rand ]]; then one "$tool" "$mode" 4k-write >/dev/null; fi
        r=$(one "$tool" "$mode" "$w")
        echo "$mode $w $round $tool $r" | tee -a "$RESULTS"
      done
    done
  done
done
rados -c "$CONF" -p test cleanup >/dev/null 2>&1 || true

echo
echo "medians (mode workload: msgr iops / rados iops = ratio; latency; client CPU us/op)"
python3 - "$RESULTS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
keys = sorted({(r[0], r[1]) for r in rows}, key=lambda k: (k[0], ["4k-write","4k-rand","4m-write"].index(k[1])))
for mode, w in keys:
    m = {}
    for tool in ("msgr", "rados"):
        rs = [r for r in rows if r[0] == mode and r[1] == w and r[3] == tool]
        m[tool] = [st.median(float(r[i]) for r in rs) for i in (4, 5, 6)]
    (mi, ml, mc), (ri, rl, rc) = m["msgr"], m["rados"]
    ratio = lambda a, b: a / b if b else float("nan")
    for other in ("base", "uring", "ring"):
        bs = [r for r in rows if r[0] == mode and r[1] == w and r[3] == other]
        if not bs:
            continue
        bi = st.median(float(r[4]) for r in bs)
        bc = st.median(float(r[6]) for r in bs)
        print(f"{mode:6} {w:8}: {other} IOPS {bi:.0f}, CPU/op {bc:.1f} us = {ratio(bc, rc):.2f}x rados; msgr/{other} {ratio(mc, bc):.2f}x")
    print(f"{mode:6} {w:8}: IOPS {mi:.0f} / {ri:.0f} = {ratio(mi, ri):.2f}x; "
          f"latency {ml*1e3:.2f} / {rl*1e3:.2f} ms = {ratio(ml, rl):.2f}x; "
          f"CPU/op {mc:.1f} / {rc:.1f} us = {ratio(mc, rc):.2f}x")
PY
