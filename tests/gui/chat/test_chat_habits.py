"""LM Studio's everyday habits on the chat page, on the real engine with the tiny models:
the overflow policy, delete / edit / branch, presets, per-model load defaults, attachments,
folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specula.core.chat import presets
from specula.core.chat.overflow import prompt_budget
from specula.core.library.load_defaults import LoadDefaults, save_defaults
from tests.gui.conftest import send_and_wait


def spy_prompts(page: Any) -> list[list[dict[str, str]]]:
    """Record the messages of every reply the page asks the engine for."""
    sent: list[list[dict[str, str]]] = []
    real = page.client.generate

    def generate(messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append([dict(m) for m in messages])
        return real(messages, *args, **kwargs)

    page.client.generate = generate
    return sent


@pytest.fixture
def small_ctx(make_window, tiny, qtbot):  # type: ignore[no-untyped-def]
    """The tiny pair with a 256-token context (the target's own load default)."""
    save_defaults(tiny["target"], LoadDefaults(n_ctx=256))
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft and w.chat.meter.ready, timeout=60000)
    w.chat.settings_panel.max_tokens.setValue(16)
    w.chat.settings_panel.system_prompt.setPlainText("SYSTEM keep me")
    return w


def test_truncate_middle_keeps_system_prompt_and_latest_turn_and_replies(small_ctx, qtbot):  # type: ignore[no-untyped-def]
    page = small_ctx.chat
    sent = spy_prompts(page)
    budget = prompt_budget(256, 16)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    for i in range(8):
        done = send_and_wait(qtbot, small_ctx, f"turn {i}: {words}")
        assert done.stats.tokens > 0, "every reply runs, the ones after an overflow too"
    last = sent[-1]
    assert last[0] == {"role": "system", "content": "SYSTEM keep me"}
    assert last[-1] == {"role": "user", "content": f"turn 7: {words}"}
    assert page.meter.count(last) <= budget
    left = page.ctx.store.chat_settings(page.conversation_id)["left_out"]
    stored = page.ctx.store.messages(page.conversation_id)
    assert left > 0 and len(last) == 1 + len(stored) - 1 - left  # - the reply, - left out
    assert page.context_bar.left_out.isVisibleTo(page)
    assert page.context_bar.left_out.text() == f"· {left} earlier messages left out of the context"
    assert sum(m.left_out for m in page.transcript.messages) == left
    # Truncate middle keeps the first exchange.
    assert last[1]["content"] == f"turn 0: {words}"


def test_stop_at_the_limit_refuses_with_a_clear_banner(small_ctx, qtbot):  # type: ignore[no-untyped-def]
    page = small_ctx.chat
    page.context_bar.policy.setCurrentIndex(page.context_bar.policy.findData("stop"))
    text = "omega " * 40
    for _ in range(6):
        page.composer.setPlainText(text)
        page.send_button.click()
        if page.reply is None:
            break
        qtbot.waitUntil(lambda: page.reply is None, timeout=120000)
    assert page.reply is None and page.banner.isVisible()
    assert "does not fit the context" in page.banner.title.text()
    assert page.ctx.store.chat_settings(page.conversation_id)["overflow"] == "stop"


def test_token_counter_follows_the_composer(small_ctx, qtbot):  # type: ignore[no-untyped-def]
    page = small_ctx.chat
    done = send_and_wait(qtbot, small_ctx, "hello")
    whole = page.meter.count([{"role": "system", "content": "SYSTEM keep me"},
                              {"role": "user", "content": "hello"},
                              {"role": "assistant", "content": done.text}])
    qtbot.waitUntil(lambda: page.context_bar.tokens.text() == f"{whole} / 256 tokens",
                    timeout=60000)
    typed = "some words typed here"
    page.composer.setPlainText(typed)
    n = page.meter.count_text(typed)
    assert n > 0
    qtbot.waitUntil(lambda: page.context_bar.tokens.text() == f"{whole} + {n} / 256 tokens",
                    timeout=60000)


