#!/usr/bin/env bash
# pacific-cluster.sh start [DIR] [--fresh]
# pacific-cluster.sh stop  [DIR] [--purge]
#
# A throw-away single-host Ceph cluster on 127.0.0.1 for msgr2 tests, without
# systemd, from the host's Debian 12 packages (Ceph 16.2.x "Pacific"; install
# them with install-deps.sh). tentacle.sh runs this same script inside its
# Ceph 20 chroot (with other ports), so nothing here is Pacific-specific.
#
# start STARTS two daemons (and nothing else):
#   mon.a  msgr2 on v2:127.0.0.1:3300, msgr1 on v1:127.0.0.1:6789
#   osd.0  on the in-memory "memstore" objectstore (no disks); it binds the
#          first free ports from 6800: public v2 6800 / v1 6801, cluster v2 6802 / v1 6803
# with cephx required everywhere, and a replicated pool "test" of size 1.
# With CEPH_TEST_NUM_OSDS=N it starts osd.0 .. osd.N-1 instead (same settings;
# each takes the next 8 free ports: osd.1 usually 6808-6815), and
# CEPH_TEST_POOL_SIZE sets the size of pool "test" (e.g. 2 for replication, so
# a client write makes OSD->OSD MOSDRepOp messages on the cluster ports).
# No ceph-mgr: `ceph -s` answers ("mgr: no daemons active", MGR_DOWN muted so
# health is HEALTH_OK), but mgr-served commands (ceph osd df, ceph df, ceph pg
# stat) HANG forever: wrap them in `timeout`.
# On success stdout is only `export ...` lines (use: eval "$(pacific-cluster.sh start DIR)");
# progress goes to stderr.
#
# stop STOPS exactly the daemons started for DIR, by their pid files
# (DIR/run/*.pid), never by process name: a pid is only signalled if its
# /proc/PID/cmdline names DIR/ceph.conf. OSDs first, then the mon; SIGTERM,
# wait up to CEPH_TEST_STOP_TIMEOUT (20) s, then SIGKILL. --purge then deletes
# DIR (only if it carries this script's marker file).
#
# Everything lives under DIR (default /tmp/ceph-pacific; made 0700 when new, and
# refused if another user owns it or others may write to it):
#   DIR/ceph.conf  DIR/keyring (client.admin)  DIR/run/{mon.a,osd.0}.pid
#   DIR/run/ceph-*.asok  DIR/log/{mon.a,osd.0}.log  DIR/mon/ceph-a  DIR/osd/ceph-0
#   (and osd.1, ... likewise with CEPH_TEST_NUM_OSDS)
#
# start is idempotent: if all daemons already run for DIR it only re-checks
# them; a stopped cluster is restarted from its data; otherwise a new one is
# made. --fresh (or CEPH_TEST_FRESH=1) stops and wipes DIR first. DIR is only
# ever wiped if it is empty or carries the marker DIR/.ceph-test-cluster.
# memstore saves objects to disk only on a clean SIGTERM shutdown
# (osd_fast_shutdown = false); after a kill -9 the cluster is rebuilt.
#
# Environment knobs (all optional):
#   CEPH_TEST_MON_V2_PORT (3300)  CEPH_TEST_MON_V1_PORT (6789)
#   CEPH_TEST_TIMEOUT (90)        seconds to wait for each of: mon up, osd up, pool usable
#   CEPH_TEST_MEMSTORE_BYTES (1073741824)   CEPH_TEST_PG_NUM (8)   (memstore size per OSD)
#   CEPH_TEST_NUM_OSDS (1)    number of OSDs, osd.0 .. osd.N-1 (a restart without it
#                             starts every OSD that already has data in DIR)
#   CEPH_TEST_POOL_SIZE (1)   replica count of pool "test" when it is created (<= NUM_OSDS)
#   CEPH_TEST_NUM_HOSTS (1)   CRUSH host buckets the OSDs are spread over: osd.N goes to
#                             host "hostK", K = N mod HOSTS, under root=default (set as
#                             each new OSD's crush_location; the default rule still
#                             places by OSD, osd_crush_chooseleaf_type = 0)
#   CEPH_TEST_DEBUG_MS_MON (1)  CEPH_TEST_DEBUG_MS_OSD (0)   debug_ms levels in the logs
#   CEPH_TEST_EXTRA_CONF      text appended verbatim to ceph.conf when it is created
#   CEPH_TEST_MIN_MON_RELEASE (pacific)  monmap min_mon_release; a mon refuses one more
#                             than 2 releases older than itself (Tentacle uses tentacle)
#   CEPH_TEST_STOP_TIMEOUT (20)
#   CEPH_TEST_MSGR1_ONLY (0)  1: the daemons speak msgr1 only (the mon's monmap entry is
#                             [v1:127.0.0.1:V1_PORT], ms_bind_msgr2 = false), so Ceph's own
#                             clients speak msgr1 end to end (they pick v2 whenever offered)
#   CEPH_TEST_STOP_HINT       the stop command to print (tentacle.sh sets its own)
#   CEPH_TEST_MGR (0)         1: also start one ceph-mgr, mgr.x (apt: ceph-mgr; keyring
#                             DIR/mgr/ceph-x/keyring, log DIR/log/mgr.x.log, no optional
#                             modules enabled, stats reported every second), and wait
#                             until the monitors have it active: pool and cluster usage
#                             (rados df, MGetPoolStats, MStatfs) and mgr commands answer
#
# Hosts in network namespaces (scripts/net/netns.sh): with CEPH_TEST_NETNS=NET
# every daemon runs in a host namespace of network NET at its own address
# (started with `nsenter --net=/run/netns/NET-hI`), on the default ports:
#   hosts 1..M        mon.a, mon.b, ... (M = CEPH_TEST_NUM_MONS, default 1)
#   hosts M+1..M+N    osd.0 .. osd.N-1 (N = CEPH_TEST_NUM_OSDS)
#   host  M+N+1       mgr.x (with CEPH_TEST_MGR=1) and this script's own ceph/rados
#                     commands (the "admin" host)
#   hosts M+N+2 ..    CEPH_TEST_NETNS_CLIENTS (2) hosts for clients, started nowhere
# host I is SUBNET.I (CEPH_TEST_NETNS_SUBNET, default 10.77.0). start brings the
# network up (netns.sh up) unless NET-sw exists; stop stops the daemons, then
# removes the namespaces (netns.sh down) only if every daemon is gone. The
# network's name, subnet and layout are kept in DIR/netns.env (restarts without
# the knobs use them). More export lines: CEPH_TEST_NETNS, CEPH_TEST_NETNS_SUBNET,
# CEPH_TEST_MON_HOSTS, CEPH_TEST_OSD_HOSTS (osd.0's host first),
# CEPH_TEST_ADMIN_HOST, CEPH_TEST_CLIENT_HOSTS (host numbers, space-separated).
# Under tentacle.sh, tentacle.sh brings the network up on the host (`netns-up`
# below) and binds /run/netns into the chroot (nsenter is util-linux, in the
# chroot; ip, nft and tc are not).
#   pacific-cluster.sh netns-up [DIR]   only bring the network up (layout from the knobs)
#   CEPH_TEST_NUM_MONS (1)    monitors a, b, c, ... (more than 1 needs CEPH_TEST_NETNS)
set -euo pipefail

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
PROG="pacific-cluster.sh"
MON_ID=a      # the first monitor
MON_IDS=(a)   # set in cmd_start from CEPH_TEST_NUM_MONS
OSD_IDS=(0)   # set in cmd_start from CEPH_TEST_NUM_OSDS
NETNS=""      # CEPH_TEST_NETNS: the network the daemons' hosts are in (load_netns)
HERE="$(dirname "$SELF")"
NETNS_SH="$HERE/../net/netns.sh"
POOL=test

