"""The SQLite conversation store."""

from __future__ import annotations

from specula.core.chat.conversation_schema import SCHEMA_VERSION
from specula.core.chat.conversations import ConversationStore, title_from


def test_create_add_reopen() -> None:
    store = ConversationStore()
    c = store.create("First")
    store.add_message(c.id, "user", "hello there")
    store.add_message(c.id, "assistant", "hi", {"stats": {"tokens": 2}})
    store.close()
    again = ConversationStore()
    assert again.schema_version == SCHEMA_VERSION
    msgs = again.messages(c.id)
    assert [(m.role, m.content, m.position) for m in msgs] == [
        ("user", "hello there", 0), ("assistant", "hi", 1)]
    assert msgs[1].meta == {"stats": {"tokens": 2}}


def test_rename_delete_search_truncate() -> None:
    store = ConversationStore()
    a = store.create("Alpha")
    b = store.create("Beta")
    store.add_message(b.id, "user", "tell me about 100% speed_up")
    store.add_message(b.id, "assistant", "ok")
    store.rename(a.id, "Gamma")
    assert store.get(a.id).title == "Gamma"  # type: ignore[union-attr]
    assert [c.title for c in store.conversations("gam")] == ["Gamma"]
    assert [c.title for c in store.conversations("100%")] == ["Beta"]
    assert store.conversations("x_y") == []
    store.truncate(b.id, 1)
    assert [m.content for m in store.messages(b.id)] == ["tell me about 100% speed_up"]
    store.delete(b.id)
    assert [c.id for c in store.conversations()] == [a.id]
    assert store.messages(b.id) == []


def test_title_from() -> None:
    assert title_from("  hello\n world ") == "hello world"
    assert title_from("x" * 100).endswith("…")
    assert title_from("") == "New chat"
