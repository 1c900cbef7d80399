#!/usr/bin/env python3
# loopback-send.py copy|zc|recv N PORT: sender CPU per 4 MiB send() over
# loopback TCP, plain or MSG_ZEROCOPY, to a reader in another process
# (`recv`). The floor of a 4 MiB write in BENCHMARKS.md (issue 15). Run:
#   python3 loopback-send.py recv 2000 17001 & sleep 0.3; python3 loopback-send.py copy 2000 17001
import os, socket, sys, resource, time
SO_ZEROCOPY, MSG_ZEROCOPY, MSG_ERRQUEUE = 60, 0x4000000, 0x2000
N, SZ = int(sys.argv[2]), 4 << 20
def recv_side(port):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port)); l.listen(1); print("ready", flush=True)
    c, _ = l.accept(); buf = bytearray(1 << 20); got = 0
    while got < N * SZ:
        n = c.recv_into(buf)
        if n == 0: break
        got += n
    c.sendall(b"k")
def send_side(port, zc):
    s = socket.create_connection(("127.0.0.1", port))
    if zc: s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    data = memoryview(b"z" * SZ)
    t0 = resource.getrusage(resource.RUSAGE_SELF); w0 = time.time()
    pending = 0
    for _ in range(N):
        off = 0
        while off < SZ:
            off += s.send(data[off:], MSG_ZEROCOPY if zc else 0)
            pending += 1
        while zc and pending > 64:
            try:
                s.recvmsg(0, 1024, MSG_ERRQUEUE | socket.MSG_DONTWAIT); pending -= 32
            except BlockingIOError:
                break
    s.recv(1)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
    print(f"{'zerocopy' if zc else 'copy':9} sender CPU per 4 MiB {cpu / N * 1e6:.0f} us, {N * SZ / (time.time() - w0) / 1e6:.0f} MB/s")
if sys.argv[1] == "recv": recv_side(int(sys.argv[3]))
else: send_side(int(sys.argv[3]), sys.argv[1] == "zc")
