"""A healthy database is never set aside: one another process holds, or one the system
refuses to write, is told apart from a damaged one (issue 46, defects 4 and 6).

Before: another process holding ``BEGIN EXCLUSIVE`` past the 5 s busy timeout made
the store log "it is damaged (database is locked)", rename the file to ``.bad-...``
and start empty while the other process kept writing the renamed file; a read-only
file (``chattr +i``) opened without a word, and every write then raised
"attempt to write a readonly database".
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.chat.conversations import ConversationStore

TINY_WAIT_S = 0.01  # the busy timeout these tests give the store: the lock never ends


def _store_with_history(path: Path) -> int:
    store = ConversationStore(path)
    cid = store.create("kept").id
    store.add_message(cid, "user", "hello")
    store.add_message(cid, "assistant", "hi there", {"stop_reason": "eos"})
    store.close()
    return cid


@contextlib.contextmanager
def _held_exclusively(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding ``BEGIN EXCLUSIVE`` (no reader or writer gets in)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield other
    finally:
        other.execute("ROLLBACK")
        other.close()


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_locked_database_is_left_alone_with_a_notice(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    cid = _store_with_history(path)
    with _held_exclusively(path) as other:
        store = ConversationStore(path, busy_timeout_s=TINY_WAIT_S)
        assert store.load_notice is not None
        assert "in use by another program" in store.load_notice and "damaged" not in store.load_notice
        assert str(path) in store.load_notice and not store.saved
        assert _files(tmp_path) == ["conversations.sqlite3"]  # nothing renamed, nothing new
        # The session works (in memory) and the other process still writes the real file.
        store.add_message(store.create("this session").id, "user", "not saved")
        other.execute("INSERT INTO conversations(title, created, updated) VALUES ('x', 1, 1)")
        store.close()
    again = ConversationStore(path)  # the lock is gone: the history is all there
    assert again.load_notice is None and again.saved
    assert [m.content for m in again.messages(cid)] == ["hello", "hi there"]
    assert [c.title for c in again.conversations()] == ["kept"]
    again.close()


def test_a_lock_in_another_process_is_busy_not_damage(tmp_path: Path) -> None:
    """The same with the lock held by a second process, as the campaign did."""
    path = tmp_path / "conversations.sqlite3"
    _store_with_history(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
         "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        store = ConversationStore(path, busy_timeout_s=TINY_WAIT_S)
        assert store.load_notice and "in use by another program" in store.load_notice
        store.close()
        assert _files(tmp_path) == ["conversations.sqlite3"]
    finally:
        holder.communicate("")
    assert holder.returncode == 0


def test_a_damaged_database_is_still_set_aside(tmp_path: Path) -> None:
    """Telling busy apart does not keep a really damaged file in the way."""
    path = tmp_path / "conversations.sqlite3"
    path.write_bytes(b"not a database at all" * 100)
    store = ConversationStore(path, busy_timeout_s=TINY_WAIT_S)
    assert store.load_notice and "damaged" in store.load_notice and store.saved
    assert any(name.startswith("conversations.sqlite3.bad-") for name in _files(tmp_path))
    store.close()


def _check_read_only_store(store: ConversationStore, path: Path, cid: int) -> None:
    assert store.load_notice and "read-only" in store.load_notice and not store.saved
    assert "damaged" not in store.load_notice
    assert [m.content for m in store.messages(cid)] == ["hello", "hi there"]  # history shown
    # Every write works (in memory) instead of raising "attempt to write a readonly database".
    store.add_message(cid, "user", "more")
    store.update_chat_settings(cid, preset="Balanced")
    store.rename(cid, "renamed")
    new = store.create("new")
    store.delete(new.id)
    assert [m.content for m in store.messages(cid)] == ["hello", "hi there", "more"]
    assert _files(path.parent) == [path.name]


def test_a_read_only_database_is_shown_and_every_write_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "conversations.sqlite3"
    cid = _store_with_history(path)
    before = path.read_bytes()
    monkeypatch.setattr(ConversationStore, "_connect", _ro_connect_factory())
    store = ConversationStore(path)
    _check_read_only_store(store, path, cid)
    store.close()
    assert path.read_bytes() == before  # left exactly as it was


def _ro_connect_factory():  # type: ignore[no-untyped-def]
    """Opening as the system opens a file it refuses to write: SQLite falls back to
    read-only, which is what ``mode=ro`` asks for (root ignores file modes, so the test
    asks SQLite itself; the chattr test below does it for real where it can)."""
    real = ConversationStore._connect

    def connect(self: ConversationStore, path: Path | str, *, uri: bool = False
                ) -> sqlite3.Connection:
        if not uri and str(path) != ":memory:":
            return real(self, f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        return real(self, path, uri=uri)

    return connect


@pytest.mark.skipif(shutil.which("chattr") is None, reason="needs chattr")
def test_an_immutable_database_is_shown_and_every_write_works(tmp_path: Path) -> None:
    """The campaign's case itself: ``chattr +i`` (root cannot write it either)."""
    path = tmp_path / "conversations.sqlite3"
    cid = _store_with_history(path)
    before = path.read_bytes()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this file system or user cannot set the immutable flag")
    try:
        store = ConversationStore(path)
        _check_read_only_store(store, path, cid)
        store.close()
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert path.read_bytes() == before
