"""Test-wide fixtures: an isolated SPECULA_HOME and the tiny model family."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specula.tools.tiny_models import build_family

REAL_MODELS_DIR = Path(os.environ.get("SPECULA_BENCH_DIR", Path.home() / ".cache/specula-bench"))


@pytest.fixture(autouse=True)
def specula_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own settings, data and models folders."""
    home = tmp_path / "specula-home"
    monkeypatch.setenv("SPECULA_HOME", str(home))
    monkeypatch.delenv("SPECULA_MODELS_DIR", raising=False)
    return home


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> path of the tiny GGUF family (built once per test run)."""
    return build_family(tmp_path_factory.mktemp("tiny-models"))


def real_model(name: str) -> Path:
    """A real model from ../shared/bench-models/fetch, or skip the test."""
    files = {
        "qwen-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "qwen-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "gemma": "gemma-3-270m-q4_k_m.gguf",
    }
    path = REAL_MODELS_DIR / files[name]
    if not path.exists():
        pytest.skip(f"real model {name} not fetched (../shared/bench-models/fetch)")
    return path
