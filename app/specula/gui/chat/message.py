"""One message in the transcript: role, body (Markdown or coloured tokens), actions, footer."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.engine.events import TokenEvent
from specula.gui import theme
from specula.gui.chat.coloured_markdown import render_reply
from specula.gui.chat.copy_feedback import flash_block, flash_button
from specula.gui.chat.render import SOURCE_LETTER, TokenTuple, plain_html

ROLE_NAMES = {"user": "You", "assistant": "Assistant", "system": "System"}


class AutoHeightBrowser(QTextBrowser):
    """A read-only rich text view exactly as tall as its content (no inner scrollbar)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("MessageBody")
        self.setOpenLinks(False)  # copy:N copies a code block; other links open outside
        self.code_blocks: list[str] = []
        self.html = ""  # what was last rendered (the Copy link's "Copied" is shown over it)
        self.anchorClicked.connect(self._on_link)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)

    def _on_link(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            i = int(url.path()) if url.path().isdigit() else -1
            if 0 <= i < len(self.code_blocks):
                QGuiApplication.clipboard().setText(self.code_blocks[i])
                flash_block(self, self.html, i)
        else:
            QDesktopServices.openUrl(url)

    def _fit(self) -> None:
        h = int(self.document().size().height()) + 2 * self.frameWidth() + 2
        if h != self.height():
            self.setFixedHeight(max(h, 20))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.document().setTextWidth(self.viewport().width())
        self._fit()

    def sizeHint(self) -> QSize:
        return QSize(400, self.height())


class MessageWidget(QFrame):
    edit_requested = Signal(object)
    """The user asked to edit this (user) message and resend it."""
    regenerate_requested = Signal(object)
    """The user asked for a new version of this (assistant) reply."""
    continue_requested = Signal(object)
    """The user asked this reply (stopped at the token limit or by Stop) to go on."""
    version_requested = Signal(object, int)
    """The user asked to show another version of this reply (widget, index)."""
    menu_requested = Signal(object, object)
    """Right-click or "⋯": the message's menu is wanted (widget, global QPoint)."""

    def __init__(
        self, role: str, text: str = "", tokens: list[TokenTuple] | None = None,
        footer: str = "", parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.role = role
        self.position = -1  # position in the stored conversation, once saved
        self.attachment_chips: list[str] = []
        self.left_out = False
        self._text = text
        self.tokens: list[TokenTuple] = list(tokens or [])
        self._colour_mode = "off"
        self.dirty = False
        self.setObjectName("UserBubble" if role == "user" else "AssistantBubble")

        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        lay.setSpacing(4)
        head = QHBoxLayout()
        self.role_label = QLabel(ROLE_NAMES.get(role, role))
        self.role_label.setObjectName("RoleLabel")
        head.addWidget(self.role_label)
        head.addStretch(1)
        self.copy_button = self._action("Copy", self.copy_text, "Copy this message")
        head.addWidget(self.copy_button)
        if role == "user":
            self.edit_button = self._action("Edit", lambda: self.edit_requested.emit(self),
                                            "Edit this message and send it again")
            head.addWidget(self.edit_button)
        else:
            self.prev_button = self._action("‹", lambda: self._step_version(-1),
                                            "Show the previous version of this reply")
            self.version_label = QLabel("")
            self.version_label.setObjectName("Muted")
            self.next_button = self._action("›", lambda: self._step_version(1),
                                            "Show the next version of this reply")
            for w in (self.prev_button, self.version_label, self.next_button):
                head.addWidget(w)
            self.continue_button = self._action(
                "Continue", lambda: self.continue_requested.emit(self),
                "The reply stopped before its end (token limit or Stop): let it go on")
            head.addWidget(self.continue_button)
            self.regen_button = self._action(
                "Regenerate", lambda: self.regenerate_requested.emit(self),
                "Generate a new version of this reply (the earlier ones are kept)")
            head.addWidget(self.regen_button)
            self.set_versions(0, 1)
            self.set_can_continue(False)
        self.more_button = self._action("⋯", self._more, "Edit, delete or branch from here")
        head.addWidget(self.more_button)
        lay.addLayout(head)
        self.chips = QLabel("")
        self.chips.setObjectName("AttachmentChips")
        self.chips.hide()
        lay.addWidget(self.chips)
        self.body = AutoHeightBrowser(self)
        lay.addWidget(self.body)
        for w in (self, self.body):
            w.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(
            lambda pos: self.menu_requested.emit(self, self.mapToGlobal(pos)))
        self.body.customContextMenuRequested.connect(
            lambda pos: self.menu_requested.emit(self, self.body.mapToGlobal(pos)))
        self.footer = QLabel(footer)
        self.footer.setObjectName("Footer")
        self.footer.setWordWrap(True)
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.setVisible(bool(footer))
        lay.addWidget(self.footer)
        self.render()

    def _action(self, label: str, slot: object, tip: str) -> QToolButton:
        b = QToolButton(self)
        b.setObjectName("MessageAction")
        b.setText(label)
        b.setToolTip(tip)
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        b.clicked.connect(slot)
        return b

    def _more(self) -> None:
        self.menu_requested.emit(self, self.more_button.mapToGlobal(
            self.more_button.rect().bottomLeft()))

    def set_attachments(self, chips: list[str]) -> None:
        """Show the attached files as chips ("Attached: notes.md · 1.2 KiB")."""
        self.attachment_chips = list(chips)
        self.chips.setText("Attached: " + "   ".join(chips) if chips else "")
        self.chips.setVisible(bool(chips))

    def set_left_out(self, left_out: bool) -> None:
        """Mark a message the overflow policy leaves out of the context."""
        self.left_out = left_out
        name = ROLE_NAMES.get(self.role, self.role)
        self.role_label.setText(f"{name}  ·  left out of the context" if left_out else name)
        self.setProperty("leftOut", left_out)
        self.style().unpolish(self)
        self.style().polish(self)

    # -- versions and continuing -------------------------------------------------
    def set_versions(self, index: int, count: int) -> None:
        """Show "‹ 2/3 ›" when the reply has earlier versions."""
        self.version = index
        self.version_count = count
        many = count > 1
        for w in (self.prev_button, self.version_label, self.next_button):
            w.setVisible(many)
        self.version_label.setText(f"{index + 1}/{count}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < count - 1)

    def _step_version(self, delta: int) -> None:
        target = self.version + delta
        if 0 <= target < self.version_count:
            self.version_requested.emit(self, target)

    def set_can_continue(self, can: bool) -> None:
        self.continue_button.setVisible(can)

    def set_tokens(self, tokens: list[TokenTuple]) -> None:
        self.tokens = list(tokens)
        self.dirty = True

    # -- content -------------------------------------------------------------
    @property
    def text(self) -> str:
        return self._text

    def append_tokens(self, events: list[TokenEvent]) -> None:
        """Add streamed tokens; the transcript re-renders dirty messages a few times a second."""
        for ev in events:
            src = "r" if ev.relaxed else SOURCE_LETTER.get(ev.source.value, "t")
            self.tokens.append((ev.text, src, ev.draft_prob))
            self._text += ev.text
        self.dirty = True

    def set_text(self, text: str) -> None:
        """The final text (the engine's, which may differ from the joined pieces)."""
        self._text = text
        self.dirty = True

    def set_footer(self, text: str) -> None:
        self.footer.setText(text)
        self.footer.setVisible(bool(text))

    def set_colour_mode(self, mode: str) -> None:
        if mode != self._colour_mode:
            self._colour_mode = mode
            self.dirty = True

    def render(self) -> None:
        pal = theme.palette()
        if self.role == "user":
            self.body.code_blocks = []
            self.body.setHtml(plain_html(self._text))
        elif not self._text:
            self.body.code_blocks = []
            self.body.setHtml(plain_html("…"))
        else:
            out = render_reply(self.tokens, self._text, self._colour_mode, pal)
            self.body.code_blocks = out.code_blocks
            self.body.html = out.html
            self.body.setHtml(out.html)
        self.dirty = False

    def copy_text(self) -> None:
        QGuiApplication.clipboard().setText(self._text)
        flash_button(self.copy_button)

    def set_actions_enabled(self, enabled: bool) -> None:
        for b in self.findChildren(QToolButton):
            if b not in (self.copy_button, self.more_button):
                b.setEnabled(enabled)
        if enabled and self.role != "user":
            self.set_versions(self.version, self.version_count)
