"""Asynchronous writes through Python's rados module while an OSD restarts
(scripts/interop/librados-python.sh restarts it a few seconds in): 4 KiB
aio writes, 16 in flight, for SECONDS; then every object is read back.

Prints what must hold on any librados, so the outputs of Ceph's and ours
compare: each completion's callback ran exactly once, on another thread,
and with which results; every write reads back. The counts go to stderr.
Usage: aio_restart.py CEPH_CONF POOL SECONDS TAG
"""
import collections
import sys
import threading
import time

import rados

conf, pool, seconds, tag = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
main = threading.get_ident()
# A bound on each op: one lost would otherwise hang the run (it then shows
# as -ETIMEDOUT among the results).
c = rados.Rados(name="client.admin", clustername="ceph", conffile=conf,
                conf_defaults={"rados_osd_op_timeout": "120"})
c.connect(timeout=60)
io = c.open_ioctx(pool)
lock = threading.Lock()
slots = threading.Semaphore(16)
fired = collections.Counter()
results = collections.Counter()
off_main = []
comps = []


def done(i):
    def cb(comp):
        with lock:
            fired[i] += 1
            results[comp.get_return_value()] += 1
            off_main.append(threading.get_ident() != main)
        slots.release()
    return cb


end = time.time() + seconds
i = 0
while time.time() < end:
    slots.acquire()
    data = (f"{tag}-{i:08d}-" * 300).encode()[:4096]
    comps.append(io.aio_write_full(f"{tag}-{i}", data, oncomplete=done(i)))
    i += 1
for comp in comps:
    comp.wait_for_complete_and_cb()
io.aio_flush()
bad = [n for n in range(i) if io.read(f"{tag}-{n}", 4096) != (f"{tag}-{n:08d}-" * 300).encode()[:4096]]
print("every callback fired once:", all(fired[n] == 1 for n in range(i)) and len(fired) == i)
print("callbacks off the caller's thread:", all(off_main))
print("results:", sorted(results))
print("objects read back as written:", not bad)
print(f"{i} writes, results {dict(results)}", file=sys.stderr)
for n in range(i):
    io.remove_object(f"{tag}-{n}")
io.close()
c.shutdown()