log() { printf '[%s %(%H:%M:%S)T] %s\n' "$PROG" -1 "$*" >&2; }
usage() { sed -n '2,3p' "$SELF" >&2; exit "${1:-2}"; }

# ==================================================================== hosts
# load_netns: NETNS and the hosts' layout, from DIR/netns.env when the cluster
# has one, else from the knobs. NETNS is empty for a cluster on 127.0.0.1.
load_netns() {
  NETNS="${CEPH_TEST_NETNS:-}" SUBNET="${CEPH_TEST_NETNS_SUBNET:-10.77.0}"
  NUM_MONS="${CEPH_TEST_NUM_MONS:-1}" NET_OSDS="${CEPH_TEST_NUM_OSDS:-1}"
  NET_CLIENTS="${CEPH_TEST_NETNS_CLIENTS:-2}"
  if [[ -n "$DIR" && -s "$DIR/netns.env" ]]; then
    # shellcheck disable=SC1091
    source "$DIR/netns.env"
  fi
  [[ "$NUM_MONS" =~ ^[1-9]$ ]] || { log "CEPH_TEST_NUM_MONS must be 1..9"; exit 2; }
  if [[ -z "$NETNS" && "$NUM_MONS" != 1 ]]; then
    log "CEPH_TEST_NUM_MONS=$NUM_MONS needs CEPH_TEST_NETNS (each monitor at its own address)"; exit 2
  fi
  MON_IDS=(); local i
  for ((i = 0; i < NUM_MONS; i++)); do MON_IDS+=("$(printf "\\$(printf %o $((97 + i)))")"); done
  MON_ID="${MON_IDS[0]}"
  ADMIN_HOST=$((NUM_MONS + NET_OSDS + 1))
  NET_HOSTS=$((ADMIN_HOST + NET_CLIENTS))
}
save_netns() {
  [[ -n "$NETNS" ]] || return 0
  printf 'NETNS=%s\nSUBNET=%s\nNUM_MONS=%s\nNET_OSDS=%s\nNET_CLIENTS=%s\n' \
    "$NETNS" "$SUBNET" "$NUM_MONS" "$NET_OSDS" "$NET_CLIENTS" >"$DIR/netns.env"
}
mon_host_no() { local i; for i in "${!MON_IDS[@]}"; do [[ ${MON_IDS[$i]} == "$1" ]] && echo $((i + 1)); done; }
osd_host_no() { echo $((NUM_MONS + 1 + $1)); }
host_ip() { [[ -n "$NETNS" ]] && echo "$SUBNET.$1" || echo 127.0.0.1; }
# on_host I CMD...: CMD in host I's network namespace (or here, without one)
on_host() {
  local i=$1; shift
  if [[ -n "$NETNS" ]]; then nsenter --net="/run/netns/$NETNS-h$i" -- "$@"; else "$@"; fi
}
# netns_up: the network of this layout, made unless it is there already
netns_up() {
  [[ -n "$NETNS" ]] || return 0
  [[ -e "/run/netns/$NETNS-sw" && -e "/run/netns/$NETNS-h$NET_HOSTS" ]] && return 0
  if [[ -x "$NETNS_SH" ]] && command -v ip >/dev/null && command -v nft >/dev/null; then
    "$NETNS_SH" up "$NETNS" "$NET_HOSTS" "$SUBNET" || { log "netns.sh up $NETNS failed"; exit 1; }
  else
    log "network $NETNS ($NET_HOSTS hosts) is not up and cannot be made here (no netns.sh, ip or nft: in tentacle.sh's chroot, tentacle.sh makes it)"
    exit 1
  fi
}
cmd_netns_up() {
  DIR="${1:-/tmp/ceph-pacific}"
  [[ -d "$DIR" ]] && DIR="$(cd "$DIR" && pwd -P)"
  load_netns
  netns_up
}

