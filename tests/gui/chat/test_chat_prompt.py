"""The system prompt belongs to the chat: reopening a chat replies with its own prompt,
not the one the panel showed for another chat (issue 45, item 5)."""

from __future__ import annotations

from specula.core.chat import presets
from specula.core.chat.system_prompt import stored_prompt
from tests.gui.chat.test_chat_habits import spy_prompts
from tests.gui.conftest import send_and_wait

HELPFUL = "You are a helpful assistant."


def test_reopened_chat_replies_with_its_own_prompt(loaded, qtbot):  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(8)  # the prompt is what matters, not the reply
    sent = spy_prompts(page)
    prompt = page.settings_panel.system_prompt
    page.new_chat()
    prompt.setPlainText(HELPFUL)
    send_and_wait(qtbot, loaded, "first chat")
    chat_a = page.conversation_id

    page.new_chat()
    page.side.presets.choose("Creative")  # its prompt replaces the field, for this chat
    page.settings_panel.max_tokens.setValue(8)  # (the preset asks for 1024: short replies)
    creative = presets.find("Creative")
    assert creative is not None and prompt.toPlainText() == creative.system_prompt
    send_and_wait(qtbot, loaded, "second chat")
    chat_b = page.conversation_id
    assert sent[-1][0] == {"role": "system", "content": creative.system_prompt}

    page.open_conversation(chat_a)
    assert prompt.toPlainText() == HELPFUL, "the chat's own prompt is shown"
    send_and_wait(qtbot, loaded, "back in the first chat")
    assert sent[-1][0] == {"role": "system", "content": HELPFUL}

    page.open_conversation(chat_b)
    assert prompt.toPlainText() == creative.system_prompt
    prompt.setPlainText("Only chat B changes.")
    store = page.ctx.store
    assert stored_prompt(store.chat_settings(chat_b)) == "Only chat B changes."
    assert stored_prompt(store.chat_settings(chat_a)) == HELPFUL


def test_new_chat_starts_from_the_preset_in_use_else_the_default(loaded, qtbot):  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(8)
    prompt = page.settings_panel.system_prompt
    page.new_chat()
    prompt.setPlainText("Something typed for one chat.")
    send_and_wait(qtbot, loaded, "hello")
    page.new_chat()  # no preset in use: the Settings page's default prompt
    assert prompt.toPlainText() == page.ctx.settings.generation.system_prompt
    page.side.presets.choose("Creative")
    page.new_chat()  # the preset stays in use for the next chat, and its prompt with it
    creative = presets.find("Creative")
    assert creative is not None and prompt.toPlainText() == creative.system_prompt
