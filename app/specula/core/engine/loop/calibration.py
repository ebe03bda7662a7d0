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

A busy machine (another process on the same core) stretches some decodes and not
others. So a few sizes are timed a second time; where the two passes disagree by
more than CHECK_DEV, every size is timed again (up to PASSES in all) and each
figure is the median of its passes. If the passes still disagree the calibration
is marked *erratic*: its figures still start the session, but the session's cost
model is never saved (:attr:`CostModel.erratic`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from specula.core.engine.config import DEFAULT_DRAFT_MAX
from specula.core.engine.native.kv import ANCHOR, KVCache
from specula.core.engine.policy import cost_model
from specula.core.engine.policy.cost_model import MEASURED, NOISE_FLOOR_S, SHORT_FEED, CostModel

CONTEXT_TOKENS = 32  # a short context: verify cost at the start of a chat
MAX_BATCH = DEFAULT_DRAFT_MAX + 1  # verify batches measured: 1..9 tokens (draft lengths 0..8)
TREE_BATCH = 13  # and a default token tree's (12 nodes and the pending token): whether a
# tree could ever beat the chain depends on it, and the line through 1..9 misses jumps
DRAFT_DECODES = 4
CATCHUP_BATCH = SHORT_FEED  # draft tokens fed at once to time a short catch-up
LONG_BATCH = 64  # and a long one: the draft's catch-up on a conversation it has not seen
CHECK_SIZES = (1, 4, 8)  # timed twice: the check that the first pass was quiet
CHECK_DEV = 0.15  # a relative difference between passes above this is noise, not cost
PASSES = 3  # passes over every size at most when the check fails (medians of them)


@dataclass
class Calibration:
    """Seconds per target verify batch (by size) and per single draft decode."""

    verify: dict[int, float] = field(default_factory=dict)
    draft: float | None = None
    catchup_per_token: float | None = None  # extra draft seconds per token of a batched feed
    catchup_long_per_token: float | None = None  # per token past CATCHUP_BATCH in a long feed
    rollback: float | None = None  # a recurrent target's checkpoint, restore and replay per step
    seconds: float = 0.0  # wall time the measurement took
    passes: int = 1  # passes over every verify size (more when the first one was noisy)
    erratic: bool = False  # the passes disagreed: the timings are not to be kept

    def seed(self, cost: CostModel) -> bool:
        """Fill an empty cost model with these figures; whether it did. A saved one wins,
        unless this load found the machine faster than when it was saved (its one-token
        verify lower by more than ERRATIC_DEV, quietly): the saved figures were taken under
        contention, and this load's, every size timed now, replace them."""
        if not self.verify:
            return False
        if cost.verify:
            saved, now = cost.verify.get(1), self.verify.get(1)
            if self.erratic or saved is None or now is None or now >= (1.0 - cost_model.ERRATIC_DEV) * saved:
                return False
            cost.verify, cost.verify_n = {}, {}
            cost.draft = cost.catchup_per_token = cost.catchup_long_per_token = cost.rollback = None
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
        cost.erratic = cost.erratic or self.erratic
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
            max_batch: int = MAX_BATCH,
            progress: Callable[[float], None] | None = None) -> Calibration:
    """Time target batches of 1..max_batch tokens (and TREE_BATCH) and single draft decodes.

    Both caches are cleared before and after (the measurement's tokens must never
    pass for a conversation's prefix). Each size is decoded once after one
    warm-up decode; a size that does not fit the context is skipped. ``progress`` hears
    the fraction done after each timed decode (the app names this load step with it).
    """
    t0 = time.perf_counter()
    cal = Calibration()
    base = _filler(n_vocab, CONTEXT_TOKENS)
    try:
        target.clear()
        sizes = [*range(1, max_batch + 1), *([TREE_BATCH] if max_batch < TREE_BATCH else [])]
        total = len(sizes) + (DRAFT_DECODES + 2 if draft is not None else 0)
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(min(done / total, 1.0))

        if progress is not None:
            progress(0.0)  # the step begins (its warm-up decode costs as much as a size)
        if not target.fits(CONTEXT_TOKENS + max(sizes)):
            return cal
        target.feed(base, "none")
        target.checkpoint()  # recurrent memory: every cut below comes back here
        target.feed(_filler(n_vocab, 1, 1), "all")  # warm-up: the first decode pays for allocation
        target.cut(CONTEXT_TOKENS)

        def time_batch(n: int) -> float:
            spent = target.feed(_filler(n_vocab, n, n), "all")
            target.cut(CONTEXT_TOKENS)
            tick()
            return spent

        cal.verify, cal.passes, cal.erratic = timed_passes(sizes, time_batch)
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
                    tick()
                cal.draft = sorted(spent)[len(spent) // 2]
                if cal.draft > 0 and _disagree(min(spent), cal.draft):
                    cal.erratic = True  # one draft decode took far less than the median
                # a catch-up (after plain steps, or the bonus token) is one batched feed
                batch = draft.feed(_filler(n_vocab, CATCHUP_BATCH, 3), "last")
                draft.cut(CONTEXT_TOKENS)
                tick()
                cal.catchup_per_token = max(batch - cal.draft, 0.0) / (CATCHUP_BATCH - 1)
                if draft.fits(CONTEXT_TOKENS + LONG_BATCH):
                    long = draft.feed(_filler(n_vocab, LONG_BATCH, 5), "last")
                    draft.cut(CONTEXT_TOKENS)
                    tick()
                    cal.catchup_long_per_token = max(long - batch, 0.0) / (LONG_BATCH - CATCHUP_BATCH)
    finally:
        target.clear()
        if draft is not None:
            draft.clear()
    cal.seconds = time.perf_counter() - t0
    return cal


def _disagree(a: float, b: float) -> bool:
    """Two timings of the same decode that differ by more than noise (CHECK_DEV of the
    smaller, and more than NOISE_FLOOR_S: sub-millisecond decodes jitter by themselves)."""
    return abs(a - b) > max(CHECK_DEV * min(a, b), NOISE_FLOOR_S)


def timed_passes(sizes: list[int], time_batch: Callable[[int], float]
                 ) -> tuple[dict[int, float], int, bool]:
    """(seconds per size, passes made, erratic): one pass, a second timing of CHECK_SIZES,
    and where they disagree up to PASSES full passes with the median per size; erratic
    when the last two passes still disagree on a CHECK_SIZES size."""
    runs: dict[int, list[float]] = {n: [time_batch(n)] for n in sizes}
    checks = [n for n in CHECK_SIZES if n in runs]
    again = {n: time_batch(n) for n in checks}
    if not any(_disagree(runs[n][0], t) for n, t in again.items()):
        return {n: ts[0] for n, ts in runs.items()}, 1, False
    for n, t in again.items():
        runs[n].append(t)
    passes = 1
    while passes < PASSES:
        passes += 1
        for n in sizes:
            if len(runs[n]) < passes:
                runs[n].append(time_batch(n))
    erratic = any(_disagree(runs[n][-2], runs[n][-1]) for n in checks)
    return {n: float(statistics.median(ts)) for n, ts in runs.items()}, passes, erratic
