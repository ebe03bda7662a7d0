"""A continued reply's statistics add up (Continue used to replace them)."""

from __future__ import annotations

from specula.core.engine.stats import GenerationStats
from specula.core.reply_stats import merge


def _stats(tokens: int, total: float, ttft: float, drafted: int, accepted: int) -> dict[str, object]:
    s = GenerationStats(mode="chain", acceptance_rule="greedy", tokens=tokens, total_s=total,
                        ttft_s=ttft, steps=tokens // 2, drafted=drafted, accepted=accepted,
                        drafting_steps=tokens // 2, plain_run=tokens % 7,
                        drafted_per_pos=(drafted, drafted // 2), accepted_per_pos=(accepted,))
    return s.to_dict()


def test_counts_and_times_add_and_rates_are_computed_again() -> None:
    first, then = _stats(316, 10.0, 0.5, 400, 300), _stats(60, 2.0, 0.2, 80, 40)
    out = merge(first, then)
    assert out["tokens"] == 376 and out["drafted"] == 480 and out["accepted"] == 340
    assert out["total_s"] == 12.0 and out["ttft_s"] == 0.5  # the reply began with the first part
    assert out["drafting_steps"] == 158 + 30
    assert out["plain_run"] == 60 % 7  # how the reply ended: the last part's run
    assert out["drafted_per_pos"] == [400 + 80, 200 + 40]  # position by position
    assert out["accepted_per_pos"] == [300 + 40]
    assert abs(out["mean_accepted_per_step"] - 340 / 188) < 1e-9
    # tok/s from the sums: (376 - 1) tokens over 12.0 - 0.5 s, not either part's rate
    assert abs(out["tokens_per_s"] - 375 / 11.5) < 1e-9
    assert abs(out["acceptance_rate"] - 340 / 480) < 1e-9
    assert out["parts"] == 2
    assert merge(out, then)["parts"] == 3


def test_no_first_part_is_the_second_alone() -> None:
    then = _stats(60, 2.0, 0.2, 80, 40)
    assert merge(None, then) == then and merge({}, then) == then
