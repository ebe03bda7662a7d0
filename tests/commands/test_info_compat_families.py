"""`specula info` and `specula compat` say what a model is and what it means for speculation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.gguf.compat import Severity, Verdict, check, format_report
from specula.core.gguf.model_info import read_model_info

# family -> lines `specula info` must show (the memory, the experts, the MTP layers)
INFO_LINES = {
    "mamba": ["memory: recurrent memory", "checkpoints and replay",
              "recurrent state: 19.5 kB per sequence in 2 of 2 layers", "experts: none",
              "MTP layers: none"],
    "qwen35": ["memory: hybrid memory: speculation is exact through checkpoints and replay",
               "recurrent state: 16.9 kB per sequence in 3 of 4 layers", "experts: none"],
    "granitehybrid": ["memory: hybrid memory", "in 3 of 4 layers"],
    "lfm2": ["memory: hybrid memory", "recurrent state: 1.54 kB per sequence in 3 of 4 layers"],
    "qwen3moe": ["memory: attention memory: a rejected draft is cut out of the KV cache exactly",
                 "experts: 4 total, 2 active per token"],
    "qwen35-mtp": ["layers: 4 + 1 MTP", "MTP layers: 1 layer, a built-in draft, no draft model needed",
                   "memory: hybrid memory"],
}


@pytest.mark.parametrize("family", sorted(INFO_LINES))
def test_info_says_what_the_model_is(families: dict[str, Path], family: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(families[family])]) == 0
    out = capsys.readouterr().out
    print(out)
    for line in INFO_LINES[family]:
        assert line in out, line
    assert ("recurrent state:" in out) is (family != "qwen3moe")


def test_info_json_carries_the_kind(families: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(families["qwen35-mtp"]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["memory"] == "hybrid" and data["nextn_layers"] == 1
    assert (data["attention_layers"], data["recurrent_layers"]) == (1, 3)
    assert data["recurrent_state_bytes"] == 3 * (3 * (64 + 2 * 2 * 16) + 16 * 64) * 4
    assert main(["info", str(families["qwen3moe"]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["memory"], data["expert_count"], data["expert_used_count"]) == ("attention", 4, 2)


def test_a_mamba_llama_pair_is_not_called_identical(tiny: dict[str, Path], families: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", str(families["mamba"]), str(tiny["draft"])]) == 0  # usable: exit 0
    out = capsys.readouterr().out
    verdict = next(line for line in out.splitlines() if line.startswith("verdict:"))
    assert verdict == "verdict: identical tokenizer (different architectures)"
    assert "target mamba, draft llama" in out and "Fine for exactness" in out
    assert "[note] target_memory  Target recurrent memory" in out and "checkpoints and replay" in out
    assert main(["compat", str(families["mamba"]), str(tiny["draft"]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["same_architecture"] is False and data["usable"] is True


def test_same_family_pair_and_notes_never_change_the_verdict(families: dict[str, Path],
                                                             tiny: dict[str, Path]) -> None:
    r = check(read_model_info(families["qwen35-mtp"]), read_model_info(families["qwen35-mtp-draft"]))
    assert r.verdict is Verdict.IDENTICAL and r.same_architecture is True
    assert r.verdict_text() == "identical tokenizer"
    notes = {c.name: c.message for c in r.notes}
    assert notes["architecture"] == "Both are qwen35."
    assert "hybrid memory" in notes["target_memory"]
    assert "no draft model needed" in notes["target_mtp"]
    assert all(c.passed and c.severity is Severity.NOTE for c in r.notes)
    assert r.reason() == "Same tokenizer."  # notes are not warnings
    # An attention target: the memory note says a cut is exact and free.
    r = check(read_model_info(tiny["target"]), read_model_info(families["qwen35"]))
    assert "attention memory" in {c.name: c.message for c in r.notes}["target_memory"]
    assert "[note] architecture" in format_report(r)
    # A tokenizer failure stays a failure whatever the notes say.
    r = check(read_model_info(families["lfm2"]), read_model_info(tiny["other"]))
    assert r.verdict is Verdict.INCOMPATIBLE and not r.usable
    assert format_report(r).splitlines()[2].startswith("verdict: incompatible tokenizers")
