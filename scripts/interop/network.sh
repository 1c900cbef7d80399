#!/usr/bin/env bash
# scripts/interop/network.sh pacific|tentacle|all [MSGR]
#
# Our RADOS client and Ceph's own (rados/ceph of the same release) on a
# cluster of hosts in network namespaces (pacific-cluster.sh with
# CEPH_TEST_NETNS, scripts/net/netns.sh): 3 monitors, 4 memstore OSDs and a
# mgr, each on its own host; clients on two hosts of their own (ours on
# CLIENT1, Ceph's on CLIENT2, at the same time, under the same faults). One
# cluster per release, shared by the steps:
#
#  mon    Both benches (`msgr rados bench` / `rados bench` 30 s write -t 16,
#         4 KiB objects, pool "bench", namespaces ours/ceph) while each
#         client's host is cut off (both ways) from the monitor its bench
#         process talks to for MON_CUT (15) s, then the leader is killed -9
#         and started again 8 s later. Monitor commands loop on both client
#         hosts meanwhile (`msgr rados lspools` / `ceph osd pool ls`). Checks:
#         the benches end without errors, `bench seq` reads back every object
#         written; every command answers. Prints: when each bench process
#         left the cut monitor, the slowest command during the cut, and the
#         time from the kill to the first command that answered.
#  thrash For THRASH_SECS (60) s, one OSD at a time: kill -9 + restart, out +
#         in, pool test's pg_num 8 -> 16 -> 8, each followed by a wait for
#         all PGs active+clean (pool test: size 3, min_size 2; a memstore OSD
#         comes back empty after kill -9 and is backfilled from its peers, so
#         every acknowledged write stays on 2 OSDs at least). Meanwhile on
#         CLIENT1 the seeded model workload (crates/rados/tests/live_model.rs,
#         one seed after another) and `msgr rados bench` write, and on
#         CLIENT2 `rados bench`. Checks: every model run passes, benches end
#         without errors and read back everything. Prints our bench's RSS and
#         threads (/proc) near its start and its end, and the thrash done.
#         Our bench here (and in blackhole and oneway) runs on a loop that
#         waits in its own io_uring (`msgr rados --transport ring`); in mon,
#         on epoll.
#  blackhole  Both benches (35 s) while CLIENT1 and CLIENT2 are cut off (both
#         ways) from osd.0's host for BLACKHOLE_CUT (15) s: prints how long
#         each bench stalled and how long after the heal it ran again.
#         Measured only: no timing assertions.
#  oneway  The same, with only osd.0's packets to CLIENT1 and CLIENT2 dropped
#         (the requests arrive and are applied; their replies and TCP's
#         acknowledgements are lost): the objecter resends on a new session
#         once the path works, and the OSD answers the resent writes it
#         already applied. Checks as blackhole's (everything acknowledged is
#         read back).
#
# Every pool gets size 3, min_size 2 (the mgr's too). The OSDs recover at
# memory speed (CEPH_TEST_EXTRA_CONF below: wpq, no recovery, deletion or
# snapshot-trim sleeps, 4 KiB memstore pages). Runs about 6 min a release.
# Knobs: MON_CUT (15) THRASH_SECS (60) BLACKHOLE_CUT (15); NETWORK_STEPS
# ("mon thrash blackhole oneway") to run only some; NETWORK_KEEP=1 leaves the
# clusters running (stop: pacific-cluster.sh stop /tmp/netcluster-pacific,
# tentacle.sh stop-cluster with TENTACLE_CLUSTER_DIR=/var/tmp/ceph-tentacle/netcluster).
# Networks: Ceph 16 "ncp" on 10.71.0.0/24, Ceph 20 "nct" on 10.72.0.0/24 (names
# no other script uses: netns.sh up NET first removes every namespace of NET).
# Needs root. Exits non-zero if a check failed. Outputs under $OUT (printed).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
P="$HERE/../ceph/pacific-cluster.sh"
T="$HERE/../ceph/tentacle.sh"
NETNS_SH="$HERE/../net/netns.sh"
which="${1:-all}"
MSGR="$(readlink -f "${2:-$ROOT/target/release/msgr}")"
MON_CUT="${MON_CUT:-15}" THRASH_SECS="${THRASH_SECS:-60}" BLACKHOLE_CUT="${BLACKHOLE_CUT:-15}"
STEPS="${NETWORK_STEPS:-mon thrash blackhole oneway}"
OUT="$(mktemp -d /tmp/network.XXXXXX)"
fails=0

