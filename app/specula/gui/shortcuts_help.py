"""The keyboard shortcuts, listed once, shown by F1 or Ctrl+/ over the window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget

# (keys as Qt writes them, what they do); Enter and Shift+Enter belong to the composer.
SHORTCUTS: list[tuple[str, str]] = [
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    ("Esc", "Stop the reply, or cancel editing"),
    ("Ctrl+N", "New chat"),
    ("Ctrl+E", "Export the conversation as Markdown"),
    ("Ctrl+]", "Show or hide the statistics and settings panel"),
    ("Ctrl+1", "Chat page (Ctrl+2 … Ctrl+6: the other pages)"),
    ("F1", "This list"),
    ("Ctrl+/", "This list"),
    ("Ctrl+Q", "Quit Specula"),
]
COMPOSER_KEYS = ("Enter", "Shift+Enter")


class ShortcutsHelp(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        lay = QVBoxLayout(self)
        grid = QGridLayout()
        grid.setHorizontalSpacing(18)
        for row, (keys, what) in enumerate(SHORTCUTS):
            key = QLabel(QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)
                         if keys not in COMPOSER_KEYS else keys)
            key.setObjectName("ShortcutKey")
            grid.addWidget(key, row, 0, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(QLabel(what), row, 1)
        lay.addLayout(grid)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
