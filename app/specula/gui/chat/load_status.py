"""The model bar's status line: what is loaded, or what is loading, wrapped at words.

Why its own widget: the line names both models with their size and
quantization and the backend; in a narrow window it used to be cut in the
middle of a word ("Q4_…0.5B Instruct AWQ"). It wraps instead, never widening
the window; it keeps two lines' room (a line per model), so the header's height
does not change when a load starts or ends.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class LoadStatus(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setObjectName("Muted")
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        super().setText("Target\nDraft")  # room for a line per model, as the label lays it out
        self.setMinimumHeight(super().sizeHint().height())
        super().setText(text)

    def full_text(self) -> str:
        return self.text()

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())
