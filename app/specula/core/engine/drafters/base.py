"""The drafter seam: what every way of proposing tokens implements.

In the spirit of llama.cpp's ``common_speculative_impl`` (common/speculative.cpp):
a drafter is told when a reply begins, proposes a chain (or a token tree) when
asked and is told what was kept (the reply's counts, per position too, are the
generator's: ``GenerationStats``). The generator only
talks to this protocol: it never asks what a drafter is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

import numpy as np

from specula.core.engine.events import Source
from specula.core.engine.sampling import topk
from specula.core.engine.sampling.rules import F32, Rule, SamplingParams
from specula.core.engine.stats import StepShape

if TYPE_CHECKING:
    from specula.core.engine.drafters.tree import TokenTree
    from specula.core.engine.grammar.state import GrammarState


class DraftSource(str, Enum):
    """Where a step's proposal comes from (what a policy asks for)."""

    NONE = "none"  # a plain target step
    DRAFT = "draft"  # the draft model, a chain
    TREE = "tree"  # the draft model, a token tree
    LOOKUP = "lookup"  # prompt lookup (no model)
    MTP = "mtp"  # the target's own MTP (NextN) layers, a chain


KeepRule = Callable[[int, float, float], tuple[bool, bool]]


@dataclass
class DraftRequest:
    """What the generator asks of a drafter for one step."""

    committed: Sequence[int]
    k: int  # chain: at most k tokens; tree: at most this depth
    params: SamplingParams
    seed: int  # the reply's seed (the coupled rule's noise key)
    rng: np.random.Generator  # the reply's generator (rejection sampling)
    keep: KeepRule  # the policy's stop rule: (i, p_top, entropy) -> (keep it, draft another)
    draft_min: int = 0
    tree_budget: int = 0  # nodes (trees)
    tree_width: int = 0  # children per node (trees)
    lookup_tokens: list[int] = field(default_factory=list)  # what the plan chose (lookup)
    grammar: GrammarState | None = None  # the reply's grammar at ``committed`` (clone it)
    confidence: bool = True  # False: nothing reads the draft's p_top/entropy (greedy skips them)

    @property
    def want_q(self) -> bool:
        """Rejection sampling needs the draft's distribution of every drafted token."""
        return not self.params.greedy and self.params.acceptance_rule == Rule.REJECTION.value


@dataclass
class Proposal:
    """A chain of draft tokens (or a tree) with what the acceptance rule needs."""

    tokens: list[int] = field(default_factory=list)
    q: list[F32 | None] = field(default_factory=list)  # distribution each token was drawn from
    token_probs: list[float] = field(default_factory=list)  # q(token), the "draft probability"
    top_probs: list[float] = field(default_factory=list)  # the draft's confidence per position
    entropies: list[float] = field(default_factory=list)
    draft_s: float = 0.0  # time in the draft's llama_decode
    host_s: float = 0.0  # the drafter's time outside llama_decode (set by the generator)
    source: DraftSource = DraftSource.NONE
    match_len: int = 0  # lookup: length of the matched n-gram
    n_decodes: int = 0  # draft llama_decode calls this step
    catchup: int = 0  # tokens the draft had to catch up on before drafting
    catchup_s: float = 0.0  # of draft_s: that catch-up, when it fed tokens the draft sat out for
    tree: TokenTree | None = None  # set when the proposal is a token tree

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def token_source(self) -> Source:
        """How the GUI colours an accepted token of this proposal."""
        if self.source is DraftSource.LOOKUP:
            return Source.LOOKUP
        return Source.MTP if self.source is DraftSource.MTP else Source.DRAFT

    @property
    def shape(self) -> StepShape:
        if not self.tokens:
            return StepShape.PLAIN
        return StepShape.TREE if self.tree is not None else StepShape.CHAIN

    def append(self, token: int, q: F32 | None, token_prob: float, top_prob: float,
               entropy: float) -> None:
        self.tokens.append(token)
        self.q.append(q)
        self.token_probs.append(token_prob)
        self.top_probs.append(top_prob)
        self.entropies.append(entropy)

    def truncate(self, n: int) -> None:
        for lst in (self.tokens, self.q, self.token_probs, self.top_probs, self.entropies):
            del lst[n:]
        if n == 0:
            self.tree = None


class Drafter(Protocol):
    source: DraftSource

    @property
    def available(self) -> bool:
        """False once the drafter stopped for the rest of this reply (see ``stopped``)."""

    @property
    def stopped(self) -> str:
        """"" or the sentence saying why the drafter stopped for the rest of the reply."""

    def begin(self, prompt: Sequence[int], *, sync: bool) -> None:
        """A reply starts (``sync``: feed the prompt now, while the target prefills)."""

    def lag(self, committed: Sequence[int]) -> int:
        """Tokens the drafter must catch up on before it can propose."""

    def preview(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        """What it would propose without any decode, and how sure (lookup: the n-gram
        length), so a policy can weigh it; ([], 0) for drafters that must decode."""

    def propose(self, req: DraftRequest) -> Proposal:
        """Up to ``req.k`` tokens (or a tree) after ``req.committed``; empty when it cannot."""

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        """After verification: ``committed`` is the reply so far; drop what was not kept."""


def keep_short_draft(n_drafted: int, draft_min: int, rule: str) -> bool:
    """*Patch point*, the one place a drafted chain may be thrown away: whether to keep a
    chain of ``n_drafted`` tokens when ``draft_min`` asks for at least that many.

    The length of a chain cut by a probability threshold depends on the drafted tokens,
    so under rejection sampling a discard would keep only drafts whose tokens made them
    long, which are then no longer distributed as q: the output would be biased. There
    the short draft is kept. Under the coupled rule and greedy the output does not
    depend on the proposal at all, so dropping it (as LM Studio and llama.cpp do)
    only saves the verify cost of a draft that was not expected to pay.
    """
    if n_drafted == 0 or n_drafted >= draft_min:
        return True
    return rule == Rule.REJECTION.value  # sample-and-match, like coupled, ignores q


def softmax_stats(logits: F32, *, shared: bool = False) -> tuple[int, float, float]:
    """(argmax, its probability, entropy in nats) of the plain softmax: the draft's
    confidence features. ``shared``: a sampling transform follows on the same row, so
    the features come from its top candidates and share their selection
    (:func:`topk.top_softmax_stats`); otherwise exact (:func:`topk.softmax_stats`)."""
    return topk.top_softmax_stats(logits) if shared else topk.softmax_stats(logits)
