"""The details pane says what a model is: memory, recurrent state, experts, MTP layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.gguf.model_info import read_model_info
from specula.core.library.scan import LocalModel
from specula.gui.models.model_details import ModelDetails, metadata_html


def _local(path: Path) -> LocalModel:
    return LocalModel(path=path, parts=[path], size=path.stat().st_size, root=path.parent,
                      repo_id=None, info=read_model_info(path))


@pytest.mark.parametrize(("family", "lines"), [
    ("qwen35-mtp", ["<b>Memory</b></td><td>hybrid memory: speculation is exact through checkpoints "
                    "and replay; each rejected step costs a state copy and a replay",
                    "<b>MTP layers</b></td><td>1 layer, a built-in draft, no draft model needed",
                    "<b>Recurrent state</b></td><td>16.9 kB per sequence"]),
    ("mamba", ["<b>Memory</b></td><td>recurrent memory"]),
    ("qwen3moe", ["<b>Memory</b></td><td>attention memory",
                  "<b>Experts</b></td><td>4 total, 2 active per token"]),
])
def test_details_lines(families: dict[str, Path], family: str, lines: list[str]) -> None:
    html = metadata_html(_local(families[family]))
    for line in lines:
        assert line in html, line
    assert ("Recurrent state" in html) is (family != "qwen3moe")


def test_details_pane_shows_them(qtbot, families: dict[str, Path]) -> None:  # type: ignore[no-untyped-def]
    pane = ModelDetails()
    qtbot.addWidget(pane)
    with qtbot.waitSignal(pane.pairs_ready, timeout=30000):
        pane.show_model(_local(families["lfm2"]), [])
    text = pane.meta.text()
    assert "hybrid memory" in text and "Experts" in text and "MTP layers" in text
