"""Fixtures for the hub tests: a fake hub on 127.0.0.1 with tiny GGUF repositories."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specula.tools.tiny_models import OTHER, TARGET, build_tiny_model
from tests.hub.fake_hub import FakeHub

# A "7B" target and smaller siblings sharing its tokenizer (tiny, but ordered by size).
BIG = replace(TARGET, name="Tiny-Coder-7B-Instruct", n_embd=128, n_head=4, n_head_kv=2,
              n_layers=4, n_ff=256)
SMALL = replace(TARGET, name="Tiny-Coder-0.5B-Instruct", n_embd=32, n_head=4, n_head_kv=2,
                n_layers=1, n_ff=64)
MEDIUM = replace(TARGET, name="Tiny-Coder-1.5B-Instruct", n_embd=64, n_layers=2)
ZEBRA = replace(OTHER, name="Zebra-0.5B", n_embd=32, n_layers=1, n_ff=64)

TARGET_REPO = "specula-test/Tiny-Coder-7B-Instruct-GGUF"
SMALL_REPO = "specula-test/Tiny-Coder-0.5B-Instruct-GGUF"
MEDIUM_REPO = "specula-test/Tiny-Coder-1.5B-Instruct-GGUF"
ZEBRA_REPO = "other-org/Tiny-Coder-0.5B-Zebra-GGUF"
PRIVATE_REPO = "specula-test/Private-GGUF"
TARGET_FILE = "tiny-coder-7b-instruct-q4_k_m.gguf"
SMALL_FILE = "tiny-coder-0.5b-instruct-q4_k_m.gguf"
SPLIT_FIRST = "tiny-coder-7b-instruct-f16-00001-of-00003.gguf"
README = """---
license: mit
tags: [gguf]
---

# Tiny Coder 7B Instruct GGUF

![logo](logo.png)

GGUF quantizations of **Tiny Coder 7B Instruct**, a [tiny](https://example.com) model for tests.

## Files
"""


@pytest.fixture(scope="session")
def hub_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hub-models")
    return {
        "big": build_tiny_model(folder / "big.gguf", BIG),
        "small": build_tiny_model(folder / "small.gguf", SMALL),
        "medium": build_tiny_model(folder / "medium.gguf", MEDIUM),
        "zebra": build_tiny_model(folder / "zebra.gguf", ZEBRA),
    }


def split3(data: bytes) -> list[bytes]:
    a, b = len(data) * 6 // 10, len(data) * 8 // 10
    return [data[:a], data[a:b], data[b:]]


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
             hub_models: dict[str, Path]) -> Iterator[FakeHub]:
    """A running fake hub with the tiny repositories; HF_ENDPOINT points at it."""
    hub = FakeHub().start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    big = hub_models["big"].read_bytes()
    parts = split3(big)
    hub.add_repo(TARGET_REPO, {
        TARGET_FILE: hub_models["big"],
        "tiny-coder-7b-instruct-q8_0.gguf": hub_models["big"],
        **{f"tiny-coder-7b-instruct-f16-{i:05d}-of-00003.gguf": p for i, p in enumerate(parts, 1)},
        "README.md": README.encode(),
        "config.json": b"{}",
    }, downloads=1000, likes=5)
    hub.add_repo(SMALL_REPO, {SMALL_FILE: hub_models["small"], "README.md": b"# small\n"},
                 downloads=500, likes=50)
    hub.add_repo(MEDIUM_REPO, {"tiny-coder-1.5b-instruct-q8_0.gguf": hub_models["medium"]},
                 downloads=300, likes=1)
    hub.add_repo(ZEBRA_REPO, {"zebra-0.5b-q4_k_m.gguf": hub_models["zebra"]},
                 downloads=700, likes=0)
    hub.add_repo("specula-test/not-gguf", {"model.safetensors": b"x"}, tags=["safetensors"])
    hub.add_repo(PRIVATE_REPO, {"secret-q4_0.gguf": hub_models["small"]}, private=True)
    hub.token = "hf_test_token"
    yield hub
    hub.stop()
