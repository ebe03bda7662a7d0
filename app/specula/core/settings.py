"""Typed user settings with a schema version, stored as JSON under ``paths.config_dir()``.

``Settings.load()`` never fails and never loses what the user had:

* a missing file gives the defaults; an older schema is migrated step by step
  (``MIGRATIONS[n]`` turns version ``n`` into ``n + 1``);
* a file that cannot be read as a JSON object (truncated, random bytes, a
  list, a directory at the path) is moved aside as ``settings.json.bad-<UTC
  time>`` and the defaults are used; values of the wrong type fall back to
  their defaults and the file is first copied aside the same way. Either way
  :attr:`Settings.load_notice` says what happened and where the old file is,
  for the app to tell the user;
* a file written by a newer Specula (a higher schema) is read for what this
  version knows; its unknown keys and its schema number are kept, so a save
  never rewrites it as an older schema.

``save()`` writes atomically.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from specula.core import files, paths
from specula.core.engine.config import DEFAULT_DRAFT_MAX, DEFAULT_MODE, Mode, SpecConfig
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.gpu_layers import AUTO as GPU_LAYERS_AUTO

log = logging.getLogger("specula.settings")

SCHEMA_VERSION = 4
FILE_NAME = "settings.json"
RECENT_MAX = 12
THEMES = ("dark", "light", "system")  # system: light or dark as the desktop is
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
    repeat_penalty: float = 1.0  # 1 = off (llama.cpp's repeat_penalty over its last 64 tokens)

    def to_sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            min_p=self.min_p,
            max_tokens=self.max_tokens,
            seed=None if self.seed < 0 else self.seed,
            repeat_penalty=self.repeat_penalty,
        )


@dataclass
class SpeculativeDefaults:
    """Speculative settings; ``mode`` is a :class:`Mode` value other than plain."""

    mode: str = DEFAULT_MODE.value  # the one default mode (core.engine.config)
    draft_max: int = DEFAULT_DRAFT_MAX
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
    n_gpu_layers_target: int = GPU_LAYERS_AUTO  # like the command line: what the free VRAM holds
    n_gpu_layers_draft: int = GPU_LAYERS_AUTO
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
    server_on: bool = False  # the app's local server runs (restored at start)
    server_port: int = 1234  # its port (the server's DEFAULT_PORT, LM Studio's)
    compare_linked: bool = True  # Compare follows the chat panel ("Same as Chat")
    compare_mode: str = ""  # Compare's own mode when not linked ("" = the chat's)

    # What load() found, for the app to tell the user; never saved.
    load_notice: str | None = field(default=None, compare=False, repr=False)
    # Keys a newer Specula wrote (kept on save) and the schema it wrote them with.
    _unknown: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    _file_schema: int = field(default=SCHEMA_VERSION, compare=False, repr=False)

    # -- persistence ---------------------------------------------------------
    @staticmethod
    def path() -> Path:
        return paths.config_dir() / FILE_NAME

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        path = path or cls.path()
        try:
            raw = json.loads(path.read_bytes())  # bytes: UTF-8, -16 and -32 are all read
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:  # a directory, unreadable, not JSON, not text
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return cls._damaged(path, f"it cannot be read ({problem})")
        if not isinstance(raw, dict):
            return cls._damaged(path, f"it holds a JSON {type(raw).__name__}, not settings")
        rejected: list[str] = []
        newer = _schema_of(raw) > SCHEMA_VERSION
        out = cls.from_dict(migrate(dict(raw)), rejected=rejected, keep_unknown=newer)
        if newer:
            out._file_schema = _schema_of(raw)
        if rejected:
            backup = files.set_aside(path, "values of the wrong kind", copy=True)
            out.load_notice = (
                f"Some settings in {path} had values of the wrong kind ({', '.join(rejected)}) "
                f"and were reset to their defaults. The file as it was is kept as {backup}.")
            log.warning("%s", out.load_notice)
        return out

    @classmethod
    def _damaged(cls, path: Path, why: str) -> Settings:
        out = cls()
        try:
            backup = files.set_aside(path, why)
        except OSError as exc:
            out.load_notice = (f"Your settings file {path} could not be used: {why}. Specula "
                               f"started with default settings and cannot move it aside "
                               f"({exc.strerror or exc}); it will not be overwritten.")
        else:
            out.load_notice = (f"Your settings file could not be used: {why}. Specula started "
                               f"with default settings; the old file is kept as {backup}.")
        log.warning("%s", out.load_notice)
        return out

    def save(self, path: Path | None = None) -> None:
        path = path or self.path()
        if path.is_dir():  # left there when it could not be moved aside: never clobber it
            raise IsADirectoryError(21, "a folder is in the way of the settings file", str(path))
        files.atomic_write_json(path, self.to_dict(), indent=2)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in _NOT_SAVED:
            data.pop(name, None)
        data = _merge(self._unknown, data)
        data["schema_version"] = max(SCHEMA_VERSION, self._file_schema)  # never downgrade
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, rejected: list[str] | None = None,
                  keep_unknown: bool = False) -> Settings:
        rejected = rejected if rejected is not None else []
        out = _fill(cls, data, rejected, "")
        assert isinstance(out, Settings)
        out.schema_version = SCHEMA_VERSION
        if out.theme not in THEMES:
            out.theme = "dark"
            rejected.append("theme")
        if out.token_colours not in TOKEN_COLOURS:
            out.token_colours = "source"
            rejected.append("token_colours")
        if keep_unknown:
            out._unknown = _unknown_keys(cls, data)
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
_NOT_SAVED = ("load_notice", "_unknown", "_file_schema")


def _schema_of(raw: dict[str, Any]) -> int:
    v = raw.get("schema_version", 1)
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def _unknown_keys(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that dataclass ``cls`` does not have (nested ones too)."""
    known = {f.name: f for f in fields(cls)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            out[key] = value
        elif key in _NESTED and isinstance(value, dict):
            nested = _unknown_keys(_NESTED[key], value)
            if nested:
                out[key] = nested
    return out


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, nested dicts merged."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _fill(cls: type, data: dict[str, Any], rejected: list[str], prefix: str) -> object:
    """An instance of dataclass ``cls`` from ``data``, keeping only well-typed values;
    the names of the values it had to reject are appended to ``rejected``."""
    default = cls()
    for f in fields(cls):
        if f.name not in data or f.name in _NOT_SAVED or f.name == "schema_version":
            continue
        value = data[f.name]
        current = getattr(default, f.name)
        name = prefix + f.name
        if f.name in _NESTED and isinstance(value, dict):
            setattr(default, f.name, _fill(_NESTED[f.name], value, rejected, name + "."))
        elif isinstance(current, bool):
            if isinstance(value, bool):
                setattr(default, f.name, value)
            else:
                rejected.append(name)
        elif isinstance(current, float):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                setattr(default, f.name, float(value))
            else:
                rejected.append(name)
        elif isinstance(current, list) and isinstance(value, list):
            kept = [v for v in value if isinstance(v, str)]
            if len(kept) != len(value):
                rejected.append(name)
            setattr(default, f.name, kept)
        elif type(value) is type(current):
            setattr(default, f.name, value)
        else:
            rejected.append(name)
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


# Version 3's speculative section as a fresh install saved it (every field is saved).
_V3_SPECULATIVE_DEFAULTS = {"mode": "adaptive", "draft_max": 4, "draft_min": 0, "p_min": 0.0,
                            "tree_budget": 12, "relaxed_top_k": 0, "relaxed_ratio": 0.0}


def _v3_to_v4(d: dict[str, Any]) -> dict[str, Any]:
    """Version 4 drafts up to 8 tokens by default (adaptive's cap; 4 held it below the
    best chains of an F16 target: docs/lab/2026-12-01-adaptive-convergence.md,
    "Max draft 8"). Every field is
    saved, so a version 3 file holds the old default 4 whether or not it was chosen: it
    is raised only where the whole speculative section is still version 3's defaults,
    i.e. nobody touched it; any section someone changed is kept as it is."""
    spec = d.get("speculative")
    if isinstance(spec, dict) and all(
            spec.get(k, v) == v and type(spec.get(k, v)) is type(v)
            for k, v in _V3_SPECULATIVE_DEFAULTS.items()):
        d["speculative"] = {**spec, "draft_max": DEFAULT_DRAFT_MAX}
    return d


# version n -> n + 1
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


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
