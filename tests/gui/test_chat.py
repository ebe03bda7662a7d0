"""The chat page on the real engine with the tiny models."""

from __future__ import annotations

from PySide6.QtCore import Qt

from specula.core.engine.events import StopReason
from specula.gui import errors
from specula.gui.chat.model_pickers import USABLE_ROLE
from tests.gui.conftest import close_window, send_and_wait


def test_reply_streams_with_speculative_stats(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    batches = []
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        page.composer.setPlainText("hello world, the draft model")
        qtbot.keyClick(page.composer, Qt.Key.Key_Return)
        assert page.reply is not None
        page.reply.batch_arrived.connect(batches.append)
    done = blocker.args[0]
    assert batches, "tokens arrive in batches while the reply runs"
    assert sum(len(b.tokens) for b in batches) == done.stats.tokens
    assert done.stats.mode == "chain" and done.stats.accepted > 0
    reply = page.transcript.messages[-1]
    assert reply.role == "assistant" and reply.text == done.text != ""
    assert any(src == "d" for _t, src, _p in reply.tokens)  # accepted draft tokens coloured
    assert f"{done.stats.accepted}/{done.stats.drafted} draft tokens accepted" in reply.footer.text()
    qtbot.waitUntil(lambda: page.stats_panel.values["accepted"].text() == str(done.stats.accepted))
    assert int(page.stats_panel.values["accepted"].text()) > 0
    f = page.stats_panel.figures
    assert f is not None and f.tokens == done.stats.tokens
    assert page.stats_panel.values["backend"].text() == page.client.backend != ""


def test_draft_switch_changes_the_next_reply(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    assert send_and_wait(qtbot, loaded, "first").stats.mode == "chain"
    page.model_bar.draft_switch.setChecked(False)
    plain = send_and_wait(qtbot, loaded, "second")
    assert plain.stats.mode == "plain" and plain.stats.drafted == 0
    assert page.client.has_draft, "the draft stays loaded"
    page.model_bar.draft_switch.setChecked(True)
    assert send_and_wait(qtbot, loaded, "third").stats.mode == "chain"


def test_stop_keeps_partial_text(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(3000)
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        page.composer.setPlainText("go on for a while")
        page.send_button.click()
        page.reply.batch_arrived.connect(lambda _b: qtbot.keyClick(page.composer, Qt.Key.Key_Escape))
    done = blocker.args[0]
    assert done.stop_reason is StopReason.CANCELLED
    assert 0 < done.stats.tokens < 3000 and done.text
    stored = page.ctx.store.messages(page.conversation_id)
    assert stored[-1].role == "assistant" and stored[-1].content == done.text
    assert stored[-1].meta["stop_reason"] == "cancelled"
    assert "stopped by you" in page.transcript.messages[-1].footer.text()


def test_regenerate_and_edit(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    send_and_wait(qtbot, loaded, "one")
    with qtbot.waitSignal(page.reply_finished, timeout=120000):
        page.transcript.messages[-1].regen_button.click()
    assert [m.role for m in page.ctx.store.messages(page.conversation_id)] == ["user", "assistant"]
    page.transcript.messages[0].edit_button.click()
    assert page.composer.toPlainText() == "one" and page.edit_banner.isVisibleTo(page)
    send_and_wait(qtbot, loaded, "one, edited")
    stored = page.ctx.store.messages(page.conversation_id)
    assert (stored[0].role, stored[0].content) == ("user", "one, edited")
    assert len(stored) == 2 and len(page.transcript.messages) == 2


def test_conversation_survives_reopening(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    w.chat.settings_panel.max_tokens.setValue(12)
    done = send_and_wait(qtbot, w, "remember me")
    close_window(w)
    again = make_window()
    page = again.chat
    assert [m.role for m in page.transcript.messages] == ["user", "assistant"]
    assert page.transcript.messages[0].text == "remember me"
    assert page.transcript.messages[1].text == done.text
    assert "tok/s" in page.transcript.messages[1].footer.text()
    assert page.conversations.list.count() == 1
    assert page.conversations.list.item(0).text() == "remember me"


def test_draft_picker_disables_incompatible(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    bar = w.chat.model_bar
    w.ctx.settings.recent_drafts = [str(tiny["other"]), str(tiny["draft"])]
    with qtbot.waitSignal(bar.drafts_checked, timeout=30000):
        bar.choose_target(str(tiny["target"]))
    model = bar.draft_model
    rows = [model.item(r) for r in range(model.rowCount())]
    assert rows[1].data(USABLE_ROLE) is True and rows[1].isEnabled()  # compatible first
    other = rows[2]
    assert "— incompatible: " in other.text() and not other.isEnabled()
    assert "Tokenizer types differ" in other.toolTip() or "differ" in other.toolTip()
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    with qtbot.waitSignal(w.ctx.engine.load_failed, timeout=30000):
        bar.choose_draft(str(tiny["other"]))
    banner = w.chat.banner
    assert banner.isVisible() and "cannot serve as a draft" in banner.title.text()
    assert not w.ctx.engine.has_draft


def test_bad_file_gives_clear_message(make_window, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a gguf file at all" * 10)
    w = make_window()
    with qtbot.waitSignal(w.ctx.engine.load_failed, timeout=30000) as blocker:
        w.chat.model_bar.choose_target(str(bad))
    kind, message = blocker.args
    assert kind == "target" and message
    banner = w.chat.banner
    # the reason as the sentence, the file named in the title, the whole message in Details
    assert banner.isVisible() and banner.sentences == [message.removeprefix(f"{bad}: ")]
    assert "broken.gguf" in banner.title.text() and banner.details.text() == message
    assert errors.shown_errors == [], "a banner, not a modal dialog"
    assert not w.ctx.engine.has_target and w.chat.model_bar.progress.isHidden()


def test_load_can_be_cancelled(loaded, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, engine = loaded.chat, loaded.ctx.engine
    bar = page.model_bar
    page.settings_panel.max_tokens.setValue(3000)
    page.composer.setPlainText("keep the engine busy")
    page.send_button.click()  # the load below queues behind this reply on the engine thread
    with qtbot.waitSignal(engine.load_cancelled, timeout=60000) as blocker:
        bar.choose_target(str(tiny["exact_draft"]))
        assert bar.progress.isVisibleTo(bar) and bar.cancel.isVisibleTo(bar)
        bar.cancel.click()  # set before the worker reaches the load: its first progress call stops it
        page.stop()
    assert blocker.args == ["target"]
    assert engine.target_info.display_name == "tiny-target", "the loaded target stays"
    assert bar.progress.isHidden() and "cancelled" in bar.status.text()
