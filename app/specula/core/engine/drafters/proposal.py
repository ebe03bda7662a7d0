"""What a drafter hands the generator, and what the generator asks of it: the proposal
types (a chain or a token tree with what the acceptance rule needs), the request, where
a proposal comes from, and the lookup match codes a proposal reports.

These are plain records with no drafter behind them, so every drafter, the verifiers
and the policies import them from here without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from specula.core.engine.events import TokenOrigin
from specula.core.engine.sampling.rules import F32, AcceptanceRule, SamplingParams
from specula.core.engine.stats import StepShape

if TYPE_CHECKING:
    from specula.core.engine.grammar.state import GrammarState

# A proposal from the n-gram cache reports match CACHE_MATCH + n (n: the n-gram length
# behind its first token), a context match reports n alone: the policy's acceptance
# table keeps the two apart.
CACHE_MATCH = 10
# A conversation match of the longest n-gram reports how far back the agreement goes:
# a reply copying pasted text agrees with it for dozens of tokens, a stock phrase for
# a few. Codes ngram_max .. ngram_max + 3 for 4-7, 8-15, 16-31 and 32+ tokens.
EXTENT_BUCKETS = (8, 16, 32)


def long_copy(code: int, ngram_max: int = 4) -> bool:
    """Whether a match code says the reply is copying earlier text: the longest n-gram,
    agreeing with the text before it for at least EXTENT_BUCKETS[0] tokens."""
    return ngram_max < code < CACHE_MATCH


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
        return not self.params.greedy and self.params.acceptance_rule is AcceptanceRule.REJECTION


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
    source: TokenOrigin = TokenOrigin.TARGET  # the drafter asked (TARGET: none)
    match_len: int = 0  # lookup: length of the matched n-gram
    n_decodes: int = 0  # draft llama_decode calls this step
    catchup: int = 0  # tokens the draft had to catch up on before drafting
    catchup_s: float = 0.0  # of draft_s: that catch-up, when it fed tokens the draft sat out for
    tree: TokenTree | None = None  # set when the proposal is a token tree

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def token_source(self) -> TokenOrigin:
        """The origin of an accepted token of this proposal: its drafter's, but for a
        lookup the n-gram cache made (its match code says so)."""
        if self.source is TokenOrigin.LOOKUP and self.match_len >= CACHE_MATCH:
            return TokenOrigin.NGRAM_CACHE
        return self.source

    @property
    def shape(self) -> StepShape:
        """What verifying this proposal is: a plain step, a chain or a tree."""
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


@dataclass
class TreeNode:
    token: int
    parent: int  # index into TokenTree.nodes, -1 for a child of the root (the pending token)
    depth: int  # 1 for children of the root
    prob: float  # the draft's probability of this token given its parent
    cum: float  # product of probs along the path
    seq: int = -1  # draft-side sequence while the node is expanded
    children: list[int] = field(default_factory=list)


@dataclass
class TokenTree:
    nodes: list[TreeNode] = field(default_factory=list)
    root_children: list[int] = field(default_factory=list)

    def children_of(self, idx: int) -> list[int]:
        return self.root_children if idx < 0 else self.nodes[idx].children

    def leaves(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if not n.children]

    def top_path(self) -> list[int]:
        """The draft's own chain through the tree: each level's most likely node (a node's
        first child is its most likely: children are added in order of probability)."""
        return [self.nodes[i].token for i in self.top_nodes()]

    def top_nodes(self) -> list[int]:
        """The indices of :meth:`top_path`'s nodes, shallowest first."""
        out: list[int] = []
        kids = self.root_children
        while kids:
            out.append(kids[0])
            kids = self.nodes[kids[0]].children
        return out

    def chain_run(self, accepted: Sequence[int]) -> tuple[int, int]:
        """(how many of the ``accepted`` tokens the draft's chain would have had accepted,
        how deep that chain reaches in the tree): the count where the accepted path leaves
        :meth:`top_path` is exact; where it never leaves it, the chain had at least that
        many (it might have drafted further than the tree's depth)."""
        path = self.top_path()
        n = 0
        for tok, mine in zip(accepted, path, strict=False):
            if tok != mine:
                break
            n += 1
        return n, len(path)

    def descends(self, node: int, ancestor: int) -> bool:
        while node >= 0:
            if node == ancestor:
                return True
            node = self.nodes[node].parent
        return False