# ==================================================================== stop
# stop_one PIDFILE: SIGTERM the daemon of this cluster named by PIDFILE.
stop_one() {
  local pf="$1" name pid i
  name="$(basename "$pf" .pid)"
  pid="$(cat "$pf" 2>/dev/null || true)"
  # gone, or a zombie awaiting reaping (empty cmdline; procfs files have size 0, so no -s)
  if ! [[ "$pid" =~ ^[0-9]+$ ]] || [[ ! -r "/proc/$pid/cmdline" ]] ||
     [[ -z "$(tr -d '\0' <"/proc/$pid/cmdline" 2>/dev/null)" ]]; then
    log "$name: not running (stale pid file removed)"
    rm -f "$pf"; return 0
  fi
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$CONF"; then
    log "$name: pid $pid is not a daemon of $DIR; not touching it (stale pid file removed)"
    rm -f "$pf"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    [[ -e "/proc/$pid" ]] || break
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && break   # zombie = gone
    sleep 0.1
  done
  if [[ -e "/proc/$pid" ]] && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; then
    log "$name: pid $pid still alive after ${STOP_TIMEOUT}s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  if [[ -e "/proc/$pid" ]] && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; then
    log "$name: pid $pid could not be stopped"; return 1
  fi
  log "$name: stopped (pid $pid)"
  rm -f "$pf"
}

