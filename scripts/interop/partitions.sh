#!/usr/bin/env bash
# partitions.sh [MSGR]: lossless sessions across two hosts (network
# namespaces, scripts/net/netns.sh) through partitions, links taken down
# and one-way loss, msgr2 and msgr1.
#
# Host 1 runs `msgr bench --verify` (a lossless client, 32 writes in
# flight), host 2 `msgr serve` (a stateful server) printing what it
# received every 0.1 s. Each case breaks the path 3 s into the run, heals
# it, and checks:
#   - nothing lost, duplicated, reordered or corrupted (--verify);
#   - traffic flows again within 2 s of the heal, however long the break
#     (printed as "resumed after X s"; the limit is checked, the number is
#     a measurement of this run);
# and prints how many times the client reconnected.
#
# Cases (BREAK for SECONDS): cut both ways (nftables drops), the client's
# link down at the switch, one way only (client->server, server->client),
# and a cut shorter than the stall check (TCP's own retransmission carries
# it). PARTITIONS_LONG (25) sets the long breaks' length.
#
# Needs root (namespaces), nftables and iproute2; MSGR defaults to
# target/release/msgr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MSGR="$(readlink -f "${1:-$ROOT/target/release/msgr}")"
NETNS="$ROOT/scripts/net/netns.sh"
NET=part
LONG="${PARTITIONS_LONG:-25}"
OUT="$(mktemp -d /tmp/partitions.XXXXXX)"
FAILED=0

log() { printf '[partitions %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
cleanup() { "$NETNS" down "$NET" --kill 2>/dev/null || true; }
trap cleanup EXIT

[[ -x $MSGR ]] || { echo "partitions.sh: $MSGR not built" >&2; exit 1; }
"$NETNS" up "$NET" 2 10.78.0
SERVER_IP="$("$NETNS" addr "$NET" 2)"

now() { date +%s.%N; }

# run_case NAME PROTO BREAK SECONDS: one bench through one break.
run_case() {
  local name=$1 proto=$2 brk=$3 secs=$4
  local port=6800 dur
  [[ $proto == v1 ]] && port=6801
  dur=$(python3 -c "print(int(3 + $secs + 8))")
  local addr="$proto:$SERVER_IP:$port"
  local sout="$OUT/$name.serve" cout="$OUT/$name.bench"
  "$NETNS" exec "$NET" 2 "$MSGR" serve --bind "$addr" --policy stateful-server \
    --shards 1 --stats 0.1 --duration $((dur + 2)) >"$sout" 2>&1 &
  local spid=$!
  local t_serve; t_serve=$(now)
  sleep 0.5
  "$NETNS" exec "$NET" 1 "$MSGR" bench --connect "$addr" --policy lossless-client \
    --verify --depth 32 --size 4096 --duration "$dur" --give-up 120 >"$cout" 2>&1 &
  local cpid=$!
  sleep 3
  case $brk in
  cut) "$NETNS" cut "$NET" 1 2 ;;
  link) "$NETNS" link "$NET" 1 down ;;
  c2s) "$NETNS" cut "$NET" 1 2 oneway ;;
  s2c) "$NETNS" cut "$NET" 2 1 oneway ;;
  esac
  sleep "$secs"
  "$NETNS" heal "$NET"
  local t_heal; t_heal=$(now)
  local rc=0
  wait "$cpid" || rc=$?
  wait "$spid" || true
  # The first 0.1 s interval after the heal in which the server received
  # anything.
  local resumed
  resumed=$(python3 - "$sout" "$(python3 -c "print($t_heal - $t_serve)")" <<'EOF'
import re, sys
heal = float(sys.argv[2])
for line in open(sys.argv[1]):
    m = re.match(r"\[serve\s+([0-9.]+)s\]\s+([0-9]+) msgs/s", line)
    if m and float(m.group(1)) > heal and int(m.group(2)) > 0:
        print(f"{float(m.group(1)) - heal:.1f}")
        break
else:
    print("never")
EOF
  )
  local verify reconnects
  verify=$(grep -o 'verify: .*' "$cout" || echo "verify: missing")
  reconnects=$(grep -o 'reconnects [0-9]*' "$cout" || echo "reconnects ?")
  local ok=1
  [[ $rc == 0 ]] || ok=0
  [[ $verify == "verify: lost 0 duplicated 0 reordered 0 corrupted 0" ]] || ok=0
  if [[ $resumed == never ]] || python3 -c "import sys; sys.exit(0 if $resumed > 2.0 else 1)"; then
    ok=0
  fi
  if [[ $ok == 1 ]]; then
    log "ok: $name ($proto, $brk for ${secs} s): resumed after $resumed s; $verify; $reconnects"
  else
    log "FAILED: $name ($proto, $brk for ${secs} s): bench exit $rc, resumed after $resumed s; $verify; $reconnects"
    tail -n 5 "$cout" "$sout" >&2
    FAILED=1
  fi
}

# Every break on msgr2; msgr1, whose sessions resume by the same code,
# through the long cut and the link down (PARTITIONS_ALL=1: every break
# on both).
run_case cut-long-v2 v2 cut "$LONG"
run_case one-way-c2s-v2 v2 c2s 8
run_case one-way-s2c-v2 v2 s2c 8
run_case cut-short-v2 v2 cut 1.5
run_case cut-long-v1 v1 cut "$LONG"
run_case link-down-v1 v1 link 10
if [[ ${PARTITIONS_ALL:-0} == 1 ]]; then
  run_case link-down-v2 v2 link 10
  run_case one-way-c2s-v1 v1 c2s 8
  run_case one-way-s2c-v1 v1 s2c 8
  run_case cut-short-v1 v1 cut 1.5
fi

if [[ $FAILED != 0 ]]; then
  echo "partitions.sh: FAILED (outputs in $OUT)" >&2
  exit 1
fi
rm -rf "$OUT"
log "all cases passed"
