"""A continued reply's statistics add up (Continue used to replace them)."""

from __future__ import annotations

from specula.core.engine.stats import GenerationStats
from specula.core.reply_stats import merge


def _stats(tokens: int, total: float, ttft: float, drafted: int, accepted: int) -> dict[str, object]:
    s = GenerationStats(mode="chain", acceptance_rule="greedy", tokens=tokens, total_s=total,
                        ttft_s=ttft, steps=tokens // 2, drafted=drafted, accepted=accepted)
    return {**s.to_dict(), "drafting_steps": tokens // 2, "plain_run": 0}


def test_counts_and_times_add_and_rates_are_computed_again() -> None:
    first, then = _stats(316, 10.0, 0.5, 400, 300), _stats(60, 2.0, 0.2, 80, 40)
    out = merge(first, then)
    assert out["tokens"] == 376 and out["drafted"] == 480 and out["accepted"] == 340
    assert out["total_s"] == 12.0 and out["ttft_s"] == 0.5  # the reply began with the first part
    assert out["drafting_steps"] == 158 + 30
    # tok/s from the sums: (376 - 1) tokens over 12.0 - 0.5 s, not either part's rate
    assert abs(out["tokens_per_s"] - 375 / 11.5) < 1e-9
    assert abs(out["acceptance_rate"] - 340 / 480) < 1e-9
    assert out["parts"] == 2
    assert merge(out, then)["parts"] == 3


def test_no_first_part_is_the_second_alone() -> None:
    then = _stats(60, 2.0, 0.2, 80, 40)
    assert merge(None, then) == then and merge({}, then) == then
