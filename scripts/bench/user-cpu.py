#!/usr/bin/env python3
"""user-cpu.py ROUNDS SECS LABEL=BINARY[,SERVE-ARGS...] ...

Benchmark (not a test): a `msgr serve --shards 1` server's user and system
CPU per message, apart, at 100 and 1000 connections (4 KiB, depth 1, from
`msgr bench --connect` of the first BINARY), servers and connection counts
interleaved ROUNDS times, SECS seconds each; medians per server. The CPU is
read from /proc when the server prints its once-a-second statistics, over
the ticks from the third to the second-to-last (every connection up,
traffic flowing). SERVE-ARGS are more arguments for that server, e.g.
`ring=target/perf/msgr,--transport,ring`; CONNS (environment) replaces the
connection counts, e.g. CONNS=1000. A server given --raw (`msgr serve
--raw`, the plain TCP pattern) gets the raw client. User time is where
the messenger's own cost is; the system time, the kernel's TCP path, is
most of the total and most of its noise (conns.sh reports the total).
"""
import subprocess, sys, time, re, os, statistics as st, threading
rounds, secs = int(sys.argv[1]), int(sys.argv[2])
configs = [(l, c.split(',')) for l, c in (a.split('=', 1) for a in sys.argv[3:])]
client = configs[0][1][0]
conn_counts = [int(c) for c in os.environ.get('CONNS', '100 1000').split()]
tick = os.sysconf('SC_CLK_TCK')
res = {}
port = 18100
for r in range(rounds):
    for conns in conn_counts:
        for label, (binp, *serve_args) in configs:
            port += 1
            srv = subprocess.Popen([binp, 'serve', '--bind', f'v2:127.0.0.1:{port}', '--stats', '1', '--shards', '1', *serve_args],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            recs = []
            def sample():
                f = open(f'/proc/{srv.pid}/stat').read().rsplit(')', 1)[1].split()
                return int(f[11]), int(f[12])
            def rd():
                for l in srv.stderr:
                    m = re.search(r'total (\d+) (?:msgs|ops)', l)
                    if m:
                        try: recs.append((int(m[1]),) + sample())
                        except Exception: pass
            threading.Thread(target=rd, daemon=True).start()
            time.sleep(0.5)
            cl = subprocess.Popen([client, 'bench', '--connect', f'v2:127.0.0.1:{port}/0', '--conns', str(conns), '--depth', '1',
                                   '--duration', str(secs), '--shards', '1',
                                   *(['--raw-only'] if '--raw' in serve_args else [])], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cl.wait(); srv.terminate(); srv.wait()
            # Stats ticks 3 .. secs-1 (every connection up, traffic on both sides).
            (m0, u0, s0), (m1, u1, s1) = recs[2], recs[secs - 2]
            n = max(m1 - m0, 1)
            uu = (u1 - u0) / tick * 1e6 / n; ss = (s1 - s0) / tick * 1e6 / n
            res.setdefault((label, conns), []).append((uu, ss))
            print(f'{label} {conns}: user {uu:.2f} sys {ss:.2f} us/msg ({n} msgs)', flush=True)
for (label, conns), v in sorted(res.items()):
    print(f'{label:5} {conns:5}: user median {st.median(x[0] for x in v):.3f}  sys median {st.median(x[1] for x in v):.3f}  '
          f'total median {st.median(x[0] + x[1] for x in v):.3f}  user runs {" ".join(f"{x[0]:.2f}" for x in v)}')
