"""A new pair's cost model, measured at load instead of inside the user's first reply.

The adaptive policy chooses a draft length from what a verify batch of n tokens
costs the target and what one draft decode costs. With no saved state for a
pair it used to learn those by probing (plain steps, two-token drafts, every
length in turn) inside the first replies, which cost a quarter of the first
reply on a pair where drafting does not pay. Here the same decodes the steps
would make are timed once, right after the draft is loaded, on a short made-up
context: target batches of 1..9 tokens (logits for all, as a verify asks),
single draft decodes, and two batched draft feeds (what a catch-up costs per
token: a short one, and a long one, far cheaper per token, for a conversation the
draft has not seen). The numbers seed a policy that has no saved state; real steps then
refine them as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from specula.core.engine.config import DEFAULT_DRAFT_MAX
from specula.core.engine.cost_model import MEASURED, SHORT_FEED, CostModel
from specula.core.engine.kv import ANCHOR, KVCache

CONTEXT_TOKENS = 32  # a short context: verify cost at the start of a chat
MAX_BATCH = DEFAULT_DRAFT_MAX + 1  # verify batches measured: 1..9 tokens (draft lengths 0..8)
TREE_BATCH = 13  # and a default token tree's (12 nodes and the pending token): whether a
# tree could ever beat the chain depends on it, and the line through 1..9 misses jumps
DRAFT_DECODES = 4
CATCHUP_BATCH = SHORT_FEED  # draft tokens fed at once to time a short catch-up
LONG_BATCH = 64  # and a long one: the draft's catch-up on a conversation it has not seen


@dataclass
class Calibration:
    """Seconds per target verify batch (by size) and per single draft decode."""

    verify: dict[int, float] = field(default_factory=dict)
    draft: float | None = None
    catchup_per_token: float | None = None  # extra draft seconds per token of a batched feed
    catchup_long_per_token: float | None = None  # per token past CATCHUP_BATCH in a long feed
    rollback: float | None = None  # a recurrent target's checkpoint, restore and replay per step
    seconds: float = 0.0  # wall time the measurement took

    def seed(self, cost: CostModel) -> bool:
        """Fill an empty cost model with these figures (a saved one wins); whether it did."""
        if cost.verify or not self.verify:
            return False
        for n, s in self.verify.items():
            cost.verify[n] = s
            cost.verify_n[n] = MEASURED  # measured cleanly: trusted like a length seen thrice
        if cost.draft is None:
            cost.draft = self.draft
        if cost.catchup_per_token is None:
            cost.catchup_per_token = self.catchup_per_token
        if cost.catchup_long_per_token is None:
            cost.catchup_long_per_token = self.catchup_long_per_token
        if cost.rollback is None:
            cost.rollback = self.rollback
        return True


def _filler(n_vocab: int, n: int, offset: int = 0) -> list[int]:
    """Ordinary token ids (decode time does not depend on which ones)."""
    lo = min(100, n_vocab - 1)
    span = max(min(n_vocab - lo, 20000), 1)
    return [lo + (offset + 7919 * i) % span for i in range(n)]


def _rollback(target: KVCache, n_vocab: int) -> float:
    """What a drafted step of 4 tokens with 1 accepted costs a recurrent target besides its
    verify: a checkpoint, then a restore and the replay of the 2 kept tokens."""
    before = target.costs.copy()
    target.feed(_filler(n_vocab, 2, 7), "none")
    target.checkpoint(ANCHOR)  # a save timed like the one before each verify
    target.feed(_filler(n_vocab, 4, 9), "all")
    target.cut(CONTEXT_TOKENS + 4)  # the anchor's 2 tokens + 2 of the 4 verified: replay 2
    spent = target.costs.since(before)
    target.cut(CONTEXT_TOKENS)
    return spent.checkpoint_s + spent.restore_s + spent.replay_s


def measure(target: KVCache, draft: KVCache | None, n_vocab: int, *,
            max_batch: int = MAX_BATCH) -> Calibration:
    """Time target batches of 1..max_batch tokens (and TREE_BATCH) and single draft decodes.

    Both caches are cleared before and after (the measurement's tokens must never
    pass for a conversation's prefix). Each size is decoded once after one
    warm-up decode; a size that does not fit the context is skipped.
    """
    t0 = time.perf_counter()
    cal = Calibration()
    base = _filler(n_vocab, CONTEXT_TOKENS)
    try:
        target.clear()
        sizes = [*range(1, max_batch + 1), *([TREE_BATCH] if max_batch < TREE_BATCH else [])]
        if not target.fits(CONTEXT_TOKENS + max(sizes)):
            return cal
        target.feed(base, "none")
        target.checkpoint()  # recurrent memory: every cut below comes back here
        target.feed(_filler(n_vocab, 1, 1), "all")  # warm-up: the first decode pays for allocation
        target.cut(CONTEXT_TOKENS)
        for n in sizes:
            cal.verify[n] = target.feed(_filler(n_vocab, n, n), "all")
            target.cut(CONTEXT_TOKENS)
        if not target.exact_cut:
            cal.rollback = _rollback(target, n_vocab)
        if draft is not None:
            draft.clear()
            if draft.fits(CONTEXT_TOKENS + CATCHUP_BATCH):
                draft.feed(base, "last")
                draft.checkpoint()
                draft.feed(_filler(n_vocab, 1, 1), "last")  # warm-up
                draft.cut(CONTEXT_TOKENS)
                spent = []
                for i in range(DRAFT_DECODES):
                    spent.append(draft.feed(_filler(n_vocab, 1, i + 2), "last"))
                    draft.cut(CONTEXT_TOKENS)
                cal.draft = sorted(spent)[len(spent) // 2]
                # a catch-up (after plain steps, or the bonus token) is one batched feed
                batch = draft.feed(_filler(n_vocab, CATCHUP_BATCH, 3), "last")
                draft.cut(CONTEXT_TOKENS)
                cal.catchup_per_token = max(batch - cal.draft, 0.0) / (CATCHUP_BATCH - 1)
                if draft.fits(CONTEXT_TOKENS + LONG_BATCH):
                    long = draft.feed(_filler(n_vocab, LONG_BATCH, 5), "last")
                    draft.cut(CONTEXT_TOKENS)
                    cal.catchup_long_per_token = max(long - batch, 0.0) / (LONG_BATCH - CATCHUP_BATCH)
    finally:
        target.clear()
        if draft is not None:
            draft.clear()
    cal.seconds = time.perf_counter() - t0
    return cal