log() { printf '[network.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fail() { log "FAIL: $*"; fails=$((fails + 1)); }
measured() { log "measured: $*"; echo "$*" >>"$OUT/measured.txt"; }
now() { echo "$EPOCHREALTIME"; }

case $which in
  pacific) RELEASES=(pacific) ;; tentacle) RELEASES=(tentacle) ;; all) RELEASES=(pacific tentacle) ;;
  *) echo "usage: $0 pacific|tentacle|all [MSGR]" >&2; exit 2 ;;
esac
[[ $(id -u) == 0 ]] || { echo "network.sh: needs root (namespaces)" >&2; exit 1; }
[[ -x $MSGR ]] || { echo "network.sh: $MSGR not built (cargo build --release -p msgr-cli)" >&2; exit 1; }
log "outputs in $OUT"

# The model workload's test binary, built once (cargo prints its path).
MODEL_BIN="$(cd "$ROOT" && cargo test --release -p msgr-rados --test live_model --no-run 2>&1 |
  sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)"
[[ -n $MODEL_BIN ]] || { echo "network.sh: could not build the live_model test" >&2; exit 1; }
[[ $MODEL_BIN == /* ]] || MODEL_BIN="$ROOT/$MODEL_BIN"

PDIR=/tmp/netcluster-pacific
TCH="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
TDIR="$TCH/netcluster"
stop_clusters() {
  [[ ${NETWORK_KEEP:-0} == 1 ]] && { log "NETWORK_KEEP=1: clusters left running"; return; }
  local r
  # the clusters are purged: no need to wait for memstore's save on SIGTERM
  export CEPH_TEST_STOP_TIMEOUT=3
  for r in "${STARTED[@]}"; do
    # the daemons' logs, kept when a check failed (the cluster is purged)
    ((fails)) && cp -r "$([[ $r == pacific ]] && echo "$PDIR" || echo "$TDIR")/log" "$OUT/log-$r" 2>/dev/null
    case $r in
      pacific) "$P" stop "$PDIR" --purge >/dev/null 2>>"$OUT/stop.log" || log "pacific cluster did not stop (see $OUT/stop.log)" ;;
      tentacle) TENTACLE_CLUSTER_DIR=$TDIR "$T" stop-cluster --purge >/dev/null 2>>"$OUT/stop.log" ||
        log "tentacle cluster did not stop (see $OUT/stop.log)" ;;
    esac
  done
}
STARTED=()
trap stop_clusters EXIT

# ------------------------------------------------------------------ per release
# use R: this release's cluster (started if need be) into CONF, DIR, NET,
# the host numbers, and the tools.
use() {
  R=$1
  local env="$OUT/cluster-$R.env"
  local -a knobs=(CEPH_TEST_NUM_MONS=3 CEPH_TEST_NUM_OSDS=4 CEPH_TEST_POOL_SIZE=3 CEPH_TEST_MGR=1
    CEPH_TEST_NETNS_CLIENTS=2 CEPH_TEST_FRESH=1
    # Recovery at memory speed, so that the thrash's waits for active+clean
    # take seconds: Ceph 20's default op queue (mclock) throttles recovery
    # behind the benches' ops to a few KiB/s (wpq is Ceph 16's default), and
    # memstore says it is a disk, so recovery would sleep 0.1 s between
    # batches (osd_recovery_sleep_hdd; a degraded PG's
    # osd_recovery_sleep_degraded_hdd is Ceph 20 only: set below) and run 3
    # at a time, and under wpq a client op outranks a recovery op 63 to 3:
    # with the benches and the model writing, a restarted (empty) OSD's
    # recovery crawled at 150 objects/s on 2 cores.
    # Memory: memstore keeps each object in pages of memstore_page_size
    # (64 KiB): the benches' 4 KiB objects would take 16 times their size
    # (4 OSDs reached 5 GiB each); and a deleted pool's PGs are removed
    # without osd_delete_sleep_hdd's 5 s pauses.
    # Pools: the cluster script's default is size 1, which a kill -9 of a
    # memstore OSD would empty for good (the mgr's pool went stale); every
    # pool here gets 3 copies. Memstore's device size is what it reports
    # for fullness, not what it allocates: 4 GiB, so that a long thrash
    # (THRASH_SECS=300 wrote 1.1 GiB, 3 copies) does not fill it.
    CEPH_TEST_MEMSTORE_BYTES=4294967296
    "CEPH_TEST_EXTRA_CONF=[mon]
osd_pool_default_size = 3
osd_pool_default_min_size = 2
[osd]
osd_op_queue = wpq
memstore_page_size = 4096
osd_delete_sleep_hdd = 0
osd_snap_trim_sleep_hdd = 0
osd_recovery_sleep_hdd = 0
osd_recovery_op_priority = 63
osd_recovery_max_single_start = 8
osd_max_backfills = 8
osd_recovery_max_active = 8")
  if [[ ! -s $env ]]; then
    log "$R: starting the cluster (3 mons, 4 OSDs, a mgr, each on its own host)"
    local t0=$SECONDS
    case $R in
      pacific) env "${knobs[@]}" CEPH_TEST_NETNS=ncp CEPH_TEST_NETNS_SUBNET=10.71.0 "$P" start "$PDIR" ;;
      tentacle) env "${knobs[@]/%osd_recovery_max_active = 8/osd_recovery_max_active = 8
osd_recovery_sleep_degraded_hdd = 0}" CEPH_TEST_NETNS=nct CEPH_TEST_NETNS_SUBNET=10.72.0 \
        TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster ;;
    esac >"$env" 2>"$OUT/start-$R.log" || { STARTED+=("$R"); tail -5 "$OUT/start-$R.log" >&2; return 1; }
    STARTED+=("$R")
    log "$R: cluster up in $((SECONDS - t0)) s"
    started_now=1
  fi
  # shellcheck disable=SC1090
  source "$env"
  CONF=$CEPH_CONF DIR=$CEPH_TEST_DIR NET=$CEPH_TEST_NETNS ADMIN=$CEPH_TEST_ADMIN_HOST
  read -r -a MONH <<<"$CEPH_TEST_MON_HOSTS"
  read -r -a OSDH <<<"$CEPH_TEST_OSD_HOSTS"
  read -r CL1 CL2 <<<"$CEPH_TEST_CLIENT_HOSTS"
  case $R in  # Ceph's programs of this release: the host's, or the chroot's
    pacific) CR=() ;;
    tentacle) CR=(env TENTACLE_BIND="$DIR" "$T" run) ;;
  esac
  if [[ ${started_now:-0} == 1 ]]; then
    # The mgr's pool (.mgr, device_health_metrics) is made with the test
    # cluster's default size 1: its PG would die with the first OSD the
    # thrash kills -9 (memstore) and stay stale. Size 3 like pool test.
    local p
    for p in $(ceph_cmd osd pool ls 2>/dev/null); do
      ceph_cmd osd pool set "$p" size 3 >/dev/null 2>&1
      ceph_cmd osd pool set "$p" min_size 2 >/dev/null 2>&1
    done
    wait_clean 60 || true
    started_now=0
  fi
}
inh() { local i=$1; shift; nsenter --net="/run/netns/$NET-h$i" -- "$@"; }
# ceph_on I TOOL ARGS...: Ceph's TOOL (ceph, rados, ceph-osd, ...) of this release on host I
# (nsenter, env, tentacle.sh run all exec: a `ceph_on ... &`'s $! is the tool's pid)
ceph_on() { local i=$1; shift; inh "$i" "${CR[@]}" "$@"; }
ceph_cmd() { ceph_on "$ADMIN" timeout 60 ceph -c "$CONF" "$@"; }
ours() { local i=$1 cmd=$2; shift 2; inh "$i" timeout 120 "$MSGR" "$cmd" -c "$CONF" "$@"; }
# stamp FILE: each line of stdin with the time it came
stamp() { local l; while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$1"; }
mon_host_of() { local id=$1; echo "${MONH[$(($(printf %d "'$id") - 97))]}"; }
mon_ip() { echo "$CEPH_TEST_NETNS_SUBNET.$(mon_host_of "$1")"; }
# mon_of PID HOST: the monitor (a, b, c) process PID on host HOST is connected to
mon_of() {
  local pid=$1 host=$2 peer id
  peer="$(inh "$host" ss -tnpH state established 2>/dev/null | grep "pid=$pid," |
    awk '{print $4}' | grep -E ':(3300|3301|6789|6790)$' | head -1 || true)"
  for id in a b c; do [[ ${peer%:*} == "$(mon_ip $id)" ]] && { echo $id; return; }; done
  echo "-"
}
daemon_start() {  # daemon_start mon.X|osd.N
  local name=$1 type=${1%%.*} id=${1#*.} host
  case $type in
    mon) host=$(mon_host_of "$id") ;;
    osd) host=${OSDH[$id]} ;;
  esac
  ceph_on "$host" "ceph-$type" --conf "$CONF" -i "$id" >>"$OUT/daemons-$R.log" 2>&1
}
kill9() { local pid; pid="$(cat "$DIR/run/$1.pid")"; kill -9 "$pid"; while [[ -e /proc/$pid ]] && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; do sleep 0.1; done; }
# cmd_loop SECONDS OUTFILE CMD...: CMD again and again, a line each: start end rc
cmd_loop() {
  local secs=$1 outf=$2; shift 2
  local end=$((SECONDS + secs)) s rc
  : >"$outf"
  while ((SECONDS < end)); do
    s=$EPOCHREALTIME
    if "$@" >/dev/null 2>&1; then rc=0; else rc=$?; fi
    echo "$s $EPOCHREALTIME $rc" >>"$outf"
    sleep 0.3
  done
}
# bench_ok FILE: a bench's output has no error and its summary
bench_ok() { ! grep -qiE 'error|fail|panick' "$1" && grep -q '^[0-9.]* Total time run' "$1"; }
writes_of() { sed -n 's/.*Total writes made: *\([0-9]*\).*/\1/p' "$1"; }
reads_of() { sed -n 's/.*Total reads made: *\([0-9]*\).*/\1/p' "$1"; }
# readback WHO FILE-OF-WRITE: bench seq of what the write bench left; all of it
readback() {
  local who=$1 wf=$2 rf="${2%.out}-seq.out" w r
  case $who in
    ours) ours "$CL1" rados -p bench -N ours bench 60 seq -t 16 2>&1 | stamp "$rf" || true ;;
    ceph) ceph_on "$CL2" timeout 90 rados -c "$CONF" -p bench -N ceph bench 60 seq -t 16 2>&1 | stamp "$rf" || true ;;
  esac
  w=$(writes_of "$wf") r=$(reads_of "$rf")
  if [[ -n $w && $w == "$r" ]] && bench_ok "$rf"; then
    log "ok: $R: $who: bench seq read back all $w objects written"
  else
    fail "$R: $who: bench seq read ${r:-?} of ${w:-?} objects written (see $rf)"
  fi
}
fresh_bench_pool() {
  ceph_cmd osd pool rm bench bench --yes-i-really-really-mean-it >/dev/null 2>&1 || true
  ceph_cmd osd pool create bench 8 8 replicated >/dev/null 2>&1 &&
    ceph_cmd osd pool set bench size 3 >/dev/null 2>&1 &&
    ceph_cmd osd pool application enable bench rados >/dev/null 2>&1
}
# wait_clean [SECS]: every PG active+clean (the mgr's pg stat), snapshot
# trimming or scrubbing allowed ("33 pgs: 30 active+clean, 3 active+clean+snaptrim; ...")
wait_clean() {
  local start=$SECONDS end=$((SECONDS + ${1:-120})) s
  while ((SECONDS < end)); do
    s="$(ceph_cmd pg stat 2>/dev/null || true)"
    python3 -c '
import re, sys
s = sys.argv[1]
m = re.match(r"(\d+) pgs: ([^;]*);", s)
ok = m and sum(int(n) for n, st in re.findall(r"(\d+) ([a-z_+]+)", m.group(2))
               if st == "active+clean" or st.startswith("active+clean+")) == int(m.group(1))
sys.exit(0 if ok else 1)' "$s" && { log "$R: active+clean after $((SECONDS - start)) s"; return 0; }
    sleep 1
  done
  log "$R: not active+clean after ${1:-120} s: $s"; return 1
}

