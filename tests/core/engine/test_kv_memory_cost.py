"""The adaptive policy pays for a recurrent target's checkpoints and replays.

On a hybrid or recurrent target every drafted step saves a checkpoint of the
recurrent state, and a partly rejected one restores it and decodes the kept
tokens again (kv.py). The step records carry those seconds
(``checkpoint_s``, ``replay_s``); the cost model learns them per drafted step
(``CostModel.rollback``) and the plan weighs them: a draft that pays on an
attention target with the same verify and draft costs must not be chosen where
the rollback eats the gain. Expected figures are worked out by hand below.
"""

from __future__ import annotations

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.loop.calibration import Calibration
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.cost_model import CostModel
from specula.core.engine.policy.fixed import Outcome, PlanInput
from specula.core.engine.stats import StepRecord
from tests.core.engine.test_modes import ALL, _train

INP = PlanInput(room=8, available=ALL, lookup_tokens=[], lookup_match=0)


def _drafted_step(rollback_s: float) -> Outcome:
    rec = StepRecord(0, 4, 2, 3, 0.160, 0.218, 0.0, draft_decodes=4, catchup=1,
                     checkpoint_s=0.002, replay_s=rollback_s - 0.002)
    return Outcome(TokenOrigin.CHAIN, [0.9] * 4, [0.3] * 4, 2, 0, rec)


def _trained(rollback_s: float | None) -> AdaptivePolicy:
    """A memory-bound target where drafting pays (v1 170 ms, +12 ms per verified token,
    a 40 ms draft decode, 90% acceptance: k=4 yields ~4.1 tokens in 378 ms, 10.8 tok/s
    against plain's 5.9), then the rollback each drafted step costs."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.9)
    if rollback_s is not None:
        for _ in range(40):
            pol.observe(_drafted_step(rollback_s))
    return pol


def test_the_rollback_is_learnt_from_the_step_records() -> None:
    pol = _trained(0.5)
    assert abs(pol.cost.rollback_time() - 0.5) < 1e-3


def test_drafting_that_pays_on_attention_is_dropped_where_the_rollback_eats_the_gain() -> None:
    assert _trained(None).plan(INP).source == "draft"
    assert _trained(0.05).plan(INP).source == "draft"  # 10.8 -> 9.5 tok/s: still pays
    # 0.5 s per drafted step: ~4.1 tokens in 0.88 s = 4.7 tok/s, below plain's 5.9
    assert _trained(0.5).plan(INP).source == "target"


def test_calibration_seeds_the_rollback_of_a_new_pair() -> None:
    cost = CostModel()
    Calibration(verify={1: 0.03, 2: 0.04}, draft=0.01, rollback=0.004).seed(cost)
    assert cost.rollback_time() == 0.004
    assert CostModel().rollback_time() == 0.0  # an attention target pays nothing
