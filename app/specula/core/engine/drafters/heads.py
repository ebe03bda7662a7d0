"""Draft heads: EAGLE-3, DFlash and DSpark, small GGUFs that draft from the target's
hidden states, behind the same drafter seam as the target's own MTP layers.

Both follow llama.cpp's drafters (``common_speculative_impl_draft_eagle3`` /
``..._draft_dflash`` in common/speculative.cpp); what the head sees is only ever a
proposal's input, verified by the target token by token with Specula's own rules, so a
head that drafts badly costs acceptance, never the reply. What the tests guard is that
the head sees what llama.cpp would give it (the right layers' rows, none left stale
after a partial acceptance, its own cache cut back as the target's is).

EAGLE-3 (:class:`Eagle3Head`) is an MTP head in everything but its input: after every
target decode the inputs of its three target layers are read
(``llama_get_embeddings_layer_inp``), put side by side and passed through the head's
encoder (its ``fc``), giving one row g_p per position; the head's cache holds, for
token x_q, the pair (x_q, g_{q-1}), so the MTP head's mirror, window and cut
(drafters/mtp.py) serve it unchanged. Specula keeps that pair at position q, llama.cpp at
q - 1: positions only enter through RoPE, which is relative, so attention is the same;
the first token (no row before it) is not fed, as in llama.cpp.

DFlash / DSpark (:class:`DFlashHead`) is a block drafter: the target's features of every
committed position are written into the head's cache at that position (a fused encode
and key/value write), then one decode of [pending token, mask, mask, ...] gives the
whole draft at once (non-causal attention inside the block). The block's cells are cut
before the next write, so the cache holds exactly the committed positions the target
computed with the committed tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specula.core.engine.drafters import base  # patch points, looked up at call time
from specula.core.engine.drafters.model import ChainDrafter
from specula.core.engine.drafters.mtp import FEED_AT, MTPDrafter, MTPHead
from specula.core.engine.drafters.proposal import DraftRequest, Proposal
from specula.core.engine.drafters.target_rows import TargetWatch, linear_run
from specula.core.engine.events import TokenOrigin
from specula.core.engine.native import heads as native
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import ContextFull, DecodeError, LoadError, Model
from specula.core.engine.native.prefix import common_prefix
from specula.core.gguf.draft_head import HeadInfo

F32 = native.F32
HEAD_OUTPUTS = 64  # the head context's n_outputs_max: an encoder chunk, a DFlash block


class _Eagle3Native:
    """The EAGLE-3 head's context in the shape MTPHead drives (``MTPContext``'s)."""

    def __init__(self, hctx: native.HeadContext) -> None:
        self.h = hctx
        self.n_embd = hctx.n_embd
        self._fresh = False  # the last decode left logits and a row to read

    @property
    def ctx(self) -> Context:
        return self.h.ctx

    @property
    def n_ctx(self) -> int:
        return self.h.n_ctx

    def decode(self, tokens: list[int], pos0: int, rows: F32, *, logits: bool = True) -> float:
        """Token x_q with row g_{q-1} at position q; x_0 has no row before it and is not fed."""
        if pos0 == 0:
            tokens, rows, pos0 = tokens[1:], rows[1:], 1
        if not tokens:
            self._fresh = False
            return 0.0
        spent = 0.0
        if logits and len(tokens) > 1:
            # llama.cpp's EAGLE-3 graph does not pick the output rows out of a batch: with
            # one output asked of several entries it returns the *first* entry's logits and
            # row. Its drafter only ever asks a one-entry batch for them; so does this one.
            spent += self.h.decode(tokens[:-1], pos0, rows[:-1], outputs=0)
            tokens, rows, pos0 = tokens[-1:], rows[-1:], pos0 + len(tokens) - 1
        spent += self.h.decode(tokens, pos0, rows, outputs=1 if logits else 0)
        self._fresh = logits
        return spent

    def row(self) -> F32:
        if not self._fresh:
            raise DecodeError("the EAGLE-3 head has nothing to draft from yet (a one-token prompt)")
        return self.h.row(-1)

    def close(self) -> None:
        self.h.close()


class _Described:
    """What a head's header says it is: its kind and how far it drafts."""

    info: HeadInfo

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def max_draft(self) -> int:
        return self.info.max_draft


