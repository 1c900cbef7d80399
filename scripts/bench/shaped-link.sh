#!/usr/bin/env bash
# shaped-link.sh [RATE...]: msgr bench against msgr serve across a link of
# limited bandwidth, beside iperf3 on the same link in the same run.
#
# Two hosts in network namespaces (scripts/net/netns.sh), host 1's link
# shaped to RATE both ways (tc tbf; default rates: 1gbit 10gbit). For each
# rate, ROUNDS (5) interleaved rounds of: iperf3 (one TCP stream, client to
# server), msgr bench with 4 MiB messages (depth 4) and with 64 KiB
# messages (depth 32), each SECS (5) seconds, msgr2 crc, one server shard.
# Prints each round and the medians, msgr's rate (bytes on the wire, and
# payload) as a ratio of iperf3's; then 1000 connections of 16 KiB
# messages at depth 1 sharing the link, with Jain's fairness index over
# their message counts. A benchmark: nothing is asserted.
#
# Env: ROUNDS SECS FAIR_SECS (30, the 1000 connections' run) MSGR (default
# target/release/msgr).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MSGR="$(readlink -f "${MSGR:-$ROOT/target/release/msgr}")"
NETNS="$ROOT/scripts/net/netns.sh"
NET=shape
ROUNDS="${ROUNDS:-5}"
SECS="${SECS:-5}"
RATES=("$@")
[[ ${#RATES[@]} -gt 0 ]] || RATES=(1gbit 10gbit)
command -v iperf3 >/dev/null || { echo "shaped-link.sh: iperf3 not found (apt: iperf3)" >&2; exit 1; }

cleanup() { "$NETNS" down "$NET" --kill 2>/dev/null || true; }
trap cleanup EXIT

"$NETNS" up "$NET" 2 10.81.0
SERVER="$("$NETNS" addr "$NET" 2)"
"$NETNS" exec "$NET" 2 iperf3 -s -D -1 >/dev/null 2>&1 || true
"$NETNS" exec "$NET" 2 "$MSGR" serve --bind "v2:$SERVER:6800" --policy stateless-server \
  --shards 1 --mode crc >/dev/null 2>&1 &

# Bytes per second: iperf3's receiver, and msgr bench's wire and payload.
iperf() {
  "$NETNS" exec "$NET" 2 iperf3 -s -D -1 >/dev/null 2>&1 || true
  sleep 0.3
  "$NETNS" exec "$NET" 1 iperf3 -c "$SERVER" -t "$SECS" -J |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)'
}
bench() {  # bench SIZE DEPTH -> "wire payload" bytes/s
  "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "v2:$SERVER:6800" --policy lossy-client \
    --mode crc --size "$1" --depth "$2" --duration "$SECS" --json |
    python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
secs = r["seconds"]
print(r["counters"]["wire_bytes"] / secs, r["msgs"] * r["size"] / secs)'
}

for rate in "${RATES[@]}"; do
  "$NETNS" shape "$NET" 1 "$rate"
  echo "== link shaped to $rate (tbf both ways), $ROUNDS rounds of $SECS s, interleaved"
  rows=()
  for ((r = 1; r <= ROUNDS; r++)); do
    ip3=$(iperf)
    read -r w4 p4 < <(bench 4194304 4)
    read -r w64 p64 < <(bench 65536 32)
    python3 -c 'import sys; r, *v = sys.argv[1:]; v = [float(x) / 1e6 for x in v]
print(f"round {r}: iperf3 {v[0]:.1f} MB/s; 4 MiB wire {v[1]:.1f} payload {v[2]:.1f} MB/s; 64 KiB wire {v[3]:.1f} payload {v[4]:.1f} MB/s")' \
      "$r" "$ip3" "$w4" "$p4" "$w64" "$p64"
    rows+=("$ip3 $w4 $p4 $w64 $p64")
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
ip, w4, p4, w64, p64 = (statistics.median(c) for c in zip(*rows))
ratios = lambda col: statistics.median(r[col] / r[0] for r in rows)
print(f"median: iperf3 {ip/1e6:.1f} MB/s; 4 MiB {w4/1e6:.1f} MB/s on the wire ({ratios(1):.2f}x iperf3), payload {ratios(2):.2f}x; 64 KiB {w64/1e6:.1f} MB/s ({ratios(3):.2f}x), payload {ratios(4):.2f}x")'
  # 1000 connections sharing the link: how evenly it serves them.
  "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "v2:$SERVER:6800" --policy lossy-client \
    --mode crc --size 16384 --depth 1 --conns 1000 --duration "${FAIR_SECS:-30}" --json |
    python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
rate = r["counters"]["wire_bytes"] / r["seconds"] / 1e6
print("1000 connections, 16 KiB at depth 1: %.1f MB/s, Jain index %.3f (%d to %d messages each)"
      % (rate, r["jain_index"], r["per_conn_min"], r["per_conn_max"]))'
done
