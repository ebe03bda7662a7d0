"""An n-gram cache: which token followed each n-gram in earlier text of the same target.

Prompt lookup (``lookup.py``) only sees the conversation at hand. This cache
remembers what the target wrote in earlier chats (and what users pasted), so a
reply that repeats text from another conversation (a file edited again, a
boilerplate block, a format the user always asks for) can still be proposed.
It is llama.cpp's "dynamic" n-gram cache level (``common/ngram-cache.cpp``)
stored the way its ``ngram-mod`` drafter stores one (``common/ngram-mod.cpp``):
a fixed-size hash table, so memory and the file on disk are bounded by
construction, saving is one array write, and loading is instant.

Each slot holds one n-gram's tag (a second hash, to tell colliding n-grams
apart), the token that most often followed it, and a majority count (+1 when
that token follows again, -1 when another does, replaced at 0: the
Boyer-Moore majority vote). A different n-gram landing on a taken slot wears
its count down the same way, so a frequent entry survives a one-off collision
and stale entries give way: that is the eviction. A token is proposed only
when its count clears the n-gram length's bar, the margin counterpart of
llama.cpp's strict thresholds for this level (``draft_min_sample_size_strict``).
Proposals are exact like every other: the target verifies them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_MAX = 4  # llama.cpp's LLAMA_NGRAM_MAX
N_MIN = 1
# Count margin a follower needs before it is proposed, by n-gram length 1..4
# (llama.cpp's draft_min_sample_size_strict for its dynamic cache: 4, 3, 2, 2).
MIN_MARGIN = (4, 3, 2, 2)
DEFAULT_SLOTS = 1 << 18  # 262,144 slots: 2.5 MB in memory and on disk
COUNT_CAP = 1 << 14  # counts saturate (int16)
MAX_TOKEN = (1 << 31) - 1
MEMO_MAX = 4096  # remembered next-token answers (a reply's contexts; cleared when full)

_M64 = (1 << 64) - 1
_SEED = 0x9E3779B97F4A7C15


def _fold(h: int, token: int) -> int:
    """One step of the n-gram hash: mixes the next-older token into ``h``."""
    h = ((h ^ (token + 0x632BE59BD9B4E019)) * 0xBF58476D1CE4E5B9) & _M64
    return h ^ (h >> 31)


def _finish(h: int, n: int) -> int:
    """splitmix64's finaliser over the folded hash and the n-gram length."""
    h = (h + n * 0x94D049BB133111EB) & _M64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _M64
    return h ^ (h >> 31)


