"""Conversations in SQLite under ``paths.data_dir()``, Qt-free.

Every write commits at once, so a crash loses nothing that was saved. The
schema and its migrations are in :mod:`specula.core.chat.conversation_schema`. A message carries ``meta``: free JSON for
the reply's statistics, stop reason, token provenance segments and attached
files. A conversation carries ``settings`` (free JSON: overflow policy, what
the last reply left out, the preset) and may sit in a folder.

A database that cannot be used (not SQLite, truncated, damaged pages, written
by a newer Specula, a folder at the path) never stops the app: it is moved
aside as ``conversations.sqlite3.bad-<UTC time>`` (its journal files with it),
a fresh one is started, and :attr:`ConversationStore.load_notice` says where
the old one is. A healthy file is never set aside: one another process keeps
locked (SQLITE_BUSY after the busy timeout) is left alone and the session runs
in memory; one the system refuses to write (SQLITE_READONLY: a read-only or
immutable file) is copied into memory, so its conversations are shown and the
session works, unsaved. Either way the notice says so. A row with a value of
the wrong kind (``created = 'abc'``) is read with that value repaired, and
logged; a message whose ``meta`` is damaged is read with ``{}`` and
:attr:`Message.damaged` saying why.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specula.core import files, paths
from specula.core.chat.conversation_schema import StoreTooNew, migrate
from specula.core.chat.stored_values import read_meta, read_settings

log = logging.getLogger("specula.conversations")

DB_NAME = "conversations.sqlite3"
DEFAULT_TITLE = "New chat"
BUSY_TIMEOUT_S = 5.0
"""How long opening waits for another process's lock before saying the file is in use."""
# SQLite's primary result codes (sqlite3.h; the module has them as names from 3.11 only)
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_CANTOPEN = 5, 6, 8, 14
_BUSY_CODES = frozenset({SQLITE_BUSY, SQLITE_LOCKED})


def _error_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of ``exc`` (None for anything else)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


@dataclass
class Conversation:
    id: int
    title: str
    created: float
    updated: float
    folder_id: int | None = None


@dataclass
class Folder:
    id: int
    name: str


@dataclass
class Message:
    id: int
    conversation_id: int
    position: int
    role: str  # system | user | assistant
    content: str
    created: float
    meta: dict[str, Any] = field(default_factory=dict)
    damaged: str = ""
    """Why the stored meta could not be used ("" when it could): the message is then
    shown with its text only (:mod:`specula.core.chat.stored_values`)."""


