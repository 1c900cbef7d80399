#!/usr/bin/env bash
# msgr1.sh MSGR_BINARY [ROUNDS] [SECS]
#
# Benchmark (not a test): msgr1 against msgr2 crc, and our msgr1 pair
# against Ceph's, in one run, interleaved ROUNDS times (default 3), medians.
#  1. `msgr bench` against one `msgr serve` bound at v1: and v2: (two
#     processes), 4 KiB and 1 MiB at depth 16, SECS seconds (default 5)
#     each: msgs/s, and client and server CPU per message over the steady
#     part of each run (--server-pid), msgr1 beside msgr2 crc.
#  2. Ceph 20's ceph_perf_msgr_client against ceph_perf_msgr_server, both
#     at v1:, beside `msgr bench` against `msgr serve` at v1: (same size,
#     16 in flight, the same count): ops/s. Timer slack of 1 ns on every
#     process: Ceph's perf tools usleep(0) per message (NOTES-tentacle.md).
# Needs: scripts/ceph/tentacle.sh setup (part 2).
set -euo pipefail
MSGR="$(realpath "${1:?usage: msgr1.sh MSGR_BINARY [ROUNDS] [SECS]}")"
ROUNDS=${2:-3} SECS=${3:-5}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
PORT=${PORT:-27100}
OUT="$(mktemp -d /tmp/msgr1-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
echo 1 >"/proc/$BASHPID/timerslack_ns"
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

v1=$((PORT++)) v2=$((PORT++))
"$MSGR" serve --bind "v1:127.0.0.1:$v1" --bind "v2:127.0.0.1:$v2" --shards 1 --duration 100000 >/dev/null 2>&1 &
sp=$!; PIDS+=("$sp")
wait_port "$v1"; wait_port "$v2"
for r in $(seq "$ROUNDS"); do
  for size in 4096 1048576; do
    for proto in v1 v2; do
      port=$v1; [[ $proto == v2 ]] && port=$v2
      echo "{\"round\":$r,\"part\":1,\"proto\":\"$proto\",\"size\":$size,\"r\":$("$MSGR" bench --connect "$proto:127.0.0.1:$port/0" \
        --mode crc --size "$size" --depth 16 --duration "$SECS" --server-pid "$sp" --json)}" >>"$OUT/runs.jsonl"
    done
  done
done
kill "$sp"; wait "$sp" 2>/dev/null || true

if [[ -x "$T" ]] && "$T" run true 2>/dev/null; then
  for r in $(seq "$ROUNDS"); do
    for size in 4096 1048576; do
      n=$(( size > 65536 ? 3000 : 100000 ))
      port=$((PORT++))
      "$T" run ceph_perf_msgr_server "v1:127.0.0.1:$port" 1 0 >/dev/null 2>&1 & cp=$!
      wait_port "$port"
      us=$("$T" run ceph_perf_msgr_client "v1:127.0.0.1:$port" 1 16 "$n" 0 "$size" 2>&1 | sed -n 's/.*run time \([0-9]*\)us.*/\1/p')
      kill "$cp" 2>/dev/null; wait "$cp" 2>/dev/null || true
      echo "{\"round\":$r,\"part\":2,\"who\":\"ceph\",\"size\":$size,\"ops_per_sec\":$(python3 -c "print($n/($us/1e6))")}" >>"$OUT/runs.jsonl"
      port=$((PORT++))
      "$MSGR" serve --bind "v1:127.0.0.1:$port" --shards 1 --duration 100000 >/dev/null 2>&1 & sp=$!
      wait_port "$port"
      ops=$("$MSGR" bench --connect "v1:127.0.0.1:$port/0" --size "$size" --depth 16 --count "$n" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["msgs_per_sec"])')
      kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true
      echo "{\"round\":$r,\"part\":2,\"who\":\"ours\",\"size\":$size,\"ops_per_sec\":$ops}" >>"$OUT/runs.jsonl"
    done
  done
fi

python3 - "$OUT/runs.jsonl" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda xs: st.median(xs) if xs else float("nan")
print("1. msgr bench against msgr serve (two processes, one shard each), depth 16, medians:")
print(f"{'size':>8} {'proto':>5} {'msgs/s':>10} {'MB/s':>8} {'client us/msg':>14} {'server us/msg':>14}")
for size in (4096, 1048576):
    res = {}
    for proto in ("v1", "v2"):
        rs = [x["r"] for x in rows if x.get("part") == 1 and x["size"] == size and x["proto"] == proto]
        steady = [r.get("steady", r) for r in rs]
        m = med([s["msgs_per_sec"] for s in steady])
        c = med([s["client_cpu_us_per_msg"] for s in steady])
        s_ = med([s.get("server_cpu_us_per_msg") or float("nan") for s in steady])
        res[proto] = (m, c, s_)
        print(f"{size:>8} {'msgr1' if proto == 'v1' else 'msgr2 crc':>5} {m:>10.0f} {m*size/1e6:>8.1f} {c:>14.2f} {s_:>14.2f}")
    (m1, c1, s1), (m2, c2, s2) = res["v1"], res["v2"]
    print(f"{size:>8} msgr1/msgr2: msgs/s x{m1/m2:.2f}, client CPU x{c1/c2:.2f}, server CPU x{s1/s2:.2f}")
p2 = [x for x in rows if x.get("part") == 2]
if p2:
    print("2. msgr1 pairs, 16 in flight, medians (ops/s):")
    for size in (4096, 1048576):
        c = med([x["ops_per_sec"] for x in p2 if x["size"] == size and x["who"] == "ceph"])
        o = med([x["ops_per_sec"] for x in p2 if x["size"] == size and x["who"] == "ours"])
        print(f"{size:>8}: Ceph's pair {c:.0f}, ours {o:.0f}: x{o/c:.2f}")
PY
echo "runs: $OUT/runs.jsonl"
