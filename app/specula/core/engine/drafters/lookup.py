"""Prompt lookup: propose the continuation of the latest earlier match of the last n-gram,
and failing that, what followed the same n-gram in earlier chats of this target.

No model at all: when the reply quotes the prompt (edits, refactors, summaries
that quote), the tokens after an earlier occurrence of the last n tokens are a
good guess, and verifying them costs one target batch. The prompt holds every
earlier turn of the chat, so this covers the whole conversation. Where it finds
nothing better than a single-token match, the target's persistent n-gram cache
(``ngram_cache.py``) is asked, as llama.cpp's lookup falls back from its context
cache to its dynamic one. Both are one source (``TokenOrigin.LOOKUP``), weighed by
the same cost model; the match length a proposal reports tells them apart
(``CACHE_MATCH + n`` for the cache), so the adaptive policy learns their
acceptance separately, and the tokens the cache made are ``TokenOrigin.NGRAM_CACHE``
(``Proposal.token_source``).
"""

from __future__ import annotations

from collections.abc import Sequence

from specula.core.engine.drafters.ngram_cache import NgramCache
from specula.core.engine.drafters.ngram_index import NgramIndex
from specula.core.engine.drafters.proposal import (
    CACHE_MATCH,
    EXTENT_BUCKETS,
    DraftRequest,
    Proposal,
)
from specula.core.engine.events import TokenOrigin


class LookupDrafter:
    """n-gram prompt lookup (llama.cpp's ngram-simple) over the conversation, then the
    target's n-gram cache (llama.cpp's ngram-cache, dynamic level); a deterministic proposal."""

    source = TokenOrigin.LOOKUP
    available = True
    stopped = ""

    def __init__(self, ngram_max: int = 4, ngram_min: int = 1, cache: NgramCache | None = None) -> None:
        self.ngram_max = ngram_max
        self.ngram_min = ngram_min
        self.cache = cache  # the target's persistent cache (the engine passes it to the Generator)
        self._preview: tuple[int, list[int], int] = (-1, [], 0)  # (at length, tokens, match code)
        self._index = NgramIndex(ngram_min, ngram_max)  # the conversation's n-grams

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        return 0

    def lag(self, committed: Sequence[int]) -> int:
        return 0

    def preview(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        tokens, n = self.match(committed, k)
        self._preview = (len(committed), tokens, n)
        return tokens, n

    def match(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        """(up to k tokens, match code): the conversation's match of 2+ tokens, else the
        cache's prediction (code ``CACHE_MATCH + n``), else a single-token match; ([], 0)
        when none."""
        tokens, n = self.context_match(committed, k)
        if n >= 2 or self.cache is None or k <= 0:
            return tokens, n
        cached, n_cache = self.cache.predict(committed, k)
        if cached:
            return cached, CACHE_MATCH + n_cache
        return tokens, n

    def context_match(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        """(continuation of up to k tokens, match code); ([], 0) when none. The code is
        the matched n-gram length, and for the longest n-gram grows with how far back
        the earlier occurrence agrees with the text before it (``EXTENT_BUCKETS``)."""
        n_tok = len(committed)
        if k <= 0 or n_tok < 2:
            return [], 0
        index = self._index
        index.sync(committed)
        toks = index.tokens
        for n in range(min(self.ngram_max, n_tok - 1), self.ngram_min - 1, -1):
            s = index.latest(n)
            if s is None:
                continue
            code = n
            if n == self.ngram_max:
                extent = n + index.agree_before(s, n_tok - n, EXTENT_BUCKETS[-1] - n)
                code += sum(1 for b in EXTENT_BUCKETS if extent >= b)
            return toks[s + n : min(s + n + k, n_tok)], code
        return [], 0

    def propose(self, req: DraftRequest) -> Proposal:
        """The planned tokens (``req.lookup_tokens``, with the match code of the preview
        they came from, so the policy learns acceptance per code), else a fresh match."""
        if req.lookup_tokens:
            tokens = req.lookup_tokens
            at, previewed, code = self._preview
            n = code if at == len(req.committed) and previewed[: len(tokens)] == tokens else 0
        else:
            tokens, n = self.match(req.committed, req.k)
        prop = Proposal(source=self.source, match_len=n)
        tokens = tokens[: req.k]
        if req.grammar is not None:  # stop before the first token the grammar forbids
            g = req.grammar.clone()
            try:
                tokens = tokens[: next((i for i, t in enumerate(tokens) if not g.try_advance(t)),
                                       len(tokens))]
            finally:
                g.close()
        for t in tokens:
            prop.append(t, None, 1.0, 1.0, 0.0)  # q one-hot at t (sampling.accept_draft_token)
        return prop

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        """Nothing to drop: the index grows with the conversation, not with proposals."""
