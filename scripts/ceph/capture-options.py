#!/usr/bin/python3
"""Captures Ceph's configuration options as librados sees them, for
crates/config/data/options.tsv: each option's name, type and the value
librados's rados_conf_get gives before anything is set (a library's
defaults, which differ from a daemon's for a few options).

The types come from a running daemon's admin socket (`config help`); the
values from Debian's python3-rados (librados 16) on a handle named
client.zzqq of cluster ccqq, with those two names put back as `$name`,
`$id` and `$cluster`. Options the daemon does not describe (the debug_*
log levels) are typed `subsys`.

Usage: capture-options.py ADMIN_SOCKET > crates/config/data/options.tsv
"""
import json
import subprocess
import sys

import rados

sock = sys.argv[1]
schema = json.loads(subprocess.check_output(
    ["ceph", "--admin-daemon", sock, "config", "help", "-f", "json"]))["options"]
types = {o["name"]: o["type"] for o in schema}
names = subprocess.check_output(
    ["ceph-conf", "-c", "/dev/null", "-n", "client.zzqq", "--cluster", "ccqq",
     "--show-config"], text=True).splitlines()
names = [line.split(" = ", 1)[0] for line in names]
names = [n for n in names if n not in ("name", "cluster")]
r = rados.Rados(name="client.zzqq", clustername="ccqq", conffile=None)
version = subprocess.check_output(["ceph", "--version"], text=True).split()[2]
print(f"# Ceph {version}'s options as librados {version} reads them: name, type, "
      "default (scripts/ceph/capture-options.py)")
for n in sorted(names):
    v = r.conf_get(n)
    if v is None:
        continue
    v = v.replace("client.zzqq", "$name").replace("zzqq", "$id").replace("ccqq", "$cluster")
    t = types.get(n, "subsys" if n.startswith("debug_") else None)
    if t is None:
        sys.exit(f"{n}: no type")
    assert "\t" not in v and "\n" not in v, n
    print(f"{n}\t{t}\t{v}")
r.shutdown()
