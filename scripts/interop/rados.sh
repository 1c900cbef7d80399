#!/usr/bin/env bash
# rados.sh MSGR_BINARY
#
# The RADOS client against multi-OSD clusters: a Ceph 16 cluster (host
# packages) and a Ceph 20 cluster (chroot), each with 3 memstore OSDs on 2
# CRUSH hosts (osd.0 and osd.2 on host0, osd.1 on host1), cephx. STARTS both
# once (mon 3300 / OSD 6800+, mon 3301 / OSD 6900+), shares them across
# every check below, and STOPS exactly them on exit.
#
# Pools: test (replicated, size 2, 32 PGs, rule by OSD), byhost (size 2, 64
# PGs, a rule choosing hosts then OSDs), odd (size 3, 12 PGs: pg_num not a
# power of two), ec (erasure k=2 m=1, 16 PGs).
#
# Placement: for 1000 object names (plain, in namespaces, with spaces and
# UTF-8) in each pool, `msgr osd map POOL --objects` (computed from the OSD
# map the monitor sends) prints what the monitor answers to `osd map` (asked
# through librados, ceph-osd-map.py: what `ceph osd map` prints), at the same
# epoch: first as the pools are made; then after pg-upmap-items, a pg-upmap,
# a primary affinity and a reweight (and on Ceph 20 a pg-upmap-primary);
# then after an OSD is marked out.
#
# Data: objects of 0 B to 16 MiB written by `msgr rados put` are read back
# byte for byte by `rados get`, and the reverse, in crc and secure mode;
# `msgr rados stat` prints what `rados stat` does; `msgr rados ls` lists
# what `rados ls` does; xattrs and omap set by each are read by the other. Bench: `rados bench seq` reads and verifies what
# `msgr rados bench write` wrote, and `msgr rados bench seq|rand` what
# `rados bench write` wrote. Fault: osd.1 is stopped during `msgr rados
# bench write`; every op completes and `rados bench seq` reads all back.
# Pause: a put and a get wait while the map says pause and complete once it
# is lifted. Full pool: an rm goes through, a put waits for the flag to be
# lifted. Cache tier: reads follow the overlay, writes the cache OSD's
# redirect. Backoffs: OSDs re-peering block and unblock the bench's ops.
# Library: the live_* tests of msgr-rados (each feature against librados,
# both ways) and the msgr crate's rados_put_get example. librados.so.2:
# C programs (librados-c.sh), Python's rados module and the ceph CLI
# (librados-python.sh) on ours and on Ceph's librados, outputs diffed.
# Needs: scripts/ceph/install-deps.sh and scripts/ceph/tentacle.sh setup.
set -euo pipefail
MSGR="$(realpath "${1:?usage: rados.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
P="$HERE/../ceph/pacific-cluster.sh"
T="$HERE/../ceph/tentacle.sh"
# The Ceph 16 cluster lives in a new private directory (its keyring and
# ceph.conf must not be somewhere another user could have made first): removed
# on success, left for inspection on failure.
PDIR="$(mktemp -d /tmp/msgr-rados-pacific.XXXXXX)"
TDIR=/var/tmp/ceph-tentacle/cluster-rados
OUT="$(mktemp -d /tmp/msgr-rados.XXXXXX)"

PACIFIC_UP=0 TENTACLE_UP=0
cleanup() {
  local rc=$?
  if (( PACIFIC_UP && rc == 0 )); then
    "$P" stop "$PDIR" --purge >/dev/null 2>&1 || true
  elif (( PACIFIC_UP )); then
    "$P" stop "$PDIR" >/dev/null 2>&1 || true
    echo "rados: the Ceph 16 cluster's files are left in $PDIR" >&2
  fi
  rmdir "$PDIR" 2>/dev/null || true   # still empty if it never started
  (( TENTACLE_UP )) && TENTACLE_CLUSTER_DIR=$TDIR "$T" stop-cluster >/dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

log() { printf '[rados %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fails=0
fail() { log "FAIL: $*"; fails=$((fails + 1)); }

export CEPH_TEST_NUM_OSDS=3 CEPH_TEST_NUM_HOSTS=2 CEPH_TEST_POOL_SIZE=2 CEPH_TEST_PG_NUM=32
# 2 GiB memstores: with 1 GiB, an OSD filled up (full pools) during the benches
export CEPH_TEST_MEMSTORE_BYTES=$((2 << 30))
# A mgr: pool and cluster usage (MGetPoolStats, MStatfs) come from its
# reports; without one librados and we both read zeros. It makes a pool of
# its own (device_health_metrics on 16, .mgr on 20).
export CEPH_TEST_MGR=1
log "starting Ceph 16 in $PDIR (3 OSDs, 2 hosts)"
PACIFIC_UP=1
"$P" start "$PDIR" --fresh > "$OUT/pacific.env" 2> "$OUT/pacific.log" || {
  tail -20 "$OUT/pacific.log" >&2; log "Ceph 16 did not start"; exit 1; }
log "starting Ceph 20 in $TDIR (3 OSDs, 2 hosts)"
TENTACLE_UP=1
TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster --fresh > "$OUT/tentacle.env" 2> "$OUT/tentacle.log" || {
  tail -20 "$OUT/tentacle.log" >&2; log "Ceph 20 did not start"; exit 1; }

envval() { sed -n "s/^export $2=//p" "$1" | tr -d "'" | tail -1; }
# made now, for the data checks that come first
byhost_pool() {
  ceph "$1" osd crush rule create-replicated byhost default host >/dev/null
  ceph "$1" osd pool create byhost 64 64 replicated byhost >/dev/null 2>&1
  ceph "$1" osd pool set byhost size 2 >/dev/null 2>&1
  ceph "$1" osd pool application enable byhost rados >/dev/null 2>&1 || true
}
PCONF=$PDIR/ceph.conf
TCONF=$(envval "$OUT/tentacle.env" CEPH_CONF)
[[ -f "$TCONF" ]] || { log "Ceph 20 environment incomplete"; exit 1; }


# ceph RELEASE ARGS...: Ceph's own CLI (or PROGRAM with `tool`) of that release.
ceph() {
  local release=$1; shift
  case $release in
    pacific) timeout 60 /usr/bin/ceph -c "$PCONF" "$@" ;;
    tentacle) TENTACLE_BIND="$HERE:ro $TDIR" timeout 60 "$T" run ceph -c "$TCONF" "$@" ;;
  esac
}
# tool_cmd RELEASE 'PROGRAM ARGS': a shell command running Ceph's PROGRAM
# of that release (what MSGR_TEST_RADOS and MSGR_TEST_PYTHON hold).
tool_cmd() {
  case $1 in
    pacific) echo "timeout 120 /usr/bin/$2" ;;
    tentacle) echo "TENTACLE_BIND='$HERE:ro $TDIR' timeout 120 $T run $2" ;;
  esac
}
tool() {  # tool RELEASE PROGRAM ARGS...
  local release=$1; shift
  case $release in
    pacific) timeout 120 "$@" ;;
    tentacle) TENTACLE_BIND="$HERE:ro $TDIR" timeout 120 "$T" run "$@" ;;
  esac
}
conf() { [[ $1 == pacific ]] && echo "$PCONF" || echo "$TCONF"; }

