"""Who proposes draft tokens: a draft model (chain) or prompt lookup.

A drafter keeps its own KV cache in step with the committed tokens and never
re-evaluates a token it has already seen: after a step it is told how many of
its proposals were kept, trims its cache to them, and next time feeds only
what it has not seen (normally just the target's last token).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from specula.core.engine.llama import Batch, Context
from specula.core.engine.sampling import F32, SamplingParams, probs, sample


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Proposal:
    """A chain of draft tokens with what the acceptance rule needs."""

    tokens: list[int] = field(default_factory=list)
    q: list[F32 | None] = field(default_factory=list)  # the distribution each token was drawn from
    token_probs: list[float] = field(default_factory=list)  # q(token), shown as "draft probability"
    top_probs: list[float] = field(default_factory=list)  # the draft's confidence per position
    entropies: list[float] = field(default_factory=list)
    draft_s: float = 0.0  # time in the draft's llama_decode
    source: str = "draft"

    def __len__(self) -> int:
        return len(self.tokens)

    def truncate(self, n: int) -> None:
        for lst in (self.tokens, self.q, self.token_probs, self.top_probs, self.entropies):
            del lst[n:]


def softmax_stats(logits: F32) -> tuple[int, float, float]:
    """(argmax, its probability, entropy in nats) of the plain softmax."""
    top = int(np.argmax(logits))
    x = logits - logits[top]
    e = np.exp(x)
    z = float(e.sum())
    p_top = 1.0 / z
    # H = log z - sum(p * x)
    entropy = float(np.log(z) - float(np.dot(e, x)) / z)
    return top, p_top, entropy


class DraftModelDrafter:
    """A small model with the same tokenizer proposes a chain, token by token."""

    def __init__(self, ctx: Context, n_vocab_shared: int) -> None:
        self.ctx = ctx
        self.n_shared = n_vocab_shared
        self.cache: list[int] = []  # tokens evaluated in seq 0, in order
        self._batch = Batch(max(ctx.n_batch, 16), 1)

    def reset(self) -> None:
        self.ctx.clear()
        self.cache = []

    def _feed(self, tokens: Sequence[int], start: int, outputs: str) -> float:
        t0 = time.perf_counter()
        for i in range(0, len(tokens), self.ctx.n_batch):
            chunk = tokens[i : i + self.ctx.n_batch]
            last = i + self.ctx.n_batch >= len(tokens)
            self._batch.fill(chunk, start + i, outputs=outputs if last else "none")
            self.ctx.decode(self._batch)
        self.cache.extend(tokens)
        return time.perf_counter() - t0

    def sync(self, committed: Sequence[int], *, keep_last: bool) -> float:
        """Bring the cache to ``committed`` (minus its last token unless ``keep_last``)."""
        want = len(committed) if keep_last else len(committed) - 1
        n = min(common_prefix(self.cache, committed), want)
        if n < len(self.cache):
            self.ctx.seq_rm(0, n)
            del self.cache[n:]
        todo = list(committed[n:want])
        if not todo:
            return 0.0
        return self._feed(todo, n, "last" if keep_last else "none")

    def propose(
        self, committed: Sequence[int], k: int, params: SamplingParams, p_min: float,
        rng: np.random.Generator, *, want_q: bool,
    ) -> Proposal:
        """Draft up to ``k`` tokens after ``committed``; stop early below ``p_min``."""
        prop = Proposal()
        if k <= 0:
            return prop
        # Everything but the tokens already seen; at least the last one, for its logits.
        n = min(common_prefix(self.cache, committed), len(committed) - 1)
        if n < len(self.cache):
            self.ctx.seq_rm(0, n)
            del self.cache[n:]
        prop.draft_s += self._feed(list(committed[n:]), n, "last")
        pos = len(committed)
        for i in range(k):
            logits = self.ctx.logits(-1)[: self.n_shared]
            top, p_top, entropy = softmax_stats(logits)
            if p_top < p_min:
                break
            if params.greedy:
                tok, q, p_tok = top, None, p_top
            else:
                q = probs(logits, params)
                tok = sample(q, rng)
                p_tok = float(q[tok])
            prop.tokens.append(tok)
            prop.q.append(q if want_q else None)
            prop.token_probs.append(p_tok)
            prop.top_probs.append(p_top)
            prop.entropies.append(entropy)
            if i + 1 < k:
                prop.draft_s += self._feed([tok], pos + i, "last")
        return prop

    def accepted(self, committed_len_before: int, n_accepted: int) -> None:
        """Keep the proposals the target accepted (those the draft evaluated)."""
        keep = min(committed_len_before + n_accepted, len(self.cache))
        if keep < len(self.cache):
            self.ctx.seq_rm(0, keep)
            del self.cache[keep:]
