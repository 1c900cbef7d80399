#!/usr/bin/env bash
# scaling.sh CORES [ROUNDS] [SECONDS]
#
# The multi-core matrix of BENCHMARKS.md for a machine with CORES cores,
# for
#   - one connection, 4 KiB, depth 128;
#   - 64 connections, 4 KiB, depth 8;
#   - 1024 connections, 4 KiB, depth 1.
# Two parts (PARTS, default "inproc procs"):
#   inproc: the in-process `msgr bench` server on 1 shard, on CORES shards,
#     and on one shard inside tokio's multi-threaded runtime of CORES
#     workers; the server's CPU is its threads'.
#   procs: `msgr serve` in a process of its own, pinned to cores 0..S-1 for
#     S shards, and CLIENTS (2) `msgr bench --connect` processes sharing the
#     connections, pinned to the cores after the server's when the machine
#     has them (on a machine of CORES cores or fewer they are not pinned,
#     and share the server's cores: the script says so). The server's CPU is
#     its process's over the clients' run (handshakes included), per
#     message the clients counted. SERVERS, space-separated
#     LABEL=BINARY[,SERVE-ARGS...], compares servers (default: this tree's
#     on 1 shard and on CORES), e.g.
#       SERVERS="old1=/tmp/old/msgr,--shards,1 new1=target/perf/msgr,--shards,1"
# Configurations are interleaved, ROUNDS (5) times, SECONDS (3) each, so
# every ratio compares runs made side by side; it prints each run, then per
# workload the medians of msgs/s and of the server's CPU per message, and
# the ratios of those medians against the first configuration.
# No assertions: a benchmark, for BENCHMARKS.md. Runs unchanged on a bigger
# machine: `scripts/bench/scaling.sh 16`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CORES=${1:?usage: scaling.sh CORES [ROUNDS] [SECONDS]}
ROUNDS=${2:-5}
SECS=${3:-3}
PARTS=${PARTS:-"inproc procs"}
CLIENTS=${CLIENTS:-2}
SERVERS=${SERVERS:-"shards1=target/perf/msgr,--shards,1 shards$CORES=target/perf/msgr,--shards,$CORES"}
cargo build --profile perf -q -p msgr-cli
OUT=$(mktemp)
trap 'rm -f "$OUT" "$OUT".*' EXIT
WORKLOADS=("1:128" "64:8" "1024:1")
MACHINE=$(nproc)

# CPU seconds (user + system) a process has used so far.
cpu_of() {
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

inproc() {
  local r=$1 w=$2 c flag line
  for c in "shards 1" "shards $CORES" "tokio-mt $CORES"; do
    set -- $c
    case $1 in
      shards) flag=(--shards "$2") ;;
      tokio-mt) flag=(--server-tokio-mt "$2") ;;
    esac
    line=$(target/perf/msgr bench --conns "${w%%:*}" --depth "${w##*:}" \
      --duration "$SECS" --json "${flag[@]}")
    python3 -c 'import json,sys; r=json.loads(sys.argv[2]); print(json.dumps({"part": "in-process server", "config": sys.argv[1], "conns": r["conns"], "depth": r["depth"], "msgs_per_sec": r["msgs_per_sec"], "server_cpu_us_per_msg": r["server_cpu_us_per_msg"]}))' \
      "$c" "$line" >> "$OUT"
  done
}

procs() {
  local r=$1 w=$2 config label serve shards cores pin port server i each before after
  local conns=${w%%:*} depth=${w##*:}
  for config in $SERVERS; do
    label=${config%%=*}
    IFS=, read -r -a serve <<< "${config#*=}"
    shards=1
    for i in "${!serve[@]}"; do
      [[ ${serve[$i]} == --shards ]] && shards=${serve[$((i + 1))]}
    done
    cores="0-$((shards - 1))"
    pin=()
    (( MACHINE > shards )) && pin=(taskset -c "$shards-$((MACHINE - 1))")
    port=$((17300 + RANDOM % 2000))
    taskset -c "$cores" "${serve[0]}" serve --bind "v2:127.0.0.1:$port" "${serve[@]:1}" \
      > /dev/null 2>&1 &
    server=$!
    sleep 0.5
    before=$(cpu_of "$server")
    each=$(( (conns + CLIENTS - 1) / CLIENTS ))
    local pids=() n=0 left=$conns
    for i in $(seq "$CLIENTS"); do
      (( left > 0 )) || break
      n=$(( left < each ? left : each ))
      left=$((left - n))
      "${pin[@]}" target/perf/msgr bench --connect "v2:127.0.0.1:$port/0" --conns "$n" \
        --depth "$depth" --duration "$SECS" --json > "$OUT.client$i" &
      pids+=($!)
    done
    wait "${pids[@]}"
    after=$(cpu_of "$server")
    kill "$server"
    wait "$server" 2> /dev/null || true
    python3 - "$label" "$conns" "$depth" "$before" "$after" "$OUT".client* >> "$OUT" <<'PY'
import json, sys
label, conns, depth, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
runs = [json.loads(open(f).read()) for f in sys.argv[6:]]
msgs = sum(r["msgs"] for r in runs)
secs = max(r["seconds"] for r in runs)
print(json.dumps({"part": "server process", "config": label, "conns": conns, "depth": depth,
                  "msgs_per_sec": msgs / secs, "server_cpu_us_per_msg": (after - before) * 1e6 / max(msgs, 1)}))
PY
    rm -f "$OUT".client*
  done
}

if [[ " $PARTS " == *" procs "* ]] && (( MACHINE <= CORES )); then
  echo "note: $MACHINE cores: the clients are not pinned away from a $CORES-shard server" >&2
fi
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do
    for part in $PARTS; do
      "$part" "$r" "$w"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for part in dict.fromkeys(r["part"] for r in runs):
    for key in sorted({(r["conns"], r["depth"]) for r in runs if r["part"] == part}):
        rs = [r for r in runs if r["part"] == part and (r["conns"], r["depth"]) == key]
        print(f"{part}: {key[0]} conn(s), 4 KiB, depth {key[1]}:")
        med = {}
        for c in dict.fromkeys(r["config"] for r in rs):
            cr = [r for r in rs if r["config"] == c]
            rate = st.median(r["msgs_per_sec"] for r in cr)
            cpu = st.median(r["server_cpu_us_per_msg"] for r in cr)
            med[c] = (rate, cpu)
            runs_txt = " ".join(f"{r['msgs_per_sec']:.0f}/{r['server_cpu_us_per_msg']:.2f}" for r in cr)
            print(f"  {c:12} msgs/s {rate:9.0f}  server cpu {cpu:6.2f} us/msg  (runs, msgs/s/us: {runs_txt})")
        first = next(iter(med))
        base = med[first]
        for c, (rate, cpu) in med.items():
            if c != first:
                print(f"  {c:12} vs {first}: msgs/s x{rate / base[0]:.3f}, server cpu/msg x{cpu / base[1]:.3f}")
PY
