#!/usr/bin/env python3
"""Import cycles between the files of each crate's src/ (issue 34: no file
imports a file that imports it back).

A file imports another when a `use` or a `crate::`/`super::` path in its
code (comments and the trailing #[cfg(test)] module left out) names an item
that file defines; a path through a re-export is followed to where the item
is defined. A module root (lib.rs, mod.rs) re-exporting its own parts
declares them and does not count. Prints every pair of files that import
each other and every longer cycle (a strongly connected group of files);
exits 1 if there is any.

Usage: scripts/check-cycles.py [crates-dir]
"""
import os, re, sys

def modfile(src, parts):
    """The file of module path `parts` (list) under src, or None."""
    if not parts:
        return os.path.join(src, 'lib.rs') if os.path.exists(os.path.join(src,'lib.rs')) else os.path.join(src,'main.rs')
    base = os.path.join(src, *parts)
    for f in (base + '.rs', os.path.join(base, 'mod.rs')):
        if os.path.exists(f):
            return f
    return None

def modpath(src, f):
    rel = os.path.relpath(f, src)[:-3].split(os.sep)
    if rel[-1] in ('mod', 'lib', 'main'):
        rel = rel[:-1]
    return rel

def expand(tree):
    """'a::{b, c::{d}}' -> ['a::b', 'a::c::d']"""
    tree = tree.strip()
    i = tree.find('{')
    if i < 0:
        return [tree]
    prefix = tree[:i]
    body = tree[i+1:tree.rfind('}')]
    items, depth, cur = [], 0, ''
    for ch in body:
        if ch == ',' and depth == 0:
            items.append(cur); cur = ''
            continue
        depth += ch == '{'
        depth -= ch == '}'
        cur += ch
    items.append(cur)
    out = []
    for it in items:
        if it.strip():
            out += expand(prefix + it.strip())
    return out

def resolve(src, base, segs, depth=0):
    """The file that defines base::segs, following re-exports of lib.rs/mod.rs."""
    for k in range(len(segs), -1, -1):
        t = modfile(src, base + segs[:k])
        if t:
            rest = segs[k:]
            if rest and depth < 5 and os.path.basename(t) in ('lib.rs', 'mod.rs', 'main.rs'):
                name = rest[0]
                text = open(t).read()
                for m in re.finditer(r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);', text):
                    for p in expand(m.group(1)):
                        p = p.strip()
                        alias = re.search(r'\s+as\s+(\w+)$', p)
                        p2 = re.sub(r'\s+as\s+\w+$', '', p)
                        ps = [x for x in p2.split('::') if x]
                        last = alias.group(1) if alias else ps[-1]
                        if last != name:
                            continue
                        tb = base + segs[:k]
                        if ps[0] == 'crate':
                            tb, ps = [], ps[1:]
                        elif ps[0] == 'self':
                            ps = ps[1:]
                        elif ps[0] == 'super':
                            tb, ps = tb[:-1], ps[1:]
                        r = resolve(src, tb, ps, depth + 1)
                        if r:
                            return r
            return t
    return None

def edges(src, f):
    text = open(f).read()
    text = re.sub(r'//[^\n]*', '', text)
    # drop #[cfg(test)] mod tests { ... } at the end (rough: from the attribute on)
    m = re.search(r'#\[cfg\(test\)\]\s*mod \w+\s*\{', text)
    if m:
        text = text[:m.start()]
    me = modpath(src, f)
    is_modrs = os.path.basename(f) in ('mod.rs', 'lib.rs', 'main.rs')
    paths = []
    reexports = set()
    for m in re.finditer(r'(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);', text):
        items = expand(m.group(2))
        paths += items
        if m.group(1):
            reexports.update(re.sub(r'\s+as\s+\w+$', '', p.strip()) for p in items)
    for m in re.finditer(r'\b((?:crate|super)(?:::\w+)+)', text):
        paths.append(m.group(1))
    out = set()
    for p in paths:
        p = re.sub(r'\s+as\s+\w+$', '', p.strip())
        reexport = p in reexports
        segs = [s for s in p.split('::') if s]
        if not segs:
            continue
        if segs[0] == 'crate':
            base, segs = [], segs[1:]
        elif segs[0] == 'super':
            base = me[:-1] if not is_modrs else me[:-1]
            # super of a file module a/b.rs (path [a,b]) is [a]; of a/mod.rs ([a]) is []
            segs = segs[1:]
            while segs and segs[0] == 'super':
                base = base[:-1]; segs = segs[1:]
        elif segs[0] == 'self':
            base, segs = me, segs[1:]
        elif modfile(src, me + segs[:1]) and is_modrs:
            base = me
        else:
            continue
        best = resolve(src, base, segs)
        if best and reexport and is_modrs and os.path.dirname(best).startswith(os.path.dirname(f)):
            # a module root re-exporting its own parts declares them
            continue
        if best and best != f:
            # a parent mod.rs/lib.rs reached only through a re-export path
            out.add(best)
    return out

def cycles(src):
    files = []
    for d, _, fs in os.walk(src):
        files += [os.path.join(d, x) for x in fs if x.endswith('.rs')]
    g = {f: edges(src, f) for f in files}
    found = set()
    for a in g:
        for b in g[a]:
            if a in g.get(b, ()):
                found.add(tuple(sorted((a, b))))
    # longer cycles: SCCs
    idx, low, st, on, comps, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
        for w in g.get(v, ()):
            if w not in idx:
                sc(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            c = []
            while True:
                w = st.pop(); on.discard(w); c.append(w)
                if w == v: break
            if len(c) > 1: comps.append(c)
    for v in g:
        if v not in idx: sc(v)
    return found, comps

root = sys.argv[1] if len(sys.argv) > 1 else 'crates'
bad = 0
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, 'src')
    if not os.path.isdir(src):
        continue
    pairs, comps = cycles(src)
    for a, b in sorted(pairs):
        print(f'{crate}: pair {os.path.relpath(a, src)} <-> {os.path.relpath(b, src)}')
    for c in comps:
        # ignore cycles only through lib.rs/mod.rs declaring children
        bad += 1
        print(f'{crate}: ' + ' -> '.join(os.path.relpath(x, src) for x in c))
sys.exit(1 if bad else 0)
