"""The differential harness (test_differential.py) over every model family.

The same random draws (sampling settings, a mode with its draft sizes and cut-off,
a prompt that may leave only a few tokens of the context) on a target of each
family from specula_tools.tiny_families with its noisy same-architecture copy as
the draft: recurrent (mamba, mamba2), hybrid (qwen35, granitehybrid, lfm2) and
mixture of experts (qwen3moe). Properties as there: no exception, never an
ERROR reply, greedy equal to plain (or a genuine near-tie), and plain decoding
unchanged afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from tests.core.engine.conftest import closing_all
from tests.core.engine.reference import FreshTarget
from tests.core.engine.sampling_runs import fake_clock, make_engine, reply
from tests.core.engine.test_differential import (
    N_CTX,
    SETTINGS,
    Case,
    cases,
    finished,
    same_or_near_tie,
)

FAMILIES = ["qwen3moe", "mamba", "mamba2", "qwen35", "granitehybrid", "lfm2"]


@pytest.fixture(scope="module")
def engines(families: dict[str, Path]) -> Iterator[dict[str, Engine]]:
    with closing_all({f: make_engine(families[f], families[f"{f}-draft"], n_ctx=N_CTX)
                      for f in FAMILIES}) as built:
        yield built


@pytest.fixture(scope="module")
def fresh(families: dict[str, Path]) -> Iterator[dict[str, FreshTarget]]:
    with closing_all({f: FreshTarget(families[f]) for f in FAMILIES}) as refs:
        yield refs


def run_family_case(engines: dict[str, Engine], fresh: dict[str, FreshTarget], family: str,
                    case: Case) -> None:
    eng = engines[family]
    with fake_clock():
        plain = reply(eng, case.prompt, case.params, SpecConfig(mode=Mode.PLAIN))
        finished(plain)
        done = reply(eng, case.prompt, case.params, case.spec)
        finished(done)
        same_or_near_tie(fresh[family], case.prompt, plain.token_ids, done.token_ids)
        again = reply(eng, case.prompt, case.params, SpecConfig(mode=Mode.PLAIN))
    assert again.token_ids == plain.token_ids, "the engine's state changed plain decoding"


@SETTINGS
@given(family=st.sampled_from(FAMILIES), near_full=st.booleans(), data=st.data())
def test_families_greedy_equals_plain(engines: dict[str, Engine], fresh: dict[str, FreshTarget],
                                      family: str, near_full: bool, data: st.DataObject) -> None:
    run_family_case(engines, fresh, family, data.draw(cases(greedy=True, near_full=near_full)))


@SETTINGS
@given(family=st.sampled_from(FAMILIES), case=cases(greedy=False, near_full=False))
def test_families_sampled_replies_finish(engines: dict[str, Engine], fresh: dict[str, FreshTarget],
                                         family: str, case: Case) -> None:
    run_family_case(engines, fresh, family, case)
