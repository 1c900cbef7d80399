#!/usr/bin/env bash
# netns.sh: hosts on one machine, in network namespaces joined by a switch,
# with the faults a real network has (partitions, one-way loss, links down,
# limited bandwidth). Nothing leaves the machine: every address lives only in
# namespaces this script makes and removes.
#
#   netns.sh up NET HOSTS [SUBNET]   make NET-sw (a bridge) and NET-h1 .. NET-hHOSTS,
#                                    host I at SUBNET.I/24 (SUBNET default 10.77.0)
#   netns.sh down NET [--kill]       remove every namespace of NET (and so its links);
#                                    --kill first stops the processes still in them
#   netns.sh addr NET I              print host I's address
#   netns.sh exec NET I CMD...       run CMD in host I's namespace
#   netns.sh link NET I down|up      take host I's link down at the switch (the host
#                                    keeps its address and routes; nothing gets through)
#   netns.sh cut NET I J [oneway]    drop packets from I to J, and from J to I unless
#                                    `oneway` (nftables in the receiver's input: the
#                                    sender sees no error, as on a lossy path)
#   netns.sh heal NET [I J]          undo `cut` between I and J (both ways), or every
#                                    cut and every link down of NET
#   netns.sh shape NET I RATE        limit host I's link to RATE both ways (tc tbf,
#                                    e.g. 1gbit, 10gbit); RATE `none` removes it
#   netns.sh status NET              links, cuts and shaping of NET
#
# The switch namespace is NET-sw with bridge br0; host I's end of its veth pair
# is eth0 in NET-hI, the switch's end is hI in NET-sw. This kernel has no netem,
# so links add no delay, and no test here needs one: the failures tested are
# losses (cuts, one way or both, links down), which the path check sees in
# TCP's own retransmission state whatever the round trip; the one timer that
# must exceed the round trip (Timeouts::probe, 1 s) is far above any LAN's.
set -euo pipefail

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
die() { echo "netns.sh: $*" >&2; exit 1; }
usage() { sed -n '6,21p' "$SELF" >&2; exit 2; }

[[ $(id -u) == 0 ]] || die "needs root (ip netns, tc, nft)"
for bin in ip tc nft; do
  command -v "$bin" >/dev/null || die "'$bin' not found (apt: iproute2 nftables)"
done

sw() { echo "$1-sw"; }
host() { echo "$1-h$2"; }
subnet_file() { echo "/run/netns-sh.$1.subnet"; }
addr() {
  local f; f="$(subnet_file "$1")"
  [[ -f $f ]] || die "network '$1' is not up"
  echo "$(cat "$f").$2"
}
namespaces() {  # the namespaces of NET that exist
  ip netns list | awk '{print $1}' | grep "^$1-\(sw\|h[0-9]*\)$" || true
}
hosts() {  # the host numbers of NET that exist
  ip netns list | sed -n "s/^$1-h\([0-9]*\)\( .*\)\?$/\1/p" | sort -n
}
in_host() { local net=$1 i=$2; shift 2; ip netns exec "$(host "$net" "$i")" "$@"; }

cmd_up() {
  local net=$1 n=$2 subnet=${3:-10.77.0}
  [[ $net =~ ^[a-z][a-z0-9]{0,9}$ ]] || die "NET must be a short lowercase name, not '$net'"
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 200 ]] || die "HOSTS must be 1..200, not '$n'"
  if ip netns list | grep -q "^$net-"; then
    local ns busy=""
    for ns in $(namespaces "$net"); do
      [[ -z $(ip netns pids "$ns" 2>/dev/null) ]] || busy+=" $ns"
    done
    [[ -z $busy ]] || die "network '$net' is in use (processes in$busy): stop them, or pick another name"
    cmd_down "$net"
  fi
  ip netns add "$(sw "$net")"
  ip -n "$(sw "$net")" link set lo up
  ip -n "$(sw "$net")" link add br0 type bridge
  ip -n "$(sw "$net")" link set br0 up
  echo "$subnet" >"$(subnet_file "$net")"
  local i h
  for ((i = 1; i <= n; i++)); do
    h="$(host "$net" "$i")"
    ip netns add "$h"
    ip link add eth0 netns "$h" type veth peer name "h$i" netns "$(sw "$net")"
    ip -n "$(sw "$net")" link set "h$i" master br0 up
    ip -n "$h" link set lo up
    ip -n "$h" addr add "$subnet.$i/24" dev eth0
    ip -n "$h" link set eth0 up
    # Faults are rules in this table's input chain (see cmd_cut).
    in_host "$net" "$i" nft -f - <<EOF
