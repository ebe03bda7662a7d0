"""Schema 2 of the conversations database: folders, per-chat settings, copies, single deletes.

The old database is built from the CREATE statements of schema 1 exactly as
``conversation_schema._v0_to_v1`` has them (copied here on purpose, not imported:
the old layout is this test's fixed input, and must stay as files of schema 1 are
even if the migration code changes).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from specula.core import paths
from specula.core.chat.conversations import DB_NAME, ConversationStore

SCHEMA_1 = """
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


def old_database(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_1)
    db.execute("INSERT INTO conversations(id, title, created, updated) VALUES (7, 'Old chat', 1, 2)")
    db.execute("""INSERT INTO messages(conversation_id, position, role, content, created, meta)
                  VALUES (7, 0, 'user', 'hello from schema 1', 1, '{}'),
                         (7, 1, 'assistant', 'hi', 2, ?)""", (json.dumps({"stop_reason": "eos"}),))
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


def test_an_old_database_opens_migrated_with_everything_kept() -> None:
    path = paths.data_dir() / DB_NAME
    old_database(path)
    store = ConversationStore()
    assert store.load_notice is None, "migrated, not set aside"
    assert store.schema_version == 2
    [c] = store.conversations()
    assert (c.id, c.title, c.created, c.updated, c.folder_id) == (7, "Old chat", 1.0, 2.0, None)
    msgs = store.messages(7)
    assert [(m.role, m.content) for m in msgs] == [("user", "hello from schema 1"),
                                                  ("assistant", "hi")]
    assert msgs[1].meta == {"stop_reason": "eos"}
    assert store.chat_settings(7) == {}
    # The new columns and table work on the migrated file, and survive reopening.
    f = store.create_folder("Work")
    store.move(7, f.id)
    store.update_chat_settings(7, overflow="rolling_window")
    store.close()
    again = ConversationStore()
    assert again.get(7).folder_id == f.id  # type: ignore[union-attr]
    assert again.chat_settings(7) == {"overflow": "rolling_window"}
    assert [x.name for x in again.folders()] == ["Work"]


def test_folders_rename_delete_keep_their_chats() -> None:
    store = ConversationStore()
    a = store.create("A")
    f = store.create_folder("  ")
    assert f.name == "New folder"
    store.rename_folder(f.id, "Projects")
    store.move(a.id, f.id)
    assert store.get(a.id).folder_id == f.id  # type: ignore[union-attr]
    store.delete_folder(f.id)
    assert store.folders() == []
    assert store.get(a.id).folder_id is None  # type: ignore[union-attr]


def test_duplicate_and_branch_copy_messages_settings_and_folder() -> None:
    store = ConversationStore()
    c = store.create("Source")
    f = store.create_folder("F")
    store.move(c.id, f.id)
    store.update_chat_settings(c.id, preset="Creative")
    for i, role in enumerate(["user", "assistant", "user", "assistant"]):
        store.add_message(c.id, role, f"m{i}", {"n": i})
    dup = store.duplicate(c.id, title="Copy")
    assert (dup.title, dup.folder_id) == ("Copy", f.id)
    assert [m.content for m in store.messages(dup.id)] == ["m0", "m1", "m2", "m3"]
    assert store.chat_settings(dup.id) == {"preset": "Creative"}
    branch = store.duplicate(c.id, title="Branch", upto_position=1)
    assert [(m.content, m.meta) for m in store.messages(branch.id)] == [("m0", {"n": 0}),
                                                                      ("m1", {"n": 1})]
    # The copies are independent of the source.
    store.delete(c.id)
    assert len(store.messages(dup.id)) == 4


def test_delete_one_message_keeps_the_others() -> None:
    store = ConversationStore()
    c = store.create("C")
    ms = [store.add_message(c.id, r, t) for r, t in
          [("user", "a"), ("assistant", "b"), ("user", "c")]]
    store.delete_message(ms[1].id)
    assert [(m.content, m.position) for m in store.messages(c.id)] == [("a", 0), ("c", 2)]
    assert store.add_message(c.id, "assistant", "d").position == 3


def test_chat_settings_merge_and_remove() -> None:
    store = ConversationStore()
    c = store.create("C")
    store.update_chat_settings(c.id, overflow="stop", left_out=4)
    assert store.update_chat_settings(c.id, left_out=None) == {"overflow": "stop"}
