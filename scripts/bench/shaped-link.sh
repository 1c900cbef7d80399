#!/usr/bin/env bash
# shaped-link.sh [RATE...]: msgr bench against msgr serve across a link of
# limited bandwidth, beside iperf3 and beside Ceph's own pair on the same
# link in the same run.
#
# Two hosts in network namespaces (scripts/net/netns.sh), host 1's link
# shaped to RATE both ways (tc tbf; default rates: 1gbit 10gbit). For each
# rate, ROUNDS (5) interleaved rounds of: iperf3 (one TCP stream, client to
# server), msgr bench with 4 MiB messages (depth 4) and with 64 KiB
# messages (depth 32), each SECS (5) seconds, msgr2 crc, one server shard;
# after each msgr bench, the Ceph pair at the same size and depth: Ceph 20's
# ceph_perf_msgr_client (concurrency 4, resp. 32; it keeps up to one more
# in flight) against ceph_perf_msgr_server (one worker thread), from the
# Tentacle chroot, msgr2 crc (their default mode), auth none, with enough
# ops for about SECS seconds at RATE (at least 16). The Ceph client times
# its sends and stops without waiting for the last replies, dropping the
# messages still queued (up to its concurrency), so its payload rate counts
# the messages the server received (its msgr_recv_messages, read on its
# admin socket) over the client's time.
# Prints each round and the medians: msgr's rate (bytes on the wire, and
# payload) and the Ceph pair's payload rate, as ratios of iperf3's; then
# 1000 connections of 16 KiB messages at depth 1 sharing the link, with
# Jain's fairness index over their message counts; then, 3 rounds
# interleaved, a 64-byte probe every 20 ms on the connection of a 4 MiB
# stream (depth 4), at high priority (196) and at the stream's own (127):
# how long a small message waits behind large ones, in ms and in 4 MiB
# frames at the stream's rate. A benchmark: nothing is asserted.
#
# Env: ROUNDS SECS FAIR_SECS (30, the 1000 connections' run) MSGR (default
# target/release/msgr) TENTACLE_CHROOT. Needs: iperf3, scripts/ceph/tentacle.sh
# setup.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MSGR="$(readlink -f "${MSGR:-$ROOT/target/release/msgr}")"
NETNS="$ROOT/scripts/net/netns.sh"
TENTACLE="$ROOT/scripts/ceph/tentacle.sh"
CHROOT="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
NET=shape
ROUNDS="${ROUNDS:-5}"
SECS="${SECS:-5}"
RATES=("$@")
[[ ${#RATES[@]} -gt 0 ]] || RATES=(1gbit 10gbit)
die() { echo "shaped-link.sh: $*" >&2; exit 1; }
command -v iperf3 >/dev/null || die "iperf3 not found (apt: iperf3)"
[[ -x "$CHROOT/usr/bin/ceph_perf_msgr_client" ]] || die "no Tentacle chroot at $CHROOT (run: $TENTACLE setup)"
# The Ceph server's admin socket: inside the chroot /tmp is $CHROOT/tmp.
ASOK_NAME="shaped-link-$$.asok"
ASOK="$CHROOT/tmp/$ASOK_NAME"

cleanup() { "$NETNS" down "$NET" --kill 2>/dev/null || true; rm -f "$ASOK"; }
trap cleanup EXIT

"$NETNS" up "$NET" 2 10.81.0
SERVER="$("$NETNS" addr "$NET" 2)"
"$NETNS" exec "$NET" 2 iperf3 -s -D -1 >/dev/null 2>&1 || true
"$NETNS" exec "$NET" 2 "$MSGR" serve --bind "v2:$SERVER:6800" --policy stateless-server \
  --shards 1 --mode crc >/dev/null 2>&1 &
# Ceph's tools usleep(0) per message: timer slack of 1 ns for them only, so
# each such sleep is a yield, not the default 50 us.
ceph_in() {  # ceph_in HOST CMD...: CMD in the chroot, in the namespace of HOST
  (echo 1 >"/proc/$BASHPID/timerslack_ns"; exec "$NETNS" exec "$NET" "$1" "$TENTACLE" run "${@:2}")
}
ceph_in 2 ceph_perf_msgr_server "v2:$SERVER:6900" 1 0 --admin_socket "/tmp/$ASOK_NAME" >/dev/null 2>&1 &
for _ in $(seq 100); do [[ -S $ASOK ]] && break; sleep 0.1; done
[[ -S $ASOK ]] || die "ceph_perf_msgr_server did not start (no admin socket $ASOK)"

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
probe() {  # probe PRIORITY -> "payload_bytes_per_s p50_us p99_us max_us"
  "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "v2:$SERVER:6800" --policy lossy-client \
    --mode crc --size 4194304 --depth 4 --duration "$SECS" --probe 20 --probe-priority "$1" --json |
    python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(r["msgs"] * r["size"] / r["seconds"], r["probe_p50_us"], r["probe_p99_us"], r["probe_max_us"])'
}
# Messages ceph_perf_msgr_server received so far, over its workers.
ceph_recv() {
  python3 - "$ASOK" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"prefix": "perf dump"}\0')
buf = b""
while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
dump = json.loads(buf[4:])
print(sum(v["msgr_recv_messages"] for k, v in dump.items() if k.startswith("AsyncMessenger::Worker-")))
PY
}
ceph_pair() {  # ceph_pair SIZE CONCURRENCY RATE_BYTES -> payload bytes/s
  local ios n0 n1 out us
  ios=$(( $3 * SECS / $1 )); (( ios >= 16 )) || ios=16
  n0=$(ceph_recv)
  out=$(ceph_in 1 timeout $((SECS * 10 + 60)) ceph_perf_msgr_client "v2:$SERVER:6900" 1 "$2" "$ios" 0 "$1" 2>&1) ||
    die "ceph_perf_msgr_client ($1 B): $(tail -3 <<<"$out")"
  us=$(sed -n 's/.*Total op [0-9]* run time \([0-9]*\)us.*/\1/p' <<<"$out")
  [[ -n $us ]] || die "ceph_perf_msgr_client ($1 B) did not finish: $(tail -3 <<<"$out")"
  sleep 0.2  # what the kernel still held in its socket buffers
  n1=$(ceph_recv)
  python3 -c 'import sys; n, size, us = map(int, sys.argv[1:]); print(n * size / (us / 1e6))' "$((n1 - n0))" "$1" "$us"
}
# RATE (tc's syntax: bit or bps, SI or IEC prefixes) in bytes per second.
rate_bytes() {
  python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmgt]?)(i?)(bit|bps)?", sys.argv[1].lower())
if not m:
    sys.exit(f"shaped-link.sh: cannot read rate {sys.argv[1]!r}")
n = float(m[1]) * (1024 if m[3] else 1000) ** " kmgt".index(m[2] or " ")
print(int(n if m[4] == "bps" else n / 8))
PY
}