# stop_daemons: stop every daemon of DIR by pid file; returns 1 if one survived.
stop_daemons() {
  local pf rc=0
  shopt -s nullglob
  [[ -n "$(echo "$DIR"/run/*.pid)" ]] || log "no pid files in $DIR/run: nothing running"
  for pf in "$DIR"/run/osd.*.pid; do stop_one "$pf" || rc=1; done
  for pf in "$DIR"/run/mon.*.pid; do stop_one "$pf" || rc=1; done
  for pf in "$DIR"/run/*.pid; do stop_one "$pf" || rc=1; done   # anything else
  shopt -u nullglob
  return $rc
}

cmd_stop() {
  local purge=0 a rc=0
  for a in "$@"; do
    case "$a" in
      --purge) purge=1 ;;
      -*) echo "$PROG stop: unknown option $a" >&2; exit 2 ;;
      *) DIR="$a" ;;
    esac
  done
  DIR="${DIR:-/tmp/ceph-pacific}"
  if [[ ! -d "$DIR" ]]; then log "$DIR does not exist; nothing to stop"; return 0; fi
  DIR="$(cd "$DIR" && pwd -P)"
  CONF="$DIR/ceph.conf"
  stop_daemons || rc=1
  load_netns
  if [[ -n "$NETNS" ]]; then
    if [[ $rc -ne 0 ]]; then
      log "not removing network $NETNS: some daemon is still running"
    elif [[ -e "/run/netns/$NETNS-sw" ]]; then
      "$NETNS_SH" down "$NETNS" && log "network $NETNS removed"
    fi
  fi
  if [[ "$purge" == 1 ]]; then
    if [[ ! -e "$DIR/.ceph-test-cluster" ]]; then
      log "not purging $DIR: no .ceph-test-cluster marker"
    elif [[ $rc -ne 0 ]]; then
      log "not purging $DIR: some daemon is still running"
    else
      find "$DIR" -mindepth 1 -delete && rmdir "$DIR" && log "purged $DIR"
    fi
  fi
  return $rc
}

# ==================================================================== start
die() {
  printf '[%s] ERROR: %s\n' "$PROG" "$*" >&2
  printf '[%s] daemons already started are left running for inspection; stop them with: %s (or start over with --fresh)\n' \
    "$PROG" "${CEPH_TEST_STOP_HINT:-$SELF stop $DIR}" >&2
  exit 1
}

# own_dir DIR: DIR will hold the cluster's keyring and a ceph.conf that the
# daemons obey, so it must be ours and closed to other users' writes. A name
# like /tmp/ceph-pacific in a shared /tmp is one anyone can take first: a
# directory made there by another user, or open to others' writes, is refused
# rather than used. (cmd_start makes a new DIR 0700.)
own_dir() {
  [[ -O "$1" ]] || die "$1 belongs to another user; refusing to keep a cluster's keyring there (give a directory of your own)"
  [[ -z "$(find "$1" -maxdepth 0 -perm /022)" ]] ||
    die "$1 is writable by other users (mode $(stat -c %a "$1")); refusing to keep a cluster's keyring there"
}

# ceph CLI wrapper: always this cluster, bounded in time.
c() { on_host "${ADMIN_HOST:-0}" timeout 30 ceph --conf "$CONF" --connect-timeout 10 "$@"; }

# live_pid NAME: pid of daemon NAME of THIS cluster if it runs. The pid file
# alone is not trusted: the process must have been started with DIR/ceph.conf.
live_pid() {
  local pf="$DIR/run/$1.pid" pid
  [[ -s "$pf" ]] || return 1
  pid="$(cat "$pf")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$CONF" || return 1
  echo "$pid"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }   # 0 if something listens

wait_for() {  # wait_for DESCRIPTION LOGFILE COMMAND...
  local what="$1" logf="$2"; shift 2
  local deadline=$(( SECONDS + TIMEOUT ))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "timed out after ${TIMEOUT}s waiting for $what; see $logf (and $DIR/log/)"
    sleep 1
  done
  log "$what: ok"
}

osd_is_up() { c osd dump 2>/dev/null | grep -Eq "^osd\.$1 up "; }   # osd_is_up ID

pool_usable() {  # an object write/stat/delete proves the PGs are active (no mgr needed)
  on_host "$ADMIN_HOST" timeout 20 rados --conf "$CONF" -p "$POOL" put __start_cluster_probe /etc/hostname &&
  on_host "$ADMIN_HOST" timeout 20 rados --conf "$CONF" -p "$POOL" stat __start_cluster_probe &&
  on_host "$ADMIN_HOST" timeout 20 rados --conf "$CONF" -p "$POOL" rm __start_cluster_probe
}

mgr_active() { c mgr stat --format json 2>/dev/null | grep -q '"available": *true'; }

# start_mgr: CEPH_TEST_MGR=1: mgr.x, its key made on first start.
start_mgr() {
  [[ "${CEPH_TEST_MGR:-0}" == 1 ]] || return 0
  command -v ceph-mgr >/dev/null 2>&1 || die "'ceph-mgr' not found; run install-deps.sh (apt: ceph-mgr)"
  local mdir="$DIR/mgr/ceph-x"
  if [[ ! -s "$mdir/keyring" ]]; then
    mkdir -p "$mdir"
    c auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
      >"$mdir/keyring" || die "could not make mgr.x's key"
    # Usage reported every second (OSD -> mgr -> mon), not every 5 s.
    c config set mgr mgr_stats_period 1 >/dev/null || true
    c config set mon mon_mgr_digest_period 1 >/dev/null || true
  fi
  if ! live_pid mgr.x >/dev/null; then
    rm -f "$DIR/run/mgr.x.pid"
    on_host "$ADMIN_HOST" ceph-mgr --conf "$CONF" -i x --mgr_data "$mdir" --keyring "$mdir/keyring" \
      --log_file "$DIR/log/mgr.x.log" --pid_file "$DIR/run/mgr.x.pid" \
      --admin_socket "$DIR/run/ceph-mgr.x.asok" --mgr_initial_modules "" \
      >>"$DIR/log/mgr-stdout.log" 2>&1 ||
      die "ceph-mgr failed to start; see $DIR/log/mgr.x.log and $DIR/log/mgr-stdout.log"
    log "ceph-mgr started (pid $(cat "$DIR/run/mgr.x.pid" 2>/dev/null || echo '?'))"
  fi
  wait_for "mgr.x active" "$DIR/log/mgr.x.log" mgr_active
  # The balancer (an always-on module, upmap mode) would add pg-upmap
  # items of its own under the tests that set and count them.
  c balancer off >/dev/null || die "could not turn the mgr's balancer off"
}

print_exports() {
  local key fsid
  key="$(ceph-authtool "$KEYRING" -n client.admin -p 2>/dev/null || true)"
  fsid="$(sed -n 's/^fsid = //p' "$CONF")"
  local osds="" id size
  for id in "${OSD_IDS[@]}"; do osds+="${osds:+, }osd.$id"; done
  size="$(c osd pool get "$POOL" size 2>/dev/null | sed -n 's/^size: //p' || true)"
  cat <<EOT
# Ceph test cluster in $DIR is up: mon(s) at $MON_HOST, $osds (memstore), pool '$POOL' (size ${size:-$POOL_SIZE})
export CEPH_CONF=$CONF
export CEPH_TEST_DIR=$DIR
export CEPH_TEST_KEYRING=$KEYRING
export CEPH_TEST_MON_ADDRS='$MON_ADDRS'
export CEPH_TEST_FSID=$fsid
export CEPH_TEST_ENTITY=client.admin
export CEPH_TEST_KEY=$key
export CEPH_TEST_POOL=$POOL
EOT
  if [[ -n "$NETNS" ]]; then
    local hosts="" i
    for id in "${OSD_IDS[@]}"; do hosts+="${hosts:+ }$(osd_host_no "$id")"; done
    cat <<EOT
export CEPH_TEST_NETNS=$NETNS
export CEPH_TEST_NETNS_SUBNET=$SUBNET
export CEPH_TEST_MON_HOSTS='$(seq -s ' ' 1 "$NUM_MONS")'
export CEPH_TEST_OSD_HOSTS='$hosts'
export CEPH_TEST_ADMIN_HOST=$ADMIN_HOST
export CEPH_TEST_CLIENT_HOSTS='$(seq -s ' ' $((ADMIN_HOST + 1)) "$NET_HOSTS")'
EOT
  fi
  echo "# stop with: ${CEPH_TEST_STOP_HINT:-$SELF stop $DIR}"
}

write_conf() {
  local fsid="$1"
  cat >"$CONF" <<EOT
# written by $PROG; throw-away test cluster
[global]
fsid = $fsid
mon_host = $MON_HOST
$NET_CONF
ms_bind_msgr2 = $BIND_MSGR2
ms_bind_msgr1 = true
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = $DIR/run
crash_dir = $DIR/crash
tmp_dir = $DIR/tmp
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = $PG_NUM
osd_pool_default_pgp_num = $PG_NUM
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 2
mon_data_avail_crit = 1

[mon]
mon_data = $DIR/mon/\$cluster-\$id
keyring = $DIR/mon/\$cluster-\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$cluster-\$name.asok
debug_ms = $DEBUG_MS_MON

[osd]
osd_objectstore = memstore
memstore_device_bytes = $MEMSTORE_BYTES
osd_data = $DIR/osd/\$cluster-\$id
keyring = $DIR/osd/\$cluster-\$id/keyring
log_file = $DIR/log/\$name.log
pid_file = $DIR/run/\$name.pid
admin_socket = $DIR/run/\$cluster-\$name.asok
debug_ms = $DEBUG_MS_OSD
osd_crush_update_on_start = true
# memstore only writes its contents to osd_data on a clean umount; the default
# fast shutdown skips that, and a restarted OSD would come back empty
osd_fast_shutdown = false
# memstore reports itself rotational, so recovery sleeps 0.1 s between ops
# as for a disk: a restarted OSD then recovers a few objects a second, and
# writes to its degraded objects wait on that
osd_recovery_sleep_hdd = 0
# memstore's page sets: its default bufferlist objects' clone of a whole
# source replaces the target's data (BufferlistObject::clone), so a
# recovery that clones ranges into an object can leave a snapshot's clone
# shorter than its size on the recovered OSD
memstore_page_set = true

[client]
keyring = $KEYRING
EOT
  if [[ -n "$NETNS" ]]; then   # each daemon at its host's address
    local id
    for id in "${MON_IDS[@]}"; do
      printf '\n[mon.%s]\npublic_addr = %s\n' "$id" "$(host_ip "$(mon_host_no "$id")")" >>"$CONF"
    done
    for id in "${OSD_IDS[@]}"; do
      printf '\n[osd.%s]\npublic_addr = %s\ncluster_addr = %s\n' "$id" \
        "$(host_ip "$(osd_host_no "$id")")" "$(host_ip "$(osd_host_no "$id")")" >>"$CONF"
      if (( ${CEPH_TEST_NUM_HOSTS:-1} > 1 )); then   # (the section exists: the OSD loop adds none)
        printf 'crush_location = root=default host=host%s\n' "$((id % CEPH_TEST_NUM_HOSTS))" >>"$CONF"
      fi
    done
    printf '\n[mgr.x]\npublic_addr = %s\n' "$(host_ip "$ADMIN_HOST")" >>"$CONF"
  fi
  if [[ -n "${CEPH_TEST_EXTRA_CONF:-}" ]]; then
    printf '\n# CEPH_TEST_EXTRA_CONF\n%s\n' "$CEPH_TEST_EXTRA_CONF" >>"$CONF"
  fi
}

cmd_start() {
  local fresh="${CEPH_TEST_FRESH:-0}" a
  for a in "$@"; do
    case "$a" in
      --fresh) fresh=1 ;;
      -*) echo "$PROG start: unknown option $a" >&2; exit 2 ;;
      *) DIR="$a" ;;
    esac
  done
  DIR="${DIR:-/tmp/ceph-pacific}"
  [[ -e "$DIR" ]] || (umask 077 && mkdir -p -- "$DIR")
  DIR="$(cd "$DIR" && pwd -P)"
  own_dir "$DIR"
  V2_PORT="${CEPH_TEST_MON_V2_PORT:-3300}"
  V1_PORT="${CEPH_TEST_MON_V1_PORT:-6789}"
  load_netns
  TIMEOUT="${CEPH_TEST_TIMEOUT:-90}"
  MEMSTORE_BYTES="${CEPH_TEST_MEMSTORE_BYTES:-1073741824}"
  PG_NUM="${CEPH_TEST_PG_NUM:-8}"
  DEBUG_MS_MON="${CEPH_TEST_DEBUG_MS_MON:-1}"
  DEBUG_MS_OSD="${CEPH_TEST_DEBUG_MS_OSD:-0}"
  MARKER="$DIR/.ceph-test-cluster"
  CONF="$DIR/ceph.conf"
  KEYRING="$DIR/keyring"
  POOL_SIZE="${CEPH_TEST_POOL_SIZE:-1}"
  local osd_dir new bin id n

  for bin in ceph ceph-mon ceph-osd ceph-authtool monmaptool rados uuidgen; do
    command -v "$bin" >/dev/null 2>&1 || die "'$bin' not found; run install-deps.sh (apt: ceph-mon ceph-osd ceph-common uuid-runtime)"
  done

  # memstore after a kill -9 / crash: the PGs are gone and the pool would hang
  # forever; the cluster is throw-away, so start over. Detected by: the store's
  # "collections" file was not rewritten after the OSD was last started.
  for osd_dir in "$DIR"/osd/ceph-*; do
    id="${osd_dir##*/ceph-}"
    if [[ "$fresh" != 1 && -e "$MARKER" && -e "$osd_dir/.started" ]] &&
       ! live_pid "osd.$id" >/dev/null && [[ ! "$osd_dir/collections" -nt "$osd_dir/.started" ]]; then
      log "osd.$id did not shut down cleanly (kill -9 or crash), so its memstore contents are lost; recreating the cluster"
      fresh=1
    fi
  done

  # ---------------------------------------------------------------- fresh / wipe
  if [[ "$fresh" == 1 ]]; then
    if [[ -e "$MARKER" ]]; then
      log "--fresh: stopping and wiping $DIR"
      stop_daemons || die "could not stop the old daemons of $DIR"
      find "$DIR" -mindepth 1 -delete
    elif [[ -n "$(ls -A "$DIR")" ]]; then
      die "--fresh: refusing to wipe $DIR: not empty and not made by this script (no $MARKER)"
    fi
    load_netns   # the knobs' layout, not the wiped cluster's
  fi

  # monitors' addresses: mon.a's in MON_ADDRS, every monitor's in MON_HOST
  local mon_addrs
  mon_addrs() {  # mon_addrs IP
    if [[ "${CEPH_TEST_MSGR1_ONLY:-0}" == 1 ]]; then echo "v1:$1:$V1_PORT"
    else echo "v2:$1:$V2_PORT,v1:$1:$V1_PORT"; fi
  }
  BIND_MSGR2=true; [[ "${CEPH_TEST_MSGR1_ONLY:-0}" == 1 ]] && BIND_MSGR2=false
  MON_ADDRS="$(mon_addrs "$(host_ip 1)")" MON_HOST=""
  for id in "${MON_IDS[@]}"; do
    MON_HOST+="${MON_HOST:+,}[$(mon_addrs "$(host_ip "$(mon_host_no "$id")")")]"
  done
  if [[ -n "$NETNS" ]]; then
    NET_CONF="public_network = $SUBNET.0/24"
  else
    NET_CONF=$'public_addr = 127.0.0.1\ncluster_addr = 127.0.0.1\npublic_network = 127.0.0.0/8'
  fi

  # OSDs: osd.0 .. osd.N-1, N = CEPH_TEST_NUM_OSDS, or more if DIR already has more
  n="${CEPH_TEST_NUM_OSDS:-1}"
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "CEPH_TEST_NUM_OSDS must be a number >= 1"
  while [[ -e "$DIR/osd/ceph-$n/.mkfs-done" ]]; do n=$((n + 1)); done
  OSD_IDS=(); for ((id = 0; id < n; id++)); do OSD_IDS+=("$id"); done
  if [[ -n "$NETNS" ]]; then
    (( n <= NET_OSDS )) || die "$n OSDs but network $NETNS has hosts for $NET_OSDS"
    command -v nsenter >/dev/null || die "'nsenter' not found (util-linux)"
    netns_up
  fi
  [[ "$POOL_SIZE" =~ ^[1-9][0-9]*$ ]] && (( POOL_SIZE <= n )) ||
    die "CEPH_TEST_POOL_SIZE ($POOL_SIZE) must be between 1 and the number of OSDs ($n)"

  # --------------------------------------------------------------- already up?
  local all_up=1
  for id in "${OSD_IDS[@]}"; do live_pid "osd.$id" >/dev/null || all_up=0; done
  for id in "${MON_IDS[@]}"; do live_pid "mon.$id" >/dev/null || all_up=0; done
  if [[ -e "$MARKER" && -e "$CONF" ]] && (( all_up )); then
    log "daemons already running for $DIR (mon pid $(live_pid mon.$MON_ID), osd pid(s) $(for id in "${OSD_IDS[@]}"; do live_pid "osd.$id"; done | paste -sd' ')); checking"
    wait_for "mon answers" "$DIR/log/mon.$MON_ID.log" c -s
    for id in "${OSD_IDS[@]}"; do
      wait_for "osd.$id up" "$DIR/log/osd.$id.log" osd_is_up "$id"
    done
    wait_for "pool '$POOL' usable" "$DIR/log/osd.0.log" pool_usable
    start_mgr
    print_exports
    return 0
  fi

  # the mon binds exactly these ports: they must be free
  if [[ -z "$NETNS" ]] && ! live_pid "mon.$MON_ID" >/dev/null; then
    for a in "$V2_PORT" "$V1_PORT"; do
      port_busy "$a" && die "127.0.0.1:$a is already in use (another cluster?); stop it or set CEPH_TEST_MON_V2_PORT/CEPH_TEST_MON_V1_PORT"
    done
  fi

  # ---------------------------------------------------------------- create
  if [[ ! -e "$MARKER" ]]; then
    [[ -z "$(ls -A "$DIR")" ]] || die "$DIR is not empty and was not made by this script; give an empty or new directory"
    log "creating new cluster in $DIR ($(ceph-mon --version | cut -d' ' -f1-3))"
    touch "$MARKER"
    save_netns
    mkdir -p "$DIR"/{run,log,crash,mon,osd,tmp}
    local fsid; fsid="$(uuidgen)"
    write_conf "$fsid"
    # keys: mon. and client.admin
    ceph-authtool --create-keyring "$DIR/tmp/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool --create-keyring "$KEYRING" --gen-key -n client.admin \
      --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    ceph-authtool "$DIR/tmp/mon.keyring" --import-keyring "$KEYRING" >/dev/null
    # monmap + mon store
    monmaptool --create --fsid "$fsid" --enable-all-features \
      --set-min-mon-release "${CEPH_TEST_MIN_MON_RELEASE:-pacific}" \
      $(for id in "${MON_IDS[@]}"; do printf -- '--addv %s [%s] ' "$id" "$(mon_addrs "$(host_ip "$(mon_host_no "$id")")")"; done) \
      "$DIR/tmp/monmap" >/dev/null
    for id in "${MON_IDS[@]}"; do
      mkdir -p "$DIR/mon/ceph-$id"
      ceph-mon --conf "$CONF" --mkfs -i "$id" --monmap "$DIR/tmp/monmap" \
        --keyring "$DIR/tmp/mon.keyring" >>"$DIR/log/mon-mkfs.log" 2>&1 ||
        die "ceph-mon --mkfs (mon.$id) failed; see $DIR/log/mon-mkfs.log"
    done
    rm -f "$DIR/tmp/monmap" "$DIR/tmp/mon.keyring"
    new=1
  else
    log "restarting stopped cluster in $DIR from its data"
    [[ -e "$CONF" ]] || die "$CONF missing; rerun with --fresh"
    new=0
  fi

  # ---------------------------------------------------------------- mon
  for id in "${MON_IDS[@]}"; do
    live_pid "mon.$id" >/dev/null && continue
    rm -f "$DIR/run/mon.$id.pid"
    # daemonizes; the parent returns once the mon has initialised (or failed)
    on_host "$(mon_host_no "$id")" ceph-mon --conf "$CONF" -i "$id" >>"$DIR/log/mon-stdout.log" 2>&1 ||
      die "ceph-mon failed to start; see $DIR/log/mon.$id.log and $DIR/log/mon-stdout.log"
    log "ceph-mon mon.$id started (pid $(cat "$DIR/run/mon.$id.pid" 2>/dev/null || echo '?'))"
  done
  wait_for "mon answers 'ceph -s'" "$DIR/log/mon.$MON_ID.log" c -s
  if [[ "$new" == 1 ]]; then
    # no ceph-mgr here: keep `ceph health` at HEALTH_OK instead of "no active mgr"
    c health mute MGR_DOWN --sticky >/dev/null 2>&1 || log "warning: could not mute MGR_DOWN"
  fi

  # ---------------------------------------------------------------- osd(s)
  local osd_uuid osd_secret got mkfs_log
  for id in "${OSD_IDS[@]}"; do
    osd_dir="$DIR/osd/ceph-$id"
    mkfs_log="$DIR/log/osd-mkfs.log"; [[ "$id" == 0 ]] || mkfs_log="$DIR/log/osd.$id-mkfs.log"
    if [[ ! -e "$osd_dir/.mkfs-done" ]]; then
      log "creating osd.$id (memstore, $MEMSTORE_BYTES bytes)"
      mkdir -p "$osd_dir"
      osd_uuid="$(uuidgen)"
      osd_secret="$(ceph-authtool --gen-print-key)"
      printf '{"cephx_secret": "%s"}\n' "$osd_secret" >"$DIR/tmp/osd-new.json"
      got="$(c osd new "$osd_uuid" "$id" -i "$DIR/tmp/osd-new.json")" || die "'ceph osd new' failed"
      rm -f "$DIR/tmp/osd-new.json"
      [[ "$got" == "$id" ]] || die "'ceph osd new' returned id '$got', expected $id"
      ceph-authtool --create-keyring "$osd_dir/keyring" -n "osd.$id" --add-key "$osd_secret" >/dev/null
      on_host "$(osd_host_no "$id")" ceph-osd --conf "$CONF" -i "$id" --mkfs --osd-uuid "$osd_uuid" \
        >"$mkfs_log" 2>&1 || die "ceph-osd --mkfs failed; see $mkfs_log"
      touch "$osd_dir/.mkfs-done"
    fi
    if (( ${CEPH_TEST_NUM_HOSTS:-1} > 1 )) && ! grep -qx "\[osd\.$id\]" "$CONF"; then
      printf '\n[osd.%s]\ncrush_location = root=default host=host%s\n' \
        "$id" "$((id % CEPH_TEST_NUM_HOSTS))" >>"$CONF"
    fi
    if ! live_pid "osd.$id" >/dev/null; then
      rm -f "$DIR/run/osd.$id.pid"
      touch "$osd_dir/.started"
      on_host "$(osd_host_no "$id")" ceph-osd --conf "$CONF" -i "$id" >>"$DIR/log/osd-stdout.log" 2>&1 ||
        die "ceph-osd failed to start; see $DIR/log/osd.$id.log and $DIR/log/osd-stdout.log"
      log "ceph-osd started (pid $(cat "$DIR/run/osd.$id.pid" 2>/dev/null || echo '?'))"
    fi
  done
  for id in "${OSD_IDS[@]}"; do
    wait_for "osd.$id up" "$DIR/log/osd.$id.log" osd_is_up "$id"
  done

  # ---------------------------------------------------------------- pool
  if ! c osd pool ls 2>/dev/null | grep -qx "$POOL"; then
    log "creating pool '$POOL' (pg_num $PG_NUM, size $POOL_SIZE)"
    c osd pool create "$POOL" "$PG_NUM" "$PG_NUM" replicated >/dev/null 2>&1 || die "pool create failed"
    if ! c osd pool get "$POOL" size 2>/dev/null | grep -qx "size: $POOL_SIZE"; then
      c osd pool set "$POOL" size "$POOL_SIZE" --yes-i-really-mean-it >/dev/null 2>&1 || die "pool set size $POOL_SIZE failed"
    fi
    c osd pool application enable "$POOL" rados >/dev/null 2>&1 || true
  fi
  wait_for "pool '$POOL' usable (rados put/stat/rm)" "$DIR/log/osd.0.log" pool_usable
  start_mgr

  print_exports
}

# ==================================================================== main
DIR=""
STOP_TIMEOUT="${CEPH_TEST_STOP_TIMEOUT:-20}"
cmd="${1:-}"; [[ $# -gt 0 ]] && shift
case "$cmd" in
  start) cmd_start "$@" ;;
  netns-up) cmd_netns_up "$@" ;;
  stop) cmd_stop "$@" ;;
  -h|--help|help) sed -n '2,90p' "$SELF"; exit 0 ;;
  *) usage 2 ;;
esac