class Eagle3Head(_Described, MTPHead):
    """An EAGLE-3 head beside the target: an MTP head fed with its encoder's rows."""

    label = "EAGLE-3 head"

    def __init__(self, model: Model, target: Context, info: HeadInfo) -> None:
        self.info = info
        self.layer_ids = list(info.layer_ids)
        self.n_embd_target = native.n_embd(target.model)
        self.weights = model
        super().__init__(model, target, 1)
        # what the target's rows are read as (a test feeds the wrong layer on purpose)
        self.read_ids = self.layer_ids

    def _open(self, model: Model, target: Context) -> _Eagle3Native:  # type: ignore[override]
        self.hctx = native.HeadContext(model, target, n_batch=target.n_batch, n_outputs_max=HEAD_OUTPUTS)
        return _Eagle3Native(self.hctx)

    def _rows_on(self, on: bool) -> None:
        native.set_layer_rows(self.target, self.layer_ids, on)

    def _target_rows(self, n: int) -> F32 | None:
        feats = native.layer_rows(self.target, self.read_ids, n, self.n_embd_target)
        if feats is None:
            return None
        try:
            return self.hctx.encode(feats)
        except (ContextFull, DecodeError) as exc:
            self.stop(f"the EAGLE-3 head's encoder failed ({exc})")
            return None

    def drafter(self) -> MTPDrafter:
        return MTPDrafter(self)

    def close(self) -> None:
        super().close()
        self.weights.close()


class _BlockRows:
    """What the chain drafter reads as the draft's context: the block's rows in turn."""

    def __init__(self, head: DFlashHead) -> None:
        self.head = head
        self.at = 0  # the block entry whose logits are the next drafted token's

    @property
    def decode_s(self) -> float:
        return self.head.hctx.ctx.decode_s

    def logits(self, i: int) -> F32:
        return self.head.hctx.ctx.logits(self.at)


