#!/usr/bin/env bash
# scale.sh [ROUNDS] [SECONDS]
#
# Benchmark (not a test): issue 16's table, from one run. Every row is
# measured in the same run as what it is compared with, interleaved ROUNDS
# times (default 3), SECONDS (default 8) each; medians.
#
#  1. Per-message cost against the number of connections (4 KiB): 1
#     connection at depth 128, then 100, 1000 and 10000 connections at
#     depth 1, `msgr bench --connect` (one process, one core) against each
#     server (another process): `msgr serve` on 1 shard over epoll TCP and
#     over io_uring (the client then on io_uring too), Ceph 20's
#     ceph_perf_msgr_server (1 worker), and the raw TCP pattern (`msgr serve
#     --raw`, `msgr bench --raw-only`: a 12-byte header and the payload, no
#     messenger). The server's CPU per message over the steady part of each
#     run (`msgr bench --server-pid`: from a second after every connection's
#     first reply to a second before the end; handshakes left out).
#  2. Large messages, 1 MiB and 4 MiB, depth 16, one connection: iperf3
#     over one loopback stream, our pair over epoll TCP and over io_uring,
#     Ceph's pair (ceph_perf_msgr_client -> ceph_perf_msgr_server), and our
#     client against Ceph's server (our client's CPU per MiB against both
#     servers).
#  3. Memory per idle connection and the time for 8000 to come up,
#     `msgr serve` against ceph_perf_msgr_server (scripts/bench/idle.sh).
#
# Needs the Tentacle chroot (scripts/ceph/tentacle.sh setup) and iperf3
# (installed here if missing). Prints markdown tables
# (scripts/bench/scale-report.py, which reads the runs' JSON lines, kept in
# the file this names, again).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-3}
SECS=${2:-8}
T=scripts/ceph/tentacle.sh
PORT=${PORT:-28100}
M=target/perf/msgr
command -v iperf3 >/dev/null || apt-get install -y -q iperf3 >/dev/null
cargo build --profile perf -q -p msgr-cli -p msgr-bench
OUT=$(mktemp /tmp/msgr-scale.XXXXXX.jsonl)
echo "scale.sh: runs in $OUT" >&2
ulimit -n "$(ulimit -Hn)"
echo 1 >"/proc/$BASHPID/timerslack_ns"
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
stop() { kill -INT "$1" 2>/dev/null; kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
record() { python3 -c 'import json,sys; o=json.loads(sys.argv[1]); o.update(json.loads(sys.argv[2])); print(json.dumps(o))' "$1" "$2" >>"$OUT"; }

# Starts server $1 on a fresh port; sets SP (its pid: tentacle.sh execs
# into Ceph's server, keeping it), SADDR (ours) and CADDR (Ceph's client's).
start_server() {
  local port=$((PORT++))
  case $1 in
    msgr) "$M" serve --bind "v2:127.0.0.1:$port" --shards 1 >/dev/null 2>&1 & ;;
    msgr-uring) "$M" serve --bind "v2:127.0.0.1:$port" --shards 1 --transport uring >/dev/null 2>&1 & ;;
    raw) "$M" serve --raw --bind "v2:127.0.0.1:$port" >/dev/null 2>&1 & ;;
    ceph) "$T" run ceph_perf_msgr_server "127.0.0.1:$port" 1 0 --ms_max_accept_failures 1000 >/dev/null 2>&1 & ;;
  esac
  SP=$!
  SADDR="v2:127.0.0.1:$port/0"
  CADDR="127.0.0.1:$port"
  wait_port "$port"
}

client_args() {
  case $1 in
    msgr-uring) echo --transport uring ;;
    raw) echo --raw-only ;;
  esac
}

# 1. Per-message cost against the number of connections.
for r in $(seq "$ROUNDS"); do
  for w in 1:128 100:1 1000:1 10000:1; do
    for s in msgr msgr-uring ceph raw; do
      conns=${w%%:*} depth=${w##*:}
      # Time for the connections to come up before the steady part.
      secs=$(( SECS + conns / 2000 ))
      start_server "$s"
      # shellcheck disable=SC2046
      line=$("$M" bench --connect "$SADDR" --conns "$conns" --depth "$depth" --duration "$secs" \
        --server-pid "$SP" --json $(client_args "$s"))
      stop "$SP"
      record "$line" "{\"part\": \"conns\", \"server\": \"$s\", \"round\": $r}"
      tail -1 "$OUT" | python3 -c 'import json, sys
r = json.load(sys.stdin); s = r.get("steady", {})
print("conns: %s %d x depth %d: %.0f msgs/s, server %.2f us/msg" % (r["server"], r["conns"], r["depth"],
      s.get("msgs_per_sec", 0), s.get("server_cpu_us_per_msg", 0)))' >&2
    done
  done
done

# 2. Large messages.
iperf3 -s -p $((PORT++)) -D --pidfile /tmp/msgr-scale-iperf.pid >/dev/null
IPORT=$((PORT - 1))
wait_port "$IPORT"
for r in $(seq "$ROUNDS"); do
  for size in 1048576 4194304; do
    mib=$((size >> 20))
    j=$(iperf3 -c 127.0.0.1 -p "$IPORT" -t "$SECS" -J)
    mbs=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["end"]["sum_received"]["bits_per_second"] / 8e6)' "$j")
    record "{\"mb_per_sec\": $mbs}" "{\"part\": \"large\", \"who\": \"iperf3\", \"size\": $size, \"round\": $r}"
    for s in msgr msgr-uring ceph; do
      start_server "$s"
      # shellcheck disable=SC2046
      line=$("$M" bench --connect "$SADDR" --size "$size" --depth 16 --duration "$SECS" \
        --server-pid "$SP" --json $(client_args "$s"))
      stop "$SP"
      record "$line" "{\"part\": \"large\", \"who\": \"msgr-client/$s\", \"size\": $size, \"round\": $r}"
    done
    # Ceph's pair: as many ops as our pair moved in SECONDS, about.
    ios=$(( 3000 * SECS / mib ))
    start_server ceph
    out=$("$T" run ceph_perf_msgr_client "$CADDR" 1 16 "$ios" 0 "$size" 2>&1)
    stop "$SP"
    us=$(sed -n 's/.*run time \([0-9]*\)us.*/\1/p' <<<"$out")
    record "{\"mb_per_sec\": $(python3 -c "print($ios * $size / ($us / 1e6) / 1e6)")}" \
      "{\"part\": \"large\", \"who\": \"ceph-pair\", \"size\": $size, \"round\": $r}"
    echo "large: $mib MiB round $r done" >&2
  done
done
kill "$(cat /tmp/msgr-scale-iperf.pid)" 2>/dev/null || true

# 3. Memory per idle connection (its own script; its medians).
IDLE=$(scripts/bench/idle.sh "$ROUNDS" | tail -3)

python3 - "$IDLE" >>"$OUT" <<'PY'
import json, sys
print(json.dumps({"part": "idle", "text": sys.argv[1]}))
PY
scripts/bench/scale-report.py "$OUT"
