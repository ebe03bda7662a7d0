"""The exactness tests have power: each classic bug, patched in, is rejected.

Every test here injects one bug through the engine's patch points (module-level
functions looked up at call time, see docs/engine.md), runs the same check as
``test_sampling_exact.py`` and asserts that the chi-square test REJECTS the
target's distribution (p < ``ALPHA_POWER``). The p-values are printed (run with
``-rP``). The default run has one powered test per acceptance rule (rejection
sampling: the residual replaced by p; the coupled rule: noise keyed without the
position) plus the cheap ones; ``-m slow`` adds the rest at larger samples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.sampling import rules as sampling
from tests.core.engine.reference import FreshTarget, Transform, transform
from tests.core.engine.sampling_runs import ALPHA_POWER, Check, check, prompt_of, spec

TOPK5 = Transform(temperature=0.8, top_k=5)
ALL_FILTERS = Transform(temperature=0.8, top_k=20, top_p=0.9, min_p=0.05)



def rejected(res: Check) -> bool:
    return res.p < ALPHA_POWER


def softmax(logits: Any) -> Any:
    x = np.asarray(logits, dtype=np.float64)
    e = np.exp(x - x.max())
    return (e / e.sum()).astype(np.float32)


# -- rejection sampling -------------------------------------------------------------------


def test_residual_replaced_by_p_is_caught(pair: Engine, ref: FreshTarget,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "residual", lambda p, q, token=-1: p)
    res = check("BUG residual = p", pair, ref, prompt_of(pair, "hello"), TOPK5, 3,
                spec("chain", draft_max=2), 2000)
    assert rejected(res), res.chi2


def test_accept_always_is_caught(pair: Engine, ref: FreshTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "accept_draft_token", lambda p, q, token, rng: True)
    res = check("BUG accept always", pair, ref, prompt_of(pair), TOPK5, 3,
                spec("chain", draft_max=2), 500)
    assert rejected(res), res.chi2


def test_target_transform_without_top_k_is_caught(pair: Engine, ref: FreshTarget,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A different transform for the target (top-k forgotten) shows in every mode; here a tree."""
    orig = sampling.probs
    monkeypatch.setattr(sampling, "probs", lambda logits, params: orig(
        logits, type(params)(**{**params.to_dict(), "top_k": 0})))
    res = check("BUG target transform without top-k (tree)", pair, ref, prompt_of(pair), TOPK5, 3,
                spec("tree", draft_max=2, tree_budget=6, tree_width=2), 500)
    assert rejected(res), res.chi2


@pytest.mark.slow
def test_bonus_token_from_q_is_caught(tiny: dict[str, Path], pair: Engine, ref: FreshTarget,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After a fully accepted chain the bonus token comes from the draft's q at that
    position instead of the target's p. The engine passes no q there (the draft never
    computes it), so the bug computes it: the draft model on a fresh context."""
    from specula.core.engine.verify import chain as chain_verify

    draft_ref = FreshTarget(tiny["draft"])
    where: dict[str, Any] = {}
    orig_accept = chain_verify.accept_chain

    def accept(ctx: Any, prop: Any, committed: list[int], reply: Any, gaps: Any = None,
               **kw: Any) -> Any:
        where["prefix"] = [*committed, *prop.tokens]
        where["params"] = reply.params
        return orig_accept(ctx, prop, committed, reply, gaps, **kw)

    def bonus_from_q(p_next: Any, q_next: Any) -> Any:
        prm = where["params"]
        q = transform(draft_ref.logits(where["prefix"]),
                      Transform(prm.temperature, prm.top_k, prm.top_p, prm.min_p), margin=0.0)
        out = np.zeros_like(p_next)
        for tok, pr in q.items():
            out[tok] = pr
        return out

    monkeypatch.setattr(chain_verify, "accept_chain", accept)
    monkeypatch.setattr(sampling, "bonus_probs", bonus_from_q)
    try:
        res = check("BUG bonus token from q", pair, ref, prompt_of(pair, "hello"), TOPK5, 3,
                    spec("chain", draft_max=2), 6000)
    finally:
        draft_ref.close()
    assert rejected(res), res.chi2


class RawQ(np.ndarray):  # type: ignore[type-arg]
    """The raw softmax handed to the rule, carrying the transformed q the draft samples from."""

    transformed: Any = None


@pytest.mark.slow
def test_q_without_the_transform_is_caught(pair: Engine, ref: FreshTarget,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The draft samples from the transformed q but the rule is handed the raw softmax.
    (Patching draft_probs alone is no bug: the draft would then sample from the raw
    softmax too, and rejection sampling is exact for any proposal it samples from.)"""
    orig_q, orig_sample = sampling.draft_probs, sampling.sample

    def raw_q(logits: Any, params: Any) -> Any:
        out = softmax(logits).view(RawQ)
        out.transformed = orig_q(logits, params)
        return out

    def sample(p: Any, rng: Any) -> int:
        return orig_sample(p.transformed if isinstance(p, RawQ) else p, rng)

    monkeypatch.setattr(sampling, "draft_probs", raw_q)
    monkeypatch.setattr(sampling, "sample", sample)
    res = check("BUG q without the transform", pair, ref, prompt_of(pair, "hello"), TOPK5, 3,
                spec("chain", draft_max=2), 6000)
    assert rejected(res), res.chi2


