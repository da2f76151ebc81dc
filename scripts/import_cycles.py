#!/usr/bin/env python3
"""File-level import cycles among one crate's source files.

usage: import_cycles.py SRC_DIR

A file imports another when it names an item of it: through `crate::a::b`, `super::x`,
`self::x`, a group such as `use super::{a, b::c}` or `use crate::{a, b}`, or a child module it
declares (`mod child;` then `child::Item`). Prints each set of files that reach each other
(a strongly connected set of more than one file), then `largest import cycle: N files`.
Test modules (`#[cfg(test)] mod tests { ... }` to the end of a file, and files named
`tests.rs`) are left out: a test may use anything.
"""
import os
import re
import sys


def modules(src):
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].replace(os.sep, "::")
            files[re.sub(r"(::)?(mod|lib)$", "", rel)] = path
    return files


def strip(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    test = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    return text[: test.start()] if test else text


def expand_groups(text):
    """`prefix::{a, b::c}` -> `prefix::a prefix::b::c` (nested groups too)."""
    group = re.compile(r"((?:\w+::)+)\{([^{}]*)\}")
    while True:
        match = group.search(text)
        if not match:
            return text
        prefix, items = match.group(1), match.group(2)
        parts = [p.strip().split(" as ")[0] for p in items.split(",") if p.strip()]
        joined = " ".join(prefix + p if p != "self" else prefix[:-2] for p in parts)
        text = text[: match.start()] + " " + joined + " " + text[match.end():]


def main():
    src = os.path.abspath(sys.argv[1])
    files = modules(src)

    def resolve(path):
        parts = [p for p in path.split("::") if p]
        for k in range(len(parts), 0, -1):
            candidate = "::".join(parts[:k])
            if candidate in files:
                return candidate
        return None

    edges = {m: set() for m in files}
    for mod, path in files.items():
        text = expand_groups(strip(open(path, encoding="utf-8", errors="replace").read()))
        here = mod.split("::") if mod else []
        parent = here[:-1]
        children = re.findall(r"\bmod\s+(\w+)\s*;", text)
        refs = []
        for m in re.finditer(r"\bcrate::((?:\w+::)*\w+)", text):
            refs.append(m.group(1))
        for m in re.finditer(r"\bsuper::((?:\w+::)*\w+)", text):
            refs.append("::".join(parent + [m.group(1)]))
        for m in re.finditer(r"\bself::((?:\w+::)*\w+)", text):
            refs.append("::".join(here + [m.group(1)]))
        for child in children:
            for m in re.finditer(r"(?<![:\w])" + child + r"::((?:\w+::)*\w+)", text):
                refs.append("::".join(here + [child, m.group(1)]))
        for ref in refs:
            target = resolve(ref)
            if target is not None and target != mod and target != "":
                edges[mod].add(target)

    index, low, stack, on_stack, sccs = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            sccs.append(component)

    for v in files:
        if v not in index:
            visit(v)
    cycles = sorted((c for c in sccs if len(c) > 1), key=len, reverse=True)
    for c in cycles:
        print(f"cycle of {len(c)} files: " + ", ".join(sorted(c)))
    print(f"largest import cycle: {max((len(c) for c in cycles), default=1)} files")


if __name__ == "__main__":
    main()
