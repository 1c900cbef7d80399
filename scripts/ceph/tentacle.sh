#!/usr/bin/env bash
# tentacle.sh: Ceph 20.2.x "Tentacle" on a Debian 12 (bookworm) host, in a
# Debian forky (fallback: sid) chroot, because bookworm cannot install it (it
# needs libc 2.43, libstdc++ 16, boost 1.92). The chroot holds ceph-test,
# ceph-mon, ceph-osd, ceph-mgr, ceph-common: the real Ceph messenger tools
# (ceph_perf_msgr_server/_client, ceph_test_msgr, ...) and a mon+OSD.
#
#   tentacle.sh setup [DIR]                      build the chroot if missing (idempotent); starts nothing
#   tentacle.sh run [--] CMD...                  run CMD inside (exit status = CMD's; DIR = $TENTACLE_CHROOT)
#   tentacle.sh shell [DIR]                      interactive bash inside
#   tentacle.sh start-cluster [DIR] [--fresh]    START Tentacle mon.a + osd.0 (memstore), see below
#   tentacle.sh stop-cluster  [DIR] [--purge]    STOP them (by pid files, nothing else)
#   tentacle.sh status [DIR]                     versions, processes inside, leftover mounts
#   tentacle.sh umount [DIR]                     unmount leftover host mounts under DIR (normally none)
#
# DIR defaults to $TENTACLE_CHROOT, else /var/tmp/ceph-tentacle. Needs root and
# the host packages debootstrap + util-linux (see install-deps.sh).
#
# Mounts: every command runs in its own private mount namespace
# (unshare --mount --propagation private). /proc, /sys and /dev (rbind) are
# mounted there, never in the host's namespace, so they vanish when the last
# process of that namespace exits (also after kill -9), and concurrent runs
# do not interfere. The NETWORK namespace is the host's: 127.0.0.1 inside is
# the host's 127.0.0.1. The pid namespace too: `run` execs, so the pid of
# `tentacle.sh run CMD &` is CMD's pid and `kill $!` stops CMD.
# TENTACLE_NETNS=1 also unshares the network namespace (own loopback, brought
# up; nothing else), e.g. for ceph_test_msgr, which binds FIXED ports
# 127.0.0.1:3300 (the Pacific mon port), 3301, 16800, 16801.
# Inside the chroot, /tmp is DIR/tmp on the host.
#
# TENTACLE_BIND="/host/path[:ro] ..." binds each host directory at the SAME
# path inside. Environment inside: a clean env (HOME, PATH, LANG=C.UTF-8, TERM)
# plus every CEPH_* variable of the caller and the ones named in TENTACLE_PASSENV.
#
# setup knobs: TENTACLE_SUITE (forky), TENTACLE_MIRROR (default: the first
# .../debian URI of the host's apt sources), TENTACLE_EXTRA_PKGS. It writes
# nothing outside DIR, holds a flock on DIR, and wipes and rebuilds a
# half-built DIR (marker .tentacle-partial).
#
# start-cluster runs OUR pacific-cluster.sh (same directory as this script,
# bound read-only at its own path) inside the chroot, with: mon v2 port 3301,
# v1 port 6790, OSD ports from 6900 (ms_bind_port_min), min_mon_release
# tentacle, cluster dir DIR/cluster (bound at its own path, so every path in
# its ceph.conf is valid on the host as well). These do not clash with the
# host Pacific cluster (3300/6789, OSD from 6800). stdout is the same
# `export ...` lines as pacific-cluster.sh. The daemons live in the host's pid
# namespace; stop-cluster runs pacific-cluster.sh stop on the host.
# Tentacle cephx keys are "aes256k" (base64 "Ag..."), which Pacific..Squid
# cannot parse. TENTACLE_LEGACY_AUTH=1 also allows the old AES-128 cipher and
# adds client.legacy with such a key (more export lines: CEPH_TEST_LEGACY_*).
# With CEPH_TEST_NETNS=NET (pacific-cluster.sh's hosts in network namespaces),
# start-cluster makes the network on the host (pacific-cluster.sh netns-up)
# and binds the host's /run/netns into the chroot, where the daemons are
# started with nsenter --net=/run/netns/NET-hI (util-linux, in the chroot):
# the scripts run in the chroot unchanged and need no ip/nft there. Clients
# enter a host from outside: nsenter --net=/run/netns/NET-hI tentacle.sh run CMD.
# stop-cluster removes the network once the daemons are gone.
set -euo pipefail

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
HERE="$(dirname "$SELF")"
CLUSTER_SH="$HERE/pacific-cluster.sh"
PROG="tentacle.sh"
DEFAULT_DIR="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
# libqatzip3: Debian links Ceph's zlib and lz4 compressor plugins against it,
# and without it those plugins fail to load (the OSD then still negotiates
# compression but sends plain frames).
PKGS=(ceph-test ceph-mon ceph-osd ceph-mgr ceph-common uuid-runtime libqatzip3)
MARKER_NAME=".tentacle-chroot"
PARTIAL_NAME=".tentacle-partial"
CHROOT_PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

