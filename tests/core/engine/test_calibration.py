"""A new pair's cost model is measured at load (verify batches 1..8, draft decodes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.loop.calibration import MAX_BATCH, TREE_BATCH, Calibration, timed_passes
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.cost_model import CostModel
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, run

GREEDY = SamplingParams(temperature=0.0, max_tokens=20)
ADAPTIVE = SpecConfig(mode=Mode.ADAPTIVE)


def _engine(tiny: dict[str, Path], calibrate: bool = True) -> Engine:
    eng = Engine(EngineOptions(n_ctx=1024, n_threads=2, calibrate=calibrate))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    return eng


@pytest.fixture
def eng(tiny: dict[str, Path], specula_home: Path) -> Iterator[Engine]:
    """A new pair, calibrated as it loads (in a fresh Specula home)."""
    with closing(_engine(tiny)) as e:
        yield e


def test_loading_a_draft_times_every_verify_batch_and_leaves_both_caches_empty(eng: Engine) -> None:
    cal = eng.calibration
    assert cal is not None
    assert sorted(cal.verify) == [*range(1, MAX_BATCH + 1), TREE_BATCH]
    assert cal.catchup_per_token is not None and cal.catchup_per_token >= 0
    assert cal.catchup_long_per_token is not None and cal.catchup_long_per_token >= 0
    assert all(s > 0 for s in cal.verify.values())
    assert cal.draft is not None and cal.draft > 0
    # the measurement's wall time holds every timing it reports (a median of a size's
    # timings is at most their sum): no speed bound here, that is the benchmarks' job
    assert cal.seconds >= sum(cal.verify.values()) + cal.draft
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    assert gen.kv.tokens == [] and gen.draft_model.kv.tokens == []  # no made-up prefix survives


def test_a_new_pairs_adaptive_policy_starts_from_the_calibration_and_keeps_plain_text(eng: Engine) -> None:
    cost = eng.policy_for(ADAPTIVE).cost  # type: ignore[attr-defined]
    assert eng.calibration is not None
    assert cost.verify_time(3) == pytest.approx(eng.calibration.verify[3])
    assert cost.draft == pytest.approx(eng.calibration.draft)
    plain, _ = run(eng, "tell me a story about a cat", GREEDY, PLAIN)
    done, _ = run(eng, "tell me a story about a cat", GREEDY, ADAPTIVE)
    assert done.token_ids == plain.token_ids


def test_without_calibration_a_new_pair_knows_nothing(tiny: dict[str, Path], specula_home: Path) -> None:
    with closing(_engine(tiny, calibrate=False)) as eng:
        assert eng.calibration is None
        assert eng.policy_for(ADAPTIVE).cost.verify_time(1) is None  # type: ignore[attr-defined]


def test_a_saved_cost_model_wins_over_the_calibration_unless_the_machine_is_faster_now() -> None:
    cost = CostModel()
    cost.observe_verify(1, 0.11)  # saved at about the speed the load measures
    assert not Calibration(verify={1: 0.1, 2: 0.2}, draft=0.01).seed(cost)
    assert cost.verify == {1: 0.11} and cost.draft is None
    # saved while another process slowed the machine 5x: this load's timings replace them
    contended = CostModel()
    contended.observe_verify(1, 0.5)
    contended.observe_verify(2, 1.0)
    contended.draft = 0.05
    assert Calibration(verify={1: 0.1, 2: 0.2}, draft=0.01).seed(contended)
    assert contended.verify == {1: 0.1, 2: 0.2} and contended.draft == pytest.approx(0.01)
    # ... but not by a load whose own passes disagreed
    again = CostModel()
    again.observe_verify(1, 0.5)
    assert not Calibration(verify={1: 0.1, 2: 0.2}, draft=0.01, erratic=True).seed(again)
    assert again.verify == {1: 0.5}
    empty = CostModel()
    assert Calibration(verify={1: 0.1, 2: 0.2}, draft=0.01).seed(empty)
    assert empty.verify_time(2) == pytest.approx(0.2) and empty.draft == pytest.approx(0.01)


def test_an_adaptive_reply_carries_the_verdict_and_the_engine_can_clear_it(eng: Engine) -> None:
    pol = eng.policy_for(ADAPTIVE)
    assert isinstance(pol, AdaptivePolicy)
    pol.cost.draft = 10.0  # a stale measurement: no chain could ever pay
    done, _ = run(eng, "tell me a story about a cat", GREEDY, ADAPTIVE)
    assert done.verdict is not None and done.verdict.paused
    assert eng.adaptive_verdict() == done.verdict
    assert run(eng, "hi", GREEDY, PLAIN)[0].verdict is None  # other modes say nothing
    eng.clear_adaptive_verdict()
    assert eng.calibration is not None
    assert pol.cost.draft == pytest.approx(eng.calibration.draft)  # back to the calibration
    done, _ = run(eng, "tell me a story about a cat", GREEDY, ADAPTIVE)
    assert done.stats.drafted > 0  # the next reply probes the draft


def test_noisy_passes_are_repeated_and_their_median_kept() -> None:
    quiet = {1: 0.10, 4: 0.20, 8: 0.30}
    calls: list[int] = []

    def steady(n: int) -> float:
        calls.append(n)
        return quiet[n]

    verify, passes, erratic = timed_passes([1, 4, 8], steady)
    assert (verify, passes, erratic) == (quiet, 1, False) and calls == [1, 4, 8, 1, 4, 8]
    # the first pass of size 4 was preempted (3x), the later ones were quiet
    seq = iter([0.10, 0.60, 0.30, 0.10, 0.20, 0.30, 0.10, 0.20, 0.30])
    verify, passes, erratic = timed_passes([1, 4, 8], lambda n: next(seq))
    assert verify == {1: 0.10, 4: 0.20, 8: 0.30} and passes == 3 and not erratic
    # every pass disagrees with the one before: erratic
    wild = iter([0.1, 0.2, 0.3, 0.3, 0.6, 0.9, 0.1, 0.2, 0.3])
    _, _, erratic = timed_passes([1, 4, 8], lambda n: next(wild))
    assert erratic
