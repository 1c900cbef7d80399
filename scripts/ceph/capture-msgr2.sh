#!/usr/bin/env bash
# capture-msgr2.sh [OUTDIR] [NAME...]
#
# Record real Ceph msgr2 and msgr1 traffic on lo as pcap files (our test
# vectors; see testdata/captures/README.md for what each file holds). OUTDIR
# defaults to testdata/captures of this repository. NAMEs (default: all) are:
#   pacific-ceph-s  pacific-ceph-s-secure  pacific-rados-put-get
#   tentacle-ceph-s  tentacle-rados-put-get  tentacle-perf-msgr
#   pacific-client-tentacle-ceph-s
#   pacific-v1-ceph-s  pacific-v1-rados-put-get
#   tentacle-v1-ceph-s  tentacle-v1-rados-put-get  tentacle-v1-perf-msgr
# The v1 names are msgr1 end to end: Ceph's clients pick msgr2 whenever a
# daemon offers it, so they run against clusters that speak msgr1 only
# (CEPH_TEST_MSGR1_ONLY=1): Pacific in /tmp/ceph-capture-pacific-v1.XXXXXX (mon
# v1 6791, OSD from 6820), Tentacle in /var/tmp/ceph-tentacle/cluster-capture-v1
# (mon v1 6792, OSD from 6920).
#
# STARTS: a fresh Pacific cluster (pacific-cluster.sh, in /tmp/ceph-capture-pacific.XXXXXX:
# mon 3300/6789, OSD 6800-6807) and/or a fresh Tentacle cluster (tentacle.sh,
# in /var/tmp/ceph-tentacle/cluster-capture: mon 3301/6790, OSD 6900-6907,
# TENTACLE_LEGACY_AUTH=1), one tcpdump per capture, and ceph_perf_msgr_server
# (127.0.0.1:26900) for tentacle-perf-msgr. STOPS all of them again (by pid;
# the clusters by pid file) when it ends, also on error or Ctrl-C.
# Needs: install-deps.sh and tentacle.sh setup done, the ports above free.
#
# tcpdump: `tcpdump -i lo -s 0 -U -nn -Z root -w FILE FILTER`; FILTER names the
# server ports, and excludes the ephemeral ports of connections that already
# existed when the capture started (the OSD's own session to the mon), so a
# file holds only the client command's connections.
# The client key of each capture and the cluster keys are written to
# OUTDIR/NAME.keys (throw-away clusters; needed to check cephx fields).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
OUT="$ROOT/testdata/captures"
if [[ $# -gt 0 && -d "$1" ]]; then OUT="$(cd "$1" && pwd -P)"; shift; fi
ALL=(pacific-ceph-s pacific-ceph-s-secure pacific-rados-put-get
     tentacle-ceph-s tentacle-rados-put-get tentacle-perf-msgr pacific-client-tentacle-ceph-s
     pacific-v1-ceph-s pacific-v1-rados-put-get
     tentacle-v1-ceph-s tentacle-v1-rados-put-get tentacle-v1-perf-msgr)
NAMES=("$@"); [[ ${#NAMES[@]} -gt 0 ]] || NAMES=("${ALL[@]}")
# The Pacific clusters live in new private directories (their keyrings and
# ceph.conf must not be somewhere another user could have made first): removed
# on success, left for inspection on failure.
PDIR="$(mktemp -d /tmp/ceph-capture-pacific.XXXXXX)"
TCH=/var/tmp/ceph-tentacle
TDIR=$TCH/cluster-capture
PDIR1="$(mktemp -d /tmp/ceph-capture-pacific-v1.XXXXXX)"
TDIR1=$TCH/cluster-capture-v1
DATA="$OUT/rados-object-10KiB.bin"   # the object written by the rados captures
T="$HERE/tentacle.sh"
P="$HERE/pacific-cluster.sh"

log() { printf '[capture %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[capture] ERROR: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ cleanup
TCPDUMP_PID="" PERF_PID="" PACIFIC_UP=0 TENTACLE_UP=0 PACIFIC1_UP=0 TENTACLE1_UP=0
cleanup() {
  local rc=$? purge=()
  (( rc == 0 )) && purge=(--purge)
  [[ -n "$TCPDUMP_PID" ]] && { kill -INT "$TCPDUMP_PID" 2>/dev/null; wait "$TCPDUMP_PID" 2>/dev/null; }
  [[ -n "$PERF_PID" ]] && { kill "$PERF_PID" 2>/dev/null; wait "$PERF_PID" 2>/dev/null; }
  (( PACIFIC_UP )) && "$P" stop "$PDIR" "${purge[@]}" || true
  (( TENTACLE_UP )) && TENTACLE_CLUSTER_DIR=$TDIR "$T" stop-cluster || true
  (( PACIFIC1_UP )) && "$P" stop "$PDIR1" "${purge[@]}" || true
  (( TENTACLE1_UP )) && TENTACLE_CLUSTER_DIR=$TDIR1 "$T" stop-cluster || true
  rmdir "$PDIR" "$PDIR1" 2>/dev/null || true   # the ones never used are still empty
  for d in "$PDIR" "$PDIR1"; do [[ -d "$d" ]] && log "cluster files left in $d"; done
  return 0
}
trap cleanup EXIT

# ------------------------------------------------------------------ tcpdump
# existing_ports PORT...: local ephemeral ports of established connections to
# any of PORT (daemon-to-daemon sessions to leave out of the capture).
existing_ports() {
  local -A srv=() seen=()
  local p l r lp rp
  for p in "$@"; do srv[$p]=1; done
  while read -r l r; do
    lp="${l##*:}" rp="${r##*:}"
    if [[ -n "${srv[$rp]:-}" && -z "${srv[$lp]:-}" && -z "${seen[$lp]:-}" ]]; then
      seen[$lp]=1; echo "$lp"
    fi
  done < <(ss -Htn state established | awk '{print $3, $4}')
}

# make_filter PORT...: "tcp and (port A or port B ...) [and not (port X ...)]"
make_filter() {
  local f="" p ex=""
  for p in "$@"; do f+="${f:+ or }port $p"; done
  for p in $(existing_ports "$@"); do ex+="${ex:+ or }port $p"; done
  printf 'tcp and (%s)%s' "$f" "${ex:+ and not ($ex)}"
}

start_capture() {  # start_capture FILE FILTER
  local file="$1" filter="$2" i
  rm -f "$file"
  log "\$ tcpdump -i lo -s 0 -U -nn -Z root -w $(basename "$file") '$filter'"
  tcpdump -i lo -s 0 -U -nn -Z root -w "$file" "$filter" 2>"$file.tcpdump.log" &
  TCPDUMP_PID=$!
  for ((i = 0; i < 100; i++)); do grep -q 'listening on' "$file.tcpdump.log" && return 0; sleep 0.1; done
  die "tcpdump did not start; see $file.tcpdump.log"
}

stop_capture() {  # stop_capture FILE [BANNER]: BANNER (default 'ceph v2') must be in it
  local file="$1" banner="${2:-ceph v2}"
  sleep 1   # let the last FIN/ACKs arrive
  kill -INT "$TCPDUMP_PID"; wait "$TCPDUMP_PID" || true; TCPDUMP_PID=""
  log "$(basename "$file"): $(tail -n 3 "$file.tcpdump.log" | tr '\n' ' ')"
  rm -f "$file.tcpdump.log"
  local banners   # (not grep -q: with pipefail, tcpdump's SIGPIPE would fail the pipeline)
  banners="$(tcpdump -r "$file" -A 2>/dev/null | grep -ac "$banner" || true)"
  (( banners > 0 )) || die "$file: no '$banner' banner in the capture"
  log "$(basename "$file"): $(stat -c %s "$file") bytes, $(tcpdump -r "$file" -nn 2>/dev/null | wc -l) packets, $banners '$banner' banners"
}

run() { log "\$ $*"; "$@"; }   # run a client command, logging it verbatim

write_keys() {  # write_keys NAME CLIENT_ENTITY CLIENT_KEYRING CLUSTER_DIR
  {
    echo "# throw-away test cluster keys at capture time ($(date -u +%FT%TZ)); cluster $4"
    echo "# client entity used: $2"
    cat "$3"
    cat "$4/mon/ceph-a/keyring" "$4/osd/ceph-0/keyring"
  } >"$OUT/$1.keys"
}

# ------------------------------------------------------------------ clusters
pacific_up() {
  (( PACIFIC_UP )) && return 0
  log "starting a fresh Pacific cluster in $PDIR"
  "$P" start "$PDIR" --fresh >&2 || die "Pacific cluster did not start"
  PACIFIC_UP=1
}

tentacle_up() {
  (( TENTACLE_UP )) && return 0
  log "starting a fresh Tentacle cluster in $TDIR"
  TENTACLE_LEGACY_AUTH=1 TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster --fresh >&2 ||
    die "Tentacle cluster did not start"
  TENTACLE_UP=1
}

pacific1_up() {
  (( PACIFIC1_UP )) && return 0
  log "starting a fresh msgr1-only Pacific cluster in $PDIR1"
  CEPH_TEST_MSGR1_ONLY=1 CEPH_TEST_MON_V1_PORT=6791 CEPH_TEST_MON_V2_PORT=3311 \
    CEPH_TEST_EXTRA_CONF=$'[osd]\nms_bind_port_min = 6820' \
    "$P" start "$PDIR1" --fresh >&2 || die "msgr1-only Pacific cluster did not start"
  PACIFIC1_UP=1
}

tentacle1_up() {
  (( TENTACLE1_UP )) && return 0
  log "starting a fresh msgr1-only Tentacle cluster in $TDIR1"
  CEPH_TEST_MSGR1_ONLY=1 CEPH_TEST_MON_V1_PORT=6792 CEPH_TEST_MON_V2_PORT=3312 \
    TENTACLE_OSD_PORT_MIN=6920 TENTACLE_LEGACY_AUTH=1 TENTACLE_CLUSTER_DIR=$TDIR1 \
    "$T" start-cluster --fresh >&2 || die "msgr1-only Tentacle cluster did not start"
  TENTACLE1_UP=1
}

[[ -s "$DATA" ]] || head -c 10240 /dev/urandom >"$DATA"
log "date: $(date -u +%FT%TZ); host: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
log "host ceph: $(ceph --version)"
log "chroot ceph: $("$T" run ceph --version 2>/dev/null || echo 'n/a (tentacle.sh setup not done)')"
log "tcpdump: $(tcpdump --version 2>&1 | head -n1), $(tcpdump --version 2>&1 | sed -n 2p)"
log "object data: $DATA ($(stat -c %s "$DATA") bytes, sha256 $(sha256sum "$DATA" | cut -c1-64))"
PC=(--conf "$PDIR/ceph.conf")
# Bound into the chroot, so they must exist before a cluster is started
# there (a fresh machine has neither).
mkdir -p "$TDIR" "$TDIR1"
export TENTACLE_BIND="$TDIR $TDIR1 $OUT"   # cluster dir and OUTDIR visible inside the chroot
TC=(--conf "$TDIR/ceph.conf")
PC1=(--conf "$PDIR1/ceph.conf")
TC1=(--conf "$TDIR1/ceph.conf")
OSD1P=(6820 6821 6822 6823 6824 6825 6826 6827)
OSD1T=(6920 6921 6922 6923 6924 6925 6926 6927)

for name in "${NAMES[@]}"; do
  f="$OUT/$name.pcap"
  case "$name" in
    pacific-ceph-s)
      pacific_up
      start_capture "$f" "$(make_filter 3300)"
      run ceph "${PC[@]}" --ms_mon_client_mode crc -s
      stop_capture "$f"; write_keys "$name" client.admin "$PDIR/keyring" "$PDIR" ;;
    pacific-ceph-s-secure)
      pacific_up
      start_capture "$f" "$(make_filter 3300)"
      run ceph "${PC[@]}" -s
      stop_capture "$f"; write_keys "$name" client.admin "$PDIR/keyring" "$PDIR" ;;
    pacific-rados-put-get)
      pacific_up
      start_capture "$f" "$(make_filter 3300 6800 6801 6802 6803 6804 6805 6806 6807)"
      run rados "${PC[@]}" --ms_mon_client_mode crc --ms_client_mode crc -p test put obj "$DATA"
      run rados "${PC[@]}" --ms_mon_client_mode crc --ms_client_mode crc -p test get obj "$PDIR/tmp/obj.out"
      stop_capture "$f"; write_keys "$name" client.admin "$PDIR/keyring" "$PDIR"
      cmp "$DATA" "$PDIR/tmp/obj.out" || die "rados get returned different data" ;;
    tentacle-ceph-s)
      tentacle_up
      start_capture "$f" "$(make_filter 3301)"
      run "$T" run ceph "${TC[@]}" --ms_mon_client_mode crc -s
      stop_capture "$f"; write_keys "$name" client.admin "$TDIR/keyring" "$TDIR" ;;
    tentacle-rados-put-get)
      tentacle_up
      start_capture "$f" "$(make_filter 3301 6900 6901 6902 6903 6904 6905 6906 6907)"
      run "$T" run rados "${TC[@]}" --ms_mon_client_mode crc --ms_client_mode crc -p test put obj "$DATA"
      run "$T" run rados "${TC[@]}" --ms_mon_client_mode crc --ms_client_mode crc -p test get obj "$TDIR/tmp/obj.out"
      stop_capture "$f"; write_keys "$name" client.admin "$TDIR/keyring" "$TDIR"
      cmp "$DATA" "$TDIR/tmp/obj.out" || die "rados get returned different data" ;;
    pacific-client-tentacle-ceph-s)
      # host Pacific CLI -> Tentacle mon, as client.legacy (AES-128 key)
      tentacle_up
      start_capture "$f" "$(make_filter 3301)"
      run ceph -c "$TDIR/legacy.conf" -n client.legacy --ms_mon_client_mode crc -s
      stop_capture "$f"; write_keys "$name" client.legacy "$TDIR/legacy.keyring" "$TDIR" ;;
    tentacle-perf-msgr)
      (exec 3<>/dev/tcp/127.0.0.1/26900) 2>/dev/null && die "127.0.0.1:26900 is in use"
      start_capture "$f" "$(make_filter 26900)"
      log "\$ $T run ceph_perf_msgr_server 127.0.0.1:26900 1 0 &"
      "$T" run ceph_perf_msgr_server 127.0.0.1:26900 1 0 >"$f.server.log" 2>&1 &
      PERF_PID=$!
      for _ in $(seq 100); do ss -Hltn 'sport = :26900' | grep -q . && break; sleep 0.1; done
      run "$T" run ceph_perf_msgr_client 127.0.0.1:26900 1 2 20 0 4096
      stop_capture "$f"
      kill "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=""
      rm -f "$f.server.log" ;;
    pacific-v1-ceph-s)
      pacific1_up
      start_capture "$f" "$(make_filter 6791)"
      run ceph "${PC1[@]}" -s
      stop_capture "$f" 'ceph v027'; write_keys "$name" client.admin "$PDIR1/keyring" "$PDIR1" ;;
    pacific-v1-rados-put-get)
      pacific1_up
      start_capture "$f" "$(make_filter 6791 "${OSD1P[@]}")"
      run rados "${PC1[@]}" -p test put obj "$DATA"
      run rados "${PC1[@]}" -p test get obj "$PDIR1/tmp/obj.out"
      stop_capture "$f" 'ceph v027'; write_keys "$name" client.admin "$PDIR1/keyring" "$PDIR1"
      cmp "$DATA" "$PDIR1/tmp/obj.out" || die "rados get returned different data" ;;
    tentacle-v1-ceph-s)
      tentacle1_up
      start_capture "$f" "$(make_filter 6792)"
      run "$T" run ceph "${TC1[@]}" -s
      stop_capture "$f" 'ceph v027'; write_keys "$name" client.admin "$TDIR1/keyring" "$TDIR1" ;;
    tentacle-v1-rados-put-get)
      tentacle1_up
      start_capture "$f" "$(make_filter 6792 "${OSD1T[@]}")"
      run "$T" run rados "${TC1[@]}" -p test put obj "$DATA"
      run "$T" run rados "${TC1[@]}" -p test get obj "$TDIR1/tmp/obj.out"
      stop_capture "$f" 'ceph v027'; write_keys "$name" client.admin "$TDIR1/keyring" "$TDIR1"
      cmp "$DATA" "$TDIR1/tmp/obj.out" || die "rados get returned different data" ;;
    tentacle-v1-perf-msgr)
      (exec 3<>/dev/tcp/127.0.0.1/26901) 2>/dev/null && die "127.0.0.1:26901 is in use"
      start_capture "$f" "$(make_filter 26901)"
      log "\$ $T run ceph_perf_msgr_server v1:127.0.0.1:26901 1 0 &"
      "$T" run ceph_perf_msgr_server v1:127.0.0.1:26901 1 0 >"$f.server.log" 2>&1 &
      PERF_PID=$!
      for _ in $(seq 100); do ss -Hltn 'sport = :26901' | grep -q . && break; sleep 0.1; done
      run "$T" run ceph_perf_msgr_client v1:127.0.0.1:26901 1 2 20 0 4096
      stop_capture "$f" 'ceph v027'
      kill "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=""
      rm -f "$f.server.log" ;;
    *) die "unknown capture name $name (known: ${ALL[*]})" ;;
  esac
done
log "done: ${NAMES[*]}"
