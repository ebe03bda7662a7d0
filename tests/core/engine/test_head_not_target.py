"""A draft head is never loaded as a target: refused from its header, with what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.engine.engine import Engine, EngineOptions, LoadError
from specula_tools.tiny_heads import build_head, spec_for


def test_a_head_is_refused_as_a_target(tmp_path: Path) -> None:
    head = build_head(tmp_path / "tiny-eagle3.gguf", spec_for("eagle3", 2))
    engine = Engine(EngineOptions())
    try:
        with pytest.raises(LoadError, match=r"this is a draft head \(eagle3\), not a model"):
            engine.load_target(str(head))
        assert engine.target_info is None
    finally:
        engine.close()
