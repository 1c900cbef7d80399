"""Asynchronous writes through Python's rados module while an OSD restarts
(scripts/interop/librados-python.sh restarts it a few seconds in): 4 KiB
aio writes, 16 in flight, for SECONDS, over 512 objects (a test
cluster's OSDs keep objects in memory); then every object is read back
as its last write left it.

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
OBJECTS = 512
last = {}


def payload(n):
    return (f"{tag}-{n:08d}-" * 300).encode()[:4096]


while time.time() < end:
    slots.acquire()
    # 16 in flight over 512 objects: no two writes to one object overlap.
    comps.append(io.aio_write_full(f"{tag}-{i % OBJECTS}", payload(i), oncomplete=done(i)))
    last[i % OBJECTS] = i
    i += 1
    if len(comps) > 4096:
        comps = [x for x in comps if not x.is_complete()]
for comp in comps:
    comp.wait_for_complete_and_cb()
io.aio_flush()
bad = [o for o, n in last.items() if io.read(f"{tag}-{o}", 4096) != payload(n)]
print("every callback fired once:", all(fired[n] == 1 for n in range(i)) and len(fired) == i)
print("callbacks off the caller's thread:", all(off_main))
print("results:", sorted(results))
print("objects read back as written:", not bad)
print(f"{i} writes, results {dict(results)}", file=sys.stderr)
for o in last:
    io.remove_object(f"{tag}-{o}")
io.close()
c.shutdown()
