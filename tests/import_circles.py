"""Strongly connected components of a grimp import graph (Tarjan's algorithm, iterative)."""

from __future__ import annotations

import grimp


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every group of two or more modules that reach one another, each sorted, sorted."""
    modules = sorted(graph.modules)
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules))
             for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    group.append(m)
                    if m == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)
