"""What one verification decided, as one value: the verify walks (chain.accept_chain,
tree.verify_tree) return it and the generator's emission reads it, the way a
rejection sampler is a function of (draft tokens, draft probabilities, target logits).

The walks still advance the reply's state that the next step depends on (its random
generator, its grammar); everything the emission needs about this step is here.
"""

from __future__ import annotations

from dataclasses import dataclass

from specula.core.engine.events import TokenOrigin
from specula.core.engine.sampling.rules import AcceptanceRule

NewToken = tuple[int, TokenOrigin, float | None]  # token, where it came from, draft probability
TokenLogprobs = tuple[float, list[tuple[int, float]]]  # the token's logprob, the n best


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """One verify step's outcome.

    ``tokens``: the accepted draft tokens, then one token of the target's own (the
    correction at the first rejection, or the bonus after the last accepted one).
    ``logprobs``: one per token, same order; ``None`` entries when the request asked for
    none. ``rule``: the rule that judged the draft tokens (a tree under rejection sampling
    is walked by sample-and-match). ``accepted``: draft tokens kept, ``relaxed`` of them
    by the lossy rules (their origin says ``RELAXED``).
    """

    tokens: tuple[NewToken, ...]
    logprobs: tuple[TokenLogprobs | None, ...]
    rule: AcceptanceRule
    accepted: int

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("a verification emits at least the target's own token")
        if len(self.logprobs) != len(self.tokens):
            raise ValueError(f"{len(self.logprobs)} logprobs for {len(self.tokens)} tokens")
        if self.accepted != len(self.tokens) - 1:
            raise ValueError(f"accepted={self.accepted} does not fit {len(self.tokens)} tokens")
        if self.tokens[-1][1] is not TokenOrigin.TARGET:
            raise ValueError("a verification ends with a token of the target's own")

    @property
    def relaxed(self) -> int:
        """Draft tokens kept only by the lossy relaxed rule."""
        return sum(1 for _t, origin, _p in self.tokens if origin is TokenOrigin.RELAXED)

    @property
    def bonus(self) -> int:
        """The target's own token that ends the step (correction or bonus)."""
        return self.tokens[-1][0]
