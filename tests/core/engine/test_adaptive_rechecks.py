"""Adaptive probes a draft that could not pay even at 100% acceptance only to re-check
its measured costs (every RECHECK_EVERY replies), never at the learning cadence, and that
re-check is a re-time: one draft step on a short window, whose acceptance is not learnt."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.loop.calibration import Calibration
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy, PlanInput
from specula.core.engine.policy.probe_cadence import (
    PROBE_STEPS,
    PROBE_WINDOW,
    RECHECK_EVERY,
    RETIME_WINDOW,
)
from tests.core.engine.adaptive_sim import Q4_DEAR_DRAFT, run_reply, unseen_traces
from tests.core.engine.test_modes import ALL, _outcome, _train


def _replies(pol: AdaptivePolicy, n: int) -> tuple[int, int]:
    """(replies that drafted, draft steps planned) over n replies of 20 steps; a draft not
    fed at prefill starts 30 tokens behind (the prompt)."""
    inp = PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0)
    drafted = drafts = 0
    for _ in range(n):
        lag = 1 if pol.sync_draft_at_prefill() else 30
        before = drafts
        for _ in range(20):
            plan = pol.plan(replace(inp, draft_lag=lag))
            if plan.source == "draft":
                drafts += 1
                pol.observe(_outcome("draft", plan.k, plan.k, 0.030 + 0.015 * plan.k, 0.030 * plan.k))
                lag = 1
            else:
                pol.observe(_outcome("none", 0, 0, 0.030, 0.0))
                lag += 1
        drafted += drafts > before
    return drafted, drafts


def test_a_draft_that_costs_more_than_it_could_save_is_probed_only_to_recheck() -> None:
    # v1 30 ms, +15 ms per verified token, a draft decode as dear as a target step:
    # at best k=4 gives 5 tokens in 4*30 + 90 ms = 24 tok/s against plain's 33.
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.030, accept=0.6)
    assert not pol.could_pay(0.030)
    # 20 replies: replies 8 and 16 re-check (a re-time: one draft step each), its timings
    # confirm the verdict, and no other reply drafts
    assert _replies(pol, 20) == (20 // RECHECK_EVERY, 20 // RECHECK_EVERY)
    assert pol.verdict().paused


def _paused_until_recheck(accept: float = 0.6) -> AdaptivePolicy:
    """A pair that cannot pay (as above), one reply short of its re-check."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.030, accept=accept)
    for _ in range(RECHECK_EVERY - 1):
        assert not pol.sync_draft_at_prefill()
    return pol


def test_a_recheck_re_times_one_step_on_a_short_window_and_learns_no_acceptance() -> None:
    pol = _paused_until_recheck()
    rate, judged = pol.acc.token_rate, pol.acc.rate_judged
    assert pol.sync_draft_at_prefill()
    assert pol.sync_window() == RETIME_WINDOW
    inp = PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0, draft_lag=1)
    plan = pol.plan(inp)
    # one token: one draft decode, timed
    assert (plan.source, plan.k) == ("draft", 1)
    pol.observe(_outcome("draft", plan.k, plan.k, 0.030 + 0.015 * plan.k, 0.030 * plan.k))
    # a draft that read a few tokens says nothing of the pair's acceptance
    assert (pol.acc.token_rate, pol.acc.rate_judged) == (rate, judged)
    # the rest of the reply runs without the draft, and the verdict stands
    assert all(pol.plan(replace(inp, draft_lag=1 + i)).source == "target" for i in range(10))
    assert pol.verdict().paused and not pol.sync_draft_at_prefill()


@pytest.mark.parametrize("accept", [0.6, 0.0])
def test_a_re_time_that_finds_the_draft_cheaper_takes_it_up_again(accept: float) -> None:
    pol = _paused_until_recheck(accept)
    assert pol.sync_draft_at_prefill()
    inp = PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0, draft_lag=1)
    plan = pol.plan(inp)
    # the machine was busy when the draft was timed: a decode now takes 3 ms, not 30
    for _ in range(3):
        pol.observe(_outcome("draft", plan.k, plan.k, 0.030 + 0.015 * plan.k, 0.003 * plan.k))
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and pol.could_pay(v1)
    # the next reply takes the draft up again: at 0.6 drafting pays by the new costs (the plan
    # catches the draft up when it drafts); where every draft token was rejected it could pay
    # only were acceptance higher, and a probe of PROBE_STEPS steps on the prompt asks
    probed = pol.sync_draft_at_prefill()
    if accept:
        assert not probed and not pol.verdict().paused
    else:
        assert probed and pol.probe_steps_left == PROBE_STEPS and pol.sync_window() != RETIME_WINDOW


