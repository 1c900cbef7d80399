#!/usr/bin/env bash
# perf-msgr.sh MSGR_BINARY
#
# Interop of our messenger with Ceph 20's own messenger tools (AsyncMessenger,
# from the Tentacle chroot, auth none, crc mode), MOSDOp writes of 4 KiB and
# 1 MiB, with our side offering msgr2.1, msgr2.0 only, and msgr1 (both sides
# at v1: addresses), over each of our transports (TRANSPORTS, default
# "tcp uring ring": epoll, io_uring, and io_uring on ring shards for `msgr
# serve`):
#  1. ceph_perf_msgr_client -> `msgr serve`: every op answered (the client
#     prints its total), and our server counted every op.
#  2. `msgr bench --connect` -> ceph_perf_msgr_server: every request answered
#     (lost 0), replies matched by tid.
# Needs: scripts/ceph/tentacle.sh setup. Starts and stops its own processes.
set -euo pipefail
MSGR="$(realpath "${1:?usage: perf-msgr.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
PORT=${PORT:-26910}
LOG="$(mktemp -d /tmp/msgr-perf-msgr.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
fail() { echo "perf-msgr: FAIL: $*" >&2; echo "logs in $LOG" >&2; exit 1; }

read -r -a TRANSPORTS <<< "${TRANSPORTS:-tcp uring ring}"
for tr in "${TRANSPORTS[@]}"; do
 for rev in rev1 rev0 v1; do
  flag="--transport $tr"; [[ $rev == rev0 ]] && flag+=" --rev0"
  proto=v2; [[ $rev == v1 ]] && proto=v1
  for size in 4096 1048576; do
    what="$rev, $size B, $tr"
    tag="$rev-$size-$tr"
    ops=$(( size > 65536 ? 300 : 3000 ))
    # 1. Ceph's client against our server.
    port=$((PORT++))
    "$MSGR" serve --bind "$proto:127.0.0.1:$port" --name osd.0 $flag --duration 600 >"$LOG/serve-$tag.log" 2>&1 &
    sp=$!; PIDS+=("$sp")
    wait_port "$port" || fail "msgr serve did not listen on $port"
    if ! timeout 120 "$T" run ceph_perf_msgr_client "$proto:127.0.0.1:$port" 1 16 "$ops" 0 "$size" \
        >"$LOG/client-$tag.log" 2>&1; then
      fail "ceph_perf_msgr_client -> msgr serve ($what): $(tail -3 "$LOG/client-$tag.log")"
    fi
    grep -q "Total op $ops run time" "$LOG/client-$tag.log" ||
      fail "ceph_perf_msgr_client did not finish ($what)"
    kill -INT "$sp" 2>/dev/null; kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
    us=$(sed -n 's/.*run time \([0-9]*\)us.*/\1/p' "$LOG/client-$tag.log")
    echo "perf-msgr: ceph_perf_msgr_client -> msgr serve   ($what): $ops ops in ${us} us"

    # 2. Our client against Ceph's server.
    port=$((PORT++))
    "$T" run ceph_perf_msgr_server "$proto:127.0.0.1:$port" 1 0 >"$LOG/cserver-$tag.log" 2>&1 &
    cp=$!; PIDS+=("$cp")
    wait_port "$port" || fail "ceph_perf_msgr_server did not listen on $port"
    out=$(timeout 120 "$MSGR" bench --connect "$proto:127.0.0.1:$port/0" --size "$size" --depth 16 \
          --count "$ops" --policy lossless-client $flag --json 2>"$LOG/bench-$tag.err") ||
      fail "msgr bench -> ceph_perf_msgr_server ($what): $(tail -3 "$LOG/bench-$tag.err")"
    echo "$out" >"$LOG/bench-$tag.json"
    python3 - "$out" "$ops" "$what" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); ops = int(sys.argv[2])
if r["msgs"] != ops or r["lost"] != 0:
    sys.exit(f"perf-msgr: FAIL: msgr bench -> ceph_perf_msgr_server: {r['msgs']} of {ops} answered, lost {r['lost']}")
print(f"perf-msgr: msgr bench -> ceph_perf_msgr_server ({sys.argv[3]}): "
      f"{r['msgs']} ops, {r['msgs_per_sec']:.0f} msgs/s, lost 0")
PY
    kill "$cp" 2>/dev/null || true; wait "$cp" 2>/dev/null || true
  done
 done
done
echo "perf-msgr: all interop runs passed"
