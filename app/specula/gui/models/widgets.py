"""The small widgets the model pages build again and again: captions, muted notes, side lists.

Why: the same three-line constructions (object name for the theme, word
wrap, eliding) were repeated in every pane and drifted (one list cut its
lines mid-word, another elided at the end); one place keeps them alike.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)


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


def page_layout(page: QWidget, title: str) -> tuple[QVBoxLayout, QHBoxLayout]:
    """A page's outer layout and its header row, which starts with the page title."""
    outer = QVBoxLayout(page)
    outer.setContentsMargins(24, 16, 24, 16)
    head = QHBoxLayout()
    label = QLabel(title, page)
    label.setObjectName("PageTitle")
    head.addWidget(label)
    outer.addLayout(head)
    return outer, head


def search_box(placeholder: str, parent: QWidget) -> QLineEdit:
    """A line edit for searching or filtering, with a clear button."""
    box = QLineEdit(parent)
    box.setPlaceholderText(placeholder)
    box.setClearButtonEnabled(True)
    return box


class SidePane(QFrame):
    """A framed pane: a caption, a muted status line and a list whose rows are widgets."""

    def __init__(self, title: str, status: str, list_name: str,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SidePanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        lay.addWidget(caption(title, self))
        self.status = muted(status, self)
        lay.addWidget(self.status)
        self.list = side_list(list_name, self)
        lay.addWidget(self.list, 1)

    def add_row(self, data: object) -> tuple[QWidget, QHBoxLayout]:
        """A new row: the widget to fill (through the returned layout), holding ``data``."""
        item = QListWidgetItem(self.list)
        item.setData(Qt.ItemDataRole.UserRole, data)
        row = QWidget(self.list)
        lay = QHBoxLayout(row)
        lay.setContentsMargins(6, 2, 6, 2)
        self.list.setItemWidget(item, row)
        return row, lay

    def fit_rows(self) -> None:
        """Size every row to its widget (call once the rows are filled)."""
        for i in range(self.list.count()):
            item = self.list.item(i)
            hint = self.list.itemWidget(item).sizeHint()
            hint.setHeight(hint.height() + 14)  # the list's item padding
            item.setSizeHint(hint)


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
