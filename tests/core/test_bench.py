"""`specula bench`: mode columns (chain:1-6), the per-prompt oracle of fixed chains, --cold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.bench import (
    BenchPrompt,
    RunResult,
    format_report,
    oracle,
    parse_modes,
    run_bench,
    summarize,
)
from specula.core.engine.config import Mode
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.sampling.rules import SamplingParams


def test_a_range_of_draft_lengths_becomes_one_column_per_length() -> None:
    modes = parse_modes("chain:1-3,adaptive,tree:2", draft_max=4)
    assert [m.label for m in modes] == ["plain", "chain:1", "chain:2", "chain:3", "adaptive", "tree:2"]
    assert [m.spec.draft_max for m in modes[1:]] == [1, 2, 3, 4, 2]
    assert [m.fixed_chain for m in modes] == [False, True, True, True, False, False]
    assert parse_modes("chain", draft_max=5)[1].spec.draft_max == 5


def test_adaptive_may_draft_as_far_as_the_longest_fixed_chain_it_is_judged_against() -> None:
    by_label = {m.label: m.spec.draft_max for m in parse_modes("chain:1-6,adaptive", draft_max=4)}
    assert by_label["adaptive"] == 6
    assert {m.label: m.spec.draft_max for m in parse_modes("chain:1-2,adaptive", draft_max=4)}["adaptive"] == 4
    assert {m.label: m.spec.draft_max for m in parse_modes("chain:1-6,adaptive:3", draft_max=4)}["adaptive:3"] == 3


@pytest.mark.parametrize("text", ["chain:0", "chain:3-1", "chain:x", "chain:1-17", "plain:2", "chain,chain", "warp"])
def test_malformed_mode_lists_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        parse_modes(text, draft_max=4)


def _run(pid: str, mode: str, repeat: int, tok_s: float, ttft: float = 0.1, total: float = 0.0) -> RunResult:
    return RunResult(total_s=total,
        prompt_id=pid, category="code", mode=mode, repeat=repeat, prompt_token_ids=[], token_ids=[],
        text="", tok_per_s=tok_s, ttft_s=ttft, drafted=0, accepted=0, steps=1, acceptance=0.0,
        mean_accepted_per_step=0.0, overhead_fraction=0.0, peak_rss_bytes=0, stop_reason="max_tokens",
    )


def test_the_oracle_takes_the_best_fixed_chain_per_prompt_from_medians_over_repeats() -> None:
    # Prompt a: chain:1 medians 10, chain:2 medians 14 (one slow outlier repeat), adaptive 12.
    # Prompt b: chain:1 20, chain:2 8, adaptive 19.
    speeds = {
        ("a", "chain:1"): [10, 10, 11], ("a", "chain:2"): [14, 3, 15], ("a", "adaptive"): [12, 12, 13],
        ("b", "chain:1"): [20, 21, 19], ("b", "chain:2"): [8, 8, 8], ("b", "adaptive"): [19, 18, 20],
        ("a", "plain"): [9, 9, 9], ("b", "plain"): [10, 10, 10],
    }
    runs = [_run(p, m, r, float(v)) for (p, m), vs in speeds.items() for r, v in enumerate(vs)]
    orc = oracle(runs, ["chain:1", "chain:2"])
    assert orc["best_fixed"] == {"a": {"mode": "chain:2", "tok_per_s": 14.0},
                                 "b": {"mode": "chain:1", "tok_per_s": 20.0}}
    adaptive = orc["vs_best_fixed"]["adaptive"]  # type: ignore[index]
    assert adaptive["per_prompt"] == pytest.approx({"a": 12 / 14, "b": 19 / 20})
    assert adaptive["median"] == pytest.approx((12 / 14 + 19 / 20) / 2)
    assert adaptive["min"] == pytest.approx(12 / 14)
    assert oracle(runs, []) == {}


def test_the_summary_gives_ttft_against_plain_and_the_worst_per_prompt_median() -> None:
    runs = [_run("a", "plain", r, 10.0, ttft=0.2) for r in range(3)]
    runs += [_run("a", "adaptive", r, v, ttft=0.3) for r, v in enumerate([5.0, 12.0, 11.0])]
    s = summarize(runs)["adaptive"]
    assert s["ttft_vs_plain"] == pytest.approx(1.5)  # type: ignore[index]
    assert s["prompt_speedup_min"] == pytest.approx(1.1)  # median of 5, 12, 11 over plain's 10
    assert s["speedup_min"] == pytest.approx(0.5)  # single runs keep their noise


def test_the_summary_gives_whole_reply_time_against_plain_per_prompt_and_repeat() -> None:
    # a draft's catch-up after the first token lands in the reply's total, not in TTFT
    runs = [_run("a", "plain", r, 10.0, total=t) for r, t in enumerate([2.0, 4.0, 3.0])]
    runs += [_run("a", "chain:3", r, 12.0, total=t) for r, t in enumerate([1.0, 4.0, 3.3])]
    s = summarize(runs)["chain:3"]
    assert s["total_vs_plain"] == pytest.approx(1.0)  # ratios 0.5, 1.0, 1.1 pair by repeat (unpaired: 1.1)
    assert s["total_s_median"] == pytest.approx(3.3)


def test_a_run_with_a_range_of_chains_reports_the_oracle(tiny: dict[str, Path]) -> None:
    eng = Engine(EngineOptions(n_ctx=512, n_threads=2))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        prompts = [BenchPrompt("p1", "code", "def add(a, b):"), BenchPrompt("p2", "chat", "hello there")]
        report = run_bench(eng, prompts, parse_modes("chain:1-2,adaptive", draft_max=4),
                           SamplingParams(max_tokens=12), cold=True)
    finally:
        eng.close()
    assert {r.mode for r in report.runs} == {"plain", "chain:1", "chain:2", "adaptive"}
    assert all(r.identical for r in report.runs if r.mode != "plain")  # greedy: every column equals plain
    assert set(report.oracle["best_fixed"]) == {"p1", "p2"}  # type: ignore[arg-type]
    assert set(report.oracle["vs_best_fixed"]) == {"plain", "chain:1", "chain:2", "adaptive"}  # type: ignore[arg-type]
    best = report.oracle["vs_best_fixed"]["chain:1"]["per_prompt"]  # type: ignore[index]
    assert max(best.values()) <= 1.0 + 1e-9  # no fixed chain beats the best fixed chain
    # fresh caches: every drafting run catches the draft up on its prompt, and says so
    chains = [r for r in report.runs if r.mode.startswith("chain")]
    assert all(r.draft_catchup_tokens >= len(r.prompt_token_ids) - 1 and r.draft_catchup_s > 0 for r in chains)
    assert "chain:1 " in format_report(report).split("Draft catch-up")[1].split("Speedup by")[0]


def test_bench_cold_starts_from_an_empty_policy_state(tiny: dict[str, Path], tmp_path: Path,
                                                       specula_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "x", "category": "code", "prompt": "def f():"}) + "\n")
    out = tmp_path / "r.json"
    rc = main(["bench", "--target", str(tiny["target"]), "--draft", str(tiny["draft"]), "--prompts",
               str(prompts), "--modes", "plain,adaptive", "--max-tokens", "6", "--cold", "--json", str(out)])
    assert rc == 0
    # The user's own learned state is left alone: nothing was written under the real data folder.
    assert not list(specula_home.rglob("adaptive/*.json"))
    data = json.loads(out.read_text())
    assert data["setup"]["cold"] is True
    assert set(data["setup"]["modes"]) == {"plain", "adaptive"}
    assert Mode.ADAPTIVE.value in capsys.readouterr().out


def test_every_run_starts_from_empty_caches_unless_asked_to_reuse(
    tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch, specula_home: Path,
) -> None:
    from specula.core.engine.loop.generator import Generator
    from specula.core.engine.native.prefix import common_prefix

    real = Generator.generate
    eng = Engine(EngineOptions(n_ctx=512, n_threads=2))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    prompts = [BenchPrompt("p1", "code", "def f():"), BenchPrompt("p2", "code", "class A:")]
    modes = parse_modes("plain,chain:2", draft_max=4)
    try:
        for fresh in (True, False):
            prefills: list[int] = []

            def generate(self, prompt, *a, prefills=prefills, **kw):  # type: ignore[no-untyped-def]
                prefills.append(len(prompt) - common_prefix(self.kv.tokens, prompt))  # to evaluate
                return real(self, prompt, *a, **kw)

            monkeypatch.setattr(Generator, "generate", generate)
            run_bench(eng, prompts, modes, SamplingParams(max_tokens=4), fresh=fresh)
            timed = prefills[len(modes):]  # after the warm-up runs
            full = [len(eng.tokenize_chat([{"role": "user", "content": p.prompt}])) for p in prompts]
            if fresh:
                assert timed == [full[0], full[0], full[1], full[1]]
            else:  # the second mode on a prompt reuses its prefill
                assert timed[1] < full[0] and timed[3] < full[1]
    finally:
        eng.close()


def test_a_fixed_seed_under_the_coupled_rule_is_checked_for_plain_s_text(tiny: dict[str, Path]) -> None:
    from specula.core.engine.sampling.rules import Rule

    eng = Engine(EngineOptions(n_ctx=512, n_threads=2))
    eng.load_target(tiny["target"])
    eng.load_draft(tiny["draft"])
    try:
        prompts = [BenchPrompt("p1", "code", "def add(a, b):")]
        modes = parse_modes("chain:3", draft_max=3)
        coupled = run_bench(eng, prompts, modes, SamplingParams(temperature=0.8, seed=3, max_tokens=12))
        rejection = run_bench(eng, prompts, modes, SamplingParams(temperature=0.8, seed=3, max_tokens=12,
                                                                  rule=Rule.REJECTION))
    finally:
        eng.close()
    chain_run = next(r for r in coupled.runs if r.mode == "chain:3")
    assert chain_run.identical is True  # same seed, coupled rule: plain's text in every mode
    assert next(r for r in rejection.runs if r.mode == "chain:3").identical is None  # not expected there


def test_the_held_out_oracle_chooses_the_best_chain_on_the_other_repeats() -> None:
    # Prompt a, three repeats. chain:2 wins repeat 0 by luck (20) and is slow otherwise;
    # chain:1 is steady at 12. Held out, by hand:
    #   repeat 0: the best on repeats 1, 2 is chain:1 (12, 12 against 8, 8): 11 / 12
    #   repeat 1: on repeats 0, 2: chain:2 (20, 8: mean 14 against 12): 11 / 8
    #   repeat 2: on repeats 0, 1: chain:2 (20, 8) again: 13 / 8
    # median 11 / 8; the plain oracle (medians 12 against 8) says 11 / 12.
    speeds = {("a", "chain:1"): [12, 12, 12], ("a", "chain:2"): [20, 8, 8],
              ("a", "adaptive"): [11, 11, 13], ("a", "plain"): [9, 9, 9]}
    runs = [_run(p, m, r, float(v)) for (p, m), vs in speeds.items() for r, v in enumerate(vs)]
    orc = oracle(runs, ["chain:1", "chain:2"])
    assert orc["vs_best_fixed"]["adaptive"]["per_prompt"]["a"] == pytest.approx(11 / 12)  # type: ignore[index]
    held = orc["vs_best_fixed_held_out"]["adaptive"]  # type: ignore[index]
    assert held["per_prompt"]["a"] == pytest.approx(11 / 8)
    assert set(orc["vs_best_fixed_held_out"]) == {"adaptive", "plain"}  # type: ignore[arg-type]
    one = [r for r in runs if r.repeat == 0]
    assert "vs_best_fixed_held_out" not in oracle(one, ["chain:1", "chain:2"])  # needs two repeats
