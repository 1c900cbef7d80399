"""Python's `rados` module (Ceph's own binding, unchanged) on a librados:
run once on Ceph's librados and once on ours (LD_LIBRARY_PATH), on the
same cluster; scripts/interop/librados-python.sh diffs the two outputs.

Every line printed is what a call returned, made deterministic (ids,
versions, times and addresses are checked here and printed as facts).
The calls cover every C function the module imports (the script checks
that under gdb). Usage: rados_module.py CEPH_CONF RUN_TAG OPTIONS_TSV
"""
import json
import re
import subprocess
import sys
import threading
import time

import rados

CONF, TAG, OPTIONS = sys.argv[1], sys.argv[2], sys.argv[3]
MAIN = threading.get_ident()


def out(name, value):
    print(f"{name}: {value}", flush=True)


def step(name, fn, show=repr):
    try:
        v = fn()
    except rados.Error as e:
        out(name, f"ERR {type(e).__name__} errno={getattr(e, 'errno', None)}")
        return None
    except Exception as e:  # what the module raised, as a fact to compare
        out(name, f"ERR {type(e).__name__}")
        return None
    out(name, show(v))
    return v


def librados_path():
    """Which librados this process loaded."""
    for line in open("/proc/self/maps"):
        if re.search(r"librados\.so", line):
            return line.split()[-1]
    return ""


# A child interpreter's ping, on a handle of its own.
PING = """import json, sys, rados
c = rados.Rados(name="client.admin", clustername="ceph", conffile=sys.argv[1])
c.connect()
print(json.dumps(sorted(json.loads(c.ping_monitor("a")))))
c.shutdown()
"""


def ping_monitor():
    """ping_monitor's keys, on a handle of its own with no options changed.

    Debian's librados 16 crashes (SIGSEGV) in ping_monitor now and then, on
    any handle (one call in three on the configured one, and in a CI run on
    a fresh one): on Ceph's library (a system path) the call runs in a
    child interpreter, tried up to 5 times while it dies of a signal, so
    that the reference's crash does not end the comparison. On ours it runs
    in this process, where gdb counts the call."""
    if not librados_path().startswith("/usr/"):
        cp = rados.Rados(name="client.admin", clustername="ceph", conffile=CONF)
        cp.connect()
        try:
            return sorted(json.loads(cp.ping_monitor("a")))
        finally:
            cp.shutdown()
    for _ in range(5):
        r = subprocess.run([sys.executable, "-c", PING, CONF],
                           capture_output=True, text=True, timeout=120)
        if r.returncode >= 0:  # negative: killed by that signal
            break
    if r.returncode != 0:
        raise RuntimeError(f"ping_monitor's child: {r.returncode} {r.stderr[-300:]}")
    return json.loads(r.stdout)


