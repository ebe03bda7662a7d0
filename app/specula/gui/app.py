"""Start the desktop app: QApplication, theme, error handling, the main window."""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from specula.core import paths


def binding_problem() -> str | None:
    """A sentence when the installed Qt binding is known to crash Specula, else None."""
    import PySide6

    if PySide6.__version__ == "6.12.0" and sys.version_info < (3, 12):
        return ("PySide6 6.12.0 drops a reference to None/True on every signal emit and "
                "processEvents() under Python < 3.12, which aborts the interpreter. "
                "Install another version: pip install 'PySide6-Essentials!=6.12.0'.")
    return None


def ensure_qapp() -> QApplication:
    """The QApplication, with garbage collection moved to its thread (gui_thread_gc)."""
    from specula.gui import gui_thread_gc

    QCoreApplication.setOrganizationName("Specula")
    QCoreApplication.setApplicationName("Specula")
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication(sys.argv)
    if app.findChild(gui_thread_gc.GuiThreadCollector) is None:
        gui_thread_gc.install(app)
    return app


def create_window(model: str | None = None, draft: str | None = None):  # type: ignore[no-untyped-def]
    """The main window on a fresh context, with ``model``/``draft`` being loaded."""
    from specula.gui import theme
    from specula.gui.context import AppContext
    from specula.gui.main_window import MainWindow

    ctx = AppContext()
    theme.apply(ctx.settings.theme)
    window = MainWindow(ctx)
    show_startup_notices(window)
    ctx.server.restore()  # the local server, if it ran when the app closed
    if model:
        window.chat.model_bar.choose_target(model)
        if draft:
            window.chat.model_bar.choose_draft(draft)
    return window


def startup_notices(ctx) -> list[str]:  # type: ignore[no-untyped-def]
    """What the core had to do with the user's files at start (a damaged settings file or
    conversations database set aside, a database in use or read-only, any other JSON file
    of Specula's set aside), one sentence each, saying where the old file is."""
    from specula.core import json_files

    found = (ctx.settings.load_notice, ctx.store.load_notice, *json_files.take_notices())
    return [n for n in found if n]


def show_startup_notices(window) -> None:  # type: ignore[no-untyped-def]
    """One non-blocking dialog with every notice, over the window; the app keeps running."""
    from specula.gui import errors

    notices = startup_notices(window.ctx)
    if notices:
        errors.show_data_notice(window, "\n\n".join(notices))


def run_app(model: str | None = None, draft: str | None = None) -> int:
    from specula.gui import errors

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    problem = binding_problem()
    if problem:
        logging.getLogger("specula").error(problem)
        print(f"specula: {problem}", file=sys.stderr)
        return 2
    app = ensure_qapp()
    errors.install()
    logging.getLogger("specula").info("data in %s", paths.data_dir())
    window = create_window(model, draft)
    window.show()
    app.aboutToQuit.connect(window.ctx.close)
    return int(app.exec())
