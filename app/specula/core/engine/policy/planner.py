"""The planner: from costs, acceptance, the lookup match and the room left, the step with
the most expected tokens per second, or a plain step where none beats plain decoding.

Pure functions of plain data: nothing here measures, learns or remembers, so each can be
checked by hand (``tests/core/engine/test_planner.py``). The adaptive policy (``rates.py``,
``adaptive.py``) turns its models into these arguments and decides around them what the
models cannot (probes, the short-answer hold, the stop-loss: ``governor.py``).

A step of k drafted tokens yields E(k) tokens (the acceptance model's expectation: the
accepted run and the target's own token) in: the drafter's catch-up share, k draft
decodes, a verify of k + 1 tokens, and on a recurrent target the rollback. Lookup drafts
for free (its tokens are copied) and pays the verify and rollback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specula.core.engine.events import TokenOrigin

Verify = Callable[[int], float]  # seconds of a verify batch of n tokens


def expected_tokens(a: float, k: int) -> float:
    """Tokens per step with per-token acceptance a and k drafted: (1 - a^(k+1)) / (1 - a)."""
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True)
class CatchUp:
    """What a drafter must be fed before it drafts: ``recurring`` seconds every step pays
    (the bonus token), ``once`` seconds paid once and shared over the ``room`` tokens it
    will then draft (a conversation it sat out for)."""

    recurring: float = 0.0
    once: float = 0.0
    room: float = 1.0

    def share(self, e: float) -> float:
        """The seconds a step expected to yield ``e`` tokens pays of it."""
        return self.recurring + self.once * min(1.0, e / max(self.room, 1.0))


@dataclass(frozen=True)
class Option:
    """One kind of step: its source, length and expected tokens per second."""

    source: TokenOrigin
    k: int
    rate: float


def best_chain(expected: Sequence[float], decode_s: float, verify: Verify, *,
               catchup: CatchUp | None = None, rollback_s: float = 0.0) -> tuple[float, int]:
    """(tokens/s, k) of the best chain, ``expected[k - 1]`` the tokens a chain of k yields."""
    best, best_k = 0.0, 0
    for k, e in enumerate(expected, start=1):
        share = catchup.share(e) if catchup is not None else 0.0
        rate = e / (share + k * decode_s + verify(k + 1) + rollback_s)
        if rate > best:
            best, best_k = rate, k
    return best, best_k


def best_lookup(a: float, k_max: int, verify: Verify, rollback_s: float = 0.0) -> tuple[float, int]:
    """(tokens/s, k) of the best lookup proposal of at most ``k_max`` tokens at acceptance
    ``a`` (copied: no draft decodes)."""
    best, best_k = 0.0, 0
    for k in range(1, k_max + 1):
        rate = expected_tokens(a, k) / (verify(k + 1) + rollback_s)
        if rate > best:
            best, best_k = rate, k
    return best, best_k


def tree_best_case(depth: int, nodes: int, decode_s: float, verify: Verify, *,
                   catchup: CatchUp | None = None, rollback_s: float = 0.0) -> float:
    """Tokens/s of a tree were every level accepted: depth + 1 tokens for one draft decode
    per level and a verify of every node."""
    share = catchup.share(depth + 1) if catchup is not None else 0.0
    t = share + depth * decode_s + verify(nodes + 1) + rollback_s
    return (depth + 1) / t if t > 0 else 0.0


def choose(plain_s: float, options: Sequence[Option], margin: float) -> Option:
    """The fastest option, if it beats plain decoding (a step of ``plain_s`` seconds, one
    token) by more than ``margin``; else a plain step. On a tie the earlier option wins."""
    best = Option(TokenOrigin.TARGET, 0, 1.0 / plain_s)
    bar = best.rate * (1.0 + margin)
    for opt in options:
        if opt.rate > bar and (best.source is TokenOrigin.TARGET or opt.rate > best.rate):
            best = opt
    return best
