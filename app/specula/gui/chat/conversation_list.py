"""Left side of the chat page: conversations in folders, with search, new, rename, duplicate,
move and delete.

Folders are header rows ("▾ Work") with their conversations under them;
conversations outside any folder come first. A conversation moves by its menu
(Move to ▸) or by dragging it onto a folder's row or one of its conversations
(onto a conversation outside folders: out of its folder). Clicking a folder's
row folds it. The search matches titles and message text
(``ConversationStore.conversations``); while searching, folders without a
match are hidden.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QSize, Qt, Signal
from PySide6.QtGui import QDropEvent, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
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
FOLDER_ROLE = Qt.ItemDataRole.UserRole + 2
"""On a folder's header row: the folder's id. On a conversation: its folder's id or None."""
HEADER_ROLE = Qt.ItemDataRole.UserRole + 3


class _DropList(QListWidget):
    """A list whose drops are moves between folders (the store decides the order)."""

    dropped = Signal(int, object)
    """A conversation was dropped (its id, the folder id or None)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)

    def fit_items(self) -> None:
        """Every row as wide as the list, so a long title is elided (in the middle, keeping
        "… (copy)") instead of running past the edge, cut."""
        width = self.viewport().width()
        for i in range(self.count()):
            item = self.item(i)
            hint = item.sizeHint()
            height = hint.height() if hint.isValid() else self.sizeHintForRow(i)
            item.setSizeHint(QSize(width, height))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_items()

    def dropEvent(self, event: QDropEvent) -> None:
        dragged = self.currentItem()
        target = self.itemAt(event.position().toPoint())
        event.setDropAction(Qt.DropAction.IgnoreAction)
        event.accept()  # the list is rebuilt from the store, never rearranged by Qt
        if dragged is None or dragged.data(HEADER_ROLE):
            return
        folder = target.data(FOLDER_ROLE) if target is not None else None
        self.dropped.emit(int(dragged.data(ID_ROLE)), folder)


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
        self.folded: set[int] = set()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        top = QHBoxLayout()
        self.new_button = QPushButton("+ New chat")
        self.new_button.setObjectName("Primary")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        top.addWidget(self.new_button, 1)
        lay.addLayout(top)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search titles and messages")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _t: self.reload())
        lay.addWidget(self.search)
        self.list = _DropList()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Cut in the middle: a title's end tells copies and branches apart ("… (copy)").
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)
        self.list.dropped.connect(self.move)
        lay.addWidget(self.list)
        self.folder_button = QPushButton("+ New folder")
        self.folder_button.setFlat(True)
        self.folder_button.setToolTip("Create a folder; drag chats onto it or use Move to")
        self.folder_button.clicked.connect(lambda: self.new_folder())
        lay.addWidget(self.folder_button)
        self.current_id = -1
        self.reload()

    def reload(self) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        searching = bool(self.search.text().strip())
        chats = self.store.conversations(self.search.text())
        for c in (c for c in chats if c.folder_id is None):
            self._add_chat(c.id, c.title, None, indent=False)
        for f in self.store.folders():
            inside = [c for c in chats if c.folder_id == f.id]
            if searching and not inside:
                continue
            folded = f.id in self.folded and not searching
            header = QListWidgetItem(f"{'▸' if folded else '▾'} {f.name}  ({len(inside)})")
            header.setData(HEADER_ROLE, True)
            header.setData(FOLDER_ROLE, f.id)
            header.setToolTip(f"Folder {f.name}: click to fold, drop chats here")
            font = header.font()
            font.setBold(True)
            header.setFont(font)
            header.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsDropEnabled)
            self.list.addItem(header)
            if not folded:
                for c in inside:
                    self._add_chat(c.id, c.title, f.id, indent=True)
        self.list.fit_items()
        self.list.blockSignals(False)

    def _add_chat(self, cid: int, title: str, folder: int | None, indent: bool) -> None:
        item = QListWidgetItem(("    " if indent else "") + title)
        item.setData(ID_ROLE, cid)
        item.setData(FOLDER_ROLE, folder)
        item.setToolTip(title)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                      | Qt.ItemFlag.ItemIsDragEnabled)
        self.list.addItem(item)
        if cid == self.current_id:
            self.list.setCurrentItem(item)

    def set_current(self, conversation_id: int) -> None:
        self.current_id = conversation_id
        self.reload()

    def item_for(self, conversation_id: int) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            if not item.data(HEADER_ROLE) and item.data(ID_ROLE) == conversation_id:
                return item
        return None

    def _activated(self, item: QListWidgetItem) -> None:
        if item.data(HEADER_ROLE):
            folder = int(item.data(FOLDER_ROLE))
            self.folded ^= {folder}
            self.reload()
            return
        cid = int(item.data(ID_ROLE))
        if cid != self.current_id:
            self.current_id = cid
            self.selected.emit(cid)

    # -- menus -----------------------------------------------------------------
    def _menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            menu = QMenu(self)
            menu.addAction("New folder…", lambda: self.new_folder())
            menu.popup(self.list.viewport().mapToGlobal(pos))
            return
        menu = self.folder_menu(item) if item.data(HEADER_ROLE) else self.chat_menu(item)
        menu.popup(self.list.viewport().mapToGlobal(pos))

    def chat_menu(self, item: QListWidgetItem) -> QMenu:
        cid = int(item.data(ID_ROLE))
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self._rename(item))
        menu.addAction("Duplicate", lambda: self.duplicate(cid))
        move = menu.addMenu("Move to")
        here = item.data(FOLDER_ROLE)
        a = move.addAction("No folder", lambda: self.move(cid, None))
        a.setEnabled(here is not None)
        for f in self.store.folders():
            a = move.addAction(f.name, lambda f=f: self.move(cid, f.id))
            a.setEnabled(here != f.id)
        move.addSeparator()
        move.addAction("New folder…", lambda: self._move_to_new(cid))
        menu.addSeparator()
        menu.addAction("Delete", lambda: self.delete(cid))
        return menu

    def folder_menu(self, item: QListWidgetItem) -> QMenu:
        fid = int(item.data(FOLDER_ROLE))
        menu = QMenu(self)
        menu.addAction("Rename folder…", lambda: self._rename_folder(fid))
        menu.addAction("Delete folder (keeps its chats)", lambda: self.delete_folder(fid))
        return menu

    # -- actions -----------------------------------------------------------------
    def _rename(self, item: QListWidgetItem) -> None:
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title",
                                         text=item.toolTip())
        if ok:
            self.rename(int(item.data(ID_ROLE)), title)

    def rename(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)
        self.reload()

    def duplicate(self, conversation_id: int) -> int:
        source = self.store.get(conversation_id)
        copy = self.store.duplicate(conversation_id,
                                    title=f"{source.title} (copy)" if source else None)
        self.reload()
        return copy.id

    def move(self, conversation_id: int, folder_id: int | None) -> None:
        self.store.move(conversation_id, folder_id)
        if folder_id is not None:
            self.folded.discard(folder_id)
        self.reload()

    def new_folder(self, name: str | None = None) -> int | None:
        if name is None:
            name, ok = QInputDialog.getText(self, "New folder", "Name")
            if not ok:
                return None
        folder = self.store.create_folder(name)
        self.reload()
        return folder.id

    def _move_to_new(self, conversation_id: int) -> None:
        fid = self.new_folder()
        if fid is not None:
            self.move(conversation_id, fid)

    def _rename_folder(self, folder_id: int) -> None:
        name = next((f.name for f in self.store.folders() if f.id == folder_id), "")
        new, ok = QInputDialog.getText(self, "Rename folder", "Name", text=name)
        if ok:
            self.rename_folder(folder_id, new)

    def rename_folder(self, folder_id: int, name: str) -> None:
        self.store.rename_folder(folder_id, name)
        self.reload()

    def delete_folder(self, folder_id: int) -> None:
        self.store.delete_folder(folder_id)
        self.folded.discard(folder_id)
        self.reload()

    def delete(self, conversation_id: int) -> None:
        self.store.delete(conversation_id)
        self.reload()
        self.deleted.emit(conversation_id)
