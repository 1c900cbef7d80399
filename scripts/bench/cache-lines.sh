#!/usr/bin/env bash
# cache-lines.sh [CONNS] [BINARY...]
#
# Benchmark (not a test): the cache lines a server touches per message,
# counted exactly. `msgr serve --shards 1` runs under cachegrind (last level
# 1 MiB, this VM's L2) while `msgr bench --connect --conns CONNS --depth 1`
# sends 40000 and then, against a fresh server, 100000 messages; the
# difference of the two runs is 60000 messages in the steady state (the
# handshakes and the ramp cancel). The client runs under valgrind too (no
# cache simulation): as slow as the server, it does not answer within the
# server's turn, so the server does not serve the same connection many
# times in a row, which would hide the misses. Prints, per binary (default
# target/perf/msgr), the instructions, L1 and last-level misses per message
# and the functions missing most. Needs valgrind; a few minutes per binary.
# With CONNS (default 1000) connections' state beyond the 1 MiB, each line a
# message touches is a last-level miss: the count is the lines touched.
# SERVE_ARGS: more arguments for the server, e.g. SERVE_ARGS="--transport
# uring" (io_uring reaped in tokio's reactor: a ring shard's loop waits in
# io_uring_enter, which valgrind does not let other threads run beside).
# TOP: how many functions to list (default 15).
# Bytes the kernel writes (a pool buffer received into) are not simulated:
# their first read by the server counts as a miss.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CONNS=${1:-1000}
shift || true
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || { cargo build --profile perf -q -p msgr-cli; BINS=(target/perf/msgr); }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
PORT=${PORT:-21300}
read -r -a SERVE_ARGS <<< "${SERVE_ARGS:-}"
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
run() { # BIN TAG COUNT
  local port=$((PORT++))
  valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,16,64 \
    --cachegrind-out-file="$DIR/$2.out" \
    "$1" serve --bind "v2:127.0.0.1:$port" --shards 1 --duration 3600 "${SERVE_ARGS[@]}" > /dev/null 2>&1 &
  local vp=$!
  wait_port "$port"
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$1" bench --connect "v2:127.0.0.1:$port/0" --conns "$CONNS" --depth 1 --count "$3" --shards 1 \
    > /dev/null 2>&1
  kill -TERM "$vp"
  wait "$vp" 2> /dev/null || true
}
for b in "${BINS[@]}"; do
  run "$b" a 40000
  run "$b" b 100000
  echo "$b, $CONNS connections:"
  python3 - "$DIR/a.out" "$DIR/b.out" 60000 <<'PY'
import collections, os, sys
def load(path):
    per_fn, total, events, fn = collections.Counter(), collections.Counter(), None, ""
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit():
            for k, v in zip(events, map(int, line.split()[1:])):
                total[k] += v
                if k in ("DLmr", "DLmw"):
                    per_fn[fn] += v
    return per_fn, total
(fa, ta), (fb, tb), n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
d = {k: (tb[k] - ta[k]) / n for k in tb}
print(f"  per message: {d['Ir']:.0f} instructions, L1 misses {d['D1mr'] + d['D1mw']:.1f}, "
      f"last-level misses {d['DLmr'] + d['DLmw']:.1f} ({d['DLmr']:.1f} read, {d['DLmw']:.1f} write)")
for f, v in sorted(((f, (fb[f] - fa.get(f, 0)) / n) for f in fb), key=lambda x: -x[1])[:int(os.environ.get("TOP", 15))]:
    if v >= 0.3:
        print(f"  {v:5.2f}  {f[:100]}")
PY
done
