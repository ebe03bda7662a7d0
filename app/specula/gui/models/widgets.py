"""The small widgets the model pages build again and again: captions, muted notes, side lists.

Why: the same three-line constructions (object name for the theme, word
wrap, eliding) were repeated in every pane and drifted (one list cut its
lines mid-word, another elided at the end); one place keeps them alike.
Names elided in the middle come from :mod:`specula.gui.elided`, shared with
the chat page.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
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
        self._pending: list[tuple[QListWidgetItem, QWidget]] = []
        self.list.viewport().installEventFilter(self)  # rows follow the list's width

    def add_row(self, data: object) -> tuple[QWidget, QHBoxLayout]:
        """A new row holding ``data``: fill the returned widget through its layout, then call
        :meth:`show_rows` once every row is filled."""
        item = QListWidgetItem(self.list)
        item.setData(Qt.ItemDataRole.UserRole, data)
        row = QWidget(self.list)
        lay = QHBoxLayout(row)
        lay.setContentsMargins(6, 2, 6, 2)
        self._pending.append((item, row))
        return row, lay

    def show_rows(self) -> None:
        """Put the filled rows in the list, each item as tall as its row."""
        for item, row in self._pending:
            self.list.setItemWidget(item, row)
        self._pending.clear()
        self._fit_rows()

    def _fit_rows(self) -> None:
        """Each item as tall as its row at the list's width: a row with wrapping text
        (a sentence under a name) grows a line when the pane narrows, and shrinks back."""
        width = max(self.list.viewport().width() - 8, 40)  # the item's own margin
        for i in range(self.list.count()):
            item = self.list.item(i)
            row = self.list.itemWidget(item)
            if row is None:
                continue
            hint = row.sizeHint()
            if row.hasHeightForWidth():  # exactly the list's width, the height that needs
                hint = QSize(width, row.heightForWidth(width))
            hint.setHeight(hint.height() + 14)  # the list's item padding
            if item.sizeHint() != hint:
                item.setSizeHint(hint)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and watched is self.list.viewport():
            self._fit_rows()
        return super().eventFilter(watched, event)


def set_tone(label: QLabel, name: str) -> None:
    """Switch a label's theme role ("Muted", "ErrorLabel") and repaint it in that style."""
    label.setObjectName(name)
    label.style().unpolish(label)
    label.style().polish(label)