class DFlashHead(_Described, TargetWatch):
    """A DFlash (or DSpark) head beside the target: its cache holds the target's features
    of the committed positions ``0..held-1`` (``tokens``: the tokens they belong to)."""

    def __init__(self, model: Model, target: Context, info: HeadInfo, *, causal: bool = False) -> None:
        self.info = info
        self.weights = model
        self.target = target
        self.layer_ids = list(info.layer_ids)
        self.read_ids = self.layer_ids  # what the target's rows are read as (tests break it)
        self.n_embd_target = native.n_embd(target.model)
        self.width = len(self.layer_ids) * self.n_embd_target
        self.hctx = native.HeadContext(model, target, n_batch=target.n_batch,
                                       n_outputs_max=max(HEAD_OUTPUTS, info.block_size + 1),
                                       causal=causal)
        self.n_layers = 1
        self.n_vocab = self.n_shared = self.n_target_vocab = target.n_vocab
        self.stopped = ""
        self.tokens: list[int] = []  # the tokens of positions 0..held-1 in the head's cache
        self.held = 0
        self._cached = 0  # cells the cache holds (held, plus a block after a draft)
        self._win_start = 0  # the target's features of positions win_start.. not yet written
        self._win_toks: list[int] = []
        self._win_feats: list[F32] = []
        self._committed: Sequence[int] = ()
        self.watching = False
        self.missing_rows = 0  # positions written with zero features (the target's were gone)
        self.rows = _BlockRows(self)
        self.feats_for = self._feats_for  # patch point: a test breaks the features on purpose

    @property
    def ctx(self) -> _BlockRows:  # type: ignore[override]
        return self.rows

    @property
    def n_ctx(self) -> int:
        return self.hctx.n_ctx

    def drafter(self) -> DFlashDrafter:
        return DFlashDrafter(self)

    def stop(self, why: str) -> None:
        if not self.stopped:
            self.stopped = why

    def reset(self) -> None:
        self.hctx.ctx.clear()
        self.tokens, self.held, self._cached = [], 0, 0
        self._win_toks, self._win_feats = [], []

    def close(self) -> None:
        self.watch(False)
        self.hctx.close()
        self.weights.close()

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        """A reply starts: the cache keeps what it holds of ``prompt``'s tokens."""
        self.stopped = ""
        self._committed = prompt
        self.held = min(self.held, common_prefix(self.tokens, prompt))
        return 0

    def lag(self, committed: Sequence[int]) -> int:
        return max(len(committed) - 1 - self.held, 1)

    # -- the target's features: ``watch`` is TargetWatch's ---------------------------------
    def _rows_on(self, on: bool) -> None:
        native.set_layer_rows(self.target, self.layer_ids, on)

    def _drop_window(self) -> None:
        self._win_toks, self._win_feats = [], []

    def _observe(self, batch: Batch) -> None:
        """A target decode just ran: keep its features of what it put in sequence 0, and
        write into the cache at once those of committed tokens (a prompt, the pending token
        of a verify); the drafted tokens' wait until the step says which were kept."""
        n = batch.n_tokens
        if n <= 0:
            return
        p0, toks, linear = linear_run(batch)
        if self.held > p0:
            same = self.tokens[p0:min(self.held, p0 + len(toks))]
            if not toks or toks[:len(same)] != same:
                self.held = p0  # the target rewrote what the head holds from here
                del self.tokens[p0:]
        keep = p0 - self._win_start
        if keep < len(self._win_toks):
            self._win_toks = self._win_toks[:max(keep, 0)]
            self._win_feats = [np.concatenate(self._win_feats)[:max(keep, 0)]] if keep > 0 else []
        if not linear:
            return
        feats = native.layer_rows(self.target, self.read_ids, n, self.n_embd_target)
        if feats is None:
            return
        if self._win_toks and self._win_start + len(self._win_toks) != p0:
            self._win_toks, self._win_feats = [], []
        if not self._win_toks:
            self._win_start = p0
        self._win_toks.extend(toks)
        self._win_feats.append(feats)
        self._safe_write(self._committed, len(self._committed) - 1 if self._committed else 0)

    def _feats_for(self, start: int, end: int) -> F32:
        """The features of positions ``start..end-1`` for the reply's tokens: from the
        window where it holds them for these very tokens, zeros where they are gone
        (counted in ``missing_rows``: acceptance suffers, never the reply)."""
        out = np.zeros((end - start, self.width), dtype=np.float32)
        ws = self._win_start
        if self._win_feats:
            feats = np.concatenate(self._win_feats)
            have = common_prefix(self._win_toks, self._committed[ws:ws + len(self._win_toks)])
            a, b = max(start, ws), min(end, ws + have)
            if b > a:
                out[a - start:b - start] = feats[a - ws:b - ws]
            self.missing_rows += (end - start) - max(b - a, 0)
        else:
            self.missing_rows += end - start
        return out

    def _cut(self) -> None:
        """The cache back to ``held`` cells (a block drafted after them, a rewritten tail)."""
        if self._cached > self.held:
            if not self.hctx.ctx.seq_rm(0, self.held, -1):
                self.hctx.ctx.clear()  # not expected: the head's memory is attention only
                self.held = 0
                del self.tokens[:]
            self._cached = self.held

    def _safe_write(self, committed: Sequence[int], end: int) -> float:
        try:
            return self._write(committed, end)
        except (ContextFull, DecodeError) as exc:
            self.stop(f"the {self.kind} head could not follow ({exc})")
            return 0.0

    def _write(self, committed: Sequence[int], end: int) -> float:
        """Write the features of ``committed[held:end]`` into the cache at their positions
        (and cut what it holds past ``end``: the block goes there)."""
        self.held = min(self.held, common_prefix(self.tokens, committed), end)
        del self.tokens[self.held:]
        self._cut()
        start = self.held
        if start >= end:
            return 0.0
        spent = self.hctx.inject(self.feats_for(start, end), start)
        self.tokens.extend(committed[start:end])
        self.held = self._cached = end
        drop = end - self._win_start  # the window keeps what is not written yet
        if drop > 0 and self._win_feats:
            feats = np.concatenate(self._win_feats)
            self._win_start += drop
            self._win_toks = self._win_toks[drop:]
            self._win_feats = [feats[drop:]] if drop < len(feats) else []
        if len(self._win_toks) > FEED_AT:  # never expected: a window of what was not kept
            self._win_toks, self._win_feats = [], []
        return spent

    # -- drafting -------------------------------------------------------------------------
    def draft_block(self, committed: Sequence[int], k: int) -> tuple[float, int]:
        """Bring the cache to ``committed`` but its pending token, then decode the block
        [pending, mask, ...] for a draft of ``k`` tokens; (seconds, block entries)."""
        self._committed = committed
        n = len(committed) - 1
        spent = self._safe_write(committed, n)
        if self.stopped:
            return spent, 0
        anchor = self.info.from_anchor
        size = k if anchor else k + 1
        mask = int(self.info.mask_token or 0)
        block = [int(committed[-1])] + [mask] * (size - 1)
        try:
            spent += self.hctx.decode(block, n, None, outputs=size)
        except (ContextFull, DecodeError) as exc:
            self.stop(f"the {self.kind} head could not draft ({exc})")
            return spent, 0
        self._cached = n + size
        self.rows.at = 0 if anchor else 1
        return spent, size

    def feed_one(self, token: int, *, first: bool = False) -> float | None:
        """The next drafted position's logits are already there (one decode drafted the block)."""
        self.rows.at += 1
        return 0.0

    def drop_rejected(self, committed: Sequence[int]) -> None:
        """After a step: the block's cells are cut before the next write; the cache keeps
        the committed positions it holds (nothing the target rejected was ever written)."""
        self._committed = committed


