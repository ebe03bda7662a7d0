"""`specula bench` says how a tree's figures count: its acceptance per node drafted, its
per-position line per depth (a chain's position and depth are the same thing)."""

from __future__ import annotations

from pathlib import Path

from specula.core.bench import BenchPrompt, format_report, parse_modes, run_bench
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.sampling.rules import SamplingParams

NOTE = "(a tree: position = depth"


def _report(tiny: dict[str, Path], modes: str) -> str:
    eng = Engine(EngineOptions(n_ctx=512, n_threads=2, calibrate=False))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        report = run_bench(eng, [BenchPrompt("p", "chat", "hello world")],
                           parse_modes(modes, draft_max=3), SamplingParams(max_tokens=16), cold=True)
    finally:
        eng.close()
    return format_report(report)


def test_a_tree_s_per_position_line_says_it_is_per_depth(tiny: dict[str, Path]) -> None:
    text = _report(tiny, "chain,tree")
    section = text.split("Accepted per draft position")[1].split("\n\n")[0]
    tree_line = next(x for x in section.splitlines() if x.strip().startswith("tree"))
    assert tree_line  # the tree drafted, and has its row
    assert NOTE in section and "per node" in section
    assert NOTE not in _report(tiny, "chain")  # a chain needs no such note
