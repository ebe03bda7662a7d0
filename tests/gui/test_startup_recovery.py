"""The app starts on damaged user files, says where the old ones are, and keeps running.

Before: a damaged conversations database made the app exit 1 (while its dialog
said "Specula keeps running"); a damaged settings file was silently overwritten.
"""

from __future__ import annotations

from pathlib import Path

from specula.core import paths
from specula.core.chat.conversations import DB_NAME
from specula.core.settings import Settings
from specula.gui import errors


def test_damaged_files_are_set_aside_and_the_user_told(make_window) -> None:  # type: ignore[no-untyped-def]
    db = paths.data_dir() / DB_NAME
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"\x13\x37" * 4096)
    settings = Settings.path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_bytes(b'{"theme": "li')
    w = make_window()
    assert w.isVisible()
    (db_backup,) = db.parent.glob(f"{DB_NAME}.bad-*")
    (settings_backup,) = settings.parent.glob("settings.json.bad-*")
    shown = "\n".join(errors.shown_errors)
    assert str(db_backup) in shown and str(settings_backup) in shown
    assert db_backup.read_bytes() == b"\x13\x37" * 4096
    # The fresh store works: a conversation can be made and read back.
    c = w.ctx.store.create("after recovery")
    assert w.ctx.store.get(c.id) is not None


def test_a_clean_start_shows_nothing(make_window, specula_home: Path) -> None:  # type: ignore[no-untyped-def]
    make_window()
    assert errors.shown_errors == []


def test_a_damaged_ngram_cache_is_set_aside_at_load_and_the_user_told(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot) -> None:
    from specula.core.engine.drafters.ngram_store import cache_dir
    from specula.core.engine.engine import Engine
    from specula.core.gguf.model_info import read_model_info

    cache = Engine._ngram_path(read_model_info(tiny["target"]))
    assert cache.parent == cache_dir()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"not an npz file")
    w = make_window(str(tiny["target"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    qtbot.waitUntil(lambda: any("n-gram cache" in t for t in errors.shown_errors), timeout=10000)
    (aside,) = cache.parent.glob(f"{cache.stem}.bad-*")
    assert aside.read_bytes() == b"not an npz file"
    assert str(aside) in "\n".join(errors.shown_errors)
