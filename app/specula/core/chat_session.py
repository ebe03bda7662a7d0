"""What the chat page was left with: its panel values, kept apart from the defaults.

The Settings page edits *defaults* (``settings.json``); the chat panel's
values are what the user last chose for this chat (max tokens 60, a higher
temperature). LM Studio keeps those across restarts, and so do we, in
``chat-session.json`` beside the settings. "Save as defaults" copies them into
the settings. Loading never fails: a missing file gives ``None`` for each
part, and the panel then starts from the defaults; a damaged one is set aside
with a notice first (:mod:`specula.core.json_files`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from specula.core import files, json_files, paths
from specula.core.settings import GenerationDefaults, Settings, SpeculativeDefaults

log = logging.getLogger("specula.chat.session")

FILE_NAME = "chat-session.json"
VERSION = 1


@dataclass
class ChatSession:
    generation: GenerationDefaults | None = None
    speculative: SpeculativeDefaults | None = None
    side_panel_open: bool = True

    @staticmethod
    def path() -> Path:
        return paths.config_dir() / FILE_NAME

    @classmethod
    def load(cls, path: Path | None = None) -> ChatSession:
        path = path or cls.path()
        raw = json_files.load(json_files.JsonFile(
            path, "chat panel file (the values the chat was left with)",
            # each part of the wrong kind is read as None below, the others kept
            consequence="The chat panel starts from the default settings")).value
        if raw is None:
            return cls()
        # Settings.from_dict already keeps only well-typed values; reuse it per part.
        typed = Settings.from_dict({k: v for k, v in raw.items()
                                    if k in ("generation", "speculative")})
        return cls(
            generation=typed.generation if isinstance(raw.get("generation"), dict) else None,
            speculative=typed.speculative if isinstance(raw.get("speculative"), dict) else None,
            side_panel_open=raw.get("side_panel_open") is not False,
        )

    def save(self, path: Path | None = None) -> None:
        path = path or self.path()
        data: dict[str, Any] = {"version": VERSION, "side_panel_open": self.side_panel_open}
        if self.generation is not None:
            data["generation"] = asdict(self.generation)
        if self.speculative is not None:
            data["speculative"] = asdict(self.speculative)
        files.atomic_write_json(path, data, indent=2)
