#!/usr/bin/env bash
# librados-python.sh: Ceph's own Python `rados` module and `ceph` CLI,
# unchanged, on our librados.so.2 (crates/librados), against Ceph's
# librados, on the cluster CEPH_CONF names. Starts no cluster.
#
# 1. Builds the cdylib and puts it, as librados.so.2, first in the
#    loader's path (LD_LIBRARY_PATH); checks that `import rados` then
#    loads ours (every function the module imports resolved at once).
# 2. Runs crates/librados/tests/python/rados_module.py (pools, objects,
#    xattrs, omap through WriteOpCtx/ReadOpCtx, snapshots, watch/notify,
#    locks, aio with callbacks, listing with namespaces, commands, cluster
#    log, service registration, every option's value) on Ceph's librados,
#    then on ours, and diffs the two outputs.
# 3. Runs it once more on ours under gdb (count_calls.py), counting the
#    calls into each C function the module imports: each must be called,
#    but for the few the module imports and cannot call (listed below).
# 4. With MSGR_TEST_OSD_RESTART (a command restarting the OSD whose id it
#    is given), aio writes (tests/python/aio_restart.py) while osd.1
#    restarts, on each library: every completion fires exactly once, with
#    the results librados gives, and every object reads back.
# 5. The `ceph` CLI on ours and on Ceph's: ceph -s, health detail,
#    osd pool create/ls/rm, osd dump, tell osd.0 version, df; their JSON
#    compared where the cluster's state does not move between the runs.
#
# With MSGR_TEST_RELEASE=tentacle (Ceph 20) steps 2, 4 and 5 run inside the
# Tentacle chroot with Ceph 20's module and CLI (and our library copied
# in). Step 3 runs with pacific only: it counts what Debian's module (the
# only one gdb runs) calls, which does not depend on the cluster's
# release, and step 2 already ran the module on ours against Ceph 20.
#
# Usage: CEPH_CONF=/path/ceph.conf [MSGR_TEST_RELEASE=tentacle] \
#          scripts/interop/librados-python.sh
# Needs: python3-rados and ceph-common (Debian's), gdb.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
: "${CEPH_CONF:?set CEPH_CONF to the ceph.conf of the cluster}"
RELEASE="${MSGR_TEST_RELEASE:-pacific}"
PYDIR="$ROOT/crates/librados/tests/python"
OPTIONS="$ROOT/crates/config/data/options.tsv"
PYMOD=/usr/lib/python3/dist-packages/rados.cpython-311-x86_64-linux-gnu.so
WORK="$(mktemp -d /tmp/librados-python.XXXXXX)"
TDIR="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
INNER="/tmp/librados-python-$$"
cleanup() { rm -rf "$WORK"; [ "$RELEASE" != tentacle ] || rm -rf "$TDIR$INNER"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

echo "== build"
(cd "$ROOT" && CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}" cargo build --release -p msgr-librados)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$WORK/lib"
cp "$TARGET/release/librados.so" "$WORK/lib/librados.so.2"
# The module's functions: what it imports from librados.
objdump -T "$PYMOD" | awk '/\*UND\*/ && $NF ~ /^rados_/ {print $NF}' | sort -u > "$WORK/imported"
echo "Debian's module imports $(wc -l < "$WORK/imported") functions"

# Runs CMD... with Ceph's library ("ceph") or ours ("ours"), on the host
# or in the chroot as the release says.
run_with() {
    local which=$1; shift
    if [ "$RELEASE" = tentacle ]; then
        local env=()
        [ "$which" = ours ] && env=(env "LD_LIBRARY_PATH=$INNER/lib")
        TENTACLE_BIND="$(dirname "$CEPH_CONF")" timeout 600 "$ROOT/scripts/ceph/tentacle.sh" run \
            "${env[@]}" "$@"
    elif [ "$which" = ours ]; then
        LD_LIBRARY_PATH="$WORK/lib" timeout 600 "$@"
    else
        timeout 600 "$@"
    fi
}
if [ "$RELEASE" = tentacle ]; then
    mkdir -p "$TDIR$INNER"
    cp -a "$WORK/lib" "$PYDIR/rados_module.py" "$TDIR$INNER/"
    # Our library's option defaults are Ceph 16's (Debian's librados, the
    # one it replaces); Ceph 20's differ for a few dozen options, so the
    # options' values are compared on Ceph 16 only ("-": none listed).
    SCRIPT="$INNER/rados_module.py" OPTS="-" PY=python3
else
    SCRIPT="$PYDIR/rados_module.py" OPTS="$OPTIONS" PY=/usr/bin/python3
fi

CEPH=(ceph -c "$CEPH_CONF")
[ "$RELEASE" = tentacle ] || CEPH=(/usr/bin/ceph -c "$CEPH_CONF")

echo "== import rados on ours ($RELEASE)"
which_lib='import rados, re; print([l.split()[-1] for l in open("/proc/self/maps") if re.search(r"librados\.so", l)][0])'
got="$(run_with ours "$PY" -c "$which_lib")"
case "$got" in
    "$WORK/lib/librados.so.2" | "$INNER/lib/librados.so.2") echo "loaded $got" ;;
    *) fail "import rados loaded '$got', not ours" ;;
