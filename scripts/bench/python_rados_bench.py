"""One round of Python's rados module on whichever librados the loader
finds (scripts/bench/python-rados-vs-librados.sh runs it on Ceph's and on
ours, interleaved). Prints one JSON line: per workload the ops, seconds
and the process's CPU seconds (user+system, all threads); the threads
and resident memory of a connected handle.
Usage: python_rados_bench.py CEPH_CONF POOL SECONDS
"""
import json
import os
import resource
import sys
import threading
import time

import rados

conf, pool, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


before_threads = len(os.listdir("/proc/self/task"))
before_rss = rss_kib()
c = rados.Rados(name="client.admin", clustername="ceph", conffile=conf)
c.connect(timeout=60)
io = c.open_ioctx(pool)
io.write_full("bench-warm", b"x")
out = {
    "threads": len(os.listdir("/proc/self/task")) - before_threads,
    "rss_kib": rss_kib() - before_rss,
}
tag = f"pyb-{os.getpid()}"
data4k = b"p" * 4096


def aio_loop(name, start, n_objects):
    slots = threading.Semaphore(16)
    lock = threading.Lock()
    done = [0]

    def cb(comp, *args):
        with lock:
            done[0] += 1
        slots.release()

    t0, c0 = time.time(), cpu()
    end = t0 + seconds
    comps = []
    i = 0
    while time.time() < end:
        slots.acquire()
        comps.append(start(f"{tag}-{i % n_objects}", cb))
        i += 1
        if len(comps) > 1024:
            comps = [x for x in comps if not x.is_complete()]
    for x in comps:
        x.wait_for_complete_and_cb()
    out[name] = {"ops": i, "secs": time.time() - t0, "cpu": cpu() - c0}


aio_loop("aio_write_4k", lambda o, cb: io.aio_write_full(o, data4k, oncomplete=cb), 1024)
aio_loop("aio_read_4k", lambda o, cb: io.aio_read(o, 4096, 0, oncomplete=cb), 1024)
big = b"B" * (4 << 20)
t0, c0 = time.time(), cpu()
n = 0
while time.time() < t0 + seconds:
    io.write_full(f"{tag}-big-{n % 4}", big)
    n += 1
out["write_4m"] = {"ops": n, "secs": time.time() - t0, "cpu": cpu() - c0}
for i in range(1024):
    io.remove_object(f"{tag}-{i}")
for i in range(min(n, 4)):
    io.remove_object(f"{tag}-big-{i}")
io.close()
c.shutdown()
print(json.dumps(out))
