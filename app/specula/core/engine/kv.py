"""The KV mirror: which tokens one context's cache holds, and the only code that changes it.

Invariant: sequence 0 of ``ctx`` holds exactly ``self.tokens`` at positions
0..len-1, and every other sequence is empty between operations. Every change
(prefix reuse, feeding tokens within the context's own n_ctx and n_batch,
cutting back after rejected proposals, branch sequences for token trees,
committing a tree's winning branch) goes through this class, and each one
restores the invariant on every exit path: errors, a full context, cancel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from specula.core.cancel import Cancelled
from specula.core.engine.batch import Batch
from specula.core.engine.llama import Context, ContextFull


def common_prefix(a: Sequence[int], b: Sequence[int], start: int = 0) -> int:
    """Length of the longest common prefix, given that the first ``start`` items agree
    (they are not compared again). The rest is compared as slices at C speed (one
    comparison, then chunks of 64 and the first unequal chunk item by item when they
    differ): the work is proportional to ``len - start``, not to the whole sequence."""
    n = min(len(a), len(b))
    i = min(max(start, 0), n)
    if _span(a, i, n) == _span(b, i, n):
        return n
    while i + 64 <= n and _span(a, i, i + 64) == _span(b, i, i + 64):
        i += 64
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _span(x: Sequence[int], i: int, j: int) -> list[int]:
    """``x[i:j]`` as a list (a list's slice already is one; a tuple's or an array's is not
    equal to a list however alike)."""
    part = x[i:j]
    return part if isinstance(part, list) else list(part)


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

    def cut(self, n: int) -> None:
        """Keep the first ``n`` tokens. A cache that cannot be cut (recurrent) starts over."""
        if n < len(self.tokens):
            self._drop_from(n)

    def _drop_from(self, n: int) -> None:
        if self.ctx.seq_rm(0, n, -1):
            del self.tokens[n:]
            self._agreed = min(self._agreed, n)
        else:
            self.clear()

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
        """Keep the longest common prefix with ``tokens`` (at most ``limit``); returns its length."""
        n = self.agreement(tokens)
        if limit is not None:
            n = min(n, limit)
        self.cut(n)
        return len(self.tokens)

    def fits(self, n_tokens: int) -> bool:
        return len(self.tokens) + n_tokens <= self.ctx.n_ctx

    def feed(
        self, tokens: Sequence[int], outputs: str = "none", cancel: threading.Event | None = None,
    ) -> float:
        """Evaluate ``tokens`` after what the cache holds; returns seconds in llama_decode.

        Chunks of at most the context's n_batch; ``outputs`` ('none', 'last', 'all')
        applies to the last chunk ('all' needs the tokens to fit one batch). Raises
        ContextFull before decoding when the tokens do not fit; on any failure the
        cache is cut back to what it held before.
        """
        if not tokens:
            return 0.0
        if not self.fits(len(tokens)):
            raise ContextFull(
                f"{len(tokens)} more tokens do not fit {len(self.tokens)} of {self.ctx.n_ctx}"
            )
        step = self.ctx.n_batch
        if outputs == "all" and len(tokens) > step:
            raise ValueError(f"{len(tokens)} tokens with all outputs exceed n_batch {step}")
        start = len(self.tokens)
        spent = 0.0
        try:
            for i in range(0, len(tokens), step):
                if cancel is not None and cancel.is_set():
                    raise Cancelled
                chunk = tokens[i : i + step]
                last = i + step >= len(tokens)
                self._batch.fill(chunk, start + i, outputs=outputs if last else "none")
                t0 = time.perf_counter()
                self.ctx.decode(self._batch)
                spent += time.perf_counter() - t0
                self.tokens.extend(chunk)
        except BaseException:
            self._drop_from(start)
            raise
        if self._ref is not None and self._agreed == start \
                and _span(self._ref, start, start + len(tokens)) == _span(tokens, 0, len(tokens)):
            self._agreed += len(tokens)  # fed from the sequence it agreed with: still agrees
        return spent

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
            self.ctx.seq_rm(s, -1, -1)
            if share_prefix:
                self.ctx.seq_cp(0, s, -1, -1)
        n0 = len(self.tokens)
        try:
            yield seqs
        finally:
            for s in range(1, self.ctx.n_seq_max):
                self.ctx.seq_rm(s, -1, -1)
            if len(self.tokens) == n0 and self.ctx.pos_max(0) >= n0:
                self._drop_from(n0)  # a tree decode left cells in sequence 0

    def decode(self, batch: Batch, appended: Sequence[int] = ()) -> float:
        """Decode a batch the caller filled (a tree), whose sequence-0 entries are ``appended``
        at the next positions; returns seconds. On failure sequence 0 is cut back."""
        start = len(self.tokens)
        t0 = time.perf_counter()
        try:
            self.ctx.decode(batch)
        except BaseException:
            self._drop_from(start)
            raise
        self.tokens.extend(appended)
        return time.perf_counter() - t0

    def commit_branch(self, seq: int, tokens: Sequence[int]) -> None:
        """The first ``len(tokens)`` cells of branch ``seq`` after sequence 0's end join
        sequence 0 (the accepted path of a tree); the branch itself is dropped on exit
        of :meth:`branches`."""
        if not tokens:
            return
        p0 = len(self.tokens)
        p1 = p0 + len(tokens)
        self.ctx.seq_rm(seq, p1, -1)
        self.ctx.seq_cp(seq, 0, p0, p1)
        self.tokens.extend(tokens)

    def close(self) -> None:
        self._batch.close()
