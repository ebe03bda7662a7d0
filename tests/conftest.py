"""Test-wide fixtures: an isolated SPECULA_HOME and the tiny model family."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula_tools.tiny_families import build_families
from specula_tools.tiny_models import build_family

# The fake hub (fixtures fake_hub, hub_models) serves every test folder.
pytest_plugins = ["tests.fixtures.hub_repos"]

REAL_MODELS_DIR = Path(os.environ.get("SPECULA_BENCH_DIR", Path.home() / ".cache/specula-bench"))


@pytest.fixture(autouse=True)
def specula_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own settings, data and models folders, and no real hub.

    HF_ENDPOINT points where nothing listens (the ``fake_hub`` fixture points it at the
    fake hub instead), so a page that asks the hub on its own (Discover's suggested
    pairs) meets "offline" at once instead of the network.
    """
    home = tmp_path / "specula-home"
    monkeypatch.setenv("SPECULA_HOME", str(home))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("SPECULA_MODELS_DIR", raising=False)
    return home


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> path of the tiny GGUF family (built once per test run)."""
    return build_family(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def families(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """family -> path of a tiny model of each architecture family (mamba, mamba2, qwen35,
    granitehybrid, lfm2, qwen3moe, qwen35-mtp) and ``<family>-draft`` -> its noisy copy
    (built once per test run; see specula_tools.tiny_families)."""
    return build_families(tmp_path_factory.mktemp("tiny-families"))


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


@pytest.fixture
def qwen7b(tiny: dict[str, Path]) -> ModelInfo:
    """The shape of Qwen2.5-Coder-7B-Instruct Q4_K_M (numbers from its GGUF header)."""
    return replace(read_model_info(tiny["target"]), name="Qwen2.5-Coder-7B-Instruct",
                   n_layers=28, n_head=28, n_head_kv=4, head_dim=128, n_embd=3584,
                   vocab_size=152064, context_length=32768, file_size=4_683_073_536)


@pytest.fixture
def qwen05b(qwen7b: ModelInfo) -> ModelInfo:
    """The shape of Qwen2.5-Coder-0.5B-Instruct Q4_K_M."""
    return replace(qwen7b, name="Qwen2.5-Coder-0.5B-Instruct", n_layers=24, n_head=14,
                   n_head_kv=2, head_dim=64, n_embd=896, file_size=397_808_192)