table inet netns_faults {
  chain input { type filter hook input priority 0; policy accept; }
}
EOF
  done
  echo "netns.sh: $net up: $n hosts at $subnet.1 .. $subnet.$n" >&2
}

cmd_down() {
  local net=$1 kill=${2:-} ns
  if [[ $kill == --kill ]]; then
    local pids
    pids="$(for ns in $(namespaces "$net"); do ip netns pids "$ns"; done)"
    if [[ -n $pids ]]; then
      # shellcheck disable=SC2086
      kill $pids 2>/dev/null || true
      sleep 0.3
      # shellcheck disable=SC2086
      kill -9 $pids 2>/dev/null || true
    fi
  fi
  for ns in $(namespaces "$net"); do
    # Processes still in a namespace keep it (and its addresses) alive:
    # they are the caller's to stop; say so rather than kill them.
    local pids; pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
    [[ -z $pids ]] || echo "netns.sh: warning: processes still in $ns: $pids" >&2
    ip netns del "$ns"
  done
  rm -f "$(subnet_file "$net")"
}

cmd_link() {
  local net=$1 i=$2 state=$3
  [[ $state == up || $state == down ]] || usage
  ip -n "$(sw "$net")" link set "h$i" "$state"
}

cmd_cut() {
  local net=$1 i=$2 j=$3 mode=${4:-both}
  in_host "$net" "$j" nft add rule inet netns_faults input ip saddr "$(addr "$net" "$i")" drop \
    comment "\"from-$i\""
  if [[ $mode != oneway ]]; then
    in_host "$net" "$i" nft add rule inet netns_faults input ip saddr "$(addr "$net" "$j")" drop \
      comment "\"from-$j\""
  fi
}

uncut() {  # uncut NET AT FROM: remove AT's drops of packets from FROM
  local net=$1 at=$2 from=$3 handle
  for handle in $(in_host "$net" "$at" nft -a list chain inet netns_faults input |
    sed -n "s/.*comment \"from-$from\" # handle \([0-9]*\).*/\1/p"); do
    in_host "$net" "$at" nft delete rule inet netns_faults input handle "$handle"
  done
}

cmd_heal() {
  local net=$1 i h
  if [[ $# -ge 3 ]]; then
    uncut "$net" "$2" "$3"
    uncut "$net" "$3" "$2"
    return
  fi
  for i in $(hosts "$net"); do
    in_host "$net" "$i" nft flush chain inet netns_faults input
    ip -n "$(sw "$net")" link set "h$i" up
  done
}

cmd_shape() {
  local net=$1 i=$2 rate=$3
  local -a ends=("$(host "$net" "$i") eth0" "$(sw "$net") h$i")
  local end ns dev
  for end in "${ends[@]}"; do
    read -r ns dev <<<"$end"
    tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
    if [[ $rate != none ]]; then
      # burst: at least one timer tick's worth at the rate (HZ 1000) and a
      # few 64 KiB GSO segments; latency bounds the queue as a switch's
      # buffer would.
      tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst 1mb latency 20ms
    fi
  done
}

cmd_status() {
  local net=$1 i
  for i in $(hosts "$net"); do
    printf 'h%s %s link=%s cuts=[%s] qdisc=[%s]\n' "$i" "$(addr "$net" "$i")" \
      "$(ip -n "$(sw "$net")" -br link show "h$i" | awk '{print $2}')" \
      "$(in_host "$net" "$i" nft list chain inet netns_faults input | grep -o 'from-[0-9]*' | tr '\n' ' ')" \
      "$(tc -n "$(host "$net" "$i")" qdisc show dev eth0 | head -1)"
  done
}

[[ $# -ge 2 ]] || usage
cmd=$1; shift
case $cmd in
up) [[ $# -ge 2 ]] || usage; cmd_up "$@" ;;
down) cmd_down "$@" ;;
addr) [[ $# -eq 2 ]] || usage; addr "$1" "$2" ;;
exec) [[ $# -ge 3 ]] || usage; in_host "$@" ;;
link) [[ $# -eq 3 ]] || usage; cmd_link "$@" ;;
cut) [[ $# -ge 3 ]] || usage; cmd_cut "$@" ;;
heal) cmd_heal "$@" ;;
shape) [[ $# -eq 3 ]] || usage; cmd_shape "$@" ;;
status) cmd_status "$1" ;;
*) usage ;;
esac
