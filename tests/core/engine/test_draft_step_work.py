"""A drafted step's bookkeeping over the committed tokens is proportional to what the step
changed, not to the length of the chat.

Counted, not timed: the committed list is a ``list`` that counts the items every slice,
iteration, index and comparison touches (the draft's cache list too), and the count per
step with a 1,900-token history must equal the count with a 40-token one. The old
``DraftModel.lag`` compared the whole cache with a copy of the whole history every step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, SupportsIndex

import numpy as np
import pytest

from specula.core.engine.drafters import ChainDrafter, DraftModel, DraftRequest
from specula.core.engine.engine import Engine
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import make_engine

GREEDY = SamplingParams(temperature=0.0, max_tokens=64)


class Counting(list[int]):
    """A list that counts the items its slices, iterations, lookups and comparisons touch."""

    touched = 0

    def __getitem__(self, i: SupportsIndex | slice) -> Any:
        got = super().__getitem__(i)
        Counting.touched += len(got) if isinstance(i, slice) else 1
        return got

    def __iter__(self) -> Iterator[int]:
        Counting.touched += len(self)
        return super().__iter__()

    def __eq__(self, other: object) -> bool:
        Counting.touched += min(len(self), len(other)) if isinstance(other, list) else 0
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


@pytest.fixture(scope="module")
def pair(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"], n_ctx=2048)
    yield eng
    eng.close()


def _work_per_step(dm: DraftModel, history: list[int], params: SamplingParams,
                   steps: int = 12) -> list[int]:
    """Items touched per step of the generator's draft bookkeeping (the lag the policy
    reads, the drafter's catch-up and proposal, the cut after verification), with a
    target that accepts the first drafted token and adds one of its own."""
    drafter = ChainDrafter(dm)
    dm.reset()
    committed = Counting(history)
    dm.begin(committed, sync=True)
    dm.kv.tokens = Counting(dm.kv.tokens)  # the cache's own list counts as well
    rng = np.random.default_rng(0)
    per_step = []
    for i in range(steps):
        Counting.touched = 0
        assert dm.lag(committed) >= 1
        drafter.lag(committed)  # the generator asks every active drafter (chain and tree)
        req = DraftRequest(committed=committed, k=3, params=params, seed=0, rng=rng,
                           keep=lambda i, p, e: (True, True), confidence=False)
        prop = drafter.propose(req)
        fed = list.__getitem__(dm.kv.tokens, slice(None))  # (not counted)
        own = 7 + i % 5  # the target's own token after one accepted draft token
        committed.extend([prop.tokens[0], own])
        drafter.accept(committed, 1)
        per_step.append(Counting.touched)
        # exact: the draft was fed the whole reply and its own chain (all but the last
        # drafted token), and kept only what the target accepted
        assert len(prop) == 3 and fed == list(committed[:-2]) + prop.tokens[:2]
        assert list(dm.kv.tokens) == list(committed[:-1])
    return per_step


@pytest.mark.parametrize("params", [GREEDY, replace(GREEDY, repeat_penalty=1.1)],
                         ids=["greedy", "penalties"])
def test_a_step_s_work_does_not_grow_with_the_history(pair: Engine, params: SamplingParams) -> None:
    """(With penalties the draft keeps the last repeat_last_n tokens, 64, for them.)"""
    gen = pair.generator
    assert gen is not None and gen.draft_model is not None
    short = [1, *range(10, 90)]
    long = [1, *((i * 7) % 90 + 10 for i in range(1900))]
    work_short = _work_per_step(gen.draft_model, short, params)
    work_long = _work_per_step(gen.draft_model, long, params)
    assert work_long == work_short, (work_short, work_long)
    assert max(work_long) < 200  # a few dozen items a step, not the 1,900 of the history
