"""A short answer on a pair where drafting barely pays runs plain: the draft's catch-up on
the prompt waits until the reply has outgrown a short answer (``rates.SHORT_ANSWER``).

The machine is ``adaptive_sim.Q4``: the Q4_K_M 1.5B target with the 0.5B draft on one core,
where a verify of n tokens costs nearly n single decodes and a chain pays only above about
0.9 acceptance. The pair has drafted code at 0.92 per token, so by its own estimates drafting
gains 3-5% per token: a near tie (under ``rates.NEAR_TIE``), where drafting from the reply's
start would not repay the draft's catch-up on the prompt within a short answer. Then an 18-token answer
in prose comes (the real agreement of explain-http, ``adaptive_sim.unseen_traces``), with 96
tokens of room, since a reply's length is not known. Were the catch-up paid up front as on
any other pair, the first draft step carries it: the answer runs at about half of plain's
speed here (0.83-0.87x measured beside llama-server on the real pair,
docs/lab/2026-12-02-short-answer.md). A long reply on the same pair (go-server, drafted at
98%) must keep its gain: it drafts from its 24th token on, and the wait costs what those plain
tokens lose against drafting (5% of that reply against drafting from its start). A catch-up
that drafting repays within a short answer (a follow-up of a few tokens) is not held back.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import rates
from specula.core.engine.policy.adaptive import MARGIN, AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy
from tests.core.engine.adaptive_sim import Q4, Machine, Reply, run_reply, unseen_traces

TRACES = unseen_traces()
# code histories (per-token rate, seed) whose estimates fall in the near-tie band (asserted)
HISTORIES = ((0.92, 0), (0.92, 2))


def _near_tie(history: tuple[float, int]) -> AdaptivePolicy:
    """A pair that has drafted 60 chains of 5 at this per-token rate (its estimate: 0.87-0.88)."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    Q4.calibration().seed(pol.cost)
    a, seed = history
    rng = np.random.default_rng(seed)
    for _ in range(60):
        ok = rng.random(5) < a
        pol.acc.observe([0.97] * 5, [0.3] * 5, int(np.argmin(ok)) if not ok.all() else 5)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None
    gain = pol.draft_pays_rate(8) * v1  # drafting's expected rate over plain's
    assert 1.0 + MARGIN < gain < 1.0 + rates.NEAR_TIE, gain
    return pol


