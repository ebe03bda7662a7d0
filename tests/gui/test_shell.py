"""The shell: pages, navigation, themes, geometry, keyboard, settings page, rendering."""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from specula.core.settings import Settings
from specula.gui import theme
from specula.gui.chat.render import markdown_html, tokens_html
from specula.gui.main_window import PAGES
from tests.gui.conftest import close_window


def test_pages_and_navigation(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    assert [p.key for p in PAGES] == ["chat", "compare", "discover", "models", "downloads",
                                     "settings"]
    assert w.nav.count() == len(PAGES)
    for key in ("compare", "discover", "models", "downloads", "settings", "chat"):
        page = w.show_page(key)
        assert w.stack.currentWidget() is page


def test_themes_from_resources(make_window) -> None:  # type: ignore[no-untyped-def]
    assert (theme.resources_dir() / "themes" / "dark.qss").is_file()
    w = make_window()
    settings_page = w.show_page("settings")
    settings_page.theme.setCurrentIndex(settings_page.theme.findData("light"))
    assert theme.current() == "light"
    assert QApplication.instance().styleSheet() == theme.stylesheet("light")
    assert Settings.load().theme == "light"
    settings_page.theme.setCurrentIndex(settings_page.theme.findData("dark"))
    assert "#1b1c20" in QApplication.instance().styleSheet()


def test_settings_page_saves_typed_settings(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.show_page("settings")
    page.threads.setValue(3)
    page.gpu_draft.setValue(-1)
    page.spec.draft_max.setValue(7)
    saved = Settings.load()
    assert (saved.n_threads, saved.n_gpu_layers_draft, saved.speculative.draft_max) == (3, -1, 7)
    assert w.ctx.engine_options().n_threads == 3
    assert w.chat.settings_panel.spec.draft_max.value() == 7


def test_geometry_remembered(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    w.resize(1100, 620)  # the offscreen screen is 800 px tall
    size = (w.width(), w.height())
    assert size[1] == 620
    close_window(w)
    assert QSettings().value("window/geometry") is not None
    again = make_window()
    assert again.height() == size[1]  # (the width is clamped to the 800 px offscreen screen)


def test_keyboard_new_chat_and_shift_enter(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.chat
    cid = w.ctx.store.create("old").id
    page.open_conversation(cid)
    assert page.conversation_id == cid
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow)
    page.composer.setFocus()
    qtbot.keyClick(page.composer, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert page.conversation_id is None
    qtbot.keyClicks(page.composer, "a")
    qtbot.keyClick(page.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(page.composer, "b")
    assert page.composer.toPlainText() == "a\nb"


def test_conversation_list_rename_delete_search(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    store, convs = w.ctx.store, w.chat.conversations
    a = store.create("alpha")
    store.create("beta")
    convs.reload()
    assert convs.list.count() == 2
    convs.rename(a.id, "gamma")
    convs.search.setText("gam")
    assert [convs.list.item(i).text() for i in range(convs.list.count())] == ["gamma"]
    convs.delete(a.id)
    assert convs.list.count() == 0


def test_render_markdown_and_tokens() -> None:
    pal = theme.PALETTES["dark"]
    html = markdown_html("Hi **there**\n\n```python\ndef f():\n    return 1\n```\n", pal)
    assert "<strong>there</strong>" in html and pal.code_bg in html and "color:" in html
    out = tokens_html([("a", "t", None), ("b", "d", 0.9), ("<c>", "d", 0.2)], "source", pal)
    assert f"background-color:{pal.draft_bg}\">b&lt;c&gt;</span>" in out
    heat = tokens_html([("b", "d", 1.0), ("c", "d", 0.0)], "heat", pal)
    assert theme.heat_colour(1.0) in heat and theme.heat_colour(0.0) in heat


def test_excepthook_shows_a_dialog_and_qt_messages_are_logged(qapp, caplog) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QtMsgType
    from PySide6.QtWidgets import QMessageBox

    from specula.gui import errors

    try:
        raise ValueError("boom")
    except ValueError as exc:
        errors._excepthook(ValueError, exc, exc.__traceback__)
    assert "ValueError: boom" in errors.shown_errors[-1]
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]
    assert boxes and "boom" in boxes[-1].text() and "Traceback" in boxes[-1].detailedText()
    for box in boxes:
        box.close()
    errors._excepthook(errors.Cancelled, errors.Cancelled(), None)
    assert "Cancelled" not in errors.shown_errors[-1]
    with caplog.at_level("WARNING", logger="specula.qt"):
        errors._qt_message_handler(QtMsgType.QtWarningMsg, None, "a qt warning")
    assert "a qt warning" in caplog.text
