"""How many tokens to draft at each step.

:class:`FixedPolicy` is LM Studio's model (max/min draft size and a probability
cut-off applied while drafting). The adaptive policy lives in
:mod:`specula.core.engine.adaptive`.
"""

from __future__ import annotations

from typing import Protocol

from specula.core.engine.config import SpecConfig
from specula.core.engine.stats import StepRecord


class DraftPolicy(Protocol):
    name: str

    def draft_length(self, room: int) -> int:
        """Tokens to draft this step (0 = a plain target step); ``room`` caps it."""

    def p_min(self) -> float:
        """Stop drafting when the draft's top probability falls below this."""

    def observe(self, record: StepRecord, top_probs: list[float], entropies: list[float]) -> None:
        """Learn from a finished step."""


class FixedPolicy:
    """Always draft ``draft_max`` (cut short by ``p_min``)."""

    name = "chain"

    def __init__(self, cfg: SpecConfig) -> None:
        self.cfg = cfg

    def draft_length(self, room: int) -> int:
        return max(0, min(self.cfg.draft_max, room))

    def p_min(self) -> float:
        return self.cfg.p_min

    def observe(self, record: StepRecord, top_probs: list[float], entropies: list[float]) -> None:
        return None


class PlainPolicy:
    name = "plain"

    def draft_length(self, room: int) -> int:
        return 0

    def p_min(self) -> float:
        return 1.0

    def observe(self, record: StepRecord, top_probs: list[float], entropies: list[float]) -> None:
        return None
