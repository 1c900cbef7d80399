#!/usr/bin/env bash
# librados-c.sh: our librados.so.2 (crates/librados) against Ceph's, on the
# cluster CEPH_CONF names (its pool `test` must exist). Starts no cluster.
#
# 1. Builds the cdylib (cargo build --release -p msgr-librados) and checks
#    it as a loader sees it: soname librados.so.2, Ceph's version nodes
#    (LIBRADOS_PRIVATE, LIBRADOS_14.2.0), only rados_* functions exported,
#    each bound to the same version as in Ceph's library
#    (/usr/lib/x86_64-linux-gnu/librados.so.2, Debian's librados2).
# 2. Compiles each program of crates/librados/tests/c (basic.c: the
#    synchronous calls; aio.c: rados_aio_*) against Ceph's librados.h
#    (Debian's librados-dev) three times: linked to Ceph's library, to
#    ours, and statically to ours (librados.a).
# 3. Runs them on the cluster and diffs their outputs (what librados
#    returns for each call, values read back, monitor command replies,
#    8 threads on one I/O context; 16 aio ops in flight, their return
#    values and callbacks); each program also checks what does not print
#    the same twice (ids, times, threads). The handles' thread counts are
#    shown.
# 4. Both ways: an object and an xattr written through our library (by
#    synchronous calls, then by aio calls) are read by Ceph's `rados`
#    tool, and the reverse.
#
# Ceph's side runs with Debian's librados (16) on the host; with
# MSGR_TEST_RELEASE=tentacle (Ceph 20 keys are aes256k, which librados 16
# cannot read) it runs inside the Tentacle chroot (scripts/ceph/tentacle.sh,
# TENTACLE_CHROOT or /var/tmp/ceph-tentacle), linked there to Ceph 20's
# librados. Ours always runs on the host.
#
# Usage: CEPH_CONF=/path/ceph.conf [MSGR_TEST_RELEASE=tentacle] \
#          scripts/interop/librados-c.sh
# Needs: cc, objdump, librados-dev (the header) and librados2.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
: "${CEPH_CONF:?set CEPH_CONF to the ceph.conf of the cluster}"
CEPH_LIB=/usr/lib/x86_64-linux-gnu/librados.so.2
SRCDIR="$ROOT/crates/librados/tests/c"
PROGRAMS="basic aio ops watch admin"
WORK="$(mktemp -d /tmp/librados-c.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

echo "== build"
(cd "$ROOT" && CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}" cargo build --release -p msgr-librados)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
cp "$TARGET/release/librados.so" "$WORK/librados.so.2"
OURS="$WORK/librados.so.2"

echo "== symbols"
fail=0
soname="$(objdump -p "$OURS" | awk '$1 == "SONAME" {print $2}')"
[ "$soname" = librados.so.2 ] || { echo "soname: $soname, not librados.so.2"; fail=1; }
for node in LIBRADOS_PRIVATE LIBRADOS_14.2.0; do
    objdump -p "$OURS" | sed -n '/Version definitions/,/Version References/p' | grep -qw "$node" ||
        { echo "version node $node missing"; fail=1; }
done
# Defined dynamic symbols: "VERSION NAME" (objdump -T: version then name
# in the last two columns; "(Base)" for a hidden one).
defined() { objdump -T "$1" | awk '!/\*UND\*/ && NF >= 7 {print $(NF-1), $NF}' | sort -u; }
defined "$OURS" > "$WORK/ours.syms"
defined "$CEPH_LIB" > "$WORK/ceph.syms"
others="$(awk '$2 !~ /^rados_/' "$WORK/ours.syms")"
[ -z "$others" ] || { echo "exported beside rados_*:"; echo "$others"; fail=1; }
n=0
while read -r version name; do
    ceph="$(awk -v n="$name" '$2 == n && $1 !~ /^\(/ {print $1}' "$WORK/ceph.syms")"
    if [ "$ceph" != "$version" ]; then
        echo "$name: ours $version, Ceph's ${ceph:-(absent)}"
        fail=1
    fi
    n=$((n + 1))
done < "$WORK/ours.syms"
echo "$n functions exported, each at Ceph's version node"
[ "$fail" = 0 ] || { echo "FAIL: symbols"; exit 1; }

