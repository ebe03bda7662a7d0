"""One source of truth for state (issue 26, items 2, 4 and 6): the header shows what is
loaded, the Settings page never overwrites a chat's own panel, Continue adds up."""

from __future__ import annotations

import json

from PySide6.QtWidgets import QApplication

from specula.core.chat_session import ChatSession
from specula.gui.chat.model_pickers import PATH_ROLE
from tests.gui.conftest import send_and_wait


def _shown(combo) -> str:  # type: ignore[no-untyped-def]
    i = combo.currentIndex()
    return str(combo.itemData(i, PATH_ROLE)) if i >= 0 else ""


# -- item 2 ----------------------------------------------------------------------------

def test_a_settings_page_change_keeps_the_chat_panel(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    form = w.chat.settings_panel.spec
    form.mode.setCurrentIndex(form.mode.findData("chain"))
    form.draft_max.setValue(4)
    saved = json.loads(ChatSession.path().read_text())["speculative"]
    assert (saved["mode"], saved["draft_max"]) == ("chain", 4)
    settings = w.show_page("settings")
    other = 1 - settings.theme.currentIndex()  # dark <-> light: saves the whole page
    settings.theme.setCurrentIndex(other)
    QApplication.processEvents()
    assert w.ctx.settings.speculative.mode != "chain"  # the defaults are another thing
    assert (form.values().mode, form.values().draft_max) == ("chain", 4)
    assert json.loads(ChatSession.path().read_text())["speculative"] == saved


def test_defaults_still_reach_a_panel_that_has_none_of_its_own(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    settings = w.show_page("settings")
    settings.spec.draft_max.setValue(3)  # a new default, before the chat chose anything
    assert w.chat.settings_panel.spec.values().draft_max == 3
    assert ChatSession.load().speculative is None  # following the defaults, not choosing


# -- item 4 ----------------------------------------------------------------------------

def test_a_failed_target_load_leaves_the_old_pair_shown(loaded, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    bar, e = w.chat.model_bar, w.ctx.engine
    target, draft = e.target_info.source, e.draft_info.source
    qtbot.waitUntil(lambda: _shown(bar.draft_combo) == draft, timeout=30000)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    checked: list[int] = []
    bar.drafts_checked.connect(lambda: checked.append(bar._check_id))
    with qtbot.waitSignal(e.load_failed, timeout=30000):
        bar.choose_target(str(junk))
    qtbot.waitUntil(lambda: bool(checked) and checked[-1] == bar._check_id, timeout=30000)
    assert e.target_info.source == target and e.draft_info.source == draft  # still in use
    assert _shown(bar.target_combo) == target
    assert _shown(bar.draft_combo) == draft
    assert w.ctx.settings.last_target == target and w.ctx.settings.last_draft == draft
    assert "tiny-target" in bar.status.full_text() and "No draft" not in bar.status.full_text()


def test_a_refused_draft_leaves_the_loaded_draft_shown(loaded, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    bar, e = w.chat.model_bar, w.ctx.engine
    draft = e.draft_info.source
    with qtbot.waitSignal(e.load_failed, timeout=30000):
        bar.choose_draft(str(tiny["other"]))
    assert e.draft_info.source == draft
    assert _shown(bar.draft_combo) == draft
    assert w.ctx.settings.last_draft == draft
    assert bar.draft_switch.speculating


def test_relaunch_shows_the_draft_as_loading_until_it_is(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    first = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: first.ctx.engine.has_draft, timeout=60000)
    first.close()
    first.ctx.close()
    w = make_window()  # a relaunch: restore_session loads the last pair
    bar = w.chat.model_bar
    seen: list[tuple[str, str]] = []

    def on_target(_info: object) -> None:  # after the bar's own slot, before the draft's
        seen.append((bar.status.full_text(), bar.draft_switch.text()))

    w.ctx.engine.target_loaded.connect(on_target)
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    status, switch = seen[0]
    assert "Draft: loading" in status and "No draft" not in status
    assert "loading" in switch and "off" not in switch
    assert bar.draft_switch.text() == "Speculative: on"


# -- item 6 ----------------------------------------------------------------------------

def test_continue_adds_the_statistics_up(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    page = w.chat
    page.settings_panel.max_tokens.setValue(6)
    first = send_and_wait(qtbot, w, "count to twenty")
    assert first.stop_reason.value == "length"
    widget = page.transcript.messages[-1]
    assert widget.continue_button.isVisibleTo(widget)
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        widget.continue_button.click()
    then = blocker.args[0]
    stored = w.ctx.store.messages(page.conversation_id)[-1]
    stats = stored.meta["stats"]
    assert stats["tokens"] == first.stats.tokens + then.stats.tokens == len(stored.meta["token_ids"])
    assert stats["drafted"] == first.stats.drafted + then.stats.drafted
    assert f"{first.stats.tokens + then.stats.tokens} tokens" in widget.footer.text()


def test_a_stopped_reply_offers_continue(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    store = w.ctx.store
    cid = store.create("stopped").id
    store.add_message(cid, "user", "hi")
    store.add_message(cid, "assistant", "partial", {"stop_reason": "cancelled",
                                                    "token_ids": [1, 2, 3], "stats": {}})
    w.chat.open_conversation(cid)
    last = w.chat.transcript.messages[-1]
    assert last.continue_button.isVisibleTo(last)
