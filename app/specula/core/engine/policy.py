"""How much to draft at each step, and from where.

Each step the generator asks the policy for a :class:`Plan` (draft model,
prompt lookup, or nothing: a plain target step, and at most how many tokens),
then asks :meth:`DraftPolicy.keep_drafting` after each drafted token whether to
keep it and whether to draft another, and finally reports the step back with
:meth:`DraftPolicy.observe`.

:class:`FixedPolicy` is LM Studio's model (max/min draft size and a probability
cut-off); :class:`TreePolicy` always drafts a tree. The adaptive policy, which
also serves prompt lookup alone, lives in :mod:`specula.core.engine.adaptive`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from specula.core.engine.config import SpecConfig
from specula.core.engine.stats import StepRecord


@dataclass
class Plan:
    source: str  # "none" (plain step) | "draft" | "tree" | "lookup"
    k: int  # at most this many tokens
    lookup_tokens: list[int] | None = None


@dataclass
class PlanInput:
    room: int  # tokens that may still be drafted (context and max_tokens)
    has_draft: bool
    lookup_tokens: list[int]  # what prompt lookup would propose ([] when nothing matches)
    lookup_match: int  # its n-gram length
    draft_lag: int = 1  # tokens the draft must be fed before it can propose


@dataclass
class Outcome:
    """What a step taught: per drafted token its confidence and whether it was accepted."""

    source: str
    top_probs: list[float]
    entropies: list[float]
    n_accepted: int
    lookup_match: int
    record: StepRecord


class DraftPolicy(Protocol):
    name: str

    def plan(self, inp: PlanInput) -> Plan:
        """What to draft this step."""

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        """After the draft produced token ``i``: (keep it, draft another)."""

    def observe(self, outcome: Outcome) -> None:
        """Learn from a finished step."""

    def sync_draft_at_prefill(self) -> bool:
        """Whether to feed the prompt to the draft model during prefill."""

    def finish(self) -> None:
        """The reply is over (persist what was learnt)."""


class StaticPolicy:
    """A policy that learns nothing: the fixed modes share these defaults."""

    name = "static"
    sync_at_prefill = False

    def __init__(self, cfg: SpecConfig | None = None) -> None:
        self.cfg = cfg or SpecConfig()

    def plan(self, inp: PlanInput) -> Plan:
        return Plan("none", 0)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return True, True

    def observe(self, outcome: Outcome) -> None:
        return None

    def sync_draft_at_prefill(self) -> bool:
        return self.sync_at_prefill

    def finish(self) -> None:
        return None


class PlainPolicy(StaticPolicy):
    """No drafting: one target token per step."""

    name = "plain"


class FixedPolicy(StaticPolicy):
    """Always draft ``draft_max`` tokens with the draft model, cut short below ``p_min``."""

    name = "chain"
    sync_at_prefill = True

    def plan(self, inp: PlanInput) -> Plan:
        k = min(self.cfg.draft_max, inp.room)
        return Plan("draft", k) if k > 0 and inp.has_draft else Plan("none", 0)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        keep = p_top >= self.cfg.p_min
        return keep, keep


class TreePolicy(StaticPolicy):
    """Always draft a token tree of ``tree_budget`` nodes, ``tree_width`` children per node."""

    name = "tree"
    sync_at_prefill = True

    def plan(self, inp: PlanInput) -> Plan:
        if inp.room <= 0 or not inp.has_draft:
            return Plan("none", 0)
        return Plan("tree", self.cfg.tree_budget)
