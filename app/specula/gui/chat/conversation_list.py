"""Left side of the chat page: conversations with search, new, rename and delete."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.chat.conversations import ConversationStore

ID_ROLE = Qt.ItemDataRole.UserRole + 1


class ConversationList(QFrame):
    selected = Signal(int)
    """The user picked the conversation with this id."""
    new_requested = Signal()
    """The user asked for a new conversation."""
    deleted = Signal(int)
    """The conversation with this id was deleted."""

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ConversationPanel")
        self.store = store
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        top = QHBoxLayout()
        self.new_button = QPushButton("+ New chat")
        self.new_button.setObjectName("Primary")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        top.addWidget(self.new_button)
        lay.addLayout(top)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _t: self.reload())
        lay.addWidget(self.search)
        self.list = QListWidget()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)
        lay.addWidget(self.list)
        self.current_id = -1
        self.reload()

    def reload(self) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for c in self.store.conversations(self.search.text()):
            item = QListWidgetItem(c.title)
            item.setData(ID_ROLE, c.id)
            item.setToolTip(c.title)
            self.list.addItem(item)
            if c.id == self.current_id:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def set_current(self, conversation_id: int) -> None:
        self.current_id = conversation_id
        self.reload()

    def _activated(self, item: QListWidgetItem) -> None:
        cid = int(item.data(ID_ROLE))
        if cid != self.current_id:
            self.current_id = cid
            self.selected.emit(cid)

    def _menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self._rename(item))
        menu.addAction("Delete", lambda: self.delete(int(item.data(ID_ROLE))))
        menu.popup(self.list.viewport().mapToGlobal(pos))

    def _rename(self, item: QListWidgetItem) -> None:
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title", text=item.text())
        if ok:
            self.rename(int(item.data(ID_ROLE)), title)

    def rename(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)
        self.reload()

    def delete(self, conversation_id: int) -> None:
        self.store.delete(conversation_id)
        self.reload()
        self.deleted.emit(conversation_id)
