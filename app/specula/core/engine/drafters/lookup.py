"""Prompt lookup: propose the continuation of the latest earlier match of the last n-gram.

No model at all: when the reply quotes the prompt (edits, refactors, summaries
that quote), the tokens after an earlier occurrence of the last n tokens are a
good guess, and verifying them costs one target batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specula.core.engine.drafters.base import DrafterCounters, DraftRequest, DraftSource, Proposal


class LookupDrafter:
    """n-gram prompt lookup (llama.cpp's ngram-simple), a deterministic proposal."""

    source = DraftSource.LOOKUP
    available = True
    stopped = ""

    def __init__(self, ngram_max: int = 4, ngram_min: int = 1) -> None:
        self.ngram_max = ngram_max
        self.ngram_min = ngram_min
        self.counters = DrafterCounters()

    def begin(self, prompt: Sequence[int], *, sync: bool) -> None:
        return None

    def lag(self, committed: Sequence[int]) -> int:
        return 0

    def preview(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        return self.match(committed, k)

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

    def propose(self, req: DraftRequest) -> Proposal:
        """The planned tokens (``req.lookup_tokens``), else a fresh match."""
        tokens, n = (req.lookup_tokens, 0) if req.lookup_tokens else self.match(req.committed, req.k)
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
        self.counters.drafts += 1
        self.counters.drafted += len(prop)
        return prop

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        self.counters.accepted += n_accepted
