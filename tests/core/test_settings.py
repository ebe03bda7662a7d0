"""Typed settings: defaults, round trip, migration, bad values."""

from __future__ import annotations

import json

import pytest

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


def test_v2_gains_model_folders(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 2, "theme": "light"}), encoding="utf-8")
    s = Settings.load(path)
    assert (s.schema_version, s.theme, s.models_dir, s.extra_model_dirs) == (SCHEMA_VERSION, "light", "", [])
    assert s.add_extra_dir(str(tmp_path)) and not s.add_extra_dir(str(tmp_path))
    s.save(path)
    assert Settings.load(path).extra_model_dirs == [str(tmp_path)]


# -- damaged and newer files (each lost the user's settings before) ------------

DAMAGED = {
    "truncated": b'{"schema_version": 3, "theme": "li',
    "random bytes": bytes(range(256)) * 4,
    "a JSON list": b'["dark", 4096]',
    "a JSON string": b'"settings"',
    "empty": b"",
    "NUL bytes": b"\0" * 64,
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_an_unreadable_file_is_kept_aside_and_the_user_told(name: str) -> None:
    path = Settings.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(DAMAGED[name])
    s = Settings.load()
    assert s == Settings()
    backups = list(path.parent.glob("settings.json.bad-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == DAMAGED[name]
    assert s.load_notice is not None and str(backups[0]) in s.load_notice
    s.save()  # the first save no longer destroys anything
    assert backups[0].read_bytes() == DAMAGED[name]
    assert Settings.load().load_notice is None


def test_wrong_types_keep_the_good_values_and_a_copy() -> None:
    path = Settings.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    original = json.dumps({"schema_version": 3, "theme": "light", "n_ctx": "big",
                           "generation": {"temperature": float("nan"), "top_k": 7},
                           "recent_targets": ["/a.gguf", 5]})
    path.write_text(original)
    s = Settings.load()
    assert (s.theme, s.n_ctx, s.generation.top_k) == ("light", 4096, 7)
    assert s.generation.temperature == 0.0  # NaN is no temperature
    assert s.recent_targets == ["/a.gguf"]
    assert s.load_notice is not None
    for name in ("n_ctx", "generation.temperature", "recent_targets"):
        assert name in s.load_notice
    (backup,) = path.parent.glob("settings.json.bad-*")
    assert backup.read_text() == original and str(backup) in s.load_notice


def test_utf16_is_read() -> None:
    """Saved by an editor as UTF-16 (with its BOM): the same settings, nothing lost."""
    path = Settings.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(json.dumps({"schema_version": 3, "theme": "light"}).encode("utf-16"))
    s = Settings.load()
    assert s.theme == "light" and s.load_notice is None


def test_a_newer_schema_is_never_downgraded() -> None:
    path = Settings.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "schema_version": 99, "theme": "light", "future_key": {"a": [1, 2]},
        "generation": {"temperature": 0.5, "future_sampler": "xtc"},
    }))
    s = Settings.load()
    assert (s.theme, s.generation.temperature) == ("light", 0.5)
    s.n_threads = 3
    s.save()
    saved = json.loads(path.read_text())
    assert saved["schema_version"] == 99
    assert saved["future_key"] == {"a": [1, 2]}
    assert saved["generation"]["future_sampler"] == "xtc"
    assert saved["generation"]["temperature"] == 0.5 and saved["n_threads"] == 3
    assert "load_notice" not in saved and "_unknown" not in saved


def test_a_directory_at_the_path_is_moved_aside() -> None:
    path = Settings.path()
    path.mkdir(parents=True)
    (path / "inside.txt").write_text("mine")
    s = Settings.load()
    assert s == Settings() and s.load_notice is not None
    (backup,) = path.parent.glob("settings.json.bad-*")
    assert (backup / "inside.txt").read_text() == "mine"
    s.theme = "light"
    s.save()
    assert Settings.load().theme == "light"


def test_a_directory_that_cannot_be_moved_is_never_clobbered(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Settings.path()
    path.mkdir(parents=True)

    def refuse(*_a: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("specula.core.files.os.link", refuse)  # set_aside's two ways
    monkeypatch.setattr("specula.core.files.os.rename", refuse)
    s = Settings.load()
    assert s == Settings() and s.load_notice is not None and "cannot move it aside" in s.load_notice
    with pytest.raises(IsADirectoryError, match="folder is in the way"):
        s.save()
    assert path.is_dir()


V3_SPECULATIVE = {"mode": "adaptive", "draft_max": 4, "draft_min": 0, "p_min": 0.0,
                  "tree_budget": 12, "relaxed_top_k": 0, "relaxed_ratio": 0.0}


def test_v3_untouched_speculative_defaults_gain_the_new_max_draft(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 3, "theme": "light",
                                "speculative": V3_SPECULATIVE}), encoding="utf-8")
    s = Settings.load(path)
    assert s.speculative.draft_max == 8 and s.theme == "light"
    assert s.speculative.to_spec().draft_max == 8
    s.save(path)
    assert json.loads(path.read_text())["speculative"]["draft_max"] == 8


@pytest.mark.parametrize("changed", [{"draft_min": 2}, {"mode": "chain"}, {"p_min": 0.3},
                                     {"draft_max": 3}, {"tree_budget": 6}, {"relaxed_top_k": 5}])
def test_v3_speculative_settings_someone_changed_are_kept(tmp_path, changed) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "settings.json"
    spec = {**V3_SPECULATIVE, **changed}
    path.write_text(json.dumps({"schema_version": 3, "speculative": spec}), encoding="utf-8")
    s = Settings.load(path)
    for key, value in spec.items():
        assert getattr(s.speculative, key) == value, key