for prog in $PROGRAMS; do
    SRC="$SRCDIR/$prog.c"
    echo "== compile $prog"
    cc -Wall -Wextra -Werror -pthread -o "$WORK/$prog-ceph" "$SRC" "$CEPH_LIB"
    cc -Wall -Wextra -Werror -pthread -o "$WORK/$prog-ours" "$SRC" "$OURS" -Wl,-rpath,"$WORK"
    ldd "$WORK/$prog-ours" | grep "librados.so.2 => $WORK/librados.so.2" >/dev/null ||
        { echo "$prog-ours does not load our library"; ldd "$WORK/$prog-ours"; exit 1; }
    # Ours again, linked statically (the staticlib: no librados.so at run time).
    cc -Wall -Wextra -Werror -pthread -o "$WORK/$prog-static" "$SRC" "$TARGET/release/librados.a" -ldl -lm -lgcc_s
    if ldd "$WORK/$prog-static" | grep -q rados; then
        echo "$prog-static loads a librados"
        exit 1
    fi

    echo "== run $prog on $CEPH_CONF (${MSGR_TEST_RELEASE:-pacific})"
    if [ "${MSGR_TEST_RELEASE:-}" = tentacle ]; then
        TDIR="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
        bin="librados-c-$$"
        cp "$WORK/$prog-ceph" "$TDIR/tmp/$bin"
        rc=0
        TENTACLE_BIND="$(dirname "$CEPH_CONF")" timeout 300 "$ROOT/scripts/ceph/tentacle.sh" run \
            "/tmp/$bin" > "$WORK/out-ceph" 2> "$WORK/err-ceph" || rc=$?
        rm -f "$TDIR/tmp/$bin"
    else
        rc=0
        timeout 300 "$WORK/$prog-ceph" > "$WORK/out-ceph" 2> "$WORK/err-ceph" || rc=$?
    fi
    [ "$rc" = 0 ] || { echo "Ceph's librados run failed ($rc)"; cat "$WORK/out-ceph" "$WORK/err-ceph"; exit 1; }
    rc=0
    timeout 300 "$WORK/$prog-ours" > "$WORK/out-ours" 2> "$WORK/err-ours" || rc=$?
    [ "$rc" = 0 ] || { echo "our librados run failed ($rc)"; cat "$WORK/out-ours" "$WORK/err-ours"; exit 1; }
    echo "Ceph's librados: $(tr '\n' ' ' < "$WORK/err-ceph")"
    echo "ours:            $(tr '\n' ' ' < "$WORK/err-ours")"
    if ! diff -u "$WORK/out-ceph" "$WORK/out-ours"; then
        echo "FAIL: outputs differ (- Ceph's librados, + ours)"
        exit 1
    fi
    echo "$prog: same output ($(wc -l < "$WORK/out-ours") lines)"
    rc=0
    timeout 300 "$WORK/$prog-static" > "$WORK/out-static" 2> "$WORK/err-static" || rc=$?
    [ "$rc" = 0 ] || { echo "our static run failed ($rc)"; cat "$WORK/out-static" "$WORK/err-static"; exit 1; }
    if ! diff -u "$WORK/out-ceph" "$WORK/out-static"; then
        echo "FAIL: outputs differ (- Ceph's librados, + ours linked statically)"
        exit 1
    fi
    echo "$prog: same output linked statically"
done

echo "== both ways: ours writes, Ceph's rados reads; and the reverse"
RADOS="${MSGR_TEST_RADOS:-rados -c $CEPH_CONF}"
obj="librados-c-both-$$"
ours() { "$WORK/basic-ours" "$@"; }
"$WORK/basic-ours" put "$obj" "written by ours"
"$WORK/basic-ours" setxattr "$obj" user.by "ours"
got="$(eval "$RADOS -p test get $obj -")"
[ "$got" = "written by ours" ] || { echo "FAIL: rados get read '$got'"; exit 1; }
got="$(eval "$RADOS -p test getxattr $obj user.by")"
[ "$got" = ours ] || { echo "FAIL: rados getxattr read '$got'"; exit 1; }
eval "$RADOS -p test rm $obj"
eval "echo -n 'written by rados' | $RADOS -p test put $obj -"
eval "$RADOS -p test setxattr $obj user.by rados"
got="$(ours get "$obj")"
[ "$got" = "written by rados" ] || { echo "FAIL: ours read '$got'"; exit 1; }
got="$(ours getxattr "$obj" user.by)"
[ "$got" = rados ] || { echo "FAIL: ours getxattr read '$got'"; exit 1; }
ours rm "$obj"
if eval "$RADOS -p test stat $obj" 2>/dev/null; then
    echo "FAIL: rados still finds $obj after ours removed it"
    exit 1
fi
# The same through aio calls (tests/c/aio.c's one-call mode).
aio() { "$WORK/aio-ours" "$@"; }
aio put "$obj" "aio by ours"
aio append "$obj" "+more"
got="$(eval "$RADOS -p test get $obj -")"
[ "$got" = "aio by ours+more" ] || { echo "FAIL: rados get read '$got' (aio)"; exit 1; }
eval "$RADOS -p test rm $obj"
eval "echo -n 'aio read of rados' | $RADOS -p test put $obj -"
got="$(aio get "$obj")"
[ "$got" = "aio read of rados" ] || { echo "FAIL: ours aio read '$got'"; exit 1; }
got="$(aio stat "$obj")"
[ "$got" = 17 ] || { echo "FAIL: ours aio stat '$got'"; exit 1; }
aio rm "$obj"
if eval "$RADOS -p test stat $obj" 2>/dev/null; then
    echo "FAIL: rados still finds $obj after ours removed it (aio)"
    exit 1
fi
if aio stat "$obj" 2>/dev/null; then
    echo "FAIL: ours aio stat finds $obj removed"
    exit 1
fi
echo "OK"
