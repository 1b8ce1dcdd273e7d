#!/usr/bin/env python3
"""Fail on an import circle inside a crate: `overspill` (src/), `overspill-workflows`
(workflows/src/), `overspill-python` (workflows/python/src/), `overspill-node`
(workflows/typescript/native/src/) and `overspill-cli` (src/cli/).

Every file is a module (`src/limits/unit.rs` is `limits::unit`, `src/cli/example/tools.rs` is
`example::tools` of the CLI). A path `crate::…`, `super::…` or `self::…` in one module that names
another is an edge; names a `mod.rs` re-exports (`pub use x::{A, B}`) resolve to the file that
defines them. Each edge is projected onto the siblings where the two paths part (`limits::bands`
using `limits::unit::Unit` is `bands -> unit` inside `limits`); a parent and its children are not
siblings. Among siblings the edges must form no cycle. Test code (`tests.rs`, `#[cfg(test)]`
items) is left out. Usage: check_imports.py [ROOT]; prints a cycle per module that has one, and exits 1 if any.
"""
import os, re, sys
from graphlib import CycleError, TopologicalSorter

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')


CRATES = ('src', 'workflows/src', 'workflows/python/src', 'workflows/typescript/native/src', 'src/cli')


def modules(base):
    """Module path (tuple) -> source without test items, for the crate whose sources are `base`."""
    out = {}
    top = os.path.join(ROOT, base)
    for d, dirs, files in os.walk(top):
        # A directory with a manifest of its own is another crate.
        dirs[:] = [x for x in dirs if not os.path.exists(os.path.join(d, x, 'Cargo.toml'))]
        for f in files:
            if not f.endswith('.rs') or f in ('tests.rs', 'main.rs'):
                continue  # the binary's root is not a module
            rel = os.path.relpath(os.path.join(d, f), top)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib'):
                rel = rel[:-1]
            out[tuple(rel)] = strip_tests(open(os.path.join(d, f), encoding='utf-8').read())
    return out


def strip_tests(src):
    """Drop `#[cfg(test)]` items (to the end of their brace block) and comments."""
    src = re.sub(r'//[^\n]*', '', src)
    while (i := src.find('#[cfg(test)]')) >= 0:
        j = src.find('{', i)
        k = src.find(';', i)
        if k >= 0 and (j < 0 or k < j):
            src = src[:i] + src[k + 1:]
            continue
        depth, e = 0, j
        while e < len(src):
            depth += {'{': 1, '}': -1}.get(src[e], 0)
            e += 1
            if depth == 0:
                break
        src = src[:i] + src[e:]
    return src


def paths(path, src):
    """Absolute paths (tuples of segments) the module names, `use` groups expanded."""
    found = []

    def expand(prefix, body):
        # body: `a::b`, `a::{b, c::{d}}`, `a as b`, `*`
        body = body.strip()
        m = re.match(r'([\w:]*?)(::)?\{(.*)\}$', body, re.S)
        if m:
            head = [s for s in m.group(1).split('::') if s]
            depth, part, parts = 0, '', []
            for ch in m.group(3):
                if ch == ',' and depth == 0:
                    parts.append(part); part = ''
                    continue
                depth += {'{': 1, '}': -1}.get(ch, 0)
                part += ch
            parts.append(part)
            for p in parts:
                if p.strip():
                    expand(prefix + head, p)
        else:
            found.append(prefix + [s for s in body.split(' as ')[0].split('::') if s])

    for m in re.finditer(r'\buse\s+((?:crate|super|self)\b[^;]*);', src):
        expand([], m.group(1))
    for m in re.finditer(r'\b((?:crate|super|self)(?:::\w+)+)', src):
        expand([], m.group(1))
    out = []
    for p in found:
        base = list(path)
        if p[0] == 'crate':
            base, p = [], p[1:]
        while p and p[0] in ('super', 'self'):
            if p[0] == 'super':
                base = base[:-1]
            p = p[1:]
        out.append(tuple(base + p))
    return out


def main():
    return max(check(base) for base in CRATES)


def check(base):
    """Print the circles in the crate whose sources are `base`; 1 if there are any."""
    mods = modules(base)
    # Re-exports in a module's root: name -> defining child module.
    reexp = {}
    for path, src in mods.items():
        for p in paths(path, ' '.join(re.findall(r'\bpub use\s+[^;]*;', src))):
            child = next((p[:n] for n in range(len(p), len(path), -1) if p[:n] in mods), None)
            if child and child != path and p[-1] != '*':
                reexp[path + (p[-1],)] = child

    def resolve(p):
        for _ in range(8):
            hit = next((p[:n] for n in range(len(p), 0, -1) if p[:n] in reexp), None)
            if not hit:
                break
            p = reexp[hit] + p[len(hit):]
        return next((p[:n] for n in range(len(p), -1, -1) if p[:n] in mods), ())

    edges = {}  # parent -> {child: {child}}
    for path, src in mods.items():
        for p in paths(path, src):
            target = resolve(p)
            n = 0
            while n < min(len(path), len(target)) and path[n] == target[n]:
                n += 1
            if n == len(path) or n == len(target):
                continue  # the same module, a parent or a child
            parent = path[:n]
            edges.setdefault(parent, {}).setdefault(path[n], set()).add(target[n])

    failed = 0
    for parent, graph in sorted(edges.items()):
        try:
            TopologicalSorter(graph).prepare()
        except CycleError as e:
            failed = 1
            print(f"import circle in {base}: crate{''.join('::' + p for p in parent)}: {' -> '.join(reversed(e.args[1]))}")
    return failed


if __name__ == '__main__':
    sys.exit(main())
