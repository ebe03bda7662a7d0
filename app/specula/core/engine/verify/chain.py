"""Verifying a chain: the pending token and the drafted tokens went through one target
decode; walk the rows by the reply's rule (rejection sampling, the coupled rule, greedy),
and with ``spec.lossy`` the relaxed rules that keep a near miss.

Apart from the generator's loop so that the loop reads as plan, propose, verify, commit,
and the rules of acceptance sit beside the tree's walk (:mod:`tree_verify`).
"""

from __future__ import annotations

import numpy as np

from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters.proposal import Proposal
from specula.core.engine.events import TokenOrigin
from specula.core.engine.native.context import Context
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.verify.reply import ReplySampling
from specula.core.engine.verify.result import NewToken, TokenLogprobs, VerifyResult

_REJECTION = sampling.AcceptanceRule.REJECTION


def accept_chain(
    ctx: Context, prop: Proposal, committed: list[int], reply: ReplySampling,
    gaps: list[float] | None = None, first: int = 0,
) -> VerifyResult:
    """Walk the verified chain: the new tokens with their logprobs, the accepted draft
    tokens m (a relaxed acceptance's origin is ``RELAXED``).

    ``ctx`` holds the verify decode's outputs: row i the target's logits after the
    pending token and the first i drafted tokens. New tokens are the accepted proposals
    plus one token of the target's own (the correction at the first rejection, or the
    bonus after the last). ``gaps``: when a list, the target's top-2 logit gap at every
    position walked is appended (the benchmark explains greedy divergences with it).
    ``first``: the batch index of the pending token (kept tokens decoded again may
    come before it on recurrent memory, see loop/target_verify.py).
    """
    new: list[NewToken] = []
    lps: list[TokenLogprobs | None] = []
    src = prop.token_source
    spec, params, rule = reply.spec, reply.params, reply.rule
    history = sampling.penalty_window(committed, params)  # the penalty's window, not the chat
    for i, d in enumerate(prop.tokens):
        logits = ctx.logits(first + i)
        if gaps is not None:
            gaps.append(topk.top2_gap(logits))
        if rule is _REJECTION:
            p = reply.target_probs(logits, drafted=True)
            q = prop.q[i]  # None: a deterministic (lookup) proposal
            ok = sampling.accept_draft_token(p, q, d, reply.rng)
            y = d if ok else sampling.sample(sampling.residual(p, q, d), reply.rng)
        else:  # greedy, coupled, sample-and-match: accept while the target's choice agrees
            y = reply.choose(logits, history, len(committed) + i)
            ok = y == d
        if ok:
            lps.append(reply.took(logits, d))
            new.append((d, src, prop.token_probs[i]))
            if history:
                history.append(d)
            continue
        if (spec.lossy and (reply.grammar is None or reply.grammar.allows(d))
                and relaxed_accepts(logits, d, prop.token_probs[i], spec)):
            lps.append(reply.took(logits, d))
            new.append((d, TokenOrigin.RELAXED, prop.token_probs[i]))
            if history:
                history.append(d)
            continue
        lps.append(reply.took(logits, y))
        new.append((y, TokenOrigin.TARGET, None))
        return VerifyResult(tuple(new), tuple(lps), rule, len(new) - 1)
    logits = ctx.logits(first + len(prop))
    if gaps is not None:
        gaps.append(topk.top2_gap(logits))
    if rule is _REJECTION:
        p_next = sampling.bonus_probs(reply.target_probs(logits), None)
        y = sampling.sample(p_next, reply.rng)
    else:
        y = reply.choose(logits, history, len(committed) + len(prop))
    lps.append(reply.took(logits, y))
    new.append((y, TokenOrigin.TARGET, None))
    return VerifyResult(tuple(new), tuple(lps), rule, len(new) - 1)


def relaxed_accepts(logits: np.ndarray, token: int, draft_prob: float | None, spec: SpecConfig) -> bool:
    """The lossy rules: the token is in the target's top-k, or p_target / p_draft is high enough."""
    if spec.relaxed_top_k > 0:
        k = min(spec.relaxed_top_k, logits.shape[0])
        kth = np.partition(logits, -k)[-k]
        if logits[token] >= kth:
            return True
    if spec.relaxed_ratio > 0 and draft_prob:
        x = logits - logits.max()
        p_t = float(np.exp(x[token]) / np.exp(x).sum())
        return p_t / draft_prob >= spec.relaxed_ratio
    return False
