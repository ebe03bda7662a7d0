"""Models already on disk are found for a first run (issue 45, item 8): LM Studio's models
folders and the Hugging Face cache, located from HOME / HF_HOME as the apps locate them,
offered only when they hold GGUF files and are not in the library yet."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specula.core.library.found_folders import (
    HF_CACHE,
    LM_STUDIO,
    found_model_folders,
    hf_hub_cache,
)


def _file(path: Path, data: bytes = b"GGUF") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _hf_repo(hub: Path, repo: str, files: dict[str, bool]) -> None:
    """A cached repository as huggingface_hub leaves it: snapshot links to blobs
    (``files``: name -> whether its blob is there)."""
    base = hub / f"models--{repo.replace('/', '--')}"
    for i, (name, present) in enumerate(files.items()):
        blob = base / "blobs" / f"sha{i}"
        if present:
            _file(blob)
        link = base / "snapshots" / "abc123" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, hf_home = tmp_path / "home", tmp_path / "hf"
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    lm = home / ".lmstudio" / "models"
    _file(lm / "lmstudio-community" / "Qwen-GGUF" / "qwen-0.5b-q4_k_m.gguf")
    _file(lm / "lmstudio-community" / "Qwen-GGUF" / "README.md")
    (home / ".cache" / "lm-studio" / "models").mkdir(parents=True)  # there, but empty
    hub = hf_home / "hub"
    _hf_repo(hub, "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
             {"qwen-1.5b-q4_k_m.gguf": True, "qwen-1.5b-q8_0.gguf": False})
    _hf_repo(hub, "org/Other-GGUF", {"sub/other-q4_0.gguf": True, "config.json": True})
    return {"home": home, "lm": lm, "hub": hub}


def test_lm_studio_and_the_hf_cache_are_found_with_their_gguf_files(machine) -> None:  # type: ignore[no-untyped-def]
    found = found_model_folders()
    assert [(f.path, f.source, f.gguf_files) for f in found] == [
        (machine["lm"], LM_STUDIO, 1),
        (machine["hub"], HF_CACHE, 2),  # the dangling q8_0 link and config.json not counted
    ]
    assert found[1].count_text == "2 GGUF files" and found[0].count_text == "1 GGUF file"


def test_folders_already_in_the_library_are_not_offered(machine) -> None:  # type: ignore[no-untyped-def]
    found = found_model_folders(known=[str(machine["hub"]), "~/.lmstudio/models"])
    assert found == []


def test_nothing_found_on_a_machine_without_models(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-hf"))
    assert found_model_folders() == []


def test_the_hub_cache_is_located_by_huggingface_hubs_rule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = str(tmp_path)
    assert hf_hub_cache({"HOME": home}) == tmp_path / ".cache" / "huggingface" / "hub"
    assert hf_hub_cache({"HOME": home, "XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")
    assert hf_hub_cache({"HOME": home, "HF_HOME": "/h"}) == Path("/h/hub")
    assert hf_hub_cache({"HF_HOME": "/h", "HF_HUB_CACHE": "/c"}) == Path("/c")
