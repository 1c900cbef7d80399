#!/usr/bin/env bash
# live-decode.sh MSGR_BINARY
#
# Interop test of `msgr decode` against live Ceph 16 and Ceph 20 daemons:
# records fresh crc-mode captures of `ceph -s`, `rados put/get` and
# ceph_perf_msgr_client -> ceph_perf_msgr_server (scripts/ceph/capture-msgr2.sh
# starts and stops the clusters), then requires `msgr decode --json` to read
# every one with no problem, every frame of every connection right: both
# banners, HELLO both ways, the auth exchange, idents, and the message types
# each client command must produce. A connection closed during its
# handshake with no message on it either way (Ceph 16's monitor may answer a
# cephx step with AUTH_BAD_METHOD, and its client then authenticates on a new
# connection) is decoded like the others and named in the result, not held
# to the whole handshake.
# Needs: scripts/ceph/install-deps.sh and scripts/ceph/tentacle.sh setup.
set -euo pipefail
MSGR="$(realpath "${1:?usage: live-decode.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
OUT="$(mktemp -d /tmp/msgr-live-decode.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT

NAMES=(pacific-ceph-s pacific-rados-put-get tentacle-ceph-s tentacle-rados-put-get tentacle-perf-msgr)
"$HERE/../ceph/capture-msgr2.sh" "$OUT" "${NAMES[@]}" > "$OUT/capture.log" 2>&1 || {
  tail -30 "$OUT/capture.log" >&2; echo "live-decode: capturing failed" >&2; exit 1; }

fail=0
for name in "${NAMES[@]}"; do
  if ! "$MSGR" decode --json "$OUT/$name.pcap" > "$OUT/$name.jsonl"; then
    echo "live-decode: msgr decode reported problems in $name:" >&2
    grep '"event":"error"' "$OUT/$name.jsonl" >&2 || true
    fail=1; continue
  fi
  python3 - "$name" "$OUT/$name.jsonl" <<'PY' || fail=1
import json, sys
name, path = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open(path)]
frames = [r for r in recs if "tag" in r]
conns = {r["conn"] for r in recs if r.get("event") == "connection"}
problems = []
# Connections closed during their handshake, with no message (see above).
abandoned = []
for c in sorted(conns):
    mine = [f for f in frames if f["conn"] == c]
    carried = any(f["tag"] == "MESSAGE" for f in mine)
    missing = []
    for d in ("c2s", "s2c"):
        tags = [f["tag"] for f in mine if f["dir"] == d]
        banners = [r for r in recs if r.get("event") == "banner" and r["conn"] == c and r["dir"] == d]
        if not banners:
            problems.append(f"conn {c} {d}: no banner")
        if tags[:1] != ["HELLO"]:
            problems.append(f"conn {c} {d}: first frame {tags[:1]} is not HELLO")
        want = ["AUTH_SIGNATURE"] + (["CLIENT_IDENT"] if d == "c2s" else ["SERVER_IDENT"])
        missing += [f"conn {c} {d}: no {t}" for t in want if t not in tags]
    if missing and not carried:
        abandoned.append(f"conn {c} ({', '.join(f['dir'] + ' ' + f['tag'] for f in mine)})")
    else:
        problems += missing
    if any(f["encrypted"] for f in mine):
        problems.append(f"conn {c}: encrypted frame in a crc capture")
types = [f["msg_type"] for f in frames if f["tag"] == "MESSAGE"]
need = {
    "ceph-s": {5: 1, 15: 1, 4: 1, 62: 1, 50: 1, 51: 1, 41: 1},
    "rados-put-get": {42: 2, 43: 2, 4: 1},
    "perf-msgr": {42: 10, 43: 1},
}
for suffix, counts in need.items():
    if name.endswith(suffix):
        for t, n in counts.items():
            if types.count(t) < n:
                problems.append(f"{types.count(t)} messages of type {t}, want >= {n}")
if name.startswith("tentacle") and "COMPRESSION_DONE" not in {f["tag"] for f in frames}:
    problems.append("Ceph 20 connection without the compression handshake")
if problems:
    print(f"live-decode: {name}: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
closed = f"; closed during the handshake: {'; '.join(abandoned)}" if abandoned else ""
print(f"live-decode: {name}: {len(conns)} connections, {len(frames)} frames, "
      f"{len(types)} messages, all decoded{closed}")
PY
done
exit $fail
