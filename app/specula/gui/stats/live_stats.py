"""The figures a reply shows while it runs and when it ends, computed once, here.

Why this module exists: a rate over a tiny interval is not a rate. Early in a
reply three tokens may arrive within half a millisecond, and tokens / seconds
then reads thousands of tokens per second. So a rate is shown only once the
reply has run for :data:`MIN_RATE_S` seconds *and* produced :data:`MIN_RATE_TOKENS`
tokens after the first one; before that the view shows "—". Acceptance is
counted over the tokens actually drafted, and "accepted per step" over the
steps that drafted (both defined once, on :class:`GenerationStats`, and shown
alike by the CLI, the server and the bench), so an adaptive reply that decodes
plainly most of the time does not read as "100 % acceptance, 0.40 accepted/step".

The live panel and the footer under a finished reply both format
:class:`LiveFigures` with the functions below, so they agree at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from specula.core.engine.stats import GenerationStats

MIN_RATE_S = 0.5  # a rate needs at least this much decoding time ...
MIN_RATE_TOKENS = 8  # ... and at least this many tokens after the first one
CHART_WINDOW_S = 1.0  # the chart's rolling rate looks back this far, and far enough
# to hold MIN_RATE_TOKENS tokens (or to the first token)
CHART_MIN_DRAFTED = 8  # a window's acceptance is drawn once it holds this many drafted tokens
# A stored reply's footer reads this many plain steps in a row in adaptive mode as
# "paused"; the live panel says "paused" only with the policy's verdict (``with_pause``).
PAUSED_AFTER_STEPS = 8
EPS_S = 1e-9  # float slack when comparing measured intervals with the thresholds
DASH = "—"
PAUSED_TEXT = "drafting paused: it is slower than plain on this machine"
# The adaptive policy's verdict said held_back (core/engine/verdict.py): the reply ended
# before the draft was fed, on a pair where drafting saves too little to repay that in a
# short answer. Said after "drafted in N of M steps".
HELD_BACK_TEXT = "a short answer on a pair where drafting barely pays runs without the draft"
# The verdict said stopped (core/engine/policy/stop_loss.py): the reply's draft steps lost
# more than a small share of it against plain steps, and it ran plain from there. Said
# instead of the pause it leaves, since it says why.
STOPPED_TEXT = "drafting stopped: in this reply it was slower than plain decoding"


@dataclass(frozen=True)
class StepPoint:
    """One verification step as the live view needs it (running totals after it)."""

    tokens: int  # tokens in the reply after this step
    total_s: float  # seconds since the reply started
    ttft_s: float  # time to the first token (0 until it arrived)
    drafted: int  # running totals
    accepted: int


@dataclass(frozen=True)
class ChartPoint:
    tokens: int  # x: tokens so far in the reply
    rate: float  # tokens/s over the rolling window (CHART_WINDOW_S and MIN_RATE_TOKENS)
    acceptance: float | None  # accepted / drafted over the window; None below CHART_MIN_DRAFTED


@dataclass(frozen=True)
class LiveFigures:
    """What the panel and the footer show; ``None`` means "not measurable yet"."""

    tokens: int
    drafted: int
    accepted: int
    rate: float | None  # tokens per second after the first token
    acceptance: float | None  # accepted / drafted
    accepted_per_step: float | None  # accepted / steps that drafted
    drafting_steps: int
    steps: int
    ttft_s: float | None
    mode: str
    paused: bool  # the adaptive policy stopped drafting because it does not pay
    held_back: bool = False  # it did not feed the draft for this short answer (verdict.py)
    stopped: bool = False  # its drafting was ended by the stop-loss (verdict.py)


def rate_or_none(tokens: int, ttft_s: float, total_s: float) -> float | None:
    """Tokens per second after the first token, or None while the window is too small."""
    decode_s = total_s - ttft_s
    after_first = tokens - 1
    if after_first < MIN_RATE_TOKENS or decode_s < MIN_RATE_S - EPS_S:
        return None
    return after_first / decode_s


@dataclass
class LiveStats:
    """Running figures for one reply, fed with every step (plain Python, no Qt)."""

    steps: list[StepPoint] = field(default_factory=list)
    chart: list[ChartPoint] = field(default_factory=list)

    def clear(self) -> None:
        self.steps.clear()
        self.chart.clear()

    def add(self, step: StepPoint) -> None:
        self.steps.append(step)
        point = self._chart_point(step)
        if point is not None:
            self.chart.append(point)

    def _chart_point(self, step: StepPoint) -> ChartPoint | None:
        """A point once the rolling window holds enough time and tokens; else None."""
        ref: StepPoint | None = None
        for old in reversed(self.steps[:-1]):
            if old.tokens < 1:
                break
            ref = old
            if (step.total_s - old.total_s >= CHART_WINDOW_S - EPS_S
                    and step.tokens - old.tokens >= MIN_RATE_TOKENS):
                break
        if ref is None:
            return None
        dt = step.total_s - ref.total_s
        dn = step.tokens - ref.tokens
        if dt < MIN_RATE_S - EPS_S or dn < MIN_RATE_TOKENS:
            return None
        drafted = step.drafted - ref.drafted
        accepted = step.accepted - ref.accepted
        acceptance = accepted / drafted if drafted >= CHART_MIN_DRAFTED else None
        return ChartPoint(step.tokens, dn / dt, acceptance)

    def figures(self, stats: GenerationStats | None) -> LiveFigures | None:
        """The figures after the latest step (``stats`` = the engine's running totals)."""
        if stats is None:
            return None
        return figures(stats)


def figures(stats: GenerationStats) -> LiveFigures:
    """Figures from the engine's totals (the per-step figure is the core's own)."""
    drafted, accepted = stats.drafted, stats.accepted
    paused = (stats.mode == "adaptive" and stats.steps >= PAUSED_AFTER_STEPS
              and (drafted == 0 or stats.plain_run >= PAUSED_AFTER_STEPS))
    return LiveFigures(
        tokens=stats.tokens,
        drafted=drafted,
        accepted=accepted,
        rate=rate_or_none(stats.tokens, stats.ttft_s, stats.total_s),
        acceptance=accepted / drafted if drafted > 0 else None,
        accepted_per_step=stats.accepted_per_drafting_step,
        drafting_steps=stats.drafting_steps,
        steps=stats.steps,
        ttft_s=stats.ttft_s if stats.tokens > 0 else None,
        mode=stats.mode,
        paused=paused,
    )


def with_pause(f: LiveFigures, paused: bool) -> LiveFigures:
    """``f`` saying drafting is paused exactly when the adaptive policy's verdict says so
    (what the chat header shows), not as a run of plain steps suggests."""
    return f if f.paused == paused else replace(f, paused=paused)


def with_held_back(f: LiveFigures, held_back: bool) -> LiveFigures:
    """``f`` saying why an adaptive reply did not use the draft, where the policy's verdict
    at its end said it held the draft back for a short answer."""
    return f if f.held_back == held_back else replace(f, held_back=held_back)


def with_stopped(f: LiveFigures, stopped: bool) -> LiveFigures:
    """``f`` saying that the policy's stop-loss ended the reply's drafting."""
    return f if f.stopped == stopped else replace(f, stopped=stopped)


def figures_from_dict(d: dict[str, object]) -> LiveFigures:
    """Figures from a stored message's meta (``GenerationStats.to_dict``, with the adaptive
    policy's verdict as ``"paused"``; a message stored without it infers the pause from
    its last steps)."""

    def num(key: str) -> float:
        v = d.get(key, 0)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    stats = GenerationStats(
        mode=str(d.get("mode", "plain")), ttft_s=num("ttft_s"), total_s=num("total_s"),
        tokens=int(num("tokens")), steps=int(num("steps")), drafted=int(num("drafted")),
        accepted=int(num("accepted")), plain_run=int(num("plain_run")),
        # a message stored before the count existed: every step counted as drafting
        drafting_steps=int(num("drafting_steps")) if "drafting_steps" in d else int(num("steps")),
    )
    f = figures(stats)
    f = with_pause(f, d["paused"]) if isinstance(d.get("paused"), bool) else f
    return with_stopped(with_held_back(f, d.get("held_back") is True), d.get("stopped") is True)


# -- formatting shared by the panel and the footer -----------------------------

def format_rate(f: LiveFigures) -> str:
    return DASH if f.rate is None else f"{f.rate:.1f}"


def format_acceptance(f: LiveFigures) -> str:
    return DASH if f.acceptance is None else f"{f.acceptance:.0%}"


def format_per_step(f: LiveFigures) -> str:
    return DASH if f.accepted_per_step is None else f"{f.accepted_per_step:.2f}"


def format_ttft(f: LiveFigures) -> str:
    return DASH if f.ttft_s is None else f"{f.ttft_s * 1000:.0f} ms"


def drafting_note(f: LiveFigures) -> str:
    """A sentence when drafting did not happen as the user might assume; else ''."""
    if f.stopped:
        return STOPPED_TEXT
    if f.paused:
        return PAUSED_TEXT
    if f.mode == "adaptive" and f.steps and f.drafting_steps < f.steps:
        steps = f"drafted in {f.drafting_steps} of {f.steps} steps"
        return f"{steps}: {HELD_BACK_TEXT}" if f.held_back else steps
    return ""


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten >= ``value`` (an axis top, never 0)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1.0, 2.0, 5.0, 10.0):
        top = m * 10.0**exp
        if top >= value * (1 - 1e-12):
            return top
    return 10.0 ** (exp + 1)


def axis_label(value: float) -> str:
    """An axis number with as many decimals as it needs (0.2, 5, 50)."""
    if value >= 10 or value == int(value):
        return f"{value:.0f}"
    decimals = max(1, -math.floor(math.log10(value)))
    return f"{value:.{decimals}f}"