def test_a_draft_that_could_pay_at_high_acceptance_is_still_probed() -> None:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.010, accept=0.6)
    assert pol.could_pay(0.030)
    synced, drafts = _replies(pol, 4)
    assert synced >= 1 and drafts >= 1


def test_a_prompt_long_catch_up_after_the_first_token_does_not_stop_drafting() -> None:
    """The draft is fed the prompt after the first token (deferred prefill): that catch-up
    is paid once for the whole reply, so a draft that pays per step must still be chosen.
    Charged whole to one step (50 prompt tokens at 20 ms each = 1 s against a 170 ms step),
    drafting would never start, and the reply would run plain to its end."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.9)  # memory-bound target
    pol.cost.catchup_per_token = 0.020
    inp = PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0, draft_lag=50)
    # A long catch-up waits a few plain steps (lookup might take over), then is paid.
    plans = [pol.plan(replace(inp, draft_lag=50 + i, room=60 - i)).source for i in range(6)]
    assert "draft" in plans, plans
    # A catch-up is still a cost: with one token left it is not worth paying.
    pol._waited = 1.0
    assert pol.plan(replace(inp, room=1)).source == "target"


def _lookup_plan(v: dict[int, float]) -> str:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.LOOKUP, draft_max=8), allow_draft=False)
    Calibration(verify=v, draft=None).seed(pol.cost)
    inp = PlanInput(room=30, available=frozenset({TokenOrigin.LOOKUP}),
                    lookup_tokens=[5, 6, 7, 8, 9, 10, 11, 12], lookup_match=3)
    return pol.plan(inp).source.value


def test_an_unjudged_lookup_match_is_probed_only_where_it_would_pay_clearly() -> None:
    # The Q4_K_M target on one core here (calibrated): each verified token costs most of a
    # step, so even at 90% a 5-token lookup chain gains about 1% over plain: never probed.
    q4 = {1: 0.0432, 2: 0.0832, 3: 0.1203, 4: 0.1494, 5: 0.1779, 6: 0.2004, 7: 0.2261, 8: 0.2518}
    assert _lookup_plan(q4) == "target"
    # The F16 target: batches of 2..7 cost about two plain steps, so a long probe pays if right.
    f16 = {1: 0.099, 2: 0.207, 3: 0.210, 4: 0.196, 5: 0.215, 6: 0.226, 7: 0.250, 8: 0.304}
    assert _lookup_plan(f16) == "lookup"


def test_after_an_unsure_token_the_next_is_judged_by_the_pairs_rate_at_its_depth() -> None:
    """On a flat verify curve the question after a doubtful draft token is whether the
    next one is worth a draft decode. Its confidence is not known yet: what the pair's
    chains did at that depth once every token before was accepted decides (0.98 from the
    third token on in the F16 code traces), not the doubtful token's own odds."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    for n in range(1, 10):  # F16 here: 1 token 119 ms, 2-7 tokens 190-265 ms
        pol.cost.verify[n] = {1: .119, 2: .192, 3: .189, 4: .208, 5: .220, 6: .246, 7: .265,
                              8: .333, 9: .356}[n]
        pol.cost.verify_n[n] = 3
    pol.cost.draft = 0.025
    pol.acc.depth_judged = [20.0] * 16
    pol.acc.depth_acc = [18.0, 16.0] + [19.6] * 14  # 0.90, 0.80, then 0.98
    pol.acc.rate_judged, pol.acc.rate_acc = 100.0, 90.0
    for b in range(18):  # the draft is calibrated: a 0.6 token is right 60% of the time
        pol.acc.tot[b], pol.acc.acc[b] = 0.0, 0.0
    plan = pol.plan(PlanInput(room=60, available=ALL, lookup_tokens=[], lookup_match=0, draft_lag=1))
    assert plan.source == "draft"
    assert pol.keep_drafting(0, 0.99, 0.05) == (True, True)
    assert pol.keep_drafting(1, 0.99, 0.05) == (True, True)
    keep, more = pol.keep_drafting(2, 0.6, 1.2)  # a doubtful third token
    assert keep and more  # the fourth is drafted: at depth 3 the pair is right 98% of the time


