"""The comparison's schedule and arithmetic, checked against hand-computed figures."""

from __future__ import annotations

import math

import pytest

from specula.core.compare import (
    Comparison,
    RunFigures,
    Side,
    first_difference,
    identity_sentence,
    schedule,
    significant,
)


def test_schedule_alternates_in_abba_pairs() -> None:
    p, s = Side.PLAIN, Side.SPEC
    assert schedule(1) == [p, s]
    assert schedule(3) == [p, s, s, p, p, s]
    with pytest.raises(ValueError):
        schedule(0)


def test_abba_cancels_linear_drift() -> None:
    # A machine that slows down linearly: run i takes (1 + 0.1 i) s per token for both modes,
    # and spec is truly twice as fast. Sequential AABB-style runs would skew the ratio;
    # ABBA over two rounds gives exactly 2.
    comp = Comparison()
    for i, side in enumerate(schedule(2)):
        per_token = (1 + 0.1 * i) * (0.5 if side is Side.SPEC else 1.0)
        comp.add(side, RunFigures(tokens=11, decode_s=10 * per_token))
    assert comp.speedup == pytest.approx(2.0)
    sequential = Comparison()
    for i, side in enumerate([Side.PLAIN, Side.PLAIN, Side.SPEC, Side.SPEC]):
        per_token = (1 + 0.1 * i) * (0.5 if side is Side.SPEC else 1.0)
        sequential.add(side, RunFigures(tokens=11, decode_s=10 * per_token))
    assert sequential.speedup != pytest.approx(2.0)


def test_rates_use_tokens_after_the_first_over_summed_time() -> None:
    comp = Comparison()
    comp.add(Side.PLAIN, RunFigures(tokens=41, decode_s=8.0))   # 40 / 8 = 5
    comp.add(Side.PLAIN, RunFigures(tokens=21, decode_s=2.0))   # pooled: 60 / 10 = 6
    comp.add(Side.SPEC, RunFigures(tokens=31, decode_s=3.0))    # 30 / 3 = 10
    assert comp.rate(Side.PLAIN) == pytest.approx(6.0)
    assert comp.rate(Side.SPEC) == pytest.approx(10.0)
    assert comp.speedup == pytest.approx(10 / 6)
    assert comp.round_speedups() == [pytest.approx(10 / 5)]


def test_summary_is_not_contradicted_by_rounding() -> None:
    # The case: 0.312 vs 0.281 tok/s once read "1.11x (0.3 vs 0.2 tok/s)".
    comp = Comparison()
    comp.add(Side.PLAIN, RunFigures(tokens=282, decode_s=1000.0))  # 0.281 tok/s
    comp.add(Side.SPEC, RunFigures(tokens=313, decode_s=1000.0))   # 0.312 tok/s
    text = comp.summary()
    assert "Speedup 1.11×" in text
    assert "0.312 vs 0.281 tok/s" in text
    assert "1 round," not in text and "1 round)" in text
    assert text.endswith("faster with the draft")


def test_judgement_follows_the_rounds() -> None:
    comp = Comparison()
    for plain_s, spec_s in ((10.0, 5.0), (10.0, 12.0)):  # round speedups 2.0 and 0.83
        comp.add(Side.PLAIN, RunFigures(11, plain_s))
        comp.add(Side.SPEC, RunFigures(11, spec_s))
    assert comp.judgement() == "no clear difference: the rounds disagree"
    slow = Comparison()
    slow.add(Side.PLAIN, RunFigures(11, 1.0))
    slow.add(Side.SPEC, RunFigures(11, 3.0))
    assert slow.judgement() == "slower with the draft on this machine"


def test_significant_digits() -> None:
    assert significant(0.03124) == "0.0312"
    assert significant(17.44) == "17.4"
    assert significant(1234.5) == "1234"  # never an exponent
    assert significant(0.0) == "0.00"


def test_difference_over_every_run() -> None:
    comp = Comparison()
    comp.add(Side.PLAIN, RunFigures(5, 1.0, "hello"))
    comp.add(Side.SPEC, RunFigures(5, 1.0, "hello"))
    assert comp.difference() == -1
    comp.add(Side.SPEC, RunFigures(5, 1.0, "help!"))
    assert comp.difference() == 3
    assert "please report" in identity_sentence(3, exact_expected=True)
    assert "expected" in identity_sentence(3, exact_expected=False)
    assert identity_sentence(-1, exact_expected=True) == "texts identical ✓"


def test_first_difference() -> None:
    assert first_difference("abc", "abc") == -1
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2


def _rounds(pairs: list[tuple[float, float]], accepted: int | None = None) -> Comparison:
    comp = Comparison()
    for plain_s, spec_s in pairs:
        comp.add(Side.PLAIN, RunFigures(101, plain_s, drafted=0, accepted=0))
        comp.add(Side.SPEC, RunFigures(101, spec_s, drafted=None if accepted is None else 2 * accepted,
                                       accepted=accepted))
    return comp


def test_a_difference_within_its_own_noise_is_no_clear_difference() -> None:
    # Round speedups 1.25, 1.02, 1.11: all above 1, but their spread is as large as the gain.
    comp = _rounds([(10.0, 8.0), (10.2, 10.0), (10.0, 9.0)])
    logs = [math.log(10 / 8), math.log(10.2 / 10), math.log(10 / 9)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    expected_noise = math.exp(2 * sd / math.sqrt(3)) - 1  # about ±14%
    assert comp.noise() == pytest.approx(expected_noise)
    assert comp.speedup < 1 + expected_noise
    assert comp.judgement() == f"no clear difference: within its own noise (±{expected_noise:.0%})"


def test_a_difference_beyond_its_noise_is_a_speedup() -> None:
    comp = _rounds([(10.0, 6.0), (10.0, 6.1), (10.0, 5.9)], accepted=60)
    assert comp.judgement().startswith("faster with the draft (beyond its ±")


def test_a_draft_that_barely_ran_is_not_credited() -> None:
    # The case: 1.22x on the clock while the draft side accepted 1 token a run.
    comp = _rounds([(10.0, 8.2), (10.0, 8.2), (10.0, 8.2)], accepted=1)
    assert comp.judgement() == "the draft barely ran (3 of 303 tokens): no speedup to credit it with"
    assert "faster" not in comp.summary()
