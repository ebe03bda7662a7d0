"""topk.argmax: numpy's argmax of a read-only row copies it first; ours must not.

The rows llama.cpp's logits come in are read-only views (``Context.logits``), and with a
152k vocabulary the copy was most of a greedy step's choice. The copy is seen through
tracemalloc (numpy reports its buffers there), so no test here depends on timing.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.sampling import topk
from tests.core.engine.conftest import decoded


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view over writeable memory, as Context.logits hands rows out."""
    v = a.view()
    v.flags.writeable = False
    return v


@pytest.mark.parametrize("n", [1, 2, 7, 4096, 152_000])
def test_argmax_is_numpys_first_maximum(n: int) -> None:
    rng = np.random.default_rng(n)
    base = rng.integers(-3, 3, n).astype(np.float32)  # many ties: the first one wins
    for row in (base, _read_only(base), _read_only(base)[1:] if n > 1 else base):
        assert topk.argmax(row) == int(np.argmax(row))


def test_a_frozen_copy_takes_numpys_own_path() -> None:
    row = np.arange(10, dtype=np.float32)[::-1].copy()
    row.flags.writeable = False  # owns its memory, read-only: no writeable alias exists
    assert topk.argmax(row) == 0
    assert not row.flags.writeable


def test_numpy_copies_a_read_only_row_and_topk_argmax_does_not() -> None:
    row = _read_only(np.random.default_rng(0).standard_normal(152_000).astype(np.float32))
    # the control: numpy's own argmax allocates a copy of the row
    assert _peak_bytes(lambda: row.argmax()) >= row.nbytes
    assert _peak_bytes(lambda: topk.argmax(row)) < row.nbytes // 100
    assert not row.flags.writeable  # the caller's view is left read-only


def test_the_rows_a_decode_hands_out_are_read_without_a_copy(tiny: dict[str, Path]) -> None:
    with decoded(tiny["target"], [1, 2, 3]) as (_model, ctx, _b):
        row = ctx.logits(-1)
        assert not row.flags.writeable
        want = int(np.argmax(row.copy()))
        assert _peak_bytes(lambda: topk.argmax(row)) < max(row.nbytes // 4, 1)
        assert topk.argmax(row) == want
