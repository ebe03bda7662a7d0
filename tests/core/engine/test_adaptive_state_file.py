"""A bad adaptive-state file is a cache miss: discarded with a log line, the reply runs.

Before: ``[]`` or ``"draft": "x"`` broke every default-mode reply (and every
default-mode request of ``specula serve``) until the file was deleted.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import make_engine, run


def _good_state() -> dict[str, object]:
    policy = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE))
    policy.cost.verify = {1: 0.01, 4: 0.03}
    policy.cost.verify_n = {1: 3, 4: 3}
    policy.cost.draft = 0.004
    policy.cost.catchup_long_per_token = 0.001
    policy.acc.first_rate = 0.8
    return policy.to_dict()


BAD = {
    "a list": [],
    "a string": "adaptive",
    "draft is text": {**_good_state(), "draft": "x"},
    "verify is a list": {**_good_state(), "verify": [1, 2]},
    "NaN time": {**_good_state(), "verify": {"1": float("nan")}},
    "negative count": {**_good_state(), "verify_n": {"1": -4}},
    "first_rate 7": {**_good_state(), "first_rate": 7},
    "a key missing": {k: v for k, v in _good_state().items() if k != "tot"},
    "bad key": {**_good_state(), "acc": {"one": 1.0}},
    "more accepted than judged": {**_good_state(), "rate_acc": 5.0, "rate_judged": 2.0},
    "depths cut short": {**_good_state(), "depth_acc": [1.0, 2.0]},
    "long catch-up is text": {**_good_state(), "catchup_long_per_token": "fast"},
    "a depth accepted more than judged": {**_good_state(), "depth_acc": [3.0] + [0.0] * 15},
}


def test_a_state_saved_before_the_per_token_rate_keeps_its_costs(tmp_path: Path) -> None:
    old = {k: v for k, v in _good_state().items()
           if k not in ("rate_acc", "rate_judged", "depth_acc", "depth_judged", "catchup_long_per_token")}
    path = tmp_path / "state.json"
    path.write_text(json.dumps(old))
    policy = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE), path)
    assert policy.cost.verify == {1: 0.01, 4: 0.03} and policy.acc.rate_judged == 0.0
    assert policy.cost.catchup_long_per_token is None


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_state_is_discarded_with_a_log_line(name: str, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(BAD[name]))
    with caplog.at_level(logging.WARNING, "specula.engine.adaptive"):
        policy = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE), path)
    fresh = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE))
    assert policy.to_dict() == fresh.to_dict()  # nothing half-loaded
    assert "discarding bad policy state" in caplog.text


def test_a_good_state_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_good_state()))
    policy = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE), path)
    assert policy.to_dict() == _good_state()


@pytest.mark.parametrize("name", ["a list", "draft is text"])
def test_default_mode_replies_run_over_a_bad_state_file(name: str, tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    try:
        state = eng._policy_state_path("adaptive")
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps(BAD[name]))
        done, tokens = run(eng, "hello", SamplingParams(max_tokens=8), SpecConfig(mode=Mode.ADAPTIVE))
        assert tokens and done.text
        assert json.loads(state.read_text())["version"] == 1  # replaced by a good state
    finally:
        eng.close()
