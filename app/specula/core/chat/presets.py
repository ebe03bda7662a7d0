"""Presets: a system prompt, sampling and draft settings saved under a name.

A preset is applied to a chat (the chat remembers its name); it is kept in
``presets.json`` under ``paths.config_dir()`` and moves between machines as a
JSON file (:func:`export_json` / :func:`import_json`). A few presets ship with
Specula; each says what it does to speculation, since sampling settings decide
how often a draft's guess is the target's choice.

Values are checked against :data:`FIELDS` (name -> type, range): a file with a
value of the wrong kind or out of range is refused with a sentence naming it,
never half applied. The field names are those of the settings'
``GenerationDefaults`` and ``SpeculativeDefaults`` (this floor sits below
``core.settings``, so the names are the contract).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specula.core import files, json_files, paths

log = logging.getLogger("specula.presets")

FILE_NAME = "presets.json"
FORMAT = "specula-preset"
MODES = ("chain", "adaptive", "tree", "lookup")

# name -> (type, low, high); the generation fields first, then the speculative ones.
GENERATION_FIELDS: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 2.0),
    "top_k": (int, 0, 1000),
    "top_p": (float, 0.0, 1.0),
    "min_p": (float, 0.0, 1.0),
    "max_tokens": (int, 1, 32768),
    "seed": (int, -1, 2**31 - 1),
}
SPECULATIVE_FIELDS: dict[str, tuple[type, float, float]] = {
    "draft_max": (int, 1, 32),
    "draft_min": (int, 0, 32),
    "p_min": (float, 0.0, 1.0),
}
FIELDS = {**GENERATION_FIELDS, **SPECULATIVE_FIELDS}


class PresetError(ValueError):
    """A preset (or a file of them) that cannot be used; the message says why."""


@dataclass
class Preset:
    name: str
    system_prompt: str = ""
    mode: str = ""
    """A speculative mode from :data:`MODES`; "" keeps the chat's mode."""
    values: dict[str, float | int] = field(default_factory=dict)
    """Only the fields the preset sets (names from :data:`FIELDS`)."""
    speculation: str = ""
    """What the preset does to speculation, in a sentence (shown next to it)."""
    shipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "system_prompt": self.system_prompt, "mode": self.mode,
                "values": dict(self.values), "speculation": self.speculation}

    @classmethod
    def from_dict(cls, data: object) -> Preset:
        """A checked preset; :class:`PresetError` names the first bad value."""
        if not isinstance(data, dict):
            raise PresetError("a preset must be a JSON object")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise PresetError("a preset needs a non-empty \"name\"")
        name = name.strip()
        system = data.get("system_prompt", "")
        if not isinstance(system, str):
            raise PresetError(f"{name}: \"system_prompt\" must be text")
        mode = data.get("mode", "")
        if mode not in ("", *MODES):
            raise PresetError(f"{name}: \"mode\" must be one of {', '.join(MODES)} (got {mode!r})")
        speculation = data.get("speculation", "")
        if not isinstance(speculation, str):
            raise PresetError(f"{name}: \"speculation\" must be text")
        raw = data.get("values", {})
        if not isinstance(raw, dict):
            raise PresetError(f"{name}: \"values\" must be an object")
        values: dict[str, float | int] = {}
        for key, value in raw.items():
            if key not in FIELDS:
                raise PresetError(f"{name}: unknown setting {key!r} (known: {', '.join(FIELDS)})")
            kind, lo, hi = FIELDS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise PresetError(f"{name}: {key} must be a number (got {value!r})")
            if kind is int and value != int(value):
                raise PresetError(f"{name}: {key} must be a whole number (got {value!r})")
            if not lo <= value <= hi:
                raise PresetError(f"{name}: {key} = {value} is outside {lo:g}..{hi:g}")
            values[key] = int(value) if kind is int else float(value)
        return cls(name, system, str(mode), values, speculation)


