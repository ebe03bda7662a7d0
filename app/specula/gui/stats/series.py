"""Rolling tokens/s and acceptance over one reply, from per-step totals (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass, field

from specula.gui.workers import StepPoint

WINDOW_STEPS = 8


@dataclass
class ChartPoint:
    tokens: int  # x: tokens so far in the reply
    rate: float  # tokens/s over the last few steps
    acceptance: float  # accepted/drafted over the last few steps (0..1); -1 when nothing drafted


@dataclass
class RollingSeries:
    window: int = WINDOW_STEPS
    steps: list[StepPoint] = field(default_factory=list)
    points: list[ChartPoint] = field(default_factory=list)

    def clear(self) -> None:
        self.steps.clear()
        self.points.clear()

    def add(self, step: StepPoint) -> None:
        self.steps.append(step)
        ref = self.steps[max(0, len(self.steps) - 1 - self.window)] if len(self.steps) > 1 else None
        if ref is None:
            rate = step.tokens / step.total_s if step.total_s > 0 else 0.0
            drafted, accepted = step.drafted, step.accepted
        else:
            dt = step.total_s - ref.total_s
            rate = (step.tokens - ref.tokens) / dt if dt > 0 else 0.0
            drafted, accepted = step.drafted - ref.drafted, step.accepted - ref.accepted
        acc = accepted / drafted if drafted > 0 else -1.0
        self.points.append(ChartPoint(step.tokens, rate, acc))
