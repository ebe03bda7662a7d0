"""Per-model load defaults: how a model is loaded unless the user says otherwise.

LM Studio's gear next to a model: its context length, GPU layers, threads, the
draft to pair with it and the speculative mode. They are kept in
``model_defaults.json`` under ``paths.config_dir()``, keyed by the model's
file name (the same model found in another folder, or given to
``specula chat --model`` by a relative path, gets the same defaults). The chat
applies them when the model is loaded, ``specula chat`` and ``specula serve``
apply them to every option not given on the command line.

A field left at None means "no default of its own": the global setting (or the
command's default) applies. A file that cannot be read gives no defaults and
is set aside with a notice (:mod:`specula.core.json_files`); a bad value in it
is dropped, never used.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from specula.core import files, json_files, paths

log = logging.getLogger("specula.load_defaults")

FILE_NAME = "model_defaults.json"
MODES = ("plain", "chain", "adaptive", "tree", "lookup")


@dataclass
class LoadDefaults:
    n_ctx: int | None = None
    gpu_layers: int | None = None  # -1 = all, -2 = auto (gpu_layers.AUTO), else a count
    threads: int | None = None
    draft: str | None = None  # a draft GGUF's path; "" = load no draft
    mode: str | None = None

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    @classmethod
    def from_dict(cls, data: object) -> LoadDefaults:
        """Well-typed values kept, the others dropped (and logged)."""
        out = cls()
        if not isinstance(data, dict):
            return out
        checks: dict[str, Any] = {
            "n_ctx": lambda v: isinstance(v, int) and not isinstance(v, bool) and 128 <= v <= 2**20,
            "gpu_layers": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= -2,
            "threads": lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1024,
            "draft": lambda v: isinstance(v, str),
            "mode": lambda v: v in MODES,
        }
        for key, ok in checks.items():
            value = data.get(key)
            if value is None:
                continue
            if ok(value):
                setattr(out, key, value)
            else:
                log.warning("model default %s = %r dropped (not a valid value)", key, value)
        return out


def key_of(model_path: str | Path) -> str:
    return Path(model_path).name


def _path() -> Path:
    return paths.config_dir() / FILE_NAME


def _read(path: Path) -> dict[str, Any]:
    raw = json_files.load(json_files.JsonFile(
        path, "per-model load defaults file", {"models": dict},
        consequence="Models load with the global settings")).value
    models = raw.get("models") if raw is not None else None
    return models if isinstance(models, dict) else {}


def defaults_for(model_path: str | Path, path: Path | None = None) -> LoadDefaults:
    """The defaults saved for this model (empty when none)."""
    return LoadDefaults.from_dict(_read(path or _path()).get(key_of(model_path)))


def save_defaults(model_path: str | Path, defaults: LoadDefaults, path: Path | None = None) -> None:
    """Save (or, when empty, remove) the model's defaults; written atomically."""
    path = path or _path()
    models = _read(path)
    key = key_of(model_path)
    if defaults.is_empty():
        models.pop(key, None)
    else:
        models[key] = {k: v for k, v in asdict(defaults).items() if v is not None}
    files.atomic_write_json(path, {"version": 1, "models": models}, indent=2)


def context_words(model_path: str | Path, global_n_ctx: int, trained: int | None,
                  running: int = 0, path: Path | None = None) -> str:
    """The context length a model loads with, in the words My Models shows: the one it
    runs with while loaded, else its own default or the global one, capped as the engine
    caps it (by the training length)."""
    if running:
        return f"{running:,} tokens (loaded now)"
    own = defaults_for(model_path, path).n_ctx
    n = own if own is not None else global_n_ctx
    if trained and trained < n:
        n = trained
    whose = "its own default" if own is not None else "the global default"
    return f"{n:,} tokens ({whose})"