# ------------------------------------------------------------------ mon
step_mon() {
  local o="$OUT/$R-mon" dur=$((MON_CUT + 15))
  mkdir -p "$o"
  fresh_bench_pool || { fail "$R: mon: could not make pool bench"; return; }
  log "$R: mon: benches for $dur s; cut each client from its monitor for $MON_CUT s, then kill -9 the leader"
  nsenter --net="/run/netns/$NET-h$CL1" -- "$MSGR" rados -c "$CONF" -p bench -N ours bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ours.out") 2>&1 &
  local pid_o=$!
  nsenter --net="/run/netns/$NET-h$CL2" -- "${CR[@]}" rados -c "$CONF" -p bench -N ceph bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ceph.out") 2>&1 &
  local pid_c=$!
  cmd_loop $((dur + 5)) "$o/ours-cmds.txt" ours "$CL1" mon command '{"prefix": "osd pool ls"}' &
  local loop_o=$!
  cmd_loop $((dur + 5)) "$o/ceph-cmds.txt" ceph_on "$CL2" timeout 120 ceph -c "$CONF" --connect-timeout 60 osd pool ls &
  local loop_c=$!
  sleep 4
  local mon_o mon_c t_cut t_heal
  mon_o=$(mon_of $pid_o "$CL1") mon_c=$(mon_of $pid_c "$CL2")
  log "$R: mon: our bench talks to mon.$mon_o, rados bench to mon.$mon_c; cutting"
  t_cut=$(now)
  [[ $mon_o != - ]] && "$NETNS_SH" cut "$NET" "$CL1" "$(mon_host_of "$mon_o")"
  [[ $mon_c != - ]] && "$NETNS_SH" cut "$NET" "$CL2" "$(mon_host_of "$mon_c")"
  # when each process leaves its monitor (polled)
  local left_o="" left_c="" m
  poll_left() {  # note when each bench process talks to another monitor
    if [[ -z $left_o ]]; then m=$(mon_of $pid_o "$CL1"); [[ $m != - && $m != "$mon_o" ]] && left_o="$(now) mon.$m"; fi
    if [[ -z $left_c ]]; then m=$(mon_of $pid_c "$CL2"); [[ $m != - && $m != "$mon_c" ]] && left_c="$(now) mon.$m"; fi
    return 0
  }
  while (($(date +%s) < ${t_cut%.*} + MON_CUT)); do poll_left; sleep 0.25; done
  "$NETNS_SH" heal "$NET"
  t_heal=$(now)
  for m in 1 2 3 4; do poll_left; sleep 0.25; done
  local leader t_kill
  leader="$(ceph_cmd quorum_status -f json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["quorum_leader_name"])')" ||
    { fail "$R: mon: no quorum_status after the heal"; leader=""; }
  if [[ -n $leader ]]; then
    log "$R: mon: healed; killing the leader mon.$leader (-9)"
    t_kill=$(now); kill9 "mon.$leader"
    sleep 8
    daemon_start "mon.$leader" || fail "$R: mon: mon.$leader did not start again"
    t_restart=$(now)
  fi
  local rc_o=0 rc_c=0
  wait $pid_o || rc_o=$?
  wait $pid_c || rc_c=$?
  wait $loop_o $loop_c || true
  sleep 0.5
  ((rc_o == 0)) && bench_ok "$o/ours.out" && log "ok: $R: mon: our bench ended without errors ($(writes_of "$o/ours.out") writes)" ||
    fail "$R: mon: our bench (rc $rc_o): $(grep -iE 'error|fail|panick' "$o/ours.out" | head -3)"
  ((rc_c == 0)) && bench_ok "$o/ceph.out" && log "ok: $R: mon: rados bench ended without errors ($(writes_of "$o/ceph.out") writes)" ||
    fail "$R: mon: rados bench (rc $rc_c): $(grep -iE 'error|fail|panick' "$o/ceph.out" | head -3)"
  readback ours "$o/ours.out"
  readback ceph "$o/ceph.out"
  # the commands: the slowest during the cut; from the kill to the first answer
  local who f
  for who in ours ceph; do
    f="$o/$who-cmds.txt"
    local left; [[ $who == ours ]] && left=$left_o || left=$left_c
    python3 - "$f" "$t_cut" "$t_heal" "${t_kill:-0}" "$who" "$R" "${left:-}" >>"$o/summary.txt" <<'EOF'
import sys
f, cut, heal, kill, who, rel, left = sys.argv[1:8]
cut, heal, kill = float(cut), float(heal), float(kill)
rows = [tuple(map(float, l.split())) for l in open(f) if l.strip()]
bad = [r for r in rows if r[2] != 0]
during = [r[1] - r[0] for r in rows if cut <= r[0] < heal or r[0] < cut < r[1]]
after = [r for r in rows if r[1] > kill and r[2] == 0 and kill > 0]
rec = f"{after[0][1] - kill:.1f} s" if after else "never"
lt = f"{float(left.split()[0]) - cut:.1f} s (to {left.split()[1]})" if left else f"- (kept its session through the {heal - cut:.0f} s cut)"
print(f"{rel} mon {who}: {len(rows)} commands, {len(bad)} failed; slowest during the cut {max(during, default=0):.1f} s; "
      f"bench left its monitor after {lt}; leader kill -9 -> first command answered {rec}")
if bad: print(f"{rel} mon {who}: FAILED commands (start end rc): {bad[:5]}")
EOF
  done
  while read -r line; do measured "$line"; done <"$o/summary.txt"
  grep -q FAILED "$o/summary.txt" && fail "$R: mon: some monitor commands failed (see $o)"
  ceph_cmd osd pool rm bench bench --yes-i-really-really-mean-it >/dev/null 2>&1 || true
}

