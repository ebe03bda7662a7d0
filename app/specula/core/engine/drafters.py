"""Who proposes draft tokens: a draft model (chain) or prompt lookup.

A drafter keeps its own KV cache in step with the committed tokens and never
re-evaluates a token it has already seen: after a step it is told how many of
its proposals were kept, trims its cache to them, and next time feeds only
what it has not seen (normally just the target's last token).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
    source: str = "draft"  # draft | lookup
    match_len: int = 0  # lookup: length of the matched n-gram
    n_decodes: int = 0  # draft llama_decode calls this step
    catchup: int = 0  # tokens the draft had to catch up on before drafting

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

    def feed_context(self, committed: Sequence[int]) -> tuple[int, float]:
        """Feed what the draft has not seen (at least the last token, for its logits).

        Returns (tokens fed, seconds).
        """
        n = min(common_prefix(self.cache, committed), len(committed) - 1)
        if n < len(self.cache):
            self.ctx.seq_rm(0, n)
            del self.cache[n:]
        return len(committed) - n, self._feed(list(committed[n:]), n, "last")

    def propose(
        self, committed: Sequence[int], k: int, params: SamplingParams,
        keep: Callable[[int, float, float], tuple[bool, bool]],
        rng: np.random.Generator, *, want_q: bool,
    ) -> Proposal:
        """Draft up to ``k`` tokens after ``committed``.

        After each token, ``keep(i, top_prob, entropy)`` says whether to keep it
        and whether to draft another (the policy's stop rule).
        """
        prop = Proposal()
        if k <= 0:
            return prop
        prop.catchup, prop.draft_s = self.feed_context(committed)
        prop.n_decodes = 1
        pos = len(committed)
        for i in range(k):
            logits = self.ctx.logits(-1)[: self.n_shared]
            top, p_top, entropy = softmax_stats(logits)
            keep_it, more = keep(i, p_top, entropy)
            if not keep_it:
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
            if not more or i + 1 >= k:
                break
            prop.draft_s += self._feed([tok], pos + i, "last")
            prop.n_decodes += 1
        return prop

    def trim_to(self, committed: Sequence[int]) -> None:
        """Drop cached tokens that are not a prefix of ``committed`` (rejected proposals)."""
        keep = common_prefix(self.cache, committed)
        if keep < len(self.cache):
            self.ctx.seq_rm(0, keep)
            del self.cache[keep:]


class PromptLookup:
    """Propose the continuation of the longest earlier match of the context's last n-gram.

    No model at all: when the reply quotes the prompt (edits, refactors,
    summaries that quote), the tokens after an earlier occurrence of the last
    n tokens are a good guess, and verifying them costs one target batch.
    """

    def __init__(self, ngram_max: int = 4, ngram_min: int = 1) -> None:
        self.ngram_max = ngram_max
        self.ngram_min = ngram_min

    def match(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        """(continuation of up to k tokens, matched n-gram length); ([], 0) when none."""
        n_tok = len(committed)
        if k <= 0 or n_tok < 2:
            return [], 0
        arr = np.asarray(committed, dtype=np.int32)
        for n in range(min(self.ngram_max, n_tok - 1), self.ngram_min - 1, -1):
            tail = arr[n_tok - n :]
            # candidate starts where the first token matches, most recent first
            starts = np.flatnonzero(arr[: n_tok - n] == tail[0])[::-1]
            for s in starts:
                if s + n <= n_tok - 1 and np.array_equal(arr[s : s + n], tail):
                    cont = arr[s + n : min(s + n + k, n_tok)]
                    if len(cont):
                        return [int(t) for t in cont], n
        return [], 0

    def propose(self, committed: Sequence[int], k: int) -> Proposal:
        tokens, n = self.match(committed, k)
        prop = Proposal(source="lookup")
        for t in tokens:
            prop.tokens.append(t)
            prop.q.append(None)  # deterministic: q is one-hot at t (see sampling.accept_draft_token)
            prop.token_probs.append(1.0)
            prop.top_probs.append(1.0)
            prop.entropies.append(0.0)
        prop.match_len = n
        return prop
