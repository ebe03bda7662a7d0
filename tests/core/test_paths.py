from __future__ import annotations

from pathlib import Path

import pytest

from specula.core import paths


def test_specula_home_relocates_everything(specula_home: Path) -> None:
    for folder in (paths.config_dir(), paths.data_dir(), paths.cache_dir(), paths.default_models_dir()):
        assert folder.is_relative_to(specula_home) and folder.is_dir()


def test_models_dir_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECULA_MODELS_DIR", str(tmp_path / "m"))
    assert paths.default_models_dir() == tmp_path / "m"
