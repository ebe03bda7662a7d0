"""Refusals and deletes leave no dead end (issue 45, item 4): a refused message is not
kept (its text goes back to the composer), the refusal's banner and a stale "left out"
note are cleared, a chat that ends in the user's message offers "Generate reply" (and
Enter on an empty composer asks for it), and deleting a chat, a message or a preset asks
first."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from specula.core.chat import presets
from specula.core.chat.presets import Preset
from specula.core.library.load_defaults import LoadDefaults, save_defaults
from tests.gui.conftest import send_and_wait


@pytest.fixture
def small_ctx(make_window, tiny, qtbot):  # type: ignore[no-untyped-def]
    """The tiny pair with a 256-token context (the target's own load default)."""
    save_defaults(tiny["target"], LoadDefaults(n_ctx=256))
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft and w.chat.meter.ready, timeout=60000)
    w.chat.settings_panel.max_tokens.setValue(16)
    return w


def _policy(page: Any, value: str) -> None:
    page.context_bar.policy.setCurrentIndex(page.context_bar.policy.findData(value))


def test_a_refusal_keeps_nothing_and_clears_once_a_reply_goes_through(small_ctx, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = small_ctx.chat
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    for i in range(12):  # truncate middle (the default) until it leaves messages out
        send_and_wait(qtbot, small_ctx, f"turn {i}: {words}")
        if page.ctx.store.chat_settings(page.conversation_id).get("left_out"):
            break
    assert not page.context_bar.left_out.isHidden()
    # a policy that leaves nothing out: no note saying something is left out
    _policy(page, "stop")
    assert page.context_bar.left_out.isHidden()
    assert not any(m.left_out for m in page.transcript.messages)
    stored = [m.content for m in page.ctx.store.messages(page.conversation_id)]
    # the conversation is over the context: the next message is refused...
    refused = f"one more: {words}"
    page.composer.setPlainText(refused)
    page.send_button.click()
    assert page.reply is None and "does not fit the context" in page.banner.title.text()
    # ... and not kept: neither stored nor shown unanswered; its text is back to edit
    assert [m.content for m in page.ctx.store.messages(page.conversation_id)] == stored
    assert page.transcript.messages[-1].role == "assistant"
    assert page.composer.toPlainText() == refused
    assert page.generate_button.isHidden()
    # a policy that makes room, and the reply goes through: the refusal's banner goes
    _policy(page, "truncate_middle")
    done = send_and_wait(qtbot, small_ctx, refused)
    assert done.stats.tokens > 0 and page.banner.isHidden()


def test_a_chat_ending_in_the_users_message_offers_generate_reply(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.actions.confirm = lambda *_a: True
    send_and_wait(qtbot, loaded, "one")
    assert page.generate_button.isHidden()
    page.actions.delete(page.transcript.messages[1])  # the reply
    assert not page.generate_button.isHidden()
    with qtbot.waitSignal(page.reply_finished, timeout=120000):
        page.generate_button.click()
    roles = [m.role for m in page.ctx.store.messages(page.conversation_id)]
    assert roles == ["user", "assistant"] and page.generate_button.isHidden()
    page.actions.delete(page.transcript.messages[1])
    page.composer.setFocus()
    with qtbot.waitSignal(page.reply_finished, timeout=120000):
        qtbot.keyClick(page.composer, Qt.Key.Key_Return)  # Enter, the composer empty
    roles = [m.role for m in page.ctx.store.messages(page.conversation_id)]
    assert roles == ["user", "assistant"]
    # Enter on an empty composer after a reply asks for nothing
    qtbot.keyClick(page.composer, Qt.Key.Key_Return)
    assert page.reply is None and len(page.ctx.store.messages(page.conversation_id)) == 2


def _trigger(menu: Any, text: str) -> None:
    (action,) = [a for a in menu.actions() if a.text() == text]
    action.trigger()


def test_deleting_a_message_a_chat_or_a_preset_asks_first(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    from specula.gui.chat.presets_dialog import NAME_ROLE, PresetsDialog

    page = loaded.chat
    send_and_wait(qtbot, loaded, "one")
    cid = page.conversation_id
    asked: list[str] = []
    answer = {"yes": False}

    def confirm(_parent: Any, _title: str, text: str) -> bool:
        asked.append(text)
        return answer["yes"]

    # a message
    page.actions.confirm = confirm
    _trigger(page.actions.menu_for(page.transcript.messages[1]), "Delete…")
    assert len(asked) == 1 and len(page.ctx.store.messages(cid)) == 2  # "No" keeps it
    answer["yes"] = True
    _trigger(page.actions.menu_for(page.transcript.messages[1]), "Delete…")
    assert len(asked) == 2 and len(page.ctx.store.messages(cid)) == 1
    # a chat
    answer["yes"] = False
    convs = page.conversations
    convs.confirm = confirm
    _trigger(convs.chat_menu(convs.item_for(cid)), "Delete…")
    assert len(asked) == 3 and page.ctx.store.get(cid) is not None
    answer["yes"] = True
    _trigger(convs.chat_menu(convs.item_for(cid)), "Delete…")
    assert page.ctx.store.get(cid) is None
    # a preset
    presets.save(Preset("Mine", "prompt", "chain", {}, ""))
    dialog = PresetsDialog(page.settings_panel)
    qtbot.addWidget(dialog)
    dialog.confirm = confirm
    names = [dialog.list.item(i).data(NAME_ROLE) for i in range(dialog.list.count())]
    dialog.list.setCurrentRow(names.index("Mine"))
    answer["yes"] = False
    dialog.delete()
    assert len(asked) == 5 and presets.find("Mine") is not None
    answer["yes"] = True
    dialog.delete()
    assert len(asked) == 6 and presets.find("Mine") is None
