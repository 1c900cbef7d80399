#!/usr/bin/env bash
# install-deps.sh: install the host packages our Ceph test scripts need, on a
# fresh Debian 12 (bookworm) machine, as root.
#
#   ceph-mon ceph-osd ceph-common  Ceph 16.2.x "Pacific" mon, OSD and CLIs (ceph, rados,
#                                  ceph-authtool, monmaptool) for pacific-cluster.sh
#   ceph-mgr                       a mgr for pacific-cluster.sh's CEPH_TEST_MGR=1 (pool and
#                                  cluster usage, mgr commands)
#   uuid-runtime                   uuidgen (cluster fsid, OSD uuid)
#   tcpdump                        packet captures (testdata/captures)
#   debootstrap                    builds the Ceph 20 "Tentacle" chroot (tentacle.sh setup)
#   librados-dev gcc               Ceph's librados.h and a C compiler: C programs built
#                                  against Ceph's header run on Ceph's librados and ours
#                                  (scripts/interop/librados-c.sh, scripts/bench/)
#   python3-rados gdb              Ceph's Python rados module, run on ours and Ceph's, gdb
#                                  counting its calls (scripts/interop/librados-python.sh)
#   nftables iproute2 iperf3       hosts in network namespaces with partitions and shaped
#                                  links (scripts/net/netns.sh), iperf3 the link's rate
#
# Idempotent: if every package is already installed it does nothing (no
# apt-get update), so re-runs take well under a second. It starts no
# daemons (the Debian ceph packages' systemd units are not used by our scripts).
set -euo pipefail

PKGS=(ceph-mon ceph-osd ceph-mgr ceph-common uuid-runtime tcpdump debootstrap librados-dev gcc python3-rados gdb nftables iproute2 iperf3)

[[ $EUID -eq 0 ]] || { echo "install-deps.sh: must run as root" >&2; exit 1; }

missing=()
for p in "${PKGS[@]}"; do
  st="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
  [[ "$st" == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps.sh: all installed (${PKGS[*]})" >&2
  exit 0
fi

echo "install-deps.sh: installing ${missing[*]}" >&2
t0=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps.sh: done in $((SECONDS - t0)) s" >&2
