"""How far two token sequences agree, at C speed: the question every prefix reuse and
every draft catch-up asks of a chat that only grows."""

from __future__ import annotations

from collections.abc import Sequence


def common_prefix(a: Sequence[int], b: Sequence[int], start: int = 0) -> int:
    """Length of the longest common prefix, given that the first ``start`` items agree
    (they are not compared again). The rest is compared as slices at C speed (one
    comparison, then chunks of 64 and the first unequal chunk item by item when they
    differ): the work is proportional to ``len - start``, not to the whole sequence."""
    n = min(len(a), len(b))
    i = min(max(start, 0), n)
    if span(a, i, n) == span(b, i, n):
        return n
    while i + 64 <= n and span(a, i, i + 64) == span(b, i, i + 64):
        i += 64
    while i < n and a[i] == b[i]:
        i += 1
    return i


def span(x: Sequence[int], i: int, j: int) -> list[int]:
    """``x[i:j]`` as a list (a list's slice already is one; a tuple's or an array's is not
    equal to a list however alike)."""
    part = x[i:j]
    return part if isinstance(part, list) else list(part)