esac

echo "== Python's rados module: Ceph's librados, then ours ($RELEASE)"
rc=0
run_with ceph "$PY" "$SCRIPT" "$CEPH_CONF" "c$$" "$OPTS" > "$WORK/out-ceph" 2> "$WORK/err-ceph" || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/out-ceph" "$WORK/err-ceph" | tail -30; fail "the module on Ceph's librados failed ($rc)"; }
rc=0
run_with ours "$PY" "$SCRIPT" "$CEPH_CONF" "o$$" "$OPTS" > "$WORK/out-ours" 2> "$WORK/err-ours" || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/out-ours" "$WORK/err-ours" | tail -30; fail "the module on ours failed ($rc)"; }
if ! diff -u "$WORK/out-ceph" "$WORK/out-ours"; then
    fail "the module's results differ (- Ceph's librados, + ours)"
fi
echo "same results: $(grep -vc '^conf_get ' "$WORK/out-ours") calls' results and $(grep -c '^conf_get ' "$WORK/out-ours") options' values"

if [ "$RELEASE" != tentacle ]; then
    echo "== every imported function called (ours, under gdb, Debian's module)"
    # Imported by the module but not reachable through its Python API:
    # Rados(context=) takes a rados_config_t capsule, which no Python API
    # hands out (tests/c/admin.c calls it).
    NOT_CALLABLE="rados_create_with_context"
    rc=0
    MSGR_COUNT_SYMBOLS="$WORK/imported" MSGR_COUNT_OUT="$WORK/counts" LD_LIBRARY_PATH="$WORK/lib" \
        timeout 900 gdb -q -batch -x "$PYDIR/count_calls.py" --args \
        /usr/bin/python3 "$PYDIR/rados_module.py" "$CEPH_CONF" "g$$" "$OPTIONS" \
        > "$WORK/out-gdb" 2> "$WORK/err-gdb" || rc=$?
    [ "$rc" = 0 ] || { tail -n 30 "$WORK/out-gdb" "$WORK/err-gdb"; fail "the module under gdb failed ($rc)"; }
    head -1 "$WORK/counts" | grep -q "$WORK/lib/librados.so.2" || fail "gdb saw $(head -1 "$WORK/counts")"
    missing=""
    while read -r n name; do
        case "$name" in ''|'#') continue ;; esac
        if [ "$n" = 0 ] && [[ " $NOT_CALLABLE " != *" $name "* ]]; then missing="$missing $name"; fi
    done < <(grep -v '^#' "$WORK/counts")
    [ -z "$missing" ] || fail "never called:$missing"
    called=$(grep -v '^#' "$WORK/counts" | awk '$1 > 0' | wc -l)
    echo "$called of $(wc -l < "$WORK/imported") imported functions called ($(awk '!/^#/ {s += $1} END {print s}' "$WORK/counts") calls); not callable from Python: $NOT_CALLABLE"
fi

