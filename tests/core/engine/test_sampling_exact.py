"""Sampled replies keep the target's distribution, in every mode and under both exact rules.

Each check runs the real engine over seeds 0..N-1 and compares the joint law of
the first 3-4 tokens with :mod:`tests.core.engine.reference` (a fresh llama.cpp
context per prefix and a transform written from scratch), by Pearson's
chi-square with rare cells pooled. The draft is partly right (acceptance is
asserted to lie well inside (0, 1)), chains are 2-3 tokens long and replies take
several steps, trees accept at depth 2, and the settings combine temperature
with top-k, top-p and min-p. The matching power tests are in ``test_power.py``.

Default run: one check per acceptance rule and mode family, a few seconds each
on one core; ``pytest -m slow`` adds larger samples and the remaining modes.
Alpha and margins: see ``sampling_runs``.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.tiny_models import build_edge_drafts
from tests.core.engine.reference import (
    EOG,
    CutTooClose,
    FreshTarget,
    Transform,
    chi2_sf,
    chi2_test,
    exact_joint,
    penalize,
    transform,
)
from tests.core.engine.sampling_runs import (
    ALPHA_PASS,
    Tally,
    check,
    fake_clock,
    make_engine,
    prompt_of,
    reply,
    spec,
)

TOPK5 = Transform(temperature=0.8, top_k=5)
ALL_FILTERS = Transform(temperature=0.8, top_k=20, top_p=0.9, min_p=0.05)  # the case 1


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_edge_drafts(tmp_path_factory.mktemp("edge-drafts"))



# -- the reference itself ---------------------------------------------------------------


def test_chi2_sf_matches_printed_tables() -> None:
    """Critical values from a printed chi-square table (NIST/SEMATECH e-Handbook 1.3.6.7.4)."""
    for x2, dof, alpha in [(3.841, 1, 0.05), (6.635, 1, 0.01), (18.307, 10, 0.05),
                           (23.209, 10, 0.01), (67.505, 50, 0.05), (135.807, 100, 0.01)]:
        assert chi2_sf(x2, dof) == pytest.approx(alpha, rel=2e-3), (x2, dof)
    # two degrees of freedom: the survival function is exactly exp(-x/2), far into the tail
    for x2 in (0.5, 10.0, 300.0, 1000.0):
        assert chi2_sf(x2, 2) == pytest.approx(math.exp(-x2 / 2), rel=1e-9)


def test_transform_by_hand() -> None:
    """llama.cpp's order: top-k, then top-p and min-p at temperature 1, then temperature."""
    logits = [3.0, 2.0, 1.0, 0.0, -1.0]
    # top-k 4 keeps ids 0..3; their softmax at T=1: e^3, e^2, e^1, e^0 over their sum
    z = math.e**3 + math.e**2 + math.e + 1
    p = [math.e**3 / z, math.e**2 / z, math.e / z, 1 / z]  # 0.644, 0.237, 0.087, 0.032
    # top-p 0.85: 0.644 < 0.85 <= 0.881, so ids 0 and 1 stay
    assert p[0] < 0.85 <= p[0] + p[1]
    got = transform(logits, Transform(temperature=2.0, top_k=4, top_p=0.85))
    z2 = math.exp(3 / 2) + math.exp(2 / 2)
    assert got == pytest.approx({0: math.exp(1.5) / z2, 1: math.exp(1.0) / z2})
    # min-p 0.1 of the top's 0.644 is 0.0644: id 2 (0.087) stays, id 3 (0.032) goes
    got = transform(logits, Transform(temperature=0.5, top_k=4, min_p=0.1))
    z3 = math.exp(6) + math.exp(4) + math.exp(2)
    assert got == pytest.approx({0: math.exp(6) / z3, 1: math.exp(4) / z3, 2: math.exp(2) / z3})
    with pytest.raises(CutTooClose):  # a tie at the top-k boundary cannot be decided
        transform([1.0, 1.0, 0.0], Transform(temperature=1.0, top_k=1))
    # repetition penalty 2 on ids 0 (positive logit: halved) and 4 (negative: doubled)
    pen = penalize(logits, [0, 4, 0], Transform(temperature=1.0, repeat_penalty=2.0))
    assert list(pen) == [1.5, 2.0, 1.0, 0.0, -2.0]


