#!/usr/bin/env python3
"""scale-report.py RUNS.jsonl: the tables of scripts/bench/scale.sh, from the
JSON lines of its runs (medians over rounds; ratios between medians)."""
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
idle = "\n".join(r["text"] for r in runs if r["part"] == "idle")
nan = float("nan")
med = lambda xs: st.median(xs) if xs else nan
conns = [r for r in runs if r["part"] == "conns"]
servers = list(dict.fromkeys(r["server"] for r in conns))


def key(r):
    return (r["conns"], r["depth"], r.get("size", 4096))


loads = list(dict.fromkeys(key(r) for r in conns))


def name(load):
    c, d, size = load
    size = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    return f"{c} conn{'s' if c > 1 else ''}, depth {d}, {size}"


def cell(server, load, k):
    return med([r["steady"][k] for r in conns
                if r["server"] == server and key(r) == load and k in r.get("steady", {})])


def table(title, fmt, k):
    print(f"{title}\n")
    print("| server | " + " | ".join(name(l) for l in loads) + " |")
    print("|---" * (len(loads) + 1) + "|")
    for s in servers:
        print(f"| {s} | " + " | ".join(fmt(cell(s, l, k)) for l in loads) + " |")
    print()


print("## Per-message cost (server CPU per message, steady part)\n")
table("Server CPU per message:", lambda v: f"{v:.2f} µs", "server_cpu_us_per_msg")
table("Messages a second (steady part):", lambda v: f"{v:.0f}", "msgs_per_sec")

# Each pair: (numerator, denominator), where both were measured.
pairs = [("ring", "epoll"), ("uring", "epoll"), ("epoll-2", "epoll"), ("ring-2", "ring"),
         ("epoll", "raw"), ("ring", "raw"), ("ring", "raw-ring"), ("raw-ring", "raw"),
         ("epoll", "ceph"), ("ring", "ceph")]
pairs = [(a, b) for a, b in pairs if a in servers and b in servers]
if pairs:
    print("Ratios of medians, server CPU per message (msgs/s):\n")
    print("| ratio | " + " | ".join(name(l) for l in loads) + " |")
    print("|---" * (len(loads) + 1) + "|")
    for a, b in pairs:
        k, q = "server_cpu_us_per_msg", "msgs_per_sec"
        print(f"| {a} / {b} | " + " | ".join(
            f"×{cell(a, l, k) / cell(b, l, k):.2f} (×{cell(a, l, q) / cell(b, l, q):.2f})"
            for l in loads) + " |")
    print()

print("## Two shards: cache lines written by the other core (perf c2c)\n")
c2c = [r for r in conns if "c2c" in r]
if c2c:
    print("HITM loads (another core's modified line) among the loads perf sampled, and per second:\n")
    print("| server | " + " | ".join(name(l) for l in loads) + " |")
    print("|---" * (len(loads) + 1) + "|")
    for s in dict.fromkeys(r["server"] for r in c2c):
        cells = []
        for l in loads:
            rs = [r["c2c"] for r in c2c if r["server"] == s and key(r) == l]
            hitm = med([x["local_hitm"] + x["remote_hitm"] for x in rs])
            share = med([(x["local_hitm"] + x["remote_hitm"]) / max(x["loads"], 1) for x in rs])
            per_s = med([(x["local_hitm"] + x["remote_hitm"]) / x["seconds"] for x in rs])
            cells.append(f"{hitm:.0f} ({share:.2%}, {per_s:.0f}/s)")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()
elif any(r["part"] == "c2c" and not r["supported"] for r in runs):
    print("Not measured: this machine's PMU has no memory events (`perf c2c record` failed).\n")
else:
    print("Not measured: no two-shard server in this run.\n")

print("## Large messages (depth 16, one connection)\n")
large = [r for r in runs if r["part"] == "large"]
print("| size | iperf3 MB/s | our pair (epoll) MB/s | × iperf3 | Ceph's pair MB/s | ours / Ceph's pair "
      "| our client's CPU per MiB: against our server / Ceph's server |")
print("|---|---|---|---|---|---|---|")
for size in sorted({r["size"] for r in large}):
    g = lambda who: med([r["mb_per_sec"] for r in large if r["size"] == size and r["who"] == who])
    iperf, ceph_pair = g("iperf3"), g("ceph-pair")
    load = (1, 16, size)
    ours = cell("epoll", load, "msgs_per_sec") * size / 1e6
    mib = size / 1048576
    c_ours = cell("epoll", load, "client_cpu_us_per_msg") / mib
    c_ceph = cell("ceph", load, "client_cpu_us_per_msg") / mib
    print(f"| {size >> 20} MiB | {iperf:.0f} | {ours:.0f} | ×{ours / iperf:.2f} | {ceph_pair:.0f} "
          f"| ×{ours / ceph_pair:.2f} | {c_ours:.0f} / {c_ceph:.0f} µs (×{c_ours / c_ceph:.2f}) |")

print("\n## Idle connections (scripts/bench/idle.sh)\n")
print(idle or "(not measured in this run)")