# ------------------------------------------------------------------ pools
make_pools() {
  local r=$1
  ceph "$r" osd set-require-min-compat-client luminous --yes-i-really-mean-it >/dev/null 2>&1 ||
    ceph "$r" osd set-require-min-compat-client luminous >/dev/null
  ceph "$r" osd pool create odd 12 12 replicated >/dev/null 2>&1
  ceph "$r" osd pool set odd size 3 >/dev/null 2>&1
  ceph "$r" osd erasure-code-profile set k2m1 k=2 m=1 crush-failure-domain=osd >/dev/null
  ceph "$r" osd pool create ec 16 16 erasure k2m1 >/dev/null 2>&1
  for p in odd ec; do
    ceph "$r" osd pool application enable "$p" rados >/dev/null 2>&1 || true
  done
  local pools; pools=$(ceph "$r" osd pool ls | grep -vx -e device_health_metrics -e .mgr | sort | paste -sd' ')
  [[ $pools == "byhost ec odd test" ]] || { fail "$r: pools are '$pools'"; return 1; }
}

# The names: plain, in namespaces (a tab before the name), odd characters.
NAMES="$OUT/names.txt"
{
  for i in $(seq 1 880); do echo "obj-$i"; done
  for i in $(seq 1 100); do printf 'ns%s\tobj-%s\n' $((i % 7)) "$i"; done
  for i in $(seq 1 10); do echo "rbd_data.10ab2e5c3f8$i.0000000000000$i"; done
  for i in $(seq 1 5); do echo "obj with space $i"; done
  for i in $(seq 1 5); do echo "ünïcode-名前-$i"; done
} > "$NAMES"
(( $(wc -l < "$NAMES") == 1000 )) || { log "expected 1000 names"; exit 1; }
POOLS=(test byhost odd ec)

# settle RELEASE: waits (about a minute at most) until the OSD map's
# epoch stays the same over two reads 2 s apart: after an OSD goes out,
# peering moves the map for a while (pg_temp), faster on some runs than a
# check of 4000 placements can keep up with.
settle() {
  local r=$1 last='' e i
  for i in $(seq 1 20); do
    e=$(ceph "$r" osd stat -f json 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["epoch"])' 2>/dev/null) || e=''
    [[ -n $e && $e == "$last" ]] && return 0
    last=$e
    sleep 2
  done
}

# placement RELEASE PHASE: every name in every pool, ours against the
# monitor's, at one epoch (retried while the map moves under us).
placement() {
  local r=$1 phase=$2 try p
  local ours="$OUT/$r-$phase.ours" theirs="$OUT/$r-$phase.theirs"
  for try in 1 2 3 4 5; do
    settle "$r"
    : > "$ours"
    for p in "${POOLS[@]}"; do
      timeout 60 "$MSGR" osd map "$p" --objects "$NAMES" -c "$(conf "$r")" >> "$ours" ||
        { fail "$r $phase: msgr osd map $p failed"; return; }
    done
    for p in "${POOLS[@]}"; do
      while IFS= read -r line; do
        case $line in *$'\t'*) printf '%s\t%s\n' "$p" "$line" ;; *) printf '%s\t\t%s\n' "$p" "$line" ;; esac
      done < "$NAMES"
    done | tool "$r" /usr/bin/python3 "$HERE/ceph-osd-map.py" "$(conf "$r")" > "$theirs" ||
      { fail "$r $phase: the monitor's osd map failed"; return; }
    local epochs; epochs=$(cut -d' ' -f2 "$ours" "$theirs" | sort -u | paste -sd' ')
    if [[ $epochs == *' '* ]]; then
      log "$r $phase: the map moved during the check ($epochs), again"; sleep 2; continue
    fi
    local n; n=$(wc -l < "$theirs")
    if (( n != 4000 )); then fail "$r $phase: the monitor answered $n lines"; return; fi
    if cmp -s "$ours" "$theirs"; then
      local temp holes
      temp=$(awk -F'-> up ' '{split($2, a, " acting "); sub(/^\(/, "", a[2]); if (a[1] != "(" a[2]) n++} END {print n+0}' "$ours")
      holes=$(grep -c NONE "$ours" || true)
      log "ok: $r $phase: 4000 placements at $epochs as the monitor's ($temp with acting other than up, $holes with holes)"
    else
      fail "$r $phase: $(diff "$theirs" "$ours" | grep -c '^>') of 4000 differ at $epochs, e.g.:"
      diff "$theirs" "$ours" | head -4 >&2
    fi
    return
  done
  fail "$r $phase: the map kept moving"
}

# pg_up RELEASE PGID: the PG's up set, comma-separated.
pg_up() { ceph "$1" pg map "$2" -f json | tr -d '\n' | sed 's/.*"up":\[\([0-9,]*\)\].*/\1/'; }
pg_acting() { ceph "$1" pg map "$2" -f json | tr -d '\n' | sed 's/.*"acting":\[\([0-9,]*\)\].*/\1/'; }

