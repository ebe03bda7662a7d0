"""The conversation's n-grams, indexed as it grows: prompt lookup in time that does not
grow with the chat.

Prompt lookup proposes what followed the latest earlier occurrence of the conversation's
last n tokens. Scanning the conversation for it on every step (a numpy comparison over
every token, then a Python loop over each earlier occurrence of the tail's first token)
cost a median of 122 us a step at 300 tokens, 391 us at 2,000 and 646 us at 8,000 (p90
up to 4.2 ms) on this machine (``python -m specula_tools.policy_costs``), and
the adaptive policy asks for a preview on every step of a reply, plain steps included
(docs/lab/2026-12-01-host-work.md, "Prompt lookup in time that does not grow with the chat").

This index keeps, for each n-gram length, the latest start of every n-gram that some token
follows; each step adds the n-grams its new tokens complete, a few dictionary writes. The
answer is the scan's exactly: the same latest occurrence, the same continuation.
"""

from __future__ import annotations

from collections.abc import Sequence

_FEW = 32  # new tokens up to which indexing them one by one beats the zip over slices


class NgramIndex:
    """n-gram -> latest start, for n in ``n_min .. n_max``, over one token sequence.

    :meth:`sync` brings it to a sequence. A list it was last synced to that has only
    grown by appends since (the generator's committed tokens during a reply) is
    extended by the new tokens, after a check of its last indexed token; any other
    sequence is compared with what is indexed, extended where it continues it and
    indexed afresh where it does not (a regenerated or edited reply: once per reply).
    """

    def __init__(self, n_min: int, n_max: int) -> None:
        if not 1 <= n_min <= n_max:
            raise ValueError(f"n-gram lengths must satisfy 1 <= n_min <= n_max, not {n_min}, {n_max}")
        self.n_min = n_min
        self.n_max = n_max
        self.tokens: list[int] = []  # the indexed sequence
        # latest[n][gram] = the latest start s of gram with a token after it (s + n < len)
        self._latest: list[dict[tuple[int, ...], int]] = [{} for _ in range(n_max + 1)]
        self._source: Sequence[int] | None = None  # the sequence last synced to

    def sync(self, seq: Sequence[int]) -> None:
        have = self.tokens
        n_have = len(have)
        if len(seq) < n_have or not self._continues(seq, n_have):
            self._clear()
            n_have = 0
        self._source = seq
        if len(seq) > n_have:
            have.extend(int(t) for t in seq[n_have:])
            self._index_from(n_have)

    def _continues(self, seq: Sequence[int], n_have: int) -> bool:
        if n_have == 0:
            return True
        if int(seq[n_have - 1]) != self.tokens[-1]:
            return False
        if seq is self._source:
            return True  # grown by appends since (the last indexed token still agrees)
        head = seq[:n_have]
        return (head if isinstance(head, list) else [int(t) for t in head]) == self.tokens

    def _clear(self) -> None:
        self.tokens.clear()
        for d in self._latest:
            d.clear()

    def _index_from(self, start: int) -> None:
        """Index the n-grams the tokens from ``start`` on complete: the token at p follows
        the n-gram that ends just before it, so the n-grams starting at s with
        max(start, 1) <= s + n <= len - 1. Ascending s, so the latest start wins; zip and
        dict.update run at C speed (a new reply's 8,000-token prompt: ~7.5 ms against
        17-43 ms one by one); a step's few tokens go one by one (5.5 us against 15)."""
        toks = self.tokens
        if len(toks) - start <= _FEW:  # a step's few tokens: a plain loop costs less
            for p in range(max(start, 1), len(toks)):
                for n in range(self.n_min, min(self.n_max, p) + 1):
                    self._latest[n][tuple(toks[p - n:p])] = p - n
            return
        for n in range(self.n_min, self.n_max + 1):
            lo, hi = max(max(start, 1) - n, 0), len(toks) - n  # starts lo .. hi - 1
            if hi > lo:
                grams = zip(*(toks[lo + i:hi + i] for i in range(n)), strict=True)
                self._latest[n].update(zip(grams, range(lo, hi), strict=True))

    def latest(self, n: int) -> int | None:
        """The latest earlier start of the last n tokens with a token after it (None: none)."""
        toks = self.tokens
        if not self.n_min <= n <= self.n_max or n >= len(toks):
            return None
        return self._latest[n].get(tuple(toks[len(toks) - n:]))

    def agree_before(self, a: int, b: int, limit: int) -> int:
        """How many tokens right before positions a and b (a < b) are equal, up to ``limit``."""
        toks = self.tokens
        n = min(limit, a)
        for j in range(1, n + 1):
            if toks[a - j] != toks[b - j]:
                return j - 1
        return max(n, 0)
