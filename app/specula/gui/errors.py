"""Crashes and Qt messages: an excepthook that shows a dialog, Qt logs into logging.

As qutebrowser's ``misc/crashsignal.py`` and ``utils/qtlog.py``: an uncaught
exception in a slot shows a dialog with the traceback and the app keeps
running; Qt's own warnings go to the ``specula.qt`` logger.
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType

from PySide6.QtCore import Qt, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from specula.core.cancel import Cancelled

log = logging.getLogger("specula.gui")
qt_log = logging.getLogger("specula.qt")

_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}

# What the last error dialogs said (newest last): the tests read it instead of a modal box.
shown_errors: list[str] = []
# Open dialogs without a parent: Python must hold them or they vanish at once.
_open_boxes: set[QMessageBox] = set()



def show_error(parent: QWidget | None, title: str, text: str, details: str = "") -> None:
    """A non-blocking error dialog; the app keeps running."""
    log.warning("%s: %s", title, text)
    shown_errors.append(text)
    del shown_errors[:-20]
    if QApplication.instance() is None:
        return
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, parent)
    if details:
        box.setDetailedText(details)
    box.setModal(False)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    _open_boxes.add(box)
    box.finished.connect(lambda _r: _open_boxes.discard(box))
    box.open()


def show_data_notice(parent: QWidget | None, text: str) -> None:
    """What Specula had to do with the user's files (a damaged one set aside, and where),
    at start or when a model loads: the same non-blocking dialog every time."""
    show_error(parent, "Specula: your data", text)


def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    if issubclass(exc_type, Cancelled):
        return
    if issubclass(exc_type, KeyboardInterrupt):
        app = QApplication.instance()
        if app is not None:
            app.quit()
        return
    details = "".join(traceback.format_exception(exc_type, exc, tb))
    log.error("uncaught exception\n%s", details)
    show_error(None, "Specula: unexpected error",
               f"Something went wrong: {exc_type.__name__}: {exc}\n\n"
               "Specula keeps running; the details below help a bug report.", details)


def _qt_message_handler(mode: QtMsgType, context: object, message: str) -> None:
    qt_log.log(_QT_LEVELS.get(mode, logging.WARNING), "%s", message)


def install() -> None:
    """Install the excepthook and route Qt's messages into logging."""
    sys.excepthook = _excepthook
    qInstallMessageHandler(_qt_message_handler)
