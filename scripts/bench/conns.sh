#!/usr/bin/env bash
# conns.sh [ROUNDS] [SECONDS]
#
# Per-message cost against the number of connections: a `msgr serve` in one
# process, `msgr bench --connect` with 1 (depth 128), 100, 1000 and 10000
# connections (depth 1) in another (each process then holds at most 10000
# sockets). WORKLOADS: space-separated CONNS:DEPTH[:SIZE] (SIZE in bytes,
# default 4096), e.g. WORKLOADS="1:16:1048576 1:16:4194304" for large
# messages. The server's CPU per message is taken from its own
# once-a-second statistics, over the seconds when every connection was up
# and traffic flowed before and after: handshakes are not counted.
# Servers: CONFIGS, space-separated LABEL=BINARY[,SERVE-ARGS...] (default:
# this tree's server on 1 shard and on 2), e.g.
#   CONFIGS="new=target/perf/msgr,--shards,1 old=/tmp/old-target/perf/msgr"
# CLIENT_ARGS: more arguments for the client, e.g. for secure mode
#   CONFIGS="s=target/perf/msgr,--auth,cephx,--keyring,K,--mode,secure"
#   CLIENT_ARGS="--auth cephx --keyring K --mode secure"
# (the first server writes the keyring K if there is none).
# A server given --raw is the physical baseline (`msgr serve --raw`: plain
# TCP, a 12-byte header, one thread), and its client `msgr bench --raw-only`:
#   CONFIGS="raw=target/perf/msgr,--raw msgr=target/perf/msgr,--shards,1"
# Connection counts and servers are interleaved, ROUNDS (3) times, SECONDS
# (12) each (a raw server takes about 10 s to accept 10000: give it 20); a
# run with no steady second is skipped with a warning; it prints each run, then per server the medians and their
# ratios against 100 connections, then per connection count each server's
# medians against the first server's. No assertions: a benchmark, for
# BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-3}
SECS=${2:-12}
CONFIGS=${CONFIGS:-"shards1=target/perf/msgr,--shards,1 shards2=target/perf/msgr,--shards,2"}
cargo build --profile perf -q -p msgr-cli
OUT=$(mktemp)
LOG=$(mktemp)
trap 'rm -f "$OUT" "$LOG"' EXIT
read -r -a WORKLOADS <<< "${WORKLOADS:-1:128 100:1 1000:1 10000:1}"
PORT=17100
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do
   for config in $CONFIGS; do
    label=${config%%=*}
    IFS=, read -r -a serve <<< "${config#*=}"
    IFS=: read -r conns depth size <<< "$w"
    size=${size:-4096}
    PORT=$((PORT + 1))
    "${serve[0]}" serve --bind "v2:127.0.0.1:$PORT" --stats 1 "${serve[@]:1}" \
      > /dev/null 2> "$LOG" &
    server=$!
    sleep 0.5
    read -r -a client <<< "${CLIENT_ARGS:-}"
    [[ " ${serve[*]} " == *" --raw "* ]] && client+=(--raw-only)
    # A client that failed (a connection reset, say) is said and its run
    # skipped; the rest go on.
    line=$(target/perf/msgr bench --connect "v2:127.0.0.1:$PORT/0" --conns "$conns" \
      --depth "$depth" --size "$size" --duration "$SECS" --json "${client[@]}") \
      || { echo "$label, $conns conns: the client failed; run skipped" >&2; line=; }
    sleep 1.5
    # A server that died is said, with its last words, and the run goes on.
    kill "$server" 2> /dev/null \
      || echo "$label, $conns conns: the server had exited: $(tail -3 "$LOG")" >&2
    wait "$server" 2> /dev/null || true
    [[ -n $line ]] || continue
    python3 - "$LOG" "$conns" "$line" "$label" "$size" >> "$OUT" <<'PY' || continue
import json, re, sys
log, conns, run, label = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
size = int(sys.argv[5])
ticks = []
for l in open(log):
    m = re.search(r"total (\d+) (?:ops|msgs), (\d+) conns, \d+ pings, cpu ([\d.]+)s", l)
    if m:
        ticks.append((int(m[1]), int(m[2]), float(m[3])))
# Ticks with every connection up and traffic on both sides of them.
steady = [i for i in range(1, len(ticks) - 1)
          if ticks[i - 1][1] >= conns
          and ticks[i - 1][0] < ticks[i][0] < ticks[i + 1][0]]
if not steady:
    # 10000 connections take a one-thread raw server about 10 s to accept.
    sys.exit(f"{label}, {conns} conns: no second with every connection up; run longer")
a, b = ticks[steady[0] - 1], ticks[steady[-1]]
cpu_us = (b[2] - a[2]) * 1e6 / max(b[0] - a[0], 1)
print(json.dumps({"server": label, "conns": conns, "depth": run["depth"],
                  "size": size,
                  "msgs_per_sec": run["msgs_per_sec"], "server_cpu_us_per_msg": cpu_us,
                  "steady_seconds": len(steady)}))
PY
    tail -1 "$OUT"
   done
  done
done
python3 - "$OUT" <<'PY'
import json, statistics as st, sys
all_runs = [json.loads(l) for l in open(sys.argv[1])]
def key(r):
    return (r["conns"], r["depth"], r.get("size", 4096))
def name(w):
    size = f"{w[2] >> 20} MiB" if w[2] >= 1 << 20 else f"{w[2] >> 10} KiB"
    return f"{w[0]:6} conns, depth {w[1]:3}, {size:>6}"
for server in dict.fromkeys(r["server"] for r in all_runs):
    runs = [r for r in all_runs if r["server"] == server]
    print(f"server {server}:")
    med = {}
    for w in dict.fromkeys(key(r) for r in runs):
        rs = [r for r in runs if key(r) == w]
        rate = st.median(r["msgs_per_sec"] for r in rs)
        cpu = st.median(r["server_cpu_us_per_msg"] for r in rs)
        med[w] = (rate, cpu)
        txt = " ".join(f"{r['server_cpu_us_per_msg']:.2f}" for r in rs)
        print(f"  {name(w)}: msgs/s {rate:8.0f}  "
              f"server cpu {cpu:7.2f} us/msg  (runs: {txt})")
    base = med.get((100, 1, 4096))
    if base:
        for w, (rate, cpu) in med.items():
            print(f"  {name(w)}: server cpu/msg x{cpu / base[1]:.3f} against 100 connections")
# Each server against the first, per workload.
servers = list(dict.fromkeys(r["server"] for r in all_runs))
for w in dict.fromkeys(key(r) for r in all_runs):
    med = {}
    for server in servers:
        rs = [r for r in all_runs if r["server"] == server and key(r) == w]
        if rs:
            med[server] = (st.median(r["msgs_per_sec"] for r in rs),
                           st.median(r["server_cpu_us_per_msg"] for r in rs))
    first = servers[0]
    for server, (rate, cpu) in med.items():
        if server != first and first in med:
            print(f"{name(w)}: {server} vs {first}: msgs/s x{rate / med[first][0]:.3f}, "
                  f"server cpu/msg x{cpu / med[first][1]:.3f}")
PY