def test_chi2_test_pools_and_flags_impossible_cells() -> None:
    expected = {(1,): 0.5, (2,): 0.3, (3,): 0.199, (4,): 0.001}
    fair = Counter({(1,): 500, (2,): 300, (3,): 199, (4,): 1})
    assert chi2_test(fair, expected).p_value > 0.99
    assert chi2_test(fair, expected).cells == 3  # (4,) pooled with the smallest cell
    assert chi2_test(Counter({(1,): 560, (2,): 240, (3,): 200}), expected).p_value < 1e-3
    assert chi2_test(Counter({(1,): 999, (5,): 1}), expected).p_value == 0.0


def test_reference_joint_sums_to_one(ref: FreshTarget, pair: Engine) -> None:
    joint = exact_joint(ref, prompt_of(pair), ALL_FILTERS, 3)
    assert math.fsum(joint.values()) == pytest.approx(1.0, abs=1e-9)
    assert all(len(c) == 3 or c[-1] == EOG for c in joint)


# -- rejection sampling (default run) ---------------------------------------------------


def test_rejection_chain_over_several_steps(pair: Engine, ref: FreshTarget) -> None:
    """k=2 chains over 4 tokens (two or more steps: the draft's cache is cut between them)."""
    res = check("rejection chain k=2, 4 tokens, top-k 5", pair, ref, prompt_of(pair), TOPK5, 4,
                spec("chain", draft_max=2), 3000)
    assert res.p > ALPHA_PASS
    assert 0.25 < res.tally.acceptance < 0.85, "the draft must be partly right"
    assert res.tally.max_accepted == 2


def test_rejection_chain_of_three_with_every_filter(pair: Engine, ref: FreshTarget) -> None:
    res = check("rejection chain k=3, top-k 20 top-p 0.9 min-p 0.05", pair, ref, prompt_of(pair),
                ALL_FILTERS, 4, spec("chain", draft_max=3), 3000)
    assert res.p > ALPHA_PASS
    assert 0.25 < res.tally.acceptance < 0.9
    assert res.tally.max_accepted == 3


def test_tree_of_depth_two(pair: Engine, ref: FreshTarget) -> None:
    res = check("tree depth 2, rejection rule (sample-and-match)", pair, ref, prompt_of(pair),
                TOPK5, 4, spec("tree", draft_max=2, tree_budget=6, tree_width=2), 3000)
    assert res.p > ALPHA_PASS
    assert res.tally.max_accepted == 2, "some step must accept two tree levels"
    assert res.tally.rules == {"sample-and-match"}, "the stats name the rule a tree was verified by"


def test_a_tree_near_the_token_limit_keeps_its_width(pair: Engine) -> None:
    """With 2 tokens left to draft a depth-2 tree still has room for width: the nodes
    take KV cells (the context's room), only the depth is bounded by max_tokens."""
    tally = Tally()
    reply(pair, prompt_of(pair), SamplingParams(max_tokens=3), spec("tree", draft_max=2, tree_budget=6,
          tree_width=2), tally)
    assert tally.drafted > 2, tally


def test_short_draft_discard_with_a_cutoff_is_exact(pair: Engine, ref: FreshTarget) -> None:
    """Case 1 of the engine issue: k=2, draft_min=2 and a p_min cut-off, every filter on.
    (Before the fix, whether a short draft was thrown away depended on the drafted token.)"""
    res = check("case 1: draft_min=2 p_min=0.3, rejection", pair, ref, prompt_of(pair, "hello"),
                ALL_FILTERS, 3, spec("chain", draft_max=2, draft_min=2, p_min=0.3), 3000)
    assert res.p > ALPHA_PASS
    assert res.tally.drafted > 0


@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_repetition_penalty_chain(pair: Engine, ref: FreshTarget, rule: str) -> None:
    """A penalty depends on the history: the rejection rule falls back to sample-and-match,
    the coupled rule applies it on both sides; both keep the penalized distribution."""
    t = Transform(temperature=0.8, top_k=5, repeat_penalty=1.5)
    res = check(f"repeat penalty 1.5, chain k=2, {rule}", pair, ref, prompt_of(pair, "the the the"), t, 3,
                spec("chain", draft_max=2), 2000, rule=rule)
    assert res.p > ALPHA_PASS
    assert res.tally.rules == {"sample-and-match" if rule == "rejection-sampling" else "coupled"}
    assert res.tally.accepted > 0


