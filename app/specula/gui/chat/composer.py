"""The message box: Enter sends, Shift+Enter starts a new line."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class Composer(QPlainTextEdit):
    submitted = Signal(str)
    """Enter was pressed with this (non-empty, stripped) text."""
    empty_submitted = Signal()
    """Enter was pressed on an empty composer (the page may generate a reply)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Composer")
        self.setPlaceholderText("Send a message  (Enter sends, Shift+Enter new line, Esc stops)")
        self.setTabChangesFocus(True)
        self.setFixedHeight(84)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            text = self.toPlainText().strip()
            if text:
                self.submitted.emit(text)
            else:
                self.empty_submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)