def test_delete_edit_and_branch_any_message(loaded, qtbot):  # type: ignore[no-untyped-def]
    page = loaded.chat
    send_and_wait(qtbot, loaded, "one")
    send_and_wait(qtbot, loaded, "two")
    source = page.conversation_id
    msgs = page.transcript.messages
    menu = [a.text() for a in page.actions.menu_for(msgs[2]).actions() if a.text()]
    assert menu == ["Copy", "Edit and resend", "Edit text…", "Delete…", "Branch from here"]
    page.actions.delete(msgs[1])  # the first reply
    stored = page.ctx.store.messages(source)
    assert [m.content for m in stored][:2] == ["one", "two"] and len(stored) == 3
    assert len(page.transcript.messages) == 3
    page.actions.edit_text(page.transcript.messages[0], "one, edited")
    assert page.ctx.store.messages(source)[0].content == "one, edited"
    assert page.transcript.messages[0].text == "one, edited"
    new_id = page.actions.branch(page.transcript.messages[1])  # up to "two"
    assert new_id is not None and page.conversation_id == new_id != source
    assert [m.content for m in page.ctx.store.messages(new_id)] == ["one, edited", "two"]
    assert page.conversations.item_for(new_id).toolTip().startswith("Branch: ")
    assert len(page.ctx.store.messages(source)) == 3, "the source is untouched"
    sent = spy_prompts(page)
    done = send_and_wait(qtbot, loaded, "three")
    assert done.stats.tokens > 0
    assert [m["content"] for m in sent[-1] if m["role"] == "user"] == ["one, edited", "two", "three"]


def test_preset_round_trip_through_the_dialog(loaded, qtbot, tmp_path: Path):  # type: ignore[no-untyped-def]
    from specula.gui.chat.presets_dialog import NAME_ROLE, PresetsDialog

    page = loaded.chat
    panel = page.settings_panel
    panel.system_prompt.setPlainText("Preset prompt")
    panel.temperature.setValue(0.7)
    panel.spec.draft_max.setValue(5)
    panel.spec.mode.setCurrentIndex(panel.spec.mode.findData("lookup"))
    dialog = PresetsDialog(panel)
    qtbot.addWidget(dialog)
    dialog.save_current("Mine")
    out = tmp_path / "mine.json"
    dialog.list.setCurrentRow([dialog.list.item(i).data(NAME_ROLE)
                               for i in range(dialog.list.count())].index("Mine"))
    dialog.export_file(str(out))
    presets.delete("Mine")
    dialog.reload()
    assert presets.find("Mine") is None
    with qtbot.waitSignal(dialog.presets_imported, timeout=10000) as imported:
        dialog.import_file(str(out))  # on a worker thread
    assert [p.name for p in imported.args[0]] == ["Mine"]
    # Other values in the panel, then the preset picked: its values come back.
    panel.system_prompt.setPlainText("other")
    panel.temperature.setValue(0.0)
    panel.spec.draft_max.setValue(8)
    panel.spec.mode.setCurrentIndex(panel.spec.mode.findData("chain"))
    page.side.presets.reload()
    page.side.presets.choose("Mine")
    assert panel.system_prompt.toPlainText() == "Preset prompt"
    assert panel.temperature.value() == pytest.approx(0.7)
    assert panel.spec.draft_max.value() == 5 and panel.spec.values().mode == "lookup"
    send_and_wait(qtbot, loaded, "hi")
    assert page.ctx.store.chat_settings(page.conversation_id)["preset"] == "Mine"


def test_per_model_defaults_apply_on_load(make_window, tiny, qtbot):  # type: ignore[no-untyped-def]
    save_defaults(tiny["target"], LoadDefaults(n_ctx=768, draft=str(tiny["draft"]), mode="tree"))
    w = make_window(str(tiny["target"]))  # no draft asked for: the default pairs it
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    engine = w.ctx.engine._worker._engine
    assert engine.n_ctx == 768  # a multiple of 256: llama.cpp rounds a context up to one
    assert Path(w.ctx.engine.draft_info.source) == tiny["draft"]
    assert w.chat.settings_panel.spec.values().mode == "tree"
    assert w.chat.meter.n_ctx == 768


