"""A message's menu (right-click or "⋯"): copy, edit, delete, branch a new chat from here.

* Edit and resend (a user message): the composer takes its text; sending
  replaces it and everything after it (the page's edit flow).
* Edit text… (any message): the stored text changes in place; nothing is
  generated again (a reply's token colours no longer apply and are dropped).
* Delete…: that message only, once confirmed; the ones after it stay. A chat
  left ending in the user's message offers "Generate reply" (the page).
* Branch from here: a new chat holding the messages up to this one, with the
  chat's settings; it opens.

Nothing here runs while a reply is in flight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import (
    QDialog,
    QMenu,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from specula.gui.chat.message import MessageWidget
from specula.gui.confirm import ask_yes_no
from specula.gui.dialog_buttons import Button, accept_cancel

if TYPE_CHECKING:
    from specula.gui.chat.page import ChatPage

BRANCH_PREFIX = "Branch: "


class EditTextDialog(QDialog):
    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit message")
        self.resize(560, 320)
        lay = QVBoxLayout(self)
        self.editor = QPlainTextEdit(text, self)
        lay.addWidget(self.editor)
        lay.addWidget(accept_cancel(self, Button.Save))


class MessageActions:
    """What the message menu does, on the page's conversation and store."""

    def __init__(self, page: ChatPage) -> None:
        self.page = page
        self.last_menu: QMenu | None = None
        self.confirm = ask_yes_no  # asked before a message is deleted (tests answer it)
        page.transcript.menu_requested.connect(self.show_menu)

    def menu_for(self, widget: MessageWidget) -> QMenu:
        page = self.page
        menu = QMenu(page)
        menu.addAction("Copy", widget.copy_text)
        stored = widget.position >= 0 and page.conversation_id is not None
        idle = not page.client.busy
        if widget.role == "user":
            a = menu.addAction("Edit and resend", lambda: page.edit_message(widget))
            a.setEnabled(idle)
        a = menu.addAction("Edit text…", lambda: self.edit_text(widget))
        a.setEnabled(idle and stored)
        a = menu.addAction("Delete…", lambda: self.ask_delete(widget))
        a.setEnabled(idle and stored)
        menu.addSeparator()
        a = menu.addAction("Branch from here", lambda: self.branch(widget))
        a.setEnabled(idle and stored)
        a.setToolTip("A new chat with the messages up to this one")
        return menu

    def show_menu(self, widget: MessageWidget, at: QPoint) -> None:
        self.last_menu = self.menu_for(widget)
        self.last_menu.popup(at)

    def edit_text(self, widget: MessageWidget, text: str | None = None) -> None:
        """Change the message's stored text in place (``text`` given: no dialog)."""
        page = self.page
        old = page._stored_at(widget.position)
        if page.client.busy or old is None:
            return
        if text is None:
            dialog = EditTextDialog(old.content, page)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            text = dialog.editor.toPlainText()
        meta = {k: v for k, v in old.meta.items() if k not in ("tokens", "token_ids")}
        meta["edited"] = True
        page.ctx.store.update_message(old.id, text, meta)
        old.content, old.meta = text, meta
        page._show_stored(widget, old, last=widget is page.transcript.messages[-1])
        page.context_changed()

    def ask_delete(self, widget: MessageWidget) -> bool:
        """Delete the message once the user confirms (it cannot be brought back)."""
        what = "your message" if widget.role == "user" else "this reply"
        if not self.confirm(self.page, "Delete message",
                            f"Delete {what}? The messages after it stay."):
            return False
        self.delete(widget)
        return True

    def delete(self, widget: MessageWidget) -> None:
        page = self.page
        old = page._stored_at(widget.position)
        if page.client.busy or old is None:
            return
        page.ctx.store.delete_message(old.id)
        page.transcript.remove_one(widget)
        if page.editing is widget:
            page._cancel_edit()
        page._update_empty()
        page.context_changed()

    def branch(self, widget: MessageWidget) -> int | None:
        """Open a new chat with the messages up to ``widget``; its id."""
        page = self.page
        cid = page.conversation_id
        if page.client.busy or cid is None or widget.position < 0:
            return None
        source = page.ctx.store.get(cid)
        title = BRANCH_PREFIX + (source.title if source else "chat")
        copy = page.ctx.store.duplicate(cid, title=title, upto_position=widget.position)
        page.ctx.store.update_chat_settings(copy.id, left_out=None)
        page.conversations.reload()
        page.open_conversation(copy.id)
        return copy.id
