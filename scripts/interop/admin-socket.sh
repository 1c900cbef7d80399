#!/usr/bin/env bash
# admin-socket.sh MSGR_BINARY
#
# `msgr serve --admin-socket PATH` read by Ceph's own `ceph --admin-daemon`,
# Ceph 16's (the host's) and Ceph 20's (the Tentacle chroot's), after
# `msgr bench` sent it a known number of messages, and after Ceph 20's
# ceph_perf_msgr_client sent it some over msgr1:
#  - version, help, config get, perf schema (Ceph's types and units);
#  - perf dump: msgr_recv_messages and msgr_send_messages summed over the
#    workers equal what was sent and answered; bytes counted;
#  - messenger dump: the messenger listed; its connections with peer,
#    state, policy, seqs, queues and counters;
#  - a command it does not have: Ceph's error body.
# Needs: ceph-common (host) and scripts/ceph/tentacle.sh setup.
set -euo pipefail
MSGR="$(realpath "${1:?usage: admin-socket.sh MSGR_BINARY}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
T="$HERE/../ceph/tentacle.sh"
CHROOT="${TENTACLE_CHROOT:-/var/tmp/ceph-tentacle}"
PORT=${PORT:-26990}
LOG="$(mktemp -d /tmp/msgr-admin-socket.XXXXXX)"
# Inside the chroot, /tmp is $CHROOT/tmp: the socket lives there, so both
# CLIs reach it.
NAME="msgr-asok-$$.asok"
ASOK="$CHROOT/tmp/$NAME"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -f "$ASOK"
}
trap cleanup EXIT
fail() { echo "admin-socket: FAIL: $*" >&2; echo "logs in $LOG" >&2; exit 1; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

v2=$((PORT)); v1=$((PORT + 1))
"$MSGR" serve --bind "v2:127.0.0.1:$v2" --bind "v1:127.0.0.1:$v1" --policy stateful-server \
  --admin-socket "$ASOK" --duration 600 >"$LOG/serve.log" 2>&1 &
PIDS+=("$!")
wait_port "$v2" || fail "msgr serve did not listen"
for _ in $(seq 50); do [[ -S "$ASOK" ]] && break; sleep 0.1; done
[[ -S "$ASOK" ]] || fail "no admin socket at $ASOK"

# Traffic: 2000 MOSDOps from our bench (2 connections), 500 from Ceph 20's
# perf client over msgr1; each answered.
"$MSGR" bench --connect "v2:127.0.0.1:$v2/0" --conns 2 --count 2000 --json >"$LOG/bench.json" 2>"$LOG/bench.err" ||
  fail "msgr bench: $(tail -3 "$LOG/bench.err")"
timeout 120 "$T" run ceph_perf_msgr_client "v1:127.0.0.1:$v1" 1 16 500 0 4096 >"$LOG/client.log" 2>&1 ||
  fail "ceph_perf_msgr_client: $(tail -3 "$LOG/client.log")"
grep -q "Total op 500 run time" "$LOG/client.log" || fail "ceph_perf_msgr_client did not finish"

ceph16() { ceph --admin-daemon "$ASOK" "$@"; }
ceph20() { "$T" run ceph --admin-daemon "/tmp/$NAME" "$@"; }
for cli in ceph16 ceph20; do
  $cli version >"$LOG/$cli-version.json" || fail "$cli version"
  $cli help >"$LOG/$cli-help.json" || fail "$cli help"
  $cli config get ms_bind_msgr1 >"$LOG/$cli-config.json" || fail "$cli config get"
  $cli perf schema >"$LOG/$cli-schema.json" || fail "$cli perf schema"
  $cli perf dump >"$LOG/$cli-dump.json" || fail "$cli perf dump"
  $cli -f json perf dump AsyncMessenger::Worker-0 msgr_recv_bytes >"$LOG/$cli-dump-one.json" ||
    fail "$cli perf dump LOGGER COUNTER"
  $cli messenger dump >"$LOG/$cli-messengers.json" || fail "$cli messenger dump"
  $cli messenger dump client connections >"$LOG/$cli-conns.json" || fail "$cli messenger dump client"
  $cli config get no_such_option >"$LOG/$cli-nosuch.txt" || fail "$cli config get (error)"
  python3 - "$LOG" "$cli" <<'PY' || fail "$cli: unexpected answers (logs in $LOG)"
import json, sys
log, cli = sys.argv[1], sys.argv[2]
def load(what):
    return json.load(open(f"{log}/{cli}-{what}.json"))
v = load("version")
assert set(v) == {"version", "release", "release_type"}, v
assert load("help")["perf dump"] == "dump perfcounters value"
assert load("config") == {"ms_bind_msgr1": "true"}
schema = load("schema")
w0 = schema["AsyncMessenger::Worker-0"]
assert w0["msgr_recv_messages"]["type"] == 10 and w0["msgr_recv_bytes"]["units"] == "bytes", w0
assert w0["msgr_running_total_time"]["type"] == 1 and w0["msgr_send_messages_queue_lat"]["type"] == 5
dump = load("dump")
workers = [w for name, w in dump.items() if name.startswith("AsyncMessenger::Worker-")]
total = lambda k: sum(w[k] for w in workers)
# The sessions' logger and the dispatch throttle's, beside the workers'.
assert dump["msgr-sessions"]["msgr_handshake_lat"]["avgcount"] >= 1, dump["msgr-sessions"]
assert dump["throttle-msgr_dispatch_throttler-osd.0"]["max"] > 0, list(dump)
# 2000 from msgr bench, 500 from Ceph's perf client; each answered.
assert total("msgr_recv_messages") == 2500, total("msgr_recv_messages")
assert total("msgr_send_messages") == 2500, total("msgr_send_messages")
assert total("msgr_recv_bytes") > 2500 * 4096, total("msgr_recv_bytes")
assert total("msgr_created_connections") >= 3
one = load("dump-one")
assert list(one) == ["AsyncMessenger::Worker-0"] and list(one["AsyncMessenger::Worker-0"]) == ["msgr_recv_bytes"], one
assert load("messengers") == {"messengers": ["client"]}
m = load("conns")["messenger"]
conns = [c["async_connection"] for c in m["connections"]]
assert m["connections_count"] == len(conns)
for c in conns:
    for k in ("conn_id", "state", "worker_id", "peer", "protocol", "policy", "in_seq", "out_seq",
              "queued_messages", "queued_bytes", "counters"):
        assert k in c, (k, c)
assert conns and all(c["policy"]["server"] for c in conns if c["policy"]), conns
err = open(f"{log}/{cli}-nosuch.txt").read()
assert err.startswith("ERROR: (2) No such file or directory"), err
print(f"admin-socket: {cli}: version, help, config, perf schema/dump (2500 msgs in, 2500 out, "
      f"{total('msgr_recv_bytes')} bytes), messenger dump ({len(conns)} connections), errors: ok")
PY
done
