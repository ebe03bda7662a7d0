"""The conversation as a scrolling column of messages, re-rendered at most ~10 times a second."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from specula.gui import theme
from specula.gui.chat.message import MessageWidget
from specula.gui.chat.render import TokenTuple

RENDER_MS = 100


class Transcript(QScrollArea):
    edit_requested = Signal(object)
    """A user message's Edit was clicked (the MessageWidget)."""
    regenerate_requested = Signal(object)
    """An assistant message's Regenerate was clicked (the MessageWidget)."""
    continue_requested = Signal(object)
    """An assistant message's Continue was clicked (the MessageWidget)."""
    version_requested = Signal(object, int)
    """An assistant message asked to show version ``index`` (widget, index)."""
    menu_requested = Signal(object, object)
    """A message's menu was asked for (the MessageWidget, global QPoint)."""
    rendered = Signal()
    """Streamed text was painted (the live numbers repaint with it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget(self)
        inner.setObjectName("TranscriptInner")
        self._lay = QVBoxLayout(inner)
        self._lay.setContentsMargins(24, 16, 24, 16)
        self._lay.setSpacing(10)
        self._lay.addStretch(1)
        self.setWidget(inner)
        self.messages: list[MessageWidget] = []
        self.colour_mode = "off"
        self._follow = True
        self._timer = QTimer(self)
        self._timer.setInterval(RENDER_MS)
        self._timer.timeout.connect(self.render_dirty)
        self._timer.start()
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range)
        bar.valueChanged.connect(self._on_scrolled)
        theme.notifier().changed.connect(self.rerender_all)

    def rerender_all(self, _theme: str = "") -> None:
        """Paint every message again (a theme change alters token and code colours)."""
        for m in self.messages:
            m.dirty = True
        self.render_dirty()

    def clear(self) -> None:
        for m in self.messages:
            self._lay.removeWidget(m)
            m.deleteLater()
        self.messages.clear()

    def add_message(
        self, role: str, text: str = "", tokens: list[TokenTuple] | None = None,
        footer: str = "", position: int = -1,
    ) -> MessageWidget:
        m = MessageWidget(role, text, tokens, footer, self.widget())
        m.position = position
        m.set_colour_mode(self.colour_mode)
        m.render()
        m.edit_requested.connect(self.edit_requested)
        m.regenerate_requested.connect(self.regenerate_requested)
        m.continue_requested.connect(self.continue_requested)
        m.version_requested.connect(self.version_requested)
        m.menu_requested.connect(self.menu_requested)
        self._lay.insertWidget(self._lay.count() - 1, m)
        self.messages.append(m)
        self._follow = True
        return m

    def remove_from(self, widget: MessageWidget) -> None:
        """Remove ``widget`` and every message after it."""
        if widget not in self.messages:
            return
        i = self.messages.index(widget)
        for m in self.messages[i:]:
            self._lay.removeWidget(m)
            m.deleteLater()
        del self.messages[i:]

    def remove_one(self, widget: MessageWidget) -> None:
        """Remove just ``widget`` (a deleted message)."""
        if widget in self.messages:
            self.messages.remove(widget)
            self._lay.removeWidget(widget)
            widget.deleteLater()

    def mark_left_out(self, n: int, kept_head: int) -> None:
        """Mark the ``n`` messages after the first ``kept_head`` as left out of the context."""
        for i, m in enumerate(self.messages):
            m.set_left_out(kept_head <= i < kept_head + n)

    def set_colour_mode(self, mode: str) -> None:
        self.colour_mode = mode
        for m in self.messages:
            m.set_colour_mode(mode)
        self.render_dirty()

    def render_dirty(self) -> None:
        painted = False
        for m in self.messages:
            if m.dirty:
                m.render()
                painted = True
        if painted:
            self.rendered.emit()

    def set_actions_enabled(self, enabled: bool) -> None:
        for m in self.messages:
            m.set_actions_enabled(enabled)

    def _on_scrolled(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 8

    def _on_range(self, _lo: int, hi: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(hi)
