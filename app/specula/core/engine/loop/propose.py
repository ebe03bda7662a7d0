"""One step's proposal: the policy plans a source and a size from what the drafters
can offer, and the drafter for that source proposes a chain or a tree.

The loop never asks what a policy or a drafter is: this is the only place that hands
one's answer to the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from specula.core.engine.drafters import Drafter, DraftRequest, Proposal
from specula.core.engine.drafters.tree import MAX_TREE_SEQS
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.fixed import DraftPolicy, PlanInput
from specula.core.engine.verify.reply import ReplySampling


def propose(
    committed: list[int], cells: int, left: int, reply: ReplySampling, policy: DraftPolicy,
    active: dict[TokenOrigin, Drafter], decode_clock: Callable[[], float], *, ready: bool = True,
) -> tuple[Proposal, Drafter | None]:
    """Ask the policy what to draft and the drafter for that source to propose it;
    (the proposal, the drafter that made it or None for an empty one).

    ``cells``: KV cells free after the pending token (a tree's nodes each take one);
    ``left``: tokens that may still be drafted before max_tokens (bounds depth only);
    ``ready``: False in the first step, which is a plain target step: its token is
    shown before any drafter spends time (the drafters' catch-up comes after it);
    ``decode_clock``: seconds in llama_decode so far, to tell the drafter's host time.
    """
    room = min(cells, left)
    if room <= 0 or not ready or not active:  # no drafter: nothing a plan could pick
        return Proposal(), None
    spec = reply.spec
    look: list[int] = []
    match = 0
    for d in active.values():  # the best preview (only lookup has one today)
        toks, n = d.preview(committed, min(room, spec.draft_max))
        if toks and n > match:
            look, match = toks, n
    available = frozenset(s for s, d in active.items() if d.available)
    lag = max((d.lag(committed) for d in active.values()), default=0)
    plan = policy.plan(PlanInput(room, available, look, match, lag))
    drafter = active.get(plan.source)
    if drafter is None or plan.k <= 0 or not drafter.available:
        return Proposal(), None
    budget = min(plan.k, spec.tree_budget, MAX_TREE_SEQS, cells)
    req = DraftRequest(
        committed=committed, k=min(plan.k, spec.draft_max, room), params=reply.params,
        seed=reply.seed, rng=reply.rng, keep=policy.keep_drafting, draft_min=spec.draft_min,
        tree_budget=budget, tree_width=spec.tree_width, lookup_tokens=plan.lookup_tokens or [],
        grammar=reply.grammar, confidence=policy.reads_confidence,
    )
    c0, t0 = decode_clock(), time.perf_counter()
    prop = drafter.propose(req)
    prop.host_s = max(time.perf_counter() - t0 - (decode_clock() - c0), 0.0)
    return prop, drafter


def catch_up(committed: list[int], active: dict[TokenOrigin, Drafter],
             window: int | None = None) -> tuple[int, float]:
    """Feed the drafters all they have not seen but the pending token (with ``window``,
    the policy's bound for a probe: at most that many past what they hold), once in a
    reply the policy syncs the draft in: after the first token was shown (TTFT is the
    target's alone), or in prefill with ``draft_first_token``; (tokens fed, seconds)."""
    t0 = time.perf_counter()
    fed = 0
    for d in active.values():
        if d.lag(committed) > 1:
            fed += d.begin(committed, sync=True, window=window)
    return fed, time.perf_counter() - t0
