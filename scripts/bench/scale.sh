#!/usr/bin/env bash
# scale.sh [ROUNDS] [SECONDS]
#
# Benchmark (not a test): issues 16's and 38's table, from one run. Every
# row is measured in the same run as what it is compared with, interleaved
# ROUNDS times (default 3), SECONDS (default 8) each; medians.
#
#  1. Per-message cost against the number of connections and the size:
#     WORKLOADS, space-separated CONNS:DEPTH[:SIZE] (default 1 connection
#     at depth 128, 100, 1000 and 10000 at depth 1, all 4 KiB, then 1 MiB
#     and 4 MiB at depth 16 on one connection), `msgr bench --connect` (one
#     process, over epoll, the same client for every messenger server)
#     against each of SERVERS (another process):
#       epoll, epoll-2   `msgr serve` on 1 and 2 shards over epoll TCP
#       uring            1 shard, io_uring reaped inside tokio's reactor
#       ring, ring-2     1 and 2 shards, each waiting in an io_uring of its own
#       ceph             Ceph 20's ceph_perf_msgr_server (1 worker)
#       raw, raw-ring    the raw TCP pattern (`msgr serve --raw` on epoll, and
#                        on a ring, against `msgr bench --raw-only`: a
#                        12-byte header and the payload, no messenger)
#     The server's CPU per message over the steady part of each run (`msgr
#     bench --server-pid`: from a second after every connection's first
#     reply to a second before the end; handshakes left out). With two
#     shards, where the machine's PMU has memory events, `perf c2c record`
#     samples the server over the steady seconds: loads that found their
#     line modified in another core's cache (HITM), against the loads
#     sampled (on a machine without them: "no memory events").
#  2. Large messages, 1 MiB and 4 MiB, depth 16, one connection: iperf3
#     over one loopback stream, Ceph's pair (ceph_perf_msgr_client ->
#     ceph_perf_msgr_server), and our client's CPU per MiB against Ceph's
#     server and ours (from part 1).
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
read -r -a SERVERS <<< "${SERVERS:-epoll epoll-2 uring ring ring-2 ceph raw raw-ring}"
read -r -a WORKLOADS <<< "${WORKLOADS:-1:128 100:1 1000:1 10000:1 1:16:1048576 1:16:4194304}"
command -v iperf3 >/dev/null || apt-get install -y -q iperf3 >/dev/null
cargo build --profile perf -q -p msgr-cli -p msgr-bench
OUT=$(mktemp /tmp/msgr-scale.XXXXXX.jsonl)
echo "scale.sh: runs in $OUT" >&2
ulimit -n "$(ulimit -Hn)"
echo 1 >"/proc/$BASHPID/timerslack_ns"
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
stop() { kill -INT "$1" 2>/dev/null; kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# merge A B: JSON object A with B's keys added; record A B: that, kept.
merge() { python3 -c 'import json,sys; o=json.loads(sys.argv[1]); o.update(json.loads(sys.argv[2])); print(json.dumps(o))' "$1" "$2"; }
record() { merge "$1" "$2" >>"$OUT"; }
C2C=no
C2C_DATA=$(mktemp /tmp/msgr-scale-c2c.XXXXXX)
trap 'rm -f "$C2C_DATA"' EXIT
perf c2c record -o "$C2C_DATA" -- true >/dev/null 2>&1 && C2C=yes

# Starts server $1 on a fresh port; sets SP (its pid: tentacle.sh execs
# into Ceph's server, keeping it), SADDR (ours) and CADDR (Ceph's client's).
start_server() {
  local port=$((PORT++))
  local a=(serve --bind "v2:127.0.0.1:$port")
  case $1 in
    epoll) "$M" "${a[@]}" --shards 1 >/dev/null 2>&1 & ;;
    epoll-2) "$M" "${a[@]}" --shards 2 >/dev/null 2>&1 & ;;
    uring) "$M" "${a[@]}" --shards 1 --transport uring >/dev/null 2>&1 & ;;
    ring) "$M" "${a[@]}" --shards 1 --transport ring >/dev/null 2>&1 & ;;
    ring-2) "$M" "${a[@]}" --shards 2 --transport ring >/dev/null 2>&1 & ;;
    raw) "$M" "${a[@]}" --raw >/dev/null 2>&1 & ;;
    raw-ring) "$M" "${a[@]}" --raw --transport uring >/dev/null 2>&1 & ;;
    ceph) "$T" run ceph_perf_msgr_server "127.0.0.1:$port" 1 0 --ms_max_accept_failures 1000 >/dev/null 2>&1 & ;;
    *) echo "scale.sh: no server $1" >&2; exit 2 ;;
  esac
  SP=$!
  SADDR="v2:127.0.0.1:$port/0"
  CADDR="127.0.0.1:$port"
  wait_port "$port"
}

# The c2c sample of a run as JSON: HITM loads against loads sampled, and the
# seconds sampled (the report's "Trace Event Information" block).
c2c_json() {
  perf c2c report -i "$C2C_DATA" --stats 2>/dev/null | python3 -c 'import json, re, sys
t = sys.stdin.read()
g = lambda k: int(re.search(r"^\s*" + k + r"\s*:\s*(\d+)", t, re.M)[1])
print(json.dumps({"c2c": {"loads": g("Load Operations"), "local_hitm": g("Load Local HITM"),
                          "remote_hitm": g("Load Remote HITM"), "seconds": float(sys.argv[1])}}))' "$1"
}

# 1. Per-message cost against connections and size.
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do
    for s in "${SERVERS[@]}"; do
      IFS=: read -r conns depth size <<< "$w"
      size=${size:-4096}
      # Time for the connections to come up before the steady part.
      secs=$(( SECS + conns / 2000 ))
      client=()
      [[ $s == raw* ]] && client=(--raw-only)
      start_server "$s"
      c2c=
      if [[ $C2C == yes && $s == *-2 ]]; then
        # The steady seconds: after the connections are up, before the end.
        ( sleep $(( 1 + conns / 2000 )); exec perf c2c record -o "$C2C_DATA" -p "$SP" -- sleep $(( SECS - 2 )) ) \
          >/dev/null 2>&1 &
        c2c=$!
      fi
      line=$("$M" bench --connect "$SADDR" --conns "$conns" --depth "$depth" --size "$size" \
        --duration "$secs" --server-pid "$SP" --json "${client[@]}")
      extra="{\"part\": \"conns\", \"server\": \"$s\", \"round\": $r, \"size\": $size}"
      if [[ -n $c2c ]] && wait "$c2c"; then
        extra=$(merge "$extra" "$(c2c_json $(( SECS - 2 )))")
      fi
      stop "$SP"
      record "$line" "$extra"
      tail -1 "$OUT" | python3 -c 'import json, sys
r = json.load(sys.stdin); s = r.get("steady", {})
print("conns: %s %d x depth %d, %d B: %.0f msgs/s, server %.2f us/msg" % (r["server"], r["conns"], r["depth"],
      r["size"], s.get("msgs_per_sec", 0), s.get("server_cpu_us_per_msg", 0)))' >&2
    done
  done
done
[[ $C2C == yes ]] || echo '{"part": "c2c", "supported": false}' >>"$OUT"

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
