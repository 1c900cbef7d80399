#!/usr/bin/env bash
# runtimes.sh [ROUNDS] [SECONDS]
#
# Benchmark (not a test), issue 38 §2: the existing thread-per-core io_uring
# runtimes against our own loop, on the same workloads. Every server serves
# the raw request/reply pattern (a 12-byte header and the payload, replies
# a bare header) on one thread, for the same client (`msgr bench
# --raw-only`, over epoll):
#   raw          `msgr serve --raw`: tokio over epoll, a read and a write per
#                connection turn (the physical baseline)
#   ours         `msgr serve --raw --transport uring`: our ring loop
#                (msgr_uring::raw: multishot receives into a provided-buffer
#                ring, one io_uring_enter a turn, SINGLE_ISSUER, DEFER_TASKRUN)
#   monoio, compio, tokio-uring, glommio
#                `tools/uring-runtimes` (`uring-raw serve --runtime R`): a task
#                per connection on the runtime's own TCP API, a receive into
#                a 64 KiB buffer of the connection's, one send of the replies
# WORKLOADS as `conns.sh` takes them (default: 1 connection at depth 128,
# 100, 1000 and 10000 at depth 1, 4 KiB; 1 MiB and 4 MiB at depth 16);
# ROUNDS (3) interleaved rounds of SECONDS (12) each, medians of the server's
# CPU per message from its own statistics over the steady seconds. No
# assertions: the numbers go in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${1:-3}
SECS=${2:-12}
cargo build --profile perf -q -p msgr-cli
cargo build --release -q --manifest-path tools/uring-runtimes/Cargo.toml
M=target/perf/msgr
R=tools/uring-runtimes/target/release/uring-raw
configs="raw=$M,--raw ours=$M,--raw,--transport,uring"
for rt in monoio compio tokio-uring glommio; do
  configs+=" $rt=$R,--raw,--runtime,$rt"
done
CONFIGS="$configs" \
  WORKLOADS="${WORKLOADS:-1:128 100:1 1000:1 10000:1 1:16:1048576 1:16:4194304}" \
  scripts/bench/conns.sh "$ROUNDS" "$SECS"
