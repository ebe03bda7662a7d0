"""The benchmark's multi-turn prompts and its isolation of the n-gram cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.bench import load_prompts, parse_modes, run_bench
from specula.core.engine.engine import Engine
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import make_engine


def test_the_packaged_suite_has_a_multi_turn_edit_category() -> None:
    turns = [p for p in load_prompts() if p.category == "multi-turn-edit"]
    assert 5 <= len(turns) <= 7
    for p in turns:
        assert p.turns and p.turns[-1]["role"] == "assistant"
        assert p.messages[-1] == {"role": "user", "content": p.prompt}
        assert p.messages[: len(p.turns)] == p.turns


def test_turns_are_sent_before_the_prompt(tiny: dict[str, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.jsonl"
    turns = [{"role": "user", "content": "write x"}, {"role": "assistant", "content": "x = 1"}]
    path.write_text(json.dumps({"id": "t", "category": "c", "prompt": "rename x", "turns": turns}) + "\n")
    [prompt] = load_prompts(path)
    eng = make_engine(tiny["target"])
    sent: list[list[dict[str, str]]] = []
    real = Engine.chat

    def chat(self: Engine, messages: list[dict[str, str]], *a: object, **kw: object):  # type: ignore[no-untyped-def]
        sent.append(list(messages))
        return real(self, messages, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Engine, "chat", chat)
    run_bench(eng, [prompt], parse_modes("plain", 4), SamplingParams(max_tokens=3))
    assert sent and all(m == [*turns, {"role": "user", "content": "rename x"}] for m in sent)
    eng.close()


@pytest.mark.parametrize("turns, why", [
    ("hi", "must be a list"),
    ([{"role": "robot", "content": "x"}], "turn 1 must be"),
    ([{"role": "user", "content": "ok"}, {"role": "assistant"}], "turn 2 must be"),
])
def test_malformed_turns_name_the_line(tmp_path: Path, turns: object, why: str) -> None:
    path = tmp_path / "p.jsonl"
    good = {"id": "a", "category": "c", "prompt": "p"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "turns": turns}) + "\n")
    with pytest.raises(ValueError, match=f"line 2.*{why}"):
        load_prompts(path)


def test_the_bench_reads_the_cache_but_teaches_it_nothing_unless_asked(tiny: dict[str, Path]) -> None:
    """Otherwise a mode would draft the reply another mode wrote for the same prompt."""
    eng = make_engine(tiny["target"])
    assert eng.ngrams is not None
    prompts = load_prompts()[:1]
    modes = parse_modes("plain,lookup", 4)
    report = run_bench(eng, prompts, modes, SamplingParams(max_tokens=6))
    assert eng.ngrams.cache.learned == 0 and eng.ngrams.learning  # restored after
    assert report.setup["ngram_cache"] == {"learned_tokens": 0, "slots_used": 0, "learning": False}
    run_bench(eng, prompts, modes, SamplingParams(max_tokens=6), learn_ngrams=True)
    assert eng.ngrams.cache.learned > 0
    eng.close()


def test_specula_ngrams_lists_and_clears(tiny: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    eng = make_engine(tiny["target"])
    for _ev in eng.chat([{"role": "user", "content": "hello there"}], SamplingParams(max_tokens=8),
                        parse_modes("plain", 4)[0].spec):
        pass
    eng.close()
    assert main(["ngrams"]) == 0
    out = capsys.readouterr().out
    assert "tiny-target.gguf" in out and "tokens learned" in out
    assert main(["ngrams", "--clear"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert main(["ngrams"]) == 0
    assert "no n-gram caches" in capsys.readouterr().out
