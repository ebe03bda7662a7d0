"""Prompt lookup through the growing n-gram index gives exactly what a scan of the whole
conversation gives, however the conversation changes between calls.

The reference is the scan lookup ran before the index (every earlier occurrence of the
tail, the latest first), written here independently of the index.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specula.core.engine.drafters import LookupDrafter
from specula.core.engine.drafters.ngram_index import NgramIndex
from specula.core.engine.drafters.proposal import EXTENT_BUCKETS


def scan_match(seq: list[int], k: int, n_min: int, n_max: int) -> tuple[list[int], int]:
    """The latest earlier occurrence of the longest matching tail n-gram, by a full scan."""
    n_tok = len(seq)
    if k <= 0 or n_tok < 2:
        return [], 0
    arr = np.asarray(seq, dtype=np.int64)
    for n in range(min(n_max, n_tok - 1), n_min - 1, -1):
        tail = arr[n_tok - n:]
        for s in range(n_tok - n - 1, -1, -1):  # s + n <= n_tok - 1: a token follows
            if np.array_equal(arr[s:s + n], tail):
                code = n
                if n == n_max:
                    agree = 0
                    while (agree < EXTENT_BUCKETS[-1] - n and agree < s
                           and seq[s - 1 - agree] == seq[n_tok - n - 1 - agree]):
                        agree += 1
                    code += sum(1 for b in EXTENT_BUCKETS if n + agree >= b)
                return [int(t) for t in arr[s + n:min(s + n + k, n_tok)]], code
    return [], 0


# One call's sequence from the last: grown by appends to the same list, a new list that
# continues it, or a new list cut back and continued otherwise (a regenerated reply).
steps = st.lists(st.tuples(st.sampled_from(["append", "copy", "cut"]),
                           st.lists(st.integers(0, 5), min_size=0, max_size=12),
                           st.integers(0, 40), st.integers(0, 9)),
                 min_size=1, max_size=25)


@pytest.mark.parametrize("n_min,n_max", [(1, 4), (2, 3), (1, 1), (3, 4)])
@settings(max_examples=60, deadline=None)
@given(steps=steps)
def test_lookup_equals_the_scan_whatever_the_sequence_does(n_min: int, n_max: int, steps) -> None:  # type: ignore[no-untyped-def]
    lk = LookupDrafter(ngram_max=n_max, ngram_min=n_min)
    seq: list[int] = []
    for how, new, cut, k in steps:
        if how == "append":
            seq.extend(new)  # the same list object, grown
        elif how == "copy":
            seq = [*seq, *new]
        else:
            seq = [*seq[:max(len(seq) - cut, 0)], *new]
        assert lk.context_match(seq, k) == scan_match(seq, k, n_min, n_max)


def test_a_long_pasted_block_is_matched_at_its_latest_copy() -> None:
    rng = np.random.default_rng(5)
    block = [int(t) for t in rng.integers(0, 50_000, 300)]
    seq = [*block, 7, *block, 8, *block[:50]]
    lk = LookupDrafter()
    got = lk.context_match(seq, 8)
    assert got == scan_match(seq, 8, 1, 4)
    assert got[0] == block[50:58] and got[1] == 4 + 3  # 32+ tokens agree: the top code


def test_an_edit_inside_an_indexed_sequence_is_seen() -> None:
    """The same list changed before its end (not only appended to): the last indexed token
    no longer agrees, so the index starts over rather than answer from stale n-grams."""
    lk = LookupDrafter(ngram_max=2)
    seq = [1, 2, 3, 9, 1, 2]
    assert lk.context_match(seq, 2) == ([3, 9], 2)
    seq[-1] = 5  # the tail's token replaced in place
    seq.extend([1, 5])
    assert lk.context_match(seq, 2) == scan_match(seq, 2, 1, 2)


def test_index_bounds() -> None:
    with pytest.raises(ValueError):
        NgramIndex(0, 3)
    with pytest.raises(ValueError):
        NgramIndex(3, 2)
    idx = NgramIndex(1, 2)
    idx.sync([4])
    assert idx.latest(1) is None and idx.latest(3) is None