# ------------------------------------------------------------------ thrash
# A Ceph OSD that dies on its own during the thrash (not by the thrash's
# kill -9) is started again, as systemd's ceph-osd@.service would
# (Restart=on-failure), and the crash is printed. Ceph 16's memstore OSD has
# segfaulted in snapshot trimming (MemStore::OmapIteratorImpl::value under
# SnapMapper's OSDriver::get_next: an omap iterator over the OSD-wide snap
# mapper object, left dangling by another shard's write); left down, its PGs
# without another copy stayed below min_size until the monitors marked it out
# 600 s later, and the model workload's ops waited on them (as librados's
# would). The thrash takes $o/osd.lock around its kill and restart, so the
# watchdog never starts an OSD the thrash is restarting.
osd_watchdog() {  # osd_watchdog DIR: until DIR/running-watchdog is gone
  local o=$1 id pid st sig
  local -A starts=()
  exec 8>"$o/osd.lock"
  while [[ -e $o/running-watchdog ]]; do
    flock 8
    for id in "${!OSDH[@]}"; do
      # (a crashing OSD removes its pid file; the thrash's own restarts are
      # done under the lock, so a missing or dead pid is a death)
      pid="$(cat "$DIR/run/osd.$id.pid" 2>/dev/null || true)"
      st="$(awk '{print $3}' "/proc/${pid:-0}/stat" 2>/dev/null || echo gone)"
      [[ $st == gone || $st == Z ]] || continue
      starts[$id]=$((${starts[$id]:-0} + 1))
      if ((starts[$id] > 3)); then
        ((starts[$id] == 4)) && echo "osd.$id died again after 3 restarts: left down" >>"$o/crashes.txt"
        continue
      fi
      sig="$(grep -A12 'Caught signal\|FAILED ceph_assert' "$DIR/log/osd.$id.log" 2>/dev/null | tail -13 |
        grep -oE 'Caught signal \([^)]*\)|FAILED ceph_assert.*|\((MemStore|SnapMapper|OSDriver|PrimaryLogPG)[^(]*' |
        head -4 | paste -sd ' ' || true)"
      echo "osd.$id died on its own (${sig:-no crash in its log}); started again" >>"$o/crashes.txt"
      daemon_start "osd.$id" || echo "osd.$id did not start again" >>"$o/crashes.txt"
    done
    flock -u 8
    sleep 1
  done
}
proc_stat() { awk '/^VmRSS/ {r=$2} /^Threads/ {t=$2} END {printf "RSS %d KiB, %d threads", r, t}' "/proc/$1/status" 2>/dev/null || echo gone; }
step_thrash() {
  local o="$OUT/$R-thrash" dur=$((THRASH_SECS + 20))
  mkdir -p "$o"
  fresh_bench_pool || { fail "$R: thrash: could not make pool bench"; return; }
  wait_clean 60 || { fail "$R: thrash: not clean before the thrash"; return; }
  log "$R: thrash: $THRASH_SECS s of kill -9/restart, out/in, pg_num changes under the model workload and both benches"
  touch "$o/running" "$o/running-watchdog"
  osd_watchdog "$o" &
  local watchdog=$!
  exec 9>"$o/osd.lock"
  (  # the model workload, one seed after another, while the thrash runs
    n=0
    while [[ -e $o/running ]]; do
      n=$((n + 1)); seed=$RANDOM$RANDOM
      if inh "$CL1" env CEPH_CONF="$CONF" MSGR_TEST_RELEASE="$R" MSGR_TEST_MODEL_SEED="$seed" \
          MSGR_TEST_MODEL_OPS=3000 MSGR_TEST_MODEL_OBJECTS=32 timeout 300 "$MODEL_BIN" --ignored --nocapture \
          >"$o/model-$n.out" 2>&1 && ! grep -q '^not run' "$o/model-$n.out"; then
        echo "ok $seed $(grep -o 'seed [0-9]*: [0-9]* ops[^,]*' "$o/model-$n.out" | head -1)" >>"$o/model.txt"
      else
        echo "FAILED $seed (see $o/model-$n.out)" >>"$o/model.txt"
      fi
    done
  ) &
  local model=$!
  nsenter --net="/run/netns/$NET-h$CL1" -- "$MSGR" rados -c "$CONF" --transport ring -p bench -N ours bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ours.out") 2>&1 &
  local pid_o=$!
  nsenter --net="/run/netns/$NET-h$CL2" -- "${CR[@]}" rados -c "$CONF" -p bench -N ceph bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ceph.out") 2>&1 &
  local pid_c=$!
  sleep 3
  local st0; st0="$(proc_stat $pid_o)"
  local end=$((SECONDS + THRASH_SECS)) k=0 id actions=() st1="-" clean=1 kind
  while ((SECONDS < end)); do
    id=$((RANDOM % ${#OSDH[@]}))
    kind=$((k % 3))
    # A memstore OSD restarts empty: killing another before the cluster
    # recovered could take a PG's last copies. While the benches write into
    # undersized PGs, recovery may not catch up (a long run's later kills
    # have more to recover): then the next action is a gentler one.
    ((kind == 0 && !clean)) && kind=1
    case $kind in
      0) flock 9
         kill9 "osd.$id"
         local t=$SECONDS
         until ceph_cmd osd dump 2>/dev/null | grep -Eq "^osd\.$id down"; do ((SECONDS < t + 40)) || break; sleep 0.5; done
         daemon_start "osd.$id" || fail "$R: thrash: osd.$id did not start again"
         flock -u 9
         actions+=("kill-9+restart osd.$id") ;;
      1) ceph_cmd osd out "$id" >/dev/null 2>&1; sleep 3; ceph_cmd osd in "$id" >/dev/null 2>&1
         actions+=("out+in osd.$id") ;;
      2) local pg; pg=$(( $(ceph_cmd osd pool get test pg_num | awk '{print $2}') == 8 ? 16 : 8 ))
         ceph_cmd osd pool set test pg_num "$pg" >/dev/null 2>&1 || fail "$R: thrash: pg_num $pg refused"
         actions+=("pg_num $pg") ;;
    esac
    k=$((k + 1))
    clean=1; wait_clean 120 || clean=0
    [[ -e /proc/$pid_o ]] && st1="$(proc_stat $pid_o) (after ${#actions[@]} actions)"
  done
  log "$R: thrash: done: ${actions[*]}"
  rm -f "$o/running"
  local rc_o=0 rc_c=0
  wait $pid_o || rc_o=$?
  wait $pid_c || rc_c=$?
  wait $model || true
  rm -f "$o/running-watchdog"; wait $watchdog || true; exec 9>&-
  if [[ -s $o/crashes.txt ]]; then
    while read -r line; do measured "$R thrash: Ceph's $line"; done <"$o/crashes.txt"
  fi
  # With the writes stopped, recovery must finish.
  wait_clean 600 || fail "$R: thrash: not active+clean 600 s after the thrash (${actions[*]})"
  measured "$R thrash: ${#actions[@]} actions in $THRASH_SECS s (${actions[*]}); our bench near its start: $st0, near its end: $st1"
  measured "$R thrash: our bench $(writes_of "$o/ours.out") writes, rados bench $(writes_of "$o/ceph.out") writes; model runs: $(grep -c '^ok' "$o/model.txt" || true) ok, $(grep -c FAILED "$o/model.txt" || true) failed"
  ((rc_o == 0)) && bench_ok "$o/ours.out" || fail "$R: thrash: our bench (rc $rc_o): $(grep -iE 'error|fail|panick' "$o/ours.out" | head -3)"
  ((rc_c == 0)) && bench_ok "$o/ceph.out" || fail "$R: thrash: rados bench (rc $rc_c): $(grep -iE 'error|fail|panick' "$o/ceph.out" | head -3)"
  if grep -q FAILED "$o/model.txt" || ! grep -q '^ok' "$o/model.txt"; then
    fail "$R: thrash: the model workload: $(grep FAILED "$o/model.txt" | head -3)"
    grep -hE 'panicked|differs|model' "$o"/model-*.out | head -10 >&2 || true
  else
    log "ok: $R: thrash: every model run matched ($(grep -c '^ok' "$o/model.txt") seeds: $(awk '{print $2}' "$o/model.txt" | tr '\n' ' '))"
  fi
  readback ours "$o/ours.out"
  readback ceph "$o/ceph.out"
  ceph_cmd osd pool rm bench bench --yes-i-really-really-mean-it >/dev/null 2>&1 || true
}

