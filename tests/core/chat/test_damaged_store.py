"""A damaged conversations database never stops the app and is never lost.

Before: random bytes, a truncated file, a header alone, ``user_version`` 99 or a
folder at the path made the app exit 1; one row with ``created = 'abc'``
aborted the process.
"""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from specula.core import paths
from specula.core.chat.conversations import DB_NAME, ConversationStore


def _valid_db(path: Path, n: int = 200) -> None:
    """A real store's file with ``n`` conversations (several pages), in one transaction."""
    ConversationStore(path).close()
    db = sqlite3.connect(path)
    with db:
        for i in range(n):
            cid = db.execute("INSERT INTO conversations(title, created, updated) VALUES (?, 1, 1)",
                             (f"chat {i}",)).lastrowid
            db.execute("INSERT INTO messages(conversation_id, position, role, content, created) "
                       "VALUES (?, 0, 'user', ?, 1)", (cid, "hello " * 50))
    db.close()


def _random(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(8192))


def _truncated(path: Path) -> None:
    _valid_db(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _header_only(path: Path) -> None:
    _valid_db(path)
    path.write_bytes(path.read_bytes()[:100])


def _newer(path: Path) -> None:
    _valid_db(path, 3)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()


def _directory(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("mine")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "random bytes": _random, "truncated": _truncated, "header only": _header_only,
    "user_version 99": _newer, "a directory": _directory,
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_a_damaged_database_is_set_aside_and_a_fresh_one_used(name: str) -> None:
    path = paths.data_dir() / DB_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    DAMAGE[name](path)
    before = path.read_bytes() if path.is_file() else None
    store = ConversationStore()
    assert store.load_notice is not None
    (backup,) = path.parent.glob(f"{DB_NAME}.bad-*")
    assert str(backup) in store.load_notice
    if before is not None:
        assert backup.read_bytes() == before  # kept, byte for byte
    else:
        assert (backup / "keep.txt").read_text() == "mine"
    if name == "user_version 99":
        assert "newer Specula (schema 99" in store.load_notice
    c = store.create("after")
    store.add_message(c.id, "user", "still works")
    store.close()
    again = ConversationStore()
    assert again.load_notice is None
    assert [m.content for m in again.messages(c.id)] == ["still works"]


def test_when_nothing_can_be_moved_the_session_runs_in_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = paths.data_dir() / DB_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    _random(path)

    def refuse(*_a: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("specula.core.files.os.link", refuse)  # set_aside's two ways
    monkeypatch.setattr("specula.core.files.os.rename", refuse)
    store = ConversationStore()
    assert store.load_notice is not None and "will not be saved" in store.load_notice
    c = store.create("x")
    assert store.get(c.id) is not None
    assert path.read_bytes() == random.Random(7).randbytes(8192)  # untouched


def test_a_row_with_a_bad_value_is_read_repaired(caplog: pytest.LogCaptureFixture) -> None:
    store = ConversationStore()
    good = store.create("good")
    bad = store.create("bad")
    store.add_message(bad.id, "user", "hi")
    store.close()
    db = sqlite3.connect(paths.data_dir() / DB_NAME)
    db.execute("UPDATE conversations SET created = 'abc', updated = 'x' WHERE id = ?", (bad.id,))
    db.execute("UPDATE messages SET created = 'abc', position = 'p', meta = 'not json'")
    db.commit()
    db.close()
    store = ConversationStore()
    with caplog.at_level(logging.WARNING, "specula.conversations"):
        listed = {c.id: c for c in store.conversations()}
        msgs = store.messages(bad.id)
    assert set(listed) == {good.id, bad.id}
    assert listed[bad.id].created == 0.0 and listed[bad.id].updated == 0.0
    assert [(m.content, m.created, m.position, m.meta) for m in msgs] == [("hi", 0.0, 0, {})]
    assert "created = 'abc' is not a time" in caplog.text