SHIPPED: tuple[Preset, ...] = (
    Preset(
        "Code, greedy",
        "You are a careful programming assistant. Answer with working code and short "
        "explanations.",
        "adaptive", {"temperature": 0.0, "max_tokens": 1024, "draft_max": 8},
        "Greedy: the draft only has to guess the target's top token, so acceptance is at its "
        "highest; the adaptive chain drafts long where code repeats.", shipped=True),
    Preset(
        "Document editing",
        "You edit the user's document. Reply with the full revised text, changing only what "
        "was asked.",
        "lookup", {"temperature": 0.0, "max_tokens": 2048},
        "Prompt lookup copies unchanged runs of the document: no draft model needed, and most "
        "of an edited file comes from the prompt.", shipped=True),
    Preset(
        "Balanced",
        "You are a helpful assistant.",
        "adaptive", {"temperature": 0.7, "top_p": 0.95, "min_p": 0.05},
        "Sampling at 0.7: the draft is right less often; the adaptive chain shortens its "
        "drafts, and the text stays exactly the target's for the seed.", shipped=True),
    Preset(
        "Creative",
        "You are an imaginative writer.",
        "adaptive", {"temperature": 1.0, "top_p": 0.98, "min_p": 0.02, "max_tokens": 1024},
        "Temperature 1.0: acceptance falls; the adaptive policy drafts little or nothing where "
        "it does not pay, so speed is close to plain decoding.", shipped=True),
)


def _path() -> Path:
    return paths.config_dir() / FILE_NAME


def load_user(path: Path | None = None) -> list[Preset]:
    """The user's saved presets; an unreadable file or a bad entry is logged and skipped."""
    path = path or _path()
    raw = json_files.load(json_files.JsonFile(
        path, "presets file", {"presets": list},
        consequence="Only the presets that ship with Specula are listed")).value
    out: list[Preset] = []
    for item in raw.get("presets", []) if raw is not None else []:
        try:
            out.append(Preset.from_dict(item))
        except PresetError as exc:
            log.warning("preset skipped: %s", exc)
    return out


def all_presets(path: Path | None = None) -> list[Preset]:
    """Shipped presets, then the user's (a user preset with a shipped name replaces it)."""
    user = load_user(path)
    names = {p.name for p in user}
    return [*(p for p in SHIPPED if p.name not in names), *user]


def find(name: str, path: Path | None = None) -> Preset | None:
    return next((p for p in all_presets(path) if p.name == name), None)


def save_user(presets: list[Preset], path: Path | None = None) -> None:
    """Write the user's presets atomically."""
    path = path or _path()
    data = {"format": FORMAT, "version": 1, "presets": [p.to_dict() for p in presets]}
    files.atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False))


def save(preset: Preset, path: Path | None = None) -> None:
    """Add or replace (by name) one user preset."""
    save_many([preset], path)


def save_many(new: list[Preset], path: Path | None = None) -> None:
    """Add or replace (by name) several user presets in one read and one write: an
    import of thousands costs one file write, not one per preset (a later one of the
    same name wins, as if they were saved one after the other)."""
    for preset in new:
        Preset.from_dict(preset.to_dict())  # refuse what could not be read back
    by_name = {p.name: p for p in load_user(path)}
    for preset in new:
        by_name.pop(preset.name, None)  # re-added at the end, like save() did
        by_name[preset.name] = preset
    save_user(list(by_name.values()), path)


def delete(name: str, path: Path | None = None) -> None:
    save_user([p for p in load_user(path) if p.name != name], path)


def export_json(preset: Preset) -> str:
    """One preset as the JSON text of a file to share."""
    return json.dumps({"format": FORMAT, "version": 1, **preset.to_dict()}, indent=2,
                      ensure_ascii=False)


def import_json(text: str) -> list[Preset]:
    """The presets in an exported file (one preset, or ``{"presets": [...]}``); all or nothing."""
    try:
        data = json_files.parse(text)
    except json_files.JsonError as exc:
        raise PresetError(f"not a presets file: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("presets"), list):
        return [Preset.from_dict(p) for p in data["presets"]]
    return [Preset.from_dict(data)]
