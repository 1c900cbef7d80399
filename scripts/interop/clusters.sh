#!/usr/bin/env bash
# clusters.sh MSGR_BINARY
#
# Interop tests of `msgr mon` and `msgr ping` against real clusters with
# cephx: a fresh Ceph 16 cluster (host packages, AES-128 keys) and a fresh
# Ceph 20 cluster (chroot, aes256k keys, plus client.legacy with an AES-128
# key). STARTS both clusters (mon 3300 / OSD 6800+, mon 3301 / OSD 6900+)
# and STOPS exactly them on exit.
#
# Checks, each a separate process with a timeout:
# - `msgr mon status` in crc and secure mode, offering msgr2.1 and only
#   msgr2.0, on both clusters and with both key types on Ceph 20: the fsid
#   of the cluster, its health, one monitor in quorum, one OSD up and in;
# - `msgr mon monmap` and `msgr mon command` (osd dump as JSON);
# - `msgr ping osd.0` (cephx authorizer with the challenge round) in crc
#   and secure mode on both clusters;
# - over msgr1 (--ms_bind_msgr2=false; the clusters require cephx message
#   signatures): `msgr mon status` on both clusters and key types (MAuth),
#   `msgr ping osd.0 --tell version` (authorizer, challenge, signed
#   messages both ways), and a wrong key failing fast;
# - the msgr crate's cluster_ping example (monitor session, osd.0 from the
#   OSD map, keepalive, `version` by Connection::call) in crc, secure and
#   msgr1 on both clusters;
# - a wrong key fails in under 5 s with "authentication failed" and the
#   monitor's reason; a monitor allowing only secure mode refuses crc, and
#   the error names both sides' modes;
# - with the daemons injecting socket failures (1 in 50), `msgr mon status`
#   and `msgr ping osd.0` still complete.
# Needs: scripts/ceph/install-deps.sh and scripts/ceph/tentacle.sh setup.
set -euo pipefail
MSGR="$(realpath "${1:?usage: clusters.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
P="$HERE/../ceph/pacific-cluster.sh"
T="$HERE/../ceph/tentacle.sh"
# The Ceph 16 cluster lives in a new private directory (its keyring and
# ceph.conf must not be somewhere another user could have made first): removed
# on success, left for inspection on failure.
PDIR="$(mktemp -d /tmp/msgr-interop-pacific.XXXXXX)"
TDIR=/var/tmp/ceph-tentacle/cluster-interop
OUT="$(mktemp -d /tmp/msgr-interop.XXXXXX)"

PACIFIC_UP=0 TENTACLE_UP=0
cleanup() {
  local rc=$?
  if (( PACIFIC_UP && rc == 0 )); then
    "$P" stop "$PDIR" --purge >/dev/null 2>&1 || true
  elif (( PACIFIC_UP )); then
    "$P" stop "$PDIR" >/dev/null 2>&1 || true
    echo "clusters: the Ceph 16 cluster's files are left in $PDIR" >&2
  fi
  rmdir "$PDIR" 2>/dev/null || true   # still empty if it never started
  (( TENTACLE_UP )) && TENTACLE_CLUSTER_DIR=$TDIR "$T" stop-cluster >/dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

log() { printf '[clusters %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fails=0
fail() { log "FAIL: $*"; fails=$((fails + 1)); }

# Both clusters require signed msgr1 messages of every cephx peer.
export CEPH_TEST_EXTRA_CONF=$'[global]\ncephx_require_signatures = true'
log "starting Ceph 16 in $PDIR"
PACIFIC_UP=1
"$P" start "$PDIR" --fresh > "$OUT/pacific.env" 2> "$OUT/pacific.log" || {
  tail -20 "$OUT/pacific.log" >&2; log "Ceph 16 did not start"; exit 1; }
log "starting Ceph 20 in $TDIR"
TENTACLE_UP=1
TENTACLE_LEGACY_AUTH=1 TENTACLE_CLUSTER_DIR=$TDIR "$T" start-cluster --fresh > "$OUT/tentacle.env" 2> "$OUT/tentacle.log" || {
  tail -20 "$OUT/tentacle.log" >&2; log "Ceph 20 did not start"; exit 1; }

envval() { sed -n "s/^export $2=//p" "$1" | tr -d "'" | tail -1; }
PFSID=$(envval "$OUT/pacific.env" CEPH_TEST_FSID)
TFSID=$(envval "$OUT/tentacle.env" CEPH_TEST_FSID)
PCONF=$PDIR/ceph.conf
TCONF=$(envval "$OUT/tentacle.env" CEPH_CONF)
TLEGACY=$(envval "$OUT/tentacle.env" CEPH_TEST_LEGACY_CONF)
[[ -n "$PFSID" && -n "$TFSID" && -f "$TCONF" && -f "$TLEGACY" ]] || { log "cluster environment incomplete"; exit 1; }

# run NAME CMD...: runs with a timeout; output in $OUT/NAME.{out,err}.
run() {
  local name="$1"; shift
  timeout 60 "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
}

# status NAME FSID MODE ARGS...: `msgr mon status` and its summary.
status() {
  local name="$1" fsid="$2" mode="$3"; shift 3
  if ! run "$name" "$MSGR" mon "$@" --mode "$mode" status; then
    fail "$name: msgr mon status failed: $(cat "$OUT/$name.err")"; return
  fi
  local o="$OUT/$name.out"
  grep -q "id:     $fsid" "$o" || fail "$name: fsid $fsid not in: $(cat "$o")"
  grep -q "health: HEALTH_" "$o" || fail "$name: no health in: $(cat "$o")"
  grep -q "mon: 1 daemons, quorum a" "$o" || fail "$name: monitors wrong: $(cat "$o")"
  grep -q "osd: 1 osds: 1 up, 1 in" "$o" || fail "$name: OSDs wrong: $(cat "$o")"
  grep -q "session: msgr2 $mode mode" "$o" || fail "$name: session not $mode: $(cat "$o")"
  log "ok: $name"
}

for mode in crc secure; do
  for rev in rev1 rev0; do
    flag=(); [[ $rev == rev0 ]] && flag=(--rev0)
    status "pacific-$mode-$rev" "$PFSID" "$mode" -c "$PCONF" "${flag[@]}"
    status "tentacle-aes256k-$mode-$rev" "$TFSID" "$mode" -c "$TCONF" "${flag[@]}"
  done
  status "tentacle-legacy-aes-$mode" "$TFSID" "$mode" -c "$TLEGACY" -n client.legacy
done

# msgr1: the monitor session authenticates with MAuth.
status1() {  # status1 NAME FSID ARGS...
  local name="$1" fsid="$2"; shift 2
  if ! run "$name" "$MSGR" mon "$@" --ms_bind_msgr2=false status; then
    fail "$name: msgr mon status over msgr1 failed: $(cat "$OUT/$name.err")"; return
  fi
  local o="$OUT/$name.out"
  grep -q "id:     $fsid" "$o" || fail "$name: fsid $fsid not in: $(cat "$o")"
  grep -q "osd: 1 osds: 1 up, 1 in" "$o" || fail "$name: OSDs wrong: $(cat "$o")"
  grep -q "session: msgr1" "$o" || fail "$name: session not msgr1: $(cat "$o")"
  log "ok: $name"
}
status1 pacific-msgr1 "$PFSID" -c "$PCONF"
status1 tentacle-aes256k-msgr1 "$TFSID" -c "$TCONF"
status1 tentacle-legacy-aes-msgr1 "$TFSID" -c "$TLEGACY" -n client.legacy
# and OSD sessions sign every message: a command both ways.
tell1() {  # tell1 NAME RELEASE ARGS...
  local name="$1" release="$2"; shift 2
  if run "$name" "$MSGR" ping osd.0 --count 2 --ms_bind_msgr2=false --tell '{"prefix": "version"}' "$@"; then
    local o="$OUT/$name.out"
    grep -q "(msgr1): seq=2" "$o" || fail "$name: not msgr1: $(cat "$o")"
    grep -q "reply from osd.0: r=0" "$o" || fail "$name: no reply: $(cat "$o")"
    grep -q "\"release\": \"$release\"" "$o" || fail "$name: not $release: $(cat "$o")"
    log "ok: $name"
  else
    fail "$name: $(cat "$OUT/$name.err")"
  fi
}
tell1 pacific-msgr1-tell-osd pacific -c "$PCONF"
tell1 tentacle-aes256k-msgr1-tell-osd tentacle -c "$TCONF"
tell1 tentacle-legacy-msgr1-tell-osd tentacle -c "$TLEGACY" -n client.legacy

# monmap and an arbitrary command.
if run pacific-monmap "$MSGR" mon -c "$PCONF" monmap --json; then
  python3 - "$OUT/pacific-monmap.out" "$PFSID" <<'PY' || fail "pacific-monmap: $(cat "$OUT/pacific-monmap.out")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["fsid"] == sys.argv[2] and m["min_mon_release_name"] == "pacific", m
assert m["mons"][0]["addrs"] == "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]", m
PY
  log "ok: pacific-monmap"
else
  fail "pacific-monmap: $(cat "$OUT/pacific-monmap.err")"
fi
if run tentacle-osd-dump "$MSGR" mon -c "$TCONF" command '{"prefix": "osd dump", "format": "json"}'; then
  python3 - "$OUT/tentacle-osd-dump.out" "$TFSID" <<'PY' || fail "tentacle-osd-dump: $(head -c 300 "$OUT/tentacle-osd-dump.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["fsid"] == sys.argv[2] and d["osds"][0]["up"] == 1, d
PY
  log "ok: tentacle-osd-dump"
else
  fail "tentacle-osd-dump: $(cat "$OUT/tentacle-osd-dump.err")"
fi

# ping the OSDs through a cephx authorizer.
ping() {
  local name="$1"; shift
  if run "$name" "$MSGR" ping osd.0 --count 3 "$@"; then
    grep -q "3 keepalives" "$OUT/$name.out" || fail "$name: $(cat "$OUT/$name.out")"
    grep -q "keepalive from osd.0" "$OUT/$name.out" || fail "$name: not osd.0: $(cat "$OUT/$name.out")"
    log "ok: $name"
  else
    fail "$name: $(cat "$OUT/$name.err")"
  fi
}
for mode in crc secure; do
  ping "pacific-ping-osd-$mode" -c "$PCONF" --mode "$mode"
  ping "tentacle-ping-osd-$mode" -c "$TCONF" --mode "$mode"
  ping "tentacle-legacy-ping-osd-$mode" -c "$TLEGACY" -n client.legacy --mode "$mode"
done

# The facade crate's cluster_ping example, as a library user runs it:
# ceph.conf and keyring, a monitor session, osd.0 found in the OSD map, a
# keepalive round trip and an MCommand `version` awaited with call().
(cd "$HERE/../.." && cargo build --release -q -p msgr --example cluster_ping)
EXAMPLE="$HERE/../../target/release/examples/cluster_ping"
example() {  # example NAME RELEASE ARGS...
  local name="$1" release="$2"; shift 2
  if run "$name" "$EXAMPLE" "$@" 0; then
    local o="$OUT/$name.out"
    grep -q "keepalive round trip" "$o" || fail "$name: no round trip: $(cat "$o")"
    grep -q "\"release\": \"$release\"" "$o" || fail "$name: not $release: $(cat "$o")"
    log "ok: $name"
  else
    fail "$name: $(cat "$OUT/$name.err")"
  fi
}
for mode in crc secure; do
  example "pacific-example-$mode" pacific -c "$PCONF" --mode "$mode"
  example "tentacle-example-$mode" tentacle -c "$TCONF" --mode "$mode"
done
example pacific-example-msgr1 pacific -c "$PCONF" --ms_bind_msgr2=false
# An OSD the map does not have is an error that names it.
if run pacific-example-no-osd "$EXAMPLE" -c "$PCONF" 7; then
  fail "pacific-example-no-osd: osd.7 was found"
elif grep -q "osd.7 is not in the OSD map" "$OUT/pacific-example-no-osd.err"; then
  log "ok: pacific-example-no-osd"
else
  fail "pacific-example-no-osd: $(cat "$OUT/pacific-example-no-osd.err")"
fi
example tentacle-legacy-example-msgr1 tentacle -c "$TLEGACY" -n client.legacy --ms_bind_msgr2 false

# The monitor client's own live tests: service tickets fetched later by
# MAuth, global-id reclaim with the old ticket on a new session (the
# clusters refuse insecure reclaim), MMonGetVersion, an osdmap
# subscription, a command re-sent across a session drop.
live() {
  local name="$1" conf="$2"; shift 2
  if (cd "$HERE/../.." && MSGR_TEST_CEPH_CONF="$conf" CEPH_ARGS="$*" timeout 300 \
        cargo test --release -q -p msgr-monc --test live -- --include-ignored) > "$OUT/$name.out" 2>&1; then
    log "ok: $name ($(grep -o '[0-9]* passed' "$OUT/$name.out" | tail -1))"
  else
    fail "$name: $(tail -20 "$OUT/$name.out")"
  fi
}
live pacific-monc-live "$PCONF"
live tentacle-monc-live "$TCONF"
live tentacle-legacy-monc-live "$TLEGACY" --name client.legacy
# The same over msgr1: MAuth from the first message, global-id reclaim
# with the old ticket, ticket renewal.
live pacific-monc-live-msgr1 "$PCONF" --ms_bind_msgr2=false
live tentacle-monc-live-msgr1 "$TCONF" --ms_bind_msgr2=false

# A wrong key fails fast and says why.
wrong() {
  local name="$1" key="$2" conf="$3"; shift 3
  printf '[client.admin]\n\tkey = %s\n' "$key" > "$OUT/$name.keyring"
  local t0=$SECONDS
  if run "$name" "$MSGR" mon -c "$conf" -k "$OUT/$name.keyring" "$@" status; then
    fail "$name: a wrong key was accepted"; return
  fi
  (( SECONDS - t0 < 5 )) || fail "$name: took $((SECONDS - t0)) s to fail"
  grep -q "authentication failed" "$OUT/$name.err" || fail "$name: unclear error: $(cat "$OUT/$name.err")"
  grep -q "EACCES: wrong key" "$OUT/$name.err" || fail "$name: the monitor's reason is missing: $(cat "$OUT/$name.err")"
  log "ok: $name ($(cat "$OUT/$name.err"))"
}
wrong pacific-wrong-key "AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==" "$PCONF"
wrong tentacle-wrong-key "AgAaMgJrPliqHiAAD+OswerT5Lxu2apPTRiVq7xwmYCangqeDczrjbSuVvA=" "$TCONF"
wrong pacific-wrong-key-msgr1 "AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==" "$PCONF" --ms_bind_msgr2=false
wrong tentacle-wrong-key-msgr1 "AgAaMgJrPliqHiAAD+OswerT5Lxu2apPTRiVq7xwmYCangqeDczrjbSuVvA=" "$TCONF" --ms_bind_msgr2=false

# Under injected socket failures on the daemons (1 in 50 reads or writes
# fail, Ceph's ms_inject_socket_failures): `msgr mon status` and `msgr
# ping` still complete, through reconnects, hunting and backoff.
# Ceph's own CLI is the one client here that gives up when a daemon it
# talks to fails its sockets (switching injection off again talks to
# daemons still injecting): it gets a few tries.
ceph_tell() {  # ceph_tell CEPH-ARGS...: up to 5 tries
  local try
  for try in 1 2 3 4 5; do
    timeout 30 ceph "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
inject() {  # inject N: on both clusters' mon and OSD
  local t
  for t in mon.a osd.0; do
    ceph_tell -c "$PCONF" tell "$t" config set ms_inject_socket_failures "$1" ||
      fail "could not set ms_inject_socket_failures on Ceph 16 $t"
    ceph_tell -c "$TLEGACY" -n client.legacy tell "$t" config set ms_inject_socket_failures "$1" ||
      fail "could not set ms_inject_socket_failures on Ceph 20 $t"
  done
}
inject 50
for i in 1 2 3; do
  status "pacific-faults-$i" "$PFSID" secure -c "$PCONF"
  status "tentacle-faults-$i" "$TFSID" crc -c "$TCONF"
done
for mode in crc secure; do
  if run "pacific-faults-ping-$mode" "$MSGR" ping osd.0 --count 30 --interval 20 -c "$PCONF" --mode "$mode" &&
      grep -q "30 keepalives" "$OUT/pacific-faults-ping-$mode.out"; then
    log "ok: pacific-faults-ping-$mode ($(grep -c reconnecting "$OUT/pacific-faults-ping-$mode.err" || true) reconnects)"
  else
    fail "pacific-faults-ping-$mode: $(tail -3 "$OUT/pacific-faults-ping-$mode.err")"
  fi
done
inject 0

# A monitor that allows only secure mode refuses our crc, and we say which
# modes each side has.
if ceph_tell -c "$PCONF" config set mon ms_mon_service_mode secure; then
  if run pacific-mode-refused "$MSGR" mon -c "$PCONF" --mode crc status; then
    fail "pacific-mode-refused: crc was accepted"
  elif grep -q "the peer allows connection mode secure, we offered crc" "$OUT/pacific-mode-refused.err"; then
    log "ok: pacific-mode-refused ($(cat "$OUT/pacific-mode-refused.err"))"
  else
    fail "pacific-mode-refused: $(cat "$OUT/pacific-mode-refused.err")"
  fi
  ceph_tell -c "$PCONF" config rm mon ms_mon_service_mode || fail "could not reset ms_mon_service_mode"
else
  fail "could not set ms_mon_service_mode on Ceph 16"
fi

if (( fails )); then
  log "$fails check(s) failed"
  exit 1
fi
log "all cluster checks passed"
