#!/usr/bin/env bash
# faults.sh MSGR_BINARY
#
# Sessions through injected socket failures, across processes:
#  1. Ceph 20's ceph_perf_msgr_client (lossless client) with
#     --ms_inject_socket_failures 50 against `msgr serve --policy
#     stateful-server`: every op answered, and our server still serving
#     (a second, clean client run completes against it).
#  2. `msgr bench --policy lossless-client --inject-socket-failures 30
#     --verify` against `msgr serve --policy stateful-server
#     --inject-socket-failures 30`: reconnects > 0, and zero lost,
#     duplicated, reordered or corrupted messages.
# Each over msgr2 and msgr1 (PROTOCOLS, default "v2 v1": both sides at
# addresses of that kind) and our transports (TRANSPORTS, default "tcp uring
# ring": epoll, io_uring, and io_uring on ring shards for `msgr serve`).
# Needs: scripts/ceph/tentacle.sh setup. Starts and stops its own processes.
set -euo pipefail
MSGR="$(realpath "${1:?usage: faults.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
PORT=${PORT:-27010}
LOG="$(mktemp -d /tmp/msgr-faults.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
fail() { echo "faults: FAIL: $*" >&2; echo "logs in $LOG" >&2; exit 1; }

read -r -a TRANSPORTS <<< "${TRANSPORTS:-tcp uring ring}"
read -r -a PROTOCOLS <<< "${PROTOCOLS:-v2 v1}"
for p in "${PROTOCOLS[@]}"; do
for tr in "${TRANSPORTS[@]}"; do
what="$p, $tr"
# 1. Ceph's client, failing 1 in 50 socket operations.
port=$((PORT++))
"$MSGR" serve --transport "$tr" --bind "$p:127.0.0.1:$port" --policy stateful-server --duration 600 >"$LOG/serve-$p-$tr.log" 2>&1 &
sp=$!; PIDS+=("$sp")
wait_port "$port" || fail "msgr serve did not listen"
OPS=1000
timeout 300 "$T" run ceph_perf_msgr_client "$p:127.0.0.1:$port" 1 16 "$OPS" 0 4096 \
    --ms_inject_socket_failures 50 >"$LOG/client-$p-$tr.log" 2>&1 ||
  fail "ceph_perf_msgr_client with injected failures: $(tail -3 "$LOG/client-$p-$tr.log")"
grep -q "Total op $OPS run time" "$LOG/client-$p-$tr.log" || fail "ceph_perf_msgr_client did not finish"
injected=$(grep -c "injecting socket failure" "$LOG/client-$p-$tr.log" || true)
(( injected > 0 )) || fail "ceph_perf_msgr_client injected no failure"
timeout 120 "$T" run ceph_perf_msgr_client "$p:127.0.0.1:$port" 1 16 "$OPS" 0 4096 >"$LOG/client2-$p-$tr.log" 2>&1 &&
  grep -q "Total op $OPS run time" "$LOG/client2-$p-$tr.log" || fail "msgr serve did not survive: $(tail -3 "$LOG/client2-$p-$tr.log")"
echo "faults: ceph_perf_msgr_client (1 in 50 socket failures, $injected injected) -> msgr serve ($what): $OPS ops answered; the server then served a clean run"
kill "$sp"; wait "$sp" 2>/dev/null || true

# 2. Both of ours, failing 1 in 30.
port=$((PORT++))
"$MSGR" serve --transport "$tr" --bind "$p:127.0.0.1:$port" --policy stateful-server --inject-socket-failures 30 \
    --duration 600 >"$LOG/serve2-$p-$tr.log" 2>&1 &
sp=$!; PIDS+=("$sp")
wait_port "$port" || fail "msgr serve did not listen"
out=$(timeout 300 "$MSGR" bench --transport "$tr" --connect "$p:127.0.0.1:$port" --policy lossless-client \
      --inject-socket-failures 30 --verify --count 20000 --depth 32 --json 2>"$LOG/bench-$p-$tr.err") ||
  fail "msgr bench: $(tail -3 "$LOG/bench-$p-$tr.err")"
python3 - "$out" "$what" <<'PY' || fail "msgr bench against msgr serve, both injecting: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["msgs"] == 20000 and r["reconnects"] > 0, r
assert (r["lost"], r["duplicated"], r["reordered"], r["corrupted"]) == (0, 0, 0, 0), r
# The client's perf counters: each message queued and received once,
# however many times the sessions replayed it; a fault before each resume.
c = r["counters"]
assert (c["sent"], c["received"]) == (20000, 20000), c
assert c["faults"] >= c["reconnects"] == r["reconnects"] and c["handshakes"] >= c["reconnects"] + 1, c
print(f"faults: msgr bench -> msgr serve ({sys.argv[2]}), both failing 1 in 30 socket operations: {r['msgs']} messages, "
      f"{r['reconnects']} reconnects, lost/duplicated/reordered/corrupted 0")
PY
done
done
echo "faults: all runs passed"