class DFlashDrafter(ChainDrafter):
    """A chain read from one DFlash / DSpark block; verified like any draft."""

    source = TokenOrigin.MTP

    def __init__(self, head: DFlashHead) -> None:
        super().__init__(head)  # type: ignore[arg-type]
        self.head = head

    @property
    def available(self) -> bool:
        return not self.head.stopped

    @property
    def stopped(self) -> str:
        return self.head.stopped

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        return self.head.begin(prompt, sync=sync, window=window)

    def lag(self, committed: Sequence[int]) -> int:
        return self.head.lag(committed)

    def propose(self, req: DraftRequest) -> Proposal:
        prop = Proposal(source=self.source)
        head = self.head
        committed = req.committed
        room = head.n_ctx - len(committed)  # the block's cells after the pending token
        k = min(req.k, head.max_draft, room)
        if k <= 0 or not self.available:
            return prop
        before = head.held
        prop.draft_s, size = head.draft_block(committed, k)
        prop.catchup = max(len(committed) - 1 - before, 0)
        prop.n_decodes = 1
        if not self.available or size == 0:
            return prop
        base.draft_chain_under_grammar(prop, req, k, self._draft_chain)
        prop.n_decodes = 1  # the block drafted every token
        return prop

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        self.head.drop_rejected(committed)


def open_head(path: str, target_model: Model, target: Context, info: HeadInfo,
              *, gpu_layers: int = 0) -> Eagle3Head | DFlashHead:
    """Load a head's weights and open its context beside ``target`` (the caller checked it
    fits: ``draft_head.head_misfits``). LoadError when this llama.cpp cannot run heads."""
    why = native.missing()
    if why:
        raise LoadError(why)
    model = Model(path, n_gpu_layers=gpu_layers)
    try:
        if info.kind == "eagle3":
            return Eagle3Head(model, target, info)
        causal = (model.meta("dflash.attention.causal") or "false") == "true"
        return DFlashHead(model, target, info, causal=causal)
    except Exception:
        model.close()
        raise


__all__ = ["DFlashDrafter", "DFlashHead", "Eagle3Head", "open_head"]