def test_the_gear_dialog_saves_a_models_defaults(make_window, tiny, qtbot):  # type: ignore[no-untyped-def]
    from specula.core.library.scan import LocalModel
    from specula.gui.models.load_defaults_dialog import LoadDefaultsDialog

    model = LocalModel(tiny["target"], [tiny["target"]], 1, tiny["target"].parent, None, None)
    draft = LocalModel(tiny["draft"], [tiny["draft"]], 1, tiny["draft"].parent, None, None)
    d = LoadDefaultsDialog(model, [model, draft])
    qtbot.addWidget(d)
    d.n_ctx.setValue(2048)
    d.draft.setCurrentIndex(d.draft.findData(str(tiny["draft"])))
    d.mode.setCurrentIndex(d.mode.findData("lookup"))
    d.accept()
    from specula.core.library.load_defaults import defaults_for

    assert defaults_for(tiny["target"]) == LoadDefaults(n_ctx=2048, draft=str(tiny["draft"]),
                                                        mode="lookup")


def test_an_attached_file_reaches_the_prompt_as_a_labelled_block(loaded, qtbot, tmp_path: Path):  # type: ignore[no-untyped-def]
    page = loaded.chat
    f = tmp_path / "notes.md"
    f.write_text("# Notes\nthe quick brown fox\n")
    assert page.attach_bar.add_file(str(f)) is not None
    assert page.attach_bar.chips()[0].startswith("notes.md · ")
    sent = spy_prompts(page)
    send_and_wait(qtbot, loaded, "Fix the title")
    user = sent[-1][-1]
    assert user["content"] == ("Attached file: notes.md\n```\n# Notes\nthe quick brown fox\n```"
                               "\n\nFix the title")
    widget = page.transcript.messages[0]
    assert widget.text == "Fix the title" and widget.attachment_chips[0].startswith("notes.md")
    assert page.attach_bar.pending == []
    stored = page.ctx.store.messages(page.conversation_id)[0]
    assert stored.meta["attachments"] == [{"name": "notes.md", "text": "# Notes\nthe quick brown fox\n"}]
    page.open_conversation(page.conversation_id)  # reopened: the chip and the block stay
    assert page.transcript.messages[0].attachment_chips[0].startswith("notes.md")
    send_and_wait(qtbot, loaded, "again")
    assert sent[-1][1]["content"].startswith("Attached file: notes.md")


def test_a_binary_file_is_refused_in_the_banner(loaded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    f = tmp_path / "x.bin"
    f.write_bytes(b"\x00\x01\x02")
    assert page.attach_bar.add_file(str(f)) is None
    assert page.banner.isVisible() and page.attach_bar.pending == []


def drop_on_row(lst: Any, conversation_id: int, row: int) -> None:
    """Drop the conversation's row onto ``row`` as a mouse drag would end."""
    from PySide6.QtCore import QMimeData, QPointF, Qt
    from PySide6.QtGui import QDropEvent

    lst.list.setCurrentItem(lst.item_for(conversation_id))
    target = lst.list.visualItemRect(lst.list.item(row)).center()
    event = QDropEvent(QPointF(target), Qt.DropAction.MoveAction, QMimeData(),
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    lst.list.dropEvent(event)


def test_folders_duplicate_and_move(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    send_and_wait(qtbot, loaded, "first chat")
    cid = page.conversation_id
    lst = page.conversations
    fid = lst.new_folder("Work")
    lst.move(cid, fid)
    texts = [lst.list.item(i).text() for i in range(lst.list.count())]
    assert texts == ["▾ Work  (1)", "    first chat"]
    copy = lst.duplicate(cid)
    assert page.ctx.store.get(copy).folder_id == fid  # type: ignore[union-attr]
    assert len(page.ctx.store.messages(copy)) == 2
    lst.rename_folder(fid, "Projects")
    lst.move(copy, None)
    texts = [lst.list.item(i).text() for i in range(lst.list.count())]
    assert texts == ["first chat (copy)", "▾ Projects  (1)", "    first chat"]
    # Dragging the copy onto the folder's row moves it there (the list is rebuilt from the store).
    drop_on_row(lst, copy, 1)
    assert page.ctx.store.get(copy).folder_id == fid  # type: ignore[union-attr]
    lst.new_folder("Empty")
    texts = [lst.list.item(i).text() for i in range(lst.list.count())]
    assert texts == ["▾ Empty  (0)", "▾ Projects  (2)", "    first chat (copy)", "    first chat"]
    lst.search.setText("(copy)")
    texts = [lst.list.item(i).text() for i in range(lst.list.count())]
    assert texts == ["▾ Projects  (1)", "    first chat (copy)"], \
        "while searching, only matches show, and folders without one are hidden"