if [ -n "${MSGR_TEST_OSD_RESTART:-}" ]; then
    echo "== aio writes while osd.1 restarts: Ceph's librados, then ours ($RELEASE)"
    [ "$RELEASE" != tentacle ] || cp "$PYDIR/aio_restart.py" "$TDIR$INNER/"
    ASCRIPT="$(dirname "$SCRIPT")/aio_restart.py"
    for which in ceph ours; do
        run_with "$which" "$PY" "$ASCRIPT" "$CEPH_CONF" test 20 "r$which$$" \
            > "$WORK/restart-$which" 2> "$WORK/restart-$which.err" &
        pid=$!
        sleep 5
        fsid="$(run_with ceph "${CEPH[@]}" fsid)"
        eval "$MSGR_TEST_OSD_RESTART 1" || fail "restarting osd.1"
        # The cluster scripts start over when an OSD did not stop cleanly:
        # then no client could finish, so say so rather than wait.
        [ "$(run_with ceph "${CEPH[@]}" fsid)" = "$fsid" ] ||
            { kill "$pid" 2>/dev/null; fail "restarting osd.1 recreated the cluster"; }
        rc=0; wait "$pid" || rc=$?
        [ "$rc" = 0 ] || { tail -n 20 "$WORK/restart-$which" "$WORK/restart-$which.err"; fail "aio writes on $which under a restart ($rc)"; }
        echo "$which: $(tail -1 "$WORK/restart-$which.err")"
    done
    cat "$WORK/restart-ours"
    diff -u "$WORK/restart-ceph" "$WORK/restart-ours" ||
        fail "aio under an OSD restart: results differ (- Ceph's librados, + ours)"
    grep -q "fired once: True" "$WORK/restart-ours" || fail "a completion did not fire exactly once"
fi

echo "== the ceph CLI: Ceph's librados, then ours ($RELEASE)"
# Prints what compares of each command's output: keys and stable values.
summarize() {
    python3 -c '
import json, sys
cmd, text = sys.argv[1], sys.stdin.read()
if cmd in ("pool-create", "pool-rm"):
    print(cmd, repr(text.strip()[:0]))
    sys.exit()
d = json.loads(text) if text.strip().startswith(("{", "[")) else text
if cmd == "status":
    print(cmd, sorted(d), d["fsid"] != "", sorted(d["health"]))
elif cmd == "health":
    print(cmd, sorted(d), d["status"][:7])
elif cmd == "pool-ls":
    print(cmd, "test" in d, any(p.startswith("cli-") for p in d))
elif cmd == "osd-dump":
    print(cmd, sorted(d)[:12], sorted(p["pool_name"] for p in d["pools"] if p["pool_name"] == "test"))
elif cmd == "tell":
    print(cmd, sorted(d))
elif cmd == "df":
    print(cmd, sorted(d), sorted(d["stats"]), [p["name"] for p in d["pools"] if p["name"] == "test"])
' "$1"
}
cli() {
    local which=$1 pool="cli-$1-$$"
    local -a steps=(
        "status:-s -f json"
        "health:health detail -f json"
        "pool-create:osd pool create $pool 8"
        "pool-ls:osd pool ls -f json"
        "osd-dump:osd dump -f json"
        "tell:tell osd.0 version -f json"
        "df:df -f json"
        "pool-rm:osd pool rm $pool $pool --yes-i-really-really-mean-it"
    )
    local s name args t0 t1
    for s in "${steps[@]}"; do
        name=${s%%:*} args=${s#*:}
        t0=$(date +%s%N)
        # shellcheck disable=SC2086 # args are words
        run_with "$which" "${CEPH[@]}" $args > "$WORK/cli-$which-$name" 2> "$WORK/cli-$which-$name.err" ||
            { cat "$WORK/cli-$which-$name.err"; fail "ceph $args on $which failed"; }
        t1=$(date +%s%N)
        [ "$name" != status ] || echo "ceph -s on $which: $(( (t1 - t0) / 1000000 )) ms"
        summarize "$name" < "$WORK/cli-$which-$name"
    done
}
cli ceph > "$WORK/cli-ceph"
cli ours > "$WORK/cli-ours"
grep "^ceph -s" "$WORK/cli-ceph" "$WORK/cli-ours" | sed 's/.*:ceph/ceph/'
if ! diff -u <(grep -v '^ceph -s' "$WORK/cli-ceph") <(grep -v '^ceph -s' "$WORK/cli-ours"); then
    fail "the ceph CLI's outputs differ (- Ceph's librados, + ours)"
fi
echo "ceph CLI: $(grep -vc '^ceph -s' "$WORK/cli-ours") commands alike"
echo "OK"
