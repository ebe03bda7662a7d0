"""The footer under a reply names the seed of a sampled reply, so it can be reproduced."""

from __future__ import annotations

from specula.core.engine.stats import GenerationStats
from specula.gui.stats.footer import footer_text


def _stats(rule: str, seed: int) -> dict[str, object]:
    s = GenerationStats(mode="chain", acceptance_rule=rule, seed=seed, tokens=40, steps=20,
                        drafted=30, accepted=20, ttft_s=0.2, total_s=2.0)
    return s.to_dict()


def test_a_sampled_reply_shows_its_seed() -> None:
    text = footer_text(_stats("coupled", 918273645), "length")
    assert "seed 918273645" in text
    assert "chain (coupled)" in text


def test_a_greedy_reply_has_no_seed_to_show() -> None:
    assert "seed" not in footer_text(_stats("greedy", 5), "length")
