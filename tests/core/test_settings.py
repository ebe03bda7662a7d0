"""Typed settings: defaults, round trip, migration, bad values."""

from __future__ import annotations

import json

from specula.core.engine.config import Mode
from specula.core.settings import SCHEMA_VERSION, Settings, migrate


def test_defaults_when_missing() -> None:
    s = Settings.load()
    assert s.schema_version == SCHEMA_VERSION
    assert s.theme == "dark"


def test_round_trip() -> None:
    s = Settings()
    s.theme = "light"
    s.n_threads = 3
    s.generation.temperature = 0.7
    s.speculative.mode = "tree"
    s.remember("target", "/m/a.gguf")
    s.remember("target", "/m/b.gguf")
    s.remember("target", "/m/a.gguf")
    s.save()
    t = Settings.load()
    assert t == s
    assert t.recent_targets == ["/m/a.gguf", "/m/b.gguf"]
    assert t.last_target == "/m/a.gguf"
    assert t.speculative.to_spec().mode is Mode.TREE
    assert t.speculative.to_spec(enabled=False).mode is Mode.PLAIN


def test_migrates_v1_and_drops_bad_values() -> None:
    path = Settings.path()
    path.write_text(json.dumps({
        "schema_version": 1, "colour_tokens": False, "theme": "purple",
        "n_ctx": "big", "generation": {"temperature": 1, "seed": 7}, "unknown": 1,
    }))
    s = Settings.load()
    assert s.token_colours == "off"
    assert s.theme == "dark"
    assert s.n_ctx == 4096
    assert s.generation.temperature == 1.0
    assert s.generation.to_sampling().seed == 7
    assert migrate({"schema_version": 1})["schema_version"] == SCHEMA_VERSION


def test_corrupt_file_gives_defaults() -> None:
    Settings.path().write_text("{not json")
    assert Settings.load() == Settings()
