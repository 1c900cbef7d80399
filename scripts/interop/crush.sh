#!/usr/bin/env bash
# crush.sh MSGR_BINARY
#
# Our CRUSH mapper against Ceph's, input by input: the maps in
# scripts/interop/crush/*.txt (every bucket algorithm, firstn and indep
# rules, multi-step rules, legacy/bobtail/firefly/jewel tunables, device
# classes, choose_args weight sets with ids) and maps `crushtool --build`
# makes of each algorithm are compiled by Ceph 20's crushtool (and Ceph
# 16's, where the host has it) at test time; for every rule, several
# replica counts, with and without reweighted devices, `crushtool --test
# --show-mappings` for 10000 inputs and `msgr crush` must print the same.
# Needs: scripts/ceph/tentacle.sh setup.
set -euo pipefail
MSGR="$(realpath "${1:?usage: crush.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
CH=/var/tmp/ceph-tentacle
[[ -d $CH/tmp ]] || { echo "crush: no Ceph 20 chroot ($T setup)" >&2; exit 1; }
WORK=$(mktemp -d "$CH/tmp/crush.XXXXXX")   # /tmp/crush.* inside the chroot
IN=/tmp/${WORK##*/}
trap 'rm -rf "$WORK"' EXIT
log() { printf '[crush %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fails=0 checks=0 mappings=0

# compare NAME MAP_ON_HOST MAP_IN_CHROOT TOOL ARGS...: crushtool (TOOL:
# tentacle or host) against msgr crush for the same test arguments.
compare() {
  local name=$1 map=$2 inmap=$3 tool=$4; shift 4
  local theirs="$WORK/$name.theirs" ours="$WORK/$name.ours"
  case $tool in
    tentacle) "$T" run crushtool -i "$inmap" --test --show-mappings "$@" >"$theirs" 2>&1 ;;
    host) crushtool -i "$map" --test --show-mappings "$@" >"$theirs" 2>&1 ;;
  esac
  "$MSGR" crush -i "$map" --test --show-mappings "$@" >"$ours"
  checks=$((checks + 1))
  mappings=$((mappings + $(wc -l <"$ours")))
  if ! diff -q "$theirs" "$ours" >/dev/null; then
    fails=$((fails + 1))
    log "FAIL: $name ($tool crushtool $*): $(diff "$theirs" "$ours" | head -4 | tr '\n' ' ')"
  fi
}

# test_map NAME FILE TOOL: every rule of the compiled map.
test_map() {
  local name=$1 map=$2 tool=$3
  local rules
  rules=$("$T" run crushtool -d "${map/#$WORK/$IN}" | sed -n 's/^\tid \([0-9]*\)$/\1/p' | sort -un)
  [[ -n "$rules" ]] || rules=0
  for r in $rules; do
    for n in 1 3 5; do
      compare "$name-r$r-n$n" "$map" "${map/#$WORK/$IN}" "$tool" --rule "$r" --num-rep "$n" --min-x 0 --max-x 9999
    done
    compare "$name-r$r-reweighted" "$map" "${map/#$WORK/$IN}" "$tool" --rule "$r" --num-rep 4 --min-x 0 --max-x 9999 \
      --weight 1 0.5 --weight 4 0 --weight 7 0.25 --weight 9 0.9
  done
}

for src in "$HERE"/crush/*.txt; do
  name=$(basename "$src" .txt)
  cp "$src" "$WORK/$name.txt"
  "$T" run crushtool -c "$IN/$name.txt" -o "$IN/$name.bin" 2>/dev/null ||
    { log "FAIL: crushtool 20 cannot compile $name"; fails=$((fails + 1)); continue; }
  test_map "$name" "$WORK/$name.bin" tentacle
  if command -v crushtool >/dev/null; then
    if crushtool -c "$WORK/$name.txt" -o "$WORK/$name-16.bin" 2>/dev/null; then
      test_map "$name-16" "$WORK/$name-16.bin" host
    else
      log "FAIL: crushtool 16 cannot compile $name"; fails=$((fails + 1))
    fi
  fi
done
for alg in uniform list tree straw straw2; do
  "$T" run crushtool --build --num_osds 24 host "$alg" 4 rack "$alg" 2 root "$alg" 0 -o "$IN/build-$alg.bin" >/dev/null 2>&1 ||
    { log "FAIL: crushtool --build $alg"; fails=$((fails + 1)); continue; }
  test_map "build-$alg" "$WORK/build-$alg.bin" tentacle
done

if (( fails )); then
  log "$fails of $checks comparisons differ"
  exit 1
fi
log "ok: $checks comparisons, $mappings mappings identical to crushtool's"
