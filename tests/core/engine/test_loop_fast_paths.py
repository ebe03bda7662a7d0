"""The decode loop's per-token fast paths give what the general code gives: token text
(whole characters decoded directly, split ones through the incremental decoder), small
verify batches (element stores instead of numpy slices), logits rows (one view per
address, a new array object per call), end-of-generation checks (asked once per token)."""

from __future__ import annotations

import codecs
from pathlib import Path

import llama_cpp as L
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specula.core.engine.loop.text import Utf8Stream
from specula.core.engine.native import batch
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.llama import Model
from tests.core.engine.conftest import decoded

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXT.map(lambda t: t.encode()), st.binary(max_size=6)), max_size=12),
       st.data())
def test_token_text_equals_the_incremental_decoder(chunks: list[bytes], data: st.DataObject) -> None:
    """Any bytes cut anywhere (characters split over tokens, invalid bytes): every token's
    text is what the incremental decoder alone gives for it, and so is the flush."""
    blob = b"".join(chunks)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=10)))
    pieces = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
    ref = codecs.getincrementaldecoder("utf-8")(errors="replace")
    stream = Utf8Stream()
    for p in pieces:
        assert stream.feed(p) == ref.decode(p)
    assert stream.flush() == ref.decode(b"", final=True)


def test_a_split_character_comes_out_whole_after_the_fast_path() -> None:
    s = Utf8Stream()
    e = "é".encode()
    assert s.feed(b"a") == "a"
    assert s.feed(e[:1]) == ""  # held
    assert s.feed(e[1:] + b"b") == "éb"
    assert s.feed(b"c") == "c"  # back on the direct decode


def _arrays(b: Batch, n: int) -> tuple[list[int], ...]:
    return (b.token[:n].tolist(), b.pos[:n].tolist(), b.n_seq_id[:n].tolist(),
            b.logits[:n].tolist(), [int(r[0]) for r in b.seq_ids[:n]], [b.n_outputs, b.n_tokens])


@pytest.mark.parametrize("outputs", ["none", "last", "all"])
@pytest.mark.parametrize("n", [0, 1, 3, 8])
def test_a_small_batch_is_filled_as_the_numpy_path_fills_it(
        outputs: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    toks = [7 + 3 * i for i in range(n)]
    fast, slow = Batch(16, 2), Batch(16, 2)
    for b in (fast, slow):  # a previous fill left other values and another sequence
        b.fill(list(range(100, 116)), 40, outputs="all", seq=1)
        b.fill(list(range(100, 110)), 50, outputs="all")
    fast.fill(toks, 5, outputs=outputs)
    monkeypatch.setattr(batch, "_SMALL_BATCH", -1)  # every fill takes the numpy path
    slow.fill(toks, 5, outputs=outputs)
    assert _arrays(fast, n) == _arrays(slow, n)
    assert fast.n_tokens == n


def test_logits_rows_are_new_read_only_views_of_the_current_output(tiny: dict[str, Path]) -> None:
    with decoded(tiny["target"], [1, 2, 3], outputs="all") as (model, ctx, b):
        rows = [ctx.logits(i) for i in range(3)]
        again = ctx.logits(1)
        assert again is not rows[1] and np.array_equal(again, rows[1])
        assert np.shares_memory(again, rows[1]) and not again.flags.writeable
        # the same rows llama_get_logits_ith points at, copied independently
        for i, row in enumerate(rows):
            ptr = L.llama_get_logits_ith(ctx._ctx, i)
            want = np.ctypeslib.as_array(ptr, shape=(model.n_vocab,)).copy()
            assert np.array_equal(row, want)
        assert ctx.logits(-1) is not rows[2] and np.array_equal(ctx.logits(-1), rows[2])
        before = ctx.logits(-1).copy()
        b.fill([4], 3, outputs="last")
        ctx.decode(b)
        after = ctx.logits(-1)
        assert not np.array_equal(after, before)  # the next decode's row, not a stale copy


def test_end_of_generation_is_what_llama_cpp_says_for_every_token(tiny: dict[str, Path]) -> None:
    model = Model(tiny["target"])
    try:
        for _ in range(2):  # asked, then remembered
            got = [model.is_eog(t) for t in range(model.n_vocab)]
            want = [bool(L.llama_vocab_is_eog(model.vocab, t)) for t in range(model.n_vocab)]
            assert got == want and any(want)
    finally:
        model.close()