# other OSD than those of SET (0..2)
other_osd() { local o; for o in 0 1 2; do [[ ",$1," == *",$o,"* ]] || { echo $o; return; }; done; }

remap() {
  local r=$1 pg up to
  # First what moves CRUSH's answers (the monitor drops upmap items whose
  # source OSD is no longer in the PG's raw set).
  ceph "$r" osd primary-affinity osd.0 0.5 >/dev/null 2>&1 || fail "$r: primary-affinity refused"
  ceph "$r" osd reweight 1 0.8 >/dev/null 2>&1 || fail "$r: reweight refused"
  for pg in 1.1 1.5 1.9 1.d 1.11; do
    up=$(pg_up "$r" "$pg"); to=$(other_osd "$up")
    ceph "$r" osd pg-upmap-items "$pg" "${up%%,*}" "$to" >/dev/null 2>&1 ||
      fail "$r: pg-upmap-items $pg ${up%%,*} $to refused"
  done
  up=$(pg_up "$r" 1.2)
  ceph "$r" osd pg-upmap 1.2 "${up##*,}" "${up%%,*}" >/dev/null 2>&1 || fail "$r: pg-upmap 1.2 refused"
  if [[ $r == tentacle ]]; then
    # a PG with a second OSD in its up set, settled (acting as up: the
    # monitor drops a primary upmap to an OSD the up set no longer has, and
    # the upmaps above are still moving some): that OSD becomes its primary
    local upp="" act
    for pg in 1.7 1.3 1.b 1.f 1.13 1.17 1.1b 1.1f; do
      up=$(pg_up "$r" "$pg"); act=$(pg_acting "$r" "$pg")
      [[ $up == *,* && $up == "$act" ]] && { upp=$pg; break; }
    done
    if [[ -z $upp ]]; then
      for pg in 1.7 1.3 1.b 1.f; do up=$(pg_up "$r" "$pg"); [[ $up == *,* ]] && { upp=$pg; break; }; done
    fi
    ceph "$r" osd set-require-min-compat-client reef > "$OUT/compat.err" 2>&1 ||
      fail "$r: set-require-min-compat-client reef: $(cat "$OUT/compat.err")"
    ceph "$r" osd pg-upmap-primary "$upp" "${up##*,}" > "$OUT/upp.err" 2>&1 ||
      fail "$r: pg-upmap-primary $upp ${up##*,} (acting $up) refused: $(cat "$OUT/upp.err")"
  fi
  # the upmaps are in the map the checks read
  local dump; dump=$(ceph "$r" osd dump)
  local items; items=$(grep -c '^pg_upmap_items' <<<"$dump" || true)
  (( items == 5 )) || fail "$r: $items pg_upmap_items in the osd dump, expected 5"
  grep -q '^pg_upmap 1.2 ' <<<"$dump" || fail "$r: no pg_upmap 1.2 in the osd dump"
  if [[ $r == tentacle ]]; then
    grep -q '^pg_upmap_primary ' <<<"$dump" || fail "$r: no pg_upmap_primary in the osd dump"
  fi
}

