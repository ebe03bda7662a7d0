"""The packaged suite's structured prompts: a schema or a forced tool call, in every mode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specula.core.bench import load_prompts, parse_modes, run_bench
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.tiny_models import DRAFT, TARGET, build_tiny_model

QWEN = (Path(__file__).parents[1] / "fixtures" / "qwen25_chat_template.jinja").read_text()


def test_the_structured_category_keeps_its_shape_in_every_mode(tmp_path: Path) -> None:
    prompts = [p for p in load_prompts() if p.category == "structured"]
    assert {bool(p.response_format) for p in prompts} == {True, False}  # schemas and tools
    assert all(p.tool_choice for p in prompts if p.tools)
    target = build_tiny_model(tmp_path / "t.gguf", replace(TARGET, chat_template=QWEN))
    draft = build_tiny_model(tmp_path / "d.gguf", replace(DRAFT, chat_template=QWEN))
    eng = Engine(EngineOptions(n_ctx=2048, n_threads=2))
    eng.load_target(target)
    eng.load_draft(draft)
    try:
        report = run_bench(eng, prompts, parse_modes("chain:3,tree", draft_max=3),
                           SamplingParams(max_tokens=24), cold=True)
    finally:
        eng.close()
    # The random model writes structure only because the grammar makes it.
    for r in report.runs:
        p = next(p for p in prompts if p.id == r.prompt_id)
        assert r.text.startswith("{" if p.response_format else "<tool_call>\n{\"name\""), r.text
    assert all(r.identical for r in report.runs if r.mode != "plain")
    assert sum(r.accepted for r in report.runs) > 0
