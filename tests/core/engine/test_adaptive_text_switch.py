"""A paused draft comes back when the text turns easy: a probe is judged by what it meets.

A stretch of hard text (the draft right about half the time) pauses drafting on the F16
machine of ``adaptive_sim``; a probe then re-tries the draft now and then. The pair's rate
is a faded count over draft steps, and nothing fades it while drafting is paused, so the
probe's three steps on easy text were outweighed by the hard stretch: the probe failed, the
wait doubled, and easy replies ran plain at about 0.6x of the best fixed chain
(docs/lab/2026-12-02-probe-evidence.md). Before a probe the rate now weighs as
PROBE_EVIDENCE tokens (``AcceptanceModel.shrink``)."""

from __future__ import annotations

import statistics

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.acceptance_model import AcceptanceModel
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, PlainPolicy
from tests.core.engine.adaptive_sim import F16, Machine, run_reply, script

HARD, EASY = 0.5, 0.97


def _best_fixed(m: Machine, ok: list[bool], p_top: list[float]) -> float:
    """Tokens/s of the best of plain, chain:3 and chain:5 on this reply (same simulator)."""
    rates = [run_reply(PlainPolicy(), m, ok, p_top, max_tokens=96).rate]
    for k in (3, 5):
        chain = ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k))
        rates.append(run_reply(chain, m, ok, p_top, max_tokens=96).rate)
    return max(rates)


def _session(m: Machine) -> tuple[list[float], list[float]]:
    """Adaptive over ten hard replies then five easy ones: each reply's tokens/s over the
    best fixed setting's on the same reply (hard ratios, easy ratios)."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=12, tree_width=2))
    m.calibration().seed(pol.cost)
    hard: list[float] = []
    easy: list[float] = []
    for i in range(15):
        ok, p_top = script(HARD if i < 10 else EASY, 96, seed=i, bursty=True)
        r = run_reply(pol, m, ok, p_top, max_tokens=96)
        (hard if i < 10 else easy).append(r.rate / _best_fixed(m, ok, p_top))
    return hard, easy


def test_easy_text_after_a_hard_stretch_is_drafted_again() -> None:
    hard, easy = _session(F16)
    # the probe that meets the easy text resumes drafting: the first easy reply may have
    # run plain while it waited for that probe, none after it
    assert min(easy[1:]) >= 0.9, easy
    assert statistics.mean(easy) >= 0.95, easy
    # and the probes cost little while the text stays hard
    assert statistics.mean(hard) >= 0.95, hard


def test_power_a_probe_outweighed_by_the_hard_stretch_keeps_easy_text_plain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AcceptanceModel, "shrink", lambda self, judged: None)
    _, easy = _session(F16)
    assert statistics.mean(easy) < 0.8, easy


def test_shrink_keeps_the_rate_and_lowers_its_weight() -> None:
    acc = AcceptanceModel()
    for n in (5, 5, 2, 5, 0, 5, 3, 5):  # chains of 5, accepted n each
        acc.observe([0.9] * 5, [0.3] * 5, n)
    ratio = acc.rate_acc / acc.rate_judged
    depth = [a / j for a, j in zip(acc.depth_acc, acc.depth_judged, strict=True) if j]
    acc.shrink(12.0)
    assert acc.rate_judged == pytest.approx(12.0)
    assert acc.rate_acc / acc.rate_judged == pytest.approx(ratio)
    assert [a / j for a, j in zip(acc.depth_acc, acc.depth_judged, strict=True) if j] == pytest.approx(depth)
    before = (acc.rate_acc, acc.rate_judged)
    acc.shrink(40.0)  # never adds weight
    assert (acc.rate_acc, acc.rate_judged) == before
