"""LM Studio's habits on the chat page: versions, Continue, export, shortcuts."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut

from specula.core.engine.events import StopReason
from specula.gui.chat.export_menu import write_export
from specula.gui.chat.reply_notes import SAME_TEXT_TITLE
from specula.gui.shortcuts_help import COMPOSER_KEYS, SHORTCUTS
from tests.gui.conftest import send_and_wait


def test_regenerate_keeps_earlier_versions_and_switches(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.temperature.setValue(1.0)
    page.settings_panel.max_tokens.setValue(12)
    first = send_and_wait(qtbot, loaded, "tell me something").text
    texts = [first]
    for _ in range(2):
        with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
            page.transcript.messages[-1].regen_button.click()
        texts.append(blocker.args[0].text)
    reply = page.transcript.messages[-1]
    assert reply.version_label.isVisible() and reply.version_label.text() == "3/3"
    stored = page.ctx.store.messages(page.conversation_id)
    assert len(stored) == 2 and [v["content"] for v in stored[1].meta["versions"]] == texts
    reply.prev_button.click()
    reply.prev_button.click()
    assert reply.version_label.text() == "1/3" and reply.text == first
    assert page.ctx.store.messages(page.conversation_id)[1].content == first  # the kept one
    page.open_conversation(page.conversation_id)  # survives reopening
    again = page.transcript.messages[-1]
    assert again.version_label.text() == "1/3" and again.text == first
    again.next_button.click()
    assert again.text == texts[1] and again.version_label.text() == "2/3"


def test_a_greedy_regeneration_that_repeats_itself_says_why(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    """At temperature 0 a regeneration is the same text: the banner says why, and only then
    (the rule the engine reports is compared with AcceptanceRule.GREEDY)."""
    page = loaded.chat
    page.settings_panel.temperature.setValue(0.0)
    page.settings_panel.max_tokens.setValue(8)
    first = send_and_wait(qtbot, loaded, "tell me something").text
    assert page.banner.title.text() != SAME_TEXT_TITLE
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        page.transcript.messages[-1].regen_button.click()
    assert blocker.args[0].text == first
    assert page.banner.title.text() == SAME_TEXT_TITLE


def test_continue_after_the_token_limit_goes_on_in_the_same_message(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(8)
    cut = send_and_wait(qtbot, loaded, "a long story please")
    assert cut.stop_reason is StopReason.MAX_TOKENS
    reply = page.transcript.messages[-1]
    assert reply.continue_button.isVisible()
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        reply.continue_button.click()
    more = blocker.args[0]
    assert more.prompt_token_ids[-len(cut.token_ids):] == cut.token_ids, "the reply's own ids"
    assert more.stats.prefill_tokens < len(more.prompt_token_ids), "the cached prefix is reused"
    assert len(page.transcript.messages) == 2 and reply.text == cut.text + more.text
    stored = page.ctx.store.messages(page.conversation_id)
    assert len(stored) == 2 and stored[1].content == cut.text + more.text
    assert stored[1].meta["token_ids"] == cut.token_ids + more.token_ids
    # Greedy: the continued text equals one uninterrupted reply of 16 tokens.
    page.settings_panel.max_tokens.setValue(16)
    page.new_chat()
    whole = send_and_wait(qtbot, loaded, "a long story please")
    assert whole.token_ids == cut.token_ids + more.token_ids


def test_export_markdown_and_json(loaded, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    done = send_and_wait(qtbot, loaded, "export me")
    assert page.export_button.isEnabled()
    md = write_export(page.ctx.store, page.conversation_id, tmp_path / "c.md", "markdown").read_text()
    assert "## You\n\nexport me\n" in md and done.text.rstrip() in md
    assert page.transcript.messages[-1].footer.text() in md
    data = json.loads(write_export(page.ctx.store, page.conversation_id, tmp_path / "c.json",
                                   "json").read_text())
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["content"] == done.text
    assert data["messages"][1]["stats"]["tokens"] == done.stats.tokens


def test_every_listed_shortcut_exists_and_f1_shows_them(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    bound = {s.key().toString() for s in w.findChildren(QShortcut)}
    for keys, _what in SHORTCUTS:
        if keys not in COMPOSER_KEYS:
            assert QKeySequence(keys).toString() in bound, keys
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow)
    qtbot.keyClick(w, Qt.Key.Key_F1)
    assert w.shortcuts_help is not None and w.shortcuts_help.isVisible()
    w.shortcuts_help.close()