# Objects both ways between msgr rados and Ceph's rados, byte for byte.
CH=/var/tmp/ceph-tentacle
DATA=$(mktemp -d "$CH/tmp/rados-data.XXXXXX")   # the same files at /tmp/... in the chroot
DATA_IN=/tmp/${DATA##*/}
trap 'cleanup; rm -rf "$DATA"' EXIT
SIZES=(0 1 4095 4096 65536 4194303 4194304 4194305 16777216)
for s in "${SIZES[@]}"; do head -c "$s" /dev/urandom > "$DATA/in-$s"; done
data() {
  local r=$1 mode=$2 pool=$3 s n=0 here=$DATA there=$DATA
  [[ $r == tentacle ]] && there=$DATA_IN
  for s in "${SIZES[@]}"; do
    local obj="data-$mode-$s"
    rm -f "$DATA/out-$s"
    if ! timeout 120 "$MSGR" rados -c "$(conf "$r")" --mode "$mode" -p "$pool" put "$obj" "$here/in-$s" 2>"$OUT/err"; then
      fail "$r $mode $pool: msgr rados put of $s bytes: $(cat "$OUT/err")"; continue
    fi
    if ! tool "$r" rados -c "$(conf "$r")" -p "$pool" get "$obj" "$there/out-$s" 2>"$OUT/err" ||
       ! cmp -s "$DATA/in-$s" "$DATA/out-$s"; then
      fail "$r $mode $pool: rados get of msgr's $s bytes differs: $(cat "$OUT/err")"; continue
    fi
    obj="ceph-$mode-$s"; rm -f "$DATA/out-$s"
    tool "$r" rados -c "$(conf "$r")" -p "$pool" put "$obj" "$there/in-$s" ||
      { fail "$r: rados put of $s bytes"; continue; }
    if ! timeout 120 "$MSGR" rados -c "$(conf "$r")" --mode "$mode" -p "$pool" get "$obj" "$here/out-$s" 2>"$OUT/err" ||
       ! cmp -s "$DATA/in-$s" "$DATA/out-$s"; then
      fail "$r $mode $pool: msgr rados get of rados's $s bytes differs: $(cat "$OUT/err")"; continue
    fi
    local ours theirs
    # stdout only: Ceph 16's rados sometimes logs a monclient race on stderr
    # ("get_auth_request but no auth handler is set up") and still succeeds.
    ours=$("$MSGR" rados -c "$(conf "$r")" --mode "$mode" -p "$pool" stat "$obj" 2>"$OUT/err-ours")
    theirs=$(tool "$r" rados -c "$(conf "$r")" -p "$pool" stat "$obj" 2>"$OUT/err")
    [[ $ours == "$theirs" ]] ||
      fail "$r $mode: stat: ours '$ours' ($(cat "$OUT/err-ours")), rados '$theirs' ($(cat "$OUT/err"))"
    n=$((n + 1))
  done
  log "ok: $r $mode $pool: $n sizes (0 B to 16 MiB) written by each, read back by the other, stat alike"
}

# msgr rados ls against rados ls: the data objects, one namespace and all.
listing() {
  local r=$1
  tool "$r" rados -c "$(conf "$r")" -p test -N ns1 put in-ns1 "$([[ $r == tentacle ]] && echo "$DATA_IN" || echo "$DATA")/in-1" ||
    fail "$r: rados put in ns1"
  local flags
  for flags in "" "--all" "-N ns1"; do
    # shellcheck disable=SC2086
    local ours theirs
    ours=$(timeout 60 "$MSGR" rados -c "$(conf "$r")" -p test $flags ls | sort)
    theirs=$(tool "$r" rados -c "$(conf "$r")" -p test $flags ls | sort)
    if [[ -n $ours && $ours == "$theirs" ]]; then
      log "ok: $r: msgr rados ls $flags lists what rados does ($(wc -l <<<"$ours") objects)"
    else
      fail "$r: ls $flags: ours $(wc -l <<<"$ours") objects, rados's $(wc -l <<<"$theirs")"
    fi
  done
}

# xattrs and omap, each tool reading what the other set.
attrs() {
  local r=$1 c; c=$(conf "$r")
  local m=("$MSGR" rados -c "$c" -p test) o=attr-obj
  rdo() { tool "$r" rados -c "$c" -p test "$@"; }
  rdo create "$o" 2>/dev/null || true
  local ok=1 check
  check() { [[ $2 == "$3" ]] || { fail "$r: $1: ours/msgr '$2', expected '$3'"; ok=0; }; }
  "${m[@]}" setxattr "$o" mine from-msgr || fail "$r: msgr setxattr"
  rdo setxattr "$o" theirs from-rados || fail "$r: rados setxattr"
  check "rados getxattr of msgr's" "$(rdo getxattr "$o" mine)" from-msgr
  check "msgr getxattr of rados's" "$("${m[@]}" getxattr "$o" theirs)" from-rados
  check "listxattr" "$("${m[@]}" listxattr "$o" | sort | paste -sd,)" "$(rdo listxattr "$o" | sort | paste -sd,)"
  "${m[@]}" rmxattr "$o" mine || fail "$r: msgr rmxattr"
  check "rados listxattr after msgr rmxattr" "$(rdo listxattr "$o" | paste -sd,)" theirs
  "${m[@]}" setomapval "$o" k1 v-msgr || fail "$r: msgr setomapval"
  rdo setomapval "$o" k2 v-rados || fail "$r: rados setomapval"
  check "listomapkeys" "$("${m[@]}" listomapkeys "$o" | paste -sd,)" "$(rdo listomapkeys "$o" | paste -sd,)"
  check "msgr listomapvals" "$("${m[@]}" listomapvals "$o" | paste -sd,)" $'k1\tv-msgr,k2\tv-rados'
  rdo getomapval "$o" k1 | grep -q "76 2d 6d 73 67 72" || { fail "$r: rados getomapval of msgr's k1"; ok=0; }
  "${m[@]}" rmomapkey "$o" k2 || fail "$r: msgr rmomapkey"
  check "rados listomapkeys after msgr rmomapkey" "$(rdo listomapkeys "$o" | paste -sd,)" k1
  rdo rm "$o"
  (( ok )) && log "ok: $r: xattrs and omap set, read, listed and removed by each tool, seen by the other"
}

# bench both ways: each tool's seq (and rand) reads and verifies what the
# other's write left (rados bench's names, contents, metadata object). Our
# write runs on a loop that waits in its own io_uring (--transport ring),
# our rand reads move their bytes through io_uring in tokio (--transport
# uring), our seq reads go over epoll.
benches() {
  local r=$1 c; c=$(conf "$r")
  if ! timeout 60 "$MSGR" rados -c "$c" --transport ring -p test bench 3 write -t 16 -b 4096 --no-cleanup > "$OUT/bw.out" 2>&1; then
    fail "$r: msgr rados --transport ring bench write: $(tail -3 "$OUT/bw.out")"; return
  fi
  local n; n=$(sed -n 's/^Total writes made: *//p' "$OUT/bw.out")
  tool "$r" rados -c "$c" -p test bench 30 seq -t 16 > "$OUT/rs.out" 2>&1 ||
    fail "$r: rados bench seq over msgr's objects: $(tail -3 "$OUT/rs.out")"
  local got; got=$(sed -n 's/^Total reads made: *//p' "$OUT/rs.out")
  [[ -n $n && $got == "$n" ]] && ! grep -q "not correct" "$OUT/rs.out" &&
    log "ok: $r: rados bench seq read and verified the $n objects msgr rados bench wrote on an io_uring loop" ||
    fail "$r: msgr wrote $n, rados bench seq read ${got:-none}"
  tool "$r" rados -c "$c" -p test cleanup > /dev/null 2>&1 || fail "$r: rados cleanup"
  tool "$r" rados -c "$c" -p test bench 3 write -t 16 -b 4096 --no-cleanup > "$OUT/rw.out" 2>&1 ||
    fail "$r: rados bench write"
  n=$(sed -n 's/^Total writes made: *//p' "$OUT/rw.out")
  local mode
  for mode in seq rand; do
    local over=tcp; [[ $mode == rand ]] && over=uring
    if timeout 60 "$MSGR" rados -c "$c" --transport "$over" -p test bench 3 "$mode" -t 16 > "$OUT/ms.out" 2>&1; then
      got=$(sed -n 's/^Total reads made: *//p' "$OUT/ms.out")
      log "ok: $r: msgr rados bench $mode ($over) read and verified $got reads of the $n objects rados bench wrote"
    else
      fail "$r: msgr rados bench $mode over rados's objects: $(tail -3 "$OUT/ms.out")"
    fi
  done
  [[ $(sed -n 's/^Total reads made: *//p' "$OUT/ms.out") -gt 0 ]] || fail "$r: msgr rand read nothing"
  # --format json: the same document as rados bench's (keys in order, the
  # per-second datas, every value a string), for write and seq. Writes of
  # 4 KiB: at the default 4 MiB, 2 s of each tool's writes filled an OSD.
  local m
  for m in "write --no-cleanup -b 4096" seq; do
    # shellcheck disable=SC2086
    { timeout 60 "$MSGR" rados -c "$c" -p test bench 2 $m -t 4 -f json > "$OUT/mj.out" 2>/dev/null &&
      tool "$r" rados -c "$c" -p test bench 2 $m -t 4 -f json > "$OUT/rj.out" 2>/dev/null &&
      /usr/bin/python3 - "$OUT/mj.out" "$OUT/rj.out" <<'PY'
import json, sys
def doc(path):
    line = next(l for l in open(path) if l.startswith('{'))
    return json.loads(line)
ours, theirs = doc(sys.argv[1]), doc(sys.argv[2])
def shape(d):
    rows = d.get('datas', [])
    strings = all(isinstance(v, str) for k, v in d.items() if k != 'datas')
    strings = strings and all(isinstance(v, str) for r in rows for v in r.values())
    return list(d), [list(r) for r in rows[:1]], strings, len(rows) > 0
if shape(ours) != shape(theirs):
    sys.exit(f"ours {shape(ours)}\nrados's {shape(theirs)}")
PY
    } && log "ok: $r: msgr rados bench $m -f json has rados bench's keys, datas and string values" ||
      fail "$r: bench $m -f json differs from rados bench's"
  done
  timeout 120 "$MSGR" rados -c "$c" -p test bench 1 write -t 4 -b 4096 > "$OUT/bc.out" 2>&1 &&
    grep -q "^Removed [0-9]* objects" "$OUT/bc.out" || fail "$r: msgr rados bench cleanup: $(tail -2 "$OUT/bc.out")"
  tool "$r" rados -c "$c" -p test cleanup > /dev/null 2>&1 || fail "$r: rados cleanup"
}

# `ceph osd set pause` (PAUSERD and PAUSEWR in the map): a msgr rados put
# and get wait, and complete once `osd unset pause` lifts it.
paused() {
  local r=$1 c; c=$(conf "$r")
  local src; src=$DATA/in-65536
  "$MSGR" rados -c "$c" -p test put paused-src "$src" || { fail "$r: put before the pause"; return; }
  ceph "$r" osd set pause >/dev/null 2>&1 || { fail "$r: osd set pause refused"; return; }
  timeout 60 "$MSGR" rados -c "$c" -p test put paused-w "$src" 2>"$OUT/pw.err" & local w=$!
  rm -f "$DATA/out-paused"
  timeout 60 "$MSGR" rados -c "$c" -p test get paused-src "$DATA/out-paused" 2>"$OUT/pr.err" & local g=$!
  sleep 3
  local held=0
  kill -0 "$w" 2>/dev/null && kill -0 "$g" 2>/dev/null && held=1
  ceph "$r" osd unset pause >/dev/null 2>&1 || fail "$r: osd unset pause refused"
  wait "$w" || fail "$r: the paused put failed: $(cat "$OUT/pw.err")"
  wait "$g" || fail "$r: the paused get failed: $(cat "$OUT/pr.err")"
  rm -f "$DATA/out-$$"
  tool "$r" rados -c "$c" -p test get paused-w "$([[ $r == tentacle ]] && echo "$DATA_IN" || echo "$DATA")/out-$$" 2>/dev/null
  if (( held )) && cmp -s "$src" "$DATA/out-paused" && cmp -s "$src" "$DATA/out-$$"; then
    log "ok: $r: a put and a get waited 3 s while the map said pause, and completed once it was lifted"
  else
    fail "$r: pause: held=$held, get and put $(cmp -s "$src" "$DATA/out-paused" && echo alike || echo differ)/$(cmp -s "$src" "$DATA/out-$$" && echo alike || echo differ)"
  fi
  tool "$r" rados -c "$c" -p test rm paused-src; tool "$r" rados -c "$c" -p test rm paused-w
  rm -f "$DATA/out-$$" "$DATA/out-paused"
}

# A full pool: with the full ratios set near 0 every OSD reports itself
# full and the monitor marks pool test full (no mgr needed). A msgr rados
# rm goes through (sent with FULL_FORCE, as librados sends removes); a put
# waits, and completes once the ratios are back and the flag is lifted.
full() {
  local r=$1 c; c=$(conf "$r")
  local src; src=$DATA/in-65536
  "$MSGR" rados -c "$c" -p test put full-rm "$src" || { fail "$r: put before full"; return; }
  local ratios; ratios=$(ceph "$r" osd dump -f json 2>/dev/null | python3 -c '
import json, sys; d = json.load(sys.stdin)
print(d["nearfull_ratio"], d["backfillfull_ratio"], d["full_ratio"])') || { fail "$r: osd dump"; return; }
  set_ratios() {
    ceph "$r" osd set-nearfull-ratio "$1" >/dev/null 2>&1 &&
      ceph "$r" osd set-backfillfull-ratio "$2" >/dev/null 2>&1 &&
      ceph "$r" osd set-full-ratio "$3" >/dev/null 2>&1
  }
  pool_full() {
    ceph "$r" osd dump -f json 2>/dev/null | python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin)["pools"] if p["pool_name"] == "test"]
sys.exit(0 if p and "full" in p[0]["flags_names"].split(",") else 1)'
  }
  set_ratios 0.0000001 0.0000002 0.0000003 || { fail "$r: full ratios refused"; return; }
  local i flagged=0
  for i in $(seq 60); do pool_full && { flagged=1; break; }; sleep 1; done
  if (( ! flagged )); then
    fail "$r: pool test never marked full"
  else
    timeout 30 "$MSGR" rados -c "$c" -p test rm full-rm 2>"$OUT/fr.err" || fail "$r: rm in a full pool: $(cat "$OUT/fr.err")"
    timeout 90 "$MSGR" rados -c "$c" -p test put full-w "$src" 2>"$OUT/fw.err" & local w=$!
    sleep 3
    local held=0
    kill -0 "$w" 2>/dev/null && held=1
  fi
  # shellcheck disable=SC2086
  set_ratios $ratios || fail "$r: full ratios not restored"
  (( flagged )) || return 0
  wait "$w" || fail "$r: the put into a full pool failed: $(cat "$OUT/fw.err")"
  rm -f "$DATA/out-$$"
  tool "$r" rados -c "$c" -p test get full-w "$([[ $r == tentacle ]] && echo "$DATA_IN" || echo "$DATA")/out-$$" 2>/dev/null
  local gone=0
  tool "$r" rados -c "$c" -p test stat full-rm >/dev/null 2>&1 || gone=1
  if (( held && gone )) && cmp -s "$src" "$DATA/out-$$"; then
    log "ok: $r: in a full pool an rm went through, a put waited 3 s and completed once the flag was lifted"
  else
    fail "$r: full pool: put held=$held, removed=$gone, put $(cmp -s "$src" "$DATA/out-$$" && echo alike || echo differs)"
  fi
  tool "$r" rados -c "$c" -p test rm full-w
  rm -f "$DATA/out-$$"
}