# ------------------------------------------------------------------ blackhole
step_blackhole() { cut_osd0 blackhole both; }
step_oneway() { cut_osd0 oneway oneway; }

# cut_osd0 NAME MODE: both benches while osd.0's host is cut from the client
# hosts, both ways (MODE both) or only its packets to them (oneway).
cut_osd0() {
  local name=$1 mode=$2
  local o="$OUT/$R-$name" dur=35 osdh=${OSDH[0]} h how="both client hosts cut from osd.0's host"
  [[ $mode == oneway ]] && how="osd.0's packets to both client hosts dropped"
  mkdir -p "$o"
  fresh_bench_pool || { fail "$R: $name: could not make pool bench"; return; }
  wait_clean 60 || true
  log "$R: $name: benches for $dur s; $how for $BLACKHOLE_CUT s"
  nsenter --net="/run/netns/$NET-h$CL1" -- "$MSGR" rados -c "$CONF" --transport ring -p bench -N ours bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ours.out") 2>&1 &
  local pid_o=$!
  nsenter --net="/run/netns/$NET-h$CL2" -- "${CR[@]}" rados -c "$CONF" -p bench -N ceph bench $dur write -t 16 -b 4096 --no-cleanup > >(stamp "$o/ceph.out") 2>&1 &
  local pid_c=$!
  sleep 6
  local t_cut t_heal
  t_cut=$(now)
  for h in "$CL1" "$CL2"; do
    case $mode in
      both) "$NETNS_SH" cut "$NET" "$h" "$osdh" ;;
      oneway) "$NETNS_SH" cut "$NET" "$osdh" "$h" oneway ;;
    esac
  done
  sleep "$BLACKHOLE_CUT"
  "$NETNS_SH" heal "$NET"
  t_heal=$(now)
  local rc_o=0 rc_c=0
  wait $pid_o || rc_o=$?
  wait $pid_c || rc_c=$?
  sleep 0.5
  ((rc_o == 0)) && bench_ok "$o/ours.out" || fail "$R: $name: our bench (rc $rc_o): $(grep -iE 'error|fail|panick' "$o/ours.out" | head -3)"
  ((rc_c == 0)) && bench_ok "$o/ceph.out" || fail "$R: $name: rados bench (rc $rc_c): $(grep -iE 'error|fail|panick' "$o/ceph.out" | head -3)"
  local who
  for who in ours ceph; do
    python3 - "$o/$who.out" "$t_cut" "$t_heal" "$who" "$R" "$BLACKHOLE_CUT" "$name" "$how" <<'EOF' >>"$o/summary.txt"
