"""When adaptive drafts at all: never where no chain could beat plain decoding by
COULD_PAY_MARGIN even at 100% acceptance, and a pause is lifted on the expected rate, not
on the benefit of the doubt (``rates.ExpectedRates.draft_pays_rate``).

The compute-bound pair on a day its draft decode took 74-97 ms (``adaptive_sim.Q4_DEAR_DRAFT``)
sits in the band between the two margins: a chain's best case beats plain by less than 5%,
and at the pair's acceptance on easy code its expected rate by more than 2%. There it drafted
(a probe after two short answers that held the draft back: 0.92x of plain, replayed below).
A probe of a paused draft shrinks the pair's evidence first (``PROBE_EVIDENCE``), so after it
the optimistic rate (one standard error above) was in force, and on the real pair the probes
of a paused draft drafted on by it into replies at 0.88x-0.98x of plain
(docs/lab/2026-12-03-probe-window.md, "A re-check that re-times").
"""

from __future__ import annotations

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import rates
from specula.core.engine.policy.adaptive import PROBE_STEPS, AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy, PlanInput
from tests.core.engine.adaptive_sim import Q4_DEAR_DRAFT, run_reply, unseen_traces
from tests.core.engine.test_modes import ALL, _outcome, _train


def _before(self: rates.ExpectedRates, k_max: int, *, fed: bool = False) -> float:
    """The rule as it was: the expected rate, or the optimistic one while evidence is short."""
    rate, _ = self.draft_rate(k_max, fed=fed)
    a = self.acc.optimistic_rate()
    return rate if a is None else max(rate, self.draft_rate(k_max, a=a, fed=fed)[0])


def _replies_over_plain(pid: str, n: int = 12) -> list[tuple[float, list[int]]]:
    """A new pair on Q4_DEAR_DRAFT answering one prompt n times: each reply's tokens/s over
    plain decoding's, and the lengths of its draft-model steps."""
    m, t = Q4_DEAR_DRAFT, unseen_traces()[pid]
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and not pol.could_pay(v1)
    plain = run_reply(PlainPolicy(), m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"]).rate
    out = []
    for _ in range(n):
        r = run_reply(pol, m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"])
        out.append((r.rate / plain, [k for src, k, _ in r.steps if src == "draft" and k]))
    return out


@pytest.mark.parametrize("pid", ["code-lru", "unseen-go-server"])
def test_where_no_chain_could_pay_by_the_margin_only_re_times_draft(pid: str) -> None:
    out = _replies_over_plain(pid)
    assert all(steps in ([], [1]) for _, steps in out), out  # a re-time's one token at most
    assert sum(steps == [1] for _, steps in out) >= 1  # the 8-reply re-check ran
    assert min(r for r, _ in out) >= 0.97, out


def test_power_with_the_rule_as_it_was_the_band_pair_probes_below_the_floor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rates.ExpectedRates, "draft_pays_rate", _before)
    out = _replies_over_plain("code-lru")
    assert min(r for r, _ in out) < 0.97, out


def _thin_evidence() -> AdaptivePolicy:
    """A pair whose costs could pay, with its acceptance judged on a probe's worth of tokens
    (fewer than EVIDENCE_N): the optimistic rate is in force and above the expected one."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.004, accept=0.5)
    pol.acc.shrink(12.0)  # as before a probe of a paused draft
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and pol.could_pay(v1)
    a = pol.acc.optimistic_rate()
    assert a is not None
    assert pol.draft_rate(4, a=a)[0] > pol.draft_rate(4)[0]
    return pol


def test_a_pause_is_lifted_on_the_expected_rate_and_kept_from_thin_evidence_by_the_optimistic() -> None:
    pol = _thin_evidence()
    a = pol.acc.optimistic_rate()
    assert a is not None
    assert not pol.paused  # thin evidence does not pause a pair: the benefit of the doubt
    assert pol.draft_pays_rate(4) == pytest.approx(pol.draft_rate(4, a=a)[0])
    pol.governor.on("loses")  # a reply's start judged that drafting does not pay
    assert pol.paused  # and thin evidence does not lift the pause
    assert pol.draft_pays_rate(4) == pytest.approx(pol.draft_rate(4)[0])


def test_power_with_the_rule_as_it_was_a_pause_is_lifted_on_the_optimistic_rate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rates.ExpectedRates, "draft_pays_rate", _before)
    pol = _thin_evidence()
    pol.governor.on("loses")
    assert pol.draft_pays_rate(4) > pol.draft_rate(4)[0]


def test_a_probe_that_meets_easy_text_still_lifts_a_pause() -> None:
    """Hysteresis, not a lock: a paused pair whose probe's chains are all accepted has an
    expected rate that pays, and the probe lifts the pause."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.008, accept=0.3)
    inp = PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0, draft_lag=1)
    assert not pol.sync_draft_at_prefill() and pol.paused
    assert pol.sync_draft_at_prefill() and pol.paused  # the probe, at its cadence
    for _ in range(PROBE_STEPS):
        plan = pol.plan(inp)
        assert plan.source == "draft"
        pol.observe(_outcome("draft", plan.k, plan.k, 0.030 + 0.015 * plan.k, 0.008 * plan.k))
    assert not pol.paused
