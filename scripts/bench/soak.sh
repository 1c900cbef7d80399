#!/usr/bin/env bash
# soak.sh [MINUTES] [MSGR]: a long run under periodic faults, reporting each
# minute what must stay flat: resident memory, file descriptors, threads,
# and the messages served. Not a test (no limits are checked); the curve
# goes in BENCHMARKS.md.
#
# Two hosts in network namespaces (scripts/net/netns.sh). Host 2 runs msgr
# serve (a stateful server, 2 shards, with injected socket failures, one
# in SOAK_INJECT (20000) socket operations); lossless clients with
# --verify: host 1 40 connections of 4 KiB writes at depth 4, host 3 one
# connection of 1 MiB writes at depth 2. Every 3 minutes host 1's path
# breaks: a 20 s cut both ways, then 90 s later a 5 s one-way loss (server
# to client). MINUTES defaults to 60. Memory, descriptors and threads are
# sampled from the server and from host 1's client.
#
# Output: one line a minute on stdout, tab-separated:
#   minute  serve_rss_kib serve_fds serve_threads  bench_rss_kib bench_fds
#   bench_threads  msgs_per_s(served, that minute)
# then each bench's summary (lost/duplicated/reordered must be 0).
# The processes run at nice 19 so that the machine stays usable.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MINUTES="${1:-60}"
MSGR="$(readlink -f "${2:-$ROOT/target/release/msgr}")"
NETNS="$ROOT/scripts/net/netns.sh"
NET=soak
INJECT="${SOAK_INJECT:-20000}"
OUT="$(mktemp -d /tmp/soak.XXXXXX)"
SECS=$((MINUTES * 60))

cleanup() { "$NETNS" down "$NET" --kill 2>/dev/null || true; }
trap cleanup EXIT

"$NETNS" up "$NET" 3 10.80.0
ADDR="v2:$("$NETNS" addr "$NET" 2):6800"

nice -n 19 "$NETNS" exec "$NET" 2 "$MSGR" serve --bind "$ADDR" --policy stateful-server \
  --shards 2 --inject-socket-failures "$INJECT" --stats 60 --duration $((SECS + 120)) \
  >"$OUT/serve" 2>&1 &
SERVE_JOB=$!
sleep 1
SERVE=$(ip netns pids "$NET-h2" | head -1)
nice -n 19 "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "$ADDR" --policy lossless-client \
  --verify --conns 40 --depth 4 --size 4096 --duration "$SECS" --give-up 300 \
  --inject-socket-failures "$INJECT" >"$OUT/bench-small" 2>&1 &
SMALL_JOB=$!
nice -n 19 "$NETNS" exec "$NET" 3 "$MSGR" bench --connect "$ADDR" --policy lossless-client \
  --verify --conns 1 --depth 2 --size 1048576 --duration "$SECS" --give-up 300 \
  --inject-socket-failures "$INJECT" --name client.1000 >"$OUT/bench-large" 2>&1 &
LARGE_JOB=$!
sleep 1
BENCH=""   # the small-message client (40 connections)
for p in $(ip netns pids "$NET-h1"); do
  tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- '--size 4096' && BENCH=$p
done

# The faults, in the background: every 3 minutes a cut, then a one-way loss.
(
  while sleep 60; do
    "$NETNS" cut "$NET" 1 2
    sleep 20
    "$NETNS" heal "$NET"
    sleep 90
    "$NETNS" cut "$NET" 2 1 oneway
    sleep 5
    "$NETNS" heal "$NET"
    sleep 5
  done
) >/dev/null 2>&1 &
FAULTS=$!

proc() {  # proc PID: rss_kib fds threads
  local pid=$1
  [[ -d /proc/$pid ]] || { printf -- '-\t-\t-'; return; }
  printf '%s\t%s\t%s' \
    "$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")" \
    "$(ls "/proc/$pid/fd" | wc -l)" \
    "$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")"
}

printf 'minute\tserve_rss_kib\tserve_fds\tserve_threads\tbench_rss_kib\tbench_fds\tbench_threads\tmsgs_per_s\n'
for ((m = 1; m <= MINUTES; m++)); do
  sleep 60
  rate=$(grep -o '[0-9]* msgs/s' "$OUT/serve" | tail -1 | cut -d' ' -f1)
  printf '%s\t%s\t%s\t%s\n' "$m" "$(proc "$SERVE")" "$(proc "$BENCH")" "${rate:--}"
done
kill "$FAULTS" 2>/dev/null || true
"$NETNS" heal "$NET"
wait "$SMALL_JOB" "$LARGE_JOB" 2>/dev/null || true
kill "$SERVE_JOB" 2>/dev/null || true
for b in small large; do
  echo "== bench-$b"
  grep -E '^msgr |^reconnects|^verify' "$OUT/bench-$b" || tail -n 5 "$OUT/bench-$b"
done
echo "outputs in $OUT"