class ConversationStore:
    """All conversations; one connection, used from one thread at a time."""

    def __init__(self, path: Path | None = None, *,
                 busy_timeout_s: float | None = None) -> None:
        self.path = path or paths.data_dir() / DB_NAME
        self.load_notice: str | None = None
        """Set when the database could not be used as it is (for the app to say)."""
        self.saved = True
        """False when this session's changes live in memory only (the notice says why)."""
        self._busy_timeout_s = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
        try:
            self._db = self._open(self.path)
        except (sqlite3.DatabaseError, OSError, StoreTooNew) as exc:
            if _error_code(exc) in _BUSY_CODES:
                self._db = self._busy(exc)
            elif _error_code(exc) == SQLITE_READONLY:
                self._db = self._read_only(exc)
            else:
                self._db = self._recover(exc)

    def _connect(self, path: Path | str, *, uri: bool = False) -> sqlite3.Connection:
        # The timeout is SQLite's busy timeout: how long a statement waits for another
        # process's lock before "database is locked".
        db = sqlite3.connect(path, timeout=self._busy_timeout_s, check_same_thread=False,
                             uri=uri)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys = ON")
        return db

    def _open(self, path: Path) -> sqlite3.Connection:
        if path.is_dir():
            raise IsADirectoryError(21, "a folder is in the way", str(path))
        db = self._connect(path)
        try:
            # Reads every page: a truncated or damaged file fails here, not in the middle
            # of a session.
            result = db.execute("PRAGMA quick_check").fetchone()[0]
            if result != "ok":
                raise sqlite3.DatabaseError(f"the integrity check failed ({result})")
            _probe_write(db)
            migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _memory(self) -> sqlite3.Connection:
        db = self._connect(":memory:")
        migrate(db)
        self.saved = False
        return db

    def _busy(self, exc: BaseException) -> sqlite3.Connection:
        """Another process holds the database: it is healthy, so it is left as it is."""
        self.load_notice = (
            f"Your conversations database {self.path} is in use by another program: it "
            f"stayed locked for {self._busy_timeout_s:g} s ({exc}). Specula left it as it is; "
            f"conversations of this session will not be saved. Close the other program "
            f"and start Specula again to see your conversations.")
        log.warning("%s", self.load_notice)
        return self._memory()

    def _read_only(self, exc: BaseException) -> sqlite3.Connection:
        """The system refuses writes (a read-only or immutable file): its conversations are
        copied into memory, so they can be read and the session works, unsaved."""
        try:
            disk = self._connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                db = self._connect(":memory:")
                disk.backup(db)
            finally:
                disk.close()
            migrate(db)
            self.saved = False
        except (sqlite3.DatabaseError, OSError, StoreTooNew) as again:
            db = self._memory()
            shown = f"they cannot be read either ({again})"
        else:
            shown = "its conversations are shown"
        self.load_notice = (
            f"Your conversations database {self.path} is read-only: the system refuses to "
            f"write it ({exc}). Specula left it as it is and {shown}; nothing you do in "
            f"this session will be saved. Make the file writable and start Specula again "
            f"to save conversations.")
        log.warning("%s", self.load_notice)
        return db

    def _recover(self, exc: BaseException) -> sqlite3.Connection:
        why = str(exc) if isinstance(exc, StoreTooNew) else f"it is damaged ({exc})"
        if isinstance(exc, OSError):
            why = f"it cannot be opened ({exc.strerror or exc})"
        elif _error_code(exc) == SQLITE_CANTOPEN:
            why = f"it cannot be opened ({exc})"
        try:
            backup = _set_aside(self.path)
            db = self._open(self.path)
        except (OSError, sqlite3.DatabaseError, StoreTooNew) as again:
            self.load_notice = (
                f"Your conversations database {self.path} cannot be used: {why}. It was left "
                f"as it is ({again}); conversations of this session will not be saved.")
            log.error("%s", self.load_notice)
            return self._memory()
        self.load_notice = (
            f"Your conversations database could not be used: {why}. Specula started a new "
            f"one; the old file is kept as {backup}.")
        log.warning("%s", self.load_notice)
        return db

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    # -- conversations -------------------------------------------------------
    def create(self, title: str = DEFAULT_TITLE) -> Conversation:
        now = time.time()
        with self._db:
            cur = self._db.execute(
                "INSERT INTO conversations(title, created, updated) VALUES (?, ?, ?)",
                (title, now, now),
            )
        assert cur.lastrowid is not None
        return Conversation(cur.lastrowid, title, now, now)

    def get(self, conversation_id: int) -> Conversation | None:
        row = self._db.execute(
            "SELECT * FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        return _conversation(row) if row else None

    def rename(self, conversation_id: int, title: str) -> None:
        with self._db:
            self._db.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE id = ?",
                (title.strip() or DEFAULT_TITLE, time.time(), conversation_id),
            )

    def delete(self, conversation_id: int) -> None:
        with self._db:
            self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def conversations(self, search: str = "") -> list[Conversation]:
        """Newest first; ``search`` matches the title or any message (case-insensitive)."""
        if not search.strip():
            rows = self._db.execute(
                "SELECT * FROM conversations ORDER BY updated DESC, id DESC"
            ).fetchall()
        else:
            like = "%" + search.strip().replace("\\", "\\\\").replace("%", "\\%").replace(
                "_", "\\_"
            ) + "%"
            rows = self._db.execute(
                """SELECT * FROM conversations c WHERE c.title LIKE ? ESCAPE '\\'
                   OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id
                              AND m.content LIKE ? ESCAPE '\\')
                   ORDER BY updated DESC, id DESC""",
                (like, like),
            ).fetchall()
        return [_conversation(r) for r in rows]

    # -- messages ------------------------------------------------------------
    def messages(self, conversation_id: int) -> list[Message]:
        rows = self._db.execute(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY position, id",
            (conversation_id,),
        ).fetchall()
        return [_message(r) for r in rows]

    def add_message(
        self, conversation_id: int, role: str, content: str, meta: dict[str, Any] | None = None
    ) -> Message:
        now = time.time()
        meta = meta or {}
        with self._db:
            row = self._db.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            position = int(row[0])
            cur = self._db.execute(
                """INSERT INTO messages(conversation_id, position, role, content, created, meta)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (conversation_id, position, role, content, now, json.dumps(meta)),
            )
            self._db.execute(
                "UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id)
            )
        assert cur.lastrowid is not None
        return Message(cur.lastrowid, conversation_id, position, role, content, now, meta)

    def update_message(
        self, message_id: int, content: str, meta: dict[str, Any] | None = None
    ) -> None:
        with self._db:
            if meta is None:
                self._db.execute(
                    "UPDATE messages SET content = ? WHERE id = ?", (content, message_id)
                )
            else:
                self._db.execute(
                    "UPDATE messages SET content = ?, meta = ? WHERE id = ?",
                    (content, json.dumps(meta), message_id),
                )

    def truncate(self, conversation_id: int, position: int) -> None:
        """Delete the message at ``position`` and every later one (regenerate, edit)."""
        with self._db:
            self._db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
                (conversation_id, position),
            )

    def delete_message(self, message_id: int) -> None:
        """Delete one message; the others keep their places (positions may have gaps)."""
        with self._db:
            self._db.execute("DELETE FROM messages WHERE id = ?", (message_id,))

    # -- copies --------------------------------------------------------------
    def duplicate(self, conversation_id: int, title: str | None = None,
                  upto_position: int | None = None) -> Conversation:
        """A copy of the conversation (its settings and folder too) as a new one;
        ``upto_position``: only the messages up to that position (a branch)."""
        source = self.get(conversation_id)
        if source is None:
            raise KeyError(f"no conversation {conversation_id}")
        now = time.time()
        limit = upto_position if upto_position is not None else 2**62
        with self._db:
            cur = self._db.execute(
                """INSERT INTO conversations(title, created, updated, folder_id, settings)
                   SELECT ?, ?, ?, folder_id, settings FROM conversations WHERE id = ?""",
                (title or source.title, now, now, conversation_id),
            )
            new_id = cur.lastrowid
            assert new_id is not None
            self._db.execute(
                """INSERT INTO messages(conversation_id, position, role, content, created, meta)
                   SELECT ?, position, role, content, created, meta FROM messages
                   WHERE conversation_id = ? AND position <= ? ORDER BY position, id""",
                (new_id, conversation_id, limit),
            )
        copy = self.get(new_id)
        assert copy is not None
        return copy

    # -- per-conversation settings -------------------------------------------
    def chat_settings(self, conversation_id: int) -> dict[str, Any]:
        """The conversation's own settings (``{}`` when none or unreadable)."""
        row = self._db.execute(
            "SELECT settings FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        data, why = read_settings(row["settings"]) if row else ({}, None)
        if why:
            log.warning("conversation %s: its stored settings are damaged (%s); the defaults "
                        "apply", conversation_id, why)
        return data

    def update_chat_settings(self, conversation_id: int, **values: Any) -> dict[str, Any]:
        """Merge ``values`` into the conversation's settings (None removes a key)."""
        data = self.chat_settings(conversation_id)
        for key, value in values.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        with self._db:
            self._db.execute("UPDATE conversations SET settings = ? WHERE id = ?",
                             (json.dumps(data), conversation_id))
        return data

    # -- folders -------------------------------------------------------------
    def folders(self) -> list[Folder]:
        rows = self._db.execute("SELECT id, name FROM folders ORDER BY name COLLATE NOCASE, id")
        return [Folder(int(r["id"]), str(r["name"])) for r in rows.fetchall()]

    def create_folder(self, name: str) -> Folder:
        name = name.strip() or "New folder"
        with self._db:
            cur = self._db.execute("INSERT INTO folders(name, created) VALUES (?, ?)",
                                   (name, time.time()))
        assert cur.lastrowid is not None
        return Folder(cur.lastrowid, name)

    def rename_folder(self, folder_id: int, name: str) -> None:
        with self._db:
            self._db.execute("UPDATE folders SET name = ? WHERE id = ?",
                             (name.strip() or "New folder", folder_id))

    def delete_folder(self, folder_id: int) -> None:
        """Remove the folder; its conversations stay, outside any folder."""
        with self._db:
            self._db.execute("UPDATE conversations SET folder_id = NULL WHERE folder_id = ?",
                             (folder_id,))
            self._db.execute("DELETE FROM folders WHERE id = ?", (folder_id,))

    def move(self, conversation_id: int, folder_id: int | None) -> None:
        """Put the conversation in a folder (None: outside any folder)."""
        with self._db:
            self._db.execute("UPDATE conversations SET folder_id = ? WHERE id = ?",
                             (folder_id, conversation_id))


def _probe_write(db: sqlite3.Connection) -> None:
    """Write the header's own value back and roll it back: a file the system refuses to
    write (read-only, immutable: SQLite then opens it read-only without a word) fails
    here with SQLITE_READONLY, not at the first reply; a lock another process holds,
    with SQLITE_BUSY after the busy timeout. The file is left as it was."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(f"PRAGMA user_version = {version}")
    finally:
        db.execute("ROLLBACK")


def _set_aside(path: Path) -> Path:
    """Move ``path`` (and its -wal, -shm, -journal files) to ``<name>.bad-<UTC time>``."""
    return files.set_aside(path, "cannot be used", companions=("-wal", "-shm", "-journal"))


def _number(row: sqlite3.Row, column: str, default: float = 0.0) -> float:
    """A REAL column's value; a value of the wrong kind is repaired (and logged)."""
    value = row[column]
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = math.nan
    if not math.isfinite(out):
        log.warning("row %s: %s = %r is not a time; read as %s", row["id"], column, value,
                    default)
        return default
    return out


def _integer(row: sqlite3.Row, column: str, default: int = 0) -> int:
    value = row[column]
    if isinstance(value, int):
        return value
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        log.warning("row %s: %s = %r is not a number; read as %s", row["id"], column, value,
                    default)
        return default


def _conversation(row: sqlite3.Row) -> Conversation:
    created = _number(row, "created")
    folder = row["folder_id"]
    return Conversation(int(row["id"]), str(row["title"]), created,
                        _number(row, "updated", created),
                        folder if isinstance(folder, int) else None)


def _message(row: sqlite3.Row) -> Message:
    meta, why = read_meta(row["meta"])
    if why:
        log.warning("message %s: its stored details are damaged (%s); shown without them",
                    row["id"], why)
    return Message(
        int(row["id"]), int(row["conversation_id"]), _integer(row, "position"), str(row["role"]),
        str(row["content"]), _number(row, "created"), meta, why or "",
    )


def title_from(text: str, limit: int = 48) -> str:
    """A conversation title from its first user message."""
    line = " ".join(text.split())
    return (line[: limit - 1] + "…") if len(line) > limit else (line or DEFAULT_TITLE)
