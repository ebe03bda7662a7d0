"""The KV mirror: which tokens one context's cache holds, and the only code that changes it.

Invariant: sequence 0 of ``ctx`` holds exactly ``self.tokens`` at positions
0..len-1 (checked against llama.cpp's own ``seq_pos_max`` after every cut), and
every other sequence is empty between operations. Every change (prefix reuse,
feeding tokens within the context's own n_ctx and n_batch, cutting back after
rejected proposals, branch sequences for token trees, committing a tree's winning
branch) goes through this class, and each one restores the invariant on every exit
path: errors, a full context, cancel.

How a suffix is cut depends on the memory (``Context.memory``):

* attention: ``seq_rm(0, n, -1)`` removes it exactly; its answer is checked.
* recurrent and hybrid: the recurrent state cannot drop tokens, and llama.cpp's
  ``seq_rm`` refuses a partial removal. The mirror keeps *checkpoints* of sequence
  0's recurrent state (``PARTIAL_ONLY``: a hybrid's attention cells are cut with
  ``seq_rm``): one at the end of a prompt (the anchor, for the next reply's prefix
  reuse) and one before each batch that may be partly rejected (the step). A cut
  restores the newest checkpoint at or below the cut, removes the attention cells
  from there, and decodes the kept tokens after it again (replay). With no usable
  checkpoint it starts from an empty state and replays from position 0.

llama.cpp's other rollback, ``n_rs_seq`` snapshots, is not used: ``seq_rm`` then
answers true for a rollback of up to n_rs_seq tokens, but the state is right only
when the rollback is shorter than the last decode and only once before the next
one (measured: after single-token decodes, as a draft's, it is always wrong), it
exists for a few architectures only (``llm_arch_supports_rs_rollback``), and it
multiplies the recurrent state by 1 + n_rs_seq. A checkpoint is exact on every
memory and its cost is measured (:class:`KVCosts`).

A cut that cannot be made exact raises :class:`CutFailed` after emptying the cache
(mirror and memory agree again, on nothing): the reply stops with that message.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

from specula.core.cancel import Cancelled
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.checkpoints import Checkpoint, KVCosts
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import ContextFull
from specula.core.engine.native.prefix import common_prefix, span


class CutFailed(RuntimeError):
    """The KV cache could not be cut back exactly: continuing would decode on a state
    the mirror does not describe, so the reply stops with this message."""


ANCHOR, STEP = "anchor", "step"


class KVCache:
    """Sequence 0 of one context, mirrored as a token list."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tokens: list[int] = []
        self._batch = Batch(max(ctx.n_batch, 1), 1)
        # The sequence :meth:`agreement` last compared with, and how many of its leading
        # tokens ``tokens`` is known to hold (kept <= len(tokens) by every cut).
        self._ref: Sequence[int] | None = None
        self._agreed = 0
        self.exact_cut = ctx.memory.cuts_exactly
        self._ckpts = {ANCHOR: Checkpoint(), STEP: Checkpoint()}
        self.costs = KVCosts()

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def n_ctx(self) -> int:
        return self.ctx.n_ctx

    @property
    def room(self) -> int:
        """Cells still free for sequence 0."""
        return self.ctx.n_ctx - len(self.tokens)

    def clear(self) -> None:
        self.ctx.clear()
        self.tokens = []
        self._ref, self._agreed = None, 0
        for ck in self._ckpts.values():
            ck.n = -1

    def cut(self, n: int) -> None:
        """Keep exactly the first ``n`` tokens (on recurrent memory: restore and replay)."""
        if n < len(self.tokens):
            self._drop_from(n)

    def _drop_from(self, n: int) -> None:
        """The one cut: afterwards the cache holds exactly ``tokens[:n]``, or CutFailed."""
        if self.exact_cut:
            if not self.ctx.seq_rm(0, n, -1):
                self._fail(f"llama.cpp refused to remove positions {n}.. of an attention cache")
            del self.tokens[n:]
            self._agreed = min(self._agreed, n)
            self._check("a cut")
            return
        keep = self.tokens[:n]
        self._rewind(n)
        self._replay(keep)

    def rewind(self, n: int) -> int:
        """Keep at most the first ``n`` tokens, as many as can be kept without decoding
        again: ``n`` on attention memory; on recurrent memory the newest checkpoint at or
        below ``n`` (or nothing). The caller feeds the rest with what it feeds anyway
        (a prefill, a draft's catch-up): one decode instead of a replay and a feed."""
        if n < len(self.tokens):
            if self.exact_cut:
                self._drop_from(n)
            else:
                self._rewind(n)
                self.costs.replayed += n - len(self.tokens)  # the caller feeds them again
        return len(self.tokens)

    def _rewind(self, n: int) -> None:
        ck = max((c for c in self._ckpts.values() if 0 < c.n <= n), key=lambda c: c.n, default=None)
        if ck is None:
            self.ctx.clear()
            self.tokens = []
            self.costs.from_scratch += int(n > 0)
        else:
            t0 = time.perf_counter()
            assert ck.buf is not None
            if not self.ctx.state_load(0, ck.buf, ck.size):
                self._fail(f"llama.cpp refused the checkpoint at {ck.n} tokens")
            if not self.ctx.seq_rm(0, ck.n, -1):
                self._fail(f"llama.cpp refused to remove positions {ck.n}.. after a restore")
            del self.tokens[ck.n:]
            self.costs.restores += 1
            self.costs.restore_s += time.perf_counter() - t0
        for c in self._ckpts.values():  # a checkpoint past the cut no longer describes it
            if c.n > len(self.tokens):
                c.n = -1
        self._agreed = min(self._agreed, len(self.tokens))
        self._check("a restore")

    def _replay(self, tokens: Sequence[int]) -> None:
        """Decode ``tokens[len(self.tokens):]`` again (no logits); CutFailed when that fails."""
        todo = list(tokens[len(self.tokens):])
        if not todo:
            return
        try:
            spent = self._decode_chunks(todo, "none", None)
        except Exception as exc:
            self._fail(f"decoding {len(todo)} kept tokens again failed ({exc})")
        self.costs.replayed += len(todo)
        self.costs.replay_s += spent
        self._check("a replay")

    def _check(self, what: str) -> None:
        """The invariant, asked of llama.cpp itself: sequence 0 ends where the mirror does."""
        have = self.ctx.pos_max(0) + 1
        if have != len(self.tokens):
            self._fail(f"after {what} the cache holds {have} positions, the mirror {len(self.tokens)}")

    def _fail(self, why: str) -> NoReturn:
        """Empty the cache (memory and mirror agree on nothing) and stop the reply."""
        try:
            self.clear()
        finally:
            raise CutFailed(f"The model's memory could not be cut back exactly: {why}.")

    def checkpoint(self, slot: str = STEP) -> None:
        """Save sequence 0's recurrent state as it is now, before a batch that may be
        partly rejected (``STEP``) or at the end of a prompt (``ANCHOR``). Nothing on
        attention memory, or on an empty cache (an empty state is :meth:`clear`)."""
        n = len(self.tokens)
        ck = self._ckpts[slot]
        if self.exact_cut or n == 0 or ck.n == n:
            return
        t0 = time.perf_counter()
        size = self.ctx.state_save(0, ck.buf) if ck.buf is not None else 0
        if size == 0:  # first save, or the state grew: size the buffer and save again
            ck.buf = (ctypes.c_uint8 * max(self.ctx.state_size(0), 1))()
            size = self.ctx.state_save(0, ck.buf)
        if size == 0:
            ck.n = -1  # no checkpoint: a cut replays from an older one, or from scratch
            return
        ck.n, ck.size = n, size
        self.costs.checkpoints += 1
        self.costs.checkpoint_bytes += size
        self.costs.checkpoint_s += time.perf_counter() - t0

    def agreement(self, tokens: Sequence[int]) -> int:
        """Length of the longest common prefix of the cache and ``tokens``.

        A draft asks this every step with the reply's committed tokens, one list that
        only grows by appending: when ``tokens`` is the sequence last compared with (the
        same object, no shorter than what agreed, the last agreed token unchanged), the
        prefix known to agree is not compared again, so a step's work is what changed
        since, not the length of the chat. A sequence changed other than by appending
        must come as a new object (a wrong answer would cost acceptance, not exactness:
        the target verifies every drafted token)."""
        k = self._agreed
        start = 0
        if tokens is self._ref and k <= len(tokens) and (k == 0 or tokens[k - 1] == self.tokens[k - 1]):
            start = k
        n = common_prefix(self.tokens, tokens, start)
        self._ref, self._agreed = tokens, n
        return n

    def reuse(self, tokens: Sequence[int], limit: int | None = None) -> int:
        """Keep the longest reusable prefix of the cache that ``tokens`` starts with (at
        most ``limit``; on recurrent memory: up to the newest checkpoint in it); returns
        its length. The caller feeds the rest."""
        n = self.agreement(tokens)
        if limit is not None:
            n = min(n, limit)
        return self.rewind(n)

    def fits(self, n_tokens: int) -> bool:
        return len(self.tokens) + n_tokens <= self.ctx.n_ctx

    def feed(
        self, tokens: Sequence[int], outputs: str = "none", cancel: threading.Event | None = None,
    ) -> float:
        """Evaluate ``tokens`` after what the cache holds; returns seconds in llama_decode.

        Chunks of at most the context's n_batch; ``outputs`` ('none', 'last', 'all')
        applies to the last chunk ('all' needs the tokens to fit one batch). Raises
        ContextFull before decoding when the tokens do not fit; on any failure the
        cache is cut back to what it held before (recurrent memory: see :meth:`_back_to`).
        """
        if not tokens:
            return 0.0
        if not self.fits(len(tokens)):
            raise ContextFull(
                f"{len(tokens)} more tokens do not fit {len(self.tokens)} of {self.ctx.n_ctx}"
            )
        if outputs == "all" and len(tokens) > self.ctx.n_batch:
            raise ValueError(f"{len(tokens)} tokens with all outputs exceed n_batch {self.ctx.n_batch}")
        start = len(self.tokens)
        try:
            spent = self._decode_chunks(tokens, outputs, cancel)
        except BaseException:
            self._back_to(start)
            raise
        self._still_agrees(start, tokens)
        return spent

    def feed_tail(self, tokens: Sequence[int], n_out: int) -> float:
        """Decode ``tokens`` in one batch with logits for the last ``n_out`` only (output i
        at batch index len - n_out + i); seconds. On recurrent memory a verify carries the kept
        tokens a restore dropped (see :meth:`rewind`) ahead of the pending token: one
        decode instead of a replay and a verify."""
        if n_out >= len(tokens):
            return self.feed(tokens, "all")
        if not self.fits(len(tokens)):
            raise ContextFull(
                f"{len(tokens)} more tokens do not fit {len(self.tokens)} of {self.ctx.n_ctx}"
            )
        if len(tokens) > self.ctx.n_batch:
            raise ValueError(f"{len(tokens)} tokens in one batch exceed n_batch {self.ctx.n_batch}")
        start = len(self.tokens)
        n = len(tokens)
        self._batch.fill(tokens, start, outputs="none")
        self._batch.logits[n - n_out : n] = 1
        self._batch.n_outputs = n_out
        try:
            spent = self.ctx.decode(self._batch)
        except BaseException:
            self._back_to(start)
            raise
        self.tokens.extend(tokens)
        self._still_agrees(start, tokens)
        return spent

    def _still_agrees(self, start: int, tokens: Sequence[int]) -> None:
        if self._ref is not None and self._agreed == start \
                and span(self._ref, start, start + len(tokens)) == span(tokens, 0, len(tokens)):
            self._agreed += len(tokens)  # fed from the sequence it agreed with: still agrees

    def _decode_chunks(self, tokens: Sequence[int], outputs: str, cancel: threading.Event | None) -> float:
        """Decode ``tokens`` at the mirror's end in chunks of n_batch, extending the mirror
        chunk by chunk; seconds in llama_decode."""
        step = self.ctx.n_batch
        start = len(self.tokens)
        spent = 0.0
        for i in range(0, len(tokens), step):
            if cancel is not None and cancel.is_set():
                raise Cancelled
            chunk = tokens[i : i + step]
            last = i + step >= len(tokens)
            self._batch.fill(chunk, start + i, outputs=outputs if last else "none")
            spent += self.ctx.decode(self._batch)
            self.tokens.extend(chunk)
        return spent

    def _back_to(self, n: int) -> None:
        """After a failed decode: the cache holds its first ``n`` tokens again on attention
        memory; on recurrent memory at most those (what the state can keep without decoding
        again: the tokens fed before a cancel, or a checkpoint's), and the caller's next
        feed catches up. A state a decode failed in is never trusted: it comes back from
        a checkpoint (or empty). CutFailed, the cache emptied, if that cannot be done."""
        if self.exact_cut:
            self._drop_from(n)
        elif self.ctx.pos_max(0) + 1 != len(self.tokens):
            self._rewind(min(n, len(self.tokens)))
        elif len(self.tokens) > n:
            self._rewind(n)

    # -- branch sequences (token trees) -----------------------------------------------

    @contextmanager
    def branches(self, n: int, *, share_prefix: bool = True) -> Iterator[list[int]]:
        """Sequences 1..n for tree branches, each holding sequence 0's tokens when
        ``share_prefix`` (a metadata copy in a unified cache); all of them are
        emptied on exit, whatever happens inside, and sequence 0 is cut back to
        its mirror if a decode inside failed half-way."""
        if n > self.ctx.n_seq_max - 1:
            raise ValueError(f"{n} branches exceed the context's {self.ctx.n_seq_max - 1}")
        seqs = list(range(1, n + 1))
        for s in seqs:
            self._empty(s)
            if share_prefix:
                self.ctx.seq_cp(0, s, -1, -1)
        n0 = len(self.tokens)
        try:
            yield seqs
        finally:
            for s in range(1, self.ctx.n_seq_max):
                self._empty(s)
            if len(self.tokens) == n0 and self.ctx.pos_max(0) >= n0:
                self._back_to_cells(n0)  # a tree decode left cells in sequence 0

    def _back_to_cells(self, n: int) -> None:
        """Sequence 0 holds cells past the mirror's ``n`` tokens (a decode that failed
        after writing): remove them (attention) or restore and replay (recurrent)."""
        if self.exact_cut:
            if not self.ctx.seq_rm(0, n, -1):
                self._fail(f"llama.cpp refused to remove positions {n}.. of an attention cache")
            self._check("a cut")
            return
        keep = list(self.tokens)
        self._rewind(n)
        self._replay(keep)

    def _empty(self, seq: int) -> None:
        if not self.ctx.seq_rm(seq, -1, -1):
            self._fail(f"llama.cpp refused to empty sequence {seq}")

    def decode(self, batch: Batch, appended: Sequence[int] = ()) -> float:
        """Decode a batch the caller filled (a tree), whose sequence-0 entries are ``appended``
        at the next positions; returns seconds. On failure sequence 0 is cut back."""
        start = len(self.tokens)
        try:
            spent = self.ctx.decode(batch)
        except BaseException:
            self._back_to_cells(start)
            raise
        self.tokens.extend(appended)
        return spent

    def commit_branch(self, seq: int, tokens: Sequence[int], *, in_order: bool = True) -> None:
        """The first ``len(tokens)`` cells of branch ``seq`` after sequence 0's end join
        sequence 0 (the accepted path of a tree); the branch itself is dropped on exit
        of :meth:`branches`.

        ``in_order``: the path's cells directly follow the pending token's, in position
        order (the tree batch put them first). Otherwise, on attention memory, the path
        is decoded again as a chain after the pending token (every branch emptied first,
        so the cells are the next free ones in order): attention sums over cells in cell
        order, and a cache whose cells are out of position order gives other rounding
        than plain decoding's, which an MoE router can turn into another expert and
        another token (docs/engine.md, "Plain's text: what is bitwise the same").

        On hybrid memory a branch's recurrent state includes the deeper nodes it holds
        (llama.cpp copies a recurrent state whole, whatever the range), so the path is
        not copied: every branch is emptied, sequence 0 comes back from the checkpoint
        taken before the tree and the path is decoded again."""
        if not tokens:
            return
        p0 = len(self.tokens)
        if not self.exact_cut or not in_order:
            for s in range(1, self.ctx.n_seq_max):
                self._empty(s)
            want = [*self.tokens, *tokens]
            if self.exact_cut:
                self._drop_from(p0 - 1)  # the pending token's cell too: the chain starts there
            else:
                self._rewind(p0 - 1)  # the checkpoint before the tree (the pending token's cell goes)
            self._replay(want)
            return
        p1 = p0 + len(tokens)
        if not self.ctx.seq_rm(seq, p1, -1):
            self._fail(f"llama.cpp refused to cut branch {seq} at {p1}")
        self.ctx.seq_cp(seq, 0, p0, p1)
        self.tokens.extend(tokens)
        self._check("committing a tree branch")

    def close(self) -> None:
        self._batch.close()


class KVHolder:
    """Something that owns one KV mirror (``kv``: the target's generator, the draft
    model): its context and the tokens its cache holds, read through the mirror."""

    kv: KVCache

    @property
    def ctx(self) -> Context:
        return self.kv.ctx

    @property
    def cache(self) -> list[int]:
        """The tokens the cache holds (sequence 0)."""
        return self.kv.tokens
