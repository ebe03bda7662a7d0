"""The adaptive policy's governor (policy/governor.py): the judgement between replies as one
state machine, the verdict read from it, saved with the models; and the policy's queries,
which answer without changing anything.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.governor import TRANSITIONS, Governor, Phase
from specula.core.engine.policy.shapes import ShapeRates
from tests.core.engine.adaptive_sim import F16, Q4, run_reply, script

D, E, P, H = Phase.DRAFTING, Phase.EXPLORING, Phase.PAUSED, Phase.HELD


def test_the_transition_table() -> None:
    """Written out here from docs/engine.md's table, not read from the module's."""
    expected = {
        (D, "pays"): D, (P, "pays"): D,
        (D, "loses"): P, (P, "loses"): P, (H, "loses"): H,
        (E, "explore"): D, (D, "explore"): D,
        (D, "probe pays"): D, (P, "probe pays"): D,
        (D, "probe loses"): D, (P, "probe loses"): P,
        (H, "probe gained"): P, (H, "probe lost"): H,
        (H, "new session"): P,
    }
    for p in (D, E, P, H):
        expected[(p, "clear")] = E
        expected[(p, "stop")] = H
    assert expected == TRANSITIONS
    g = Governor()
    assert g.phase is D and not g.paused
    for event, phase, paused in [("loses", P, True), ("stop", H, True), ("loses", H, True),
                                 ("probe lost", H, True), ("probe gained", P, True),
                                 ("probe pays", D, False), ("clear", E, False),
                                 ("pays", E, False),  # no row: a re-check waits for its probe
                                 ("explore", D, False)]:
        assert g.on(event) is phase and g.paused is paused, event


def test_the_verdict_is_read_from_the_phase() -> None:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    for event, paused in [("loses", True), ("probe pays", False), ("stop", True), ("clear", False)]:
        pol.governor.on(event)
        v = pol.verdict()
        assert v is not None and v.paused is paused, event


def test_the_phase_is_saved_with_the_models_and_not_from_an_erratic_session(tmp_path: Path) -> None:
    state = tmp_path / "pair.json"
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0)
    pol = AdaptivePolicy(spec, state, calibration=Q4.calibration())
    for s in range(3):  # the compute-bound pair: drafting does not pay, replies run paused
        run_reply(pol, Q4, *script(0.6, 64, s), max_tokens=64)
    assert pol.verdict() is not None and pol.paused
    assert json.loads(state.read_text())["phase"] == pol.governor.phase.value
    again = AdaptivePolicy(spec, state)
    assert again.governor.phase is pol.governor.phase
    pol.governor.on("stop")  # a hold is about the text of the session that lost
    pol.save()
    assert AdaptivePolicy(spec, state).governor.phase is P
    pol.cost.erratic = True  # timings under contention never outlive their session
    pol.save()
    assert "phase" not in json.loads(state.read_text())
    assert AdaptivePolicy(spec, state).governor.phase is D


def _state(obj: Any, depth: int = 0) -> Any:
    """Everything an object holds, as plain values (to compare before and after a query)."""
    if depth > 6:
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _state(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, deque)):
        return [_state(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(map(repr, obj))
    if hasattr(obj, "__dict__") and not callable(obj):
        return {k: _state(v, depth + 1) for k, v in vars(obj).items()}
    return obj


def test_queries_change_nothing() -> None:
    """A pair mid-session (drafting, a tree measured): every question the policy answers
    leaves it as it was, so the order questions are asked in decides nothing."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=12, tree_width=2),
                         calibration=F16.calibration())
    for s in range(3):
        run_reply(pol, F16, *script(0.85, 96, s), max_tokens=96)
    before = _state(pol)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None
    for _ in range(3):
        pol.verdict()
        pol.replies_to_recheck()
        pol.draft_rate(8)
        pol.draft_rate(8, a=0.9, fed=True)
        pol.draft_pays_rate(8)
        pol.could_pay(v1)
        pol.unmeasured_k(8)
        pol.hindsight_cap(8)
        pol.sync_window()
        pol.sync_after()
        pol.shapes.wants_tree(1.0 / v1, 0.02, lambda: 100.0)
        assert pol.probe_steps_left >= 0 and isinstance(pol.retiming, bool) and isinstance(pol.paused, bool)
    assert _state(pol) == before


def test_asking_whether_a_tree_is_wanted_counts_nothing() -> None:
    shapes = ShapeRates()
    shapes.observe("draft", 10.0)
    shapes.draft_steps = 40  # past the chain steps a tree waits for
    for _ in range(5):
        assert shapes.wants_tree(5.0, 0.02, lambda: 100.0) == "try"
    assert shapes.draft_steps == 40 and shapes.tree_tries == 0
    assert shapes.choose_tree(5.0, 0.02, lambda: 100.0)  # the plan's choice is counted
    assert shapes.draft_steps == 41 and shapes.tree_tries == 1
