"""The small widgets the model pages build again and again: captions, muted notes, side lists.

Why: the same three-line constructions (object name for the theme, word
wrap, eliding) were repeated in every pane and drifted (one list cut its
lines mid-word, another elided at the end); one place keeps them alike.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QListWidget, QSizePolicy, QWidget


def caption(text: str, parent: QWidget) -> QLabel:
    """A small upper-case section title ("PAIRS WITH")."""
    label = QLabel(text, parent)
    label.setObjectName("PanelTitle")
    return label


def muted(text: str, parent: QWidget, *, wrap: bool = True) -> QLabel:
    """A grey explanatory line that wraps at words."""
    label = QLabel(text, parent)
    label.setObjectName("Muted")
    label.setWordWrap(wrap)
    return label


def side_list(name: str, parent: QWidget) -> QListWidget:
    """A list for a side pane: no horizontal scrolling, long lines wrap at words."""
    view = QListWidget(parent)
    view.setObjectName(name)
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    view.setWordWrap(True)
    view.setTextElideMode(Qt.TextElideMode.ElideNone)
    view.setResizeMode(QListWidget.ResizeMode.Adjust)
    return view


def set_tone(label: QLabel, name: str) -> None:
    """Switch a label's theme role ("Muted", "ErrorLabel") and repaint it in that style."""
    label.setObjectName(name)
    label.style().unpolish(label)
    label.style().polish(label)


class ElidedLabel(QLabel):
    """One line of text elided in the middle when narrow, the full text in the tooltip.

    Model names differ at their ends ('...-1.5B-Instruct-Q4_K_M' vs '...-Q8_0'),
    so cutting the end hides exactly what tells them apart. The label never
    asks for more width than a few characters, so a long name cannot widen
    the window.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def elided(self) -> str:
        """The text as shown at the current width."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle,
                                             max(self.contentsRect().width(), 0))

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("M" * 6), super().minimumSizeHint().height())

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter),
                         self.elided())
