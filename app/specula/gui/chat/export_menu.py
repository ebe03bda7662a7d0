"""The chat page's Export button: the open conversation as Markdown or JSON (core/chat/export)."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMenu, QToolButton, QWidget

from specula.core import files
from specula.core.chat import export
from specula.core.chat.conversations import ConversationStore
from specula.gui.stats.footer import footer_text

FORMATS = {"markdown": ("Markdown (*.md)", ".md"), "json": ("JSON (*.json)", ".json")}


def file_stem(title: str) -> str:
    """A file name from a conversation title (letters, digits, dashes)."""
    stem = re.sub(r"[^\w\-]+", "-", title, flags=re.UNICODE).strip("-")
    return stem[:60] or "conversation"


def write_export(store: ConversationStore, conversation_id: int, path: Path, fmt: str) -> Path:
    """Write conversation ``conversation_id`` to ``path`` as ``fmt`` (markdown | json)."""
    conv = store.get(conversation_id)
    title = conv.title if conv is not None else "Conversation"
    messages = store.messages(conversation_id)
    text = (export.to_markdown(title, messages, footer_text) if fmt == "markdown"
            else export.to_json(title, messages))
    files.atomic_write_text(path, text)  # an export over an old file never leaves half of one
    return path


class ExportButton(QToolButton):
    """Export… with a menu of formats; asks for a file and writes it."""

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.conversation_id: int | None = None
        self.setText("Export")
        self.setToolTip("Save this conversation as Markdown or JSON (Ctrl+E)")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        menu.addAction("As Markdown…", lambda: self.ask("markdown"))
        menu.addAction("As JSON…", lambda: self.ask("json"))
        self.setMenu(menu)
        self.setEnabled(False)

    def set_conversation(self, conversation_id: int | None) -> None:
        self.conversation_id = conversation_id
        self.setEnabled(conversation_id is not None)

    def ask(self, fmt: str = "markdown") -> None:
        if self.conversation_id is None:
            return
        conv = self.store.get(self.conversation_id)
        filt, ext = FORMATS[fmt]
        start = str(Path.home() / (file_stem(conv.title if conv else "") + ext))
        path, _ = QFileDialog.getSaveFileName(self, "Export the conversation", start, filt)
        if path:
            write_export(self.store, self.conversation_id, Path(path), fmt)
