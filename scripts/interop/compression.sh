#!/usr/bin/env bash
# compression.sh MSGR_BINARY
#
# On-wire compression against Ceph 20's own messenger tools (Tentacle
# chroot), for each of snappy, zlib, zstd and lz4:
#  1. ceph_perf_msgr_client --ms_osd_compress_mode force
#     --ms_osd_compression_algorithm A  ->  msgr serve --name osd.1
#     --compress force --compress-algorithms A: every op answered;
#  2. msgr bench --name osd.1 --compress force --compress-algorithms A  ->
#     ceph_perf_msgr_server started with compression forced: every request
#     answered, the session compressed with A.
# Each run is captured with tcpdump on its port, and `msgr decode --json`
# must find compressed MESSAGE frames from the sending side, every frame of
# the capture decoding cleanly. (Ceph compresses only towards OSD peers,
# hence the OSD name of our client; payloads are 64 KiB of zeros or of our
# bench's pattern, above the 1 KiB minimum.)
# Needs: scripts/ceph/tentacle.sh setup, tcpdump. Starts and stops its own
# processes.
set -euo pipefail
MSGR="$(realpath "${1:?usage: compression.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
PORT=${PORT:-26950}
LOG="$(mktemp -d /tmp/msgr-compression.XXXXXX)"
PIDS=()
TCPDUMP=""
cleanup() {
  [[ -n "$TCPDUMP" ]] && { kill -INT "$TCPDUMP" 2>/dev/null || true; wait "$TCPDUMP" 2>/dev/null || true; }
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
fail() { echo "compression: FAIL: $*" >&2; echo "logs in $LOG" >&2; exit 1; }

capture_start() {  # capture_start FILE PORT
  tcpdump -i lo -s 0 -U -nn -Z root -w "$1" "tcp port $2" >"$1.log" 2>&1 &
  TCPDUMP=$!
  for _ in $(seq 50); do grep -q "listening on" "$1.log" 2>/dev/null && return 0; sleep 0.1; done
  fail "tcpdump did not start: $(cat "$1.log")"
}
capture_stop() { sleep 0.5; kill -INT "$TCPDUMP" 2>/dev/null || true; wait "$TCPDUMP" 2>/dev/null || true; TCPDUMP=""; }

# check_capture FILE ALG DIR: every frame decodes, DIR sent compressed MESSAGEs.
check_capture() {
  "$MSGR" decode --json "$1" >"$1.jsonl" || fail "msgr decode found problems in $1"
  python3 - "$1.jsonl" "$2" "$3" <<'PY' || fail "no compressed frames in $1"
import json, sys
path, alg, direction = sys.argv[1:4]
frames = [json.loads(l) for l in open(path)]
comp = [f for f in frames if f.get("tag") == "MESSAGE" and f.get("compressed") and f["dir"] == direction]
done = [f for f in frames if f.get("tag") == "COMPRESSION_DONE"]
if len(comp) < 10:
    sys.exit(f"{len(comp)} compressed {direction} messages")
print(f"  {len(comp)} compressed {direction} MESSAGE frames, e.g. segments {comp[0]['segments']} -> {comp[0]['decompressed_segments']}")
PY
}

SIZE=65536
OPS=300
for alg in snappy zlib zstd lz4; do
  # 1. Ceph's client compresses towards our OSD-named server.
  port=$((PORT++))
  "$MSGR" serve --bind "v2:127.0.0.1:$port" --name osd.1 --compress force --compress-algorithms "$alg" \
      --duration 600 >"$LOG/serve-$alg.log" 2>&1 &
  sp=$!; PIDS+=("$sp")
  wait_port "$port" || fail "msgr serve did not listen on $port"
  capture_start "$LOG/client-$alg.pcap" "$port"
  if ! timeout 120 "$T" run ceph_perf_msgr_client "127.0.0.1:$port" 1 16 "$OPS" 0 "$SIZE" \
      --ms_osd_compress_mode force --ms_osd_compression_algorithm "$alg" >"$LOG/client-$alg.log" 2>&1; then
    fail "ceph_perf_msgr_client ($alg) -> msgr serve: $(tail -3 "$LOG/client-$alg.log")"
  fi
  capture_stop
  grep -q "Total op $OPS run time" "$LOG/client-$alg.log" || fail "ceph_perf_msgr_client ($alg) did not finish"
  kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
  echo "compression: ceph_perf_msgr_client -> msgr serve, $alg: $OPS ops answered"
  check_capture "$LOG/client-$alg.pcap" "$alg" c2s

  # 2. Our OSD-named client compresses towards Ceph's server.
  port=$((PORT++))
  "$T" run ceph_perf_msgr_server "127.0.0.1:$port" 1 0 \
      --ms_osd_compress_mode force --ms_osd_compression_algorithm "$alg" >"$LOG/cserver-$alg.log" 2>&1 &
  cp=$!; PIDS+=("$cp")
  wait_port "$port" || fail "ceph_perf_msgr_server did not listen on $port"
  capture_start "$LOG/bench-$alg.pcap" "$port"
  out=$(timeout 120 "$MSGR" bench --connect "v2:127.0.0.1:$port/0" --name osd.1 --size "$SIZE" --depth 16 \
        --count "$OPS" --compress force --compress-algorithms "$alg" --json 2>"$LOG/bench-$alg.err") ||
    fail "msgr bench ($alg) -> ceph_perf_msgr_server: $(tail -3 "$LOG/bench-$alg.err")"
  capture_stop
  kill "$cp" 2>/dev/null || true; wait "$cp" 2>/dev/null || true
  python3 - "$out" "$OPS" "$alg" <<'PY' || fail "msgr bench ($alg): $out"
import json, sys
r = json.loads(sys.argv[1]); ops = int(sys.argv[2]); alg = sys.argv[3]
assert r["msgs"] == ops and r["lost"] == 0, r
assert r["compression"] == alg, r
print(f"compression: msgr bench -> ceph_perf_msgr_server, {alg}: {ops} ops answered, session compressed with {alg}")
PY
  check_capture "$LOG/bench-$alg.pcap" "$alg" c2s
done
echo "compression: all runs passed"
