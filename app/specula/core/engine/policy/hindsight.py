"""What each chain length would have had on the recent draft steps, known in hindsight.

After a draft-model chain step that accepted m of the k tokens it drafted, a chain of
any length j would have yielded min(m, j) + 1 tokens (a step that accepted all it
drafted says j + 1 for longer j, optimistically) in j draft decodes and a verify of
j + 1 tokens. Faded by FADE per step, so about the last 1 / (1 - FADE) steps weigh.

The adaptive policy caps a chain one token past the length that led over those
steps: where the learnt depth rates promise more than this text gives (a prompt
harder than the ones before it), a long proposal stops costing more than the short
chain would have within a few steps, and a run of full acceptances lifts the cap
as fast.
"""

from __future__ import annotations

from collections.abc import Callable

FADE = 0.9
LONGEST = 16  # chain lengths followed (1..LONGEST)


class Hindsight:
    """Faded tokens and seconds per chain length over the recent chain steps."""

    def __init__(self) -> None:
        self.tokens = [0.0] * (LONGEST + 1)  # by chain length j (index 0 unused)
        self.seconds = [0.0] * (LONGEST + 1)

    def observe(self, drafted: int, accepted: int, draft_s: float,
                verify_s: Callable[[int], float]) -> None:
        """Add one chain step: ``draft_s`` a draft decode, ``verify_s(n)`` a verify of n."""
        for j in range(1, LONGEST + 1):
            tokens = j + 1 if accepted >= drafted and j > drafted else min(accepted, j) + 1
            self.tokens[j] = FADE * self.tokens[j] + tokens
            self.seconds[j] = FADE * self.seconds[j] + j * draft_s + verify_s(j + 1)

    def cap(self, k_max: int) -> int:
        """At most one token past the chain length that would have done best (k_max until
        a step has been seen)."""
        best, best_j = 0.0, 0
        for j in range(1, min(k_max, LONGEST) + 1):
            if self.seconds[j] > 0:
                rate = self.tokens[j] / self.seconds[j]
                if rate > best:
                    best, best_j = rate, j
        return k_max if best_j == 0 else min(k_max, best_j + 1)
