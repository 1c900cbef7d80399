#!/usr/bin/env bash
# idle.sh [ROUNDS]
#
# Benchmark (not a test): memory per idle connection and the time to bring
# connections up, `msgr serve` against Ceph 20's ceph_perf_msgr_server, in
# the same run, alternating ROUNDS times (default 3). For each server,
# idle-conns (crates/bench) opens 2000 then 10000 connections from one-shard
# client messengers (each READY, a keepalive and a 4 KiB write answered,
# then idle 2 s) and reads the server's resident memory; it reports the
# growth from 2000 to 10000 per connection, and how long the 8000 took to
# come up. crc mode, auth none (Ceph's perf server runs without cephx);
# `msgr serve` on 1 shard, Ceph's server with 1 worker thread. Needs the
# Tentacle chroot (scripts/ceph/tentacle.sh setup).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-3}
T=scripts/ceph/tentacle.sh
PORT=${PORT:-27950}
cargo build --profile perf -q -p msgr-cli -p msgr-bench
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
ulimit -n "$(ulimit -Hn)"
for r in $(seq "$ROUNDS"); do
  target/perf/idle-conns --shards 1 2000 10000 | sed "s/^/msgr $r: /" | tee -a "$OUT"
  port=$((PORT++))
  "$T" run ceph_perf_msgr_server "127.0.0.1:$port" 1 0 --ms_max_accept_failures 1000 >/dev/null 2>&1 &
  sp=$!
  wait_port "$port"
  target/perf/idle-conns --addr "v2:127.0.0.1:$port/0" --pid "$sp" 2000 10000 | sed "s/^/ceph $r: /" | tee -a "$OUT"
  kill -INT "$sp" 2>/dev/null; kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
done
python3 - "$OUT" <<'PY'
import re, statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) \d+: +10000 connections: .*?([\d.]+) KiB per connection over the last 8000.*up in ([\d.]+) s", line)
    if m:
        rows.setdefault(m[1], []).append((float(m[2]), float(m[3])))
med = {k: (st.median(a for a, _ in v), st.median(b for _, b in v)) for k, v in rows.items()}
for k, (kib, up) in med.items():
    print(f"{k}: {kib:.2f} KiB per idle connection, 8000 connections up in {up:.2f} s (medians of {len(rows[k])})")
if "msgr" in med and "ceph" in med:
    print(f"msgr/ceph: memory x{med['msgr'][0] / med['ceph'][0]:.2f}, time to come up x{med['msgr'][1] / med['ceph'][1]:.2f}")
PY
