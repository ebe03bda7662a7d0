"""GUI tests: offscreen Qt, isolated QSettings, a main window on the real engine."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QThreadPool

from specula.gui import errors, gui_thread_gc


@pytest.fixture(autouse=True)
def usable_binding() -> None:
    """Fail clearly (instead of aborting the whole run) on a Qt binding known to crash."""
    from specula.gui.app import binding_problem

    problem = binding_problem()
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture(autouse=True)
def qt_isolated(specula_home: Path, qapp) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """QSettings (window geometry) under the test's SPECULA_HOME; no leftover error texts;
    garbage collected on the GUI thread only, as in the app."""
    qapp.setOrganizationName("Specula")
    qapp.setApplicationName("Specula")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                      str(specula_home / "qsettings"))
    errors.shown_errors.clear()
    collector = gui_thread_gc.install(qapp)  # as the app does (ensure_qapp)
    yield
    QThreadPool.globalInstance().waitForDone(10000)
    collector.uninstall()  # the rest of the suite collects as Python does
    collector.deleteLater()


@pytest.fixture
def make_window(qtbot):  # type: ignore[no-untyped-def]
    """Build main windows (closed and their engines shut down at the end)."""
    from specula.gui.app import create_window

    made = []

    def make(model: str | None = None, draft: str | None = None):  # type: ignore[no-untyped-def]
        w = create_window(model, draft)
        qtbot.addWidget(w)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        close_window(w)


def close_window(w) -> None:  # type: ignore[no-untyped-def]
    if w.ctx.engine._thread.isRunning():
        w.close()
        w.ctx.close()


@pytest.fixture
def loaded(make_window, tiny, qtbot):  # type: ignore[no-untyped-def]
    """A main window with the tiny target and draft loaded and short replies."""
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    w.chat.settings_panel.max_tokens.setValue(40)
    # The tests look at drafting; the default mode (adaptive) may find that drafting
    # does not pay on models this small, so they use a fixed chain.
    w.ctx.settings.speculative.mode = "chain"
    form = w.chat.settings_panel.spec
    form.mode.setCurrentIndex(form.mode.findData("chain"))
    return w


def send_and_wait(qtbot, window, text: str, timeout: int = 120000):  # type: ignore[no-untyped-def]
    """Send ``text`` on the chat page; the reply's Done."""
    with qtbot.waitSignal(window.chat.reply_finished, timeout=timeout) as blocker:
        window.chat.composer.setPlainText(text)
        window.chat.send_button.click()
    return blocker.args[0]