def _reply(pol: AdaptivePolicy | PlainPolicy, pid: str, ends_at: int | None = None, m: Machine = Q4) -> Reply:
    t = TRACES[pid]
    return run_reply(pol, m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"], ends_at=ends_at)


def _short_over_plain(history: tuple[float, int], m: Machine = Q4) -> tuple[float, Reply]:
    r = _reply(_near_tie(history), "explain-http", ends_at=18, m=m)
    return r.rate / _reply(PlainPolicy(), "explain-http", ends_at=18, m=m).rate, r


@pytest.mark.parametrize("history", HISTORIES)
def test_a_short_answer_on_a_near_tie_pair_runs_plain(history: tuple[float, int]) -> None:
    ratio, r = _short_over_plain(history)
    assert r.tokens == 17 and all(drafted == 0 for _, drafted, _ in r.steps), r.steps
    assert ratio >= 0.97, ratio


@pytest.mark.parametrize("history", HISTORIES)
def test_a_long_reply_on_a_near_tie_pair_drafts_after_a_short_answer_length(
        history: tuple[float, int], monkeypatch: pytest.MonkeyPatch) -> None:
    r = _reply(_near_tie(history), "unseen-go-server")
    first = next(i for i, (_, drafted, _) in enumerate(r.steps) if drafted)
    assert first == rates.SHORT_ANSWER, r.steps  # one plain step per token until then
    plain = _reply(PlainPolicy(), "unseen-go-server")
    assert r.rate >= 1.1 * plain.rate
    with monkeypatch.context() as mp:  # the catch-up paid up front
        mp.setattr(rates, "SHORT_ANSWER", 0)
        from_start = _reply(_near_tie(history), "unseen-go-server")
    assert from_start.steps[0][1] > 0
    # The wait costs what its plain tokens lose against drafting at this reply's drafted
    # rate, and no more (5% of this reply: the price of the short answer's 1.00x)
    wait_loss = rates.SHORT_ANSWER * (1.0 / plain.rate - 1.0 / from_start.rate)
    assert r.seconds <= from_start.seconds + wait_loss, (r.seconds, from_start.seconds, wait_loss)


@pytest.mark.parametrize("history", HISTORIES)
def test_power_a_catch_up_paid_up_front_loses_the_short_answer(history: tuple[float, int],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rates, "SHORT_ANSWER", 0)  # every first catch-up paid as exploration
    ratio, r = _short_over_plain(history)
    assert any(drafted for _, drafted, _ in r.steps)
    assert ratio < 0.9, ratio


# A follow-up in a conversation the draft has followed: a catch-up of a few tokens (90 ms),
# which drafting repays within a short answer even on this pair.
FOLLOW_UP = replace(Q4, prompt=3, prompt_s=0.09)


def test_a_catch_up_repaid_within_a_short_answer_is_paid_up_front() -> None:
    r = _reply(_near_tie(HISTORIES[0]), "unseen-go-server", m=FOLLOW_UP)
    assert r.steps[0][1] > 0, r.steps
    waited = _reply(_near_tie(HISTORIES[0]), "unseen-go-server")  # the 24-token prompt
    assert waited.steps[0][1] == 0, waited.steps


# A 40-token prompt on a pair whose estimate gains 8% a token: shared over the 96 tokens of
# room, the catch-up still looks worth paying after a few plain steps (the ski rental of a
# long catch-up), and the short answer would pay it; the wait for a short answer's length
# holds it back.
LONGER_PROMPT = replace(Q4, prompt=40, prompt_s=0.41)


def test_a_short_answer_does_not_pay_a_catch_up_shared_over_the_room() -> None:
    ratio, r = _short_over_plain((0.94, 0), m=LONGER_PROMPT)
    assert all(drafted == 0 for _, drafted, _ in r.steps) and ratio >= 0.97, (ratio, r.steps)


def test_power_without_the_wait_the_shared_catch_up_is_paid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AdaptivePolicy, "_late", lambda self, lag: False)
    ratio, _ = _short_over_plain((0.94, 0), m=LONGER_PROMPT)
    assert ratio < 0.9, ratio


# -- the verdict says why the reply did not draft ------------------------------------------


@pytest.mark.parametrize("history", HISTORIES)
def test_the_verdict_says_a_short_answer_was_held_back(history: tuple[float, int]) -> None:
    """The live panel and the footer read "drafted in 0 of 17 steps" on such a reply; the
    verdict carries why (the draft was not fed for a short answer), and only then."""
    pol = _near_tie(history)
    r = run_reply(pol, Q4, TRACES["explain-http"]["ok"], TRACES["explain-http"]["p_top"],
                  max_tokens=96, entropy=TRACES["explain-http"]["entropy"], ends_at=18)
    assert all(drafted == 0 for _, drafted, _ in r.steps)
    v = pol.verdict()
    assert v.held_back and not v.paused
    pol.sync_draft_at_prefill()  # the next reply starts: nothing held back yet
    _reply(pol, "unseen-go-server")  # drafts from its 24th token: the draft was fed
    assert not pol.verdict().held_back


def test_a_reply_that_drafted_from_its_start_was_not_held_back() -> None:
    pol = _near_tie(HISTORIES[0])
    r = _reply(pol, "unseen-go-server", m=FOLLOW_UP)  # a catch-up repaid within a short answer
    assert r.steps[0][1] > 0 and not pol.verdict().held_back


def test_power_a_verdict_blind_to_the_wait_does_not_say_held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AdaptivePolicy, "_late", lambda self, lag: False)
    pol = _near_tie(HISTORIES[0])
    _reply(pol, "explain-http", ends_at=18)
    assert not pol.verdict().held_back