# -- the coupled rule (default run) -----------------------------------------------------


def test_coupled_chain_over_several_steps(pair: Engine, ref: FreshTarget) -> None:
    res = check("coupled chain k=3, every filter", pair, ref, prompt_of(pair), ALL_FILTERS, 4,
                spec("chain", draft_max=3), 3000, rule="coupled")
    assert res.p > ALPHA_PASS
    assert 0.25 < res.tally.acceptance < 0.9
    assert res.tally.max_accepted == 3
    assert res.tally.rules == {"coupled"}


# -- lookup and adaptive under sampling -------------------------------------------------

def lookup_prompt(eng: Engine) -> list[int]:
    """Raw tokens A + G + A + G[:2], G the target's greedy continuation of A: the last
    n-gram recurs, so prompt lookup proposes G[2:], which the target often accepts."""
    assert eng.target_model is not None
    a = eng.target_model.tokenize("hello world")
    g = reply(eng, a, SamplingParams(max_tokens=12), spec("plain")).token_ids
    return [*a, *g, *a[1:], *g[:2]]


@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_lookup_under_sampling(pair: Engine, ref: FreshTarget, rule: str) -> None:
    prompt = lookup_prompt(pair)
    with fake_clock():
        res = check(f"lookup, {rule}", pair, ref, prompt, TOPK5, 3,
                    spec("lookup", draft_max=3), 1000, rule=rule)
    assert res.p > ALPHA_PASS
    assert res.tally.drafting_steps > 500, "lookup must have proposed in most replies"
    assert 0.1 < res.tally.acceptance < 0.9


@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_adaptive_under_sampling(pair: Engine, ref: FreshTarget, rule: str) -> None:
    with fake_clock():
        res = check(f"adaptive, {rule}", pair, ref, prompt_of(pair), ALL_FILTERS, 4,
                    spec("adaptive", draft_max=3), 1000, rule=rule)
    assert res.p > ALPHA_PASS
    assert res.tally.drafting_steps > 200, "adaptive must have drafted in many steps"


# -- slow: larger samples, deeper trees, penalties, the close draft ----------------------


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_slow_chain_k4_close_draft(tiny: dict[str, Path], edge: dict[str, Path], ref: FreshTarget,
                                   rule: str) -> None:
    eng = make_engine(tiny["target"], edge["close_draft"])
    try:
        res = check(f"slow chain k=4 close draft, {rule}", eng, ref, prompt_of(eng), ALL_FILTERS, 4,
                    spec("chain", draft_max=4), 20000, rule=rule)
    finally:
        eng.close()
    assert res.p > ALPHA_PASS
    assert res.tally.max_accepted >= 3


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_slow_tree_depth_three(pair: Engine, ref: FreshTarget, rule: str) -> None:
    # replies of 16 tokens (the first 4 counted), so that the tree is not cut by max_tokens
    res = check(f"slow tree depth 3, {rule}", pair, ref, prompt_of(pair), ALL_FILTERS, 4,
                spec("tree", draft_max=3, tree_budget=12, tree_width=3), 10000, rule=rule,
                max_tokens=16)
    assert res.p > ALPHA_PASS
    assert res.tally.max_accepted == 3


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_slow_case1_adaptive_stop_rule_with_draft_min(pair: Engine, ref: FreshTarget, rule: str) -> None:
    with fake_clock():
        res = check(f"slow case 1 under adaptive, {rule}", pair, ref, prompt_of(pair, "hello"), ALL_FILTERS,
                    3, spec("adaptive", draft_max=2, draft_min=2, p_min=0.3), 20000, rule=rule)
    assert res.p > ALPHA_PASS


@pytest.mark.slow
def test_slow_case1_large_sample(pair: Engine, ref: FreshTarget) -> None:
    res = check("slow case 1, 20000 seeds", pair, ref, prompt_of(pair, "hello"), ALL_FILTERS, 3,
                spec("chain", draft_max=2, draft_min=2, p_min=0.3), 20000)
    assert res.p > ALPHA_PASS
