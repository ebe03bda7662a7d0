"""MTP: the target drafts with its own multi-token-prediction (NextN) layers.

Models such as Qwen3.5 / Qwen3.6 and Qwen3-Next ship one extra block trained to
predict the token after next from (the next token, the target's hidden row of
the current one). llama.cpp runs it as a second context over the same weights
(:class:`~specula.core.engine.native.mtp.MTPContext`); this module is its drafter
behind the :class:`~specula.core.engine.drafters.base.Drafter` seam, following
``common_speculative_impl_draft_mtp`` (llama.cpp common/speculative.cpp):

- the MTP context holds, at position p, the token x_p paired with the target's
  hidden row h_{p-1} (the row of the token before it);
- the target's rows are taken right after each of its decodes (the context's
  ``observers`` hook, llama.cpp's ``process()``), and fed to the MTP context in
  the next drafting step together with the pending token, in one decode (a long
  run, a prompt, is fed as it comes so the rows kept stay few);
- to draft: decode (pending token, its position, the target's row of the token
  before it), take the head's choice, then (that token, the head's own row) and
  so on; after the target kept m drafted tokens, the row carried into the next
  step is the verify batch's row m, and the MTP context is cut back to what the
  target kept.

What the MTP context holds is only ever a proposal's input: a wrong row (a tree
step's rows, a conversation the head did not follow) costs acceptance, never
the reply, which the target verifies token by token with the same rules as any
draft. Drafted tokens are chosen exactly as a draft model's are (greedy, the
coupled rule, or sampled with q for rejection sampling: see ChainDrafter).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specula.core.engine.drafters import base  # patch points, looked up at call time
from specula.core.engine.drafters.model import ChainDrafter, DraftModel
from specula.core.engine.drafters.proposal import DraftRequest, Proposal
from specula.core.engine.drafters.target_rows import TargetWatch, linear_run
from specula.core.engine.events import TokenOrigin
from specula.core.engine.native import mtp as mtp_native
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import ContextFull, DecodeError, Model
from specula.core.engine.native.prefix import common_prefix

F32 = mtp_native.F32
# Target rows waiting to be fed are fed at once past this many (a prompt, a run of plain
# steps): what is kept stays small, and a short prompt is still fed after the first token.
FEED_AT = 256


class MTPHead(TargetWatch, DraftModel):
    """The MTP context's mirror and the target's recent rows.

    A :class:`DraftModel` to the chain drafter (logits through ``ctx``, one more
    token through :meth:`feed_one`), but fed with the target's hidden rows rather
    than from a token list alone, so it keeps its own mirror: ``tokens[:held]``
    were fed with the target's rows (positions 0..held-1); anything after them
    with the head's own (a proposal), cut before the next feed.
    """

    label = "MTP head"  # how messages name it (an EAGLE-3 head is this class fed otherwise)

    def __init__(self, model: Model, target: Context, n_layers: int) -> None:
        # DraftModel's own state is a KVCache fed from token lists; the head's is below.
        self.mtp = self._open(model, target)
        self.target = target
        self.n_layers = n_layers
        self.n_embd = self.mtp.n_embd
        self.n_vocab = self.n_shared = self.n_target_vocab = target.n_vocab
        self.stopped = ""
        self._owed = 0
        self.tokens: list[int] = []  # what the MTP context holds, positions 0..len-1
        self.held = 0  # of which fed with the target's rows
        # The target's rows of positions win_start.., with the tokens it decoded there
        # (row i: the target's hidden row of token win_toks[i]).
        self._win_start = 0
        self._win_toks: list[int] = []
        self._win_rows: list[F32] = []
        self._committed: Sequence[int] = ()  # the reply's tokens (begin hands them over)
        self._sure = 0  # entries known to hold the tokens of ``_sure_of``
        self._sure_of: Sequence[int] = ()
        self._row: F32 | None = None  # the head's own row after its last decode
        self.watching = False
        self.missing_rows = 0  # rows fed as zeros because the target's was gone
        self.rows_for = self._rows_for  # patch point: a test breaks the carried rows on purpose

    def _open(self, model: Model, target: Context) -> mtp_native.MTPContext:
        """The head's own context (a draft head's class opens its own kind)."""
        return mtp_native.MTPContext(model, target, n_batch=target.n_batch)

    def _rows_on(self, on: bool) -> None:
        """Whether the target keeps the rows this head reads (its nextn rows here)."""
        mtp_native.set_target_rows(self.target, on)

    def _target_rows(self, n: int) -> F32 | None:
        """The head's input rows for the last target decode's ``n`` tokens."""
        return mtp_native.target_rows(self.target, n, self.n_embd)

    # -- DraftModel's face ---------------------------------------------------------------
    @property
    def ctx(self) -> Context:
        return self.mtp.ctx

    @property
    def cache(self) -> list[int]:
        return self.tokens

    def reset(self) -> None:
        self.mtp.ctx.clear()
        self.tokens, self.held = [], 0
        self._win_toks, self._win_rows = [], []

    def close(self) -> None:
        self.watch(False)
        self.mtp.close()

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        """A reply starts (before the target's prefill: the head follows the reply's list;
        it reads the target's hidden states of every token, so no stretch is skipped)."""
        self.stopped = ""
        self._committed = prompt
        self.held = self._agreement(prompt)
        return self._safe_feed(prompt, len(prompt) - 1, logits=False)[0] if sync else 0

    def lag(self, committed: Sequence[int]) -> int:
        """Tokens to feed before drafting (they all go into the drafting decode)."""
        return max(len(committed) - self.held, 1)

    def drop_rejected(self, committed: Sequence[int]) -> None:
        """After a step: only entries fed with the target's rows for tokens it kept stay
        (the context itself is cut when the next feed starts)."""
        self.held = self._agreement(committed)
        self._row = None

    def _agreement(self, committed: Sequence[int]) -> int:
        """How many of the ``held`` entries hold ``committed``'s tokens. The reply's list
        only grows by appending: what agreed with it last time is not compared again."""
        start = min(self._sure, self.held) if committed is self._sure_of else 0
        n = min(common_prefix(self.tokens, committed, start), self.held)
        self._sure, self._sure_of = n, committed
        return n

    # -- the target's rows (llama.cpp's process()): ``watch`` is TargetWatch's -------------
    def _drop_window(self) -> None:
        self._win_toks, self._win_rows = [], []

    def _observe(self, batch: Batch) -> None:
        """A target decode just ran: keep its rows of what it put in sequence 0."""
        n = batch.n_tokens
        if n <= 0:
            return
        p0, toks, linear = linear_run(batch)
        self._forget_from(p0, toks)
        if not linear:  # a token tree: not one path (the positions it commits get zeros)
            return
        rows = self._target_rows(n)
        if rows is None:
            return
        if self._win_toks and self._win_start + len(self._win_toks) != p0:
            self._win_toks, self._win_rows = [], []  # a gap (a tree's path): start over
        if not self._win_toks:
            self._win_start = p0
        self._win_toks.extend(toks)
        self._win_rows.append(rows)
        if len(self._win_toks) > FEED_AT:
            self._safe_feed(self._committed, self._win_start + len(self._win_toks), logits=False)

    def _forget_from(self, p0: int, toks: list[int]) -> None:
        """The target rewrote its cache from ``p0``: the window keeps what is before it,
        and the head what it holds with these very tokens (fed with the same rows)."""
        if self.held > p0:
            same = self.tokens[p0:min(self.held, p0 + len(toks))]
            if toks[: len(same)] != same or not toks:
                self.held = p0
        keep = p0 - self._win_start
        if keep < len(self._win_toks):
            if keep <= 0:
                self._win_toks, self._win_rows = [], []
            else:
                self._win_toks = self._win_toks[:keep]
                self._win_rows = [np.concatenate(self._win_rows)[:keep]]

    def _rows_for(self, start: int, end: int, window: F32 | None, valid: int) -> F32:
        """The input rows of positions ``start..end-1``: position p pairs with the target's
        row of p - 1, from the window where it holds that position for the reply's own
        tokens (its first ``valid`` rows); zeros at position 0 (llama.cpp's start) and
        where the row is gone (counted in ``missing_rows``)."""
        rows = np.zeros((end - start, self.n_embd), dtype=np.float32)
        lo = max(start, 1)
        ws = self._win_start
        a, b = max(lo, ws + 1), min(end, ws + valid + 1)  # positions whose row p-1 is there
        if window is not None and b > a:
            rows[a - start:b - start] = window[a - 1 - ws:b - 1 - ws]
        self.missing_rows += max(end - lo, 0) - max(b - a, 0)
        return rows

    # -- feeding -------------------------------------------------------------------------
    def _cut(self) -> None:
        if len(self.tokens) > self.held:
            if not self.mtp.ctx.seq_rm(0, self.held, -1):
                self.mtp.ctx.clear()  # not expected: the head's memory is attention only
                self.held = 0
            del self.tokens[self.held:]

    def _safe_feed(self, committed: Sequence[int], end: int, *, logits: bool) -> tuple[int, float]:
        try:
            return self._feed(committed, end, logits=logits)
        except (ContextFull, DecodeError) as exc:
            self.stop(f"the {self.label} could not follow ({exc})")
            return 0, 0.0

    def _feed(self, committed: Sequence[int], end: int, *, logits: bool) -> tuple[int, float]:
        """Feed ``committed[held:end]``, each token with the target's row of the one before
        (zeros where it is gone); with ``logits`` the last one's logits and row are kept
        (it is fed again if the head held it already). (Tokens fed, seconds.)"""
        end = min(end, len(committed))
        self.held = self._agreement(committed)
        if logits:
            self.held = min(self.held, end - 1)
        self._cut()
        start = self.held
        if start >= end:
            return 0, 0.0
        rows_all = np.concatenate(self._win_rows) if self._win_rows else None
        ws = self._win_start
        valid = common_prefix(self._win_toks, committed[ws:ws + len(self._win_toks)]) \
            if ws < len(committed) else 0
        rows = self.rows_for(start, end, rows_all, valid)
        toks = list(committed[start:end])
        spent = 0.0
        step = self.mtp.ctx.n_batch
        for i in range(0, len(toks), step):
            chunk = toks[i:i + step]
            last = i + step >= len(toks)
            spent += self.mtp.decode(chunk, start + i, rows[i:i + step], logits=logits and last)
            self.tokens.extend(chunk)
            self.held = len(self.tokens)
        # the window keeps only the row the next token pairs with
        drop = (end - 1) - ws
        if rows_all is not None and drop > 0:
            self._win_start += drop
            self._win_toks = self._win_toks[drop:]
            self._win_rows = [rows_all[drop:]] if drop < len(rows_all) else []
        self._row = self.mtp.row() if logits else None
        return len(toks), spent

    def catch_up(self, committed: Sequence[int], *, keep_last: bool = True,
                 room_after: int = 1) -> tuple[int, float]:
        """Feed the head up to the pending token (its logits and row kept)."""
        if len(committed) + room_after - 1 > self.mtp.n_ctx:
            self.stop(f"the {self.label}'s context window ({self.mtp.n_ctx} tokens) is full")
            return 0, 0.0
        return self._safe_feed(committed, len(committed), logits=True)

    def feed_one(self, token: int, *, first: bool = False) -> float | None:
        """Feed a drafted token with the head's own row of the token before it (``first``
        needs nothing here: the head's memory is attention only, cut by seq_rm)."""
        if self._row is None:
            return None
        try:
            spent = self.mtp.decode([token], len(self.tokens), self._row[None, :], logits=True)
        except (ContextFull, DecodeError) as exc:
            self.stop(f"the {self.label}'s context window is full ({exc})")
            return None
        self.tokens.append(token)
        self._row = self.mtp.row()
        return spent


    def drafter(self) -> MTPDrafter:
        """The drafter the generator asks for this head's proposals."""
        return MTPDrafter(self)


class MTPDrafter(ChainDrafter):
    """A chain from the target's MTP head; verified like any draft."""

    source = TokenOrigin.MTP

    def __init__(self, head: MTPHead) -> None:
        super().__init__(head)
        self.head = head

    def propose(self, req: DraftRequest) -> Proposal:
        prop = Proposal(source=self.source)
        head = self.head
        committed = req.committed
        k = min(req.k, head.mtp.n_ctx - len(committed) + 1)
        if k <= 0 or not self.available:
            return prop
        fed, prop.draft_s = head.catch_up(committed, room_after=k)
        prop.catchup = max(fed - 1, 0)  # beyond the pending token
        prop.n_decodes = 1
        if not self.available or fed == 0:
            return prop
        return base.draft_chain_under_grammar(prop, req, k, self._draft_chain)

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        self.head.drop_rejected(committed)


def open_head(model: Model, target: Context) -> MTPHead | None:
    """The target's MTP head, or None when it has none (or this build cannot run one).
    Never opens an MTP context over weights loaded without their MTP layers."""
    if not model.mtp_loaded or mtp_native.available():
        return None
    n = mtp_native.nextn_layers(model)
    if n <= 0:
        return None
    return MTPHead(model, target, n)


__all__ = ["FEED_AT", "MTPDrafter", "MTPHead", "open_head"]