import sys
f, cut, heal, who, rel, secs, name, how = sys.argv[1:9]
cut, heal = float(cut), float(heal)
# per-second lines: STAMP sec cur-ops started finished ...
rows = []
for l in open(f):
    p = l.split()
    if len(p) >= 5 and p[1].isdigit() and p[4].isdigit():
        rows.append((float(p[0]), int(p[4])))
stall = next((t for (t, n), (t0, n0) in zip(rows[1:], rows) if t > cut and n == n0), None)
resume = next((t for (t, n), (t0, n0) in zip(rows[1:], rows) if t > heal and n > n0), None)
s = f"{stall - cut:.1f} s after the cut" if stall else "never"
r = f"{resume - heal:.1f} s after the heal" if resume else "not within the run"
print(f"{rel} {name} {who}: {how} for {secs} s: completions stopped {s}; ran again {r} (per-second lines, 1 s resolution)")
EOF
  done
  while read -r line; do measured "$line"; done <"$o/summary.txt"
  readback ours "$o/ours.out"
  readback ceph "$o/ceph.out"
  ceph_cmd osd pool rm bench bench --yes-i-really-really-mean-it >/dev/null 2>&1 || true
}

for r in "${RELEASES[@]}"; do
  use "$r" || { fail "$r: the cluster did not start (see $OUT/start-$r.log)"; continue; }
  for s in $STEPS; do "step_$s" || fail "$r: step $s stopped early"; done
  stop_clusters; STARTED=()
done

echo "== measured" >&2; cat "$OUT/measured.txt" >&2 2>/dev/null || true
if ((fails)); then log "$fails check(s) failed (outputs in $OUT)"; exit 1; fi
log "all checks passed (outputs in $OUT)"
