"""`specula bench` leaves out what the target cannot run, with a note, and runs the rest:
a forced tool call on a target whose chat template has no tool-call format, and mode
``mtp`` on a target without MTP layers. Never a traceback, never exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.bench import format_report, load_prompts, parse_modes, run_bench
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.sampling.rules import SamplingParams


def test_a_forced_tool_call_without_a_tool_format_is_skipped_with_a_note(tiny: dict[str, Path]) -> None:
    prompts = [p for p in load_prompts() if p.category == "structured"]
    forced = {p.id for p in prompts if p.tools and p.tool_choice not in (None, "auto", "none")}
    assert forced and len(forced) < len(prompts)  # the suite has both kinds
    eng = Engine(EngineOptions(n_ctx=2048, n_threads=2))
    eng.load_target(tiny["target"])  # ChatML without tools: no tool-call format
    eng.load_draft(tiny["draft"])
    try:
        report = run_bench(eng, prompts, parse_modes("chain:3", draft_max=3),
                           SamplingParams(max_tokens=8), cold=True)
    finally:
        eng.close()
    assert {r.prompt_id for r in report.runs} == {p.id for p in prompts} - forced
    assert sorted(n.split(":")[0] for n in report.skipped) == sorted(forced)
    assert all("no tool-call format" in n for n in report.skipped)
    assert "Skipped (what this target cannot run)" in format_report(report)


def test_bench_on_the_packaged_structured_prompts_exits_0(tiny: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = main(["bench", "--target", str(tiny["target"]), "--draft", str(tiny["draft"]),
               "--categories", "structured", "--modes", "plain", "--max-tokens", "4",
               "--no-calibrate", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "Traceback" not in captured.err
    assert "skipped: the target's chat template has no tool-call format" in captured.out
    assert json.loads(out.read_text())["skipped"]


def test_mode_mtp_on_a_target_without_mtp_layers_is_skipped_with_a_note(
        tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "x", "category": "code", "prompt": "def f():"}) + "\n")
    out = tmp_path / "r.json"
    rc = main(["bench", "--target", str(tiny["target"]), "--draft", str(tiny["draft"]),
               "--prompts", str(prompts), "--modes", "plain,chain:2,mtp", "--max-tokens", "4",
               "--no-calibrate", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "specula: note: mtp: skipped:" in captured.err
    assert "has no MTP (NextN) layers this llama.cpp can run" in captured.err
    data = json.loads(out.read_text())
    assert {r["mode"] for r in data["runs"]} == {"plain", "chain:2"}
    assert any(n.startswith("mtp: skipped") for n in data["skipped"])
