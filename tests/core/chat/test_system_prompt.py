"""Each conversation keeps its own system prompt (stored with it, copied with it)."""

from __future__ import annotations

from specula.core.chat.conversations import ConversationStore
from specula.core.chat.system_prompt import chat_prompt, remember_prompt, stored_prompt

DEFAULT = "You are a helpful assistant."


def test_each_chat_keeps_its_own_prompt_and_editing_one_leaves_the_other(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ConversationStore(tmp_path / "c.sqlite3")
    a, b = store.create("a").id, store.create("b").id
    remember_prompt(store, a, "Helpful.")
    remember_prompt(store, b, "Terse.")
    remember_prompt(store, b, "Terser.")
    assert chat_prompt(store.chat_settings(a), "Preset prompt", DEFAULT) == "Helpful."
    assert chat_prompt(store.chat_settings(b), None, DEFAULT) == "Terser."
    store.close()
    again = ConversationStore(tmp_path / "c.sqlite3")  # kept across restarts
    assert stored_prompt(again.chat_settings(a)) == "Helpful."


def test_an_emptied_prompt_is_a_prompt_and_copies_keep_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ConversationStore(tmp_path / "c.sqlite3")
    a = store.create("a").id
    remember_prompt(store, a, "")
    assert chat_prompt(store.chat_settings(a), "Preset prompt", DEFAULT) == ""
    copy = store.duplicate(a, "a (copy)")
    assert stored_prompt(store.chat_settings(copy.id)) == ""


def test_a_chat_without_a_prompt_starts_from_its_preset_else_the_default(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ConversationStore(tmp_path / "c.sqlite3")
    old = store.create("saved before prompts were per chat").id
    assert stored_prompt(store.chat_settings(old)) is None
    assert chat_prompt(store.chat_settings(old), "Be terse.", DEFAULT) == "Be terse."
    assert chat_prompt(store.chat_settings(old), None, DEFAULT) == DEFAULT
    assert chat_prompt({"system_prompt": 3}, None, DEFAULT) == DEFAULT  # a damaged value
