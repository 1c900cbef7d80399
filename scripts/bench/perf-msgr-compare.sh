#!/usr/bin/env bash
# perf-msgr-compare.sh MSGR_BINARY [SIZE] [CONC] [IOS]
#
# Benchmark (not a test): Ceph 20's ceph_perf_msgr_client against Ceph's own
# ceph_perf_msgr_server and against `msgr serve`, back to back in the same
# run, alternating ROUNDS times (default 3), reporting each run's ops/s and
# the servers' CPU time per op. Timer slack of 1 ns on every process (both
# Ceph tools usleep(0) per message; see NOTES-tentacle.md).
set -euo pipefail
MSGR="$(realpath "${1:?usage: perf-msgr-compare.sh MSGR_BINARY [SIZE] [CONC] [IOS]}")"
SIZE=${2:-4096} CONC=${3:-16} IOS=${4:-20000}
ROUNDS=${ROUNDS:-3}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
PORT=${PORT:-26950}
echo 1 >"/proc/$BASHPID/timerslack_ns"
HZ=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

run() {  # run ceph|msgr
  local port=$((PORT++)) sp
  if [[ $1 == ceph ]]; then
    "$T" run ceph_perf_msgr_server "127.0.0.1:$port" 1 0 >/dev/null 2>&1 & sp=$!
  else
    "$MSGR" serve --bind "v2:127.0.0.1:$port" --name osd.0 >/dev/null 2>&1 & sp=$!
  fi
  wait_port "$port"
  local c0; c0=$(cpu "$sp")
  local out; out=$("$T" run ceph_perf_msgr_client "127.0.0.1:$port" 1 "$CONC" "$IOS" 0 "$SIZE" 2>&1)
  local c1; c1=$(cpu "$sp")
  kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true
  local us; us=$(sed -n 's/.*run time \([0-9]*\)us.*/\1/p' <<<"$out")
  awk -v n="$IOS" -v us="$us" -v c=$((c1 - c0)) -v hz="$HZ" -v who="$1" -v sz="$SIZE" 'BEGIN {
    printf "%-5s server: %8.0f ops/s %8.1f MB/s  server cpu %6.1f us/op\n", who, n / (us / 1e6), n * sz / (us / 1e6) / 1e6, c / hz * 1e6 / n }'
}

echo "ceph_perf_msgr_client, $SIZE B, concurrency $CONC, $IOS ops, $ROUNDS rounds"
for _ in $(seq "$ROUNDS"); do
  run ceph
  run msgr
done
