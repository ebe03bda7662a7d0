"""The conversations database's layout: one migration per schema version.

``PRAGMA user_version`` holds the schema a file was written with; opening runs
the migrations from there (as qutebrowser's ``misc/sql.py``). Schema 1 is
conversations and messages; schema 2 adds folders and per-conversation
settings. :mod:`specula.core.chat.conversations` reads and writes the rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _v0_to_v1(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created REAL NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX messages_by_conversation ON messages(conversation_id, position);
        """
    )


def _v1_to_v2(db: sqlite3.Connection) -> None:
    """Folders, and per-conversation settings (overflow policy, preset)."""
    db.executescript(
        """
        CREATE TABLE folders (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            created REAL NOT NULL
        );
        ALTER TABLE conversations ADD COLUMN folder_id INTEGER
            REFERENCES folders(id) ON DELETE SET NULL;
        ALTER TABLE conversations ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
        """
    )


# user_version n -> n + 1
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v0_to_v1, _v1_to_v2]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreTooNew(Exception):
    """The database was written by a newer Specula."""


def migrate(db: sqlite3.Connection) -> None:
    """Bring ``db`` to :data:`SCHEMA_VERSION`, one migration per version, each committed
    with its ``user_version``; a database from a newer Specula raises :class:`StoreTooNew`."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"it was written by a newer Specula (schema {version}; this one reads "
            f"{SCHEMA_VERSION})")
    for v in range(version, SCHEMA_VERSION):
        with db:
            MIGRATIONS[v](db)
            db.execute(f"PRAGMA user_version = {v + 1}")