# A cache tier (pool tcache over tbase, mode readonly, overlay set): msgr
# rados follows the overlay (a read of an object only in tbase goes to
# tcache, which promotes it there) and the cache's redirect (a write sent
# to tcache is redirected by its OSD to tbase, where it lands).
tiers() {
  local r=$1 c; c=$(conf "$r")
  local src; src=$DATA/in-65536
  ceph "$r" osd pool create tbase 8 8 >/dev/null 2>&1
  ceph "$r" osd pool create tcache 8 8 >/dev/null 2>&1
  for p in tbase tcache; do ceph "$r" osd pool application enable "$p" rados >/dev/null 2>&1 || true; done
  tool "$r" rados -c "$c" -p tbase put before-tier "$([[ $r == tentacle ]] && echo "$DATA_IN" || echo "$DATA")/in-65536" ||
    { fail "$r: rados put before the tier"; return; }
  { ceph "$r" osd tier add tbase tcache &&
    ceph "$r" osd tier cache-mode tcache readonly --yes-i-really-mean-it &&
    ceph "$r" osd tier set-overlay tbase tcache; } >/dev/null 2>"$OUT/tier.err" ||
    { fail "$r: cache tier refused: $(tail -2 "$OUT/tier.err")"; return; }
  sleep 1
  rm -f "$DATA/out-tier"
  "$MSGR" rados -c "$c" -p tbase get before-tier "$DATA/out-tier" 2>"$OUT/tg.err" && cmp -s "$src" "$DATA/out-tier" ||
    fail "$r: msgr rados get through the tier: $(cat "$OUT/tg.err")"
  tool "$r" rados -c "$c" -p tcache ls | grep -qx before-tier ||
    fail "$r: the read did not go to the cache tier (nothing promoted)"
  "$MSGR" rados -c "$c" -p tbase put through-tier "$src" --debug-ms 1 2>"$OUT/tp.err" ||
    fail "$r: msgr rados put through the tier: $(grep -v INFO "$OUT/tp.err" | tail -2)"
  local redirects; redirects=$(grep -c "request redirected" "$OUT/tp.err" || true)
  if (( redirects > 0 )) && tool "$r" rados -c "$c" -p tbase ls | grep -qx through-tier &&
     ! tool "$r" rados -c "$c" -p tcache ls | grep -qx through-tier; then
    log "ok: $r: cache tier: a read went to the cache (promoted there), a write was redirected by the cache's OSD ($redirects redirect) to the base pool"
  else
    fail "$r: cache tier write: $redirects redirects, base: $(tool "$r" rados -c "$c" -p tbase ls | paste -sd,), cache: $(tool "$r" rados -c "$c" -p tcache ls | paste -sd,)"
  fi
  { ceph "$r" osd tier remove-overlay tbase && ceph "$r" osd tier cache-mode tcache none --yes-i-really-mean-it &&
    ceph "$r" osd tier remove tbase tcache &&
    ceph "$r" osd pool rm tcache tcache --yes-i-really-really-mean-it &&
    ceph "$r" osd pool rm tbase tbase --yes-i-really-really-mean-it; } >/dev/null 2>&1 ||
    fail "$r: removing the cache tier and its pools"
}