def test_a_chain_is_capped_one_past_the_length_that_did_best_in_hindsight() -> None:
    """Verify 100 ms + 10 ms a token, a draft decode 20 ms. Steps that accept 2 of 8: a
    chain of j would have had min(2, j) + 1 tokens in 20j + 100 + 10j ms: j = 2 leads
    (3 tokens in 160 ms, against 2 in 130 and 3 in 190), so the cap is 3. Steps that
    accept all 8: every longer chain would have done better, so the cap is the maximum."""
    from specula.core.engine.policy.fixed import Outcome
    from specula.core.engine.stats import StepRecord

    def policy() -> AdaptivePolicy:
        pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
        Calibration(verify={n: 0.100 + 0.010 * (n - 1) for n in range(1, 10)}, draft=0.020).seed(pol.cost)
        return pol

    def step(pol: AdaptivePolicy, accepted: int) -> None:
        rec = StepRecord(0, 8, accepted, accepted + 1, 8 * 0.020, 0.180, 0.0, draft_decodes=8, catchup=1)
        pol.observe(Outcome(TokenOrigin.CHAIN, [0.9] * 8, [0.3] * 8, accepted, 0, rec))

    low, high = policy(), policy()
    assert low.hindsight_cap(8) == 8  # nothing seen yet
    for _ in range(10):
        step(low, 2)
        step(high, 8)
    assert low.hindsight_cap(8) == 3
    assert high.hindsight_cap(8) == 8


def test_a_token_is_kept_where_drafting_on_past_a_verify_jump_pays() -> None:
    """F16 without repacking: 1 token 174 ms, 2 tokens 321 ms, then +20 ms a token; a
    draft decode 43 ms. A first token the draft gives 60% (no evidence: the prior is the
    draft's own confidence): alone it loses (1.6 tokens in 43 + 321 ms = 4.40/s against
    1 in 43 + 174 = 4.61/s), but with one more at the pair's prior rate 0.8 it wins
    (1 + 0.6 + 0.48 = 2.08 tokens in 86 + 341 ms = 4.87/s): keep it and draft on."""
    from specula.core.engine.policy.fixed import Plan

    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    Calibration(verify={1: 0.174, **{n: 0.321 + 0.020 * (n - 2) for n in range(2, 10)}},
                draft=0.043).seed(pol.cost)
    assert pol.acc.predict(0.6, 0.5) == pytest.approx(0.6) and pol.acc.hazard(1) == pytest.approx(0.8)
    step = PlanInput(room=60, available=ALL, draft_lag=1)
    assert not pol.sync_draft_at_prefill() and pol.plan(step) == Plan(TokenOrigin.CHAIN, 8)
    assert pol.keep_drafting(0, 0.6, 0.5) == (True, True)
    blind = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    Calibration(verify=dict(pol.cost.verify), draft=0.043).seed(blind.cost)
    assert not blind.sync_draft_at_prefill() and blind.plan(step) == Plan(TokenOrigin.CHAIN, 8)
    blind._best_ahead = lambda i, e, run, d: 0.0  # type: ignore[method-assign]  # one token's look
    assert blind.keep_drafting(0, 0.6, 0.5) == (False, False)


def _recheck_reply_over_plain(pid: str) -> float:
    """The first re-check reply's tokens/s over plain decoding's on the same reply, a new
    pair on Q4_DEAR_DRAFT answering the same prompt again and again."""
    m, t = Q4_DEAR_DRAFT, unseen_traces()[pid]
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and not pol.could_pay(v1)
    for _ in range(3 * RECHECK_EVERY):
        r = run_reply(pol, m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"])
        if pol.retiming:  # this reply re-timed the draft
            assert [n for _, n, _ in r.steps if n] == [1] and pol.verdict().paused
            plain = run_reply(PlainPolicy(), m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"])
            return r.rate / plain.rate
    raise AssertionError("no re-check")


def test_a_recheck_reply_on_a_pair_that_could_not_pay_stays_near_plain() -> None:
    """On the compute-bound pair a probe's catch-up on the prompt alone was 4-11% of a
    96-token reply; a re-time costs a few tokens' feed and one draft step. (ts-retry, where
    the draft is right 83% of the time, pauses drafting on this machine.)"""
    assert _recheck_reply_over_plain("unseen-ts-retry") >= 0.98


def test_power_a_recheck_that_reads_the_prompt_falls_below_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AdaptivePolicy, "sync_window", lambda self: PROBE_WINDOW)
    assert _recheck_reply_over_plain("unseen-ts-retry") < 0.97
