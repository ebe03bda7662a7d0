"""`specula models list` and the app list the same library: the settings' folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.settings import Settings


def _list(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["models", "list", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_lists_the_extra_folders_the_app_added(tiny: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "lmstudio"
    extra.mkdir()
    shutil.copy(tiny["target"], extra / "in-extra.gguf")
    (extra / "junk.gguf").write_bytes(b"not a gguf" * 50)
    settings = Settings()
    settings.extra_model_dirs = [str(extra)]
    settings.save()
    data = _list(capsys)
    names = {Path(m["path"]).name: m for m in data["models"]}  # type: ignore[index, union-attr]
    assert str(extra) in data["folders"]  # type: ignore[operator]
    assert "in-extra.gguf" in names
    assert names["junk.gguf"]["info"] is None and names["junk.gguf"]["error"]
    # the app's service builds the same folders from the same settings
    from specula.core.library.configured import configured_library

    assert [str(r) for r in configured_library(Settings.load()).roots] == data["folders"]


def test_extra_on_the_command_line_adds_for_that_run(tiny: dict[str, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(tiny["draft"], one / "d.gguf")
    data = _list(capsys, "--extra", str(one))
    assert str(one) in data["folders"]  # type: ignore[operator]
    assert Settings.load().extra_model_dirs == []  # not saved
