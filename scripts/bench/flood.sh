#!/usr/bin/env bash
# flood.sh [SECONDS] [LABEL=BINARY ...]
#
# The flood of issue 33 against `msgr serve`: two peers send empty MPings
# as fast as they can for SECONDS (20) and never read the replies
# (crates/messenger/tests/bounds.rs `flood_a_server`, an ignored test used
# as the tool), over msgr2 and over msgr1. For each server binary (default:
# this tree's release build), prints the server's peak resident memory
# (VmHWM), how many MPings each peer got written, and a `msgr ping` of the
# server right after. Servers are interleaved. No assertions: a benchmark,
# for BENCHMARKS.md. Traffic stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SECS=${1:-20}
shift 2>/dev/null || true
BUILDS=("$@")
[ ${#BUILDS[@]} -gt 0 ] || BUILDS=("this=target/release/msgr")
cargo build --release -q -p msgr-cli
cargo test --release -q -p msgr-messenger --test bounds --no-run 2>/dev/null
FLOOD=$(cargo test --release -q -p msgr-messenger --test bounds --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="bounds" and m.get("executable"):
        print(m["executable"])')
port=$((20000 + RANDOM % 20000))
for wire in v2 v1; do
  for build in "${BUILDS[@]}"; do
    label=${build%%=*} msgr=${build#*=}
    port=$((port + 1))
    "$msgr" serve --bind "$wire:127.0.0.1:$port" --nonce 0 --duration $((SECS + 30)) >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    peers=$(MSGR_FLOOD="$wire:127.0.0.1:$port/0" MSGR_FLOOD_SECS=$SECS \
      timeout $((SECS + 30)) "$FLOOD" --ignored flood_a_server --nocapture 2>&1 |
      grep '^peer' | sed 's/ MPings written.*//' | tr '\n' ' ')
    ping=$(timeout 10 "$msgr" ping "$wire:127.0.0.1:$port/0" 2>&1 | tail -1)
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
    printf '%s %s: peak %d MiB; %s; ping after: %s\n' "$wire" "$label" $((hwm / 1024)) "$peers" "$ping"
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  done
done
