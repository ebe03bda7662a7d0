"""The chat page tells the truth and keeps its state: banner, switch, restore, wheel, theme."""

from __future__ import annotations

import threading

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QDialog

from specula.core.chat_session import ChatSession
from specula.core.library.load_defaults import defaults_for
from specula.core.settings import Settings
from specula.gui import theme
from tests.gui.conftest import close_window


def test_refused_draft_is_a_dismissible_banner_with_human_sentences(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot) -> None:
    w = make_window(str(tiny["target"]))
    w.resize(1024, 700)
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    bar, banner = w.chat.model_bar, w.chat.banner
    qtbot.waitUntil(lambda: not bar.progress.isVisible())  # the target's load has settled
    QApplication.processEvents()
    header_height = bar.height()
    with qtbot.waitSignal(w.ctx.engine.load_failed, timeout=30000):
        bar.choose_draft(str(tiny["other"]))
    qtbot.waitUntil(banner.isVisible)
    assert "tiny-other.gguf cannot serve as a draft" in banner.title.text()
    # One short sentence per failed check, no ids or add_bos flags in them.
    assert "The two models use different kinds of tokenizer." in banner.sentences
    assert all("add_bos" not in s and "target" not in s.split()[0] for s in banner.sentences)
    assert "Tokenizer types differ" in banner.details.text()  # the technical text, behind Details
    assert not banner.details.isVisible()
    banner.details_button.click()
    assert banner.details.isVisible()
    qtbot.waitUntil(lambda: not bar.progress.isVisible())  # the refused load has settled
    QApplication.processEvents()
    assert bar.height() == header_height, "the header does not grow"
    banner.close_button.click()
    assert not banner.isVisible()