class NgramCache:
    """A bounded table of n-gram -> (most frequent next token, majority count)."""

    def __init__(self, slots: int = DEFAULT_SLOTS, n_max: int = N_MAX, n_min: int = N_MIN) -> None:
        if slots <= 0 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two, not {slots}")
        if not 1 <= n_min <= n_max <= len(MIN_MARGIN):
            raise ValueError(f"n-gram lengths must satisfy 1 <= n_min <= n_max <= {len(MIN_MARGIN)}")
        self.slots = slots
        self.n_max = n_max
        self.n_min = n_min
        self.tag = np.zeros(slots, dtype=np.int32)  # 0: an empty slot
        self.tok = np.zeros(slots, dtype=np.int32)
        self.cnt = np.zeros(slots, dtype=np.int16)
        self.learned = 0  # tokens learned over the cache's life (kept on disk)
        self._memo: dict[tuple[int, ...], tuple[int, int] | None] = {}  # see next_token

    # -- hashing -------------------------------------------------------------

    def _keys(self, tokens: Sequence[int], end: int) -> list[tuple[int, int, int]]:
        """(n, slot, tag) of the n-grams ending just before ``end``, shortest first."""
        out = []
        h = _SEED
        for n in range(1, min(self.n_max, end) + 1):
            h = _fold(h, int(tokens[end - n]))
            if n >= self.n_min:
                f = _finish(h, n)
                out.append((n, f & (self.slots - 1), ((f >> 33) & 0x7FFFFFFF) | 1))
        return out

    # -- learning ------------------------------------------------------------

    def learn(self, tokens: Sequence[int], start: int = 0) -> int:
        """Count what followed each n-gram, for the tokens at ``start`` onward (the
        n-grams before them may reach back before ``start``). Returns tokens learned."""
        tag, tok, cnt = self.tag, self.tok, self.cnt
        self._memo.clear()
        n_new = 0
        for i in range(max(start, 1), len(tokens)):
            nxt = int(tokens[i])
            if not 0 <= nxt <= MAX_TOKEN:
                continue
            n_new += 1
            for _n, s, t in self._keys(tokens, i):
                if tag[s] == t and tok[s] == nxt:
                    if cnt[s] < COUNT_CAP:
                        cnt[s] += 1
                elif cnt[s] > 1:
                    cnt[s] -= 1  # another follower, or another n-gram on this slot
                else:  # empty, or worn down: the slot is this n-gram's, with this follower
                    tag[s], tok[s], cnt[s] = t, nxt, 1
        self.learned += n_new
        return n_new

    # -- proposing -----------------------------------------------------------

    def next_token(self, tokens: Sequence[int]) -> tuple[int, int] | None:
        """(token, n-gram length) for the longest n-gram whose follower clears its bar.

        Answers are remembered by the last ``n_max`` tokens until the table changes
        (``learn``, ``clear``, ``load_arrays``): lookup previews up to 8 tokens on every
        step, and consecutive steps walk the same contexts (~6 us each in Python)."""
        key = tuple(tokens[-self.n_max:])
        memo = self._memo
        if key in memo:
            return memo[key]
        got: tuple[int, int] | None = None
        for n, s, t in reversed(self._keys(tokens, len(tokens))):
            if self.tag[s] == t and self.cnt[s] >= MIN_MARGIN[n - 1]:
                got = int(self.tok[s]), n
                break
        if len(memo) >= MEMO_MAX:
            memo.clear()
        memo[key] = got
        return got

    def predict(self, tokens: Sequence[int], k: int) -> tuple[list[int], int]:
        """Up to ``k`` tokens after ``tokens``, each predicted from the ones before
        (drafted tokens included), and the n-gram length behind the first; ([], 0) if none."""
        ctx = list(tokens[-self.n_max:])
        out: list[int] = []
        first_n = 0
        while len(out) < k:
            got = self.next_token(ctx)
            if got is None:
                break
            token, n = got
            first_n = first_n or n
            out.append(token)
            ctx = [*ctx[1:], token] if len(ctx) >= self.n_max else [*ctx, token]
        return out, first_n

    # -- state ---------------------------------------------------------------

    @property
    def used(self) -> int:
        """Slots holding an n-gram."""
        return int(np.count_nonzero(self.tag))

    def clear(self) -> None:
        self._memo.clear()
        self.tag[:] = 0
        self.tok[:] = 0
        self.cnt[:] = 0
        self.learned = 0

    def arrays(self) -> dict[str, np.ndarray]:
        """A copy of the table (what is saved), safe to hand to another thread."""
        return {"tag": self.tag.copy(), "tok": self.tok.copy(), "cnt": self.cnt.copy()}

    def load_arrays(self, arrays: dict[str, np.ndarray], learned: int) -> None:
        """Take a saved table; ValueError when it does not have this cache's shape."""
        want = {"tag": np.int32, "tok": np.int32, "cnt": np.int16}
        for name, dtype in want.items():
            a = arrays.get(name)
            if a is None or a.shape != (self.slots,) or a.dtype != dtype:
                raise ValueError(f"array {name!r} is missing or has the wrong shape or type")
        if int(arrays["cnt"].min(initial=0)) < 0 or int(arrays["tok"].min(initial=0)) < 0:
            raise ValueError("negative counts or token ids")
        self._memo.clear()
        self.tag[:] = arrays["tag"]
        self.tok[:] = arrays["tok"]
        self.cnt[:] = arrays["cnt"]
        self.learned = max(int(learned), 0)