# An OSD stops during msgr rados bench write (pool test: size 2, min_size
# 1): every op completes after the map change, and rados bench seq reads
# back (and verifies) every object written.
osd_stops() {
  local r=$1 c dir; c=$(conf "$r")
  dir=$([[ $r == pacific ]] && echo "$PDIR" || echo "$TDIR")
  timeout 120 "$MSGR" rados -c "$c" -p test bench 12 write -t 16 -b 4096 --no-cleanup > "$OUT/fault.out" 2>&1 &
  local bench=$!
  sleep 4
  kill -TERM "$(cat "$dir/run/osd.1.pid")" || fail "$r: could not stop osd.1"
  if ! wait "$bench"; then
    fail "$r: msgr rados bench write with osd.1 stopped: $(tail -3 "$OUT/fault.out")"; return
  fi
  local n max; n=$(sed -n 's/^Total writes made: *//p' "$OUT/fault.out")
  max=$(sed -n 's/^Max latency(s): *//p' "$OUT/fault.out")
  tool "$r" rados -c "$c" -p test bench 60 seq -t 16 > "$OUT/fs.out" 2>&1 ||
    fail "$r: rados bench seq after the fault: $(tail -3 "$OUT/fs.out")"
  local got; got=$(sed -n 's/^Total reads made: *//p' "$OUT/fs.out")
  if [[ -n $n && $got == "$n" ]] && ! grep -q "not correct" "$OUT/fs.out"; then
    log "ok: $r: osd.1 stopped during msgr rados bench write: all $n writes completed (max latency $max s), rados read back and verified all $n"
  else
    fail "$r: after osd.1 stopped: msgr wrote ${n:-?}, rados bench seq read ${got:-none}"
  fi
  tool "$r" rados -c "$c" -p test cleanup > /dev/null 2>&1 || fail "$r: rados cleanup"
  # osd.1 back (the cluster script restarts what is stopped) for what follows
  case $r in
    pacific) "$P" start "$PDIR" > /dev/null 2> "$OUT/restart.log" ;;
    tentacle) TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster > /dev/null 2> "$OUT/restart.log" ;;
  esac || { fail "$r: osd.1 did not come back: $(tail -3 "$OUT/restart.log")"; return; }
}