def test_switch_follows_the_draft(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    s = Settings.load()
    s.draft_enabled = False  # an old session's "off" must not disable a draft given now
    s.save()
    w = make_window()
    bar = w.chat.model_bar
    assert not bar.draft_switch.isEnabled() and not bar.draft_switch.isChecked()
    assert bar.draft_switch.text() == "Speculative: off (no draft)"
    close_window(w)
    w = make_window(str(tiny["target"]), str(tiny["draft"]))  # like --model T --draft D
    bar = w.chat.model_bar
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    assert bar.speculating and bar.draft_switch.text() == "Speculative: on"
    bar.draft_switch.setChecked(False)
    assert not bar.speculating and bar.draft_switch.text() == "Speculative: off"
    with qtbot.waitSignal(w.ctx.engine.draft_unloaded, timeout=30000):
        bar.draft_combo.activated.emit(0)  # "No draft"
    assert not bar.draft_switch.isEnabled() and not bar.speculating
    with qtbot.waitSignal(w.ctx.engine.draft_loaded, timeout=30000):
        bar.choose_draft(str(tiny["draft"]))
    assert bar.speculating, "loading a draft turns speculation on"


def test_models_and_panel_values_come_back(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    panel = w.chat.settings_panel
    panel.max_tokens.setValue(60)
    panel.temperature.setValue(0.7)
    panel.spec.draft_max.setValue(6)
    close_window(w)
    again = make_window()
    bar = again.chat.model_bar
    qtbot.waitUntil(lambda: bar.progress.isVisible() or again.ctx.engine.has_target, timeout=10000)
    qtbot.waitUntil(lambda: again.ctx.engine.has_draft, timeout=60000)
    assert again.ctx.engine.target_info.source == str(tiny["target"])
    assert again.ctx.engine.draft_info.source == str(tiny["draft"])
    assert "Target:" in bar.status.full_text()
    p = again.chat.settings_panel
    assert (p.max_tokens.value(), p.temperature.value(), p.spec.draft_max.value()) == (60, 0.7, 6)
    assert Settings.load().generation.max_tokens == 512, "the defaults are untouched"


def test_restore_can_be_cancelled(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    s = Settings.load()
    s.remember("target", str(tiny["target"]))
    s.save()
    w = make_window()
    bar = w.chat.model_bar
    release = threading.Event()
    w.ctx.engine.submit_job(lambda _engine: release.wait(30))  # hold the engine thread
    qtbot.waitUntil(lambda: w.ctx.engine.is_loading("target"), timeout=10000)  # restore began
    assert bar.progress.isVisibleTo(bar) and bar.cancel.isVisibleTo(bar)
    with qtbot.waitSignal(w.ctx.engine.load_cancelled, timeout=60000):
        bar.cancel.click()
        release.set()
    assert not w.ctx.engine.has_target and bar.target_combo.currentIndex() == -1


def test_eject_unloads_and_is_not_restored(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    with qtbot.waitSignal(w.ctx.engine.target_unloaded, timeout=30000):
        w.chat.model_bar.target_eject.click()
    assert not w.ctx.engine.has_target and not w.ctx.engine.has_draft
    assert "No model loaded" in w.chat.model_bar.status.full_text()
    assert not w.chat.model_bar.draft_switch.isEnabled()
    assert not w.chat.model_bar.target_eject.isEnabled()
    assert Settings.load().last_target == ""


def _wheel(widget, steps: int = -3) -> None:  # type: ignore[no-untyped-def]
    pos = QPointF(widget.width() / 2, widget.height() / 2)
    ev = QWheelEvent(pos, widget.mapToGlobal(pos), QPoint(0, 0), QPoint(0, 120 * steps),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                     Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, ev)


def test_wheel_scrolls_the_panel_not_the_settings(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    w.resize(1100, 500)
    panel = w.chat.settings_panel
    top_k, mode = panel.top_k.value(), panel.spec.mode.currentIndex()
    _wheel(panel.top_k)
    _wheel(panel.spec.mode, 1)
    assert panel.top_k.value() == top_k and panel.spec.mode.currentIndex() == mode
    panel.top_k.setFocus()
    qtbot.waitUntil(panel.top_k.hasFocus)
    _wheel(panel.top_k, 1)
    assert panel.top_k.value() != top_k, "a focused box still takes the wheel"


def test_theme_change_repaints_messages_and_legend(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.chat
    page.colours.set_mode("source")
    m = page.transcript.add_message("assistant", "ab", [("a", "d", 0.9), ("b", "t", None)])
    dark = theme.PALETTES["dark"].draft_bg
    light = theme.PALETTES["light"].draft_bg
    assert dark in m.body.toHtml() and dark in page.colours.legend.text()
    theme.apply("light")
    try:
        assert light in m.body.toHtml() and dark not in m.body.toHtml()
        assert light in page.colours.legend.text() and dark not in page.colours.legend.text()
    finally:
        theme.apply("dark")


def test_the_panel_collapses_and_stays_collapsed(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    w.resize(1024, 700)
    page = w.chat
    qtbot.waitUntil(lambda: page.transcript.width() > 0)
    before = page.centre_stack.width()
    page.panel_button.click()
    QApplication.processEvents()
    assert not page.side_panel_open and page.centre_stack.width() > before + 250
    assert ChatSession.load().side_panel_open is False
    close_window(w)
    again = make_window()
    assert not again.chat.side_panel_open
    again.activateWindow()
    qtbot.waitUntil(again.isActiveWindow)
    again.chat.composer.setFocus()
    qtbot.keyClick(again.chat.composer, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.ControlModifier)
    assert again.chat.side_panel_open


def test_long_model_names_do_not_widen_the_window(make_window, tiny, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    long = tmp_path / ("Qwen2.5-Coder-1.5B-Instruct-with-a-very-long-file-name-" * 3 + "q4_k_m.gguf")
    long.write_bytes(tiny["target"].read_bytes())
    w = make_window()
    w.resize(1024, 700)
    QApplication.processEvents()
    with qtbot.waitSignal(w.ctx.engine.target_loaded, timeout=60000):
        w.chat.model_bar.choose_target(str(long))
    QApplication.processEvents()
    assert w.width() == 1024 and w.minimumSizeHint().width() <= 1024
    combo = w.chat.model_bar.target_combo
    assert combo.itemData(combo.currentIndex(), Qt.ItemDataRole.ToolTipRole) == str(long)
    shown = combo.shown_text()
    # the header's name elided before the size and quantization, which stay whole; where
    # the box is too narrow for both, the quantization goes first (gui/elided.py)
    label = w.chat.model_bar.label(str(long))
    assert "…" in shown and shown.startswith(label.name[:3])
    assert shown.endswith(label.detail) or shown.endswith(f"  {label.size}")


def test_first_launch_says_what_to_do(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.chat
    assert page.centre_stack.currentWidget() is page.empty
    assert page.empty.discover.isVisible() and page.empty.open.isVisible()
    with qtbot.waitSignal(w.ctx.page_requested) as blocker:
        page.empty.discover.click()
    assert blocker.args == ["discover"]
    assert w.stack.currentWidget() is w.pages["discover"]



def test_load_gear_saves_the_options_and_reloads_both_models(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot, monkeypatch) -> None:
    from specula.gui.load_options import LoadChoice, LoadOptionsDialog

    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)

    def accept_with_2048(dialog) -> int:  # type: ignore[no-untyped-def]
        c = dialog.options.choice()
        dialog.options.set_choice(LoadChoice(2048, c.target_layers, c.draft_layers))
        dialog.accept()
        return int(QDialog.DialogCode.Accepted)

    monkeypatch.setattr(LoadOptionsDialog, "exec", accept_with_2048)
    loads: list[str] = []
    w.ctx.engine.load_started.connect(lambda kind, _p: loads.append(kind))
    with qtbot.waitSignal(w.ctx.engine.draft_loaded, timeout=60000):
        w.chat.model_bar.load_gear.click()
    assert loads == ["target", "draft"]
    # the loaded target's own load setting now (issue 45, item 3), which it runs with
    assert defaults_for(tiny["target"]).n_ctx == 2048 and w.ctx.engine.n_ctx == 2048
    assert w.chat.model_bar.speculating
