"""A dismissible banner at the top of the chat column: a title, short sentences, details.

Problems that need no decision (a refused draft, a failed load) are shown
here instead of in a modal dialog or a header label: the banner takes the
height its sentences need in the column that has the room, and the user
closes it when read. The technical text sits behind "Details".
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget


class Banner(QFrame):
    dismissed = Signal()
    """The user closed the banner."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Banner")
        self.setProperty("kind", "error")
        outer = QHBoxLayout(self)
        outer.setContentsMargins(12, 8, 8, 8)
        col = QVBoxLayout()
        col.setSpacing(2)
        self.title = QLabel(self)
        self.title.setObjectName("BannerTitle")
        self.title.setWordWrap(True)
        col.addWidget(self.title)
        self.body = QLabel(self)
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.RichText)
        col.addWidget(self.body)
        self.details = QLabel(self)
        self.details.setObjectName("Muted")
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.hide()
        col.addWidget(self.details)
        outer.addLayout(col, 1)
        buttons = QVBoxLayout()
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        buttons.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignRight)
        self.details_button = QToolButton(self)
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.toggled.connect(self.details.setVisible)
        buttons.addWidget(self.details_button)
        buttons.addStretch(1)
        outer.addLayout(buttons)
        self.sentences: list[str] = []
        self.topic = ""  # what the shown message is about, for whoever clears it
        self.hide()

    def show_message(self, title: str, sentences: list[str], details: str = "",
                     kind: str = "error", topic: str = "") -> None:
        """Show a message; ``topic`` names it for :meth:`clear` (a later success clears it)."""
        self.sentences = list(sentences)
        self.topic = topic
        self.title.setText(title)
        items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
        self.body.setText(f"<ul style='margin:0; -qt-list-indent:1'>{items}</ul>" if items else "")
        self.body.setVisible(bool(items))
        self.details.setText(details)
        self.details.setToolTip(details)
        self.body.setToolTip(details)
        self.details_button.setChecked(False)
        self.details_button.setVisible(bool(details))
        self.setProperty("kind", kind)
        self.style().unpolish(self)
        self.style().polish(self)
        self.show()

    def clear(self, topic: str) -> None:
        """Hide the banner if it still shows a message about ``topic``."""
        if topic and not self.isHidden() and self.topic == topic:
            self.hide()

    def dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()