# MOSDBackoff from live OSDs: with osd_backoff_on_peering, an OSD blocks
# a client's ops on a PG that is peering (rather than queueing them) and
# unblocks them once it is active. osd.0 and then osd.1 are marked down
# during msgr rados bench write (each comes back by itself, its PGs peer):
# the client is seen acknowledging blocks and resending on unblocks (its
# log), every op completes, and rados bench seq verifies every object.
backoffs() {
  local r=$1 c; c=$(conf "$r")
  ceph "$r" config set osd osd_backoff_on_peering true >/dev/null 2>&1 || { fail "$r: config set"; return; }
  RUST_LOG=msgr::rados=info timeout 120 "$MSGR" rados -c "$c" -p test bench 10 write -t 16 -b 4096 --no-cleanup \
    > "$OUT/bo.out" 2> "$OUT/bo.err" &
  local bench=$!
  sleep 3; ceph "$r" osd down 0 >/dev/null 2>&1 || fail "$r: osd down 0"
  sleep 3; ceph "$r" osd down 1 >/dev/null 2>&1 || fail "$r: osd down 1"
  wait "$bench" || { fail "$r: msgr rados bench with backoffs: $(tail -3 "$OUT/bo.out")"; return; }
  local n blocks unblocks max
  n=$(sed -n 's/^Total writes made: *//p' "$OUT/bo.out")
  max=$(sed -n 's/^Max latency(s): *//p' "$OUT/bo.out")
  blocks=$(grep -c "backoff.* op=1 " "$OUT/bo.err" || true)       # CEPH_OSD_BACKOFF_OP_BLOCK
  unblocks=$(grep -c "backoff.* op=3 " "$OUT/bo.err" || true)   # CEPH_OSD_BACKOFF_OP_UNBLOCK
  tool "$r" rados -c "$c" -p test bench 60 seq -t 16 > "$OUT/bs.out" 2>&1 || fail "$r: rados bench seq after backoffs"
  local got; got=$(sed -n 's/^Total reads made: *//p' "$OUT/bs.out")
  if (( blocks > 0 )) && [[ -n $n && $got == "$n" ]] && ! grep -q "not correct" "$OUT/bs.out"; then
    log "ok: $r: $blocks backoff blocks and $unblocks unblocks from OSDs re-peering during msgr rados bench write; all $n writes completed (max latency $max s), rados read back and verified all $n"
  else
    fail "$r: backoffs: $blocks blocks, $unblocks unblocks; msgr wrote ${n:-?}, rados bench seq read ${got:-none}"
  fi
  tool "$r" rados -c "$c" -p test cleanup > /dev/null 2>&1 || fail "$r: rados cleanup"
  ceph "$r" config rm osd osd_backoff_on_peering >/dev/null 2>&1 || true
  sleep 2
}

# The command the live tests run to restart an OSD of this script's own
# cluster (its id appended; MSGR_TEST_OSD_RESTART, for live_watch_restart):
# stop it, wait for it to exit, start what is stopped again.
restart_osd_cmd() {
  local r=$1 dir start
  dir=$([[ $r == pacific ]] && echo "$PDIR" || echo "$TDIR")
  case $r in
    pacific) start="\"$P\" start \"$PDIR\"" ;;
    tentacle) start="TENTACLE_CLUSTER_DIR=\"$TDIR\" \"$T\" start-cluster" ;;
  esac
  printf '%s' "bash -c 'pid=\$(cat \"$dir/run/osd.\$1.pid\"); kill -TERM \$pid && while kill -0 \$pid 2>/dev/null; do sleep 0.2; done; sleep 2; $start > /dev/null 2>&1' restart-osd"
}

# live RELEASE: the RADOS client's live tests (crates/rados/tests/live_*.rs:
# each librados feature checked against `rados` and Python's rados module,
# both ways) on that release's cluster; see tests/support/live.rs.
live() {
  local r=$1 c; c=$(conf "$r")
  local rados py
  rados=$(tool_cmd "$r" "rados -c $c"); py=$(tool_cmd "$r" python3)
  if (cd "$HERE/../.." && CEPH_CONF=$c MSGR_TEST_RADOS=$rados MSGR_TEST_PYTHON=$py \
      MSGR_TEST_MSGR=$MSGR MSGR_TEST_RELEASE=$r MSGR_TEST_OSD_RESTART=$(restart_osd_cmd "$r") \
      cargo test --release -p msgr-rados --test 'live_*' -- --ignored --test-threads=1) > "$OUT/live-$r.out" 2>&1; then
    log "ok: $r: $(grep -c '^test .* ok$' "$OUT/live-$r.out") live tests of the RADOS client against librados"
  else
    fail "$r: live tests of the RADOS client:"; grep -E '^test .*FAILED|panicked|^---- ' "$OUT/live-$r.out" | head -40 >&2
  fi
}

# librados_c RELEASE: our librados.so.2 (crates/librados) against Ceph's
# librados on that release's cluster: a C program built against Ceph's
# librados.h, run on both libraries, prints the same; exported symbols and
# versions as Ceph's (scripts/interop/librados-c.sh).
librados_c() {
  local r=$1 c rados; c=$(conf "$r")
  rados=$(tool_cmd "$r" "rados -c $c")
  if CEPH_CONF=$c MSGR_TEST_RELEASE=$r MSGR_TEST_RADOS=$rados "$HERE/librados-c.sh" \
      > "$OUT/librados-c-$r.out" 2>&1; then
    log "ok: $r: our librados.so.2 against Ceph's: $(grep -E '(same output \(|^[0-9]+ functions)' "$OUT/librados-c-$r.out" | tr '\n' ' ')"
  else
    fail "$r: our librados.so.2 against Ceph's:"; tail -30 "$OUT/librados-c-$r.out" >&2
  fi
}

