"""The draft model: its KV mirror, and the chain drafter over it.

The draft keeps its own cache in step with the committed tokens and never
re-evaluates a token it has seen: after a step it drops its rejected
proposals and next time feeds only what it has not seen (normally the
target's last token). It feeds itself within its own n_ctx and n_batch; when
it cannot follow (a token outside its vocabulary, its context is full, a
decode fails) it stops drafting for the rest of the reply and says why; the
reply goes on without it.

A probe asks only whether the draft agrees with the target now, so where the
policy bounds it (``begin(window=W)``) and the draft has more than W tokens of
the conversation to catch up on, it skips them but the last W: it reads what
its cache already holds (at least the chat's first SINK tokens), then the tail.
The cost of a probe in a long chat is then W tokens of feed, not the chat. For
the rest of that reply the cache mirrors that *view* of the conversation
(:meth:`DraftModel.seen`); the next reply compares the whole conversation
again, keeps the prefix before the skipped stretch and feeds the rest when the
policy next drafts. Only what is proposed changes: the target verifies every
drafted token, so the reply stays exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specula.core.engine.drafters import base  # patch points, looked up at call time
from specula.core.engine.drafters.base import softmax_stats
from specula.core.engine.drafters.proposal import DraftRequest, Proposal
from specula.core.engine.events import TokenOrigin
from specula.core.engine.grammar import state as grammar
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import ANCHOR, CutFailed, KVCache, KVHolder
from specula.core.engine.native.llama import ContextFull, DecodeError
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk

# What a draft step feeds before drafting when the draft drafted the step before: the
# pending token and at most one drafted token it had not fed. A longer catch-up fed
# tokens the draft sat out for (or, after a tree step, the accepted path: see
# DraftModel.sat_out).
STEP_FEED = 2
# A probe in a long conversation feeds the draft its first SINK tokens (the chat's start,
# where attention rests: StreamingLLM, Xiao et al. 2023) and the last tokens of the prompt.
SINK = 4


def skipped_stretch(n_prompt: int, held: int, window: int) -> tuple[int, int] | None:
    """The stretch ``prompt[start:resume]`` a probe skips, for a prompt of ``n_prompt``
    tokens of which the draft's cache holds the first ``held``; None: nothing is skipped.

    The cache keeps what it holds (the chat's first SINK tokens at least, fed if not); the
    draft then reads the prompt's last ``window`` tokens before the pending one, which the
    first draft step feeds. One function, so that measurement tools (``agreement_trace
    --windows``) read the view the engine drafts on."""
    want = n_prompt - 1  # the pending token is fed with the first draft step
    start = max(min(held, want), SINK)
    resume = want - window
    return (start, resume) if resume > start else None


class DraftModel(KVHolder):
    """A draft model's context, mirrored, shared by the chain and the tree drafters."""

    def __init__(self, ctx: Context, n_target_vocab: int) -> None:
        self.kv = KVCache(ctx)
        self.n_vocab = ctx.n_vocab  # ids the draft has
        self.n_shared = min(ctx.n_vocab, n_target_vocab)  # ids both have
        self.n_target_vocab = n_target_vocab
        self.stopped = ""
        self._owed = STEP_FEED  # what the draft's own last step left it to feed
        # A probe's skipped stretch, committed[start:resume], and the view the cache then
        # mirrors (committed[:start] + committed[resume:]); None: the whole conversation.
        self._gap: tuple[int, int] | None = None
        self._view: list[int] = []

    def reset(self) -> None:
        self.kv.clear()
        self._gap = None

    def stop(self, why: str) -> None:
        if not self.stopped:
            self.stopped = why

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        """A new reply: draft again, and feed the prompt (all but its last token) if ``sync``;
        with ``window``, at most that many tokens past what the cache holds (a probe: the
        stretch before the prompt's last ``window`` tokens is skipped for this reply).
        Returns the tokens fed.

        Idempotent (the chain and the tree drafters share this model and both begin)."""
        self.stopped = ""
        self._owed = STEP_FEED
        self._gap = None
        if not sync:
            return 0
        if window is not None:
            self._skip_to(prompt, window)
        return self.catch_up(prompt, keep_last=False, room_after=1)[0]

    def _skip_to(self, prompt: Sequence[int], window: int) -> None:
        """Skip what the draft has not seen of ``prompt`` but its last ``window`` tokens and
        the pending one, where that is more than ``window`` tokens (:func:`skipped_stretch`)."""
        gap = skipped_stretch(len(prompt), self.kv.agreement(prompt), window)
        if gap is not None:
            self._gap = gap
            self._view = list(prompt[:gap[0]])

    def seen(self, committed: Sequence[int]) -> Sequence[int]:
        """What the cache is compared with: ``committed``, or after a skipped stretch the
        view without it (the same list object all reply, extended as the reply grows)."""
        if self._gap is None:
            return committed
        start, resume = self._gap
        view = self._view
        n = start + max(len(committed) - resume, 0)
        if len(view) > n:
            del view[n:]
        elif len(view) < n:
            view.extend(committed[resume + len(view) - start:])
        return view

    def room(self, committed: Sequence[int]) -> int:
        """Cells of the draft's context left after its view of ``committed``."""
        return self.kv.n_ctx - len(self.seen(committed))

    def lag(self, committed: Sequence[int]) -> int:
        """Tokens of ``committed`` past the longest prefix the draft's cache holds (the
        work is what changed since the last step, see KVCache.agreement)."""
        seen = self.seen(committed)
        return len(seen) - self.kv.agreement(seen)

    def sat_out(self, n_fed: int) -> bool:
        """Whether a catch-up of ``n_fed`` tokens fed more than the draft's own last step
        left it to feed (the pending token, the drafted token it did not feed, a tree's
        accepted path): the rest are tokens it skipped, the prompt of a lazily fed reply
        or plain and lookup steps, and the statistics report that cost on its own."""
        return n_fed > max(self._owed, STEP_FEED)

    def catch_up(self, committed: Sequence[int], *, keep_last: bool = True,
                 room_after: int = 1) -> tuple[int, float]:
        """Feed what the draft has not seen of ``committed`` (logits of the last one when
        ``keep_last``), leaving ``room_after`` cells free; (tokens fed, seconds). On failure
        the drafter stops (``stopped`` says why) and (0, 0.0) is returned."""
        committed = self.seen(committed)
        want = len(committed) if keep_last else len(committed) - 1
        try:
            n = self.kv.reuse(committed, limit=want - 1 if keep_last else want)
        except CutFailed as exc:  # the cache was emptied: the draft sits out the reply
            self.stop(str(exc))
            return 0, 0.0
        todo = list(committed[n:want])
        if any(t >= self.n_vocab for t in todo):
            self.stop("the target produced a token outside the draft's vocabulary")
            return 0, 0.0
        if not self.kv.fits(len(todo) + room_after - 1 if keep_last else len(todo)):
            self.stop(f"the draft's context window ({self.kv.n_ctx} tokens) is full")
            return 0, 0.0
        try:
            spent = self.kv.feed(todo, "last" if keep_last else "none")
        except (ContextFull, DecodeError, CutFailed) as exc:
            self.stop(f"a draft decode failed ({exc})")
            return 0, 0.0
        if len(todo) > STEP_FEED and self._gap is None:
            # recurrent memory: the conversation, for the next reply (not a view of it: the
            # anchor then stays where the conversation the next reply compares agrees)
            self.kv.checkpoint(ANCHOR)
        return len(todo), spent

    def feed_one(self, token: int, *, first: bool = False) -> float | None:
        """Feed a drafted token; None when the draft cannot (it has stopped). ``first``:
        the chain's first fed token, after which rejected ones may have to be cut
        (recurrent memory: the state before it is saved first)."""
        if first:
            self.kv.checkpoint()
        try:
            return self.kv.feed([token], "last")
        except (ContextFull, DecodeError, CutFailed) as exc:
            self.stop(f"the draft's context window is full ({exc})")
            return None

    def drop_rejected(self, committed: Sequence[int]) -> None:
        """Cut the cache back to the committed tokens (compared from what agreed before
        the proposal: the step's tokens, not the chat). On recurrent memory the cache goes
        back to the checkpoint taken before the drafted tokens were fed, and the accepted
        ones are fed again with the next step's catch-up (one decode, not two)."""
        committed = self.seen(committed)
        keep = self.kv.agreement(committed)
        try:
            kept = self.kv.rewind(keep)
        except CutFailed as exc:  # the cache was emptied: the draft sits out the reply
            self.stop(str(exc))
            kept = 0
        # what the next step feeds first: the tokens after what it kept
        self._owed = len(committed) - kept


class ModelDrafter:
    """What the drafters over one draft model share: its state and the bookkeeping
    after a step. Subclasses implement ``propose``."""

    source = TokenOrigin.TARGET

    def __init__(self, model: DraftModel) -> None:
        self.model = model

    @property
    def available(self) -> bool:
        return not self.model.stopped

    @property
    def stopped(self) -> str:
        return self.model.stopped

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        return self.model.begin(prompt, sync=sync, window=window)

    def lag(self, committed: Sequence[int]) -> int:
        return self.model.lag(committed)

    def preview(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        return [], 0

    def _start_step(self, prop: Proposal, committed: Sequence[int], cells: int) -> bool:
        """Catch the draft up on ``committed``, leaving ``cells`` free for the proposal;
        False when it cannot draft now (it stops when its window is the reason)."""
        dm = self.model
        if cells <= 0 or not self.available:
            if dm.room(committed) + 1 <= 0:
                dm.stop(f"the draft's context window ({dm.kv.n_ctx} tokens) is full")
            return False
        prop.catchup, prop.draft_s = dm.catch_up(committed, room_after=cells)
        if dm.sat_out(prop.catchup):
            prop.catchup_s = prop.draft_s  # drafting has fed nothing yet: all of it is catch-up
        prop.n_decodes = 1
        return self.available

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        self.model.drop_rejected(committed)


class ChainDrafter(ModelDrafter):
    """The draft model proposes a chain, token by token."""

    source = TokenOrigin.CHAIN

    def propose(self, req: DraftRequest) -> Proposal:
        prop = Proposal(source=self.source)
        dm = self.model
        committed = req.committed
        k = min(req.k, dm.room(committed) + 1)  # the draft's own context window
        if not self._start_step(prop, committed, k):
            return prop
        return base.draft_chain_under_grammar(prop, req, k, self._draft_chain)

    def _draft_chain(self, prop: Proposal, req: DraftRequest, k: int,
                     g: grammar.GrammarState | None) -> None:
        """Draft up to ``k`` tokens into ``prop``; with a grammar the draft samples from
        its own grammar-masked distribution (q is what it really sampled from)."""
        dm = self.model
        committed = req.committed
        pos = len(committed)
        params = req.params
        # the penalties read the last repeat_last_n tokens: a copy of those, not of the
        # chat, per drafted step
        history = sampling.penalty_window(committed, params)
        want_q = req.want_q
        # Nobody reading the confidence: greedy takes the argmax alone (one pass over the
        # row instead of an exp over it), sampling skips the features' estimate of the
        # rest of the row; p_top and entropy are then NaN, never read.
        blind = not req.confidence
        for i in range(k):
            logits = dm.ctx.logits(-1)[: dm.n_shared]
            if blind:
                top = topk.argmax(logits) if params.greedy else -1
                p_top, entropy, more = math.nan, math.nan, True
            else:
                top, p_top, entropy = softmax_stats(logits, shared=not params.greedy)
                keep_it, more = req.keep(i, p_top, entropy)
                if not keep_it:
                    break
            q: sampling.F32 | None = None
            if params.greedy:
                tok, p_tok = top, p_top
                if g is not None:
                    tok = int(grammar.draft_candidates(g, logits, params)[0][0])
                    p_tok = p_top * float(np.exp(logits[tok] - logits[top]))
            elif params.rule is sampling.Rule.COUPLED:
                lg = sampling.apply_penalties(logits, history, params) if history else logits
                ids, cq = (sampling.draft_candidates(lg, params) if g is None
                           else grammar.draft_candidates(g, lg, params))
                tok = sampling.coupled_choice(ids, cq, req.seed, pos + i)
                p_tok = float(cq[int((ids == tok).nonzero()[0][0])])
            else:
                small = (sampling.draft_probs(logits, params) if g is None else
                         sampling.densify(*grammar.draft_candidates(g, logits, params), dm.n_shared))
                tok = sampling.sample(small, req.rng)
                p_tok = float(small[tok])
                if want_q:  # q over the target's vocabulary: ids the draft lacks get 0
                    q = np.zeros(dm.n_target_vocab, dtype=np.float32)
                    q[: dm.n_shared] = small
            prop.append(tok, q, p_tok, p_top, entropy)
            if history:
                history.append(tok)
            if g is not None and not g.try_advance(tok):
                break  # a token the grammar forbids (an unmasked draft): the target rejects it
            if not more or i + 1 >= k:
                break
            spent = dm.feed_one(tok, first=i == 0)
            if spent is None:
                break
            prop.draft_s += spent
            prop.n_decodes += 1
