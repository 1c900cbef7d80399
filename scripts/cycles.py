#!/usr/bin/env python3
"""Import cycles between the files of each crate's src/.

For every .rs file under crates/*/src, find the files it names through
`use` paths and inline paths (crate::, super::, self::, a child module),
following `pub use` re-exports to the file that defines the name, and
print each strongly connected group of more than one file. A module's
references to its own descendants (its `mod` declarations, the re-exports
and calls of a parent into its children) are the module tree, not imports,
and are left out: a child may use its parent, a sibling must not use a
sibling that uses it back.

Usage: scripts/cycles.py [crate-dir ...]   (default: every crates/*)
Exit status 1 when a cycle is found.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(src):
    """Source without comments, string and char literals."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not re.match(r"\w", src[i - 1])):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x..'", src[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x..'", src[i:i + 12])
            i += len(m.group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (as segment lists)."""
    tree = re.sub(r"\s+", "", tree)
    res = []

    def walk(prefix, s):
        # split s on top-level commas
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            k = p.find("{")
            if k >= 0:
                head = p[:k].rstrip(":")
                segs = [x for x in head.split("::") if x]
                walk(prefix + segs, p[k + 1:p.rfind("}")])
            else:
                segs = [x for x in p.split("::") if x]
                res.append(prefix + segs)

    walk([], tree)
    return res


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        for dirpath, _, names in os.walk(src):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src)[:-3].split(os.sep)
                if rel[-1] == "mod":
                    rel = rel[:-1]
                if rel in (["lib"], ["main"]):
                    rel = []
                if rel and rel[0] == "bin":
                    continue  # binaries are crates of their own
                self.files[tuple(rel)] = path
        self.text = {m: strip(open(p).read()) for m, p in self.files.items()}
        self.reexports = {m: self._reexports(m) for m in self.files}

    def _uses(self, text):
        """(visibility, use-tree) of every use statement."""
        for m in re.finditer(r"(pub(\([^)]*\))?\s+)?use\s+([^;]+);", text):
            yield bool(m.group(1)), m.group(3)

    def _reexports(self, mod):
        out = {}
        for public, tree in self._uses(self.text[mod]):
            if not public:
                continue
            for segs in expand(tree):
                name = segs[-1]
                alias = re.match(r"(" + IDENT + r")as(" + IDENT + r")$", name)
                if alias:
                    segs = segs[:-1] + [alias.group(1)]
                    name = alias.group(2)
                out[name] = segs
        return out

    def resolve(self, mod, segs, seen=()):
        """The file (module path) a path used in `mod` names, or None for
        another crate."""
        if not segs:
            return None
        head, rest = segs[0], list(segs[1:])
        if head == "crate":
            base = ()
        elif head == "self":
            base = mod
        elif head == "super":
            base = mod
            while rest or head == "super":
                if head != "super":
                    break
                base = base[:-1]
                head = rest.pop(0) if rest else None
            if head is not None:
                rest = [head] + rest
        elif mod + (head,) in self.files:
            base, rest = mod + (head,), rest
        elif (head,) in self.files and mod == ():
            base, rest = (head,), rest
        else:
            return None
        cur = base
        while rest:
            nxt = cur + (rest[0],)
            if nxt in self.files:
                cur, rest = nxt, rest[1:]
                continue
            target = self.reexports.get(cur, {}).get(rest[0])
            if target is not None and (cur, rest[0]) not in seen:
                r = self.resolve(cur, target + rest[1:], seen + ((cur, rest[0]),))
                if r is not None:
                    return r
            break
        return cur

    def edges(self):
        graph = {m: set() for m in self.files}
        for mod, text in self.text.items():
            paths = []
            for _, tree in self._uses(text):
                for segs in expand(tree):
                    segs = [s.split("as")[0] if re.match(IDENT + "as" + IDENT + "$", s) and s not in self.reexports.get(mod, {}) else s for s in segs]
                    paths.append(segs)
            for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::" + IDENT + r")+)", text):
                paths.append(m.group(1).split("::"))
            for segs in paths:
                target = self.resolve(mod, [s for s in segs if s != "*"])
                if target is None or target == mod or target not in self.files:
                    continue
                if target[:len(mod)] == mod:
                    continue  # a descendant: the module tree
                graph[mod].add(target)
        return graph


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = sys.argv[1:] or sorted(
        os.path.join(root, "crates", c) for c in os.listdir(os.path.join(root, "crates")))
    found = False
    for crate in crates:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        c = Crate(src)
        graph = c.edges()
        for comp in sccs(graph):
            found = True
            names = sorted(os.path.relpath(c.files[m], root) for m in comp)
            pairs = sorted(
                (os.path.relpath(c.files[a], root), os.path.relpath(c.files[b], root))
                for a in comp for b in graph[a] if b in comp)
            print("cycle: " + ", ".join(names))
            for a, b in pairs:
                print(f"  {a} -> {b}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
