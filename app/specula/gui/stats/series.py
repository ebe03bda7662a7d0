"""Rolling tokens/s and acceptance over one reply, from per-step totals (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass, field

from specula.gui.engine_worker import StepPoint

WINDOW_STEPS = 8
WINDOW_S = 0.25  # and at least this much time, so one fast step does not spike the line


@dataclass
class ChartPoint:
    tokens: int  # x: tokens so far in the reply
    rate: float  # tokens/s over the last few steps
    acceptance: float  # accepted/drafted over the last few steps (0..1); -1 when nothing drafted


@dataclass
class RollingSeries:
    window: int = WINDOW_STEPS
    window_s: float = WINDOW_S
    steps: list[StepPoint] = field(default_factory=list)
    points: list[ChartPoint] = field(default_factory=list)

    def clear(self) -> None:
        self.steps.clear()
        self.points.clear()

    def add(self, step: StepPoint) -> None:
        self.steps.append(step)
        i = max(0, len(self.steps) - 1 - self.window)
        while i > 0 and step.total_s - self.steps[i].total_s < self.window_s:
            i -= 1
        ref = self.steps[i] if len(self.steps) > 1 else None
        if ref is None:
            rate = step.tokens / step.total_s if step.total_s > 0 else 0.0
            drafted, accepted = step.drafted, step.accepted
        else:
            dt = step.total_s - ref.total_s
            rate = (step.tokens - ref.tokens) / dt if dt > 0 else 0.0
            drafted, accepted = step.drafted - ref.drafted, step.accepted - ref.accepted
        acc = accepted / drafted if drafted > 0 else -1.0
        self.points.append(ChartPoint(step.tokens, rate, acc))
