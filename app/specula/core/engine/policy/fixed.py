"""How much to draft at each step, and from where.

Each step the generator asks the policy for a :class:`Plan` (draft model,
prompt lookup, or nothing: a plain target step, and at most how many tokens),
then asks :meth:`DraftPolicy.keep_drafting` after each drafted token whether to
keep it and whether to draft another, and finally reports the step back with
:meth:`DraftPolicy.observe`.

:class:`ChainPolicy` is LM Studio's model (max/min draft size and a probability
cut-off); :class:`TreePolicy` always drafts a tree. Each policy is named after the
``Mode`` it serves (``name`` is the mode's value): ``PlainPolicy`` "plain",
``ChainPolicy`` "chain", ``TreePolicy`` "tree" here, ``MTPPolicy`` "mtp" in
:mod:`~specula.core.engine.policy.mtp_choice`, ``AdaptivePolicy`` "adaptive" in
:mod:`~specula.core.engine.policy.adaptive` and ``LookupPolicy`` "lookup" (the adaptive
cost model restricted to prompt lookup) in :mod:`~specula.core.engine.policy.lookup`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from specula.core.engine.config import SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.stats import StepRecord
from specula.core.engine.verdict import PolicyVerdict


@dataclass
class Plan:
    source: TokenOrigin  # NONE: a plain step
    k: int  # at most this many tokens (a tree: its node budget)
    lookup_tokens: list[int] | None = None


@dataclass
class PlanInput:
    room: int  # tokens that may still be drafted (context and max_tokens)
    available: frozenset[TokenOrigin]  # the drafters that can propose now
    lookup_tokens: list[int] = field(default_factory=list)  # what lookup would propose
    lookup_match: int = 0  # its n-gram length
    draft_lag: int = 1  # tokens the draft must be fed before it can propose

    @property
    def has_draft(self) -> bool:
        return TokenOrigin.CHAIN in self.available


@dataclass
class Outcome:
    """What a step taught: per drafted token its confidence and whether it was accepted."""

    source: TokenOrigin
    top_probs: list[float]
    entropies: list[float]
    n_accepted: int
    lookup_match: int
    record: StepRecord
    # A tree step: of its accepted tokens, how many the draft's own chain (the tree's top
    # path) would have had accepted, and that path's length (TokenTree.chain_run); -1 and 0
    # for other steps.
    chain_run: int = -1
    chain_depth: int = 0


class DraftPolicy(Protocol):
    """What every mode's policy answers: plan, observe, verdict, clear (and the draft's feed).

    The engine knows policies through this protocol alone: which policy serves a mode is
    the registry's business (``registry.py``)."""

    name: str  # the mode's name, for the statistics
    wants: frozenset[TokenOrigin]  # the drafters this policy may plan with
    cfg: SpecConfig  # the reply's settings (the engine sets them before each reply)

    @property
    def reads_confidence(self) -> bool:
        """Whether ``keep_drafting`` or ``observe`` look at the draft's confidence (its top
        probability and entropy); when not, a greedy draft skips computing them (an exp over
        the whole vocabulary per drafted token, most of a greedy chain's host work)."""

    def plan(self, inp: PlanInput) -> Plan:
        """What to draft this step."""

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        """After the draft produced token ``i``: (keep it, draft another)."""

    def observe(self, outcome: Outcome) -> None:
        """Learn from a finished step."""

    def sync_draft_at_prefill(self) -> bool:
        """Whether to feed the prompt to the draft model during prefill."""

    def sync_window(self) -> int | None:
        """When the draft is fed at prefill to probe it, the most tokens of the conversation
        it need be fed past what it holds (the rest is skipped for this reply); None: all."""

    def sync_after(self) -> int:
        """When the draft is fed at prefill, the tokens the reply must have before the feed
        runs (0: after the first token, the target's alone); a reply that ends sooner never
        feeds it."""

    def finish(self) -> None:
        """The reply is over (persist what was learnt)."""

    def verdict(self) -> PolicyVerdict | None:
        """What the policy concluded about drafting after the last reply (None: a mode that
        judges nothing, or one that has not run)."""

    def clear(self) -> None:
        """Forget a verdict (the user's Re-check): the measured costs go, the next reply
        measures again. A policy that judges nothing has nothing to forget."""


class StaticPolicy:
    """A policy that learns nothing: the fixed modes share these defaults."""

    name = "static"
    wants: frozenset[TokenOrigin] = frozenset()
    sync_at_prefill = False

    def __init__(self, cfg: SpecConfig | None = None) -> None:
        self.cfg = cfg or SpecConfig()

    @property
    def reads_confidence(self) -> bool:
        return False  # keep_drafting keeps everything; observe learns nothing

    def plan(self, inp: PlanInput) -> Plan:
        return Plan(TokenOrigin.TARGET, 0)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return True, True

    def observe(self, outcome: Outcome) -> None:
        return None

    def sync_draft_at_prefill(self) -> bool:
        return self.sync_at_prefill

    def sync_window(self) -> int | None:
        return None  # a fixed mode drafts every step: the draft reads the whole conversation

    def sync_after(self) -> int:
        return 0

    def finish(self) -> None:
        return None

    def verdict(self) -> PolicyVerdict | None:
        return None  # a fixed mode judges nothing

    def clear(self) -> None:
        return None


class PlainPolicy(StaticPolicy):
    """No drafting: one target token per step."""

    name = "plain"


class ChainPolicy(StaticPolicy):
    """Always draft ``draft_max`` tokens with the draft model, cut short below ``p_min``."""

    name = "chain"
    wants = frozenset({TokenOrigin.CHAIN})
    sync_at_prefill = True

    def plan(self, inp: PlanInput) -> Plan:
        k = min(self.cfg.draft_max, inp.room)
        return Plan(TokenOrigin.CHAIN, k) if k > 0 and inp.has_draft else Plan(TokenOrigin.TARGET, 0)

    @property
    def reads_confidence(self) -> bool:
        # the p_min cut reads p_top; a relaxed accept reads each drafted token's probability
        return self.cfg.p_min > 0 or self.cfg.lossy

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        keep = p_top >= self.cfg.p_min
        return keep, keep


class TreePolicy(StaticPolicy):
    """Always draft a token tree of ``tree_budget`` nodes, ``tree_width`` children per node."""

    name = "tree"
    wants = frozenset({TokenOrigin.TREE})
    sync_at_prefill = True

    def plan(self, inp: PlanInput) -> Plan:
        if inp.room <= 0 or TokenOrigin.TREE not in inp.available:
            return Plan(TokenOrigin.TARGET, 0)
        return Plan(TokenOrigin.TREE, self.cfg.tree_budget)