for rate in "${RATES[@]}"; do
  "$NETNS" shape "$NET" 1 "$rate"
  echo "== link shaped to $rate (tbf both ways), $ROUNDS rounds of $SECS s, interleaved"
  rate_b=$(rate_bytes "$rate")
  rows=()
  for ((r = 1; r <= ROUNDS; r++)); do
    ip3=$(iperf)
    read -r w4 p4 < <(bench 4194304 4)
    c4=$(ceph_pair 4194304 4 "$rate_b")
    read -r w64 p64 < <(bench 65536 32)
    c64=$(ceph_pair 65536 32 "$rate_b")
    python3 -c 'import sys; r, *v = sys.argv[1:]; v = [float(x) / 1e6 for x in v]
x = lambda i: f"({v[i] / v[0]:.2f}x)"
print(f"round {r}: iperf3 {v[0]:.1f} MB/s; 4 MiB wire {v[1]:.1f} payload {v[2]:.1f} MB/s {x(2)}, Ceph pair {v[3]:.1f} MB/s {x(3)};"
      f" 64 KiB wire {v[4]:.1f} payload {v[5]:.1f} MB/s {x(5)}, Ceph pair {v[6]:.1f} MB/s {x(6)}")' \
      "$r" "$ip3" "$w4" "$p4" "$c4" "$w64" "$p64" "$c64"
    rows+=("$ip3 $w4 $p4 $c4 $w64 $p64 $c64")
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
ip, w4, p4, c4, w64, p64, c64 = (statistics.median(c) for c in zip(*rows))
ratios = lambda col: statistics.median(r[col] / r[0] for r in rows)
print(f"median: iperf3 {ip/1e6:.1f} MB/s; 4 MiB {w4/1e6:.1f} MB/s on the wire ({ratios(1):.2f}x iperf3), payload {ratios(2):.2f}x,"
      f" Ceph pair payload {c4/1e6:.1f} MB/s ({ratios(3):.2f}x); 64 KiB {w64/1e6:.1f} MB/s ({ratios(4):.2f}x), payload {ratios(5):.2f}x,"
      f" Ceph pair payload {c64/1e6:.1f} MB/s ({ratios(6):.2f}x)")'
  # 1000 connections sharing the link: how evenly it serves them.
  "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "v2:$SERVER:6800" --policy lossy-client \
    --mode crc --size 16384 --depth 1 --conns 1000 --duration "${FAIR_SECS:-30}" --json |
    python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
rate = r["counters"]["wire_bytes"] / r["seconds"] / 1e6
print("1000 connections, 16 KiB at depth 1: %.1f MB/s, Jain index %.3f (%d to %d messages each)"
      % (rate, r["jain_index"], r["per_conn_min"], r["per_conn_max"]))'
  # Small messages behind large ones on one connection.
  for ((r = 1; r <= 3; r++)); do
    for prio in 196 127; do
      read -r rate_p p50 p99 pmax < <(probe "$prio")
      python3 -c 'import sys; r, prio, rate, *l = sys.argv[1:]
frame = 4194304 / float(rate) * 1e3
p50, p99, pmax = (float(x) / 1e3 for x in l)
print(f"round {r}: probe at priority {prio} beside 4 MiB x 4: p50 {p50:.1f} p99 {p99:.1f} max {pmax:.1f} ms"
      f" = {p50 / frame:.2f} / {p99 / frame:.2f} / {pmax / frame:.2f} frames of {frame:.1f} ms")' \
        "$r" "$prio" "$rate_p" "$p50" "$p99" "$pmax"
    done
  done
done
