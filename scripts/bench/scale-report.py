#!/usr/bin/env python3
"""scale-report.py RUNS.jsonl: the tables of scripts/bench/scale.sh, from the
JSON lines of its runs (medians over rounds; ratios between medians)."""
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
idle = "\n".join(r["text"] for r in runs if r["part"] == "idle")
med = lambda xs: st.median(xs) if xs else float("nan")

print("## Per-message cost against connections (4 KiB; server CPU per message, steady part)\n")
conns = [r for r in runs if r["part"] == "conns"]
servers = ["msgr", "msgr-uring", "ceph", "raw"]
loads = sorted({(r["conns"], r["depth"]) for r in conns})
def cell(s, c, d, k):
    return med([r["steady"][k] for r in conns if r["server"] == s and r["conns"] == c and r["depth"] == d and "steady" in r and k in r["steady"]])
print("| server | " + " | ".join(f"{c} conn{'s' if c > 1 else ''} (depth {d})" for c, d in loads) + " | x at 1000 / 100 | x at 10000 / 100 |")
print("|---" * (len(loads) + 3) + "|")
for s in servers:
    v = {(c, d): cell(s, c, d, "server_cpu_us_per_msg") for c, d in loads}
    base = v.get((100, 1), float("nan"))
    print(f"| {s} | " + " | ".join(f"{v[l]:.2f} µs" for l in loads)
          + f" | x{v.get((1000, 1), float('nan')) / base:.2f} | x{v.get((10000, 1), float('nan')) / base:.2f} |")
print("\nmsgs/s (steady part), and msgr's server CPU per message against the other servers':\n")
print("| server | " + " | ".join(f"{c}x{d}" for c, d in loads) + " |")
print("|---" * (len(loads) + 1) + "|")
for s in servers:
    print(f"| {s} | " + " | ".join(f"{cell(s, c, d, 'msgs_per_sec'):.0f}" for c, d in loads) + " |")
for other in ["msgr-uring", "ceph", "raw"]:
    print(f"| msgr CPU / {other} | " + " | ".join(
        f"x{cell('msgr', c, d, 'server_cpu_us_per_msg') / cell(other, c, d, 'server_cpu_us_per_msg'):.2f}" for c, d in loads) + " |")

print("\n## Large messages (depth 16, one connection)\n")
large = [r for r in runs if r["part"] == "large"]
print("| size | iperf3 MB/s | msgr pair MB/s | x iperf3 | msgr pair over io_uring | Ceph's pair | msgr / Ceph's pair | our client CPU per MiB: our server / Ceph's server |")
print("|---|---|---|---|---|---|---|---|")
for size in sorted({r["size"] for r in large}):
    g = lambda who, k="mb_per_sec": med([r[k] for r in large if r["size"] == size and r["who"] == who])
    ours, uring, ceph_pair, iperf = g("msgr-client/msgr"), g("msgr-client/msgr-uring"), g("ceph-pair"), g("iperf3")
    mib = size / 1048576
    cpu = lambda who: med([r["steady"]["client_cpu_us_per_msg"] / mib for r in large if r["size"] == size and r["who"] == who and "steady" in r])
    c_ours, c_ceph = cpu("msgr-client/msgr"), cpu("msgr-client/ceph")
    print(f"| {size >> 20} MiB | {iperf:.0f} | {ours:.0f} | x{ours / iperf:.2f} | {uring:.0f} (x{uring / ours:.2f}) | {ceph_pair:.0f} | x{ours / ceph_pair:.2f} | {c_ours:.0f} / {c_ceph:.0f} µs (x{c_ours / c_ceph:.2f}) |")

print("\n## Idle connections (scripts/bench/idle.sh)\n")
print(idle or "(not measured in this run)")
