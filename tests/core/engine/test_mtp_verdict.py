"""Adaptive's verdict and the Re-check on a target with MTP layers, with and without a draft
model beside it (the tiny qwen35 with one NextN layer and its noisy draft).

On such a target adaptive's policy is a head in the draft model's place, or one adaptive
policy per drafter and the choice between them by measured rate (policy/registry.py). The
header's verdict comes from ``Done.verdict`` and ``Engine.adaptive_verdict``, the Re-check
button calls ``Engine.clear_adaptive_verdict``: both must work whatever drafts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import DraftPolicy
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import run

GREEDY = SamplingParams(temperature=0.0, max_tokens=24)
ADAPTIVE = SpecConfig(mode=Mode.ADAPTIVE, draft_max=3)
PROMPT = "def print(self): return the code"


def _engine(families: dict[str, Path], with_draft: bool) -> Engine:
    eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False))
    eng.load_target(families["qwen35-mtp"])
    if with_draft:
        eng.load_draft(families["qwen35-mtp-draft"])
    assert eng.mtp_layers == 1
    return eng


@pytest.fixture(params=[False, True], ids=["mtp-alone", "mtp-and-draft"])
def eng(request: pytest.FixtureRequest, families: dict[str, Path], specula_home: Path) -> Iterator[Engine]:
    with closing(_engine(families, request.param)) as e:
        yield e


def _adaptive_policies(pol: object) -> list[AdaptivePolicy]:
    """The adaptive policies under the engine's (one per drafter)."""
    if isinstance(pol, AdaptivePolicy):
        return [pol]
    arms = getattr(pol, "arms", None)
    if arms is not None:
        return [p for arm in arms.values() for p in _adaptive_policies(arm)]
    return _adaptive_policies(getattr(pol, "inner", None))


def _make_stale(pol: DraftPolicy) -> None:
    """Costs from a machine where no drafter could ever pay (a draft decode of 10 s)."""
    found = _adaptive_policies(pol)
    assert found
    for p in found:
        for n in range(1, 5):
            for _ in range(3):
                p.cost.observe_verify(n, 0.01 * n)
        p.cost.draft = 10.0


def test_the_verdict_shows_and_the_re_check_drafts_again(eng: Engine) -> None:
    pol = eng.policy_for(ADAPTIVE)
    _make_stale(pol)
    done, _ = run(eng, PROMPT, GREEDY, ADAPTIVE)
    assert done.stats.drafted == 0
    assert done.verdict is not None and done.verdict.paused
    assert eng.adaptive_verdict() == done.verdict
    eng.clear_adaptive_verdict()  # the Re-check button
    v = eng.adaptive_verdict()
    assert v is not None and not v.paused
    done, _ = run(eng, PROMPT, GREEDY, ADAPTIVE)
    # the next reply probes: a drafter proposes again (the MTP head or the draft model)
    assert done.stats.drafted > 0
    assert done.verdict is not None


def test_without_a_reply_there_is_no_verdict_and_re_check_is_harmless(eng: Engine) -> None:
    assert eng.adaptive_verdict() is None
    eng.clear_adaptive_verdict()
    done, _ = run(eng, PROMPT, GREEDY, ADAPTIVE)
    assert done.verdict is not None