log() { printf '[%s %(%H:%M:%S)T] %s\n' "$PROG" -1 "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$PROG" "$*" >&2; exit 1; }
usage() { sed -n '8,14p' "$SELF" >&2; exit "${1:-2}"; }

need_root() { [[ $EUID -eq 0 ]] || die "must run as root (chroot, unshare and mount need it)"; }

canon_dir() {  # canon_dir PATH -> absolute path (need not exist yet)
  local d="$1"
  [[ -n "$d" ]] || die "empty DIR"
  [[ "$d" == /* ]] || d="$PWD/$d"
  d="$(readlink -m "$d")"
  [[ "$d" != "/" ]] || die "refusing to use / as DIR"
  echo "$d"
}

is_ready() { [[ -e "$1/$MARKER_NAME" && -x "$1/usr/bin/ceph_perf_msgr_server" ]]; }

require_ready() {
  [[ -d "$1" ]] || die "$1 does not exist; build it first: $SELF setup $1"
  own_dir "$1"
  is_ready "$1" || die "$1 is not a finished tentacle chroot; build it with: $SELF setup $1"
}

# own_dir DIR: DIR holds the programs root runs inside and the clusters'
# keyrings, and its default (/var/tmp/ceph-tentacle) is a name anyone can take
# first in the shared /var/tmp: one owned by another user, or open to others'
# writes, is refused rather than built in or used.
own_dir() {
  [[ -O "$1" ]] || die "$1 belongs to another user; refusing to use it (give a directory of your own)"
  [[ -z "$(find "$1" -maxdepth 0 -perm /022)" ]] ||
    die "$1 is writable by other users (mode $(stat -c %a "$1")); refusing to use it"
}

# mounts in the HOST namespace at or under DIR (should be none)
host_mounts_under() {
  awk -v d="$1" '{ m=$5; gsub(/\\040/," ",m); if (m==d || index(m, d"/")==1) print m }' /proc/self/mountinfo
}

# pids whose root directory is DIR (processes running inside the chroot)
chroot_pids() {
  local dir="$1" p r
  for p in /proc/[0-9]*; do
    r="$(readlink "$p/root" 2>/dev/null)" || continue
    [[ "$r" == "$dir" ]] && echo "${p#/proc/}"
  done
  return 0
}

rx_bytes() {  # bytes received on all non-loopback interfaces
  awk -F'[: ]+' 'NR>2 && $2!="lo" {s+=$3} END {print s+0}' /proc/net/dev
}

host_mirror() {  # the host's Debian mirror (it may be a frozen snapshot)
  if [[ -n "${TENTACLE_MIRROR:-}" ]]; then echo "$TENTACLE_MIRROR"; return; fi
  local f u
  shopt -s nullglob
  for f in /etc/apt/sources.list.d/*.sources; do
    for u in $(awk 'tolower($1)=="uris:" {for (i=2;i<=NF;i++) print $i}' "$f"); do
      [[ "$u" =~ /debian/?$ ]] && { echo "${u%/}"; return; }
    done
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    u="$(awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' "$f" |
         grep -E '/debian/?$' | head -n1 || true)"
    [[ -n "$u" ]] && { echo "${u%/}"; return; }
  done
  echo "http://deb.debian.org/debian"
}

# ------------------------------------------------------------------ namespace
# inner DIR CMD...: runs inside the private mount namespace made by ns_exec /
# ns_run; mounts, then execs chroot (same pid).
inner() {
  local dir="$1"; shift
  if [[ "${TENTACLE_NETNS:-0}" == 1 ]]; then
    ip link set lo up || die "TENTACLE_NETNS=1: could not bring up lo in the new network namespace"
  fi
  mount -t proc proc "$dir/proc" || die "mount proc on $dir/proc failed"
  mount -t sysfs sysfs "$dir/sys" 2>/dev/null || mount --rbind /sys "$dir/sys" || die "mount sys on $dir/sys failed"
  mount --rbind /dev "$dir/dev" || die "bind /dev on $dir/dev failed"
  if [[ "${TENTACLE_BIND_NETNS:-0}" == 1 ]]; then
    # the host's named network namespaces (each a mount under /run/netns,
    # hence rbind), for pacific-cluster.sh's nsenter --net=/run/netns/NET-hI
    mkdir -p "$dir/run/netns"
    mount --rbind /run/netns "$dir/run/netns" || die "rbind /run/netns failed"
  fi
  local spec src ro
  for spec in ${TENTACLE_BIND:-}; do
    src="${spec%:ro}"; ro=0; [[ "$spec" == *:ro ]] && ro=1
    [[ "$src" == /* && -d "$src" ]] || die "TENTACLE_BIND: '$src' is not an existing absolute directory"
    mkdir -p "$dir$src"
    mount --bind "$src" "$dir$src" || die "bind $src failed"
    if (( ro )); then mount -o remount,bind,ro "$dir$src" || die "read-only remount of $src failed"; fi
  done
  local -a envv=(HOME=/root "PATH=$CHROOT_PATH" LANG=C.UTF-8 "TERM=${TERM:-dumb}")
  local v
  for v in $(compgen -e); do
    [[ "$v" == CEPH_* ]] && envv+=("$v=${!v}")
  done
  for v in ${TENTACLE_PASSENV:-}; do
    [[ -n "${!v+x}" ]] && envv+=("$v=${!v}")
  done
  cd "$dir"
  exec chroot "$dir" /usr/bin/env -i "${envv[@]}" sh -c 'cd / && exec "$@"' sh "$@"
}

ns_flags() {
  NSF=(--mount --propagation private)
  if [[ "${TENTACLE_NETNS:-0}" == 1 ]]; then
    command -v ip >/dev/null || die "TENTACLE_NETNS=1 needs 'ip' (iproute2) on the host"
    NSF+=(--net)
  fi
}

ns_exec() {  # ns_exec DIR CMD...  (does not return; keeps the pid)
  local dir="$1"; shift
  command -v unshare >/dev/null || die "unshare (util-linux) not found"
  ns_flags
  exec unshare "${NSF[@]}" -- "$SELF" __inner "$dir" "$@"
}

ns_run() {  # ns_run DIR CMD...  (returns CMD's status)
  local dir="$1"; shift
  ns_flags
  unshare "${NSF[@]}" -- "$SELF" __inner "$dir" "$@"
}

# ------------------------------------------------------------------ setup
apt_install_inside() {  # apt_install_inside DIR LOGFILE PKGS...
  local dir="$1" out="$2"; shift 2
  ns_run "$dir" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $*" >"$out" 2>&1
}

setup() {
  local dir="$1"
  need_root
  [[ ! -d "$dir" ]] || own_dir "$dir"
  TENTACLE_NETNS=0   # apt needs the host network
  if is_ready "$dir"; then
    log "$dir is already set up:"
    sed 's/^/    /' "$dir/$MARKER_NAME" >&2
    # A chroot built before a package joined PKGS gets it now.
    local missing=() p
    for p in "${PKGS[@]}"; do
      ns_run "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    if (( ${#missing[@]} )); then
      log "installing packages added since: ${missing[*]}"
      apt_install_inside "$dir" "$dir/.tentacle-apt.log" "${missing[@]}" ||
        { tail -n 20 "$dir/.tentacle-apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
      ns_run "$dir" apt-get clean >/dev/null 2>&1 || true
    fi
    return 0
  fi
  local t
  for t in debootstrap unshare chroot flock; do
    command -v "$t" >/dev/null || die "'$t' not found (run install-deps.sh)"
  done
  if [[ -e "$dir" ]]; then
    [[ -d "$dir" ]] || die "$dir exists and is not a directory"
    if [[ -n "$(ls -A "$dir")" && ! -e "$dir/$PARTIAL_NAME" && ! -e "$dir/$MARKER_NAME" ]]; then
      die "$dir is not empty and was not made by this script; give a new or empty directory"
    fi
  fi
  mkdir -p "$dir"
  exec 9<"$dir"
  flock -n 9 || die "another '$PROG setup' is running on $dir"
  [[ -z "$(host_mounts_under "$dir")" ]] || die "mounts exist under $dir (run: $SELF umount $dir)"
  [[ -z "$(chroot_pids "$dir")" ]] || die "processes are running inside $dir: $(chroot_pids "$dir" | tr '\n' ' ')"

  local mirror suite t0 rx0 rx setup_log="$dir/.tentacle-setup.log"
  mirror="$(host_mirror)"
  suite="${TENTACLE_SUITE:-forky}"
  t0=$SECONDS

  # ---- stage 1: debootstrap (forky, else sid)
  if [[ ! -e "$dir/.tentacle-stage-debootstrap" ]]; then
    if [[ -n "$(ls -A "$dir")" ]]; then
      log "wiping half-built $dir"
      find "$dir" -xdev -mindepth 1 -delete
    fi
    touch "$dir/$PARTIAL_NAME"
    local script=/usr/share/debootstrap/scripts/sid   # bookworm's debootstrap has no forky script; sid's fits
    local ok=0 s
    for s in "$suite" sid; do
      log "debootstrap --variant=minbase $s $dir $mirror (log: $setup_log)"
      t=$SECONDS; rx0=$(rx_bytes)
      if unshare --mount --propagation private -- \
           debootstrap --variant=minbase "$s" "$dir" "$mirror" "$script" >>"$setup_log" 2>&1; then
        rx=$(rx_bytes)
        log "debootstrap $s: done in $((SECONDS - t)) s, downloaded $(( (rx - rx0) / 1000000 )) MB, chroot now $(du -sxm "$dir" | cut -f1) MiB"
        suite="$s"; ok=1; break
      fi
      log "debootstrap $s failed after $((SECONDS - t)) s (tail of $setup_log follows)"
      tail -n 15 "$setup_log" >&2 || true
      [[ "$s" == sid ]] && break
      find "$dir" -xdev -mindepth 1 ! -name "$(basename "$setup_log")" -delete
      touch "$dir/$PARTIAL_NAME"
    done
    (( ok )) || die "debootstrap failed for $suite and sid; see $setup_log"
    echo "$suite" >"$dir/.tentacle-stage-debootstrap"
  else
    suite="$(cat "$dir/.tentacle-stage-debootstrap")"
    log "debootstrap stage already done ($suite); continuing"
  fi

  # ---- stage 2: configure apt inside, install ceph
  printf 'deb %s %s main\n' "$mirror" "$suite" >"$dir/etc/apt/sources.list"
  rm -f "$dir/etc/apt/sources.list.d/debian.sources"
  # the mirror may be a frozen snapshot whose Release files are past Valid-Until
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\nAcquire::Retries "3";\nAcquire::Check-Valid-Until "false";\n' \
    >"$dir/etc/apt/apt.conf.d/90tentacle"
  printf '#!/bin/sh\n# written by tentacle.sh: never start services inside the chroot\nexit 101\n' \
    >"$dir/usr/sbin/policy-rc.d"
  chmod 755 "$dir/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  grep -q '^127.0.0.1' "$dir/etc/hosts" 2>/dev/null || printf '127.0.0.1 localhost\n' >>"$dir/etc/hosts"

  local pk=("${PKGS[@]}") apt_out="$dir/.tentacle-apt.log"
  # shellcheck disable=SC2206
  pk+=(${TENTACLE_EXTRA_PKGS:-})
  log "apt-get install --no-install-recommends ${pk[*]} (suite $suite)"
  t=$SECONDS; rx0=$(rx_bytes)
  if ! apt_install_inside "$dir" "$apt_out" "${pk[@]}"; then
    cat "$apt_out" >>"$setup_log"
    if [[ "$suite" != sid ]] &&
       grep -qE 'Unable to locate package|unmet dependencies|held broken packages|no installation candidate' "$apt_out"; then
      log "ceph packages not installable from $suite (tail below); retrying with sid sources"
      tail -n 15 "$apt_out" >&2
      suite=sid
      printf 'deb %s sid main\n' "$mirror" >"$dir/etc/apt/sources.list"
      apt_install_inside "$dir" "$apt_out" "${pk[@]}" ||
        { cat "$apt_out" >>"$setup_log"; tail -n 20 "$apt_out" >&2; die "apt-get install failed; see $setup_log"; }
    else
      tail -n 20 "$apt_out" >&2; die "apt-get install failed; see $setup_log"
    fi
  fi
  cat "$apt_out" >>"$setup_log"
  rx=$(rx_bytes)
  local need; need="$(grep -E '^Need to get' "$apt_out" | tail -n1 || true)"
  log "install: done in $((SECONDS - t)) s, downloaded $(( (rx - rx0) / 1000000 )) MB (apt: ${need:-?}); $(grep -cE '^Setting up ' "$apt_out") packages set up"
  ns_run "$dir" apt-get clean >/dev/null 2>&1 || true
  rm -f "$apt_out"

  [[ -x "$dir/usr/bin/ceph_perf_msgr_server" ]] || die "ceph-test installed but $dir/usr/bin/ceph_perf_msgr_server is missing"
  {
    echo "suite: $suite"
    echo "mirror: $mirror"
    echo "built: $(date -u +%FT%TZ) in $((SECONDS - t0)) s"
    echo "disk: $(du -sxm "$dir" | cut -f1) MiB"
    ns_run "$dir" dpkg-query -W -f='${Package} ${Version}\n' ceph-test ceph-mon ceph-osd ceph-common libc6 2>/dev/null
  } >"$dir/$MARKER_NAME.tmp"
  mv "$dir/$MARKER_NAME.tmp" "$dir/$MARKER_NAME"
  rm -f "$dir/$PARTIAL_NAME"
  log "setup finished in $((SECONDS - t0)) s:"
  sed 's/^/    /' "$dir/$MARKER_NAME" >&2
}

# ------------------------------------------------------------------ cluster
cluster_dir_for() {
  local dir="$1" cdir
  cdir="$(canon_dir "${TENTACLE_CLUSTER_DIR:-$dir/cluster}")"
  [[ "$cdir" == "$dir"/* ]] || die "TENTACLE_CLUSTER_DIR ($cdir) must be under $dir"
  echo "$cdir"
}

start_cluster() {
  local dir="$1"; shift
  need_root; require_ready "$dir"
  TENTACLE_NETNS=0   # the cluster must be reachable from the host
  [[ -x "$CLUSTER_SH" ]] || die "$CLUSTER_SH not found"
  local cdir; cdir="$(cluster_dir_for "$dir")"
  mkdir -p "$cdir"
  local extra
  extra=$'[osd]\n# tentacle.sh: keep clear of the Pacific host cluster (OSD ports from 6800)\nms_bind_port_min = '"${TENTACLE_OSD_PORT_MIN:-6900}"
  [[ -n "${CEPH_TEST_EXTRA_CONF:-}" ]] && extra+=$'\n'"$CEPH_TEST_EXTRA_CONF"
  local bind_netns=0
  if [[ -n "${CEPH_TEST_NETNS:-}" || -s "$cdir/netns.env" ]]; then
    # The daemons' hosts: made here on the host (ip, nft and tc are not in
    # the chroot); the daemons enter them from inside with nsenter.
    "$CLUSTER_SH" netns-up "$cdir" || die "could not bring the cluster's network up"
    bind_netns=1
  fi
  CEPH_TEST_MON_V2_PORT="${CEPH_TEST_MON_V2_PORT:-3301}" \
  CEPH_TEST_MON_V1_PORT="${CEPH_TEST_MON_V1_PORT:-6790}" \
  CEPH_TEST_EXTRA_CONF="$extra" \
  CEPH_TEST_MIN_MON_RELEASE="${CEPH_TEST_MIN_MON_RELEASE:-tentacle}" \
  CEPH_TEST_STOP_HINT="$SELF stop-cluster $dir" \
  TENTACLE_BIND_NETNS=$bind_netns \
  TENTACLE_BIND="$cdir $HERE:ro ${TENTACLE_BIND:-}" \
    ns_run "$dir" "$CLUSTER_SH" start "$cdir" "$@" || return
  if [[ "${TENTACLE_LEGACY_AUTH:-0}" == 1 ]]; then
    legacy_auth "$dir" "$cdir"
  fi
}

# TENTACLE_LEGACY_AUTH=1: a Tentacle monmap allows only the new cephx cipher
# "aes256k" (key type 2, 32-byte secret, base64 "Ag..."); Pacific..Squid
# clients (and a cephx that only knows AES-128) cannot even parse such keys.
# This allows the old cipher "aes" too (mon_auth_allow_insecure_key=true,
# auth_allowed_ciphers aes,aes256k) and adds client.legacy with an AES-128 key
# ("AQ..."), in DIR/cluster/legacy.keyring plus a matching legacy.conf. The
# three resulting AUTH_INSECURE_* health warnings are muted. client.admin
# keeps its aes256k key.
legacy_auth() {
  local dir="$1" cdir="$2"
  log "TENTACLE_LEGACY_AUTH=1: allowing cipher 'aes' and creating client.legacy (AES-128 key)"
  TENTACLE_BIND="$cdir" ns_run "$dir" /bin/sh -s "$cdir" >&2 <<'EOS' || die "legacy auth setup failed"
set -e
cdir="$1"
c() { timeout 30 ceph --conf "$cdir/ceph.conf" --connect-timeout 10 "$@"; }
c config set mon mon_auth_allow_insecure_key true
if ! c mon dump 2>/dev/null | grep -Eq '^auth_allowed_ciphers (.*[ ,])?aes([ ,]|$)'; then
  c mon set auth_allowed_ciphers aes,aes256k
  i=0; until c -s >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 30 ] || exit 1; sleep 1; done
fi
c auth get-or-create client.legacy mon 'allow *' osd 'allow *' mgr 'allow *' --key_type aes -o "$cdir/legacy.keyring"
for w in AUTH_INSECURE_CLIENT_KEY_TYPE AUTH_INSECURE_KEYS_ALLOWED AUTH_INSECURE_KEYS_CREATABLE; do
  c health mute "$w" --sticky >/dev/null 2>&1 || true
done
EOS
  local fsid mon key
  fsid="$(sed -n 's/^fsid = //p' "$cdir/ceph.conf")"
  mon="$(sed -n 's/^mon_host = //p' "$cdir/ceph.conf")"
  key="$(sed -n 's/^[[:space:]]*key = //p' "$cdir/legacy.keyring" | head -n1)"
  printf '[global]\nfsid = %s\nmon_host = %s\n[client]\nkeyring = %s\n' "$fsid" "$mon" "$cdir/legacy.keyring" >"$cdir/legacy.conf"
  cat <<EOT
# legacy cephx (AES-128 key, usable by Pacific..Squid clients): ceph -c \$CEPH_TEST_LEGACY_CONF -n client.legacy ...
export CEPH_TEST_LEGACY_CONF=$cdir/legacy.conf
export CEPH_TEST_LEGACY_KEYRING=$cdir/legacy.keyring
export CEPH_TEST_LEGACY_ENTITY=client.legacy
export CEPH_TEST_LEGACY_KEY=$key
EOT
}

stop_cluster() {
  local dir="$1"; shift
  need_root
  local cdir; cdir="$(cluster_dir_for "$dir")"
  [[ -d "$cdir" ]] || { log "$cdir does not exist; nothing to stop"; return 0; }
  # On the host: stopping needs only /proc and kill, and the daemons' --conf
  # path is the same string on the host and inside (bound at its own path).
  "$CLUSTER_SH" stop "$cdir" "$@"
}

status() {
  local dir="$1" p
  if is_ready "$dir"; then
    echo "$dir: ready"; sed 's/^/    /' "$dir/$MARKER_NAME"
  elif [[ -e "$dir/$PARTIAL_NAME" ]]; then echo "$dir: half-built (rerun setup)"
  else echo "$dir: not a tentacle chroot"; fi
  echo "processes inside:"
  for p in $(chroot_pids "$dir"); do
    printf '    %s %s\n' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-150)"
  done
  echo "host-namespace mounts under $dir: $(host_mounts_under "$dir" | tr '\n' ' ')"
}

umount_all() {
  local dir="$1" m rc=0
  need_root
  while read -r m; do   # deepest first
    [[ -n "$m" ]] || continue
    if umount "$m" 2>/dev/null || umount -l "$m"; then log "unmounted $m"; else log "could not unmount $m"; rc=1; fi
  done < <(host_mounts_under "$dir" | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-)
  [[ -z "$(host_mounts_under "$dir")" ]] && log "no mounts left under $dir"
  return $rc
}

# ------------------------------------------------------------------ main
cmd="${1:-}"; [[ $# -gt 0 ]] && shift
case "$cmd" in
  __inner)
    d="$1"; shift; inner "$d" "$@" ;;
  setup|start-cluster|stop-cluster|status|umount|shell)
    d="$DEFAULT_DIR"
    if [[ $# -gt 0 && "$1" != -* ]]; then d="$1"; shift; fi
    d="$(canon_dir "$d")"
    case "$cmd" in
      setup) [[ $# -eq 0 ]] || die "setup takes only [DIR]"; setup "$d" ;;
      start-cluster) start_cluster "$d" "$@" ;;
      stop-cluster) stop_cluster "$d" "$@" ;;
      status) status "$d" ;;
      umount) umount_all "$d" ;;
      shell) need_root; require_ready "$d"; ns_exec "$d" bash -l ;;
    esac ;;
  run)
    [[ "${1:-}" == "--" ]] && shift
    [[ $# -gt 0 ]] || die "usage: $PROG run [--] CMD...   (chroot: \$TENTACLE_CHROOT, default /var/tmp/ceph-tentacle)"
    d="$(canon_dir "$DEFAULT_DIR")"
    need_root; require_ready "$d"
    ns_exec "$d" "$@" ;;
  -h|--help|help) sed -n '2,50p' "$SELF"; exit 0 ;;
  "") usage 2 ;;
  *) printf '[%s] ERROR: unknown command "%s"\n' "$PROG" "$cmd" >&2; usage 2 ;;
esac
