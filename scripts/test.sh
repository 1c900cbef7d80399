#!/usr/bin/env bash
# scripts/test.sh: installs what the tests need and runs every test.
#
# On a fresh Debian 12 machine, as root: installs Ceph 16 (host packages),
# tcpdump and debootstrap, builds the Ceph 20 chroot (/var/tmp/ceph-tentacle,
# once, about 90 s), then runs the whole Rust test suite (unit, pair,
# capture, corpus replay) and the interop tests against live Ceph 16 and 20
# daemons, which start and stop their own clusters.
# MSGR_SKIP_INSTALL=1 skips the installation steps (when already done).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step says when it began and how long the run has taken so far
# (CI has an hour for all of it).
step() { printf '\n== %s [%s, %d s in]\n' "$*" "$(date +%T)" "$SECONDS" >&2; }

if [[ "${MSGR_SKIP_INSTALL:-0}" != 1 ]]; then
  step "install: Ceph 16, tcpdump, debootstrap"
  scripts/ceph/install-deps.sh
  step "install: Ceph 20 chroot"
  scripts/ceph/tentacle.sh setup
fi

step "build"
cargo build --release --workspace --bins

step "lints: clippy on the libraries and binaries, warnings denied ([workspace.lints])"
cargo clippy --release --workspace --lib --bins -- -D warnings

step "no file imports a file that imports it back (import cycles)"
python3 scripts/check-cycles.py crates

step "unit, pair, capture and corpus tests"
cargo test --release --workspace

step "the msgr crate's examples, run as a user would (against each other and msgr serve)"
scripts/examples.sh target/release/msgr

step "crimson's failover matrix on 1 and 4 shards (the run above: as many as cores)"
for n in 1 4; do
  MSGR_TEST_SHARDS=$n cargo test --release -p msgr-messenger \
    --test crimson --test crimson_races --test crimson_lifecycles --test crimson_v1 --test intercept
done

step "interop: msgr decode on live Ceph 16 and 20 traffic"
scripts/interop/live-decode.sh target/release/msgr

step "interop: our CRUSH mapper against crushtool 16 and 20 (every algorithm, firstn/indep, tunables, classes, weight sets)"
scripts/interop/crush.sh target/release/msgr

step "interop: the RADOS client on 3-OSD, 2-host Ceph 16 and 20 clusters (placement against the monitors' osd map)"
scripts/interop/rados.sh target/release/msgr

step "interop: msgr mon and msgr ping against Ceph 16 and 20 clusters with cephx"
scripts/interop/clusters.sh target/release/msgr

step "interop: Ceph 20's ceph_perf_msgr_client/server against msgr serve/bench"
scripts/interop/perf-msgr.sh target/release/msgr

step "interop: msgr serve's admin socket read by Ceph 16's and 20's ceph --admin-daemon"
scripts/interop/admin-socket.sh target/release/msgr

step "interop: on-wire compression (snappy, zlib, zstd, lz4) with Ceph 20's perf tools"
scripts/interop/compression.sh target/release/msgr

step "interop: sessions through injected socket failures (Ceph's perf client, bench against serve)"
scripts/interop/faults.sh target/release/msgr

step "networks: lossless sessions between hosts in namespaces through partitions, links down and one-way loss (msgr2, msgr1)"
scripts/interop/partitions.sh target/release/msgr

step "interop: monitor partitions and elections, OSD thrashing, a blackholed OSD on 3-mon Ceph 16 and 20 clusters of hosts in network namespaces (ours beside rados/ceph)"
scripts/interop/network.sh all target/release/msgr

step "all tests passed"
