"""`specula bench` reports the host share per mode, per step and over the reply, with the
drafter's own Python work counted in it."""

from __future__ import annotations

import json
from pathlib import Path

from specula.core.bench import BenchPrompt, format_report, parse_modes, run_bench
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.sampling.rules import SamplingParams


def test_the_benchmark_reports_host_share_per_mode(tiny: dict[str, Path]) -> None:
    eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        prompts = [BenchPrompt("p1", "code", "def add(a, b):")]
        report = run_bench(eng, prompts, parse_modes("plain,chain:2", draft_max=4),
                           SamplingParams(temperature=0.8, seed=5, max_tokens=16))
    finally:
        eng.close()
    by_mode = {r.mode: r for r in report.runs}
    for r in by_mode.values():
        # a tiny model decodes in microseconds: the host's share is large but below 1
        assert 0.0 < r.host_share < 1.0
        assert 0.0 < r.host_share_step_median < 1.0
        assert r.host_share_step_median <= r.host_share_step_p90 < 1.0
        # the same host time in microseconds per step: share x step length
        assert r.host_us_per_step > 0.0 and r.step_us > r.host_us_per_step
        assert abs(r.host_us_per_step / r.step_us - r.host_share) < 1e-9
    assert by_mode["plain"].draft_host_share == 0.0  # nothing drafted
    assert 0.0 < by_mode["chain:2"].draft_host_share < by_mode["chain:2"].host_share
    summary = report.summary["chain:2"]
    assert isinstance(summary, dict)
    assert summary["host_share_median"] == by_mode["chain:2"].host_share
    text = format_report(report)
    assert "host %" in text and "Host share" in text and "host us/step" in text
    data = json.loads(json.dumps(report.to_json()))
    assert {"host_share", "host_share_step_median", "draft_host_share", "host_us_per_step",
            "step_us"} <= set(data["runs"][0])


def test_plain_gaps_are_read_in_an_untimed_rerun_only_when_a_reply_diverges(
        tiny: dict[str, Path], monkeypatch) -> None:
    """Reading plain's top-2 gaps costs two passes over the vocabulary per token: the
    timed runs never read them; a divergence gets them from a rerun of plain."""
    from specula.core.bench import run as bench
    from specula.core.engine.config import Mode

    calls: list[tuple[str, bool]] = []
    real = bench._run_one

    def run_one(engine, prompt, params, spec, gaps):
        calls.append((spec.mode.value, gaps is not None))
        done, g, shares = real(engine, prompt, params, spec, gaps)
        if spec.mode is not Mode.PLAIN and params.max_tokens > 8:  # not the warm-up
            done.token_ids[3] = -5  # a divergence at token 3
        return done, g, shares

    monkeypatch.setattr(bench, "_run_one", run_one)
    eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        report = run_bench(eng, [BenchPrompt("p1", "code", "def add(a, b):")],
                           parse_modes("plain,chain:2", draft_max=4), SamplingParams(max_tokens=12))
    finally:
        eng.close()
    assert calls.count(("plain", True)) == 1  # one untimed rerun, after the timed runs
    assert calls[-1] == ("plain", True)
    div = next(r for r in report.runs if r.mode == "chain:2").divergence
    assert div is not None and div["index"] == 3
    assert isinstance(div["plain_top2_gap"], float) and div["plain_top2_gap"] >= 0.0
