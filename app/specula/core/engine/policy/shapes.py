"""Chain or tree: the measured rate of each shape of draft-model step, and the choice.

A tree verifies more tokens per step than a chain for a better chance that one path
is long; whether that pays depends on the machine's verify curve and on the text, so
each shape's rate (tokens/s of its steps, everything in the step counted) is measured
and the faster one drafts. A shape's rate is the median of its last WINDOW steps (the
saved rate one vote among them): one lucky tree step cannot make trees the default,
and a tree that proposes badly loses its turn after a step or two.

A tree is tried only where its best case (every level accepted) could beat the
chain and plain decoding, never in a first reply (AFTER chain steps first), TRIES
times per session while its rate is unmeasured, then every RETRY draft steps.

Once a tree has run this session, the choice rests on the two shapes on the *same*
text: each tree step also says what the draft's chain would have had there (its top
path is that chain), and the tree keeps the turn while the median of those paired
ratios beats the chain. Rates measured on different stretches of text mostly compare
the text: a tree tried after a hard stretch, against the chain rate measured there,
kept its turn through two easy replies where a chain ran 1.2x faster.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable

TRIES = 2  # tree trials per session while its rate is unmeasured
AFTER = 32  # chain steps in a session before a tree is tried (never in a first reply)
RETRY = 64  # draft steps between re-trials of a tree measured slower than the chain
WINDOW = 5  # draft-model steps per shape whose median rate is the shape's rate
CHAIN, TREE = "draft", "tree"  # the keys: TokenOrigin values (saved with the policy's state)


class ShapeRates:
    """Measured tokens/s of draft-model steps by shape, and which shape drafts next."""

    def __init__(self) -> None:
        self.rate: dict[str, float] = {}  # shape -> tokens/s (saved between sessions)
        self._window: dict[str, deque[float]] = {}  # this session's step rates by shape
        self.draft_steps = 0  # draft-model steps planned this session
        self.tree_tries = 0
        # this session's tree steps: the tree's rate over the chain's on the same text
        self._paired: deque[float] = deque(maxlen=WINDOW)

    def observe(self, shape: str, rate: float) -> None:
        """One step's rate: the shape's rate becomes the median of its recent steps."""
        win = self._window.setdefault(shape, deque(maxlen=WINDOW))
        if not win and shape in self.rate:
            win.append(self.rate[shape])
        win.append(rate)
        self.rate[shape] = float(statistics.median(win))

    def observe_pair(self, tree_rate: float, chain_rate: float) -> None:
        """A tree step's rate beside the rate the draft's chain would have had on its text."""
        if chain_rate > 0:
            self._paired.append(tree_rate / chain_rate)

    def forget(self) -> None:
        """Drop the measured rates (the costs they were measured under are stale)."""
        self.rate = {}
        self._window = {}
        self._paired.clear()

    def choose_tree(self, plain: float, margin: float, tree_best_case: Callable[[], float]) -> bool:
        """The next draft-model step: counted, and a tree (True) or a chain. A tree tried
        on trust (:meth:`wants_tree` says "try") counts as one of its tries."""
        self.draft_steps += 1
        want = self.wants_tree(plain, margin, tree_best_case)
        if want == "try":
            self.tree_tries += 1
        return want is not None

    def wants_tree(self, plain: float, margin: float, tree_best_case: Callable[[], float]) -> str | None:
        """Whether the next draft-model step (the ``draft_steps``-th) is a tree: "measured"
        (its rate beats the chain's), "try" (a trial), None (a chain); ``plain`` is plain
        decoding's tokens/s, ``tree_best_case`` a tree's tokens/s were every level right."""
        c_rate, t_rate = self.rate.get(CHAIN), self.rate.get(TREE)
        if c_rate is None:
            return None
        if self._paired and t_rate is not None:
            # measured on the same text this session: the paired ratio decides whether the
            # tree keeps the turn (a tree found slower is retried below, as any other)
            if statistics.median(self._paired) > 1.0 + margin and t_rate > plain * (1.0 + margin):
                return "measured"
        elif t_rate is not None and t_rate > max(c_rate, plain) * (1.0 + margin):
            return "measured"
        if tree_best_case() <= max(c_rate, plain) or self.draft_steps < AFTER:
            return None
        untried = t_rate is None and self.tree_tries < TRIES
        if untried or (t_rate is not None and self.draft_steps % RETRY == 0):
            return "try"
        return None