# librados_python RELEASE: Ceph's Python rados module and ceph CLI on our
# librados.so.2 against Ceph's librados on that release's cluster, with
# aio writes under an OSD restart (scripts/interop/librados-python.sh).
librados_python() {
  local r=$1 c; c=$(conf "$r")
  if CEPH_CONF=$c MSGR_TEST_RELEASE=$r MSGR_TEST_OSD_RESTART=$(restart_osd_cmd "$r") \
      "$HERE/librados-python.sh" > "$OUT/librados-python-$r.out" 2>&1; then
    log "ok: $r: Python's rados module and the ceph CLI on our librados.so.2: $(grep -E '^(same results|[0-9]+ of [0-9]+ imported|ceph CLI:|ceph -s on)' "$OUT/librados-python-$r.out" | tr '\n' ' ')"
  else
    fail "$r: Python's rados module on our librados.so.2:"; tail -30 "$OUT/librados-python-$r.out" >&2
  fi
}

# The model workload (tests/live_model.rs): 100000 operations with
# self-managed snapshots (rollbacks, reads at snapshots) while osd.1 is
# stopped and started again (memstore: it comes back with what it had and
# recovers the rest from its peers): every read matches the model, every
# acknowledged write is there (on memstore's page sets: see
# pacific-cluster.sh). The seed is printed; MSGR_TEST_MODEL_SEED replays a
# run.
model_restart() {
  local r=$1 c dir seed=$RANDOM; c=$(conf "$r")
  dir=$([[ $r == pacific ]] && echo "$PDIR" || echo "$TDIR")
  (cd "$HERE/../.." && CEPH_CONF=$c MSGR_TEST_RELEASE=$r MSGR_TEST_MODEL_SEED=$seed \
      MSGR_TEST_MODEL_OPS=100000 MSGR_TEST_MODEL_OBJECTS=32 \
      cargo test --release -p msgr-rados --test live_model -- --ignored --nocapture) \
    > "$OUT/model-$r.out" 2>&1 &
  local work=$!
  sleep 4
  kill -TERM "$(cat "$dir/run/osd.1.pid")" || fail "$r: could not stop osd.1"
  sleep 6
  case $r in
    pacific) "$P" start "$PDIR" > /dev/null 2> "$OUT/restart.log" ;;
    tentacle) TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster > /dev/null 2> "$OUT/restart.log" ;;
  esac || fail "$r: osd.1 did not come back: $(tail -3 "$OUT/restart.log")"
  if wait "$work"; then
    log "ok: $r: $(grep -o 'seed [0-9]*: [0-9]* ops.*' "$OUT/model-$r.out") (osd.1 stopped and started under it)"
  else
    fail "$r: the model workload (seed $seed) with osd.1 stopped and started:"
    grep -E 'panicked|seed|model' "$OUT/model-$r.out" | head -20 >&2
  fi
}

# The EC pool against librados (tests/live_ec.rs's first test, once
# make_pools made pool ec: k=2 m=1; the live step runs the others): whole
# writes, aligned appends and reads both ways, and what the pool refuses
# failing with the OSD's error.
ec_live() {
  local r=$1 c rados; c=$(conf "$r")
  rados=$(tool_cmd "$r" "rados -c $c")
  if (cd "$HERE/../.." && CEPH_CONF=$c MSGR_TEST_RADOS=$rados MSGR_TEST_RELEASE=$r \
      cargo test --release -p msgr-rados --test live_ec -- --ignored --nocapture \
      an_ec_pool_agrees_with_rados) > "$OUT/ec-$r.out" 2>&1 \
      && ! grep -q '^not run' "$OUT/ec-$r.out"; then
    log "ok: $r: the EC pool (k=2 m=1) against rados: writes, aligned appends, reads; an unaligned append, a partial overwrite and omap refused (EOPNOTSUPP)"
  else
    fail "$r: the EC pool:"; grep -E 'panicked|not run|assert' -A3 "$OUT/ec-$r.out" | head -20 >&2
  fi
}

# The facade crate's rados_put_get example, as a library user runs it: a
# 5 MB file through an object handle and back, stat, listing, remove.
(cd "$HERE/../.." && cargo build --release -q -p msgr --example rados_put_get)
example() {
  local r=$1 c; c=$(conf "$r")
  head -c 5000000 /dev/urandom > "$OUT/example.in"
  if "$HERE/../../target/release/examples/rados_put_get" -c "$c" test "example-$r-$$" \
      "$OUT/example.in" > "$OUT/example-$r.out" 2>&1 \
      && grep -q '^listed: true$' "$OUT/example-$r.out" && grep -q '^removed$' "$OUT/example-$r.out"; then
    log "ok: $r: the rados_put_get example (RadosConfig, ObjectHandle, ObjectList)"
  else
    fail "$r: the rados_put_get example:"; cat "$OUT/example-$r.out" >&2
  fi
}

for r in pacific tentacle; do
  byhost_pool "$r"
  live "$r"
  librados_c "$r"
  librados_python "$r"
  example "$r"
  model_restart "$r"
  for mode in crc secure; do data "$r" "$mode" test; done
  data "$r" crc byhost
  listing "$r"
  attrs "$r"
  benches "$r"
  paused "$r"
  full "$r"
  tiers "$r"
  osd_stops "$r"
  backoffs "$r"
  make_pools "$r" || continue
  ec_live "$r"
  placement "$r" pools
  remap "$r"
  placement "$r" upmaps
  ceph "$r" osd out 2 >/dev/null 2>&1 || fail "$r: osd out 2 refused"
  sleep 1
  placement "$r" osd-out
done

if (( fails )); then log "$fails check(s) failed"; exit 1; fi
log "all checks passed"
