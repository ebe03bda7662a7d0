"""The stop-loss (``policy/stop_loss.py``): a reply whose draft-model steps lose more than a
small allowance against plain steps stops drafting, whatever the models say, and drafting
stays paused until a probe's own steps gain.

The case it guards: a pair that has learnt that drafting pays meets a text on which the
draft is confidently wrong (its top probability high at every token, its token rarely the
target's). The acceptance model, built on the draft's confidence and on a long history,
learns that slowly, and the first such reply drafted 15 steps at 0.72x of plain on the
simulated F16 pair. On the real compute-bound pair one reply ran at 0.574x of plain that way
(docs/lab/2026-12-03-pause-rules.md).
"""

from __future__ import annotations

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import stop_loss
from specula.core.engine.policy.adaptive import PROBE_STEPS, AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy
from specula.core.engine.policy.stop_loss import STOP_SLACK, StopLoss
from specula.core.engine.stats import StepRecord
from tests.core.engine.adaptive_sim import F16, run_reply, script

TOKENS = 96


def _hard_text() -> tuple[list[bool], list[float]]:
    """The draft right at 15% of positions and 97% sure of itself at every one."""
    ok, _ = script(0.15, TOKENS, seed=99, informative=0.0)
    return ok, [0.97] * len(ok)


def _easy_text(seed: int) -> tuple[list[bool], list[float]]:
    return script(0.9, TOKENS, seed, informative=0.9)


def _trained_pair() -> AdaptivePolicy:
    """A pair that has drafted four replies of easy text on the F16 machine (drafting pays)."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    F16.calibration().seed(pol.cost)
    for s in range(4):
        run_reply(pol, F16, *_easy_text(s), max_tokens=TOKENS)
    assert not pol.verdict().paused
    return pol


def _over_plain(pol: AdaptivePolicy, text: tuple[list[bool], list[float]]) -> tuple[float, int]:
    """(the reply's tokens/s over plain decoding's on the same text, its draft-model steps)."""
    plain = run_reply(PlainPolicy(), F16, *text, max_tokens=TOKENS).rate
    r = run_reply(pol, F16, *text, max_tokens=TOKENS)
    return r.rate / plain, sum(1 for src, k, _ in r.steps if src == "draft" and k)


def test_a_reply_on_text_the_draft_gets_confidently_wrong_stops_drafting() -> None:
    pol = _trained_pair()
    ratio, steps = _over_plain(pol, _hard_text())
    assert ratio >= 0.88, (ratio, steps)
    assert pol.stop_loss.stops == 1 and pol.verdict().paused and pol.verdict().stopped


def test_power_without_the_stop_loss_that_reply_drafts_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stop_loss, "STOP_SLACK", 1e9)
    pol = _trained_pair()
    ratio, steps = _over_plain(pol, _hard_text())
    assert ratio < 0.8 and steps > 10, (ratio, steps)


def _rates_say_it_pays(pol: AdaptivePolicy) -> None:
    """Evidence of easy text from elsewhere (the models, not the steps, say drafting pays)."""
    for _ in range(60):
        pol.acc.observe([0.97] * 4, [0.3] * 4, 4)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and pol.draft_pays_rate(8, fed=True) > 1.2 / v1


def test_drafting_stays_held_whatever_the_rates_say_until_a_probe_whose_steps_gain() -> None:
    pol = _trained_pair()
    _over_plain(pol, _hard_text())
    _rates_say_it_pays(pol)
    ratio, steps = _over_plain(pol, _hard_text())
    assert steps == 0 and ratio == pytest.approx(1.0), (ratio, steps)
    assert pol.verdict().paused and not pol.verdict().stopped  # held, not stopped in this reply
    # the probe at the cadence meets easy text again: its steps gain, and drafting goes on
    ratio, steps = _over_plain(pol, _easy_text(7))
    assert steps > 3 and ratio > 1.2 and not pol.verdict().paused, (ratio, steps)


def test_power_without_the_hold_the_next_hard_reply_drafts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    def stop_without_hold(self: AdaptivePolicy) -> None:
        self.stop_loss.lost = float("inf")  # ends this reply's drafting only

    monkeypatch.setattr(AdaptivePolicy, "_may_draft",
                        lambda self, inp: inp.has_draft and self.stop_loss.lost != float("inf"))
    monkeypatch.setattr(AdaptivePolicy, "_stop", stop_without_hold)
    pol = _trained_pair()
    _over_plain(pol, _hard_text())
    _rates_say_it_pays(pol)
    ratio, steps = _over_plain(pol, _hard_text())
    assert steps > 0 and ratio < 0.97, (ratio, steps)


def test_a_probe_whose_steps_lose_keeps_the_hold_whatever_the_rates_say() -> None:
    pol = _trained_pair()
    for _ in range(2):  # the stopped reply, then a held one
        _over_plain(pol, _hard_text())
    _rates_say_it_pays(pol)
    _, steps = _over_plain(pol, _hard_text())  # the probe: its steps lose, the rest is plain
    assert 1 <= steps <= PROBE_STEPS and pol.stop_loss.probe_lost > 0 and pol.verdict().paused
    _rates_say_it_pays(pol)
    assert _over_plain(pol, _hard_text())[1] == 0


def _step(drafted: int, emitted: int, draft_s: float, verify_s: float, catchup_s: float = 0.0,
          overhead_s: float = 0.0) -> StepRecord:
    return StepRecord(0, drafted, emitted - 1, emitted, draft_s, verify_s, overhead_s,
                      draft_decodes=max(drafted, 1) if drafted else 0, catchup_s=catchup_s)


def test_the_loss_is_each_step_less_its_tokens_at_a_plain_step_without_the_catch_up() -> None:
    sl = StopLoss()
    v1, t_d = 0.141, 0.036
    sl.observe(_step(0, 1, 0.0, v1, overhead_s=0.005), False, False, v1, t_d)  # a plain step
    plain_step = v1 + 0.2 * 0.005  # OVERHEAD_FADE of the plain step's host time
    # a drafted step that caught the draft up on a 78-token prompt (0.67 s of its 0.74 s)
    sl.observe(_step(3, 2, 0.74, 0.287, catchup_s=0.67, overhead_s=0.004), True, False, v1, t_d)
    want = (0.74 - (0.67 - t_d)) + 0.287 + 0.004 - 2 * plain_step
    assert sl.lost == pytest.approx(want)
    assert sl.plain == pytest.approx(3 * plain_step)
    # a probe's step is kept apart, and a lookup or plain step only adds plain time
    sl.observe(_step(3, 4, 0.108, 0.287), True, True, v1, t_d)
    assert sl.lost == pytest.approx(want)
    assert sl.probe_lost == pytest.approx(0.108 + 0.287 - 4 * plain_step)


def test_the_allowance_is_a_share_of_the_reply_plus_a_few_plain_steps() -> None:
    sl = StopLoss()
    v1 = 0.1
    for _ in range(50):
        sl.observe(_step(0, 1, 0.0, v1), False, False, v1, 0.0)
    allowance = 0.03 * 50 * v1 + STOP_SLACK * v1
    rejected = 0.02 * 3 + 0.2  # a chain of three, all rejected: 0.26 s for one token
    n = 0
    while not sl.observe(_step(3, 1, 0.06, 0.2), True, False, v1, 0.02):
        n += 1
    # it trips at the first step whose loss takes it past the allowance (its one token grows it)
    assert n == int(allowance / (rejected - v1 - 0.03 * v1))