def wait_until(what, cond, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    out("timeout", what)
    return False


# --- configuration, before connecting ------------------------------------
c = rados.Rados(name="client.admin", clustername="ceph", conffile=CONF,
                conf_defaults={"rados_osd_op_timeout": "30"})
step("version", lambda: str(c.version()))
names = [] if OPTIONS == "-" else [
    line.split("\t", 1)[0] for line in open(OPTIONS) if not line.startswith("#")]
for n in names:
    # Options that name this process (pid-dependent) are skipped.
    if n in ("admin_socket", "log_file", "pid_file"):
        continue
    out(f"conf_get {n}", repr(c.conf_get(n)))
step("get of an unknown option", lambda: c.conf_get("no_such_option"))
step("conf_set unknown", lambda: c.conf_set("no_such_option", "1"))
step("conf_set bad int", lambda: c.conf_set("osd_pool_default_size", "abc"))
step("conf_set secs", lambda: (c.conf_set("client_mount_timeout", "5m"),
                               c.conf_get("client_mount_timeout")))
step("conf_set float", lambda: (c.conf_set("mon_client_ping_interval", "3"),
                                c.conf_get("mon_client_ping_interval")))
step("conf_set size", lambda: (c.conf_set("objecter_inflight_op_bytes", "100M"),
                               c.conf_get("objecter_inflight_op_bytes")))
step("conf_parse_argv", lambda: c.conf_parse_argv(
    ["prog", "--debug-ms", "0", "--id", "x", "--format", "json", "--log_to_stderr=false",
     "--no-log-to-syslog", "osd", "--ms_crc_data=true", "--", "--debug_ms", "5"]))
step("options after argv", lambda: (c.conf_get("debug_ms"), c.conf_get("log_to_syslog")))
step("conf_parse_argv bad", lambda: c.conf_parse_argv(["--objecter_inflight_ops", "many"]))
import os
os.environ["MSGR_TEST_ARGS"] = "--rados_mon_op_timeout 60 leftover --client_mount_timeout=30"
step("conf_parse_env", lambda: (c.conf_parse_env("MSGR_TEST_ARGS"),
                                c.conf_get("rados_mon_op_timeout"),
                                c.conf_get("client_mount_timeout")))
step("conf_read_file missing", lambda: c.conf_read_file("/nonexistent/ceph.conf"))
step("get_instance_id before connect", c.get_instance_id)
step("pool_lookup before connect", lambda: c.pool_lookup("test"))

# --- connected ------------------------------------------------------------
step("connect", lambda: c.connect(timeout=30))
step("state", lambda: c.state)
step("ping_monitor", ping_monitor)
step("connect twice", lambda: c.connect())
step("instance id > 0", lambda: c.get_instance_id() > 0)
fsid = json.loads(c.mon_command(json.dumps({"prefix": "fsid", "format": "json"}), b"")[1])["fsid"]
step("get_fsid is the monitors'", lambda: c.get_fsid() == fsid)
step("get_addrs", lambda: re.sub(r"\d+", "N", c.get_addrs()))
step("wait_for_latest_osdmap", lambda: c.wait_for_latest_osdmap() >= 0)
step("get_cluster_stats keys", lambda: sorted(c.get_cluster_stats()))
step("list_pools has test", lambda: "test" in c.list_pools())
step("pool_exists", lambda: (c.pool_exists("test"), c.pool_exists("nonexistent-" + TAG)))
test_id = c.pool_lookup("test")
step("pool_reverse_lookup", lambda: c.pool_reverse_lookup(test_id))
step("pool_reverse_lookup missing", lambda: c.pool_reverse_lookup(987654))
step("get_pool_base_tier", lambda: c.get_pool_base_tier(test_id) == test_id)
step("get_inconsistent_pgs", lambda: c.get_inconsistent_pgs(test_id))

# Commands.
r, o, s = c.mon_command(json.dumps({"prefix": "osd pool ls", "format": "json"}), b"")
step("mon_command osd pool ls", lambda: (r, "test" in json.loads(o)))
# A command to one monitor is a `tell` (MCommand), which answers its own
# commands (mon_status, version), not the cluster's.
r, o, s = c.mon_command(json.dumps({"prefix": "mon_status", "format": "json"}), b"", target="a")
step("mon_command target a", lambda: (r, json.loads(o)["name"]))
r, o, s = c.mon_command(json.dumps({"prefix": "fsid", "format": "json"}), b"", target="a")
step("mon_command target a, not its command", lambda: (r, s))
r, o, s = c.mon_command(json.dumps({"prefix": "no such command"}), b"")
step("mon_command unknown", lambda: (r, bool(s)))
r, o, s = c.osd_command(0, json.dumps({"prefix": "version", "format": "json"}), b"")
step("osd_command version", lambda: (r, sorted(json.loads(o))))
step("osd_command no such osd", lambda: c.osd_command(99, json.dumps({"prefix": "version"}), b"")[0])
pgid = f"{test_id}.0"
r, o, s = c.pg_command(pgid, json.dumps({"prefix": "query", "pgid": pgid, "format": "json"}), b"")
step("pg_command query", lambda: (r, json.loads(o)["info"]["pgid"]))
r, o, s = c.mgr_command(json.dumps({"prefix": "pg stat", "format": "json"}), b"")
step("mgr_command pg stat", lambda: (r, sorted(json.loads(o))))
r, o, s = c.mgr_command(json.dumps({"prefix": "mgr_status", "format": "json"}), b"", target="x")
step("mgr_command target x", lambda: (r, sorted(json.loads(o))))
r, o, s = c.mgr_command(json.dumps({"prefix": "pg stat", "format": "json"}), b"", target="x")
step("mgr_command target x, not its command", lambda: (r, s))
step("blocklist_add", lambda: c.blocklist_add("192.168.254.254:0/" + str(os.getpid()), 1))

logged = []
def on_log(arg, line, channel, who, whom, stamp_sec, stamp_nsec, seq, level, msg):
    if TAG.encode() in msg:
        logged.append((channel, level, threading.get_ident() != MAIN))
step("monitor_log2", lambda: c.monitor_log2("info", on_log, None))
c.mon_command(json.dumps({"prefix": "log", "logtext": [f"msgr-python {TAG}"]}), b"")
wait_until("cluster log entry", lambda: logged)
step("monitor_log2 got", lambda: logged[:1])
logged1 = []
def on_log1(arg, line, who, sec, nsec, seq, level, msg):
    if (TAG + "-v1").encode() in msg:
        logged1.append((level, threading.get_ident() != MAIN))
step("monitor_log", lambda: c.monitor_log("info", on_log1, None))
c.mon_command(json.dumps({"prefix": "log", "logtext": [f"msgr-python {TAG}-v1"]}), b"")
wait_until("cluster log entry (v1)", lambda: logged1)
step("monitor_log got", lambda: logged1[:1])
step("monitor_log off", lambda: c.monitor_log("", None, None))

step("service_daemon_register", lambda: c.service_daemon_register(
    "msgrtest", f"d-{TAG}", {"kind": "python"}))
step("service_daemon_update", lambda: c.service_daemon_update({"state": "ok"}))

# Pools.
pool = f"py-{TAG}"
step("create_pool", lambda: c.create_pool(pool))
step("create_pool exists", lambda: c.create_pool(pool))
step("create_pool crush_rule", lambda: c.create_pool(pool + "-r", crush_rule=0))
step("create_pool auid", lambda: c.create_pool(pool + "-a", auid=0))
step("create_pool both", lambda: c.create_pool(pool + "-b", crush_rule=0, auid=0))
for p in ("-r", "-a", "-b"):
    step(f"delete_pool {p}", lambda: c.delete_pool(pool + p))
step("delete_pool missing", lambda: c.delete_pool(pool + "-gone"))
io = c.open_ioctx(pool)
step("open_ioctx missing", lambda: c.open_ioctx("nonexistent-" + TAG))
io2 = c.open_ioctx2(c.pool_lookup(pool))
step("open_ioctx2 name", lambda: io2.get_pool_name() == pool)
step("get_pool_id", lambda: io.get_pool_id() == c.pool_lookup(pool))
step("alignment", io.alignment)
# An erasure-coded pool requires aligned appends (no I/O: its PGs need not
# be active).
ecpool = f"py-{TAG}-ec"
r, o, s = c.mon_command(json.dumps({"prefix": "osd pool create", "pool": ecpool, "pg_num": 1,
                                    "pgp_num": 1, "pool_type": "erasure"}), b"")
step("create EC pool", lambda: r)
c.wait_for_latest_osdmap()
ioec = c.open_ioctx(ecpool)
step("alignment EC", ioec.alignment)
ioec.close()
step("delete EC pool", lambda: c.delete_pool(ecpool))
step("application_enable", lambda: io.application_enable("msgrtest"))
step("application_enable second", lambda: io.application_enable("other"))
step("application_enable force", lambda: io.application_enable("other", force=True))
step("application_list", lambda: sorted(io.application_list()))
step("application_metadata_set", lambda: io.application_metadata_set("msgrtest", "k1", "v1"))
io.application_metadata_set("msgrtest", "k2", "v2")
step("application_metadata_get", lambda: io.application_metadata_get("msgrtest", "k1"))
step("application_metadata_get missing", lambda: io.application_metadata_get("msgrtest", "k9"))
step("application_metadata_list", lambda: sorted(io.application_metadata_list("msgrtest")))
step("application_metadata_remove", lambda: io.application_metadata_remove("msgrtest", "k1"))
step("application_metadata_list after", lambda: sorted(io.application_metadata_list("msgrtest")))

# Objects.
step("write_full", lambda: io.write_full("o1", b"hello world"))
v1 = io.get_last_version()
step("get_last_version > 0", lambda: v1 > 0)
step("write", lambda: io.write("o1", b"HELLO", 0))
step("version grew", lambda: io.get_last_version() > v1)
step("append", lambda: io.append("o1", b"!"))
step("read", lambda: io.read("o1"))
step("read range", lambda: io.read("o1", 5, 6))
step("read missing", lambda: io.read("missing"))
step("writesame", lambda: io.writesame("ws", b"ab", 8, 2))
step("read writesame", lambda: io.read("ws"))
step("cmpext equal", lambda: io.cmpext("o1", b"HELLO", 0))
step("cmpext mismatch", lambda: io.cmpext("o1", b"HELxO", 0))
st = io.stat("o1")
step("stat size", lambda: st[0])
step("stat mtime recent", lambda: abs(time.mktime(st[1]) - time.time()) < 600)
step("stat missing", lambda: io.stat("missing"))
step("trunc", lambda: (io.trunc("o1", 5), io.read("o1")))
step("set_xattr", lambda: io.set_xattr("o1", "a", b"1"))
io.set_xattr("o1", "b", b"22")
step("get_xattr", lambda: io.get_xattr("o1", "b"))
step("get_xattr missing", lambda: io.get_xattr("o1", "zz"))
step("get_xattrs", lambda: sorted(io.get_xattrs("o1")))
step("rm_xattr", lambda: (io.rm_xattr("o1", "a"), sorted(io.get_xattrs("o1"))))
step("execute lock list_locks", lambda: io.execute("o1", "lock", "list_locks", b"")[0])
step("execute unknown class", lambda: io.execute("o1", "nosuchclass", "m", b""))
step("remove_object", lambda: io.remove_object("ws"))
step("remove_object missing", lambda: io.remove_object("ws"))
step("set_locator_key", lambda: (io.set_locator_key("loc"), io.get_locator_key()))
io.write_full("withloc", b"L")
io.set_locator_key("")
step("read without locator", lambda: io.read("withloc"))
io.set_locator_key("loc")
step("read with locator", lambda: io.read("withloc"))
io.set_locator_key("")
step("set_namespace", lambda: (io.set_namespace("ns1"), io.get_namespace()))
io.write_full("inns", b"N")
io.set_namespace("")
step("read other namespace", lambda: io.read("inns"))
io.set_namespace(rados.LIBRADOS_ALL_NSPACES)
step("list all namespaces", lambda: sorted((o.nspace, o.key, o.locator_key or "") for o in io.list_objects()))
io.set_namespace("ns1")
step("list ns1", lambda: sorted(o.key for o in io.list_objects()))
io.set_namespace("")
step("list default", lambda: sorted(o.key for o in io.list_objects()))
step("get_stats keys", lambda: sorted(io.get_stats()))

# Write and read ops.
with rados.WriteOpCtx() as op:
    io.set_omap(op, ("k1", "k2", "k3", "p1"), (b"v1", b"v2", b"v3", b"pv"))
    op.write_full(b"full")
    op.set_xattr("x", b"y")
    op.set_flags(rados.LIBRADOS_OPERATION_SKIPRWLOCKS)
    step("operate_write_op", lambda: io.operate_write_op(op, "om"))
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_vals(op, "", "", 10)
    step("operate_read_op vals", lambda: (io.operate_read_op(op, "om"), ret, list(it)))
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_vals(op, "k1", "k", 1)
    io.operate_read_op(op, "om")
    step("omap vals after k1 prefix k max 1", lambda: (ret, list(it)))
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_keys(op, "", 2)
    io.operate_read_op(op, "om")
    step("omap keys max 2", lambda: (ret, list(it)))
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_vals_by_keys(op, ("k2", "p1", "zz"))
    io.operate_read_op(op, "om")
    step("omap by keys", lambda: (ret, sorted(it)))
with rados.ReadOpCtx() as op:
    op.cmpext(b"fuXl", 0)
    op.set_flags(rados.LIBRADOS_OPERATION_BALANCE_READS)
    step("read op cmpext mismatch", lambda: io.operate_read_op(op, "om"))
with rados.WriteOpCtx() as op:
    io.remove_omap_keys(op, ("k1",))
    io.remove_omap_range2(op, "k3", "k4")
    io.operate_write_op(op, "om")
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_keys(op, "", 10)
    io.operate_read_op(op, "om")
    step("omap after rm keys and range", lambda: list(it))
with rados.WriteOpCtx() as op:
    io.clear_omap(op)
    io.operate_write_op(op, "om")
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_keys(op, "", 10)
    io.operate_read_op(op, "om")
    step("omap after clear", lambda: list(it))
with rados.WriteOpCtx() as op:
    op.omap_cmp("k2", "nope", rados.LIBRADOS_CMPXATTR_OP_EQ)
    op.write(b"x", 0)
    step("omap_cmp fails", lambda: io.operate_write_op(op, "om"))
with rados.WriteOpCtx() as op:
    op.assert_version(1)
    op.append(b"x")
    step("assert_version fails", lambda: io.operate_write_op(op, "om"))
with rados.WriteOpCtx() as op:
    op.cmpext(b"full", 0)
    op.writesame(b"z", 2, 4)
    op.append(b"+")
    op.zero(1, 1)  # Ceph 16's module passes (length, offset): a 0 length asserts its OSDs
    op.truncate(8)
    op.rm_xattr("x")
    step("write op ops", lambda: (io.operate_write_op(op, "om"), io.read("om")))
with rados.WriteOpCtx() as op:
    op.execute("lock", "list_locks", b"")
    step("write op exec", lambda: io.operate_write_op(op, "om"))
with rados.WriteOpCtx() as op:
    op.new(rados.LIBRADOS_CREATE_EXCLUSIVE)
    step("write op create exclusive exists", lambda: io.operate_write_op(op, "om"))
with rados.WriteOpCtx() as op:
    op.create()
    op.write_full(b"c")
    step("write op create", lambda: (io.operate_write_op(op, "created"), io.read("created")))
with rados.WriteOpCtx() as op:
    op.remove()
    step("write op remove", lambda: (io.operate_write_op(op, "created"), io.stat("created")))

# Asynchronous I/O.
done = []
lock = threading.Lock()
def cb(name):
    def f(comp, *args):
        with lock:
            done.append((name, comp.get_return_value(), threading.get_ident() != MAIN))
    return f
comps = [io.aio_write(f"a{i}", b"x" * 4096, 0, cb(f"aio_write {i}")) for i in range(16)]
for comp in comps:
    comp.wait_for_complete_and_cb()
step("aio_write callbacks", lambda: sorted(done))
done.clear()
comp = io.aio_write_full("a0", b"full", cb("aio_write_full"))
comp.wait_for_complete()
comp.wait_for_safe()
comp.wait_for_safe_and_cb()
step("aio_write_full", lambda: (done, comp.is_complete(), comp.is_safe(), comp.get_return_value()))
done.clear()
io.aio_append("a0", b"++", cb("aio_append")).wait_for_complete_and_cb()
io.aio_writesame("a1", b"ab", 6, 0, cb("aio_writesame")).wait_for_complete_and_cb()
io.aio_setxattr("a0", "ax", b"v", cb("aio_setxattr")).wait_for_complete_and_cb()
io.aio_rmxattr("a0", "ax", cb("aio_rmxattr")).wait_for_complete_and_cb()
io.aio_rmxattr("a0", "ax", cb("aio_rmxattr again")).wait_for_complete_and_cb()
io.aio_flush()
step("aio mutations", lambda: done)
got = []
def on_read(comp, data):
    got.append((comp.get_return_value(), data))
io.aio_read("a0", 100, 0, on_read).wait_for_complete_and_cb()
io.aio_read("missing", 100, 0, on_read).wait_for_complete_and_cb()
step("aio_read", lambda: got)
stats = []
def on_stat(comp, size, mtime):
    stats.append((comp.get_return_value(), size))
io.aio_stat("a0", on_stat).wait_for_complete_and_cb()
io.aio_stat("missing", on_stat).wait_for_complete_and_cb()
step("aio_stat", lambda: stats)
cmp = []
io.aio_cmpext("a0", b"fuXl", 0, lambda comp, *a: cmp.append(comp.get_return_value())).wait_for_complete_and_cb()
io.aio_cmpext("a0", b"full", 0, lambda comp, *a: cmp.append(comp.get_return_value())).wait_for_complete_and_cb()
step("aio_cmpext", lambda: cmp)
ex = []
io.aio_execute("a0", "lock", "list_locks", b"", 100,
               lambda comp, data: ex.append((comp.get_return_value(), len(data)))).wait_for_complete_and_cb()
step("aio_execute", lambda: ex)
done.clear()
io.aio_remove("a1", cb("aio_remove")).wait_for_complete_and_cb()
io.aio_remove("a1", cb("aio_remove again")).wait_for_complete_and_cb()
step("aio_remove", lambda: done)
done.clear()
with rados.WriteOpCtx() as op:
    op.write_full(b"aio op")
    io.operate_aio_write_op(op, "aop", cb("operate_aio_write_op")).wait_for_complete_and_cb()
with rados.ReadOpCtx() as op:
    it, ret = io.get_omap_keys(op, "", 10)
    io.operate_aio_read_op(op, "aop", cb("operate_aio_read_op")).wait_for_complete_and_cb()
step("aio ops", lambda: (done, io.read("aop")))

# Watch and notify (a second handle notifies).
c2 = rados.Rados(name="client.admin", clustername="ceph", conffile=CONF)
c2.connect()
io_b = c2.open_ioctx(pool)
io.write_full("w", b"")
events = []
def on_notify(notify_id, notifier_id, watch_id, data):
    events.append((data, threading.get_ident() != MAIN))
    return b"ack-" + data
errors = []
watch = io.watch("w", on_notify, lambda *a: errors.append(a))
step("watch check", lambda: type(watch.check()).__name__)
step("notify", lambda: io_b.notify("w", "ping", 10000))
step("watch events", lambda: events)
acks = []
def on_notified(comp, r, ack_list, timeout_list):
    # (notifier gid, cookie, payload) each: the payloads are what compares.
    acks.append((r, [a[-1] for a in ack_list or []], timeout_list))
comp = io_b.aio_notify("w", on_notified, msg="pong", timeout_ms=10000)
comp.wait_for_complete_and_cb()
wait_until("aio_notify callback", lambda: acks)
step("aio_notify", lambda: acks)
step("watch close", watch.close)
step("notify without watcher", lambda: io_b.notify("w", "x", 3000))
step("watch errors", lambda: errors)

# Locks (no duration: Ceph 20's librados makes a zero one expire at once,
# Ceph 16's never).
step("lock_exclusive", lambda: io.lock_exclusive("l", "lk", "c1", "desc"))
step("lock_exclusive other handle", lambda: io_b.lock_exclusive("l", "lk", "c2", "desc"))
step("lock_exclusive renew", lambda: io.lock_exclusive("l", "lk", "c1", "desc", 30, 1))  # LIBRADOS_LOCK_FLAG_RENEW
step("unlock", lambda: io.unlock("l", "lk", "c1"))
step("unlock again", lambda: io.unlock("l", "lk", "c1"))
step("lock_shared", lambda: io.lock_shared("l", "sh", "c1", "tag", "d"))
step("lock_shared other handle", lambda: io_b.lock_shared("l", "sh", "c2", "tag", "d"))
step("lock_exclusive on shared", lambda: io_b.lock_exclusive("l", "sh", "c3", "d"))
step("unlock shared", lambda: io.unlock("l", "sh", "c1"))
step("unlock shared other handle", lambda: io_b.unlock("l", "sh", "c2"))

# Full pool flag, then snapshots.
step("set_osdmap_full_try", io.set_osdmap_full_try)
step("write with full_try", lambda: io.write_full("ft", b"1"))
step("unset_osdmap_full_try", io.unset_osdmap_full_try)
io.write_full("s", b"before")
step("create_snap", lambda: io.create_snap("s1"))
step("create_snap exists", lambda: io.create_snap("s1"))
io.write_full("s", b"after!")
snaps = list(io.list_snaps())
step("list_snaps", lambda: [s.name for s in snaps])
snap = step("lookup_snap", lambda: io.lookup_snap("s1"), show=lambda s: s.name)
step("lookup_snap missing", lambda: io.lookup_snap("nope"))
step("snap timestamp recent", lambda: abs(time.mktime(snap.get_timestamp().timetuple()) - time.time()) < 86400 * 2)
io.set_read(snap.snap_id)
step("read at snap", lambda: io.read("s"))
io.set_read(rados.LIBRADOS_SNAP_HEAD)
step("read at head", lambda: io.read("s"))
step("snap_rollback", lambda: (io.snap_rollback("s", "s1"), io.read("s")))
step("remove_snap", lambda: io.remove_snap("s1"))
step("list_snaps after", lambda: [s.name for s in io.list_snaps()])
step("create_self_managed_snap on pool with snaps", io.create_self_managed_snap)
pool2 = f"py-{TAG}-sm"
c.create_pool(pool2)
iosm = c.open_ioctx(pool2)
iosm.write_full("sm", b"one")
sid = step("create_self_managed_snap", iosm.create_self_managed_snap, show=lambda i: i > 0)
step("set_self_managed_snap_write", lambda: iosm.set_self_managed_snap_write([sid]))
iosm.write_full("sm", b"two")
step("rollback_self_managed_snap", lambda: (iosm.rollback_self_managed_snap("sm", sid), iosm.read("sm")))
step("remove_self_managed_snap", lambda: iosm.remove_self_managed_snap(sid))
step("create_snap on self-managed pool", lambda: iosm.create_snap("x"))
iosm.close()

# Done: close and delete.
io2.close()
io.close()
step("ioctx closed", lambda: io.read("o1"))
io_b.close()
c2.shutdown()
step("delete pools", lambda: (c.delete_pool(pool), c.delete_pool(pool2)))
c.shutdown()
step("shutdown", lambda: c.state)
