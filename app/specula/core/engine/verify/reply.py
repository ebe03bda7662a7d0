"""What one reply's choices depend on: its settings, its seed, its grammar state.

The target's own token at a position (greedy, the coupled rule, or a sample of p)
and its distribution p where a draft token is judged are decided here, with the
grammar's mask when the reply has one (specula.core.engine.grammar.state), so that every
drafting mode verifies against the same constrained distribution.
"""

from __future__ import annotations

import numpy as np

from specula.core.engine.config import SpecConfig
from specula.core.engine.grammar import state as grammar
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.sampling.logprobs import token_logprobs
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.verify.result import TokenLogprobs


class ReplySampling:
    """One reply's sampling state: its settings, resolved seed, random generator and
    grammar, from which the target's own token and its distribution p are decided."""

    def __init__(self, params: SamplingParams, spec: SpecConfig, seed: int) -> None:
        self.params = params
        self.spec = spec
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.rule = params.acceptance_rule
        self.grammar: GrammarState | None = None  # at the committed text, advanced by took()

    def choose(self, logits: np.ndarray, history: list[int], position: int) -> int:
        """The target's own token at ``position`` (greedy, coupled, or a sample of p)."""
        g = self.grammar
        if self.rule is sampling.AcceptanceRule.GREEDY:
            return topk.argmax(logits) if g is None else int(
                grammar.target_candidates(g, logits, self.params)[0][0])
        lg = sampling.apply_penalties(logits, history, self.params)
        if self.rule is sampling.AcceptanceRule.COUPLED:
            if g is None:
                return sampling.coupled_pick(lg, self.params, self.seed, position)
            ids, p = grammar.target_candidates(g, lg, self.params)
            return sampling.coupled_choice(ids, p, self.seed, position)
        return sampling.sample(self.target_probs(lg), self.rng)

    def target_probs(self, logits: np.ndarray, *, drafted: bool = False) -> np.ndarray:
        """The target's sampling distribution p, dense (constrained by the grammar, if any);
        ``drafted``: at a position where a draft token is judged against it."""
        if self.grammar is None:
            return sampling.probs(logits, self.params)
        if drafted:
            return grammar.verify_probs(self.grammar, logits, self.params)
        return grammar.target_probs(self.grammar, logits, self.params)

    def took(self, logits: np.ndarray, token: int) -> TokenLogprobs | None:
        """``token`` joins the reply at the position ``logits`` verified: advance the
        grammar past it; its logprobs when the request asks for them."""
        if self.grammar is not None:
            self.grammar.advance(token)
        n = self.params.logprobs
        return None if n is None else token_logprobs(logits, token, n)
