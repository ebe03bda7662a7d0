"""One reply, five surfaces, the same figures.

"Accepted per step" is defined once, on GenerationStats, as accepted draft tokens per
step that drafted. The CLI's summary line, the server's ``specula`` block, the bench's
report, the live panel and the footer under a stored message must all show that number
(and the drafting steps and per-position counts where they show them). The expected
values are counted here from the reply's StepEvents' records, not taken from the stats.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from specula.core.bench.prompts import BenchPrompt
from specula.core.bench.report_text import format_report
from specula.core.bench.results import BenchReport, summarize
from specula.core.bench.run import BenchMode, _result
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord
from specula.gui.stats import live_stats as ls
from specula.gui.stats.footer import footer_text
from specula.server.streaming import spec_stats

# A fixed chain of 4 from the tiny draft: deterministic (no cost model, no timing), with
# a plain first step (the target makes the first token) before 33 drafting ones, so
# dividing by all steps shows a different number (2.53 here, not 2.61).
SPEC = SpecConfig(mode=Mode.CHAIN, draft_max=4)
PROMPT = "one two three four one two three four one two three four one two three"


@dataclass
class Reply:
    done: Done
    steps: list[StepEvent]


@pytest.fixture(scope="module")
def reply(tiny: dict[str, Path]) -> Iterator[Reply]:
    eng = Engine(EngineOptions(n_ctx=1024, n_threads=1, calibrate=False))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        steps: list[StepEvent] = []
        done: Done | None = None
        for ev in eng.chat([{"role": "user", "content": PROMPT}],
                           SamplingParams(temperature=0.0, max_tokens=120), SPEC):
            if isinstance(ev, StepEvent):
                steps.append(ev)
            elif isinstance(ev, Done):
                done = ev
        assert done is not None
        yield Reply(done, steps)
    finally:
        eng.close()


def _expected(records: list[StepRecord]) -> tuple[int, int, list[int], list[int]]:
    """(accepted, drafting steps, drafted per position, accepted per position), counted
    from the records one by one (a chain's positions are its drafted tokens)."""
    drafting = [r for r in records if r.drafted > 0]
    longest = max((r.drafted for r in drafting), default=0)
    drafted_pos = [sum(r.drafted > i for r in drafting) for i in range(longest)]
    accepted_pos = [sum(r.accepted > i for r in drafting) for i in range(longest)]
    return sum(r.accepted for r in records), len(drafting), drafted_pos, accepted_pos


def test_the_reply_has_drafting_and_plain_steps(reply: Reply) -> None:
    records = [e.record for e in reply.steps]
    n_drafting = sum(r.drafted > 0 for r in records)
    assert 0 < n_drafting < len(records), "the reply must mix drafting and plain steps"
    assert sum(r.accepted for r in records) > 0


def test_every_surface_shows_the_same_figures(reply: Reply) -> None:
    accepted, drafting, drafted_pos, accepted_pos = _expected([e.record for e in reply.steps])
    per_step = accepted / drafting
    shown = f"{per_step:.2f}"
    stats = reply.done.stats
    assert stats.drafting_steps == drafting and stats.accepted == accepted
    assert list(stats.drafted_per_pos) == drafted_pos
    assert list(stats.accepted_per_pos) == accepted_pos

    # the CLI: the summary line it prints after each reply
    cli = re.search(r"([\d.]+) per drafting step", stats.summary_line())
    assert cli is not None and cli.group(1) == shown

    # the server: the specula block (old key and new key carry the same number)
    block = spec_stats(reply.done, draft=None)
    assert block["mean_accepted_per_step"] == pytest.approx(per_step, abs=1e-4)
    assert block["accepted_per_drafting_step"] == pytest.approx(per_step, abs=1e-4)
    assert block["drafting_steps"] == drafting
    assert block["drafted_per_pos"] == drafted_pos and block["accepted_per_pos"] == accepted_pos

    # the bench: its result, summary and printed report
    run = _result(BenchPrompt("p", "test", PROMPT), BenchMode("chain:4", SPEC), 0, reply.done)
    assert run.mean_accepted_per_step == pytest.approx(per_step)
    summary = summarize([run])
    text = format_report(BenchReport(runs=[run], summary=summary))
    row = next(line for line in text.splitlines() if line.startswith("  chain:4"))
    assert row.split()[5] == shown, row  # mode tok/s speedup TTFT accept per-step
    cells = "  ".join(f"{i + 1}: {a}/{d} {a / d:.0%}"
                      for i, (a, d) in enumerate(zip(accepted_pos, drafted_pos, strict=True)))
    assert f"  chain:4   {cells}" in text.splitlines()

    # the live panel: the figures after the last step, from that step's snapshot
    live = ls.LiveStats().figures(reply.steps[-1].stats)
    assert live is not None and ls.format_per_step(live) == shown
    assert live.drafting_steps == drafting

    # the footer: from the dict the page stores with the message
    assert f"{shown} accepted/step" in footer_text(stats.to_dict(), reply.done.stop_reason.value)


def test_a_kept_step_event_does_not_change_later(reply: Reply) -> None:
    """Each StepEvent holds the totals after its own step, whatever came after it."""
    seen_steps = [e.stats.steps for e in reply.steps]
    assert seen_steps == list(range(1, len(reply.steps) + 1))
    running = 0
    for e in reply.steps:
        running += e.record.accepted
        assert e.stats.accepted == running
    assert len({id(e.stats) for e in reply.steps}) == len(reply.steps)
