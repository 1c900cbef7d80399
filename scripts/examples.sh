#!/usr/bin/env bash
# examples.sh MSGR_BINARY
#
# Runs the msgr crate's examples as a user would:
#  - lossless_peers: two peers through injected socket failures, every
#    message once and in order;
#  - osd_server with msgr bench and the osd_client example against it
#    (msgr2 and its msgr1 port);
#  - osd_client against `msgr serve`, over msgr2 and msgr1.
set -euo pipefail
MSGR="$(realpath "${1:?usage: examples.sh MSGR_BINARY}")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release -q -p msgr --examples
EX=target/release/examples
PORT=${PORT:-26950}
LOG="$(mktemp -d /tmp/msgr-examples.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() { echo "examples: FAIL: $*" >&2; echo "logs in $LOG" >&2; exit 1; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

timeout 120 "$EX/lossless_peers" >"$LOG/peers.log" 2>&1 || fail "lossless_peers: $(tail -3 "$LOG/peers.log")"
cat "$LOG/peers.log"

"$EX/osd_server" "127.0.0.1:$PORT" 120 >"$LOG/server.log" 2>&1 &
PIDS+=("$!")
wait_port "$PORT" || fail "osd_server did not listen"
timeout 60 "$EX/osd_client" "v2:127.0.0.1:$PORT/1" 500 >"$LOG/client-v2.log" 2>&1 ||
  fail "osd_client -> osd_server: $(tail -3 "$LOG/client-v2.log")"
timeout 60 "$EX/osd_client" "v1:127.0.0.1:$((PORT + 1))/1" 500 >"$LOG/client-v1.log" 2>&1 ||
  fail "osd_client -> osd_server over msgr1: $(tail -3 "$LOG/client-v1.log")"
out=$(timeout 60 "$MSGR" bench --connect "v2:127.0.0.1:$PORT/1" --count 2000 --json 2>"$LOG/bench.err") ||
  fail "msgr bench -> osd_server: $(tail -3 "$LOG/bench.err")"
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); c=j["counters"]; assert j["msgs"]==2000 and j["lost"]==0 and (c["sent"], c["received"], c["handshakes"])==(2000, 2000, 1), j' "$out" ||
  fail "msgr bench -> osd_server: $out"
cat "$LOG/client-v2.log" "$LOG/client-v1.log"
echo "examples: msgr bench -> osd_server: 2000 ops answered"

port=$((PORT + 10))
"$MSGR" serve --bind "v2:127.0.0.1:$port" --bind "v1:127.0.0.1:$((port + 1))" --duration 120 >"$LOG/serve.log" 2>&1 &
PIDS+=("$!")
wait_port "$port" || fail "msgr serve did not listen"
for addr in "v2:127.0.0.1:$port/0" "v1:127.0.0.1:$((port + 1))/0"; do
  timeout 60 "$EX/osd_client" "$addr" 500 >>"$LOG/client-serve.log" 2>&1 ||
    fail "osd_client -> msgr serve ($addr): $(tail -3 "$LOG/client-serve.log")"
done
cat "$LOG/client-serve.log"
echo "examples: all ran"
