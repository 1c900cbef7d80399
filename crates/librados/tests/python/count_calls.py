"""gdb script: counts the calls into librados.so.2's functions named in
$MSGR_COUNT_SYMBOLS (one per line) while the program runs, and writes
"COUNT NAME" lines to $MSGR_COUNT_OUT. Each breakpoint only counts (its
stop() returns False), so the program runs on.

Usage: gdb -q -batch -x count_calls.py --args PROGRAM ARGS...
"""
import os

import gdb

NAMES = [n for n in open(os.environ["MSGR_COUNT_SYMBOLS"]).read().split() if n]
COUNTS = {n: 0 for n in NAMES}
PLACED = []


class Count(gdb.Breakpoint):
    def __init__(self, name):
        super().__init__(name, internal=True)
        self.name = name

    def stop(self):
        COUNTS[self.name] += 1
        return False


def on_new_objfile(event):
    if PLACED or "librados.so" not in os.path.basename(event.new_objfile.filename):
        return
    PLACED.append(event.new_objfile.filename)
    for n in NAMES:
        Count(n)


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set print thread-events off")
gdb.execute("set breakpoint pending on")
gdb.events.new_objfile.connect(on_new_objfile)
gdb.execute("run")
with open(os.environ["MSGR_COUNT_OUT"], "w") as f:
    f.write(f"# {PLACED[0] if PLACED else 'librados.so.2 never loaded'}\n")
    for n in NAMES:
        f.write(f"{COUNTS[n]} {n}\n")
status = gdb.parse_and_eval("$_exitcode") if gdb.convenience_variable("_exitcode") is not None else -1
gdb.execute(f"quit {int(status)}")