@pytest.mark.slow
def test_discard_that_depends_on_the_drafted_token_is_caught(pair: Engine, ref: FreshTarget,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping drafts shorter than draft_min under rejection sampling: with a p_min
    cut-off the length of a draft depends on its tokens, so the kept ones are not ~ q."""
    from specula.core.engine.drafters import base as drafters_base

    monkeypatch.setattr(drafters_base, "keep_short_draft",
                        lambda n_drafted, draft_min, rule: n_drafted == 0 or n_drafted >= draft_min)
    res = check("BUG discard short drafts (draft_min=2, p_min=0.3)", pair, ref,
                prompt_of(pair, "hello"), ALL_FILTERS, 3,
                spec("chain", draft_max=2, draft_min=2, p_min=0.3), 6000)
    assert rejected(res), res.chi2


# -- the coupled rule ---------------------------------------------------------------------


def test_coupled_noise_without_the_position_is_caught(pair: Engine, ref: FreshTarget,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The same noise at every position: each token is still ~ p, but the joint is not."""
    orig = sampling.gumbel_noise
    monkeypatch.setattr(sampling, "gumbel_noise", lambda seed, position, ids: orig(seed, 0, ids))
    res = check("BUG coupled noise without position", pair, ref, prompt_of(pair, "hello"), TOPK5, 3,
                spec("chain", draft_max=2), 3000, rule="coupled")
    assert rejected(res), res.chi2


def test_coupled_noise_without_the_seed_is_caught(pair: Engine, ref: FreshTarget,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    orig = sampling.gumbel_noise
    monkeypatch.setattr(sampling, "gumbel_noise", lambda seed, position, ids: orig(0, position, ids))
    res = check("BUG coupled noise without seed", pair, ref, prompt_of(pair), TOPK5, 3,
                spec("chain", draft_max=2), 300, rule="coupled")
    assert rejected(res), res.chi2


@pytest.mark.slow
def test_coupled_noise_without_the_position_in_a_tree_is_caught(
        pair: Engine, ref: FreshTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    orig = sampling.gumbel_noise
    monkeypatch.setattr(sampling, "gumbel_noise", lambda seed, position, ids: orig(seed, 0, ids))
    res = check("BUG coupled noise without position (tree)", pair, ref, prompt_of(pair, "hello"), TOPK5, 3,
                spec("tree", draft_max=2, tree_budget=6, tree_width=2), 6000, rule="coupled")
    assert rejected(res), res.chi2


@pytest.mark.parametrize("rule", ["rejection-sampling", "coupled"])
def test_penalty_forgotten_is_caught(pair: Engine, ref: FreshTarget, rule: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The repetition penalty check has power too: dropping the penalty is rejected."""
    monkeypatch.setattr(sampling, "apply_penalties", lambda logits, history, params: logits)
    t = Transform(temperature=0.8, top_k=5, repeat_penalty=1.5)
    res = check(f"BUG penalty forgotten, {rule}", pair, ref, prompt_of(pair, "the the the"), t, 3,
                spec("chain", draft_max=2), 500, rule=rule)
    assert rejected(res), res.chi2
