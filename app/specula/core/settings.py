"""Typed user settings with a schema version, stored as JSON under ``paths.config_dir()``.

``Settings.load()`` never fails: a missing file gives the defaults, an older
schema is migrated step by step (``MIGRATIONS[n]`` turns version ``n`` into
``n + 1``), unknown keys are dropped and values of the wrong type fall back to
their defaults with a log line. ``save()`` writes atomically.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from specula.core import paths
from specula.core.engine.config import DEFAULT_MODE, Mode, SpecConfig
from specula.core.engine.sampling import SamplingParams

log = logging.getLogger("specula.settings")

SCHEMA_VERSION = 3
FILE_NAME = "settings.json"
RECENT_MAX = 12
THEMES = ("dark", "light")
TOKEN_COLOURS = ("off", "source", "heat")


@dataclass
class GenerationDefaults:
    """Sampling settings the chat starts with (``seed`` -1 = random)."""

    system_prompt: str = "You are a helpful assistant."
    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    max_tokens: int = 512
    seed: int = -1

    def to_sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            min_p=self.min_p,
            max_tokens=self.max_tokens,
            seed=None if self.seed < 0 else self.seed,
        )


@dataclass
class SpeculativeDefaults:
    """Speculative settings; ``mode`` is a :class:`Mode` value other than plain."""

    mode: str = DEFAULT_MODE.value  # the one default mode (core.engine.config)
    draft_max: int = 4
    draft_min: int = 0
    p_min: float = 0.0
    tree_budget: int = 12
    relaxed_top_k: int = 0
    relaxed_ratio: float = 0.0

    def to_spec(self, enabled: bool = True) -> SpecConfig:
        """The SpecConfig for a reply; ``enabled=False`` is the draft switch turned off."""
        try:
            mode = Mode(self.mode)
        except ValueError:
            mode = DEFAULT_MODE
        return SpecConfig(
            mode=mode if enabled else Mode.PLAIN,
            draft_max=self.draft_max,
            draft_min=self.draft_min,
            p_min=self.p_min,
            tree_budget=self.tree_budget,
            relaxed_top_k=self.relaxed_top_k,
            relaxed_ratio=self.relaxed_ratio,
        )


@dataclass
class Settings:
    schema_version: int = SCHEMA_VERSION
    theme: str = "dark"
    n_threads: int = 0  # 0 = let the engine choose
    n_ctx: int = 4096
    n_gpu_layers_target: int = 0
    n_gpu_layers_draft: int = 0
    draft_enabled: bool = True
    token_colours: str = "source"  # off | source | heat
    generation: GenerationDefaults = field(default_factory=GenerationDefaults)
    speculative: SpeculativeDefaults = field(default_factory=SpeculativeDefaults)
    recent_targets: list[str] = field(default_factory=list)
    recent_drafts: list[str] = field(default_factory=list)
    last_target: str = ""
    last_draft: str = ""
    models_dir: str = ""  # "" = the default folder (SPECULA_MODELS_DIR still wins)
    extra_model_dirs: list[str] = field(default_factory=list)  # indexed in place, never copied

    # -- persistence ---------------------------------------------------------
    @staticmethod
    def path() -> Path:
        return paths.config_dir() / FILE_NAME

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        path = path or cls.path()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            log.warning("settings file %s unreadable (%s); using defaults", path, exc)
            return cls()
        if not isinstance(raw, dict):
            log.warning("settings file %s is not an object; using defaults", path)
            return cls()
        return cls.from_dict(migrate(raw))

    def save(self, path: Path | None = None) -> None:
        path = path or self.path()
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")
        os.replace(tmp, path)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        out = _fill(cls, data)
        assert isinstance(out, Settings)
        out.schema_version = SCHEMA_VERSION
        if out.theme not in THEMES:
            out.theme = "dark"
        if out.token_colours not in TOKEN_COLOURS:
            out.token_colours = "source"
        return out

    # -- helpers -------------------------------------------------------------
    def remember(self, kind: str, model_path: str) -> None:
        """Put ``model_path`` first in the recent list for ``kind`` (target | draft)."""
        recent = self.recent_targets if kind == "target" else self.recent_drafts
        if model_path in recent:
            recent.remove(model_path)
        recent.insert(0, model_path)
        del recent[RECENT_MAX:]
        if kind == "target":
            self.last_target = model_path
        else:
            self.last_draft = model_path

    def add_extra_dir(self, folder: str) -> bool:
        """Index ``folder`` too (False when it is already listed)."""
        folder = str(Path(folder).expanduser())
        if folder in self.extra_model_dirs:
            return False
        self.extra_model_dirs.append(folder)
        return True


_NESTED: dict[str, type] = {"generation": GenerationDefaults, "speculative": SpeculativeDefaults}


def _fill(cls: type, data: dict[str, Any]) -> object:
    """An instance of dataclass ``cls`` from ``data``, keeping only well-typed values."""
    default = cls()
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        current = getattr(default, f.name)
        if f.name in _NESTED and isinstance(value, dict):
            setattr(default, f.name, _fill(_NESTED[f.name], value))
        elif isinstance(current, bool):
            if isinstance(value, bool):
                setattr(default, f.name, value)
            else:
                log.warning("setting %s: expected true/false, got %r", f.name, value)
        elif isinstance(current, float) and isinstance(value, (int, float)) and not isinstance(
            value, bool
        ):
            setattr(default, f.name, float(value))
        elif isinstance(current, list) and isinstance(value, list):
            setattr(default, f.name, [str(v) for v in value if isinstance(v, str)])
        elif type(value) is type(current):
            setattr(default, f.name, value)
        else:
            log.warning("setting %s: unexpected value %r; using the default", f.name, value)
    return default


def _v1_to_v2(d: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept a boolean ``colour_tokens``; version 2 has ``token_colours``."""
    colour = d.pop("colour_tokens", True)
    d.setdefault("token_colours", "source" if colour else "off")
    return d


def _v2_to_v3(d: dict[str, Any]) -> dict[str, Any]:
    """Version 3 adds the models folder and the extra folders the library indexes."""
    d.setdefault("models_dir", "")
    d.setdefault("extra_model_dirs", [])
    return d


# version n -> n + 1
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a settings dict of any known older schema up to :data:`SCHEMA_VERSION`."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        version = 1
    if version > SCHEMA_VERSION:
        log.warning("settings written by a newer Specula (schema %s); reading what we know", version)
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](dict(data))
        version += 1
    data["schema_version"] = SCHEMA_VERSION
    return data
