"""One bad stored value never stops the app: it is read as a damaged message (issue 46,
defect 5).

Before: a message's ``meta`` of 100,000 ``[`` raised RecursionError in
``ConversationStore.messages``; ``{"tokens": 5}`` or ``{"tokens": [1, 2]}`` a TypeError
and ``{"stats": "fast"}`` a ValueError when the chat page showed it; a conversation's
``settings`` of 100,000 ``[`` a RecursionError. Each aborted every start.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from specula.core.chat.conversations import ConversationStore

DEEP = "[" * 100_000
BAD_META = {
    "deep": DEEP,
    "tokens-number": '{"tokens": 5}',
    "tokens-of-numbers": '{"tokens": [1, 2]}',
    "stats-text": '{"stats": "fast"}',
    "token-ids-text": '{"token_ids": "abc"}',
    "versions-of-numbers": '{"versions": [1]}',
    "version-in-a-version": '{"versions": [{"content": "a", "tokens": 5}]}',
    "a-list": "[1, 2]",
    "not-json": "{oops",
    "deep-but-valid-json": "[" * 5_000 + "]" * 5_000,
}


def _store_with(path: Path, column: str, value: str) -> int:
    """A store whose second message (or whose conversation) holds ``value`` in ``column``,
    written straight into the file as another program or a bad disk would."""
    store = ConversationStore(path)
    cid = store.create("chat").id
    store.add_message(cid, "user", "first", {"stop_reason": "eos"})
    store.add_message(cid, "assistant", "second", {"stop_reason": "eos"})
    store.add_message(cid, "user", "third")
    store.close()
    db = sqlite3.connect(path)
    with db:
        if column == "meta":
            db.execute("UPDATE messages SET meta = ? WHERE position = 1", (value,))
        else:
            db.execute("UPDATE conversations SET settings = ? WHERE id = ?", (value, cid))
    db.close()
    return cid


@pytest.mark.parametrize("name", sorted(BAD_META))
def test_a_bad_meta_is_read_as_a_damaged_message(name: str, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cid = _store_with(path, "meta", BAD_META[name])
    store = ConversationStore(path)
    assert store.load_notice is None  # one cell is not a damaged database
    first, second, third = store.messages(cid)
    assert [m.content for m in (first, second, third)] == ["first", "second", "third"]
    assert second.meta == {} and second.damaged  # the reason, for the page to show
    assert first.meta == {"stop_reason": "eos"} and not first.damaged
    assert third.meta == {} and not third.damaged
    # The conversation goes on: a new reply is saved and read back.
    store.add_message(cid, "assistant", "fourth", {"stop_reason": "eos"})
    assert [m.content for m in store.messages(cid)][-1] == "fourth"
    store.close()


def test_the_reason_names_the_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cid = _store_with(path, "meta", BAD_META["tokens-number"])
    store = ConversationStore(path)
    assert "\"tokens\"" in store.messages(cid)[1].damaged
    store.close()
    cid = _store_with(tmp_path / "d.sqlite3", "meta", DEEP)
    store = ConversationStore(tmp_path / "d.sqlite3")
    assert "nested more than" in store.messages(cid)[1].damaged
    store.close()


def test_good_meta_is_kept_whole(tmp_path: Path) -> None:
    """What Specula writes passes the check unchanged, unknown keys included."""
    meta = {"stats": {"tokens": 3, "mode": "chain", "accepted_per_pos": [2, 1]},
            "stop_reason": "eos", "tokens": [["a", "t", None], ["b", "d", 0.5]],
            "token_ids": [1, 2, 3], "versions": [{"content": "x", "tokens": []}], "version": 0,
            "attachments": [{"name": "f.txt", "text": "t"}], "edited": True, "future": {"k": 1}}
    store = ConversationStore(tmp_path / "c.sqlite3")
    cid = store.create().id
    store.add_message(cid, "assistant", "hi", meta)
    [m] = store.messages(cid)
    assert m.meta == meta and not m.damaged
    # a draft probability Specula writes as NaN (json.dumps' NaN) is a value it reads back
    store.add_message(cid, "assistant", "x", {"tokens": [["x", "d", float("nan")]]})
    assert not store.messages(cid)[-1].damaged
    store.close()


@pytest.mark.parametrize("value", [DEEP, '{"left_out": "many"}', '{"start": [1]}', "[1]",
                                   '{"overflow": 5}'])
def test_bad_conversation_settings_read_as_none(value: str, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cid = _store_with(path, "settings", value)
    store = ConversationStore(path)
    assert store.chat_settings(cid) == {}
    # Saving settings again replaces the damaged value.
    assert store.update_chat_settings(cid, preset="Balanced") == {"preset": "Balanced"}
    assert store.chat_settings(cid) == {"preset": "Balanced"}
    copy = store.duplicate(cid)  # copies (now good) settings along
    assert store.chat_settings(copy.id) == {"preset": "Balanced"}
    store.close()
