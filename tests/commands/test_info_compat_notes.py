"""`specula info` on a model without attention, and `specula compat` on a recurrent or
mixture-of-experts draft and target: what each means for speculation, in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.cli import main
from specula.core.gguf.compat import Severity, check
from specula.core.gguf.model_info import read_model_info


@pytest.mark.parametrize("family", ["mamba", "mamba2"])
def test_info_of_a_model_without_attention_says_so(families: dict[str, Path], family: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(families[family])]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    assert "heads / KV heads: none (recurrent: no attention layers)" in out


def test_info_of_an_attention_model_gives_its_heads(tiny: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    info = read_model_info(tiny["target"])
    assert main(["info", str(tiny["target"])]) == 0
    assert f"heads / KV heads: {info.n_head} / {info.n_head_kv}" in capsys.readouterr().out


def test_compat_speaks_of_a_recurrent_draft(tiny: dict[str, Path], families: dict[str, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", str(tiny["target"]), str(families["mamba"])]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "draft_memory" in x)
    assert line.startswith("  [note] draft_memory   Draft recurrent memory")
    assert "restores a checkpoint" in line and "tree drafts run as chains" in line
    notes = {c.name: c for c in check(read_model_info(tiny["target"]),
                                      read_model_info(families["qwen35"])).notes}
    assert "hybrid memory" in notes["draft_memory"].message
    assert "chains" not in notes["draft_memory"].message  # a hybrid draft keeps its trees
    attention_draft = check(read_model_info(families["mamba"]), read_model_info(tiny["draft"]))
    assert "draft_memory" not in {c.name for c in attention_draft.notes}


def test_compat_speaks_of_experts_on_either_side(families: dict[str, Path], tiny: dict[str, Path]) -> None:
    moe, dense = read_model_info(families["qwen3moe"]), read_model_info(tiny["target"])
    notes = {c.name: c for c in check(moe, dense).notes}
    assert notes["target_experts"].message.startswith("Target experts: 4 total, 2 active per token:")
    assert "reads more experts" in notes["target_experts"].message
    assert "draft_experts" not in notes
    notes = {c.name: c for c in check(dense, moe).notes}
    assert notes["draft_experts"].message.startswith("Draft experts: 2 of 4 active per token:")
    assert "target_experts" not in notes
    assert all(c.passed and c.severity is Severity.NOTE for c in notes.values())
