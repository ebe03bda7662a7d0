"""A request chooses the exact acceptance rule in its "specula" field."""

from __future__ import annotations

import pytest

from specula.core.engine.config import SpecConfig
from specula.core.engine.sampling.rules import Rule, SamplingParams
from specula.server.errors import OpenAIError
from specula.server.schemas import sampling_from, spec_from


def test_the_rule_comes_from_the_specula_field() -> None:
    body = {"specula": {"rule": "rejection-sampling", "mode": "chain"}}
    assert sampling_from(body, SamplingParams()).rule is Rule.REJECTION
    assert spec_from(body, SpecConfig()).mode.value == "chain"  # 'rule' is a known field
    assert sampling_from({}, SamplingParams(rule=Rule.REJECTION)).rule is Rule.REJECTION  # the default


@pytest.mark.parametrize("value", ["greedy", 3, None, "Coupled"])
def test_an_unknown_rule_is_a_400_naming_the_field(value: object) -> None:
    with pytest.raises(OpenAIError) as exc:
        sampling_from({"specula": {"rule": value}}, SamplingParams())
    assert exc.value.param == "specula.rule"
