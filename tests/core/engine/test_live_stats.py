"""Live figures: no rate over a tiny window, acceptance over drafted tokens, sane axes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specula.core.engine.stats import GenerationStats
from specula.gui.stats import live_stats as ls


def _stats(tokens: int, ttft: float, total: float, drafted: int = 0, accepted: int = 0,
           steps: int = 1, mode: str = "chain", drafting_steps: int = 0,
           plain_run: int = 0) -> GenerationStats:
    return GenerationStats(mode=mode, tokens=tokens, ttft_s=ttft, total_s=total,
                           drafted=drafted, accepted=accepted, steps=steps,
                           drafting_steps=drafting_steps, plain_run=plain_run)


def test_three_tokens_in_half_a_millisecond_show_no_rate() -> None:
    # The reported case: 3 tokens, 2 accepted, 0.4 ms after the first token -> 5473 tok/s.
    s = _stats(3, 0.1, 0.1004, drafted=3, accepted=2, drafting_steps=1)
    f = ls.figures(s)
    assert f.rate is None and ls.format_rate(f) == ls.DASH
    assert f.accepted == 2 and f.acceptance == pytest.approx(2 / 3)


@pytest.mark.parametrize(("tokens", "decode_s", "shown"), [
    (8, 10.0, False),   # 7 after the first: too few tokens, however long
    (9, 0.49, False),   # enough tokens, too little time
    (9, 0.5, True),
    (100, 2.0, True),
])
def test_rate_needs_time_and_tokens(tokens: int, decode_s: float, shown: bool) -> None:
    f = ls.figures(_stats(tokens, 0.2, 0.2 + decode_s))
    assert (f.rate is not None) is shown
    if shown:
        assert f.rate == pytest.approx((tokens - 1) / decode_s)


def test_acceptance_and_per_step_count_only_drafting_steps() -> None:
    # Adaptive: 10 steps, 2 of them drafted 4 tokens each, 3 accepted in all.
    s = _stats(40, 0.1, 3.0, drafted=8, accepted=3, steps=10, mode="adaptive", drafting_steps=2)
    f = ls.figures(s)
    assert f.acceptance == pytest.approx(3 / 8)
    assert f.accepted_per_step == pytest.approx(1.5)  # not 3 / 10
    assert ls.drafting_note(f) == "drafted in 2 of 10 steps"


def test_nothing_drafted_shows_dashes_and_the_pause_in_words() -> None:
    s = _stats(40, 0.1, 3.0, steps=40, mode="adaptive", plain_run=40)
    f = ls.figures(s)
    assert f.acceptance is None and f.accepted_per_step is None
    assert ls.format_acceptance(f) == ls.format_per_step(f) == ls.DASH
    assert ls.drafting_note(f) == ls.PAUSED_TEXT
    chain = ls.figures(_stats(40, 0.1, 3.0, steps=40, plain_run=40))
    assert not chain.paused and ls.drafting_note(chain) == ""


def test_a_held_back_short_answer_says_why_it_did_not_draft() -> None:
    """The adaptive verdict said the draft was not fed for this short answer: the note says
    so after the steps (never in another mode, and never over a pause)."""
    d = {"mode": "adaptive", "tokens": 18, "ttft_s": 0.1, "total_s": 2.7, "steps": 17,
         "plain_run": 17, "drafting_steps": 0, "paused": False}
    assert ls.drafting_note(ls.figures_from_dict(d)) == "drafted in 0 of 17 steps"
    held = ls.figures_from_dict({**d, "held_back": True})
    assert ls.drafting_note(held) == f"drafted in 0 of 17 steps: {ls.HELD_BACK_TEXT}"
    chain = ls.figures_from_dict({**d, "mode": "chain", "held_back": True})
    assert ls.drafting_note(chain) == ""
    paused = ls.with_held_back(ls.with_pause(held, True), True)
    assert ls.drafting_note(paused) == ls.PAUSED_TEXT


def test_pause_comes_from_the_plain_run_of_the_totals() -> None:
    n = ls.PAUSED_AFTER_STEPS
    stats = _stats(6 + n, 0.1, 1.1, 4, 4, steps=1 + n, mode="adaptive",
                   drafting_steps=1, plain_run=n)
    f = ls.LiveStats().figures(stats)
    assert f is not None and f.paused and f.accepted_per_step == 4.0
    g = ls.figures(_stats(6 + n, 0.1, 1.1, 4, 4, steps=1 + n, mode="adaptive",
                          drafting_steps=1, plain_run=n - 1))
    assert not g.paused


def test_chart_waits_for_a_window_then_rolls() -> None:
    live = ls.LiveStats()
    # One step per 10 ms, one token each, first token at 0.1 s.
    for i in range(1, 200):
        live.add(ls.StepPoint(i, 0.1 + (i - 1) * 0.01, 0.1, 0, 0))
    first = live.chart[0]
    # The first point needs 0.5 s after the first token: 50 steps later.
    assert first.tokens == 51 and first.rate == pytest.approx(100.0)
    assert all(p.acceptance is None for p in live.chart)
    assert all(p.rate == pytest.approx(100.0) for p in live.chart)


def test_figures_round_trip_through_a_stored_dict() -> None:
    s = _stats(40, 0.1, 3.0, drafted=8, accepted=3, steps=10, mode="adaptive",
               drafting_steps=2, plain_run=3)
    assert ls.figures_from_dict(s.to_dict()) == ls.figures(s)


@given(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False))
def test_axis_top_is_a_1_2_5_step_at_or_above_the_value(value: float) -> None:
    top = ls.nice_ceiling(value)
    assert top >= value * (1 - 1e-9) and top < value * 5.0001
    mantissa = top / 10 ** __import__("math").floor(__import__("math").log10(top) + 1e-12)
    assert round(mantissa, 6) in (1.0, 2.0, 5.0)


def test_axis_never_reads_0_to_0() -> None:
    assert ls.nice_ceiling(0.0) == 1.0
    assert ls.nice_ceiling(0.23) == pytest.approx(0.5)
    assert ls.axis_label(ls.nice_ceiling(0.23)) == "0.5"
    assert ls.axis_label(ls.nice_ceiling(0.03)) == "0.05"
    assert ls.axis_label(50.0) == "50"


def test_chart_acceptance_needs_enough_drafted_tokens() -> None:
    live = ls.LiveStats()
    # 20 tokens per 0.1 s; drafting 1 token per step (accepted) until step 30, then 4 per step.
    drafted = accepted = 0
    for i in range(1, 60):
        d = 1 if i < 30 else 4
        drafted += d
        accepted += d - (1 if i >= 30 else 0)
        live.add(ls.StepPoint(i * 2, 0.1 * i, 0.1, drafted, accepted))
    assert live.chart, "rates are drawn"
    early = [p for p in live.chart if p.tokens < 24]
    assert early and all(p.acceptance is None or p.acceptance == 1.0 for p in early)
    last = live.chart[-1]
    assert last.acceptance == pytest.approx(0.75)  # 3 of every 4 over the last window


def test_two_drafted_tokens_draw_no_acceptance() -> None:
    live = ls.LiveStats()
    drafted = accepted = 0
    for i in range(1, 40):
        d = 1 if i in (10, 15) else 0
        drafted += d
        accepted += 1 if i == 10 else 0
        live.add(ls.StepPoint(i, 0.1 * i, 0.1, drafted, accepted))
    assert live.chart and all(p.acceptance is None for p in live.chart)  # not 0 % or 100 %
