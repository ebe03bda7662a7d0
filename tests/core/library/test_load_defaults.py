"""Per-model load defaults: saved by file name, bad values dropped, empty removes."""

from __future__ import annotations

import json
from pathlib import Path

from specula.core import paths
from specula.core.library.load_defaults import FILE_NAME, LoadDefaults, defaults_for, save_defaults


def test_saved_by_file_name_and_found_from_any_folder(tmp_path: Path) -> None:
    save_defaults(tmp_path / "a" / "model.gguf", LoadDefaults(n_ctx=8192, draft="/d.gguf",
                                                              mode="lookup"))
    got = defaults_for("elsewhere/model.gguf")
    assert got == LoadDefaults(n_ctx=8192, draft="/d.gguf", mode="lookup")
    assert defaults_for("other.gguf").is_empty()


def test_bad_values_are_dropped_not_used() -> None:
    raw = {"models": {"m.gguf": {"n_ctx": "big", "threads": 0, "gpu_layers": -1,
                                 "mode": "warp", "draft": 3}}}
    (paths.config_dir() / FILE_NAME).write_text(json.dumps(raw))
    assert defaults_for("m.gguf") == LoadDefaults(gpu_layers=-1)


def test_an_unreadable_file_gives_no_defaults_and_empty_removes() -> None:
    (paths.config_dir() / FILE_NAME).write_text("{oops")
    assert defaults_for("m.gguf").is_empty()
    save_defaults("m.gguf", LoadDefaults(threads=3))
    assert defaults_for("m.gguf").threads == 3
    save_defaults("m.gguf", LoadDefaults())
    assert json.loads((paths.config_dir() / FILE_NAME).read_text())["models"] == {}
