"""Plain against speculative on one prompt: the schedule of runs and the unrounded verdict.

Why interleave: a machine's speed drifts (thermal limits, other processes, the
page cache), so two runs measured one after the other compare the machine at
two moments as much as the two modes. Runs alternate in ABBA rounds (plain,
spec, spec, plain, plain, spec, ...), which cancels any drift that is linear
over a pair of rounds, and each mode's rate is its total tokens over its total
decode time, the same definition as the footer's tok/s
(:attr:`GenerationStats.tokens_per_s`: tokens after the first over the time
after the first). The speedup is the ratio of those unrounded rates; rates
are shown with enough significant digits that the ratio of the shown figures
agrees with the shown speedup.

A speedup is called one only when it is larger than its own noise: the spread of
the per-round speedups (about two standard errors of their logarithm), and only
when the draft did the work: a speculative side whose draft tokens were a small
share of its reply says "the draft barely ran (N of M tokens)" instead, whatever
the clock says (the difference is then the machine's, not the draft's).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

BARELY_RAN = 0.1  # accepted draft tokens below this share of the reply: the draft barely ran


class Side(str, Enum):
    PLAIN = "plain"
    SPEC = "spec"


def schedule(rounds: int) -> list[Side]:
    """The order of ``2 * rounds`` runs: ABBA pairs, so linear drift weighs both sides alike."""
    if rounds < 1:
        raise ValueError("a comparison needs at least one round")
    order: list[Side] = []
    for r in range(rounds):
        pair = [Side.PLAIN, Side.SPEC] if r % 2 == 0 else [Side.SPEC, Side.PLAIN]
        order.extend(pair)
    return order


@dataclass
class RunFigures:
    """What one run measured: the reply's tokens and its decode time (after the first token)."""

    tokens: int
    decode_s: float
    text: str = ""
    drafted: int | None = None  # draft tokens proposed (None: not known)
    accepted: int | None = None  # of them accepted

    @property
    def rate(self) -> float:
        """Tokens per second after the first token (0 when nothing was timed)."""
        return (self.tokens - 1) / self.decode_s if self.tokens > 1 and self.decode_s > 0 else 0.0


def first_difference(a: str, b: str) -> int:
    """Index of the first differing character, or -1 when identical."""
    if a == b:
        return -1
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def significant(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, never in exponent form (0.0312, 17.4, 1234)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:.{digits - 1}f}" if math.isfinite(x) else str(x)
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    return f"{x:.{decimals}f}"


@dataclass
class Comparison:
    """The runs of one comparison so far, per side, and what they add up to."""

    runs: dict[Side, list[RunFigures]] = field(
        default_factory=lambda: {Side.PLAIN: [], Side.SPEC: []})

    def add(self, side: Side, run: RunFigures) -> None:
        self.runs[side].append(run)

    def rate(self, side: Side) -> float:
        """Total tokens after each run's first over total decode time, unrounded."""
        runs = self.runs[side]
        tokens = sum(max(r.tokens - 1, 0) for r in runs)
        seconds = sum(r.decode_s for r in runs)
        return tokens / seconds if seconds > 0 else 0.0

    @property
    def complete_rounds(self) -> int:
        return min(len(self.runs[Side.PLAIN]), len(self.runs[Side.SPEC]))

    @property
    def speedup(self) -> float:
        """Speculative rate over plain rate (0 until both sides have a timed run)."""
        plain = self.rate(Side.PLAIN)
        return self.rate(Side.SPEC) / plain if plain > 0 else 0.0

    def round_speedups(self) -> list[float]:
        """The speedup of each complete round on its own (its spread shows the noise)."""
        out = []
        for p, s in zip(self.runs[Side.PLAIN], self.runs[Side.SPEC], strict=False):
            if p.rate > 0:
                out.append(s.rate / p.rate)
        return out

    def texts(self, side: Side) -> Sequence[str]:
        return [r.text for r in self.runs[side]]

    def difference(self) -> int:
        """First character where a speculative text differs from the plain one (-1: none)."""
        plain = self.texts(Side.PLAIN)
        if not plain:
            return -1
        reference = plain[0]
        for text in [*plain[1:], *self.texts(Side.SPEC)]:
            d = first_difference(reference, text)
            if d >= 0:
                return d
        return -1

    def summary(self) -> str:
        """``Speedup 1.11×   (0.312 vs 0.280 tok/s, 3 rounds, per round 1.08–1.15×)   ·   faster …``."""
        p, s = self.rate(Side.PLAIN), self.rate(Side.SPEC)
        text = f"Speedup {significant(self.speedup, 3)}×   ({significant(s, 3)} vs " \
               f"{significant(p, 3)} tok/s"
        rounds = self.complete_rounds
        text += f", {rounds} round{'s' if rounds != 1 else ''}"
        per_round = self.round_speedups()
        if len(per_round) > 1:
            text += f", per round {significant(min(per_round), 3)}–" \
                    f"{significant(max(per_round), 3)}×"
        return f"{text})   ·   {self.judgement()}"

    def noise(self) -> float | None:
        """The relative noise of the speedup from the per-round spread: about two standard
        errors of the rounds' log speedups (0.08: ±8%); None with fewer than two rounds."""
        logs = [math.log(r) for r in self.round_speedups() if r > 0]
        if len(logs) < 2:
            return None
        return math.exp(2.0 * statistics.stdev(logs) / math.sqrt(len(logs))) - 1.0

    def draft_share(self) -> tuple[int, int] | None:
        """(draft tokens accepted, tokens) over the speculative runs; None when not known."""
        runs = self.runs[Side.SPEC]
        if not runs or any(r.accepted is None for r in runs):
            return None
        return sum(r.accepted or 0 for r in runs), sum(r.tokens for r in runs)

    def judgement(self) -> str:
        """Faster, slower, or no clear difference (the rounds disagree on the side of 1, or
        the difference is within its own noise); 'the draft barely ran' when it did."""
        share = self.draft_share()
        if share is not None and share[1] > 0 and share[0] < BARELY_RAN * share[1]:
            return f"the draft barely ran ({share[0]} of {share[1]} tokens): no speedup to credit it with"
        per_round = self.round_speedups()
        if len(per_round) > 1 and min(per_round) <= 1.0 <= max(per_round):
            return "no clear difference: the rounds disagree"
        noise = self.noise()
        if self.speedup <= 0:
            return "nothing timed to compare"
        if noise is not None and abs(math.log(self.speedup)) <= math.log1p(noise):
            return f"no clear difference: within its own noise (±{noise:.0%})"
        if self.speedup > 1.0:
            return "faster with the draft" + (f" (beyond its ±{noise:.0%} noise)" if noise is not None else "")
        return "slower with the draft on this machine"


def identity_sentence(difference: int, exact_expected: bool) -> str:
    """What the page says about the texts.

    ``exact_expected``: greedy decoding, or seeded sampling under the coupled rule,
    where the reply depends only on the seed and the target, so every run must
    give the same text; a difference there is a defect worth reporting.
    """
    if difference < 0:
        return "texts identical ✓"
    where = f"texts differ from character {difference}"
    if exact_expected:
        return f"{where} ✗ (the same seed must give the same text: please report)"
    return f"{where} (rejection sampling draws differently in each mode: expected)"
